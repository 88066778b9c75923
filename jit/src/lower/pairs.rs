//! Two iterations at a time in the fast copy of a versioned loop. A loop of one header and one
//! body block, whose counter steps by one (up to a bound, or down as a pullback counts its
//! trips), gets a third copy, entered from the dispatch for 8 or more iterations (16 if it
//! stores), that runs two iterations together while two remain and then leaves to the fast
//! copy, which runs the last one if the count was odd (and takes the loop's exit).
//!
//! Work that depends on no carried value — loads of neighbouring elements and the arithmetic on
//! them — is done once for both iterations in `f64x2` lanes (lane 0 is the iteration whose
//! elements lie lower in memory; every access of the loop must step the same way). Work that
//! does (a running sum, the counter and integers computed from it, in the header too) is done
//! per iteration, in order: the first iteration's instructions, then the second's, reading
//! what the first passed along the back edge. Every lane computes the IEEE operation the scalar
//! instruction does and the carried chains keep their order, so results are bit for bit those
//! of the scalar loop — this is not a reassociating vectoriser. The gain is fewer instructions
//! per element (one load, subtraction or product serves two iterations, and the counter and
//! branch run half as often): `dist += (a[l] - b[l])²` takes about 5 instead of 7 per element.
//!
//! Only where the dispatch proved every access in bounds for the whole loop (each load and store
//! one the fast copy does not check), with indices stepping by one element per iteration (loads
//! may also read one fixed element), and only pure arithmetic besides: no call or comparison.
//! One `tpush` or `tpop` of an `f64` per iteration is allowed where the dispatch checked the
//! tape for the whole loop: the two iterations' entries are neighbours on the tape, the first
//! iteration's lower for a push and higher for a pop, so they move in one 16-byte store (load)
//! when that is also the order of the loop's elements in memory (a forward sweep pushing while
//! it walks up an array, a pullback popping while it walks down). A reverse sweep's loops are
//! mostly of this kind: GradBench's `ode` gradient became 7-11 % faster. Both iterations' loads come before their stores, so a slice stored to is
//! stored once per iteration and read only at the element stored, before the store
//! (`d[i] += ...`); and the paired copy runs only when that slice's memory overlaps no other
//! parameter slice the loop uses (tested once per call: slices passed down a call may share
//! memory).

use super::func::FuncLowerer;
use super::versioning::{Range, VersionedLoop};
use crate::error::JitError;
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{self as clif, BlockArg, InstBuilder, MemFlagsData, types};
use jitdiff_ir::{Block, Function, Imm, Opcode, Terminator, Type, Value};
use rustc_hash::FxHashMap as HashMap;

/// How the paired copy computes one body instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// Nothing to compute: a load only there for its bounds check, which the dispatch did.
    Skip,
    /// The same value in both iterations: computed once, as a scalar.
    Uniform,
    /// One `f64x2`: lane 0 for iteration `i`, lane 1 for `i + 1`.
    Lanes,
    /// Depends on a carried value or on the counter: computed once per iteration, in order.
    PerLane,
    /// A store of element `i` (and `i + 1`), done after both iterations' other work.
    Store,
    /// The loop's one `tpush`: both iterations' entries, after their other work.
    Push,
}

/// The paired copy of one versioned loop (see the module docs).
pub(crate) struct PairPlan {
    body: Block,
    /// Per header instruction, then per body instruction.
    header_kinds: Vec<Kind>,
    kinds: Vec<Kind>,
    /// The counter's step: +1 or -1.
    step: i64,
    /// The lane of the first iteration of a pair: 0, or 1 where elements are read downwards.
    first_lane: u8,
    /// The fewest iterations the paired copy is entered for.
    min_trips: i64,
    /// Slices the loop stores to and other slices it reads or writes: each pair must not
    /// overlap in memory for the paired copy to run (checked on entry).
    disjoint: Vec<(Value, Value)>,
    /// Slices some instruction outside the loop stores to: read and written one element at a
    /// time (see `pair_lanes`); the loop's other slices move 16 bytes at a time.
    written: Vec<Value>,
    /// Whether they are all apart, computed in the function's entry block (slices are
    /// parameters there, and the test then runs once per call rather than once per loop).
    apart: Option<clif::Value>,
    /// Its Cranelift blocks: an entry testing the trip count and `disjoint`, a header (both with
    /// the loop header's parameters) and a body.
    pub entry_block: Option<clif::Block>,
    pub header_block: Option<clif::Block>,
    pub body_block: Option<clif::Block>,
}

