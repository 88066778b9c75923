//! Checkpointing of loops (IR → IR, before reverse mode): a counted loop whose state is scalar is
//! outlined into `@<f>_steps(carried..., invariants..., end) -> carried...`, which runs its
//! iterations from the carried counter up to `end`, and the loop becomes an outer loop over
//! segments of `S` iterations that calls it — or, for a binomial schedule, one call of the
//! recursion `@<f>_revolve` over it (`checkpoint/binomial.rs`). Reverse mode then differentiates
//! those calls in joint mode (`reverse.rs`): the forward pass records only each call's scalar
//! arguments, and the pullback recomputes one call at a time, so the tape holds `N / S` segment
//! starts plus one segment's record instead of `N` iterations' records. The iterations run the
//! same operations in the same order, so the gradient is bit-identical to the unbounded one.
//!
//! A loop qualifies when its header has one instruction, `c = icmp lt i, bound` with `i` a
//! header parameter and `bound` defined outside the loop, branches into the body on `c` and out
//! of the loop otherwise (the loop's only exit); every back edge passes `i + 1`; the values the
//! loop carries are `f64`, `i64` or `bool`; and what it reads from outside is one of those or a
//! read-only `slice` (so the body stores into no slice, allocates nothing and reads no `mslice`).

mod binomial;

pub use binomial::MAX_SNAPSHOTS;
use binomial::{Binomial, revolve_function};

use super::error::AdError;
use super::request::differentiation_source;
use super::reverse::{ReverseDerivative, derive_reverse_joint};
use jitdiff_ir::analysis::ControlFlow;
use jitdiff_ir::{
    Block, BlockCall, Callee, CondCode, FuncId, Function, Imm, InstData, Module, Opcode, Terminator, Type, Value,
    passes,
};
use jitdiff_rules::RuleSet;
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

/// How reverse mode bounds the tape of loops.
///
/// ```
/// use jitdiff_ad::Checkpoint;
/// assert_eq!(Checkpoint::default(), Checkpoint::Off);
/// assert_eq!(Checkpoint::Segments.to_string(), "segments of ceil(sqrt(bound)) iterations");
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Checkpoint {
    /// Record every iteration (memory grows with the trip count).
    #[default]
    Off,
    /// Segments of `ceil(sqrt(bound))` iterations (`bound`: the loop's upper limit), so the tape
    /// holds O(sqrt(N)) entries for N iterations.
    Segments,
    /// Segments of a fixed number of iterations (at least 1).
    SegmentLength(u32),
    /// A budget in snapshots: at most this many segment starts are recorded (at least 1), the
    /// segments `ceil(bound / k)` iterations long, so the tape holds `k` starts plus one
    /// segment's record.
    Snapshots(u32),
    /// Binomial checkpointing (Revolve) with this many snapshots (1 to [`MAX_SNAPSHOTS`]), over
    /// single iterations: with `N` iterations and `r` the least number with
    /// `C(snapshots + r, r) >= N`, an iteration runs at most `r + 1` times unrecorded and once
    /// recorded. The tape holds two starts per level of the recursion (at most `snapshots + r`
    /// levels, capped at 100: a deeper range is recorded whole) plus one iteration's record.
    Binomial(u32),
    /// A tape budget in bytes for the loop: a binomial schedule whose leaves are as many
    /// iterations as fill half the budget (by an upper bound of an iteration's record) and whose
    /// snapshots fill the other half. The function's other records (outside the loop) are not
    /// counted.
    Bytes(u64),
}

impl std::fmt::Display for Checkpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Checkpoint::Off => write!(f, "off"),
            Checkpoint::Segments => write!(f, "segments of ceil(sqrt(bound)) iterations"),
            Checkpoint::SegmentLength(n) => write!(f, "segments of {} iterations", (*n).max(1)),
            Checkpoint::Snapshots(k) => write!(f, "at most {} segments of ceil(bound / {0}) iterations", (*k).max(1)),
            Checkpoint::Binomial(k) => write!(f, "a binomial schedule with {} snapshots", (*k).clamp(1, MAX_SNAPSHOTS)),
            Checkpoint::Bytes(b) => write!(f, "a tape budget of {b} bytes"),
        }
    }
}

