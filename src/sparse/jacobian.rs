//! Sparse Jacobians: forward sweeps over colour groups. Columns of one colour share no row, so
//! seeding a lane with the sum of their unit vectors gives each of their nonzeros directly;
//! W lanes per sweep make `ceil(colours / W)` sweeps. Or, by rows (row compression): rows of
//! one colour share no column, so a cotangent seeded with the sum of their unit vectors gives
//! their nonzeros — one forward run and `ceil(row colours / W)` W-lane pullback sweeps, for
//! Jacobians whose dense rows make column colours many.

use super::csr::CsrMatrix;
use super::plan::{Key, Keyed, PerWidth, PlanCache, SparsityInfo, detect, lanes_for};
use crate::builder::{Build, Builder, HasWidth, Spec, sealed};
use crate::error::Error;
use crate::forward::ForwardFn;
use crate::jacobian::{JacobianFn, JacobianMode};
use crate::scratch::with_scratch;
use crate::user::UserFunction;
use jitdiff_ad::coloring::column_coloring;
use jitdiff_ad::sparsity::Pattern;
use jitdiff_ir::Module;
use jitdiff_jit::{Arg, JitOptions};
use jitdiff_rules::RuleSet;
use smallvec::SmallVec;
use std::cell::RefCell;
use std::sync::{Arc, OnceLock};

thread_local! {
    /// The compressed rows of a row-compressed evaluation (colours × inputs), kept per thread so
    /// that calls after the first allocate nothing.
    static COMPRESSED_ROWS: RefCell<Vec<f64>> = const { RefCell::new(Vec::new()) };
}

/// A JIT-compiled sparse Jacobian: outputs (`f64` results, then every `mslice` element) ×
/// inputs (differentiated scalars), in compressed-row form. The pattern is detected and
/// coloured at the first call (and again when a call's shapes or integer arguments differ);
/// every call then takes `ceil(colours / W)` forward sweeps of W lanes, W the smallest power of
/// two that holds the colours, at most 8 (or `.width(W)`).
///
/// ```
/// use jitdiff::{SparseJacobianFn, args, ir::parse_module};
/// // out[i] = x[i] * x[i + 1]: a bidiagonal Jacobian, 2 colours, 1 sweep.
/// let m = parse_module("func @f(x: slice, out: mslice) {
/// entry:
///     n = len out
///     zero = iconst 0
///     one = iconst 1
///     jump head(zero)
/// head(i: i64):
///     more = icmp lt i, n
///     br more, body, done
/// body:
///     a = load x, i
///     j = iadd i, one
///     b = load x, j
///     p = fmul a, b
///     store out, i, p
///     jump head(j)
/// done:
///     ret
/// }").unwrap();
/// let f = SparseJacobianFn::builder(&m, "f").wrt(["x"]).build().unwrap();
/// let (x, mut out) = ([1.0, 2.0, 3.0, 4.0], [0.0; 3]);
/// let j = f.jacobian(&mut args![&x, &mut out]).unwrap();
/// assert_eq!((j.rows(), j.cols(), j.nnz()), (3, 4, 6));
/// assert_eq!(j.row(1), (&[1, 2][..], &[3.0, 2.0][..]));
/// assert_eq!(f.info(&args![&x, &mut out]).unwrap().colors, 2);
/// ```
pub struct SparseJacobianFn {
    user: UserFunction,
    rules: RuleSet,
    options: JitOptions,
    forward: PerWidth<ForwardFn>,
    width: usize,
    mode: JacobianMode,
    /// W-lane pullback sweeps, for row compression (compiled at the first plan that uses it).
    reverse: OnceLock<JacobianFn>,
    plan: PlanCache<JacobianPlan>,
}

/// The pattern, its coloring and what one evaluation seeds and reads.
#[derive(Debug)]
struct JacobianPlan {
    key: Key,
    pattern: Arc<Pattern>,
    info: SparsityInfo,
    /// Per sweep, the seeds: (differentiated parameter, element, lane).
    seeds: Vec<Vec<(u32, u32, u8)>>,
    /// The seeds as the sweeps pass them (per sweep, per differentiated parameter, W lanes per
    /// element), built once when they take at most [`MAX_DENSE_SEEDS`] entries; else empty
    /// and each call sets `seeds` in scratch buffers.
    dense_seeds: Vec<Vec<Vec<f64>>>,
    /// Per sweep, the reads, grouped by output tangent: (output tangent, [(nonzero, position in
    /// it)]). Output tangents are numbered as the outputs' kinds: the `f64` results' (W lanes
    /// each), then each mslice's (W lanes per element).
    reads: Vec<Vec<ReadGroup>>,
    /// Row compression: the cotangent seeds (colours × outputs, row-major) and, per nonzero,
    /// its position among the compressed rows (colours × inputs). Empty for columns.
    row_seeds: Vec<f64>,
    row_reads: Vec<u32>,
}