impl PairPlan {
    /// The block the dispatch enters it by.
    pub fn first_block(&self) -> Option<clif::Block> {
        self.entry_block
    }
}

/// The most loops of one function that get a paired copy: it adds a third of a loop's code
/// again, and Cranelift's compile time with it (a function of 25 such loops in a row took 40 %
/// longer with all of them paired). GradBench's `ode` has nine loops per RK4 step in both its
/// forward function and its pullback: pairing all of them rather than the first 6 made its
/// gradient 7-12 % faster for 0-4 % more compile time.
pub(crate) const MAX_PAIRED_LOOPS: usize = 12;

/// The fewest iterations the paired copy is entered for. Below, the fast copy runs them all: a
/// loop of a few iterations gains little, and one whose count changes from entry to entry
/// would pay a mispredicted branch more per entry (the paired loop's exit and the fast copy's
/// last iteration).
const MIN_PAIRED_TRIPS: i64 = 8;

/// The same for a loop that stores: GMM's loops of 10 iterations storing into a local array
/// ran 3-20 % slower paired (primal and JVP), those of 20 faster; Rosenbrock's, the MLP's and
/// ODE's store over hundreds of elements.
const MIN_PAIRED_TRIPS_STORING: i64 = 16;

/// The paired copy of `l`, when it has one (see the module docs). `depths[b]`: how many loops
/// contain block `b`; `used[v]`: does anything use value `v`.
pub(crate) fn plan(f: &Function, l: &VersionedLoop, depths: &[u32], used: &[bool]) -> Option<PairPlan> {
    let step = match l.range() {
        Range::UpBelow => 1,
        Range::DownAbove => -1,
        _ => return None,
    };
    // A loop that moves the tape pairs when its body does it once per iteration, checked by
    // the dispatch for the whole loop (`TapeRun`): the two iterations' entries are then next
    // to each other on the tape, and one 16-byte store (load) pushes (pops) both.
    let tape_run = l.tape.map(|run| (run.header, run.body));
    if !matches!(tape_run, None | Some((0, 1))) || l.blocks.len() != 2 {
        return None;
    }
    let header = f.block(l.header);
    let body = *l.blocks.iter().find(|&&b| b != l.header)?;
    let data = f.block(body);
    // The header tests the counter (and may compute integers from it) and enters the body
    // without arguments; the body jumps back to the header.
    let Some(Terminator::Branch { then_dest, else_dest, .. }) = &header.term else { return None };
    let into_body = if then_dest.block == body { then_dest } else { else_dest };
    if into_body.block != body || !into_body.args.is_empty() || !data.params.is_empty() {
        return None;
    }
    let Some(Terminator::Jump(back)) = &data.term else { return None };
    if back.block != l.header {
        return None;
    }
    let mut kind_of: HashMap<Value, Kind> = HashMap::default();
    for &p in &header.params {
        if !matches!(f.ty(p), Type::F64 | Type::I64) {
            return None;
        }
        kind_of.insert(p, Kind::PerLane);
    }
    let mut header_kinds = Vec::with_capacity(header.insts.len());
    for inst in &header.insts {
        let of = |v: &Value| kind_of.get(v).copied().unwrap_or(Kind::Uniform);
        let int_result = inst.results.first().is_some_and(|&r| f.ty(r) == Type::I64);
        let kind = match inst.op {
            // The loop's test: only the branch reads it (nothing paired reads a boolean).
            Opcode::ICmp => Kind::Skip,
            Opcode::IConst => Kind::Uniform,
            Opcode::IAdd | Opcode::ISub | Opcode::IMul | Opcode::INeg if int_result => {
                per_lane_if_any(inst.args.iter().map(of))
            }
            _ => return None,
        };
        if let Some(&r) = inst.results.first() {
            kind_of.insert(r, kind);
        }
        header_kinds.push(kind);
    }
    let access = |k: usize| l.unchecked.get(&(body, k as u32)).map(|&a| &l.accesses()[a]);
    let mut kinds = Vec::with_capacity(data.insts.len());
    let mut paired_work = 0;
    // (slice, instruction index, access) of every store, and of every load that is not skipped.
    let mut stores = vec![];
    let mut loads = vec![];
    for (k, inst) in data.insts.iter().enumerate() {
        let of = |v: &Value| kind_of.get(v).copied().unwrap_or(Kind::Uniform);
        let args: Vec<Kind> = inst.args.iter().map(of).collect();
        let result = inst.results.first().copied();
        let float_result = result.is_some_and(|r| f.ty(r) == Type::F64);
        let int_result = result.is_some_and(|r| f.ty(r) == Type::I64);
        let kind = match inst.op {
            Opcode::IConst | Opcode::FConst => Kind::Uniform,
            Opcode::IAdd | Opcode::ISub | Opcode::IMul | Opcode::INeg if int_result => {
                per_lane_if_any(args.iter().copied())
            }
            Opcode::IToF if float_result => per_lane_if_any(args.iter().copied()),
            Opcode::Load if result.is_some_and(|r| !used[r.index()]) => Kind::Skip,
            Opcode::Load => {
                let a = access(k)?;
                loads.push((inst.args[0], k, a));
                match (a.width(), a.coef()) {
                    (1, 1 | -1) => Kind::Lanes,
                    (1, 0) => Kind::Uniform,
                    _ => return None,
                }
            }
            Opcode::TPush if f.ty(inst.args[0]) == Type::F64 => Kind::Push,
            // Both iterations' entries, like a load of neighbouring elements.
            Opcode::TPop if float_result => Kind::Lanes,
            Opcode::Store => {
                let a = access(k)?;
                if a.width() != 1 || a.coef().abs() != 1 || f.ty(inst.args[2]) != Type::F64 {
                    return None;
                }
                stores.push((inst.args[0], k, a));
                Kind::Store
            }
            Opcode::FAdd
            | Opcode::FSub
            | Opcode::FMul
            | Opcode::FMulSz
            | Opcode::FDiv
            | Opcode::FNeg
            | Opcode::Sqrt
            | Opcode::Fma
                if float_result =>
            {
                if args.contains(&Kind::PerLane) {
                    Kind::PerLane
                } else if args.contains(&Kind::Lanes) {
                    paired_work += 1;
                    Kind::Lanes
                } else {
                    Kind::Uniform
                }
            }
            _ => return None,
        };
        if let Some(r) = result {
            kind_of.insert(r, kind);
        }
        kinds.push(kind);
    }
    // Both iterations' elements side by side in memory, in one order for every access: lane 0
    // holds the iteration at the lower address (the first when indices rise with the loop).
    // The tape too: a push's entry lies above the previous iteration's, a pop's below.
    let mut memory_step = None;
    for (k, kind) in kinds.iter().enumerate() {
        let tape_step = match data.insts[k].op {
            Opcode::TPush => 1,
            Opcode::TPop => -1,
            _ => 0,
        };
        let coef = match kind {
            _ if tape_step != 0 => tape_step * step,
            Kind::Lanes | Kind::Store => access(k).map_or(0, |a| a.coef()),
            _ => 0,
        };
        if coef != 0 {
            let this = coef * step;
            if memory_step.is_some_and(|known| known != this) {
                return None;
            }
            memory_step = Some(this);
        }
    }
    let first_lane = u8::from(memory_step == Some(-1));
    let depth = depths.get(l.header.index()).copied().unwrap_or(0);
    let defined = definition_blocks(f);
    let depth_of =
        |v: Value| defined.get(v.index()).copied().flatten().map(|b| depths.get(b.index()).copied().unwrap_or(0));
    let outside_loops = |v: Option<Value>| v.is_none_or(|v| depth_of(v) == Some(0));
    // Stores only in a loop whose range is the same at every entry: a loop no other loop
    // contains, or one starting and ending at values computed outside every loop. Measured on
    // GMM, whose short inner loops over a local array (`y[r] += l * x` for `r` from `i + 1` to
    // `d`, a count changing from one entry to the next) ran 5-15 % slower paired, where
    // Rosenbrock's gradient loop (`d[i] += ...` over the whole input) runs 15-20 % faster.
    if !stores.is_empty() && depth > 1 && !(outside_loops(l.bound().err()) && entered_at_fixed_start(f, l, depth_of)) {
        return None;
    }
    // A loop with no arithmetic to share gains nothing but a longer compile.
    if paired_work == 0 {
        return None;
    }
    // Memory: the paired copy does both iterations' loads before their stores. A slice stored
    // to is stored once per iteration, and read only at the element stored, before the store
    // (`d[i] += ...`): then iteration `i + 1` reads nothing iteration `i` writes. Other slices
    // must not overlap it, which the entry checks.
    let mut disjoint = vec![];
    for (n, &(slice, at, stored)) in stores.iter().enumerate() {
        if stores[..n].iter().any(|&(other, ..)| other == slice) {
            return None;
        }
        for &(other, load_at, loaded) in &loads {
            if other == slice && (loaded != stored || load_at > at) {
                return None;
            }
        }
        // Only two parameters can share memory: a local array or a table is memory of its own.
        for &(other, ..) in loads.iter().chain(&stores) {
            let both_parameters = f.params.contains(&slice) && f.params.contains(&other);
            if other != slice
                && both_parameters
                && !disjoint.contains(&(slice, other))
                && !disjoint.contains(&(other, slice))
            {
                disjoint.push((slice, other));
            }
        }
    }
    // Slices stored to elsewhere: code just before the loop may have written the elements it
    // reads (see `pair_lanes`). A slice only this loop stores to had each element written by
    // an earlier entry of the loop at the latest, and is read 16 bytes at a time.
    let written = f
        .block_ids()
        .filter(|&b| b != body)
        .flat_map(|b| &f.block(b).insts)
        .filter(|i| i.op == Opcode::Store)
        .map(|i| i.args[0])
        .collect();
    let pushes = kinds.contains(&Kind::Push);
    let min_trips = if stores.is_empty() && !pushes { MIN_PAIRED_TRIPS } else { MIN_PAIRED_TRIPS_STORING };
    Some(PairPlan {
        body,
        header_kinds,
        kinds,
        step,
        first_lane,
        min_trips,
        disjoint,
        written,
        apart: None,
        entry_block: None,
        header_block: None,
        body_block: None,
    })
}