/// One checkpointed loop: the function it was in, its header block and the outlined function.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckpointedLoop {
    /// The function (as written) that held the loop.
    pub func: String,
    /// The loop's header block.
    pub header: String,
    /// The outlined segment function, `@<f>_steps`.
    pub steps: String,
    /// The function whose calls reverse mode differentiates in joint mode: `steps`, or for a
    /// binomial schedule the recursion `@<f>_revolve` over it.
    pub joint: String,
    /// The segment length rule.
    pub rule: Checkpoint,
    /// The schedule in words, with what the rule chose for this loop (for `jitdiff show`).
    pub schedule: String,
}

/// [`derive_reverse_with_rules`](crate::derive_reverse_with_rules) with the loops of `@func`
/// checkpointed as `checkpoint` says; also returns the schedule (which loops, which rule). With
/// [`Checkpoint::Off`] or no loop that qualifies this is the plain derivative.
///
/// ```
/// use jitdiff_ad::{Checkpoint, derive_reverse_checkpointed};
/// use jitdiff_ir::parse_module;
/// use jitdiff_rules::RuleSet;
/// let m = parse_module("func @f(x: f64, n: i64) -> f64 {\nentry:\n    zero = iconst 0\n    one = iconst 1\n    jump head(zero, x)\nhead(i: i64, y: f64):\n    c = icmp lt i, n\n    br c, body, done(y)\nbody:\n    s = sin y\n    j = iadd i, one\n    jump head(j, s)\ndone(r: f64):\n    ret r\n}").unwrap();
/// let (d, schedule) = derive_reverse_checkpointed(&m, "f", &[true, false], &RuleSet::new(), Checkpoint::Segments).unwrap();
/// assert_eq!(schedule[0].steps, "f_steps");
/// assert!(d.module.func_by_name("f_steps").is_some());
/// ```
pub fn derive_reverse_checkpointed(
    module: &Module,
    func: &str,
    wrt: &[bool],
    rules: &RuleSet,
    checkpoint: Checkpoint,
) -> Result<(ReverseDerivative, Vec<CheckpointedLoop>), AdError> {
    if checkpoint == Checkpoint::Off {
        return Ok((super::derive_reverse_with_rules(module, func, wrt, rules)?, vec![]));
    }
    let (module, rules) = crate::nested::expanded(module, rules)?;
    let (module, rules) = (module.as_ref(), rules.as_ref());
    jitdiff_ir::verify_module(module)?;
    // Outline from the cleaned source, so that work hoisted out of the loop there (and its
    // adjoint, accumulated across every iteration) stays out of the segments.
    // A panic while outlining is a bug; it reaches the caller as an error naming the function.
    let internal = |message| AdError::Internal { func: func.into(), message };
    let mut m = jitdiff_ir::contain_panics(|| differentiation_source(module)).map_err(internal)?;
    let schedule = match m.func_id(func) {
        Some(id) => {
            let schedule = jitdiff_ir::contain_panics(|| outline_loops(&mut m, id, checkpoint)).map_err(internal)?;
            refuse_when_none_qualifies(m.func(id), &schedule)?;
            schedule
        }
        None => vec![],
    };
    if schedule.is_empty() {
        return Ok((super::derive_reverse_with_rules(module, func, wrt, rules)?, vec![]));
    }
    let joint: Vec<FuncId> = schedule.iter().filter_map(|l| m.func_id(&l.joint)).collect();
    match derive_reverse_joint(&m, func, wrt, rules, &joint) {
        Ok(d) => Ok((d, schedule)),
        // An error names the instruction as written: the plain derivation reports it.
        Err(e) => Err(super::derive_reverse_with_rules(module, func, wrt, rules).err().unwrap_or(e)),
    }
}

