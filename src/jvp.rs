//! Forward mode, compiled: [`ForwardFn`] gives JVPs, batched JVPs (W directions per sweep, W
//! lanes in SIMD registers) and Jacobians as safe native calls.

use crate::ad::{ForwardDerivative, derive_forward_with_rules};
use crate::error::Error;
use crate::grad::with_rule_externs;
use jitdiff_ir::passes::retain_reachable;
use jitdiff_ir::{ExternRegistry, Module, RuntimeValue, Type};
use jitdiff_jit::{Arg, BoundsCheckStats, CompiledFn, CompiledModule, JitOptions, compile};
use jitdiff_rules::RuleSet;
use smallvec::SmallVec;

/// A JIT-compiled forward-mode derivative of one function.
///
/// Tangents are passed per differentiated parameter, in parameter order: a slice of `W` values
/// for an `f64` parameter, and of `W * len` values for a slice parameter of length `len`, the `W`
/// lanes of element `i` at `W*i .. W*i+W`. Each `f64` result gets `W` tangent lanes.
///
/// ```
/// use jitdiff::{ForwardFn, jit::Arg, ir::parse_module};
/// let m = parse_module("func @f(x: f64, y: f64) -> f64 {\nentry:\n    p = fmul x, y\n    s = sin p\n    ret s\n}").unwrap();
/// let f = ForwardFn::new(&m, "f", &[true, true], 1).unwrap();
/// let mut out = f.output();
/// f.jvp_into(&mut [Arg::F64(2.0), Arg::F64(3.0)], &[&[1.0], &[0.0]], &mut out).unwrap();
/// // d/dx sin(xy) = y cos(xy)
/// assert!((out.tangent(0)[0] - 3.0 * 6.0f64.cos()).abs() < 1e-15);
/// ```
pub struct ForwardFn {
    derived: ForwardDerivative,
    _compiled: CompiledModule,
    native: CompiledFn,
    params: Vec<Type>,
    primal_results: usize,
    float_results: usize,
}

/// Reusable storage for the results of [`ForwardFn::jvp_into`]: calling again with the same
/// output allocates nothing.
#[derive(Clone, Debug)]
pub struct JvpOutput {
    results: Vec<RuntimeValue>,
    primal_results: usize,
}

impl JvpOutput {
    /// The primal results.
    pub fn values(&self) -> &[RuntimeValue] {
        &self.results[..self.primal_results]
    }
    /// The W tangent lanes of the `k`-th `f64` result.
    pub fn tangent(&self, k: usize) -> &[f64] {
        match &self.results[self.primal_results + k] {
            RuntimeValue::F64(x) => std::slice::from_ref(x),
            RuntimeValue::Vector(v) => v,
            _ => &[],
        }
    }
}

impl ForwardFn {
    /// Derive and compile the forward mode of `@name` for the differentiated parameters `wrt`
    /// with tangent width `width` ∈ {1, 2, 4, 8, 16}.
    pub fn new(module: &Module, name: &str, wrt: &[bool], width: u8) -> Result<ForwardFn, Error> {
        ForwardFn::with_externs(module, name, wrt, width, &ExternRegistry::new(), &JitOptions::new())
    }

    /// As [`ForwardFn::new`], with extern implementations and JIT options.
    pub fn with_externs(
        module: &Module,
        name: &str,
        wrt: &[bool],
        width: u8,
        externs: &ExternRegistry,
        options: &JitOptions,
    ) -> Result<ForwardFn, Error> {
        ForwardFn::with_rules(module, name, wrt, width, &RuleSet::new(), externs, options)
    }

    /// As [`ForwardFn::with_externs`], with custom rules (see [`RuleSet`]); the externs of
    /// native rules are added to `externs` for this compilation.
    pub fn with_rules(
        module: &Module,
        name: &str,
        wrt: &[bool],
        width: u8,
        rules: &RuleSet,
        externs: &ExternRegistry,
        options: &JitOptions,
    ) -> Result<ForwardFn, Error> {
        let derived = derive_forward_with_rules(module, name, wrt, width, rules)?;
        let source = module.func_by_name(name).expect("derive_forward checked the name");
        let params = source.param_types();
        let externs = &with_rule_externs(externs, rules);
        let needed = retain_reachable(&derived.module, &[&derived.name]);
        let compiled = compile(&needed, externs, &with_tangent_shadows(&derived, options))?;
        let native = compiled.function(&derived.name)?;
        let primal_results = source.returns.len();
        let float_results = source.returns.iter().filter(|t| **t == Type::F64).count();
        Ok(ForwardFn { derived, _compiled: compiled, native, params, primal_results, float_results })
    }

