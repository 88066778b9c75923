//! The error type of the public API.

use crate::ad::AdError;
use jitdiff_jit::{CallError, JitError};

/// Anything that can go wrong between IR and a derivative value. Each variant's message says
/// what to fix.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The function could not be differentiated.
    #[error(transparent)]
    Ad(#[from] AdError),
    /// The (derived) IR could not be compiled.
    #[error(transparent)]
    Jit(Box<JitError>),
    /// A native call failed: bad arguments, or a run-time fault such as an out-of-bounds index.
    #[error(transparent)]
    Call(#[from] CallError),
    /// An objective gave a value or gradient that is NaN or infinite: an optimiser cannot
    /// continue from it (argmin's line searches would loop for ever).
    #[error(
        "the objective's {what} is not finite ({value}) at the point tried; the model overflows or leaves its domain there — bound the step, rescale the variables or guard the model"
    )]
    NonFinite {
        /// `value`, or `gradient entry k`.
        what: String,
        /// The offending number.
        value: f64,
    },
    /// A tangent, cotangent or output buffer has the wrong shape.
    #[error("{what}: expected {expected} values, got {got}")]
    Shape {
        /// Which buffer, and of which parameter.
        what: String,
        /// The length it must have.
        expected: usize,
        /// The length given.
        got: usize,
    },
}

impl From<JitError> for Error {
    fn from(e: JitError) -> Error {
        Error::Jit(Box::new(e))
    }
}
