//! The reference interpreter: runs any verified module and is the oracle every later stage (AD
//! transforms, passes, the JIT) is tested against.
//!
//! Functions are first compiled into a compact form (flat register file, vector lanes at fixed
//! offsets, pre-resolved callees and jump moves) and then run on an explicit frame stack, so deep
//! recursion never touches the Rust stack and [`MAX_CALL_DEPTH`] is the only limit. Unverified
//! input never panics: what does not type-check is reported as [`InterpError::Malformed`].
//!
//! ```
//! use jitdiff_ir::{interpret, ArgValue, Function, InstData, Imm, Module, Opcode, RuntimeValue, Terminator, Type, ValueList};
//! let mut f = Function::new("double", vec![Type::F64]);
//! let x = f.add_param(Type::F64, Some("x"));
//! let entry = f.add_block("entry");
//! let y = f.new_value(Type::F64);
//! f.block_mut(entry).insts.push(InstData { op: Opcode::FAdd, args: ValueList::from_slice(&[x, x]), imm: Imm::None, results: ValueList::from_slice(&[y]) });
//! f.block_mut(entry).term = Some(Terminator::Return(vec![y]));
//! let m = Module { externs: vec![], tables: vec![], functions: vec![f] };
//! assert_eq!(interpret(&m, "double", &mut [ArgValue::F64(1.25)]).unwrap(), vec![RuntimeValue::F64(2.5)]);
//! ```

// Errors carry their site (a few strings); they are the cold path, so their size does not matter.
#![allow(clippy::result_large_err)]

mod compile;
pub mod eval;
mod exec;

pub use eval::eval_pure;

use crate::externs::{ExternImpl, ExternRegistry, format_signature};
pub use crate::fault::{Fault, Site};
use crate::function::{FuncId, Module};
use crate::tape::Tape;
use crate::types::Type;
pub use crate::values::{ArgValue, RuntimeValue};
use compile::CompiledFunc;

/// The deepest call nesting allowed: at most this many frames (the entry function's included)
/// are active at once; a call that would open one more fails with
/// [`InterpError::CallDepthExceeded`].
pub const MAX_CALL_DEPTH: usize = 256;

/// Why an interpreted call failed.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum InterpError {
    /// No function of that name.
    #[error("no function @{0} in the module")]
    UnknownFunction(String),
    /// Wrong number of arguments.
    #[error("@{func} takes {expected} arguments but was given {found}")]
    ArgCount {
        /// The function called.
        func: String,
        /// Its parameter count.
        expected: usize,
        /// The number of arguments given.
        found: usize,
    },
    /// An argument of the wrong kind.
    #[error("argument {index} of @{func} must be {expected} but is {found}")]
    ArgType {
        /// The function called.
        func: String,
        /// The 0-based argument index.
        index: usize,
        /// The parameter's type.
        expected: Type,
        /// What was given.
        found: String,
    },
    /// A run-time fault of IR that verifies (out-of-bounds index, division by zero, call depth,
    /// tape, alloc, a failing extern): the same [`Fault`] native code reports.
    #[error(transparent)]
    Fault(#[from] Fault),
    /// The step limit set by [`Interpreter::with_step_limit`] ran out.
    #[error("step limit of {limit} instructions exceeded (infinite loop?)")]
    StepLimitExceeded {
        /// The limit.
        limit: u64,
    },
    /// A call of a derivative declaration (`extern @g(...) = grad ...`) that was not expanded.
    #[error(
        "extern @{name} called at {site} is a declared derivative, which the interpreter does not derive; interpret the module jitdiff_ad::expand_derivatives returns"
    )]
    UnexpandedDerivative {
        /// The symbol.
        name: String,
        /// The call.
        site: Site,
    },
    /// A declared extern has no implementation in the registry.
    #[error("extern @{name} called at {site} is not registered; pass an ExternRegistry with it via with_externs")]
    ExternNotRegistered {
        /// The symbol.
        name: String,
        /// The call.
        site: Site,
    },
    /// A declared extern is registered with a different signature.
    #[error("extern @{name} called at {site} is declared as {declared} but registered as {registered}")]
    ExternSignature {
        /// The symbol.
        name: String,
        /// The declared signature.
        declared: String,
        /// The registered signature.
        registered: String,
        /// The call.
        site: Site,
    },
    /// The module is not well formed (only possible for IR that does not pass the verifier).
    #[error("malformed IR at {site}: {message} (run the verifier for a full report)")]
    Malformed {
        /// Where.
        site: Site,
        /// What is wrong.
        message: String,
    },
}

