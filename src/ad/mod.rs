//! Automatic differentiation: IR → IR transforms.
//!
//! - [`derive_forward`]: forward mode (JVP) with tangent width W.
//! - Activity analysis decides which values carry derivatives.

mod activity;
mod error;
mod forward;

pub use activity::Activity;
pub use error::AdError;
pub use forward::{ForwardDerivative, derive_forward};