    /// Bounds checks in the derived function's native code: how many remain, and how many the
    /// tangent-slice declarations of [`with_tangent_shadows`] made redundant.
    pub fn bounds_check_stats(&self) -> BoundsCheckStats {
        self.native.bounds_check_stats()
    }

    /// The tangent width W.
    pub fn width(&self) -> usize {
        self.derived.width as usize
    }
    /// The derived IR (the original functions and the derived ones).
    pub fn derivative(&self) -> &ForwardDerivative {
        &self.derived
    }
    /// A result buffer shaped for this function.
    pub fn output(&self) -> JvpOutput {
        let w = self.width();
        let mut results: Vec<RuntimeValue> = self.native.returns()[..self.primal_results]
            .iter()
            .map(|t| match t {
                Type::I64 => RuntimeValue::I64(0),
                Type::Bool => RuntimeValue::Bool(false),
                Type::F64x(l) => RuntimeValue::Vector(vec![0.0; *l as usize]),
                _ => RuntimeValue::F64(0.0),
            })
            .collect();
        results.extend(
            (0..self.float_results)
                .map(|_| if w == 1 { RuntimeValue::F64(0.0) } else { RuntimeValue::Vector(vec![0.0; w]) }),
        );
        JvpOutput { results, primal_results: self.primal_results }
    }

