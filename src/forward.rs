//! Forward mode, compiled: [`ForwardFn`] gives JVPs, batched JVPs (W directions per sweep, W
//! lanes in SIMD registers) and Jacobians as safe native calls.

use crate::ad::{ForwardDerivative, derive_forward_with_rules};
use crate::error::Error;
use crate::gradient::with_rule_externs;
use jitdiff_ir::passes::retain_reachable;
use jitdiff_ir::{ExternRegistry, Module, RuntimeValue, Type};
use jitdiff_jit::{Arg, BoundsCheckStats, CompiledFn, CompiledModule, JitOptions, compile};
use jitdiff_rules::RuleSet;
use smallvec::SmallVec;

/// A JIT-compiled forward-mode derivative of one function.
///
/// Tangents are passed per differentiated parameter, in parameter order: a buffer of `W` values
/// for an `f64` parameter, and of `W * len` values for a slice parameter of length `len`, the `W`
/// lanes of element `i` at `W*i .. W*i+W`. Each `f64` result gets `W` tangent lanes.
///
/// The tangent of an `mslice` parameter is **in/out**, like the slice itself: on entry it holds
/// the tangent of the slice's contents, and the call leaves in it the tangent of the contents
/// the call leaves in the slice (every store writes its value's tangent there). That is why
/// tangents are `&mut [f64]`; the tangents of `f64` and `slice` parameters are only read.
///
/// ```
/// use jitdiff::{ForwardFn, jit::Arg, ir::parse_module};
/// let m = parse_module("func @f(x: f64, y: f64) -> f64 {\nentry:\n    p = fmul x, y\n    s = sin p\n    ret s\n}").unwrap();
/// let f = ForwardFn::new(&m, "f", &[true, true], 1).unwrap();
/// let mut out = f.output();
/// f.jvp_into(&mut [Arg::F64(2.0), Arg::F64(3.0)], &mut [&mut [1.0], &mut [0.0]], &mut out).unwrap();
/// // d/dx sin(xy) = y cos(xy)
/// assert!((out.tangent(0)[0] - 3.0 * 6.0f64.cos()).abs() < 1e-15);
///
/// // An mslice updated in place: s[0] = s[0]^2. Its tangent buffer is updated in place too.
/// let m = parse_module("func @sq(s: mslice) {\nentry:\n    i = iconst 0\n    x = load s, i\n    y = fmul x, x\n    store s, i, y\n    ret\n}").unwrap();
/// let f = ForwardFn::new(&m, "sq", &[true], 1).unwrap();
/// let (mut s, mut ds) = ([3.0], [0.5]);
/// f.jvp(&mut [Arg::SliceMut(&mut s)], &mut [&mut ds]).unwrap();
/// assert_eq!((s, ds), ([9.0], [3.0])); // d(x^2) = 2 x dx
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
    /// `out` (see the type docs for the tangent layout). The tangent of an `mslice` parameter is
    /// updated in place (see the type docs). No allocation when `out` came from
    /// [`ForwardFn::output`].
    pub fn jvp_into(
        &self,
        args: &mut [Arg<'_>],
        tangents: &mut [&mut [f64]],
        out: &mut JvpOutput,
    ) -> Result<(), Error> {
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
        for (&param, t) in active.iter().zip(tangents.iter_mut()) {
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
            // The derived function takes the tangent of a slice with the slice's own type: an
            // mslice's tangent is written wherever the mslice is.
            all.push(match (self.params[param], w) {
                (Type::F64, 1) => Arg::F64(t[0]),
                (Type::F64, _) => Arg::Vector(t),
                (Type::SliceMut, _) => Arg::SliceMut(t),
                _ => Arg::Slice(t),
            });
        }
        self.native.call_into(&mut all, &mut out.results)?;
        Ok(())
    }

    /// One sweep, allocating its output: `(primal results, tangents)` with W lanes per `f64`
    /// result, result-major. The tangent of an `mslice` parameter is updated in place.
    pub fn jvp(
        &self,
        args: &mut [Arg<'_>],
        tangents: &mut [&mut [f64]],
    ) -> Result<(Vec<RuntimeValue>, Vec<f64>), Error> {
        let mut out = self.output();
        self.jvp_into(args, tangents, &mut out)?;
        let tangents = (0..self.float_results).flat_map(|k| out.tangent(k).to_vec()).collect();
        Ok((out.values().to_vec(), tangents))
    }

    /// The Jacobian of the outputs — the `f64` results, then the final contents of each
    /// differentiated `mslice` parameter — with respect to every differentiated scalar (each
    /// `f64` parameter and each element of each differentiated slice, in parameter order), built
    /// from `ceil(inputs / W)` batched sweeps with unit seeds. Row-major: one row per output.
    ///
    /// Every sweep starts from the arguments as given: `mslice` contents are restored between
    /// sweeps, so they end as one call leaves them.
    ///
    /// ```
    /// use jitdiff::{ForwardFn, jit::Arg, ir::parse_module};
    /// // s[1] = s[0] * s[1]; returns s[0] + s[1] (the new s[1]).
    /// let m = parse_module("func @f(s: mslice) -> f64 {\nentry:\n    i = iconst 0\n    j = iconst 1\n    a = load s, i\n    b = load s, j\n    p = fmul a, b\n    store s, j, p\n    r = fadd a, p\n    ret r\n}").unwrap();
    /// let f = ForwardFn::new(&m, "f", &[true], 1).unwrap();
    /// let mut s = [2.0, 5.0];
    /// let j = f.jacobian(&mut [Arg::SliceMut(&mut s)]).unwrap();
    /// assert_eq!((j.rows, j.cols), (3, 2));
    /// assert_eq!(j.data, [6.0, 2.0, 1.0, 0.0, 5.0, 2.0]);
    /// assert_eq!(s, [2.0, 10.0]);
    /// ```
    pub fn jacobian(&self, args: &mut [Arg<'_>]) -> Result<Jacobian, Error> {
        let w = self.width();
        let differentiated: Vec<usize> = (0..self.params.len()).filter(|&i| self.derived.wrt[i]).collect();
        let sizes: Vec<usize> = differentiated
            .iter()
            .map(|&i| match args.get(i) {
                Some(Arg::Slice(v)) => v.len(),
                Some(Arg::SliceMut(v)) => v.len(),
                _ => 1,
            })
            .collect();
        // Differentiated mslices (by position among the tangents): their final contents are
        // outputs too.
        let outputs: Vec<usize> =
            (0..differentiated.len()).filter(|&k| self.params[differentiated[k]] == Type::SliceMut).collect();
        let cols: usize = sizes.iter().sum();
        let rows = self.float_results + outputs.iter().map(|&k| sizes[k]).sum::<usize>();
        let mut data = vec![0.0; rows * cols];
        let mut seeds: Vec<Vec<f64>> = sizes.iter().map(|&n| vec![0.0; n * w]).collect();
        let initial: Vec<Option<Vec<f64>>> = args
            .iter()
            .map(|a| match a {
                Arg::SliceMut(v) => Some(v.to_vec()),
                _ => None,
            })
            .collect();
        let mut out = self.output();
        for start in (0..cols).step_by(w) {
            if start > 0 {
                for (a, saved) in args.iter_mut().zip(&initial) {
                    if let (Arg::SliceMut(v), Some(saved)) = (a, saved) {
                        v.copy_from_slice(saved);
                    }
                }
            }
            // Lane `l` of this sweep seeds input column `start + l`.
            for s in seeds.iter_mut() {
                s.fill(0.0);
            }
            let lanes = w.min(cols - start);
            for lane in 0..lanes {
                let (mut param, mut col) = (0, start + lane);
                while col >= sizes[param] {
                    col -= sizes[param];
                    param += 1;
                }
                seeds[param][col * w + lane] = 1.0;
            }
            let mut views: Vec<&mut [f64]> = seeds.iter_mut().map(Vec::as_mut_slice).collect();
            self.jvp_into(args, &mut views, &mut out)?;
            for row in 0..self.float_results {
                for (lane, &v) in out.tangent(row).iter().enumerate().take(lanes) {
                    data[row * cols + start + lane] = v;
                }
            }
            let mut row = self.float_results;
            for &k in &outputs {
                for element in seeds[k].chunks(w) {
                    for (lane, &v) in element.iter().enumerate().take(lanes) {
                        data[row * cols + start + lane] = v;
                    }
                    row += 1;
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
    /// Number of outputs: `f64` results, then the elements of differentiated `mslice`s.
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