/// Outline every loop of `@id` that qualifies, outermost first.
fn outline_loops(m: &mut Module, id: FuncId, rule: Checkpoint) -> Vec<CheckpointedLoop> {
    let mut done = vec![];
    while let Some(found) = find_loop(m.func(id)) {
        let f = m.func(id).clone();
        let name = fresh_name(m, &format!("{}_steps", f.name));
        let header = f.block(found.header).name.clone();
        let steps = outline(&f, &found, &name);
        let steps_id = m.push_function(steps);
        let binomial = match rule {
            Checkpoint::Binomial(k) => Some(Binomial { snapshots: k.clamp(1, MAX_SNAPSHOTS), leaf: 1 }),
            Checkpoint::Bytes(bytes) => {
                Some(Binomial::within(bytes, record_bytes(&f, &found), level_bytes(&f, &found)))
            }
            _ => None,
        };
        let mut f = f;
        let (joint, schedule) = match binomial {
            Some(plan) => {
                let revolve_name = fresh_name(m, &format!("{}_revolve", f.name));
                // Reserved first: the recursion calls itself.
                let revolve_id = m.push_function(Function::new(&revolve_name, vec![]));
                let header_params = f.block(found.header).params.len();
                let revolve = revolve_function(
                    m.func(steps_id),
                    steps_id,
                    revolve_id,
                    header_params,
                    found.counter,
                    plan.leaf,
                    &revolve_name,
                );
                m.functions[revolve_id.index()] = revolve;
                rewrite(&mut f, &found, revolve_id, Length::Whole(plan.snapshots));
                let schedule = format!(
                    "a binomial schedule (@{revolve_name}) with {} snapshots over leaves of {} iteration{} run by @{name}",
                    plan.snapshots,
                    plan.leaf,
                    if plan.leaf == 1 { "" } else { "s" }
                );
                (revolve_name, schedule)
            }
            None => {
                rewrite(&mut f, &found, steps_id, Length::Segments(rule));
                (name.clone(), format!("@{name} runs {rule}; the pullback recomputes one segment at a time"))
            }
        };
        m.functions[id.index()] = f;
        done.push(CheckpointedLoop { func: m.func(id).name.clone(), header, steps: name, joint, rule, schedule });
    }
    done
}

/// Checkpointing was asked for: when no loop of `f` qualified, its first loop is an error that
/// says why, rather than a tape that silently grows with the trip count. (Loops that do not
/// qualify next to one that does — an initialisation loop that stores into a slice beside the
/// time-stepping loop — are recorded as usual.)
fn refuse_when_none_qualifies(f: &Function, schedule: &[CheckpointedLoop]) -> Result<(), AdError> {
    if !schedule.is_empty() {
        return Ok(());
    }
    let cfg = ControlFlow::new(f);
    let Some(first) = cfg.natural_loops().into_iter().next() else { return Ok(()) };
    // Nothing was outlined, so the loop is as written and `qualifies` says why not.
    let reason = qualifies(f, first.header).err().unwrap_or("it does not qualify");
    let block = f.block(first.header).name.clone();
    Err(AdError::NotCheckpointable { func: f.name.clone(), block, reason: reason.into() })
}

/// `base`, or `base2`, `base3`, ... if taken.
fn fresh_name(m: &Module, base: &str) -> String {
    let mut name = base.to_string();
    let mut k = 2;
    while m.name_taken(&name) {
        name = format!("{base}{k}");
        k += 1;
    }
    name
}

/// An upper bound of what one iteration records, in bytes: at most every result of the loop's
/// instructions, and a few entries per block for its control flow.
fn record_bytes(f: &Function, found: &Found) -> u64 {
    let blocks = std::iter::once(found.header).chain(found.blocks.iter().copied());
    let entries: usize = blocks.map(|b| 2 + f.block(b).insts.iter().map(|i| i.results.len()).sum::<usize>()).sum();
    8 * entries as u64
}

/// What one level of the binomial recursion keeps on the tape, in bytes (an upper bound): the
/// arguments of its two calls, and its own control flow (the search for `r` included).
fn level_bytes(f: &Function, found: &Found) -> u64 {
    let arguments = f.block(found.header).params.len() + found.invariants.len() + 2;
    8 * (2 * arguments as u64 + 24)
}

/// How the rewritten loop cuts its iterations.
enum Length {
    /// Segments by a segment rule, one call of the steps function each.
    Segments(Checkpoint),
    /// One call of the binomial recursion over them all, with this many snapshots.
    Whole(u32),
}

