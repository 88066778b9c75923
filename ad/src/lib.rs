//! Automatic differentiation: IR → IR transforms.
//!
//! - [`derive_forward`]: forward mode (JVP) with tangent width W.
//! - [`derive_reverse`]: reverse mode (rrule style: a forward function that records the pullback
//!   state on a tape, and a pullback).
//! - Activity analysis decides which values carry derivatives.
//! - [`sparsity`]: the Jacobian and Hessian patterns of a function; [`coloring`]: the graph
//!   colorings that compress them.

#![warn(missing_docs)]

mod activity;
mod calls;
mod checkpoint;
pub mod coloring;
mod custom;
mod error;
mod forward;
mod fuse;
mod liveness;
mod loops;
mod nested;
mod preaccumulate;
mod request;
mod reverse;
mod shape;
mod singular;
pub mod sparsity;
mod state;

pub use activity::Activity;
pub use checkpoint::{Checkpoint, CheckpointedLoop, MAX_SNAPSHOTS, derive_reverse_checkpointed};
pub use error::AdError;
pub use forward::{ForwardDerivative, derive_forward, derive_forward_over_pullback, derive_forward_with_rules};
pub use fuse::fuse_reversed_loops;
pub use nested::{expand_derivatives, expand_derivatives_with_rules};
pub use reverse::{ReverseDerivative, derive_reverse, derive_reverse_with_rules, finish_pullback};