/// An integer instruction (or a conversion of one) runs per iteration when an operand does (it
/// reads the counter or a carried value), else once.
fn per_lane_if_any(mut args: impl Iterator<Item = Kind>) -> Kind {
    if args.any(|k| k == Kind::PerLane) { Kind::PerLane } else { Kind::Uniform }
}

/// The block defining each value (function parameters: the entry).
fn definition_blocks(f: &Function) -> Vec<Option<Block>> {
    let mut defined = vec![None; f.values.len()];
    for &p in &f.params {
        defined[p.index()] = Some(Block::ENTRY);
    }
    for (b, data) in f.block_ids().zip(&f.blocks) {
        for &v in data.params.iter().chain(data.insts.iter().flat_map(|i| &i.results)) {
            defined[v.index()] = Some(b);
        }
    }
    defined
}

/// Does every edge entering `l` from outside start its counter at a constant or at a value
/// computed outside every loop (`depth_of` gives a value's loop depth)?
fn entered_at_fixed_start(f: &Function, l: &VersionedLoop, depth_of: impl Fn(Value) -> Option<u32>) -> bool {
    let constant = |v: Value| {
        f.blocks.iter().flat_map(|b| &b.insts).any(|i| i.op == Opcode::IConst && i.results.first() == Some(&v))
    };
    f.block_ids().filter(|b| !l.body.contains(*b)).all(|b| {
        let Some(term) = &f.block(b).term else { return true };
        term.successors()
            .iter()
            .filter(|call| call.block == l.header)
            .all(|call| call.args.get(l.iv()).is_some_and(|&start| constant(start) || depth_of(start) == Some(0)))
    })
}

