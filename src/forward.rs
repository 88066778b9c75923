//! Forward mode, compiled: [`ForwardFn`] gives JVPs, batched JVPs (W directions per sweep, W
//! lanes in SIMD registers) and Jacobians as safe native calls.

use crate::ad::{ForwardDerivative, derive_forward_with_rules};
use crate::builder::{Build, Builder, HasWidth, Spec, sealed};
use crate::error::{Buffer, Error};
use crate::gradient::with_rule_externs;
use crate::inlining::inline_user_calls;
use crate::scratch::with_scratch;
use crate::user::UserFunction;
use jitdiff_ir::passes::retain_reachable;
use jitdiff_ir::{Module, RuntimeValue, Type};
use jitdiff_jit::{Arg, BoundsCheckStats, CompiledFn, CompiledModule, FrameResults, JitOptions, compile};
use smallvec::SmallVec;
use std::borrow::Cow;
use std::sync::Arc;

/// A JIT-compiled forward-mode derivative of one function.
///
/// Tangents are given per differentiated parameter, in parameter order: `W` values for an `f64`
/// parameter, `W * len` for a slice parameter of length `len`, the `W` lanes of element `i` at
/// `W*i .. W*i+W`. The outputs get W tangent lanes each: every `f64` result, and every element
/// of every `mslice` parameter (whose final contents are outputs; its initial contents are
/// inputs only if it is differentiated).
///
/// ```
/// use jitdiff::{ForwardFn, args, ir::parse_module};
/// let m = parse_module("func @f(x: f64, y: f64) -> f64 {\nentry:\n    p = fmul x, y\n    s = sin p\n    ret s\n}").unwrap();
/// let f = ForwardFn::builder(&m, "f").wrt(["x", "y"]).build().unwrap();
/// let mut out = f.output();
/// f.jvp_into(&mut args![2.0, 3.0], &[&[1.0], &[0.0]], &mut out).unwrap();
/// // d/dx sin(xy) = y cos(xy)
/// assert!((out.tangent(0)[0] - 3.0 * 6.0f64.cos()).abs() < 1e-15);
///
/// // An mslice updated in place: s[0] = s[0]^2. Its final contents are an output.
/// let m = parse_module("func @sq(s: mslice) {\nentry:\n    i = iconst 0\n    x = load s, i\n    y = fmul x, x\n    store s, i, y\n    ret\n}").unwrap();
/// let f = ForwardFn::builder(&m, "sq").wrt(["s"]).build().unwrap();
/// let mut s = [3.0];
/// let mut out = f.output();
/// f.jvp_into(&mut args![&mut s], &[&[0.5]], &mut out).unwrap();
/// assert_eq!((s, out.slice_tangent(0)), ([9.0], &[3.0][..])); // d(x^2) = 2 x dx
/// ```
pub struct ForwardFn {
    user: UserFunction,
    derived: Arc<ForwardDerivative>,
    _compiled: CompiledModule,
    pub(crate) native: CompiledFn,
    width: usize,
}

impl Clone for ForwardFn {
    fn clone(&self) -> ForwardFn {
        ForwardFn {
            user: self.user.clone(),
            derived: self.derived.clone(),
            _compiled: self._compiled.clone(),
            native: self.native.clone(),
            width: self.width,
        }
    }
}

/// Reusable storage for the results of [`ForwardFn::jvp_into`]: calling again with the same
/// output (and arguments of the same sizes) allocates nothing.
#[derive(Clone, Debug)]
pub struct JvpOutput {
    results: Vec<RuntimeValue>,
    primal_results: usize,
    /// Per `mslice` parameter: its position and its W-lane tangent.
    slices: Vec<(usize, Vec<f64>)>,
}

impl JvpOutput {
    /// The primal results.
    pub fn values(&self) -> &[RuntimeValue] {
        &self.results[..self.primal_results]
    }
    /// The W tangent lanes of the `k`-th `f64` result.
    pub fn tangent(&self, k: usize) -> &[f64] {
        match self.results.get(self.primal_results + k) {
            Some(RuntimeValue::F64(x)) => std::slice::from_ref(x),
            Some(RuntimeValue::Vector(v)) => v,
            _ => &[],
        }
    }
    /// The tangent of the final contents of the `k`-th `mslice` parameter (W lanes per element).
    pub fn slice_tangent(&self, k: usize) -> &[f64] {
        self.slices.get(k).map_or(&[], |(_, t)| t.as_slice())
    }
}

