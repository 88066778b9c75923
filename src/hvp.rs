//! Second order: Hessian-vector products by forward mode over reverse mode. Derivatives are IR,
//! so the reverse-mode `f_value_and_grad` is itself differentiated in forward mode; the tangent
//! of its gradient output in direction `v` is `H v`. With tangent width W one sweep gives W
//! products, and a dense Hessian takes `ceil(n / W)` sweeps.

use crate::ad::{ForwardDerivative, derive_forward_with_rules, derive_reverse_with_rules};
use crate::error::Error;
use crate::gradient::with_rule_externs;
use crate::gradient::{reborrow, zero_of};
use jitdiff_ir::passes::retain_reachable;
use jitdiff_ir::{ExternRegistry, Module, RuntimeValue, Tape, Type};
use jitdiff_jit::{Arg, CompiledFn, CompiledModule, JitOptions, compile};
use jitdiff_rules::RuleSet;

/// A JIT-compiled Hessian-vector product of a scalar function, `W` directions per sweep.
///
/// Directions and products are flat like gradients (one entry per differentiated `f64`
/// parameter, `len` per differentiated slice, in parameter order), direction-major: direction
/// `k` is `directions[k * n .. (k + 1) * n]`.
///
/// ```
/// use jitdiff::{HvpFn, jit::Arg, ir::parse_module};
/// // f(x, y) = x^2 y: H = [[2y, 2x], [2x, 0]]
/// let m = parse_module("func @f(x: f64, y: f64) -> f64 {\nentry:\n    a = fmul x, x\n    b = fmul a, y\n    ret b\n}").unwrap();
/// let mut h = HvpFn::new(&m, "f", &[true, true], 1).unwrap();
/// let mut hv = [0.0; 2];
/// let value = h.hvp(&mut [Arg::F64(3.0), Arg::F64(5.0)], &[1.0, 0.0], &mut hv).unwrap();
/// assert_eq!((value, hv), (45.0, [10.0, 6.0]));
/// ```
pub struct HvpFn {
    derived: ForwardDerivative,
    _compiled: CompiledModule,
    native: CompiledFn,
    params: Vec<Type>,
    /// The results of `f_value_and_grad`: `f`'s results, then one cotangent per `f64` wrt.
    vg_returns: Vec<Type>,
    wrt: Vec<bool>,
    width: usize,
    tape: Tape,
    results: Vec<RuntimeValue>,
    /// Reused per call: the tangents of the differentiated parameters, the d-slices and
    /// their tangents (the products), so that large problems do not pay for fresh pages.
    buffers: Buffers,
}

#[derive(Default)]
struct Buffers {
    tangents: Vec<Vec<f64>>,
    d_slices: Vec<Vec<f64>>,
    d_tangents: Vec<Vec<f64>>,
}

/// Resize `buffers` to `sizes` entries each and zero them.
fn reset(buffers: &mut Vec<Vec<f64>>, sizes: impl Iterator<Item = usize>) {
    let sizes: Vec<usize> = sizes.collect();
    buffers.resize_with(sizes.len(), Vec::new);
    for (b, n) in buffers.iter_mut().zip(sizes) {
        b.clear();
        b.resize(n, 0.0);
    }
}

impl HvpFn {
    /// Derive and compile the HVP of `@name` (which must have an `f64` result) for the
    /// differentiated parameters `wrt`, with `width` ∈ {1, 2, 4, 8, 16} directions per sweep.
    pub fn new(module: &Module, name: &str, wrt: &[bool], width: u8) -> Result<HvpFn, Error> {
        HvpFn::with_externs(module, name, wrt, width, &ExternRegistry::new(), &JitOptions::new())
    }

    /// As [`HvpFn::new`], with extern implementations and JIT options.
    pub fn with_externs(
        module: &Module,
        name: &str,
        wrt: &[bool],
        width: u8,
        externs: &ExternRegistry,
        options: &JitOptions,
    ) -> Result<HvpFn, Error> {
        HvpFn::with_rules(module, name, wrt, width, &RuleSet::new(), externs, options)
    }

