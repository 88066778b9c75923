//! The program decoder: choice stream -> module structure (functions, signatures, regions,
//! branches, loops, calls) and entry arguments. Leaf statements are in `emit.rs`.

use super::{ArgSpec, ENTRY_NAME, GenConfig};
use crate::builder::{FunctionBuilder, ModuleBuilder, Var};
use crate::function::{ExternId, FuncId, Module, TableId};
use crate::types::Type;

/// Smooth mode keeps every float value below this magnitude (by `L*tanh(x/L)` squashing).
pub(super) const LIMIT: f64 = 100.0;
/// Smooth mode keeps values crossing an interface — parameters, call arguments, slice elements,
/// loop-carried values — below this magnitude (or the argument magnitude, if larger).
pub(super) const IFACE: f64 = 10.0;
/// At most this many instructions and blocks make up one leaf statement (checked in debug
/// builds). Costs are measured, not estimated: this bound only decides whether the next
/// statement still fits the budget.
pub(super) const MAX_LEAF: u64 = 48;
/// Function streams are read in records of this many choices: a signature, each statement
/// (a construct's header), each construct's tail (its result values) and the final `ret` get
/// one record each, read as zeros past its end. Deleting a record deletes one statement and
/// keeps every other one as it was, which is what makes shrinking effective.
pub(crate) const RECORD: usize = 24;
/// At most this many instructions go into producing one returned, joined, carried or passed
/// value (a pick, squashing, an accumulation).
pub(super) const PER_VALUE: u64 = 20;

/// The data table of generated modules, in units of the interface magnitude: loads from it
/// stay within what loads from parameters give.
const TABLE: [f64; 5] = [0.5, -0.25, 1.0, 0.125, -0.75];

/// A float or vector value with a bound on its magnitude (meaningful in smooth mode only).
#[derive(Clone, Copy)]
pub(super) struct F<'a> {
    pub v: Var<'a>,
    pub bound: f64,
}

/// The values visible at the current point, by type. Regions (branch sides, loop bodies) save
/// a [`Mark`] and truncate back to it on exit, which keeps every use dominated by its definition.
#[derive(Default)]
pub(super) struct Env<'a> {
    pub floats: Vec<F<'a>>,
    pub vecs: Vec<F<'a>>,
    pub ints: Vec<Var<'a>>,
    pub bools: Vec<Var<'a>>,
    /// Slice parameters and local arrays (never scoped: both are visible everywhere).
    pub slices: Vec<Var<'a>>,
    /// `(slice, lanes, i)`: `i` is an in-bounds index of `slice` for loads of `lanes` lanes.
    pub valid: Vec<(Var<'a>, u8, Var<'a>)>,
}

pub(super) struct Mark([usize; 5]);

impl<'a> Env<'a> {
    pub fn push(&mut self, v: Var<'a>, bound: f64) {
        match v.ty() {
            Type::F64 => self.floats.push(F { v, bound }),
            Type::F64x(_) => self.vecs.push(F { v, bound }),
            Type::I64 => self.ints.push(v),
            Type::Bool => self.bools.push(v),
            Type::Slice | Type::SliceMut => self.slices.push(v),
        }
    }
    pub fn mark(&self) -> Mark {
        Mark([self.floats.len(), self.vecs.len(), self.ints.len(), self.bools.len(), self.valid.len()])
    }
    pub fn reset(&mut self, m: Mark) {
        let [a, b, c, d, e] = m.0;
        self.floats.truncate(a);
        self.vecs.truncate(b);
        self.ints.truncate(c);
        self.bools.truncate(d);
        self.valid.truncate(e);
    }
}

/// What callers need to know about a generated function.
#[derive(Clone)]
pub(super) struct FnInfo {
    pub id: FuncId,
    pub params: Vec<Type>,
    pub ret_bounds: Vec<f64>,
    pub cost: u64,
}