/// A loop that qualifies (see the module docs).
struct Found {
    header: Block,
    /// The position of the counter among the header's parameters.
    counter: usize,
    bound: Value,
    /// The header's condition value.
    cond: Value,
    /// The body's first block (the branch's `then` successor, entered without arguments).
    body: Block,
    /// The loop's blocks other than the header, in block order.
    blocks: Vec<Block>,
    /// Values defined outside the loop that the body reads, in first-use order.
    invariants: Vec<Value>,
}

fn is_scalar(t: Type) -> bool {
    matches!(t, Type::F64 | Type::I64 | Type::Bool)
}

fn find_loop(f: &Function) -> Option<Found> {
    f.block_ids().find_map(|h| qualifies(f, h).ok())
}

/// The loop headed by `h` if it qualifies, or why not (for a header of a loop).
fn qualifies(f: &Function, h: Block) -> Result<Found, &'static str> {
    let hb = f.block(h);
    const HEADER: &str = "its header does more than compare a counter with a bound (`c = icmp lt i, bound`)";
    let [inst] = hb.insts.as_slice() else { return Err(HEADER) };
    if inst.op != Opcode::ICmp || inst.imm != Imm::Cond(CondCode::Lt) {
        return Err(HEADER);
    }
    let (i, bound, cond) = (inst.args[0], inst.args[1], inst.results[0]);
    let counter = hb.params.iter().position(|&p| p == i).ok_or(HEADER)?;
    const BRANCH: &str = "its header does not branch into the loop on the comparison and out of it otherwise";
    let Some(Terminator::Branch { cond: c, then_dest, else_dest }) = &hb.term else { return Err(BRANCH) };
    if *c != cond || !then_dest.args.is_empty() || then_dest.block == h {
        return Err(BRANCH);
    }
    if hb.params.iter().any(|&p| !is_scalar(f.ty(p))) {
        return Err("it carries a value that is not an f64, i64 or bool from one iteration to the next");
    }
    // The blocks reachable from the body without passing the header: they must all lead back.
    let body = then_dest.block;
    let mut blocks: HashSet<Block> = HashSet::default();
    let mut stack = vec![body];
    while let Some(b) = stack.pop() {
        if b == h || !blocks.insert(b) {
            continue;
        }
        let Some(term) = &f.block(b).term else { return Err(BRANCH) };
        match term {
            Terminator::Return(_) => return Err("it returns from inside the loop"),
            _ => stack.extend(term.successors().iter().map(|s| s.block)),
        }
    }
    if blocks.contains(&else_dest.block) || else_dest.block == h {
        return Err(BRANCH);
    }
    // Entered only through the header's branch.
    for b in f.block_ids() {
        if blocks.contains(&b) || b == h {
            continue;
        }
        if f.block(b).term.as_ref().is_some_and(|t| t.successors().iter().any(|s| blocks.contains(&s.block))) {
            return Err("it is entered other than through its header");
        }
    }
    let blocks: Vec<Block> = f.block_ids().filter(|b| blocks.contains(b)).collect();
    let defined: HashSet<Value> = std::iter::once(h)
        .chain(blocks.iter().copied())
        .flat_map(|b| {
            let data = f.block(b);
            data.params
                .iter()
                .copied()
                .chain(data.insts.iter().flat_map(|i| i.results.iter().copied()))
                .collect::<Vec<_>>()
        })
        .collect();
    if defined.contains(&bound) {
        return Err("its bound is computed inside the loop");
    }
    let defs: HashMap<Value, &InstData> =
        f.blocks.iter().flat_map(|b| &b.insts).flat_map(|i| i.results.iter().map(move |&r| (r, i))).collect();
    let is_const_one = |v: Value| defs.get(&v).is_some_and(|d| d.op == Opcode::IConst && d.imm == Imm::I64(1));
    let mut invariants = vec![];
    for &b in &blocks {
        let data = f.block(b);
        for inst in &data.insts {
            if matches!(
                inst.op,
                Opcode::Store
                    | Opcode::VStore
                    | Opcode::Alloc
                    | Opcode::TPush
                    | Opcode::TPop
                    | Opcode::TSplit
                    | Opcode::TRejoin
            ) {
                return Err("it stores into a slice, allocates an array or uses the tape");
            }
            if inst.results.iter().any(|&r| !is_scalar(f.ty(r))) {
                return Err("it computes a value that is not an f64, i64 or bool (a vector or a slice)");
            }
        }
        let term = data.term.as_ref().ok_or(BRANCH)?;
        for v in data.insts.iter().flat_map(|i| i.args.iter().copied()).chain(term.uses()) {
            if !defined.contains(&v) && !invariants.contains(&v) {
                // A read-only slice is the same when the pullback runs the segment again.
                if !is_scalar(f.ty(v)) && f.ty(v) != Type::Slice {
                    return Err("it reads a mutable slice or a local array, which may change before the pullback");
                }
                invariants.push(v);
            }
        }
        for s in term.successors() {
            if s.block == h {
                let next = s.args[counter];
                let steps_by_one = defs.get(&next).is_some_and(|d| {
                    d.op == Opcode::IAdd
                        && ((d.args[0] == i && is_const_one(d.args[1])) || (d.args[1] == i && is_const_one(d.args[0])))
                });
                if !steps_by_one {
                    return Err("its counter does not step by 1 (`i + 1` on every way back to the header)");
                }
            }
        }
    }
    // The header's condition is the only value of the loop that may be used after it (it is
    // false there); nothing of the body's is (the header dominates the exit).
    Ok(Found { header: h, counter, bound, cond, body, blocks, invariants })
}

