//! The extern registry: native functions a user hands to the engine by name.
//!
//! A module declares an extern (`extern @bessel_j0(f64) -> f64`); the user registers an
//! implementation under the same name with the same signature. The interpreter calls the
//! implementation directly; the JIT registers plain `extern "C"` functions as native symbols and
//! calls closures through a trampoline. [`ExternRegistry::check_module`] checks, before anything
//! runs, that every declared extern has an implementation of the declared signature.

use crate::function::Module;
use crate::interp::RuntimeValue;
use crate::types::Type;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

/// One argument handed to an extern closure. Slices borrow the caller's memory for the duration
/// of the call; a `SliceMut` is written back in place.
#[derive(Debug)]
pub enum ExternArg<'a> {
    /// An `f64` argument.
    F64(f64),
    /// An `i64` argument.
    I64(i64),
    /// A `bool` argument.
    Bool(bool),
    /// A read-only `slice` argument.
    Slice(&'a [f64]),
    /// A mutable `mslice` argument.
    SliceMut(&'a mut [f64]),
}

impl ExternArg<'_> {
    /// The `f64`, if this is one.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            ExternArg::F64(x) => Some(*x),
            _ => None,
        }
    }
    /// The `i64`, if this is one.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            ExternArg::I64(x) => Some(*x),
            _ => None,
        }
    }
    /// The `bool`, if this is one.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            ExternArg::Bool(x) => Some(*x),
            _ => None,
        }
    }
    /// The slice contents (read-only or mutable), if this is a slice.
    pub fn as_slice(&self) -> Option<&[f64]> {
        match self {
            ExternArg::Slice(s) => Some(s),
            ExternArg::SliceMut(s) => Some(s),
            _ => None,
        }
    }
    /// The mutable slice, if this is an `mslice`.
    pub fn as_slice_mut(&mut self) -> Option<&mut [f64]> {
        match self {
            ExternArg::SliceMut(s) => Some(s),
            _ => None,
        }
    }
}

/// A general extern implementation: receives the arguments in declaration order and returns one
/// value per declared result, or an error message (reported as `ExternFailed`).
pub type ExternClosure = Arc<dyn Fn(&mut [ExternArg<'_>]) -> Result<Vec<RuntimeValue>, String> + Send + Sync>;

/// An extern implementation: a plain `extern "C"` float function (signature implied by the
/// variant) or a closure with an explicit signature.
///
/// ```
/// use jitdiff_ir::{ExternImpl, Type};
/// extern "C" fn twice(x: f64) -> f64 { 2.0 * x }
/// assert_eq!(ExternImpl::F1(twice).signature(), (vec![Type::F64], vec![Type::F64]));
/// ```
#[derive(Clone)]
pub enum ExternImpl {
    /// `(f64) -> f64`.
    F1(extern "C" fn(f64) -> f64),
    /// `(f64, f64) -> f64`.
    F2(extern "C" fn(f64, f64) -> f64),
    /// `(f64, f64, f64) -> f64`.
    F3(extern "C" fn(f64, f64, f64) -> f64),
    /// `(f64, f64, f64, f64) -> f64`.
    F4(extern "C" fn(f64, f64, f64, f64) -> f64),
    /// Any signature of scalars and slices.
    Closure {
        /// Parameter types.
        params: Vec<Type>,
        /// Result types.
        returns: Vec<Type>,
        /// The implementation.
        f: ExternClosure,
    },
}

impl ExternImpl {
    /// The parameter and result types this implementation has.
    pub fn signature(&self) -> (Vec<Type>, Vec<Type>) {
        let floats = |n: usize| (vec![Type::F64; n], vec![Type::F64]);
        match self {
            ExternImpl::F1(_) => floats(1),
            ExternImpl::F2(_) => floats(2),
            ExternImpl::F3(_) => floats(3),
            ExternImpl::F4(_) => floats(4),
            ExternImpl::Closure { params, returns, .. } => (params.clone(), returns.clone()),
        }
    }
}

impl fmt::Debug for ExternImpl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (params, returns) = self.signature();
        let kind = if matches!(self, ExternImpl::Closure { .. }) { "closure" } else { "fn" };
        write!(f, "{kind} {}", format_signature(&params, &returns))
    }
}

/// Spell a signature the way the text format does: `(f64, slice) -> f64`.
pub(crate) fn format_signature(params: &[Type], returns: &[Type]) -> String {
    let join = |ts: &[Type]| ts.iter().map(|t| t.spelling()).collect::<Vec<_>>().join(", ");
    if returns.is_empty() { format!("({})", join(params)) } else { format!("({}) -> {}", join(params), join(returns)) }
}