/// The values of the paired body computed so far.
#[derive(Default)]
struct PairValues {
    uniform: HashMap<Value, clif::Value>,
    lanes: HashMap<Value, clif::Value>,
    per_lane: [HashMap<Value, clif::Value>; 2],
    extracted: HashMap<(Value, u8), clif::Value>,
    splats: HashMap<clif::Value, clif::Value>,
}

impl FuncLowerer<'_, '_> {
    /// In the entry block, with the parameters bound: for each paired loop that stores, whether
    /// the slices it checks are apart in memory (`PairPlan::disjoint`).
    pub(super) fn test_pair_overlaps(&mut self) {
        let mut tested: HashMap<(Value, Value), clif::Value> = HashMap::default();
        for k in 0..self.versioned.len() {
            let Some(pairs) = self.versioned[k].pairs.as_ref().map(|p| p.disjoint.clone()) else { continue };
            let mut apart = None;
            for (a, b) in pairs {
                let this = match tested.get(&(a, b)) {
                    Some(&known) => known,
                    None => {
                        let ends = |l: &mut Self, s: Value| {
                            let (ptr, len) = (l.get(s)[0], l.get(s)[1]);
                            let bytes = l.b.ins().ishl_imm_u(len, 3);
                            (ptr, l.b.ins().iadd(ptr, bytes))
                        };
                        let ((a_start, a_end), (b_start, b_end)) = (ends(self, a), ends(self, b));
                        let a_first = self.b.ins().icmp(IntCC::UnsignedLessThanOrEqual, a_end, b_start);
                        let b_first = self.b.ins().icmp(IntCC::UnsignedLessThanOrEqual, b_end, a_start);
                        let this = self.b.ins().bor(a_first, b_first);
                        tested.insert((a, b), this);
                        this
                    }
                };
                apart = Some(match apart {
                    Some(so_far) => self.b.ins().band(so_far, this),
                    None => this,
                });
            }
            if let Some(p) = self.versioned[k].pairs.as_mut() {
                p.apart = apart;
            }
        }
    }