/// `@name(header params..., invariants..., end) -> header param types`: the loop with `end` for
/// `bound`, returning the header's parameters when the counter reaches `end`.
fn outline(f: &Function, found: &Found, name: &str) -> Function {
    let hb = f.block(found.header);
    let floats: Vec<Value> = found.invariants.iter().copied().filter(|&v| f.ty(v) == Type::F64).collect();
    let types: Vec<Type> = hb.params.iter().chain(&floats).map(|&p| f.ty(p)).collect();
    let mut g = Function::new(name, types);
    let mut map: HashMap<Value, Value> = HashMap::default();
    let entry = g.add_block("entry");
    let mut entry_args = vec![];
    for &p in &hb.params {
        entry_args.push(g.add_param(f.ty(p), f.values[p.index()].name.as_deref()));
    }
    for &v in &found.invariants {
        map.insert(v, g.add_param(f.ty(v), f.values[v.index()].name.as_deref()));
    }
    let end = g.add_param(Type::I64, Some("end"));
    let head = g.add_block(&hb.name);
    for &p in &hb.params {
        map.insert(p, g.add_block_param(head, f.ty(p), f.values[p.index()].name.as_deref()));
    }
    let mut blocks: HashMap<Block, Block> = HashMap::default();
    blocks.insert(found.header, head);
    for &b in &found.blocks {
        let nb = g.add_block(&f.block(b).name);
        blocks.insert(b, nb);
        for &p in &f.block(b).params {
            map.insert(p, g.add_block_param(nb, f.ty(p), f.values[p.index()].name.as_deref()));
        }
        for inst in &f.block(b).insts {
            for &r in &inst.results {
                let nr = g.new_value(f.ty(r));
                if let Some(n) = &f.values[r.index()].name {
                    g.set_value_name(nr, n);
                }
                map.insert(r, nr);
            }
        }
    }
    g.block_mut(entry).term = Some(Terminator::Jump(BlockCall { block: head, args: entry_args.into() }));
    let cond = g.new_value(Type::Bool);
    map.insert(found.cond, cond);
    let i = map[&hb.params[found.counter]];
    g.block_mut(head).insts.push(InstData {
        op: Opcode::ICmp,
        args: smallvec::smallvec![i, end],
        imm: Imm::Cond(CondCode::Lt),
        results: smallvec::smallvec![cond],
    });
    let done = g.add_block("segment_done");
    // The float invariants are returned as they came: the caller carries them through its
    // segment loop, so their adjoints are accumulated in one chain across segments, in the
    // order of the unbounded pullback.
    let header_params: Vec<Value> = hb.params.iter().chain(&floats).map(|p| map[p]).collect();
    g.block_mut(head).term = Some(Terminator::Branch {
        cond,
        then_dest: BlockCall { block: blocks[&found.body], args: smallvec::smallvec![] },
        else_dest: BlockCall { block: done, args: smallvec::smallvec![] },
    });
    g.block_mut(done).term = Some(Terminator::Return(header_params));
    for &b in &found.blocks {
        let mut data = f.block(b).clone();
        for inst in &mut data.insts {
            inst.args.iter_mut().for_each(|a| *a = map[a]);
            inst.results.iter_mut().for_each(|r| *r = map[r]);
        }
        let mut term = data.term.clone().expect("checked: every loop block has a terminator");
        term.map_uses(|v| map[&v]);
        for s in term.successors_mut() {
            s.block = blocks[&s.block];
        }
        let nb = blocks[&b];
        g.block_mut(nb).insts = data.insts;
        g.block_mut(nb).term = Some(term);
    }
    g.canonicalize();
    g
}