impl InterpError {
    /// The variant's name (`"OutOfBounds"`, `"DivisionByZero"` ...), for expected-error tests.
    pub fn kind_name(&self) -> &'static str {
        match self {
            InterpError::Fault(fault) => fault.kind_name(),
            InterpError::UnknownFunction(_) => "UnknownFunction",
            InterpError::ArgCount { .. } => "ArgCount",
            InterpError::ArgType { .. } => "ArgType",
            InterpError::StepLimitExceeded { .. } => "StepLimitExceeded",
            InterpError::ExternNotRegistered { .. } => "ExternNotRegistered",
            InterpError::UnexpandedDerivative { .. } => "UnexpandedDerivative",
            InterpError::ExternSignature { .. } => "ExternSignature",
            InterpError::Malformed { .. } => "Malformed",
        }
    }
    /// Where the error happened, when it happened inside a function.
    pub fn site(&self) -> Option<&Site> {
        match self {
            InterpError::Fault(fault) => Some(fault.site()),
            InterpError::ExternNotRegistered { site, .. }
            | InterpError::UnexpandedDerivative { site, .. }
            | InterpError::ExternSignature { site, .. }
            | InterpError::Malformed { site, .. } => Some(site),
            InterpError::UnknownFunction(_)
            | InterpError::ArgCount { .. }
            | InterpError::ArgType { .. }
            | InterpError::StepLimitExceeded { .. } => None,
        }
    }
}

/// How an extern of the module is bound to the registry.
#[derive(Clone, Debug)]
enum ExternBinding<'m> {
    Missing,
    Mismatch { declared: String, registered: String },
    Bound(&'m ExternImpl),
}

/// A reusable interpreter for one module: compiles every function once, then runs calls.
///
/// ```
/// use jitdiff_ir::{Interpreter, Module};
/// let m = Module::new();
/// let interp = Interpreter::new(&m).with_step_limit(1_000_000);
/// assert_eq!(interp.call("missing", &mut []).unwrap_err().kind_name(), "UnknownFunction");
/// ```
#[derive(Debug)]
pub struct Interpreter<'m> {
    module: &'m Module,
    funcs: Vec<Result<CompiledFunc, InterpError>>,
    externs: Vec<ExternBinding<'m>>,
    step_limit: Option<u64>,
}