    /// As [`HvpFn::with_externs`], with custom rules (see [`RuleSet`]). The rules' partials
    /// functions are differentiated in forward mode in turn, so an HVP through a ruled call
    /// needs the partials in IR (a native rule's extern has no derivative).
    pub fn with_rules(
        module: &Module,
        name: &str,
        wrt: &[bool],
        width: u8,
        rules: &RuleSet,
        externs: &ExternRegistry,
        options: &JitOptions,
    ) -> Result<HvpFn, Error> {
        let reverse = derive_reverse_with_rules(module, name, wrt, rules)?;
        let Some(vg) = reverse.value_and_grad.as_deref() else {
            return Err(Error::Shape { what: "f64 results of the function".into(), expected: 1, got: 0 });
        };
        let source = module.func_by_name(name).expect("derive_reverse checked the name");
        let params = source.param_types();
        // `f_value_and_grad(params..., d_slices...)`: differentiate every original parameter in
        // `wrt` and every d-slice (their tangents are the products).
        let slices = params.iter().zip(wrt).filter(|(t, on)| **on && t.is_slice()).count();
        let mut forward_wrt = wrt.to_vec();
        forward_wrt.extend(std::iter::repeat_n(true, slices));
        let derived = derive_forward_with_rules(&reverse.module, vg, &forward_wrt, width, rules)?;
        let needed = retain_reachable(&derived.module, &[&derived.name]);
        let compiled = compile(&needed, &with_rule_externs(externs, rules), options)?;
        let native = compiled.function(&derived.name)?;
        let vg_returns = reverse.module.func_by_name(vg).expect("derived").returns.clone();
        let results = native.returns().iter().map(|&t| zero_of(t)).collect();
        Ok(HvpFn {
            derived,
            _compiled: compiled,
            native,
            params,
            vg_returns,
            wrt: wrt.to_vec(),
            width: width as usize,
            tape: Tape::new(),
            results,
            buffers: Buffers::default(),
        })
    }

    /// Directions per sweep.
    pub fn width(&self) -> usize {
        self.width
    }

    /// The derived IR (forward mode of `f_value_and_grad`).
    pub fn derivative(&self) -> &ForwardDerivative {
        &self.derived
    }

