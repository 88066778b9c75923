//! Run-time faults in the user's terms. Native derivative code that faults reports a site in a
//! derived function the user never wrote; the function itself, run by the reference
//! interpreter on the same arguments, faults at the user's own instruction (the derivative
//! computes the primal first, in the same order), and that site — with its line and column
//! when a source map was given — is what the error names.

use crate::error::Error;
use crate::user::UserFunction;
use jitdiff_ir::{ArgValue, Fault, InterpError, Interpreter};
use jitdiff_jit::{Arg, CallError};

/// The interpreter gives up on a replay after this many steps (about a second). A derivative
/// faults during or after its primal part, so a replay of a fault that the primal reproduces
/// takes about as many steps as the native call ran; beyond that, the fault is reported as the
/// derivative's.
const REPLAY_STEPS: u64 = 200_000_000;

/// What a fault is, without its site.
pub(crate) fn describe(fault: &Fault) -> String {
    match fault {
        Fault::OutOfBounds { index, len, .. } => format!("index {index} out of bounds for a slice of length {len}"),
        Fault::DivisionByZero { .. } => "integer division by zero".into(),
        Fault::CallDepthExceeded { .. } => {
            format!("call depth limit of {} frames exceeded (unbounded recursion?)", jitdiff_ir::MAX_CALL_DEPTH)
        }
        Fault::TapeUnderflow { .. } => "tape underflow: more tpop than tpush".into(),
        Fault::TapeAllocation { .. } => {
            "could not grow the pullback state (out of memory, or beyond the tape limit of JitOptions::tape_limit, 4 GiB by default)".into()
        }
        Fault::AllocFailed { len, .. } => format!("alloc of length {len} failed (the length must be >= 0 and the memory available)"),
        Fault::ExternFailed { name, message, .. } => format!("extern @{name} failed: {message}"),
        Fault::Panic { .. } => "explicit panic (`panic!`, `unreachable!` or a failed `assert!`)".into(),
    }
}

impl UserFunction {
    /// The error for a failed native call of a derivative of this function with `args` (the
    /// user's arguments, as they are after the failed call).
    pub(crate) fn call_error(&self, args: &[Arg<'_>], error: CallError) -> Error {
        let fault = match error {
            CallError::Runtime(fault) => fault,
            // Everything else is checked against the user's signature before the call; reaching
            // here is a bug, reported in the user's terms as far as possible.
            other => return self.internal(other),
        };
        // The pullback state is the derivative's own: running out of it is never the user's
        // instruction (and replaying a runaway loop would take as long as the loop).
        let replayed = if matches!(fault, Fault::TapeAllocation { .. }) { None } else { self.replay(args) };
        match replayed {
            Some(user_fault) => {
                let position = self.position(&user_fault);
                Error::Fault {
                    function: self.name.clone(),
                    fault: Box::new(user_fault),
                    position,
                    in_derivative: false,
                }
            }
            None => Error::Fault {
                function: self.name.clone(),
                fault: Box::new(fault),
                position: None,
                in_derivative: true,
            },
        }
    }

    /// A failure that argument checks should have ruled out: a bug, reported as such.
    pub(crate) fn internal(&self, what: impl std::fmt::Display) -> Error {
        Error::Internal { function: self.name.clone(), message: what.to_string() }
    }

    /// Run the function in the interpreter on copies of `args`; its fault, if it faults.
    fn replay(&self, args: &[Arg<'_>]) -> Option<Fault> {
        let mut values: Vec<ArgValue> = args.iter().map(Arg::to_value).collect();
        // On the functions as written, when known: their instructions have source positions.
        let module = self.as_written.as_ref().map_or(&*self.module, |w| &*w.module);
        let interpreter = Interpreter::new(module).with_externs(&self.externs).with_step_limit(REPLAY_STEPS);
        match interpreter.call(&self.name, &mut values) {
            Err(InterpError::Fault(fault)) => Some(fault),
            _ => None,
        }
    }

    /// The source position of a fault's site, when a source map was given.
    pub(crate) fn position(&self, fault: &Fault) -> Option<jitdiff_ir::Pos> {
        self.site_position(fault.site())
    }

    /// The source position of an instruction of the user's module, when a source map was given.
    pub(crate) fn site_position(&self, site: &jitdiff_ir::Site) -> Option<jitdiff_ir::Pos> {
        let (module, spans) = match &self.as_written {
            Some(w) => (&*w.module, &*w.spans),
            None => (&*self.module, &**self.spans.as_ref()?),
        };
        spans.site(module, site)
    }
}