impl<'m> Interpreter<'m> {
    /// Prepare `module` for interpretation (without externs and without a step limit).
    pub fn new(module: &'m Module) -> Interpreter<'m> {
        let funcs = (0..module.functions.len()).map(|i| compile::compile_function(module, i)).collect();
        let externs = vec![ExternBinding::Missing; module.externs.len()];
        Interpreter { module, funcs, externs, step_limit: None }
    }
    /// Use `registry` for the module's extern calls. Externs it lacks fail when called.
    pub fn with_externs(mut self, registry: &'m ExternRegistry) -> Interpreter<'m> {
        self.externs = self
            .module
            .externs
            .iter()
            .map(|decl| match registry.get(&decl.name) {
                None => ExternBinding::Missing,
                Some(imp) => {
                    let (params, returns) = imp.signature();
                    if params == decl.params && returns == decl.returns {
                        ExternBinding::Bound(imp)
                    } else {
                        ExternBinding::Mismatch {
                            declared: format_signature(&decl.params, &decl.returns),
                            registered: format_signature(&params, &returns),
                        }
                    }
                }
            })
            .collect();
        self
    }
    /// Fail with [`InterpError::StepLimitExceeded`] after `steps` executed instructions and
    /// terminators (per call).
    pub fn with_step_limit(mut self, steps: u64) -> Interpreter<'m> {
        self.step_limit = Some(steps);
        self
    }
    /// The module being interpreted.
    pub fn module(&self) -> &'m Module {
        self.module
    }
    /// Call the function named `func`, with a fresh empty tape. `mslice` arguments hold the
    /// final memory afterwards.
    pub fn call(&self, func: &str, args: &mut [ArgValue]) -> Result<Vec<RuntimeValue>, InterpError> {
        self.call_with_tape(func, args, &mut Tape::new())
    }
    /// Call the function named `func` on `tape`: its `tpush`es append to it and its `tpop`s
    /// read it back from its cursor (callees share it). After an error the tape holds what was
    /// pushed up to the failure.
    ///
    /// ```
    /// use jitdiff_ir::{parse_module, Interpreter, RuntimeValue, Tape};
    /// let m = parse_module("func @save(x: f64) {\nentry:\n    tpush x\n    ret\n}\n\
    ///                       func @load() -> f64 {\nentry:\n    x = tpop.f64\n    ret x\n}\n").unwrap();
    /// let interp = Interpreter::new(&m);
    /// let mut tape = Tape::new();
    /// interp.call_with_tape("save", &mut [jitdiff_ir::ArgValue::F64(2.5)], &mut tape).unwrap();
    /// assert_eq!(interp.call_with_tape("load", &mut [], &mut tape).unwrap(), vec![RuntimeValue::F64(2.5)]);
    /// assert_eq!(interp.call_with_tape("load", &mut [], &mut tape).unwrap_err().kind_name(), "TapeUnderflow");
    /// ```
    pub fn call_with_tape(
        &self,
        func: &str,
        args: &mut [ArgValue],
        tape: &mut Tape,
    ) -> Result<Vec<RuntimeValue>, InterpError> {
        let id = self.module.func_id(func).ok_or_else(|| InterpError::UnknownFunction(func.to_string()))?;
        self.call_id_with_tape(id, args, tape)
    }
    /// Call the function with id `func`, with a fresh empty tape.
    pub fn call_id(&self, func: FuncId, args: &mut [ArgValue]) -> Result<Vec<RuntimeValue>, InterpError> {
        self.call_id_with_tape(func, args, &mut Tape::new())
    }
    /// Call the function with id `func` on `tape` (see [`call_with_tape`](Self::call_with_tape)).
    pub fn call_id_with_tape(
        &self,
        func: FuncId,
        args: &mut [ArgValue],
        tape: &mut Tape,
    ) -> Result<Vec<RuntimeValue>, InterpError> {
        let Some(compiled) = self.funcs.get(func.index()) else {
            return Err(InterpError::UnknownFunction(format!("#{}", func.0)));
        };
        let compiled = compiled.as_ref().map_err(Clone::clone)?;
        check_args(compiled, args)?;
        exec::run(self, func.index(), args, tape)
    }
}

/// Check arguments against the entry function's parameters before any memory is borrowed.
fn check_args(func: &CompiledFunc, args: &[ArgValue]) -> Result<(), InterpError> {
    if args.len() != func.param_types.len() {
        return Err(InterpError::ArgCount {
            func: func.name.clone(),
            expected: func.param_types.len(),
            found: args.len(),
        });
    }
    for (index, (arg, &ty)) in args.iter().zip(&func.param_types).enumerate() {
        let fits = match (arg, ty) {
            (ArgValue::F64(_), Type::F64) | (ArgValue::I64(_), Type::I64) | (ArgValue::Bool(_), Type::Bool) => true,
            (ArgValue::Vector(v), Type::F64x(w)) => v.len() == w as usize,
            (ArgValue::Slice(_), Type::Slice) => true,
            (ArgValue::SliceMut(_), Type::Slice | Type::SliceMut) => true,
            _ => false,
        };
        if !fits {
            return Err(InterpError::ArgType { func: func.name.clone(), index, expected: ty, found: arg.kind() });
        }
    }
    Ok(())
}

/// Interpret `func` of `module` once, without externs or a step limit.
pub fn interpret(module: &Module, func: &str, args: &mut [ArgValue]) -> Result<Vec<RuntimeValue>, InterpError> {
    Interpreter::new(module).call(func, args)
}