/// Replace the loop's body by a segment block: `e = min(i + S, bound)` and a call of the
/// outlined function, whose results are the header's next arguments.
fn rewrite(f: &mut Function, found: &Found, steps: FuncId, length: Length) {
    let hb = f.block(found.header).clone();
    let floats: Vec<Value> = found.invariants.iter().copied().filter(|&v| f.ty(v) == Type::F64).collect();
    let carried: Vec<Value> = floats
        .iter()
        .map(|&v| {
            let label = f.value_label(v);
            f.add_block_param(found.header, Type::F64, Some(&label))
        })
        .collect();
    let carry: HashMap<Value, Value> = floats.iter().copied().zip(carried.iter().copied()).collect();
    // After the loop the invariants are read as carried (the header dominates what its exit
    // alone enters), so their adjoints from after the loop start the chain the segments extend.
    let cfg = ControlFlow::new(f);
    let exit = match &hb.term {
        Some(Terminator::Branch { else_dest, .. }) => else_dest.block,
        _ => found.header,
    };
    let after: Vec<Block> = if cfg.predecessors(exit) == [found.header] {
        f.block_ids().filter(|&b| cfg.dominates(exit, b)).collect()
    } else {
        vec![]
    };
    let swap = |v: &mut Value| *v = carry.get(v).copied().unwrap_or(*v);
    for b in after {
        let data = f.block_mut(b);
        data.insts.iter_mut().for_each(|i| i.args.iter_mut().for_each(swap));
        if let Some(term) = &mut data.term {
            term.map_uses(|mut v| {
                swap(&mut v);
                v
            });
        }
    }
    if let Some(Terminator::Branch { else_dest, .. }) = &mut f.block_mut(found.header).term {
        else_dest.args.iter_mut().for_each(swap);
    }
    // Entering edges pass the invariants' values.
    for b in f.block_ids() {
        if b == found.header || found.blocks.contains(&b) {
            continue;
        }
        if let Some(term) = &mut f.block_mut(b).term {
            for s in term.successors_mut() {
                if s.block == found.header {
                    s.args.extend_from_slice(&floats);
                }
            }
        }
    }
    let types: Vec<Type> = hb.params.iter().chain(&floats).map(|&p| f.ty(p)).collect();
    let seg = f.add_block(&format!("{}_segment", hb.name));
    let mut insts = vec![];
    let mut emit = |f: &mut Function, op: Opcode, args: Vec<Value>, imm: Imm, ty: Type| {
        let r = f.new_value(ty);
        insts.push(InstData { op, args: args.into(), imm, results: smallvec::smallvec![r] });
        r
    };
    let i = hb.params[found.counter];
    let rule = match length {
        Length::Segments(rule) => rule,
        Length::Whole(snapshots) => {
            let mut args = hb.params.clone();
            args.extend(found.invariants.iter().map(|v| carry.get(v).copied().unwrap_or(*v)));
            args.push(found.bound);
            args.push(emit(f, Opcode::IConst, vec![], Imm::I64(i64::from(snapshots)), Type::I64));
            args.push(emit(f, Opcode::IConst, vec![], Imm::I64(binomial::MAX_DEPTH), Type::I64));
            let results: Vec<Value> = types.iter().map(|&t| f.new_value(t)).collect();
            insts.push(InstData {
                op: Opcode::Call,
                args: args.into(),
                imm: Imm::Callee(Callee::Func(steps)),
                results: results.as_slice().into(),
            });
            return finish(f, found, seg, insts, results);
        }
    };
    let len = match rule {
        Checkpoint::SegmentLength(n) => emit(f, Opcode::IConst, vec![], Imm::I64(i64::from(n.max(1))), Type::I64),
        Checkpoint::Snapshots(k) => {
            // max(1, bound / k + (bound % k > 0)): no overflow, and a negative bound gives 1.
            let k = emit(f, Opcode::IConst, vec![], Imm::I64(i64::from(k.max(1))), Type::I64);
            let q = emit(f, Opcode::IDiv, vec![found.bound, k], Imm::None, Type::I64);
            let r = emit(f, Opcode::IRem, vec![found.bound, k], Imm::None, Type::I64);
            let zero = emit(f, Opcode::IConst, vec![], Imm::I64(0), Type::I64);
            let one = emit(f, Opcode::IConst, vec![], Imm::I64(1), Type::I64);
            let partial = emit(f, Opcode::ICmp, vec![r, zero], Imm::Cond(CondCode::Gt), Type::Bool);
            let up = emit(f, Opcode::IAdd, vec![q, one], Imm::None, Type::I64);
            let n = emit(f, Opcode::Select, vec![partial, up, q], Imm::None, Type::I64);
            let small = emit(f, Opcode::ICmp, vec![n, one], Imm::Cond(CondCode::Lt), Type::Bool);
            emit(f, Opcode::Select, vec![small, one, n], Imm::None, Type::I64)
        }
        _ => {
            // max(1, ceil(sqrt(bound))), with NaN (a negative bound) giving 0 before the max.
            let b = emit(f, Opcode::IToF, vec![found.bound], Imm::None, Type::F64);
            let r = emit(f, Opcode::Sqrt, vec![b], Imm::None, Type::F64);
            let c = emit(f, Opcode::Ceil, vec![r], Imm::None, Type::F64);
            let n = emit(f, Opcode::FToI, vec![c], Imm::None, Type::I64);
            let one = emit(f, Opcode::IConst, vec![], Imm::I64(1), Type::I64);
            let small = emit(f, Opcode::ICmp, vec![n, one], Imm::Cond(CondCode::Lt), Type::Bool);
            emit(f, Opcode::Select, vec![small, one, n], Imm::None, Type::I64)
        }
    };
    let left = emit(f, Opcode::ISub, vec![found.bound, i], Imm::None, Type::I64);
    let stop = emit(f, Opcode::IAdd, vec![i, len], Imm::None, Type::I64);
    let whole = emit(f, Opcode::ICmp, vec![len, left], Imm::Cond(CondCode::Lt), Type::Bool);
    let end = emit(f, Opcode::Select, vec![whole, stop, found.bound], Imm::None, Type::I64);
    let mut args = hb.params.clone();
    args.extend(found.invariants.iter().map(|v| carry.get(v).copied().unwrap_or(*v)));
    args.push(end);
    let results: Vec<Value> = types.iter().map(|&t| f.new_value(t)).collect();
    insts.push(InstData {
        op: Opcode::Call,
        args: args.into(),
        imm: Imm::Callee(Callee::Func(steps)),
        results: results.as_slice().into(),
    });
    finish(f, found, seg, insts, results);
}

/// The segment block `seg` runs `insts` and jumps back to the header with `results`; the
/// header's branch enters it instead of the body.
fn finish(f: &mut Function, found: &Found, seg: Block, insts: Vec<InstData>, results: Vec<Value>) {
    f.block_mut(seg).insts = insts;
    f.block_mut(seg).term = Some(Terminator::Jump(BlockCall { block: found.header, args: results.into() }));
    if let Some(Terminator::Branch { then_dest, .. }) = &mut f.block_mut(found.header).term {
        then_dest.block = seg;
    }
    passes::remove_unreachable_blocks(f);
    f.canonicalize();
}