    /// Length of the flat gradient for these arguments.
    pub fn gradient_len(&self, args: &[Arg<'_>]) -> usize {
        self.sizes(args).iter().sum()
    }

    fn sizes(&self, args: &[Arg<'_>]) -> Vec<usize> {
        (0..self.params.len())
            .map(|i| match args.get(i) {
                _ if !self.wrt.get(i).copied().unwrap_or(false) => 0,
                Some(Arg::Slice(s)) => s.len(),
                Some(Arg::SliceMut(s)) => s.len(),
                _ => 1,
            })
            .collect()
    }

    /// `H v` for `width()` directions (`directions` and `products` hold `width() * n` entries,
    /// direction-major); returns the function's value.
    pub fn hvp(&mut self, args: &mut [Arg<'_>], directions: &[f64], products: &mut [f64]) -> Result<f64, Error> {
        let n = self.gradient_len(args);
        let mut gradient = vec![0.0; n];
        self.hvp_with_gradient(args, directions, &mut gradient, products)
    }

    /// [`HvpFn::hvp`], also writing the gradient (`n` entries).
    pub fn hvp_with_gradient(
        &mut self,
        args: &mut [Arg<'_>],
        directions: &[f64],
        gradient: &mut [f64],
        products: &mut [f64],
    ) -> Result<f64, Error> {
        if args.len() != self.params.len() {
            return Err(Error::Shape { what: "arguments".into(), expected: self.params.len(), got: args.len() });
        }
        let sizes = self.sizes(args);
        let n: usize = sizes.iter().sum();
        let w = self.width;
        for (what, got, expected) in [
            ("directions", directions.len(), w * n),
            ("products", products.len(), w * n),
            ("gradient", gradient.len(), n),
        ] {
            if got != expected {
                return Err(Error::Shape { what: format!("{what} buffer"), expected, got });
            }
        }
        let mut offsets = Vec::with_capacity(sizes.len());
        let mut offset = 0;
        for &s in &sizes {
            offsets.push(offset);
            offset += s;
        }
        let active: Vec<usize> = (0..self.params.len()).filter(|&i| self.wrt[i]).collect();
        let slice_params: Vec<usize> = active.iter().copied().filter(|&i| self.params[i].is_slice()).collect();
        let Buffers { tangents, d_slices, d_tangents } = &mut self.buffers;
        // Lane-interleaved tangents: element `i` of a slice parameter's tangent holds lanes
        // `w * i .. w * i + w`; an `f64` parameter's tangent is its `w` lanes.
        reset(tangents, active.iter().map(|&i| w * sizes[i]));
        for (&i, t) in active.iter().zip(tangents.iter_mut()) {
            for e in 0..sizes[i] {
                for k in 0..w {
                    t[w * e + k] = directions[k * n + offsets[i] + e];
                }
            }
        }
        reset(d_slices, slice_params.iter().map(|&i| sizes[i]));
        reset(d_tangents, slice_params.iter().map(|&i| w * sizes[i]));

        let mut all: Vec<Arg<'_>> = args.iter_mut().map(reborrow).collect();
        all.extend(d_slices.iter_mut().map(|d| Arg::SliceMut(d)));
        for (&i, t) in active.iter().zip(tangents.iter()) {
            all.push(match (self.params[i], w) {
                (Type::F64, 1) => Arg::F64(t[0]),
                (Type::F64, _) => Arg::Vector(t),
                _ => Arg::Slice(t),
            });
        }
        all.extend(d_tangents.iter_mut().map(|d| Arg::SliceMut(d)));
        self.tape.clear();
        self.native.call_into_with_tape(&mut all, &mut self.results, &mut self.tape)?;
        drop(all);

        // Slice parameters: gradient from the d-slices, products from their tangents.
        for ((&i, d), t) in slice_params.iter().zip(d_slices.iter()).zip(d_tangents.iter()) {
            let o = offsets[i];
            gradient[o..o + sizes[i]].copy_from_slice(d);
            for e in 0..sizes[i] {
                for k in 0..w {
                    products[k * n + o + e] = t[w * e + k];
                }
            }
        }
        // `f64` parameters: the cotangent results of `f_value_and_grad` and their tangents.
        let returned = self.vg_returns.len();
        let f_results = returned - active.iter().filter(|&&i| self.params[i] == Type::F64).count();
        let float_return_index = |r: usize| self.vg_returns[..r].iter().filter(|t| **t == Type::F64).count();
        let scalar_params = active.iter().copied().filter(|&i| self.params[i] == Type::F64);
        for (slot, i) in scalar_params.enumerate() {
            let r = f_results + slot;
            gradient[offsets[i]] = self.results[r].as_f64().unwrap_or(f64::NAN);
            let lanes = lanes_of(&self.results[returned + float_return_index(r)]);
            for k in 0..w {
                products[k * n + offsets[i]] = lanes.get(k).copied().unwrap_or(f64::NAN);
            }
        }
        let value = self.results[..f_results]
            .iter()
            .zip(&self.vg_returns)
            .find(|(_, t)| **t == Type::F64)
            .and_then(|(v, _)| v.as_f64());
        Ok(value.unwrap_or(f64::NAN))
    }

    /// The dense Hessian (row-major, `n × n`) from `ceil(n / width)` sweeps with unit directions.
    pub fn hessian(&mut self, args: &mut [Arg<'_>]) -> Result<Vec<f64>, Error> {
        let n = self.gradient_len(args);
        let w = self.width;
        let mut hessian = vec![0.0; n * n];
        let mut directions = vec![0.0; w * n];
        let mut products = vec![0.0; w * n];
        let mut gradient = vec![0.0; n];
        for start in (0..n).step_by(w) {
            directions.fill(0.0);
            let lanes = w.min(n - start);
            for k in 0..lanes {
                directions[k * n + start + k] = 1.0;
            }
            self.hvp_with_gradient(args, &directions, &mut gradient, &mut products)?;
            // Column `start + k` of H is product `k`; H is symmetric, store it as a row too.
            for k in 0..lanes {
                for row in 0..n {
                    hessian[row * n + start + k] = products[k * n + row];
                }
            }
        }
        Ok(hessian)
    }
}

fn lanes_of(v: &RuntimeValue) -> Vec<f64> {
    match v {
        RuntimeValue::F64(x) => vec![*x],
        RuntimeValue::Vector(lanes) => lanes.clone(),
        _ => vec![],
    }
}
