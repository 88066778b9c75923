//! Errors: [`JitError`] when compiling or looking a function up, [`CallError`] when calling one.

use jitdiff_ir::{ExternError, Site, Type, VerifyError};

/// Why a module could not be compiled, or a function not found in it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum JitError {
    /// The module does not verify; fix the IR (the message names function, block and instruction).
    #[error("the module does not verify: {0}")]
    Verify(Box<VerifyError>),
    /// A declared extern has no implementation, or one of another signature.
    #[error(transparent)]
    Extern(#[from] ExternError),
    /// A declared extern's registered closure has a signature native code cannot pass.
    #[error("extern @{name} cannot be called from native code: {reason}")]
    UnsupportedExtern {
        /// The symbol.
        name: String,
        /// What is unsupported and what to do instead.
        reason: String,
    },
    /// No function of that name is in the module.
    #[error("no function @{name} in the compiled module; it has: {available}")]
    UnknownFunction {
        /// The name asked for.
        name: String,
        /// The names the module has, comma-separated.
        available: String,
    },
    /// [`CompiledFn::typed`](crate::CompiledFn::typed) was asked for a signature the function does not have.
    #[error("@{function} has signature {actual}, but the typed handle asked for {requested}")]
    TypedSignature {
        /// The function.
        function: String,
        /// Its real signature.
        actual: String,
        /// The signature the type parameters spell.
        requested: String,
    },
    /// A [`ShadowSlice`](crate::ShadowSlice) declaration does not fit the module.
    #[error("shadow slice declaration for @{function}: {reason}")]
    Shadow {
        /// The function named by the declaration.
        function: String,
        /// What does not fit.
        reason: String,
    },
    /// The host CPU or Cranelift's settings could not be set up.
    #[error("cannot set up native code generation: {0}")]
    Isa(String),
    /// Cranelift rejected the lowered code of a function (a bug in jitdiff: please report it with the IR).
    #[error("Cranelift could not compile @{function}: {message}")]
    Codegen {
        /// The IR function.
        function: String,
        /// Cranelift's message.
        message: String,
    },
    /// Declaring, defining or finalizing native code failed (e.g. out of executable memory).
    #[error("cannot produce native code: {0}")]
    Module(String),
}

impl From<VerifyError> for JitError {
    fn from(e: VerifyError) -> JitError {
        JitError::Verify(Box::new(e))
    }
}

/// A run-time error raised by native code: the same variants, sites and messages as the
/// interpreter's run-time errors ([`jitdiff_ir::InterpError`]), so the two can be compared —
/// except [`RuntimeError::ShadowLength`], a precondition only native code compiled with shadow
/// declarations has.
///
/// Displays as e.g. `index 7 out of bounds for a slice of length 5 at @f, block body, inst 3`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RuntimeError {
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
    /// A call would nest deeper than `MAX_CALL_DEPTH` frames.
    #[error("call depth limit of {} frames exceeded at {site} (unbounded recursion?)", jitdiff_ir::MAX_CALL_DEPTH)]
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
    /// `alloc` with a negative length, or whose memory could not be allocated.
    #[error("alloc of length {len} failed at {site}: the length must be >= 0 and the memory available")]
    AllocFailed {
        /// The `alloc`.
        site: Site,
        /// The requested length.
        len: i64,
    },
    /// A slice declared the shadow of another ([`JitOptions::shadow_slice`](crate::JitOptions::shadow_slice))
    /// does not have `lanes` entries per element of it. Checked when the function is entered.
    #[error("{mismatch} (at {site})")]
    ShadowLength {
        /// The function's entry.
        site: Site,
        /// The parameters and their lengths (boxed: errors stay small).
        mismatch: Box<ShadowMismatch>,
    },
    /// A closure extern returned an error, panicked, or returned values of the wrong kinds.
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

impl RuntimeError {
    /// The variant's name, the same as [`InterpError::kind_name`](jitdiff_ir::InterpError::kind_name)
    /// gives for the corresponding interpreter error.
    pub fn kind_name(&self) -> &'static str {
        match self {
            RuntimeError::OutOfBounds { .. } => "OutOfBounds",
            RuntimeError::DivisionByZero { .. } => "DivisionByZero",
            RuntimeError::CallDepthExceeded { .. } => "CallDepthExceeded",
            RuntimeError::TapeUnderflow { .. } => "TapeUnderflow",
            RuntimeError::TapeAllocation { .. } => "TapeAllocation",
            RuntimeError::AllocFailed { .. } => "AllocFailed",
            RuntimeError::ShadowLength { .. } => "ShadowLength",
            RuntimeError::ExternFailed { .. } => "ExternFailed",
        }
    }
    /// Where the error happened.
    pub fn site(&self) -> &Site {
        match self {
            RuntimeError::OutOfBounds { site, .. }
            | RuntimeError::DivisionByZero { site }
            | RuntimeError::CallDepthExceeded { site }
            | RuntimeError::TapeUnderflow { site }
            | RuntimeError::TapeAllocation { site }
            | RuntimeError::AllocFailed { site, .. }
            | RuntimeError::ShadowLength { site, .. }
            | RuntimeError::ExternFailed { site, .. } => site,
        }
    }
}

/// The detail of [`RuntimeError::ShadowLength`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "shadow slice {shadow} must hold {lanes} entries per element of {primal}: {primal} has length {primal_len}, \
     so {shadow} needs length {}, but has {shadow_len}",
    *lanes as usize * primal_len
)]
pub struct ShadowMismatch {
    /// The shadow parameter's name.
    pub shadow: String,
    /// The primal parameter's name.
    pub primal: String,
    /// Declared entries per element.
    pub lanes: u8,
    /// The shadow slice's length.
    pub shadow_len: usize,
    /// The primal slice's length.
    pub primal_len: usize,
}

/// Why a call through a [`CompiledFn`](crate::CompiledFn) failed. Every variant but `Runtime` is
/// detected before native code runs.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    /// Wrong number of arguments.
    #[error("@{function} takes {expected} argument(s), but {got} were given")]
    ArgCount {
        /// The function.
        function: String,
        /// Its parameter count.
        expected: usize,
        /// The number of arguments given.
        got: usize,
    },
    /// An argument of the wrong kind.
    #[error("argument {index} of @{function} must be {} ({expected}), but {got} was given", arg_hint(*expected))]
    ArgType {
        /// The function.
        function: String,
        /// The 0-based argument index.
        index: usize,
        /// The parameter's type.
        expected: Type,
        /// The kind of `Arg` given (`Arg::F64`, ...).
        got: &'static str,
    },
    /// A vector argument with the wrong number of lanes.
    #[error("argument {index} of @{function} is {expected}, so it needs {} lanes, but {got} were given", expected.lanes())]
    VectorLength {
        /// The function.
        function: String,
        /// The 0-based argument index.
        index: usize,
        /// The parameter's vector type.
        expected: Type,
        /// The number of lanes given.
        got: usize,
    },
    /// `call_into` was given a result buffer of the wrong length.
    #[error("@{function} returns {expected} value(s), but the result buffer has room for {got}")]
    ResultCount {
        /// The function.
        function: String,
        /// Its result count.
        expected: usize,
        /// The buffer length given.
        got: usize,
    },
    /// Native code raised a run-time error.
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
}

fn arg_hint(ty: Type) -> &'static str {
    match ty {
        Type::F64 => "Arg::F64",
        Type::I64 => "Arg::I64",
        Type::Bool => "Arg::Bool",
        Type::Slice => "Arg::Slice or Arg::SliceMut",
        Type::SliceMut => "Arg::SliceMut",
        Type::F64x(_) => "Arg::Vector",
    }
}
