//! The interpreter as the JIT's oracle: run one call both ways and compare everything observable
//! — results bit for bit (any NaN equals any NaN), errors by kind and site (plus index and length
//! for out-of-bounds, name and message for a failed extern), the final contents of every
//! `mslice` argument and, with [`differential_call_with_tape`], the final tape.

use crate::arg::Arg;
use crate::error::CallError;
use crate::handle::CompiledModule;
use jitdiff_ir::{ArgValue, Fault, InterpError, Interpreter, RuntimeValue, Tape};

/// What a call that behaved the same under both did.
#[derive(Clone, Debug, PartialEq)]
pub enum Agreement {
    /// Both returned these values.
    Returned(Vec<RuntimeValue>),
    /// Both failed with an error of this kind (`"OutOfBounds"`, ...) at the same site.
    Failed(&'static str),
    /// The interpreter ran out of steps, so the native call was not made (it might not end).
    Skipped,
}

/// How the JIT and the interpreter disagreed on one call.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("@{function}({args}): {detail}")]
pub struct Disagreement {
    /// The function called.
    pub function: String,
    /// The arguments, printed.
    pub args: String,
    /// What differed.
    pub detail: String,
}

/// Do two floats agree: same bits, or both NaN?
pub fn same_f64(a: f64, b: f64) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

/// Do two runtime values agree (floats by [`same_f64`], lane by lane)?
pub fn same_value(a: &RuntimeValue, b: &RuntimeValue) -> bool {
    match (a, b) {
        (RuntimeValue::F64(x), RuntimeValue::F64(y)) => same_f64(*x, *y),
        (RuntimeValue::Vector(x), RuntimeValue::Vector(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same_f64(*p, *q))
        }
        _ => a == b,
    }
}

/// Call `function` of `compiled` and of `interp` (which must interpret the module `compiled` was
/// compiled from, with the same externs) on copies of `args`, and compare.
///
/// ```
/// use jitdiff_ir::{parse_module, ArgValue, ExternRegistry, Interpreter};
/// use jitdiff_jit::{compile, differential_call, Agreement, JitOptions};
/// let ir = parse_module("func @f(x: slice, i: i64) -> f64 {\nentry:\n    v = load x, i\n    ret v\n}\n").unwrap();
/// let compiled = compile(&ir, &ExternRegistry::new(), &JitOptions::new()).unwrap();
/// let interp = Interpreter::new(&ir);
/// let ok = differential_call(&compiled, &interp, "f", &[ArgValue::Slice(vec![1.0, 2.0]), ArgValue::I64(1)]);
/// assert!(matches!(ok, Ok(Agreement::Returned(_))));
/// let oob = differential_call(&compiled, &interp, "f", &[ArgValue::Slice(vec![1.0]), ArgValue::I64(-1)]);
/// assert_eq!(oob, Ok(Agreement::Failed("OutOfBounds")));
/// ```
pub fn differential_call(
    compiled: &CompiledModule,
    interp: &Interpreter<'_>,
    function: &str,
    args: &[ArgValue],
) -> Result<Agreement, Disagreement> {
    differential_call_with_tape(compiled, interp, function, args, &Tape::new()).map(|(agreement, _)| agreement)
}

/// [`differential_call`] on a tape: both run on their own copy of `tape`, and the final tapes
/// must agree too (entries and cursor; two entries agree when their bits are equal or both are
/// NaN as `f64`, since NaN payloads may differ). Returns the agreed final tape, so a forward
/// call and then its pullback can be checked in turn.
///
/// ```
/// use jitdiff_ir::{parse_module, ArgValue, ExternRegistry, Interpreter, Tape};
/// use jitdiff_jit::{compile, differential_call_with_tape, Agreement, JitOptions};
/// let ir = parse_module(
///     "func @save(x: f64) {\nentry:\n    tpush x\n    ret\n}\n\
///      func @load() -> f64 {\nentry:\n    x = tpop.f64\n    ret x\n}\n",
/// )
/// .unwrap();
/// let compiled = compile(&ir, &ExternRegistry::new(), &JitOptions::new()).unwrap();
/// let interp = Interpreter::new(&ir);
/// let (_, tape) = differential_call_with_tape(&compiled, &interp, "save", &[ArgValue::F64(1.5)], &Tape::new()).unwrap();
/// assert_eq!(tape.entries(), [1.5f64.to_bits()]);
/// let (popped, tape) = differential_call_with_tape(&compiled, &interp, "load", &[], &tape).unwrap();
/// assert!(matches!(popped, Agreement::Returned(_)));
/// assert_eq!(tape.cursor(), 0);
/// let (failed, _) = differential_call_with_tape(&compiled, &interp, "load", &[], &tape).unwrap();
/// assert_eq!(failed, Agreement::Failed("TapeUnderflow"));
/// ```
pub fn differential_call_with_tape(
    compiled: &CompiledModule,
    interp: &Interpreter<'_>,
    function: &str,
    args: &[ArgValue],
    tape: &Tape,
) -> Result<(Agreement, Tape), Disagreement> {
    let disagree = |detail: String| Disagreement { function: function.to_string(), args: format!("{args:?}"), detail };
    let mut interp_args = args.to_vec();
    let mut interp_tape = tape.clone();
    let expected = interp.call_with_tape(function, &mut interp_args, &mut interp_tape);
    if matches!(expected, Err(InterpError::StepLimitExceeded { .. })) {
        return Ok((Agreement::Skipped, interp_tape));
    }
    let native = compiled.function(function).map_err(|e| disagree(format!("not compiled: {e}")))?;
    let mut jit_args = args.to_vec();
    let mut jit_tape = tape.clone();
    let got = {
        let mut borrowed: Vec<Arg<'_>> = jit_args.iter_mut().map(Arg::from).collect();
        native.call_with_tape(&mut borrowed, &mut jit_tape)
    };
    let agreement = match (&expected, &got) {
        (Ok(want), Ok(have)) => {
            if want.len() != have.len() || !want.iter().zip(have).all(|(a, b)| same_value(a, b)) {
                return Err(disagree(format!("interpreter returned {want:?}, native code {have:?}")));
            }
            Agreement::Returned(have.clone())
        }
        (Err(want), Err(CallError::Runtime(have))) => {
            same_error(want, have).map_err(|d| disagree(format!("{d}: interpreter: {want}; native: {have}")))?;
            Agreement::Failed(have.kind_name())
        }
        (Err(InterpError::ArgCount { .. }), Err(CallError::ArgCount { .. })) => Agreement::Failed("ArgCount"),
        (Err(InterpError::ArgType { .. }), Err(CallError::ArgType { .. } | CallError::VectorLength { .. })) => {
            Agreement::Failed("ArgType")
        }
        (want, have) => return Err(disagree(format!("interpreter: {want:?}; native: {have:?}"))),
    };
    for (k, (a, b)) in interp_args.iter().zip(&jit_args).enumerate() {
        if let (ArgValue::SliceMut(a), ArgValue::SliceMut(b)) = (a, b)
            && (a.len() != b.len() || !a.iter().zip(b).all(|(x, y)| same_f64(*x, *y)))
        {
            return Err(disagree(format!("mslice argument {k} ends as {a:?} (interpreter) vs {b:?} (native)")));
        }
    }
    same_tape(&interp_tape, &jit_tape).map_err(disagree)?;
    Ok((agreement, jit_tape))
}

/// Do two final tapes agree (entries by bits or both NaN as `f64`, and cursors)?
fn same_tape(want: &Tape, have: &Tape) -> Result<(), String> {
    if want.len() != have.len() || want.cursor() != have.cursor() {
        return Err(format!(
            "the tape ends with {} entries and cursor {} (interpreter) vs {} and {} (native)",
            want.len(),
            want.cursor(),
            have.len(),
            have.cursor()
        ));
    }
    let differs = want.entries().iter().zip(have.entries()).position(|(&a, &b)| {
        let (x, y) = (f64::from_bits(a), f64::from_bits(b));
        a != b && !(x.is_nan() && y.is_nan())
    });
    match differs {
        Some(k) => Err(format!(
            "tape entry {k} is {:#018x} (interpreter) vs {:#018x} (native)",
            want.entries()[k],
            have.entries()[k]
        )),
        None => Ok(()),
    }
}

/// The interpreter's error and native code's fault are the same [`Fault`] (kind, site and
/// details): one type, compared as values.
fn same_error(want: &InterpError, have: &Fault) -> Result<(), &'static str> {
    match want {
        InterpError::Fault(fault) if fault == have => Ok(()),
        InterpError::Fault(fault) if fault.kind_name() != have.kind_name() => Err("different error kinds"),
        InterpError::Fault(fault) if fault.site() != have.site() => Err("different error sites"),
        InterpError::Fault(_) => Err("different details"),
        _ => Err("the interpreter failed before running"),
    }
}
