//! Reverse mode, compiled: [`GradientFn`] gives `value_and_grad` and `vjp` (with a [`Pullback`]
//! that owns its state and can be applied to any number of cotangents) as safe native calls.

use crate::ad::{ReverseDerivative, derive_reverse_with_rules};
use crate::error::Error;
use jitdiff_ir::passes::retain_reachable;
use jitdiff_ir::{ExternRegistry, Module, RuntimeValue, Tape, Type};
use jitdiff_jit::{Arg, CompiledFn, CompiledModule, JitOptions, compile};
use jitdiff_rules::RuleSet;
use smallvec::SmallVec;

/// A JIT-compiled reverse-mode derivative of one function.
///
/// Gradients are flat: one entry per differentiated `f64` parameter and `len` entries per
/// differentiated slice parameter, in parameter order. The handle owns a tape that it reuses, so
/// after the first call `value_and_grad` allocates nothing; clone the handle (cheap: the native
/// code is shared) to call from several threads.
///
/// ```
/// use jitdiff::{GradientFn, jit::Arg, ir::parse_module};
/// let m = parse_module(jitdiff_problems::rosenbrock::ROSENBROCK_IR).unwrap();
/// let mut f = GradientFn::new(&m, "rosenbrock", &[true]).unwrap();
/// let x = [1.0, 1.0, 1.0];
/// let mut grad = [9.0; 3];
/// let value = f.value_and_grad(&mut [Arg::Slice(&x)], &mut grad).unwrap();
/// assert_eq!((value, grad), (0.0, [0.0; 3])); // the minimum
/// ```
#[derive(Clone)]
pub struct GradientFn {
    derived: ReverseDerivative,
    _compiled: CompiledModule,
    value_and_grad: Option<CompiledFn>,
    forward: CompiledFn,
    pullback: CompiledFn,
    params: Vec<Type>,
    returns: Vec<Type>,
    tape: Tape,
    results: Vec<RuntimeValue>,
}

impl GradientFn {
    /// Derive and compile the reverse mode of `@name` for the differentiated parameters `wrt`.
    pub fn new(module: &Module, name: &str, wrt: &[bool]) -> Result<GradientFn, Error> {
        GradientFn::with_externs(module, name, wrt, &ExternRegistry::new(), &JitOptions::new())
    }

    /// As [`GradientFn::new`], with extern implementations and JIT options.
    pub fn with_externs(
        module: &Module,
        name: &str,
        wrt: &[bool],
        externs: &ExternRegistry,
        options: &JitOptions,
    ) -> Result<GradientFn, Error> {
        GradientFn::with_rules(module, name, wrt, &RuleSet::new(), externs, options)
    }

    /// As [`GradientFn::with_externs`], with custom rules (see [`RuleSet`]); the externs of
    /// native rules are added to `externs` for this compilation.
    pub fn with_rules(
        module: &Module,
        name: &str,
        wrt: &[bool],
        rules: &RuleSet,
        externs: &ExternRegistry,
        options: &JitOptions,
    ) -> Result<GradientFn, Error> {
        let derived = derive_reverse_with_rules(module, name, wrt, rules)?;
        // Only what the handles call: the original functions are mostly not needed any more.
        let mut roots = vec![derived.forward.as_str(), derived.pullback.as_str()];
        roots.extend(derived.value_and_grad.as_deref());
        let needed = retain_reachable(&derived.module, &roots);
        let mut options = options.clone();
        for (pullback, differential, primal) in &derived.differentials {
            if needed.func_by_name(pullback).is_some() {
                options = options.shadow_slice(pullback, *differential, *primal, 1);
            }
        }
        let compiled = compile(&needed, &with_rule_externs(externs, rules), &options)?;
        let value_and_grad = derived.value_and_grad.as_deref().map(|n| compiled.function(n)).transpose()?;
        let forward = compiled.function(&derived.forward)?;
        let pullback = compiled.function(&derived.pullback)?;
        let source = module.func_by_name(name).expect("derive_reverse checked the name");
        let results = value_and_grad.as_ref().map_or(vec![], |f| f.returns().iter().map(|&t| zero_of(t)).collect());
        Ok(GradientFn {
            params: source.param_types(),
            returns: source.returns.clone(),
            derived,
            _compiled: compiled,
            value_and_grad,
            forward,
            pullback,
            tape: Tape::new(),
            results,
        })
    }