impl sealed::Sealed for ForwardFn {}
impl HasWidth for ForwardFn {}
impl Build for ForwardFn {
    #[allow(private_interfaces)]
    fn build_from(spec: Spec) -> Result<ForwardFn, Error> {
        let Spec { user, rules, options, width, .. } = spec;
        let width = width.unwrap_or(1);
        let derived = derive_forward_with_rules(&user.module, &user.name, user.derivation_wrt(), width, &rules)?;
        let externs = with_rule_externs(&user.externs, &rules);
        let mut needed = retain_reachable(&derived.module, &[&derived.name]);
        if let Cow::Owned(inlined) = inline_user_calls(&needed, &derived.name) {
            needed = inlined;
        }
        let compiled = compile(&needed, &externs, &with_tangent_shadows(&derived, &options))
            .map_err(|e| Error::compile(&user.name, e))?;
        let native = compiled.function(&derived.name).map_err(|e| Error::compile(&user.name, e))?;
        Ok(ForwardFn { user, derived: Arc::new(derived), _compiled: compiled, native, width: width as usize })
    }
}

impl ForwardFn {
    /// Start building the forward mode of `@name` (see [`Builder`]; `.width(W)` sets the lanes).
    pub fn builder<'m>(module: &'m Module, name: &str) -> Builder<'m, ForwardFn> {
        Builder::new(module, name)
    }

    /// Bounds checks in the derived function's native code: how many remain, and how many the
    /// tangent-slice declarations of `with_tangent_shadows` made redundant.
    pub fn bounds_check_stats(&self) -> BoundsCheckStats {
        self.native.bounds_check_stats()
    }

    /// The function's name.
    pub fn name(&self) -> &str {
        &self.user.name
    }

    /// The tangent width W.
    pub fn width(&self) -> usize {
        self.width
    }
    /// Which parameters are differentiated.
    pub fn wrt(&self) -> &[bool] {
        &self.user.wrt
    }
    /// The derived IR (the original functions and the derived ones).
    pub fn derivative(&self) -> &ForwardDerivative {
        &self.derived
    }
    /// Number of inputs (differentiated scalars) for these arguments.
    pub fn inputs(&self, args: &[Arg<'_>]) -> usize {
        self.user.inputs(args)
    }
    /// Number of outputs for these arguments.
    pub fn outputs(&self, args: &[Arg<'_>]) -> usize {
        self.user.outputs(args)
    }

    /// A result buffer for this function.
    pub fn output(&self) -> JvpOutput {
        let results = self.native.returns().iter().map(|&t| crate::scratch::zero_of(t)).collect();
        let slices = self.user.mslices().map(|p| (p, vec![])).collect();
        JvpOutput { results, primal_results: self.user.returns.len(), slices }
    }

    /// One sweep: the primal results and W directional derivatives of every output, into `out`
    /// (see the type docs for the layouts). `mslice` arguments end as one call leaves them.
    pub fn jvp_into(&self, args: &mut [Arg<'_>], tangents: &[&[f64]], out: &mut JvpOutput) -> Result<(), Error> {
        self.user.check_args(args)?;
        self.check_tangents(args, tangents)?;
        // `out` may come from another handle (or a thread's scratch): reshape unless it fits.
        let slices_fit = out.slices.len() == self.user.mslices().count()
            && out.slices.iter().map(|(p, _)| *p).eq(self.user.mslices());
        let results_fit = out.results.len() == self.native.returns().len()
            && out.results.iter().zip(self.native.returns()).all(|(r, &t)| crate::scratch::fits(r, t));
        if !slices_fit || !results_fit {
            *out = self.output();
        }
        if out.slices.is_empty()
            && let Some(done) = self.jvp_direct(args, tangents, out)
        {
            return done;
        }
        let (w, sizes) = (self.width, self.user.scalar_sizes(args));
        // The tangents of the mslices live in `out`: the differentiated ones start as given,
        // the others at zero; all end as the tangents of the final contents.
        let mut given = tangents.iter();
        let mut given_for: SmallVec<[Option<&[f64]>; 8]> = smallvec::smallvec![None; self.user.params.len()];
        for (p, &on) in self.user.wrt.iter().enumerate() {
            if on {
                given_for[p] = given.next().copied();
            }
        }
        for (p, t) in out.slices.iter_mut() {
            t.clear();
            match given_for[*p] {
                Some(g) => t.extend_from_slice(g),
                None => t.resize(w * sizes[*p], 0.0),
            }
        }
        let derivation = self.user.derivation_wrt();
        let mut all: SmallVec<[Arg<'_>; 32]> = args.iter_mut().map(Arg::reborrow).collect();
        let mut slice_tangents = out.slices.iter_mut();
        for (p, &on) in derivation.iter().enumerate() {
            if !on {
                continue;
            }
            all.push(match (self.user.params[p], given_for[p]) {
                (Type::SliceMut, _) => Arg::SliceMut(&mut slice_tangents.next().expect("one per mslice").1),
                (Type::F64, Some(t)) if w == 1 => Arg::F64(t[0]),
                (Type::F64, Some(t)) => Arg::Vector(t),
                (_, Some(t)) => Arg::Slice(t),
                (_, None) => unreachable!("only mslices are differentiated without being given"),
            });
        }
        let called = self.native.call_into(&mut all, &mut out.results);
        drop(all);
        called.map_err(|e| self.user.call_error(args, e))
    }

    /// [`jvp_into`](Self::jvp_into) of a function without `mslice` parameters as one direct
    /// native call ([`CompiledFn::call_direct`](jitdiff_jit::CompiledFn::call_direct): arguments
    /// and tangents in registers, no argument list to build, results read from slots into the
    /// values `out` already holds); `None`, before any native code runs, where it does not apply
    /// (a vector tangent, too many parts). `args` and `tangents` are checked.
    fn jvp_direct(&self, args: &mut [Arg<'_>], tangents: &[&[f64]], out: &mut JvpOutput) -> Option<Result<(), Error>> {
        // More arguments than this never fit a direct call's registers (and would spill `all`
        // to the heap).
        if args.len() + tangents.len() > 8 || !self.native.calls_direct() {
            return None;
        }
        let mut all: SmallVec<[Arg<'_>; 8]> = SmallVec::new();
        for a in args.iter_mut() {
            all.push(a.reborrow());
        }
        let mut given = tangents.iter();
        for (p, &on) in self.user.wrt.iter().enumerate() {
            if on {
                let t = given.next()?;
                all.push(match self.user.params[p] {
                    Type::F64 if self.width == 1 => Arg::F64(*t.first()?),
                    Type::F64 => return None,
                    _ => Arg::Slice(t),
                });
            }
        }
        let mut slots = FrameResults::new();
        let status = self.native.call_direct(&mut all, &mut [], &mut slots)?;
        drop(all);
        if status != 0 {
            return Some(Err(self.user.call_error(args, self.native.status_error(status, &slots))));
        }
        for (k, (result, &ty)) in out.results.iter_mut().zip(self.native.returns()).enumerate() {
            let at = self.native.result_slot(k);
            match (result, ty) {
                (RuntimeValue::Vector(lanes), Type::F64x(_)) => {
                    lanes.iter_mut().enumerate().for_each(|(j, x)| *x = slots.f64(at + j));
                }
                (result, ty) => *result = slots.value(ty, at),
            }
        }
        Some(Ok(()))
    }

    /// One sweep, allocating its output: `(primal results, output tangents)`, W lanes per output
    /// (output-major: the lanes of result 0, of result 1, ..., then of each `mslice` element).
    pub fn jvp(&self, args: &mut [Arg<'_>], tangents: &[&[f64]]) -> Result<(Vec<RuntimeValue>, Vec<f64>), Error> {
        let mut out = self.output();
        self.jvp_into(args, tangents, &mut out)?;
        let mut flat: Vec<f64> = (0..self.user.float_results()).flat_map(|k| out.tangent(k).to_vec()).collect();
        for (_, t) in &out.slices {
            flat.extend_from_slice(t);
        }
        Ok((out.values().to_vec(), flat))
    }

    /// The Jacobian of the outputs with respect to the inputs, from `ceil(inputs / W)` batched
    /// sweeps with unit seeds. Row-major: one row per output. Every sweep starts from the
    /// arguments as given: `mslice` contents are restored between sweeps, so they end as one
    /// call leaves them.
    ///
    /// ```
    /// use jitdiff::{ForwardFn, args, ir::parse_module};
    /// // s[1] = s[0] * s[1]; returns s[0] + s[1] (the new s[1]).
    /// let m = parse_module("func @f(s: mslice) -> f64 {\nentry:\n    i = iconst 0\n    j = iconst 1\n    a = load s, i\n    b = load s, j\n    p = fmul a, b\n    store s, j, p\n    r = fadd a, p\n    ret r\n}").unwrap();
    /// let f = ForwardFn::builder(&m, "f").wrt(["s"]).build().unwrap();
    /// let mut s = [2.0, 5.0];
    /// let j = f.jacobian(&mut args![&mut s]).unwrap();
    /// assert_eq!((j.rows, j.cols), (3, 2));
    /// assert_eq!(j.data, [6.0, 2.0, 1.0, 0.0, 5.0, 2.0]);
    /// assert_eq!(s, [2.0, 10.0]);
    /// ```
    pub fn jacobian(&self, args: &mut [Arg<'_>]) -> Result<Jacobian, Error> {
        let mut jacobian = Jacobian::default();
        self.jacobian_into(args, &mut jacobian)?;
        Ok(jacobian)
    }

    /// [`ForwardFn::jacobian`] into `jacobian` (resized to fit): with a result of the right size
    /// and a warm thread, no allocation.
    pub fn jacobian_into(&self, args: &mut [Arg<'_>], jacobian: &mut Jacobian) -> Result<(), Error> {
        self.user.check_args(args)?;
        let w = self.width;
        let sizes = self.user.input_sizes(args);
        let differentiated: SmallVec<[usize; 8]> = (0..sizes.len()).filter(|&p| self.user.wrt[p]).collect();
        let (rows, cols) = (self.user.outputs(args), sizes.iter().sum::<usize>());
        jacobian.rows = rows;
        jacobian.cols = cols;
        jacobian.data.clear();
        let len = rows.checked_mul(cols).filter(|&len| jacobian.data.try_reserve_exact(len).is_ok());
        let too_large = || Error::TooLarge { function: self.user.name.clone(), what: "Jacobian", rows, cols };
        jacobian.data.resize(len.ok_or_else(too_large)?, 0.0);
        let sweeps = cols.div_ceil(w);
        let mslices: SmallVec<[usize; 4]> = self.user.mslices().collect();
        with_scratch(|s| {
            // Buffers: one seed per differentiated parameter, then (when there is more than one
            // sweep) the initial contents of each mslice, restored before every later sweep.
            let saved = if sweeps > 1 { mslices.len() } else { 0 };
            let scalar_sizes = self.user.scalar_sizes(args);
            s.zeroed_buffers(
                differentiated.iter().map(|&p| sizes[p] * w).chain(mslices[..saved].iter().map(|&p| scalar_sizes[p])),
            );
            let (seeds, initial) = s.buffers.split_at_mut(differentiated.len());
            for (copy, &p) in initial.iter_mut().zip(&mslices) {
                copy.copy_from_slice(args[p].as_slice().unwrap_or(&[]));
            }
            let mut out = s.jvp_output.take().unwrap_or_else(|| self.output());
            let result = (|| {
                for start in (0..cols).step_by(w) {
                    if start > 0 {
                        for (copy, &p) in initial.iter().zip(&mslices) {
                            if let Arg::SliceMut(v) = &mut args[p] {
                                v.copy_from_slice(copy);
                            }
                        }
                    }
                    // Lane `l` of this sweep seeds input column `start + l`.
                    seeds.iter_mut().for_each(|seed| seed.fill(0.0));
                    let lanes = w.min(cols - start);
                    for lane in 0..lanes {
                        let (mut k, mut col) = (0, start + lane);
                        while col >= sizes[differentiated[k]] {
                            col -= sizes[differentiated[k]];
                            k += 1;
                        }
                        seeds[k][col * w + lane] = 1.0;
                    }
                    let views: SmallVec<[&[f64]; 8]> = seeds.iter().map(Vec::as_slice).collect();
                    self.jvp_into(args, &views, &mut out)?;
                    let data = &mut jacobian.data;
                    let mut row = 0;
                    for k in 0..self.user.float_results() {
                        for (lane, &v) in out.tangent(k).iter().enumerate().take(lanes) {
                            data[row * cols + start + lane] = v;
                        }
                        row += 1;
                    }
                    for (_, t) in &out.slices {
                        for element in t.chunks(w) {
                            data[row * cols + start..row * cols + start + lanes].copy_from_slice(&element[..lanes]);
                            row += 1;
                        }
                    }
                }
                Ok(())
            })();
            s.jvp_output = Some(out);
            result
        })
    }

    fn check_tangents(&self, args: &[Arg<'_>], tangents: &[&[f64]]) -> Result<(), Error> {
        let differentiated: SmallVec<[usize; 8]> = (0..self.user.params.len()).filter(|&p| self.user.wrt[p]).collect();
        if tangents.len() != differentiated.len() {
            let names: Vec<&str> = differentiated.iter().map(|&p| self.user.param_names[p].as_str()).collect();
            return Err(self.user.length_error(
                Buffer::Tangents,
                differentiated.len(),
                tangents.len(),
                format!("one per differentiated parameter: {}", names.join(", ")),
            ));
        }
        let sizes = self.user.scalar_sizes(args);
        for (&p, t) in differentiated.iter().zip(tangents) {
            let expected = sizes[p] * self.width;
            if t.len() != expected {
                let name = &self.user.param_names[p];
                let reason = match self.user.params[p] {
                    Type::F64 => format!("{} lane(s)", self.width),
                    _ => format!("{} lane(s) per element of `{name}`, which has {}", self.width, sizes[p]),
                };
                return Err(self.user.length_error(Buffer::Tangent(name.clone()), expected, t.len(), reason));
            }
        }
        Ok(())
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

/// A dense Jacobian, row-major: outputs × inputs.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Jacobian {
    /// Number of outputs: `f64` results, then the elements of every `mslice` parameter.
    pub rows: usize,
    /// Number of inputs (differentiated scalars).
    pub cols: usize,
    /// `rows * cols` entries; entry (r, c) at `r * cols + c`.
    pub data: Vec<f64>,
}

impl Jacobian {
    /// Entry (row, col).
    ///
    /// # Panics
    /// If `row >= rows` or `col >= cols`, as indexing a slice out of bounds does (a column
    /// past the last is not read from the next row).
    ///
    /// ```
    /// let j = jitdiff::Jacobian { rows: 2, cols: 2, data: vec![1.0, 2.0, 3.0, 4.0] };
    /// assert_eq!((j.get(1, 0), j.row(1)), (3.0, &[3.0, 4.0][..]));
    /// assert!(std::panic::catch_unwind(|| j.get(0, 2)).is_err());
    /// ```
    pub fn get(&self, row: usize, col: usize) -> f64 {
        assert!(col < self.cols, "column {col} of a Jacobian with {} columns", self.cols);
        self.data[row * self.cols + col]
    }
    /// Row `row` (the derivatives of one output).
    ///
    /// # Panics
    /// If `row >= rows`, as indexing a slice out of bounds does.
    pub fn row(&self, row: usize) -> &[f64] {
        &self.data[row * self.cols..(row + 1) * self.cols]
    }
}

impl std::fmt::Debug for ForwardFn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ForwardFn")
            .field("function", &self.user.name)
            .field("wrt", &self.user.wrt)
            .finish_non_exhaustive()
    }
}
