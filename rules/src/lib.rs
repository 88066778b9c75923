//! # jitdiff-rules
//!
//! Differentiation rules. Every primitive of the op table has one entry in [`linearize`]: the
//! partial derivatives of its result with respect to each active operand, emitted as IR through
//! [`Emit`]. Forward mode (frule) multiplies them by tangents; reverse mode (rrule) stores the
//! partials its pullback needs and multiplies them by cotangents. Because the partials are IR,
//! derivatives stay IR and can be differentiated again.
//!
//! Custom rules for functions and externs ([`ScalarRule`]) live in [`RuleSet`]s, which stack so
//! that rules can be registered retroactively, by name, and overridden (see `custom.rs`).

#![warn(missing_docs)]

mod custom;
mod emit;
mod linearize;

pub use custom::{PartialsCallback, RuleError, RuleSet, ScalarRule};
pub use emit::{BlockEmitter, Emit};
pub use linearize::{Coef, Linearization, Term, has_singular_partials, is_piecewise_constant, linearize};