/// Decodes one case from choice streams: stream 0 gives the arguments, stream `k + 1` function `k`.
pub(crate) struct Generator<'c> {
    pub cfg: &'c GenConfig,
    streams: &'c [Vec<u32>],
    stream: usize,
    pos: usize,
    /// The end of the current record: choices at or past it read as 0.
    limit: usize,
    /// Per stream, per choice: was it read? (Unread choices can be zeroed without changing the
    /// case, which the shrinker uses.)
    pub touched: Vec<Vec<bool>>,
    pub funcs: Vec<FnInfo>,
    pub externs: Option<(ExternId, ExternId)>,
    /// The module's data table, declared when slices are allowed (see [`TABLE`]).
    pub table: Option<TableId>,
    /// Result types of the function being generated.
    pub returns: Vec<Type>,
    /// Per result of the function being generated: the largest bound of any returned value.
    pub ret_bounds: Vec<f64>,
    /// Instructions and terminators one call of the function being generated executes at most,
    /// for the code charged so far (each block's terminator is counted with its block).
    pub cost: u64,
    /// Instructions plus blocks of the function already charged to `cost`.
    charged: u64,
    /// Cost set aside for code that will be emitted later (results of open regions).
    pub reserved: u64,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    FloatBinary,
    FloatUnary,
    FloatConst,
    Powi,
    IntArith,
    IntConst,
    Compare,
    BoolOp,
    Select,
    Convert,
    Len,
    Load,
    Store,
    Vector,
    Call,
    Extern,
    Branch,
    Loop,
    Name,
    /// `if c { trap }` (full mode: a run-time error of its own).
    Trap,
}