    /// The derived IR (`f_fwd`, `f_pullback`, `f_value_and_grad` and what they call).
    pub fn derivative(&self) -> &ReverseDerivative {
        &self.derived
    }

    /// Bytes of tape the last call recorded (the pullback state).
    pub fn tape_bytes(&self) -> usize {
        self.tape.len() * 8
    }

    /// The value of the first `f64` result and its gradient, written to `grad` (overwritten,
    /// not accumulated). One fused native call; no allocation after the first.
    pub fn value_and_grad(&mut self, args: &mut [Arg<'_>], grad: &mut [f64]) -> Result<f64, Error> {
        let Some(native) = &self.value_and_grad else {
            return Err(Error::Shape { what: "f64 results of the function".into(), expected: 1, got: 0 });
        };
        let sizes = self.gradient_sizes(args);
        let total: usize = sizes.iter().sum();
        if grad.len() != total {
            return Err(Error::Shape { what: "gradient buffer".into(), expected: total, got: grad.len() });
        }
        grad.fill(0.0);
        // Split the flat gradient: slice parameters' parts become the d-slices the pullback fills.
        let mut scalar_slots: SmallVec<[usize; 8]> = SmallVec::new();
        let mut all: SmallVec<[Arg<'_>; 16]> = args.iter_mut().map(reborrow).collect();
        let mut rest: &mut [f64] = grad;
        let mut offset = 0;
        for (i, size) in sizes.iter().enumerate().filter(|(i, _)| self.derived.wrt[*i]) {
            let (part, tail) = rest.split_at_mut(*size);
            rest = tail;
            if self.params[i].is_slice() {
                all.push(Arg::SliceMut(part));
            } else {
                scalar_slots.push(offset);
            }
            offset += size;
        }
        self.tape.clear();
        native.call_into_with_tape(&mut all, &mut self.results, &mut self.tape)?;
        drop(all);
        let value =
            self.results.iter().zip(&self.returns).find(|(_, t)| **t == Type::F64).and_then(|(v, _)| v.as_f64());
        for (slot, g) in scalar_slots.iter().zip(&self.results[self.returns.len()..]) {
            grad[*slot] = g.as_f64().unwrap_or(f64::NAN);
        }
        Ok(value.unwrap_or(f64::NAN))
    }

    /// Run the forward function and return its results with a [`Pullback`] that owns the
    /// recorded state.
    pub fn vjp(&self, args: &mut [Arg<'_>]) -> Result<(Vec<RuntimeValue>, Pullback), Error> {
        let mut tape = Tape::new();
        let values = self.forward.call_with_tape(args, &mut tape)?;
        let sizes = self.gradient_sizes(args);
        // The pullback reads the read-only slices again instead of recording what it loads from
        // them; the `Pullback` outlives the borrow of `args`, so it keeps its own copies.
        let slices = self
            .derived
            .pullback_slices
            .iter()
            .map(|&k| match args.get(k) {
                Some(Arg::Slice(s)) => s.to_vec(),
                Some(Arg::SliceMut(s)) => s.to_vec(),
                _ => vec![],
            })
            .collect();
        Ok((
            values,
            Pullback {
                pullback: self.pullback.clone(),
                tape,
                slices,
                sizes: sizes.to_vec(),
                wrt: self.derived.wrt.clone(),
                params: self.params.clone(),
                returns: self.returns.clone(),
            },
        ))
    }

    fn gradient_sizes(&self, args: &[Arg<'_>]) -> SmallVec<[usize; 8]> {
        (0..self.params.len())
            .map(|i| match args.get(i) {
                _ if !self.derived.wrt.get(i).copied().unwrap_or(false) => 0,
                Some(Arg::Slice(s)) => s.len(),
                Some(Arg::SliceMut(s)) => s.len(),
                _ => 1,
            })
            .collect()
    }
}

/// The pullback of one forward run: owns the recorded state (the tape) and maps result
/// cotangents to parameter cotangents, as often as wanted.
pub struct Pullback {
    pullback: CompiledFn,
    tape: Tape,
    /// Copies of the read-only slice arguments of the forward run, which the pullback reads.
    slices: Vec<Vec<f64>>,
    sizes: Vec<usize>,
    wrt: Vec<bool>,
    params: Vec<Type>,
    returns: Vec<Type>,
}

impl Pullback {
    /// Bytes of recorded state: the tape and the copies of read-only slice arguments.
    pub fn state_bytes(&self) -> usize {
        (self.tape.len() + self.slices.iter().map(Vec::len).sum::<usize>()) * 8
    }

    /// The cotangent of every differentiated parameter (flat, as [`GradientFn`] lays gradients
    /// out) for `cotangents`, one per `f64` result.
    pub fn apply(&mut self, cotangents: &[f64]) -> Result<Vec<f64>, Error> {
        let float_results = self.returns.iter().filter(|t| **t == Type::F64).count();
        if cotangents.len() != float_results {
            return Err(Error::Shape {
                what: "cotangents (one per f64 result)".into(),
                expected: float_results,
                got: cotangents.len(),
            });
        }
        let total: usize = self.sizes.iter().sum();
        let mut grad = vec![0.0; total];
        let mut slices: Vec<(usize, usize)> = vec![];
        let mut scalars: Vec<usize> = vec![];
        let mut offset = 0;
        for (i, &size) in self.sizes.iter().enumerate().filter(|(i, _)| self.wrt[*i]) {
            if self.params[i].is_slice() {
                slices.push((offset, size));
            } else {
                scalars.push(offset);
            }
            offset += size;
        }
        self.tape.reset_cursor();
        let mut args: Vec<Arg<'_>> = self.slices.iter().map(|s| Arg::Slice(s)).collect();
        let mut rest: &mut [f64] = &mut grad;
        let mut consumed = 0;
        for &(start, size) in &slices {
            let (_, tail) = rest.split_at_mut(start - consumed);
            let (part, tail) = tail.split_at_mut(size);
            args.push(Arg::SliceMut(part));
            rest = tail;
            consumed = start + size;
        }
        args.extend(cotangents.iter().map(|&c| Arg::F64(c)));
        let out = self.pullback.call_with_tape(&mut args, &mut self.tape)?;
        drop(args);
        for (slot, g) in scalars.iter().zip(out) {
            grad[*slot] = g.as_f64().unwrap_or(f64::NAN);
        }
        Ok(grad)
    }
}

pub(crate) fn zero_of(t: Type) -> RuntimeValue {
    match t {
        Type::I64 => RuntimeValue::I64(0),
        Type::Bool => RuntimeValue::Bool(false),
        Type::F64x(w) => RuntimeValue::Vector(vec![0.0; w as usize]),
        _ => RuntimeValue::F64(0.0),
    }
}

/// `externs` plus the externs of `rules`' native rules.
pub(crate) fn with_rule_externs(externs: &ExternRegistry, rules: &RuleSet) -> ExternRegistry {
    let mut all = externs.clone();
    rules.register_externs(&mut all);
    all
}

/// A shorter-lived copy of an argument (slices reborrowed).
pub(crate) fn reborrow<'s>(a: &'s mut Arg<'_>) -> Arg<'s> {
    match a {
        Arg::F64(x) => Arg::F64(*x),
        Arg::I64(x) => Arg::I64(*x),
        Arg::Bool(x) => Arg::Bool(*x),
        Arg::Vector(v) => Arg::Vector(v),
        Arg::Slice(v) => Arg::Slice(v),
        Arg::SliceMut(v) => Arg::SliceMut(v),
    }
}
