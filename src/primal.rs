//! The function itself, compiled: [`PrimalFn`] calls the user's function as native code, with
//! the same argument checks and fault reports as the derivative handles.

use crate::builder::{Build, Builder, Spec, sealed};
use crate::error::Error;
use crate::scratch::with_scratch;
use crate::user::UserFunction;
use jitdiff_ir::{Module, RuntimeValue, Type};
use jitdiff_jit::{Arg, CompiledFn, FrameResults, compile};

/// A JIT-compiled function, no derivative: what `#[jitdiff::function]`'s `primal()` builds, and
/// a way to run a module's function natively with checked arguments. Nothing is differentiated,
/// so the builder needs no `.wrt`.
///
/// ```
/// use jitdiff::{PrimalFn, args, ir::parse_module};
/// let m = parse_module("func @f(x: f64, n: i64) -> f64 {\nentry:\n    y = itof n\n    p = fmul x, y\n    ret p\n}").unwrap();
/// let f = PrimalFn::builder(&m, "f").build().unwrap();
/// assert_eq!(f.call(&mut args![1.5, 4]).unwrap(), [jitdiff::ir::RuntimeValue::F64(6.0)]);
/// ```
#[derive(Clone)]
pub struct PrimalFn {
    user: UserFunction,
    native: CompiledFn,
}

impl sealed::Sealed for PrimalFn {}
impl Build for PrimalFn {
    const NEEDS_WRT: bool = false;

    #[allow(private_interfaces)]
    fn build_from(spec: Spec) -> Result<PrimalFn, Error> {
        let user = spec.user;
        let externs = crate::gradient::with_rule_externs(&user.externs, &spec.rules);
        let module = crate::inlining::inline_user_calls(&user.module, &user.name);
        let compiled = compile(&module, &externs, &spec.options).map_err(|e| Error::compile(&user.name, e))?;
        let native = compiled.function(&user.name).map_err(|e| Error::compile(&user.name, e))?;
        Ok(PrimalFn { user, native })
    }
}

impl PrimalFn {
    /// Start building the native code of `@name` (see [`Builder`]; `.wrt` is ignored).
    pub fn builder<'m>(module: &'m Module, name: &str) -> Builder<'m, PrimalFn> {
        Builder::new(module, name)
    }

    /// The function's name.
    pub fn name(&self) -> &str {
        &self.user.name
    }

    /// The user's module.
    pub fn module(&self) -> &Module {
        &self.user.module
    }

    /// The compiled function (unchecked calls, typed calls: see [`CompiledFn`]).
    pub fn native(&self) -> &CompiledFn {
        &self.native
    }

    /// The error a failed native call of this function with `args` reports, in the user's terms
    /// (the fault replayed in the interpreter to name the user's instruction): for the typed
    /// calls of the macros' handles, which call the native code themselves.
    #[doc(hidden)]
    pub fn call_error(&self, args: &[Arg<'_>], error: jitdiff_jit::CallError) -> Error {
        self.user.call_error(args, error)
    }

    /// Call the function: its results (`mslice` arguments are written in place).
    pub fn call(&self, args: &mut [Arg<'_>]) -> Result<Vec<RuntimeValue>, Error> {
        let mut results = vec![];
        self.call_with(args, |r| results.extend_from_slice(r))?;
        Ok(results)
    }

    /// Call the function and hand its results to `read` (per-thread result slots: after the
    /// first call on a thread nothing is allocated). Returns what `read` returns.
    pub fn call_with<T>(&self, args: &mut [Arg<'_>], read: impl FnOnce(&[RuntimeValue]) -> T) -> Result<T, Error> {
        self.user.check_args(args)?;
        let outcome = with_scratch(|s| {
            s.results_for(self.native.returns());
            self.native.call_into(args, &mut s.results)?;
            Ok(read(&s.results))
        });
        outcome.map_err(|e| self.user.call_error(args, e))
    }

    /// Call the function through an argument frame (no thread-local scratch, no result
    /// values: `read` gets the result slots and the result types), or `None` when the call does
    /// not fit a frame or an argument does not fit its parameter (then call
    /// [`call_with`](Self::call_with), which says what is wrong).
    #[inline]
    pub(crate) fn call_framed<T>(
        &self,
        args: &mut [Arg<'_>],
        read: impl FnOnce(&FrameResults, &[Type]) -> T,
    ) -> Option<Result<T, Error>> {
        let mut slots = FrameResults::new();
        // The direct call first: arguments in registers, no frame to build.
        if let Some(status) = self.native.call_direct(args, &mut [], &mut slots) {
            return Some(if status == 0 {
                Ok(read(&slots, &self.user.returns))
            } else {
                Err(self.user.call_error(args, self.native.status_error(status, &slots)))
            });
        }
        if args.len() != self.user.params.len() {
            return None;
        }
        let mut frame = self.native.frame()?;
        args.iter_mut().try_for_each(|a| frame.push(a.reborrow())).ok()?;
        let called = frame.call_scratch(&mut slots);
        Some(match called {
            Ok(()) => Ok(read(&slots, self.native.returns())),
            Err(e) => Err(self.user.call_error(args, e)),
        })
    }
}

impl std::fmt::Debug for PrimalFn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PrimalFn").field("function", &self.user.name).finish_non_exhaustive()
    }
}