/// The nonzeros one sweep reads from one output tangent: (output tangent, [(nonzero, position
/// in it)]).
type ReadGroup = (u32, Vec<(u32, u32)>);

impl Keyed for JacobianPlan {
    fn key(&self) -> &Key {
        &self.key
    }
}

impl sealed::Sealed for SparseJacobianFn {}
impl HasWidth for SparseJacobianFn {}
impl Build for SparseJacobianFn {
    #[allow(private_interfaces)]
    fn build_from(spec: Spec) -> Result<SparseJacobianFn, Error> {
        let width = spec.width.unwrap_or(8);
        let (user, rules, options) = (spec.user.clone(), spec.rules.clone(), spec.options.clone());
        // The widest sweep is compiled now (so that build() reports what cannot be derived);
        // a plan with fewer colours compiles its narrower width at its first call.
        let forward = ForwardFn::build_from(Spec { width: Some(width), ..spec })?;
        let width = width as usize;
        let forward = PerWidth::with(width, forward);
        Ok(SparseJacobianFn {
            user,
            rules,
            options,
            forward,
            width,
            mode: JacobianMode::Auto,
            reverse: OnceLock::new(),
            plan: PlanCache::default(),
        })
    }
}

impl SparseJacobianFn {
    /// Start building the sparse Jacobian of `@name` (see [`Builder`]; `.width(W)` sets the
    /// lanes per sweep, 8 by default).
    pub fn builder<'m>(module: &'m Module, name: &str) -> Builder<'m, SparseJacobianFn> {
        Builder::new(module, name)
    }

    /// The same Jacobian compressed by columns ([`JacobianMode::Forward`]), by rows
    /// ([`JacobianMode::Reverse`]), or (`Auto`, the default) by whichever costs fewer sweeps: a
    /// pullback sweep counted as two forward ones, plus the forward run. `Auto` colours the rows
    /// only when the columns need more than three sweeps.
    ///
    /// ```
    /// use jitdiff::{JacobianMode, SparseJacobianFn, args, ir::parse_module};
    /// // out[0] = sum(x), out[i + 1] = x[i]^2: a dense first row, so every two columns share a
    /// // row (n colours), while rows need 2.
    /// let m = parse_module("func @f(x: slice, out: mslice) {
    /// entry:
    ///     n = len x
    ///     zero = iconst 0
    ///     one = iconst 1
    ///     acc0 = fconst 0.0
    ///     jump head(zero, acc0)
    /// head(i: i64, acc: f64):
    ///     more = icmp lt i, n
    ///     br more, body, done(acc)
    /// body:
    ///     a = load x, i
    ///     sq = fmul a, a
    ///     j = iadd i, one
    ///     store out, j, sq
    ///     acc2 = fadd acc, a
    ///     jump head(j, acc2)
    /// done(sum: f64):
    ///     store out, zero, sum
    ///     ret
    /// }").unwrap();
    /// let f = SparseJacobianFn::builder(&m, "f").wrt(["x"]).build().unwrap();
    /// let (x, mut out) = ((1..=40).map(f64::from).collect::<Vec<_>>(), vec![0.0; 41]);
    /// let info = f.info(&args![&x, &mut out]).unwrap();
    /// assert_eq!((info.mode, info.colors, info.sweeps), (JacobianMode::Reverse, 2, 1));
    /// let j = f.jacobian(&mut args![&x, &mut out]).unwrap();
    /// assert_eq!((j.nnz(), j.get(0, 39), j.get(40, 39)), (80, 1.0, 80.0));
    /// let by_columns = f.with_mode(JacobianMode::Forward);
    /// assert_eq!(by_columns.info(&args![&x, &mut out]).unwrap().colors, 40);
    /// assert_eq!(by_columns.jacobian(&mut args![&x, &mut out]).unwrap(), j);
    /// ```
    pub fn with_mode(mut self, mode: JacobianMode) -> SparseJacobianFn {
        if mode != self.mode {
            // Plans chose their compression by the old mode.
            self.plan = PlanCache::default();
        }
        self.mode = mode;
        self
    }

    /// The most lanes (colours) per sweep; a plan with fewer colours sweeps with the smallest
    /// power of two that holds them ([`SparsityInfo::lanes`]).
    pub fn width(&self) -> usize {
        self.width
    }

    /// Which parameters are differentiated.
    pub fn wrt(&self) -> &[bool] {
        &self.user.wrt
    }

    /// The pattern, colours and sweeps for calls like this one (detected and coloured now if
    /// no earlier call had the same shapes).
    pub fn info(&self, args: &[Arg<'_>]) -> Result<SparsityInfo, Error> {
        self.user.check_args(args)?;
        Ok(self.plan(args)?.info)
    }

    /// The Jacobian at `args`. `mslice` arguments end as one call of the function leaves them.
    pub fn jacobian(&self, args: &mut [Arg<'_>]) -> Result<CsrMatrix, Error> {
        let mut out = CsrMatrix::default();
        self.jacobian_into(args, &mut out)?;
        Ok(out)
    }

    /// [`SparseJacobianFn::jacobian`] into `out`, whose storage is reused: after the first call
    /// (on this thread, with these shapes) a call allocates nothing.
    pub fn jacobian_into(&self, args: &mut [Arg<'_>], out: &mut CsrMatrix) -> Result<(), Error> {
        self.user.check_args(args)?;
        let plan = self.plan(args)?;
        out.reshape(&plan.pattern);
        if plan.info.mode == JacobianMode::Reverse {
            let reverse = self.reverse()?;
            return COMPRESSED_ROWS.with(|rows| {
                let mut rows = rows.take();
                rows.clear();
                rows.resize(plan.info.colors * plan.pattern.cols, 0.0);
                let outcome = reverse.vjps(args, &plan.row_seeds, &mut rows);
                if outcome.is_ok() {
                    for (value, &at) in out.values_mut().iter_mut().zip(&plan.row_reads) {
                        *value = rows[at as usize];
                    }
                }
                COMPRESSED_ROWS.with(|slot| *slot.borrow_mut() = rows);
                outcome
            });
        }
        let w = plan.info.lanes;
        let forward = self.compiled(w)?;
        let input_sizes = self.user.input_sizes(args);
        let differentiated: SmallVec<[usize; 8]> = (0..input_sizes.len()).filter(|&p| self.user.wrt[p]).collect();
        let mslices: SmallVec<[usize; 4]> = self.user.mslices().collect();
        let scalar_sizes = self.user.scalar_sizes(args);
        let float_results = self.user.float_results();
        let sweeps = plan.seeds.len();
        let built = !plan.dense_seeds.is_empty();
        with_scratch(|s| {
            let saved = if sweeps > 1 { mslices.len() } else { 0 };
            let scratch_seeds = if built { 0 } else { differentiated.len() };
            s.zeroed_buffers(
                differentiated[..scratch_seeds]
                    .iter()
                    .map(|&p| input_sizes[p] * w)
                    .chain(mslices[..saved].iter().map(|&p| scalar_sizes[p])),
            );
            let (seeds, initial) = s.buffers.split_at_mut(scratch_seeds);
            for (copy, &p) in initial.iter_mut().zip(&mslices) {
                copy.copy_from_slice(args[p].as_slice().unwrap_or(&[]));
            }
            let mut jvp = s.jvp_output.take().unwrap_or_else(|| forward.output());
            let result = (|| {
                for (sweep, (sweep_seeds, sweep_reads)) in plan.seeds.iter().zip(&plan.reads).enumerate() {
                    if sweep > 0 {
                        for (copy, &p) in initial.iter().zip(&mslices) {
                            if let Arg::SliceMut(v) = &mut args[p] {
                                v.copy_from_slice(copy);
                            }
                        }
                        // The seeds of the previous sweep: clear only what was set.
                        for &(k, e, lane) in plan.seeds[sweep - 1].iter().filter(|_| !built) {
                            seeds[k as usize][e as usize * w + lane as usize] = 0.0;
                        }
                    }
                    let views: SmallVec<[&[f64]; 8]> = if built {
                        plan.dense_seeds[sweep].iter().map(Vec::as_slice).collect()
                    } else {
                        for &(k, e, lane) in sweep_seeds {
                            seeds[k as usize][e as usize * w + lane as usize] = 1.0;
                        }
                        seeds.iter().map(Vec::as_slice).collect()
                    };
                    forward.jvp_into(args, &views, &mut jvp)?;
                    let tangents: SmallVec<[&[f64]; 8]> = (0..float_results)
                        .map(|k| jvp.tangent(k))
                        .chain((0..mslices.len()).map(|k| jvp.slice_tangent(k)))
                        .collect();
                    let values = out.values_mut();
                    for (source, reads) in sweep_reads {
                        let tangent = tangents[*source as usize];
                        for &(nz, at) in reads {
                            values[nz as usize] = tangent[at as usize];
                        }
                    }
                }
                Ok(())
            })();
            s.jvp_output = Some(jvp);
            result
        })
    }

    /// The derivative compiled for `lanes` lanes (compiled now if no plan needed it before).
    fn compiled(&self, lanes: usize) -> Result<&ForwardFn, Error> {
        self.forward
            .get(lanes, || ForwardFn::build_from(Spec::inner(&self.user, &self.rules, &self.options, lanes as u8)))
    }

    /// The dense Jacobian handle whose W-lane pullback sweeps row compression uses.
    fn reverse(&self) -> Result<&JacobianFn, Error> {
        if let Some(r) = self.reverse.get() {
            return Ok(r);
        }
        let spec = Spec::inner(&self.user, &self.rules, &self.options, self.width as u8);
        let built = JacobianFn::build_from(spec)?.with_mode(JacobianMode::Reverse);
        Ok(self.reverse.get_or_init(|| built))
    }

    /// Row compression for `pattern`, if the mode asks for it or (`Auto`) it costs fewer sweeps
    /// than the `column_colors`: the row coloring, the cotangent seeds and the reads.
    fn rows_plan(&self, pattern: &Pattern, column_colors: usize) -> Option<(usize, Vec<f64>, Vec<u32>)> {
        let w = self.width;
        let forward_sweeps = column_colors.div_ceil(w);
        // Even one pullback sweep costs the forward run and about two forward sweeps.
        if self.mode == JacobianMode::Forward || (self.mode == JacobianMode::Auto && forward_sweeps <= 3) {
            return None;
        }
        let rows = column_coloring(&pattern.transpose());
        if self.mode == JacobianMode::Auto && 1 + 2 * rows.count.div_ceil(w) >= forward_sweeps {
            return None;
        }
        let mut seeds = vec![0.0; rows.count * pattern.rows];
        for (row, &c) in rows.colors.iter().enumerate() {
            seeds[c * pattern.rows + row] = 1.0;
        }
        let mut reads = Vec::with_capacity(pattern.nnz());
        for (row, &c) in rows.colors.iter().enumerate() {
            reads.extend(pattern.row(row).iter().map(|&col| (c * pattern.cols + col) as u32));
        }
        Some((rows.count, seeds, reads))
    }

    fn plan(&self, args: &[Arg<'_>]) -> Result<Arc<JacobianPlan>, Error> {
        self.plan.get(&self.user, args, || {
            let (mut found, detect_time) = detect(&self.user, &self.rules, args, false)?;
            let start = std::time::Instant::now();
            let pattern = found.jacobian.take().ok_or_else(|| self.user.internal("no Jacobian pattern"))?;
            if pattern.nnz().max(self.width * pattern.rows) >= u32::MAX as usize {
                return Err(Error::Setting(format!(
                    "@{}: a sparse Jacobian of {} nonzeros in {} rows is too large (at most 2^32 / W)",
                    self.user.name,
                    pattern.nnz(),
                    pattern.rows
                )));
            }
            let coloring = column_coloring(&pattern);
            if let Some((colors, row_seeds, row_reads)) = self.rows_plan(&pattern, coloring.count) {
                if colors.max(1).saturating_mul(pattern.rows.max(pattern.cols)) >= u32::MAX as usize {
                    return Err(Error::Setting(format!(
                        "@{}: a row-compressed sparse Jacobian of {colors} colours × {} columns is too large \
                         (at most 2^32 entries); use JacobianMode::Forward",
                        self.user.name, pattern.cols
                    )));
                }
                let compiling = std::time::Instant::now();
                self.reverse()?;
                let compile_time = compiling.elapsed();
                let lanes = lanes_for(colors, self.width);
                let info = SparsityInfo {
                    rows: pattern.rows,
                    cols: pattern.cols,
                    nnz: pattern.nnz(),
                    colors,
                    mode: JacobianMode::Reverse,
                    lanes,
                    sweeps: colors.div_ceil(self.width).max(1),
                    depends_on_data: found.depends_on_data,
                    detect_time,
                    color_time: start.elapsed() - compile_time,
                    compile_time,
                };
                let key = Key::of(&self.user, args, &found);
                let pattern = Arc::new(pattern);
                let (seeds, dense_seeds, reads) = (vec![], vec![], vec![]);
                return Ok(JacobianPlan { key, pattern, info, seeds, dense_seeds, reads, row_seeds, row_reads });
            }
            let w = lanes_for(coloring.count, self.width);
            // Compiled with the plan, so that the first call's set-up is all in `info`.
            let compiling = std::time::Instant::now();
            self.compiled(w)?;
            let compile_time = compiling.elapsed();
            let sweeps = coloring.count.div_ceil(w).max(1);
            // Input column -> (differentiated parameter, element).
            let sizes = self.user.input_sizes(args);
            let mut owner = Vec::with_capacity(pattern.cols);
            for (k, p) in (0..sizes.len()).filter(|&p| self.user.wrt[p]).enumerate() {
                owner.extend((0..sizes[p]).map(|e| (k as u32, e as u32)));
            }
            let mut seeds = vec![vec![]; sweeps];
            for (col, &c) in coloring.colors.iter().enumerate() {
                let (k, e) = owner[col];
                seeds[c / w].push((k, e, (c % w) as u8));
            }
            // Output row -> (output tangent, its first entry).
            let float_results = self.user.float_results();
            let scalar_sizes = self.user.scalar_sizes(args);
            let mut source = Vec::with_capacity(pattern.rows);
            source.extend((0..float_results).map(|k| (k as u32, 0u32)));
            for (k, p) in self.user.mslices().enumerate() {
                source.extend((0..scalar_sizes[p]).map(|e| ((float_results + k) as u32, (e * w) as u32)));
            }
            let mut reads: Vec<Vec<ReadGroup>> = vec![vec![]; sweeps];
            for (row, &(tangent, first)) in source.iter().enumerate().take(pattern.rows) {
                for nz in pattern.row_ptr[row]..pattern.row_ptr[row + 1] {
                    let c = coloring.colors[pattern.col_idx[nz]];
                    let groups = &mut reads[c / w];
                    if groups.last().is_none_or(|(t, _)| *t != tangent) {
                        groups.push((tangent, vec![]));
                    }
                    if let Some((_, group)) = groups.last_mut() {
                        group.push((nz as u32, first + (c % w) as u32));
                    }
                }
            }
            let seed_entries: usize = differentiated_sizes(&sizes, &self.user.wrt).sum::<usize>() * w * sweeps;
            let dense_seeds = if seed_entries <= MAX_DENSE_SEEDS {
                seeds
                    .iter()
                    .map(|sweep| {
                        let mut dense: Vec<Vec<f64>> =
                            differentiated_sizes(&sizes, &self.user.wrt).map(|len| vec![0.0; len * w]).collect();
                        for &(k, e, lane) in sweep {
                            dense[k as usize][e as usize * w + lane as usize] = 1.0;
                        }
                        dense
                    })
                    .collect()
            } else {
                vec![]
            };
            let info = SparsityInfo {
                rows: pattern.rows,
                cols: pattern.cols,
                nnz: pattern.nnz(),
                colors: coloring.count,
                mode: JacobianMode::Forward,
                lanes: w,
                sweeps,
                depends_on_data: found.depends_on_data,
                detect_time,
                color_time: start.elapsed() - compile_time,
                compile_time,
            };
            let key = Key::of(&self.user, args, &found);
            Ok(JacobianPlan {
                key,
                pattern: Arc::new(pattern),
                info,
                seeds,
                dense_seeds,
                reads,
                row_seeds: vec![],
                row_reads: vec![],
            })
        })
    }
}

/// The most seed entries a plan keeps built (32 MiB): beyond, each call sets them in scratch
/// buffers (which costs zeroing them and setting each seed).
const MAX_DENSE_SEEDS: usize = 1 << 22;

/// The sizes of the differentiated inputs, in order.
fn differentiated_sizes<'a>(sizes: &'a [usize], wrt: &'a [bool]) -> impl Iterator<Item = usize> + 'a {
    sizes.iter().zip(wrt).filter(|(_, on)| **on).map(|(&size, _)| size)
}

impl std::fmt::Debug for SparseJacobianFn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SparseJacobianFn")
            .field("function", &self.user.name)
            .field("wrt", &self.user.wrt)
            .field("width", &self.width)
            .finish_non_exhaustive()
    }
}