/// Why a module's externs do not match a registry.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ExternError {
    /// A derivative declaration (`extern @g(...) = grad ...`) that was not expanded.
    #[error(
        "extern @{name} is a declared derivative ({derivative}), which no registry implements; build a handle from the module (it derives every declaration) or run jitdiff_ad::expand_derivatives on it first"
    )]
    UnexpandedDerivative {
        /// The symbol.
        name: String,
        /// The declaration, e.g. `grad reverse @f wrt 1`.
        derivative: String,
    },
    /// A declared extern has no implementation.
    #[error("extern @{name} {declared} is declared but not registered; register it with ExternRegistry::register")]
    NotRegistered {
        /// The symbol.
        name: String,
        /// The declared signature, e.g. `(f64) -> f64`.
        declared: String,
    },
    /// A declared extern is registered with a different signature.
    #[error("extern @{name} is declared as {declared} but registered as {registered}; make the two signatures agree")]
    SignatureMismatch {
        /// The symbol.
        name: String,
        /// The declared signature.
        declared: String,
        /// The registered implementation's signature.
        registered: String,
    },
}

/// Extern implementations by name.
///
/// ```
/// use jitdiff_ir::{ExternArg, ExternRegistry, RuntimeValue, Type};
/// extern "C" fn mul_add(a: f64, b: f64, c: f64) -> f64 { a * b + c }
/// let mut reg = ExternRegistry::new();
/// reg.register_f3("mul_add", mul_add).register_closure(
///     "sum",
///     vec![Type::Slice],
///     vec![Type::F64],
///     |args: &mut [ExternArg<'_>]| Ok(vec![RuntimeValue::F64(args[0].as_slice().unwrap().iter().sum())]),
/// );
/// assert!(reg.get("sum").is_some());
/// ```
#[derive(Clone, Default)]
pub struct ExternRegistry {
    impls: BTreeMap<String, ExternImpl>,
}

impl ExternRegistry {
    /// An empty registry.
    pub fn new() -> ExternRegistry {
        ExternRegistry::default()
    }
    /// Register (or replace) the implementation of `name`.
    pub fn register(&mut self, name: impl Into<String>, implementation: ExternImpl) -> &mut Self {
        self.impls.insert(name.into(), implementation);
        self
    }
    /// Register an `(f64) -> f64` function.
    pub fn register_f1(&mut self, name: impl Into<String>, f: extern "C" fn(f64) -> f64) -> &mut Self {
        self.register(name, ExternImpl::F1(f))
    }
    /// Register an `(f64, f64) -> f64` function.
    pub fn register_f2(&mut self, name: impl Into<String>, f: extern "C" fn(f64, f64) -> f64) -> &mut Self {
        self.register(name, ExternImpl::F2(f))
    }
    /// Register an `(f64, f64, f64) -> f64` function.
    pub fn register_f3(&mut self, name: impl Into<String>, f: extern "C" fn(f64, f64, f64) -> f64) -> &mut Self {
        self.register(name, ExternImpl::F3(f))
    }
    /// Register an `(f64, f64, f64, f64) -> f64` function.
    pub fn register_f4(&mut self, name: impl Into<String>, f: extern "C" fn(f64, f64, f64, f64) -> f64) -> &mut Self {
        self.register(name, ExternImpl::F4(f))
    }
    /// Register a closure with an explicit signature (scalars and slices).
    pub fn register_closure(
        &mut self,
        name: impl Into<String>,
        params: Vec<Type>,
        returns: Vec<Type>,
        f: impl Fn(&mut [ExternArg<'_>]) -> Result<Vec<RuntimeValue>, String> + Send + Sync + 'static,
    ) -> &mut Self {
        self.register(name, ExternImpl::Closure { params, returns, f: Arc::new(f) })
    }
    /// The implementation registered under `name`.
    pub fn get(&self, name: &str) -> Option<&ExternImpl> {
        self.impls.get(name)
    }
    /// Registered names, in sorted order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.impls.keys().map(String::as_str)
    }
    /// Check that every extern `module` declares is registered with exactly the declared
    /// signature. Reports the first offending declaration, in module order.
    pub fn check_module(&self, module: &Module) -> Result<(), ExternError> {
        for decl in &module.externs {
            if let Some(derivative) = &decl.derivative {
                return Err(ExternError::UnexpandedDerivative {
                    name: decl.name.clone(),
                    derivative: derivative.spelling(),
                });
            }
            let declared = format_signature(&decl.params, &decl.returns);
            let Some(imp) = self.get(&decl.name) else {
                return Err(ExternError::NotRegistered { name: decl.name.clone(), declared });
            };
            let (params, returns) = imp.signature();
            if params != decl.params || returns != decl.returns {
                return Err(ExternError::SignatureMismatch {
                    name: decl.name.clone(),
                    declared,
                    registered: format_signature(&params, &returns),
                });
            }
        }
        Ok(())
    }
}

impl fmt::Debug for ExternRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.impls.iter()).finish()
    }
}