    /// Emit the paired copy of versioned loop `k`, if it has one (after its fast copy).
    pub(super) fn emit_pair_copy(&mut self, k: usize) -> Result<(), JitError> {
        let Some(plan) = self.versioned[k].pairs.take() else { return Ok(()) };
        let (Some(entry), Some(header_block), Some(body_block)) =
            (plan.entry_block, plan.header_block, plan.body_block)
        else {
            return Err(self.internal("paired loop without blocks".into()));
        };
        let f = self.f;
        let header = self.versioned[k].header;
        let fast_header = self.versioned[k].fast[&header];
        let iv_position = self.versioned[k].iv();
        let up = plan.step > 0;
        let bound_of = |l: &mut Self| match l.versioned[k].bound() {
            Ok(c) => l.iconst(c),
            Err(v) => l.scalar_outside(v),
        };

        // Run the paired copy only for enough iterations, and only when no slice it stores to
        // overlaps another it uses (tested only then: Cranelift computes the test made at the
        // function's entry where it is used).
        self.b.switch_to_block(entry);
        let params = self.b.block_params(entry).to_vec();
        let args: Vec<BlockArg> = params.iter().map(|&p| BlockArg::from(p)).collect();
        let bound = bound_of(self);
        let start = params[iv_position];
        let long = if up {
            let last_start = self.b.ins().iadd_imm_s(bound, -plan.min_trips);
            self.b.ins().icmp(IntCC::SignedLessThanOrEqual, start, last_start)
        } else {
            let last_start = self.b.ins().iadd_imm_s(bound, plan.min_trips);
            self.b.ins().icmp(IntCC::SignedGreaterThanOrEqual, start, last_start)
        };
        match plan.apart {
            Some(apart) => {
                let overlap_test = self.b.create_block();
                self.b.ins().brif(long, overlap_test, &[], fast_header, &args);
                self.b.seal_block(overlap_test);
                self.b.switch_to_block(overlap_test);
                self.b.ins().brif(apart, header_block, &args, fast_header, &args);
            }
            None => {
                self.b.ins().brif(long, header_block, &args, fast_header, &args);
            }
        }
        self.b.seal_block(entry);

        // Two iterations left: `i + 1 < bound` going up, `i - 1 > bound` going down (no
        // overflow: the loop runs while `i` is on that side of the bound).
        self.b.switch_to_block(header_block);
        let params = self.b.block_params(header_block).to_vec();
        let i = params[iv_position];
        let bound = bound_of(self);
        let next = self.b.ins().iadd_imm_s(i, plan.step);
        let cc = if up { IntCC::SignedLessThan } else { IntCC::SignedGreaterThan };
        let two_left = self.b.ins().icmp(cc, next, bound);
        let leave: Vec<BlockArg> = params.iter().map(|&p| BlockArg::from(p)).collect();
        self.b.ins().brif(two_left, body_block, &[], fast_header, &leave);

        self.b.switch_to_block(body_block);
        let header_data = f.block(header);
        let data = f.block(plan.body);
        let mut values = PairValues::default();
        // The counter of the iteration in lane 0, whose elements are at the lower addresses.
        let lane0_iv = if plan.first_lane == 0 { i } else { next };
        // Both iterations' shared work first (it reads no carried value).
        let header_work = header_data.insts.iter().zip(&plan.header_kinds).map(|(inst, &kind)| (header, 0, inst, kind));
        let body_work =
            data.insts.iter().zip(&plan.kinds).enumerate().map(|(at, (inst, &kind))| (plan.body, at, inst, kind));
        let work: Vec<(Block, usize, &jitdiff_ir::InstData, Kind)> = header_work.chain(body_work).collect();
        for &(block, at, inst, kind) in &work {
            self.at_block = block;
            let Some(&result) = inst.results.first() else { continue };
            match kind {
                Kind::Uniform => {
                    let v = self.pair_uniform((k, block, at), inst, &values)?;
                    values.uniform.insert(result, v);
                }
                Kind::Lanes => {
                    let written = inst.op == Opcode::Load && plan.written.contains(&inst.args[0]);
                    let v = self.pair_lanes((k, block, at), inst, lane0_iv, written, &mut values)?;
                    values.lanes.insert(result, v);
                }
                Kind::Skip | Kind::PerLane | Kind::Store | Kind::Push => {}
            }
        }
        // Then each iteration's own work, in order; the second starts from what the first
        // passes along the back edge (the counter included).
        let Some(Terminator::Jump(back)) = &data.term else {
            return Err(self.internal("paired loop body without back edge".into()));
        };
        let (first, second) = (plan.first_lane, 1 - plan.first_lane);
        for lane in [first, second] {
            for (position, &param) in header_data.params.iter().enumerate() {
                let start = match lane == first {
                    true => params[position],
                    false => self.pair_operand(back.args[position], first, &mut values),
                };
                values.per_lane[lane as usize].insert(param, start);
            }
            for &(block, _, inst, kind) in &work {
                if kind != Kind::PerLane {
                    continue;
                }
                self.at_block = block;
                let args: Vec<clif::Value> =
                    inst.args.iter().map(|&a| self.pair_operand(a, lane, &mut values)).collect();
                let v = self.pair_arithmetic(inst.op, &args)?;
                values.per_lane[lane as usize].insert(inst.results[0], v);
            }
        }
        // The stores, in order: each element from its iteration's lane.
        self.at_block = plan.body;
        for (at, (inst, &kind)) in data.insts.iter().zip(&plan.kinds).enumerate() {
            if kind == Kind::Push {
                self.pair_push(inst.args[0], &mut values)?;
                continue;
            }
            if kind != Kind::Store {
                continue;
            }
            let address = self.pair_address((k, plan.body, at), lane0_iv)?;
            // Both elements in one 16-byte store where only this loop stores to the slice: its
            // next entry reads them 16 bytes at a time at the same places, and a later 8-byte
            // load of either is served from a 16-byte store. (The MLP's pullback, whose
            // `d_w1[j] += x[j] a` is such a loop: 4-7 % faster.)
            if !plan.written.contains(&inst.args[0])
                && let Some(&vector) = values.lanes.get(&inst.args[2])
            {
                self.b.ins().store(MemFlagsData::new().with_notrap(), vector, address, 0);
                continue;
            }
            // Otherwise one element at a time, as the scalar code stores: code elsewhere may
            // read the slice with 16-byte loads that straddle a pair, which a 16-byte store
            // would not serve from the store buffer.
            for lane in 0..2u8 {
                let scalar = self.pair_operand(inst.args[2], lane, &mut values);
                let flags = MemFlagsData::new().with_notrap().with_aligned();
                self.b.ins().store(flags, scalar, address, 8 * i32::from(lane));
            }
        }
        let mut args = Vec::with_capacity(params.len());
        for &arg in &back.args {
            args.push(BlockArg::from(self.pair_operand(arg, second, &mut values)));
        }
        self.b.ins().jump(header_block, &args);
        self.b.seal_block(body_block);
        self.b.seal_block(header_block);
        Ok(())
    }