impl<'c> Generator<'c> {
    pub fn new(cfg: &'c GenConfig, streams: &'c [Vec<u32>]) -> Generator<'c> {
        Generator {
            cfg,
            streams,
            stream: 0,
            pos: 0,
            limit: usize::MAX,
            touched: streams.iter().map(|s| vec![false; s.len()]).collect(),
            funcs: vec![],
            externs: None,
            table: None,
            returns: vec![],
            ret_bounds: vec![],
            cost: 0,
            charged: 0,
            reserved: 0,
        }
    }

    /// Read from stream `k`: the argument stream (0) unstructured, function streams by record.
    fn use_stream(&mut self, k: usize) {
        self.stream = k;
        self.pos = 0;
        self.limit = if k == 0 { usize::MAX } else { 0 };
    }

    /// Start reading the next record.
    pub(super) fn open_record(&mut self) {
        self.pos = self.limit;
        self.limit = self.pos + RECORD;
    }

    // ---- the choice stream; 0 (and an exhausted stream) always means the simplest option ----

    fn next(&mut self) -> u32 {
        if self.pos >= self.limit {
            return 0;
        }
        if let Some(t) = self.touched.get_mut(self.stream).and_then(|s| s.get_mut(self.pos)) {
            *t = true;
        }
        let c = self.streams.get(self.stream).and_then(|s| s.get(self.pos)).copied().unwrap_or(0);
        self.pos += 1;
        c
    }
    /// A number in `0..n` (0 when `n <= 1`).
    pub fn below(&mut self, n: usize) -> usize {
        if n <= 1 {
            return 0;
        }
        self.next() as usize % n
    }
    /// True with probability `percent`%; false for choice 0.
    pub fn chance(&mut self, percent: u32) -> bool {
        self.next() % 100 >= 100 - percent.min(100)
    }
    /// One of `items`, with the given weights; choice 0 gives the first.
    pub(super) fn weighted<T: Copy>(&mut self, items: &[(T, u32)]) -> T {
        let total: u32 = items.iter().map(|i| i.1).sum();
        let mut k = if total == 0 { 0 } else { self.next() % total };
        for &(item, w) in items {
            if k < w {
                return item;
            }
            k -= w;
        }
        items[0].0
    }
    /// The magnitude bound of values crossing an interface (smooth mode).
    pub fn iface(&self) -> f64 {
        IFACE.max(self.cfg.arg_magnitude)
    }
    /// Does code costing `extra` still fit the budget, after what is set aside?
    pub fn fits(&self, extra: u64) -> bool {
        self.cost.saturating_add(self.reserved).saturating_add(extra) <= self.cfg.max_cost
    }
    /// Charge everything emitted since the last charge as executing `mult` times per call;
    /// returns how many instructions and blocks that was.
    pub fn charge(&mut self, f: &FunctionBuilder, mult: u64) -> u64 {
        let now = (f.inst_count() + f.block_count()) as u64;
        let delta = now.saturating_sub(self.charged);
        self.charged = now;
        self.cost = self.cost.saturating_add(delta.saturating_mul(mult));
        delta
    }
    /// A vector width allowed by the configuration.
    pub fn width(&mut self) -> u8 {
        let widths: Vec<u8> = [2u8, 4, 8, 16].into_iter().filter(|&w| w <= self.cfg.max_vector_width.max(2)).collect();
        widths[self.below(widths.len())]
    }

    // ---- module and signatures ----

    pub fn case(&mut self) -> (Module, String, Vec<ArgSpec>) {
        let mut mb = ModuleBuilder::new();
        if self.cfg.allow_externs {
            let scale = mb.declare_extern("ext_scale", &[Type::F64], &[Type::F64]);
            let mix = mb.declare_extern("ext_mix", &[Type::F64, Type::F64], &[Type::F64]);
            self.externs = Some((scale, mix));
        }
        // One data table, the same in every case (no choice read), scaled to the interface
        // magnitude like the values loads give.
        if self.cfg.allow_slices {
            let scale = self.iface();
            let values: Vec<f64> = TABLE.iter().map(|v| v * scale).collect();
            self.table = Some(mb.table("tab", &values));
        }
        let nfuncs = self.streams.len().saturating_sub(1).clamp(1, self.cfg.max_functions.max(1));
        for k in 0..nfuncs {
            self.use_stream(k + 1);
            self.open_record();
            let entry = k + 1 == nfuncs;
            let name = if entry { ENTRY_NAME.to_string() } else { format!("f{k}") };
            let (params, returns) = self.signature(entry);
            let names: Vec<(&str, Type)> = params.iter().map(|&t| (param_name(t), t)).collect();
            let id = mb.declare_function(&name, &names, &returns);
            self.returns = returns.clone();
            self.ret_bounds = vec![0.0; returns.len()];
            self.cost = 0;
            self.charged = 0;
            self.reserved = 0;
            let defined = mb.define(id, |f| self.body(f, entry));
            if let Err(e) = defined {
                panic!("jitdiff_ir::arbitrary generated an invalid function (a generator bug): {e}");
            }
            let ret_bounds = std::mem::take(&mut self.ret_bounds);
            self.funcs.push(FnInfo { id, params, ret_bounds, cost: self.cost });
        }
        let mut module = match mb.finish() {
            Ok(m) => m,
            Err(e) => panic!("jitdiff_ir::arbitrary generated an invalid module (a generator bug): {e}"),
        };
        self.use_stream(0);
        // Sometimes the shape optimised code has: edges past empty blocks, chains merged — a
        // loop's header then exits straight into the next loop's header.
        if self.chance(25) {
            for function in &mut module.functions {
                crate::passes::thread_jumps(function);
                crate::passes::merge_blocks(function);
            }
        }
        let entry_params = self.funcs.last().map(|f| f.params.clone()).unwrap_or_default();
        let args = entry_params.iter().map(|&t| self.arg(t)).collect();
        (module, ENTRY_NAME.to_string(), args)
    }

    fn signature(&mut self, entry: bool) -> (Vec<Type>, Vec<Type>) {
        // The tables depend on the configuration only, so a function's choices mean the same
        // whether or not it is the entry (which matters when shrinking drops functions).
        let cfg = self.cfg;
        let mut kinds = vec![(Some(Type::F64), 6), (Some(Type::I64), 3), (Some(Type::Bool), 1)];
        if cfg.allow_slices {
            kinds.push((Some(Type::Slice), 3));
            if cfg.allow_stores {
                kinds.push((Some(Type::SliceMut), 2));
            }
        }
        if cfg.allow_vectors {
            kinds.push((None, 1));
        }
        let mut ret_kinds = vec![(Some(Type::F64), 6)];
        if !cfg.smooth_only {
            ret_kinds.extend([(Some(Type::I64), 2), (Some(Type::Bool), 1)]);
            if cfg.allow_vectors {
                ret_kinds.push((None, 1));
            }
        }
        // The entry takes and returns no vectors (arguments are plain values).
        let pick = |g: &mut Self, table: &[(Option<Type>, u32)]| match g.weighted(table) {
            Some(t) => t,
            None => {
                let w = g.width();
                if entry { Type::F64 } else { Type::F64x(w) }
            }
        };
        let nparams = self.below(cfg.max_params + 1);
        let params: Vec<Type> = (0..nparams).map(|_| pick(self, &kinds)).collect();
        let mut nret = self.below(cfg.max_returns + 1);
        if nret == 0 && !params.contains(&Type::SliceMut) {
            nret = 1;
        }
        let returns: Vec<Type> = (0..nret).map(|_| pick(self, &ret_kinds)).collect();
        (params, returns)
    }

    fn arg(&mut self, ty: Type) -> ArgSpec {
        match ty {
            Type::I64 => {
                if self.cfg.allow_runtime_errors && self.chance(5) {
                    ArgSpec::I64([i64::MIN, i64::MAX, -1, 1 << 40][self.below(4)])
                } else {
                    ArgSpec::I64(self.below(2 * self.cfg.max_trip.max(0) as usize + 4) as i64 - 2)
                }
            }
            Type::Bool => ArgSpec::Bool(self.below(2) == 1),
            Type::Slice | Type::SliceMut => {
                let len = self.below(self.cfg.max_slice_len + 1);
                let xs = (0..len).map(|_| self.float_arg()).collect();
                if ty == Type::Slice { ArgSpec::Slice(xs) } else { ArgSpec::SliceMut(xs) }
            }
            _ => ArgSpec::F64(self.float_arg()),
        }
    }

    fn float_arg(&mut self) -> f64 {
        if self.cfg.allow_runtime_errors && self.chance(5) {
            return [0.0, -0.0, 1e10, -1e-10, f64::MIN_POSITIVE][self.below(5)];
        }
        let k = self.below(2001) as f64 - 1000.0;
        // With kinks, off the grid of round numbers: `abs x` at exactly 0 or `floor x` at exactly 1
        // would be a kink hit on purpose rather than by chance.
        let offset = if self.cfg.smooth_only && self.cfg.allow_kinks { 0.000_123_456_789 } else { 0.0 };
        self.cfg.arg_magnitude * (k / 1000.0 + offset)
    }

    // ---- function bodies and regions ----

    fn body(&mut self, f: &FunctionBuilder, entry: bool) {
        let mut env = Env::default();
        // Entry arguments are at most `arg_magnitude`; callers squash arguments to `iface()`.
        let bound = if entry { self.cfg.arg_magnitude } else { self.iface() };
        for p in f.params() {
            env.push(p, bound);
        }
        // Sometimes a local array of a few elements, which the statements then use like an
        // `mslice` parameter (it starts as zeros).
        if self.cfg.allow_slices && self.cfg.allow_stores && self.chance(30) {
            let len = f.int(1 + self.below(5) as i64);
            env.push(f.alloc(len), 0.0);
        }
        // Sometimes the module's data table, read like a `slice` parameter.
        if let Some(table) = self.table
            && self.chance(25)
        {
            env.push(f.table(table), 0.0);
        }
        let ret_cost = self.ret_cost();
        self.reserved += ret_cost;
        self.region(f, &mut env, 0, 1);
        self.reserved -= ret_cost;
        self.open_record();
        if f.is_open() {
            self.emit_ret(f, &mut env, 1);
        }
    }

    /// The most a `ret` with its values costs.
    pub(super) fn ret_cost(&self) -> u64 {
        PER_VALUE * self.returns.len() as u64
    }

    /// `ret` with values of the function's result types, in a region run `mult` times.
    pub fn emit_ret<'a>(&mut self, f: &'a FunctionBuilder, env: &mut Env<'a>, mult: u64) {
        let returns = self.returns.clone();
        let vals: Vec<F<'a>> = returns.iter().map(|&t| self.result_value(f, env, t)).collect();
        for (b, v) in self.ret_bounds.iter_mut().zip(&vals) {
            *b = b.max(v.bound);
        }
        let vars: Vec<Var<'a>> = vals.iter().map(|v| v.v).collect();
        f.ret(&vars);
        self.charge(f, mult);
    }

    /// A straight-line run of statements (each possibly a nested construct).
    pub(super) fn region<'a>(&mut self, f: &'a FunctionBuilder, env: &mut Env<'a>, depth: usize, mult: u64) {
        // A function's top level gets twice the room of nested regions.
        let room = if depth == 0 { 2 * self.cfg.max_stmts } else { self.cfg.max_stmts };
        for _ in 0..room {
            if !f.is_open() || !self.fits(MAX_LEAF.saturating_mul(mult)) {
                break;
            }
            // Each statement is one record, opening with "go on?": choice 0 ends the region.
            self.open_record();
            if self.below(8) == 0 {
                break;
            }
            self.stmt(f, env, depth, mult);
        }
    }

    fn stmt<'a>(&mut self, f: &'a FunctionBuilder, env: &mut Env<'a>, depth: usize, mult: u64) {
        // The table depends on the configuration only; a kind unavailable here (no slice, no
        // earlier function, too deep) falls back to a float operation. So a statement's record
        // means the same wherever shrinking moves it.
        let cfg = self.cfg;
        let nested = depth < cfg.max_depth;
        let mut kinds = vec![
            (Kind::FloatBinary, 10),
            (Kind::FloatUnary, 8),
            (Kind::FloatConst, 2),
            (Kind::Powi, 2),
            (Kind::IntArith, 4),
            (Kind::IntConst, 1),
            (Kind::Compare, 3),
            (Kind::BoolOp, 2),
            (Kind::Select, 3),
            (Kind::Convert, 2),
            (Kind::Name, 1),
        ];
        let optional = [
            (cfg.allow_slices, Kind::Len, 1),
            (cfg.allow_slices, Kind::Load, 5),
            (cfg.allow_slices && cfg.allow_stores, Kind::Store, 3),
            (cfg.allow_vectors, Kind::Vector, 4),
            (cfg.allow_calls, Kind::Call, 3),
            (cfg.allow_externs, Kind::Extern, 2),
            (cfg.allow_branches, Kind::Branch, 3),
            (cfg.allow_loops && cfg.max_trip > 0, Kind::Loop, 3),
            (cfg.allow_runtime_errors && cfg.allow_branches, Kind::Trap, 1),
        ];
        kinds.extend(optional.iter().filter(|o| o.0).map(|o| (o.1, o.2)));
        let chosen = self.weighted(&kinds);
        let available = match chosen {
            Kind::Len | Kind::Load => !env.slices.is_empty(),
            Kind::Store => env.slices.iter().any(|s| s.ty() == Type::SliceMut),
            Kind::Call => !self.funcs.is_empty(),
            Kind::Branch | Kind::Loop => nested,
            _ => true,
        };
        let kind = if available { chosen } else { Kind::FloatBinary };
        match kind {
            Kind::Branch => {
                self.branch(f, env, depth, mult);
                self.charge(f, mult);
                return;
            }
            Kind::Loop => {
                self.counted_loop(f, env, depth, mult);
                self.charge(f, mult);
                return;
            }
            Kind::Call => {
                if !self.call(f, env, mult) {
                    self.float_binary(f, env);
                }
            }
            Kind::FloatBinary => self.float_binary(f, env),
            Kind::FloatUnary => self.float_unary(f, env),
            Kind::FloatConst => {
                let c = self.float_const();
                self.keep(env, f.float(c), c.abs());
            }
            Kind::Powi => self.powi(f, env),
            Kind::IntArith => self.int_arith(f, env),
            Kind::IntConst => {
                let k = self.int_const();
                env.push(f.int(k), 0.0);
            }
            Kind::Compare => self.compare(f, env),
            Kind::BoolOp => self.bool_op(f, env),
            Kind::Select => self.select(f, env),
            Kind::Convert => self.convert(f, env),
            Kind::Len => {
                let s = env.slices[self.below(env.slices.len())];
                env.push(f.len(s), 0.0);
            }
            Kind::Load => self.load(f, env),
            Kind::Store => self.store(f, env),
            Kind::Vector => self.vector(f, env),
            Kind::Extern => self.extern_call(f, env),
            Kind::Name => self.name(f, env),
            Kind::Trap => {
                let c = self.bool(f, env);
                f.if_else(
                    c,
                    |f| {
                        f.inst(crate::Opcode::Trap, &[], crate::Imm::None);
                    },
                    |_| (),
                );
            }
        }
        let size = self.charge(f, mult);
        debug_assert!(size <= MAX_LEAF || kind == Kind::Call, "{kind:?} statement of size {size} > MAX_LEAF");
    }
}

fn param_name(t: Type) -> &'static str {
    match t {
        Type::F64 => "x",
        Type::I64 => "n",
        Type::Bool => "flag",
        Type::Slice => "s",
        Type::SliceMut => "out",
        Type::F64x(_) => "v",
    }
}
