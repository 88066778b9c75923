//! Errors: [`JitError`] when compiling or looking a function up, [`CallError`] when calling one.

use jitdiff_ir::{ExternError, Fault, Site, Type, VerifyError};

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

/// The detail of [`CallError::ShadowLength`].
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
    /// A slice declared the shadow of another ([`JitOptions::shadow_slice`](crate::JitOptions::shadow_slice))
    /// does not have `lanes` entries per element of it. Checked when the function is entered.
    #[error("{mismatch} (at {site})")]
    ShadowLength {
        /// The function's entry.
        site: Site,
        /// The parameters and their lengths (boxed: errors stay small).
        mismatch: Box<ShadowMismatch>,
    },
    /// Native code raised a run-time fault: the same [`Fault`], at the same site, as the
    /// interpreter reports for the same call.
    #[error(transparent)]
    Runtime(#[from] Fault),
}

impl CallError {
    /// The variant's name, as [`InterpError::kind_name`](jitdiff_ir::InterpError::kind_name)
    /// gives it (a run-time fault's own name: `"OutOfBounds"`, ...).
    pub fn kind_name(&self) -> &'static str {
        match self {
            CallError::Runtime(fault) => fault.kind_name(),
            CallError::ShadowLength { .. } => "ShadowLength",
            CallError::ArgCount { .. } => "ArgCount",
            CallError::ArgType { .. } => "ArgType",
            CallError::VectorLength { .. } => "VectorLength",
            CallError::ResultCount { .. } => "ResultCount",
        }
    }
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