    /// Value `v` in iteration `lane` (0: `i`, 1: `i + 1`) as a scalar.
    fn pair_operand(&mut self, v: Value, lane: u8, values: &mut PairValues) -> clif::Value {
        if let Some(&c) = values.per_lane[lane as usize].get(&v) {
            return c;
        }
        if let Some(&vector) = values.lanes.get(&v) {
            return *values.extracted.entry((v, lane)).or_insert_with(|| self.b.ins().extractlane(vector, lane));
        }
        match values.uniform.get(&v) {
            Some(&u) => u,
            None => self.scalar_outside(v),
        }
    }

    /// Value `v` as lanes (a uniform one splatted).
    fn pair_vector(&mut self, v: Value, values: &mut PairValues) -> clif::Value {
        if let Some(&vector) = values.lanes.get(&v) {
            return vector;
        }
        let scalar = match values.uniform.get(&v) {
            Some(&u) => u,
            None => self.scalar_outside(v),
        };
        *values.splats.entry(scalar).or_insert_with(|| self.b.ins().splat(types::F64X2, scalar))
    }

    /// An instruction whose value is the same in both iterations.
    fn pair_uniform(
        &mut self,
        (k, body, at): (usize, Block, usize),
        inst: &jitdiff_ir::InstData,
        values: &PairValues,
    ) -> Result<clif::Value, JitError> {
        Ok(match (inst.op, inst.imm) {
            (Opcode::FConst, Imm::F64(x)) => self.float_constant(x),
            (Opcode::IConst, Imm::I64(c)) => self.iconst(c),
            (Opcode::Load, _) => {
                let base = self.pair_base(k, body, at)?;
                self.b.ins().load(types::F64, MemFlagsData::new().with_notrap().with_aligned(), base, 0)
            }
            (op, _) => {
                let mut args = Vec::with_capacity(inst.args.len());
                for &a in &inst.args {
                    args.push(match values.uniform.get(&a) {
                        Some(&u) => u,
                        None => self.scalar_outside(a),
                    });
                }
                self.pair_arithmetic(op, &args)?
            }
        })
    }

