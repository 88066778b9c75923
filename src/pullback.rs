//! The pullback half of reverse mode: output cotangents in, input cotangents out, from the
//! state a forward run recorded. [`Pullback`] owns that state.

use crate::error::{Buffer, Error};
use crate::layout::Layout;
use crate::scratch::{Scratch, with_scratch};
use crate::user::UserFunction;
use jitdiff_ir::Tape;
use jitdiff_jit::{Arg, CallError, CompiledFn};
use smallvec::SmallVec;

/// Run `f_pullback` once on `scratch.tape` (its read cursor at the end of the forward run's
/// entries): `cotangents` holds one entry per output, `input_cotangents` receives one per
/// input (overwritten).
pub(crate) fn run_pullback(
    pullback: &CompiledFn,
    scratch: &mut Scratch,
    stable: &[&[f64]],
    layout: &Layout,
    cotangents: &[f64],
    input_cotangents: &mut [f64],
) -> Result<(), CallError> {
    let Scratch { tape, results, buffers, .. } = scratch;
    pullback_call(pullback, tape, results, buffers, stable, layout, cotangents, input_cotangents)
}

#[allow(clippy::too_many_arguments)]
fn pullback_call(
    pullback: &CompiledFn,
    tape: &mut Tape,
    results: &mut Vec<jitdiff_ir::RuntimeValue>,
    buffers: &mut Vec<Vec<f64>>,
    stable: &[&[f64]],
    layout: &Layout,
    cotangents: &[f64],
    input_cotangents: &mut [f64],
) -> Result<(), CallError> {
    if results.len() != pullback.returns().len() {
        *results = pullback.returns().iter().map(|&t| crate::scratch::zero_of(t)).collect();
    }
    // Differential slices: an output's starts as its cotangent; an input's ends as the input
    // cotangent (the same buffer when the slice is both).
    for (k, p) in layout.slices().filter(|p| p.input.is_none()).enumerate() {
        if k == buffers.len() {
            buffers.push(vec![]);
        }
        let o = p.output.expect("a differentiated slice is an input or an output");
        buffers[k].clear();
        buffers[k].extend_from_slice(&cotangents[o..o + p.len]);
    }
    let mut all: SmallVec<[Arg<'_>; 16]> = stable.iter().map(|s| Arg::Slice(s)).collect();
    let (mut rest, mut consumed): (&mut [f64], usize) = (&mut *input_cotangents, 0);
    let mut own = buffers.iter_mut();
    for p in layout.slices() {
        match p.input {
            Some(start) => {
                let tail = std::mem::take(&mut rest);
                let (part, tail) = tail[start - consumed..].split_at_mut(p.len);
                match p.output {
                    Some(o) => part.copy_from_slice(&cotangents[o..o + p.len]),
                    None => part.fill(0.0),
                }
                all.push(Arg::SliceMut(part));
                (rest, consumed) = (tail, start + p.len);
            }
            None => all.push(Arg::SliceMut(own.next().expect("one buffer per output slice"))),
        }
    }
    all.extend(cotangents[..layout.float_results].iter().map(|&c| Arg::F64(c)));
    pullback.call_into_with_tape(&mut all, results, tape)?;
    drop(all);
    for (k, p) in layout.scalars().enumerate() {
        input_cotangents[p.input.expect("f64 parts are inputs")] = results[k].as_f64().unwrap_or(f64::NAN);
    }
    Ok(())
}

/// The pullback of one forward run: owns the recorded state (the tape, and copies of the
/// read-only slices the pullback reads again) and maps output cotangents to input cotangents,
/// as often as wanted. From [`GradientFn::pullback`](crate::GradientFn::pullback).
///
/// ```
/// use jitdiff::{GradientFn, args, ir::parse_module};
/// let m = parse_module("func @f(x: f64, y: f64) -> f64, f64 {\nentry:\n    p = fmul x, y\n    s = fadd x, y\n    ret p, s\n}").unwrap();
/// let f = GradientFn::builder(&m, "f").wrt(["x", "y"]).build().unwrap();
/// let (_values, mut pullback) = f.pullback(&mut args![2.0, 3.0]).unwrap();
/// assert_eq!(pullback.apply(&[1.0, 0.0]).unwrap(), [3.0, 2.0]); // d(xy)
/// assert_eq!(pullback.apply(&[0.0, 1.0]).unwrap(), [1.0, 1.0]); // d(x + y)
/// ```
pub struct Pullback {
    pullback: CompiledFn,
    user: UserFunction,
    tape: Tape,
    slices: Vec<Vec<f64>>,
    layout: Layout,
}

impl Pullback {
    pub(crate) fn new(
        pullback: CompiledFn,
        user: UserFunction,
        tape: Tape,
        slices: Vec<Vec<f64>>,
        layout: Layout,
    ) -> Pullback {
        Pullback { pullback, user, tape, slices, layout }
    }

    /// Bytes of recorded state: the tape and the copies of read-only slice arguments.
    pub fn state_bytes(&self) -> usize {
        (self.tape.len() + self.slices.iter().map(Vec::len).sum::<usize>()) * 8
    }

    /// Number of outputs (cotangents `apply` takes).
    pub fn outputs(&self) -> usize {
        self.layout.outputs
    }

    /// Number of inputs (cotangents `apply` returns).
    pub fn inputs(&self) -> usize {
        self.layout.inputs
    }

    /// The input cotangents (flat, like a gradient) for `cotangents`, one per output.
    pub fn apply(&mut self, cotangents: &[f64]) -> Result<Vec<f64>, Error> {
        let mut out = vec![0.0; self.layout.inputs];
        self.apply_into(cotangents, &mut out)?;
        Ok(out)
    }

    /// [`Pullback::apply`] into a buffer of one entry per input.
    pub fn apply_into(&mut self, cotangents: &[f64], input_cotangents: &mut [f64]) -> Result<(), Error> {
        let layout = &self.layout;
        if cotangents.len() != layout.outputs {
            return Err(self.user.length_error(
                Buffer::Cotangents,
                layout.outputs,
                cotangents.len(),
                self.user.outputs_reason(),
            ));
        }
        if input_cotangents.len() != layout.inputs {
            return Err(self.user.length_error(
                Buffer::InputCotangents,
                layout.inputs,
                input_cotangents.len(),
                self.user.inputs_reason(),
            ));
        }
        self.tape.reset_cursor();
        let stable: SmallVec<[&[f64]; 4]> = self.slices.iter().map(Vec::as_slice).collect();
        let tape = &mut self.tape;
        with_scratch(|s| {
            pullback_call(
                &self.pullback,
                tape,
                &mut s.results,
                &mut s.buffers,
                &stable,
                layout,
                cotangents,
                input_cotangents,
            )
        })
        .map_err(|e| match e {
            // The forward run did not fault, so the function alone does not fault here either.
            CallError::Runtime(fault) => Error::Fault {
                function: self.user.name.clone(),
                fault: Box::new(fault),
                position: None,
                in_derivative: true,
            },
            other => self.user.internal(other),
        })
    }
}

impl std::fmt::Debug for Pullback {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pullback")
            .field("function", &self.user.name)
            .field("wrt", &self.user.wrt)
            .finish_non_exhaustive()
    }
}
