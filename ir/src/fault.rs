//! Run-time faults: what can go wrong while running IR that verifies — reported by the
//! interpreter and by native code alike, with the same site and the same message ("interpreter
//! and JIT report the same error" holds by construction).

use crate::interp::MAX_CALL_DEPTH;
use std::fmt;

/// Where something happened: function, block label, instruction index in the block (equal to the
/// number of instructions for the terminator).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Site {
    /// The function's name.
    pub func: String,
    /// The block's label.
    pub block: String,
    /// The instruction's index in the block; the block's instruction count means its terminator.
    pub inst: usize,
}

impl fmt::Display for Site {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "@{}, block {}, inst {}", self.func, self.block, self.inst)
    }
}

/// A run-time fault of IR that verifies, at its site.
///
/// ```
/// use jitdiff_ir::{Fault, Site};
/// let site = Site { func: "f".into(), block: "body".into(), inst: 2 };
/// let fault = Fault::OutOfBounds { site, index: 5, len: 3 };
/// assert_eq!(fault.to_string(), "index 5 out of bounds for a slice of length 3 at @f, block body, inst 2");
/// assert_eq!(fault.kind_name(), "OutOfBounds");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Fault {
    /// A `load`/`store`/`vload`/`vstore` index out of bounds.
    #[error("index {index} out of bounds for a slice of length {len} at {site}")]
    OutOfBounds {
        /// Where.
        site: Site,
        /// The index operand (for `vload`/`vstore` the vector index: lanes `W*index..W*index+W`).
        index: i64,
        /// The slice's length.
        len: usize,
    },
    /// `idiv`/`irem` by zero.
    #[error("integer division by zero at {site}")]
    DivisionByZero {
        /// Where.
        site: Site,
    },
    /// A call would nest deeper than [`MAX_CALL_DEPTH`] frames.
    #[error("call depth limit of {MAX_CALL_DEPTH} frames exceeded at {site} (unbounded recursion?)")]
    CallDepthExceeded {
        /// The call that would have opened one frame too many.
        site: Site,
    },
    /// `tpop` with nothing left before the tape's read cursor.
    #[error("tape underflow at {site}: tpop with no entry left before the read cursor (more pops than pushes?)")]
    TapeUnderflow {
        /// The `tpop`.
        site: Site,
    },
    /// `tpush` could not grow the tape.
    #[error(
        "could not grow the tape at {site}: memory allocation failed or the tape reached its limit (JitOptions::tape_limit, Tape::set_limit_bytes; 4 GiB by default)"
    )]
    TapeAllocation {
        /// The `tpush`.
        site: Site,
    },
    /// `alloc` with a negative length, or one whose memory could not be allocated.
    #[error("alloc of length {len} failed at {site}: the length must be >= 0 and the memory available")]
    AllocFailed {
        /// The `alloc`.
        site: Site,
        /// The requested length.
        len: i64,
    },
    /// A `trap`: the source's `panic!`, `unreachable!` or a failed `assert!`.
    #[error("explicit panic (`panic!`, `unreachable!` or a failed `assert!`) at {site}")]
    Panic {
        /// The `trap`.
        site: Site,
    },
    /// An extern implementation reported an error, panicked, or returned values of the wrong
    /// kinds.
    #[error("extern @{name} failed at {site}: {message}")]
    ExternFailed {
        /// The symbol.
        name: String,
        /// What went wrong.
        message: String,
        /// The call.
        site: Site,
    },
}

impl Fault {
    /// The variant's name (`"OutOfBounds"`, `"DivisionByZero"` ...), for expected-error tests.
    pub fn kind_name(&self) -> &'static str {
        match self {
            Fault::OutOfBounds { .. } => "OutOfBounds",
            Fault::DivisionByZero { .. } => "DivisionByZero",
            Fault::CallDepthExceeded { .. } => "CallDepthExceeded",
            Fault::TapeUnderflow { .. } => "TapeUnderflow",
            Fault::TapeAllocation { .. } => "TapeAllocation",
            Fault::AllocFailed { .. } => "AllocFailed",
            Fault::Panic { .. } => "Panic",
            Fault::ExternFailed { .. } => "ExternFailed",
        }
    }
    /// Where it happened.
    pub fn site(&self) -> &Site {
        match self {
            Fault::OutOfBounds { site, .. }
            | Fault::DivisionByZero { site }
            | Fault::CallDepthExceeded { site }
            | Fault::TapeUnderflow { site }
            | Fault::TapeAllocation { site }
            | Fault::Panic { site }
            | Fault::AllocFailed { site, .. }
            | Fault::ExternFailed { site, .. } => site,
        }
    }
}