    /// An instruction computed for both iterations in one `f64x2`.
    fn pair_lanes(
        &mut self,
        (k, body, at): (usize, Block, usize),
        inst: &jitdiff_ir::InstData,
        i: clif::Value,
        written: bool,
        values: &mut PairValues,
    ) -> Result<clif::Value, JitError> {
        if inst.op == Opcode::TPop {
            return self.pair_pop();
        }
        if inst.op == Opcode::Load {
            // Elements `index` and `index + 1`, where the fast copy reads `base + 8 i`: one
            // 16-byte load, or two 8-byte ones from a slice the function writes (one 16-byte
            // load of two elements stored apart, or straddling a 16-byte store, waits for the
            // stores to reach the cache: 3 to 4 times slower on GMM's short loops).
            let address = self.pair_address((k, body, at), i)?;
            if !written {
                return Ok(self.b.ins().load(types::F64X2, MemFlagsData::new().with_notrap(), address, 0));
            }
            let flags = MemFlagsData::new().with_notrap().with_aligned();
            let low = self.b.ins().load(types::F64, flags, address, 0);
            let high = self.b.ins().load(types::F64, flags, address, 8);
            let vector = self.b.ins().scalar_to_vector(types::F64X2, low);
            return Ok(self.b.ins().insertlane(vector, high, 1));
        }
        let args: Vec<clif::Value> = inst.args.iter().map(|&a| self.pair_vector(a, values)).collect();
        self.pair_arithmetic(inst.op, &args)
    }