    /// One sweep: the primal results and W directional derivatives of every `f64` result, into
    /// `out` (see the type docs for the tangent layout). No allocation when `out` came from
    /// [`ForwardFn::output`].
    pub fn jvp_into(&self, args: &mut [Arg<'_>], tangents: &[&[f64]], out: &mut JvpOutput) -> Result<(), Error> {
        let w = self.width();
        let active: SmallVec<[usize; 8]> = (0..self.params.len()).filter(|&i| self.derived.wrt[i]).collect();
        if tangents.len() != active.len() {
            return Err(Error::Shape {
                what: "tangents (one per differentiated parameter)".into(),
                expected: active.len(),
                got: tangents.len(),
            });
        }
        let mut all: SmallVec<[Arg<'_>; 16]> = SmallVec::new();
        for a in args.iter_mut() {
            all.push(match a {
                Arg::F64(x) => Arg::F64(*x),
                Arg::I64(x) => Arg::I64(*x),
                Arg::Bool(x) => Arg::Bool(*x),
                Arg::Vector(v) => Arg::Vector(v),
                Arg::Slice(v) => Arg::Slice(v),
                Arg::SliceMut(v) => Arg::SliceMut(v),
            });
        }
        for (&param, &t) in active.iter().zip(tangents) {
            let elements = match all.get(param) {
                Some(Arg::Slice(v)) => v.len(),
                Some(Arg::SliceMut(v)) => v.len(),
                _ => 1,
            };
            if t.len() != elements * w {
                return Err(Error::Shape {
                    what: format!("tangent of parameter {param} ({} lanes per element)", w),
                    expected: elements * w,
                    got: t.len(),
                });
            }
            all.push(match (self.params[param], w) {
                (Type::F64, 1) => Arg::F64(t[0]),
                (Type::F64, _) => Arg::Vector(t),
                _ => Arg::Slice(t),
            });
        }
        self.native.call_into(&mut all, &mut out.results)?;
        Ok(())
    }

    /// One sweep, allocating its output: `(primal results, tangents)` with W lanes per `f64`
    /// result, result-major.
    pub fn jvp(&self, args: &mut [Arg<'_>], tangents: &[&[f64]]) -> Result<(Vec<RuntimeValue>, Vec<f64>), Error> {
        let mut out = self.output();
        self.jvp_into(args, tangents, &mut out)?;
        let tangents = (0..self.float_results).flat_map(|k| out.tangent(k).to_vec()).collect();
        Ok((out.values().to_vec(), tangents))
    }

    /// The Jacobian of the `f64` results with respect to every differentiated scalar (each `f64`
    /// parameter and each element of each differentiated slice, in parameter order), built from
    /// `ceil(inputs / W)` batched sweeps with unit seeds. Row-major: `rows = f64 results`.
    pub fn jacobian(&self, args: &mut [Arg<'_>]) -> Result<Jacobian, Error> {
        let w = self.width();
        let sizes: Vec<usize> = (0..self.params.len())
            .filter(|&i| self.derived.wrt[i])
            .map(|i| match args.get(i) {
                Some(Arg::Slice(v)) => v.len(),
                Some(Arg::SliceMut(v)) => v.len(),
                _ => 1,
            })
            .collect();
        let cols: usize = sizes.iter().sum();
        let rows = self.float_results;
        let mut data = vec![0.0; rows * cols];
        let mut seeds: Vec<Vec<f64>> = sizes.iter().map(|&n| vec![0.0; n * w]).collect();
        let mut out = self.output();
        for start in (0..cols).step_by(w) {
            // Lane `l` of this sweep seeds input column `start + l`.
            for s in seeds.iter_mut() {
                s.fill(0.0);
            }
            for lane in 0..w.min(cols - start) {
                let (mut param, mut col) = (0, start + lane);
                while col >= sizes[param] {
                    col -= sizes[param];
                    param += 1;
                }
                seeds[param][col * w + lane] = 1.0;
            }
            let views: Vec<&[f64]> = seeds.iter().map(Vec::as_slice).collect();
            self.jvp_into(args, &views, &mut out)?;
            for row in 0..rows {
                for (lane, &v) in out.tangent(row).iter().enumerate().take(w.min(cols - start)) {
                    data[row * cols + start + lane] = v;
                }
            }
        }
        Ok(Jacobian { rows, cols, data })
    }
}

/// `options` plus a [`JitOptions::shadow_slice`] declaration for every tangent slice of the
/// derived function `derived.name`: its parameters are the original ones, then one tangent per
/// differentiated parameter in order, and the tangent of a slice holds W lanes per element. The
/// compiled function then checks each tangent's length once on entry and skips the bounds check
/// of a tangent access at an index its primal access already checked.
///
/// ```
/// use jitdiff::{ad::derive_forward, ir::{parse_module, ExternRegistry}, jit::{compile, JitOptions}};
/// use jitdiff::with_tangent_shadows;
/// let m = parse_module("func @f(x: slice, i: i64) -> f64 {\nentry:\n    y = load x, i\n    ret y\n}").unwrap();
/// let derived = derive_forward(&m, "f", &[true, false], 4).unwrap();
/// let options = with_tangent_shadows(&derived, &JitOptions::new());
/// assert_eq!(options.shadow_slices()[0].lanes, 4);
/// let compiled = compile(&derived.module, &ExternRegistry::new(), &options).unwrap();
/// assert_eq!(compiled.function(&derived.name).unwrap().bounds_check_stats().elided, 1);
/// ```
pub fn with_tangent_shadows(derived: &ForwardDerivative, options: &JitOptions) -> JitOptions {
    let mut options = options.clone();
    let Some(function) = derived.module.func_by_name(&derived.name) else { return options };
    let params = function.param_types();
    let originals = derived.wrt.len();
    let active = (0..originals).filter(|&p| derived.wrt[p]);
    for (k, p) in active.enumerate() {
        if params.get(p).is_some_and(|t| t.is_slice()) && params.get(originals + k).is_some_and(|t| t.is_slice()) {
            options = options.shadow_slice(&derived.name, originals + k, p, derived.width);
        }
    }
    options
}

/// A dense Jacobian, row-major.
#[derive(Clone, Debug, PartialEq)]
pub struct Jacobian {
    /// Number of outputs.
    pub rows: usize,
    /// Number of differentiated input scalars.
    pub cols: usize,
    /// `rows * cols` entries; entry (r, c) at `r * cols + c`.
    pub data: Vec<f64>,
}

impl Jacobian {
    /// Entry (row, col).
    pub fn get(&self, row: usize, col: usize) -> f64 {
        self.data[row * self.cols + col]
    }
}