    /// Both iterations' `tpop.f64`: the entries below the cursor, the first iteration's (lane 1)
    /// above the second's. The dispatch checked that the tape holds the loop's pops.
    fn pair_pop(&mut self) -> Result<clif::Value, JitError> {
        let (base, cursor) = self.tape_base_and_cursor()?;
        let below = self.b.ins().iadd_imm_s(cursor, -2);
        self.set_tape_cursor(below, false)?;
        let offset = self.b.ins().ishl_imm_u(below, 3);
        let address = self.b.ins().iadd(base, offset);
        Ok(self.b.ins().load(types::F64X2, MemFlagsData::new().with_notrap(), address, 0))
    }

    /// Both iterations' `tpush x`: the first iteration's entry (lane 0), then the second's. The
    /// dispatch made room for the loop's pushes.
    fn pair_push(&mut self, x: Value, values: &mut PairValues) -> Result<(), JitError> {
        let (base, len) = self.tape_base_and_len()?;
        let offset = self.b.ins().ishl_imm_u(len, 3);
        let address = self.b.ins().iadd(base, offset);
        if let Some(&vector) = values.lanes.get(&x) {
            self.b.ins().store(MemFlagsData::new().with_notrap(), vector, address, 0);
        } else {
            let flags = MemFlagsData::new().with_notrap().with_aligned();
            for lane in 0..2u8 {
                let scalar = self.pair_operand(x, lane, values);
                self.b.ins().store(flags, scalar, address, 8 * i32::from(lane));
            }
        }
        let above = self.b.ins().iadd_imm_s(len, 2);
        self.set_tape_cursor(above, true)
    }

    /// The dispatch's base address of the access at instruction `at` of `body`.
    fn pair_base(&mut self, k: usize, body: Block, at: usize) -> Result<clif::Value, JitError> {
        let l = &self.versioned[k];
        let access = l.unchecked.get(&(body, at as u32)).copied();
        access.and_then(|a| l.bases.get(a).copied()).ok_or_else(|| self.internal("paired load without base".into()))
    }

    /// The address of the lower of the two elements the access at instruction `at` of `body`
    /// reads or writes, `lane0_iv` the counter of the iteration in lane 0: the dispatch's base
    /// plus `coef * lane0_iv` elements, as the fast copy addresses it.
    fn pair_address(
        &mut self,
        (k, body, at): (usize, Block, usize),
        lane0_iv: clif::Value,
    ) -> Result<clif::Value, JitError> {
        let base = self.pair_base(k, body, at)?;
        let l = &self.versioned[k];
        let coef = l.unchecked.get(&(body, at as u32)).map_or(1, |&a| l.accesses()[a].coef());
        let scaled = if coef < 0 { self.b.ins().ineg(lane0_iv) } else { lane0_iv };
        let offset = self.b.ins().ishl_imm_u(scaled, 3);
        Ok(self.b.ins().iadd(base, offset))
    }

    /// The arithmetic of `op` on scalars or lanes alike.
    fn pair_arithmetic(&mut self, op: Opcode, args: &[clif::Value]) -> Result<clif::Value, JitError> {
        if let (Opcode::FMulSz, &[x, y]) = (op, args) {
            return Ok(self.strong_zero_mul(x, y));
        }
        let ins = self.b.ins();
        Ok(match (op, args) {
            (Opcode::FAdd, &[x, y]) => ins.fadd(x, y),
            (Opcode::FSub, &[x, y]) => ins.fsub(x, y),
            (Opcode::FMul, &[x, y]) => ins.fmul(x, y),
            (Opcode::FDiv, &[x, y]) => ins.fdiv(x, y),
            (Opcode::FNeg, &[x]) => ins.fneg(x),
            (Opcode::Sqrt, &[x]) => ins.sqrt(x),
            // One fused operation per lane, as the scalar code's (see `lower_inst`).
            (Opcode::Fma, &[x, y, z]) => ins.fma(x, y, z),
            (Opcode::IAdd, &[x, y]) => ins.iadd(x, y),
            (Opcode::ISub, &[x, y]) => ins.isub(x, y),
            (Opcode::IMul, &[x, y]) => ins.imul(x, y),
            (Opcode::INeg, &[x]) => ins.ineg(x),
            (Opcode::IToF, &[x]) => ins.fcvt_from_sint(types::F64, x),
            (op, _) => return Err(self.internal(format!("{op} in a paired loop"))),
        })
    }
}
