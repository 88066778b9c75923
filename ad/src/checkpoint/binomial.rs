//! Binomial checkpointing (Griewank's Revolve schedule, as a recursion of joint calls).
//!
//! `@<f>_revolve(carried..., invariants..., end, snapshots, depth)` runs the iterations from the
//! carried counter up to `end`, counted in *leaves* of `L` iterations. One leaf (or no snapshot
//! left) runs `@<f>_steps` directly. Otherwise, with `c` snapshots and `n` leaves, it finds the
//! least `r` with `C(c + r, r) >= n` and splits the range after `m = max(1, n - C(c - 1 + r, r))`
//! leaves: the first part keeps `c` snapshots and needs `r - 1` repetitions, the second holds one
//! snapshot more (its start) and runs with `c - 1`.
//!
//! Every call of `@<f>_revolve` is differentiated in joint mode, so its pullback recomputes it
//! from its recorded arguments: it runs the first part plainly (recording its start), records the
//! second part's start, and reverses the second part, then the first. The second part's plain run
//! would only compute the results the pullback drops (`drop_joint_results` in `reverse.rs`
//! removes it), so a leaf runs at most `r + 1` times plainly and once recorded — Revolve's bound.
//! The tape holds, along the current path of the recursion (at most `c + r` calls deep), the two
//! starts each call recorded, plus one leaf's record.

use jitdiff_ir::{BlockCall, Callee, CondCode, FuncId, Function, Imm, Opcode, Terminator, Type, Value};
use jitdiff_rules::{BlockEmitter, Emit};

/// The most snapshots a binomial schedule takes: the recursion is at most `snapshots + r` native
/// calls deep (`r` the repetitions, a handful in practice), and must stay far from the end of a
/// thread's stack.
pub const MAX_SNAPSHOTS: u32 = 64;

/// How deep the recursion may go (native frames stay well within the JIT's call-depth limit of
/// 256): a call at this depth runs its whole range as one leaf, recorded. With `c` snapshots
/// that happens only when `c + r` exceeds it — at 64 snapshots, past 10^20 leaves; at 1
/// snapshot, past 100.
pub const MAX_DEPTH: i64 = 100;

/// The shape of a binomial schedule for one loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Binomial {
    /// Snapshots: how many leaf starts the schedule may hold at once (1..=[`MAX_SNAPSHOTS`]).
    pub snapshots: u32,
    /// Iterations per leaf (at least 1).
    pub leaf: u32,
}

impl Binomial {
    /// A schedule within `bytes` of tape: half for one leaf's record (`record_bytes` per
    /// iteration, an upper bound), half for the starts the recursion holds (`level_bytes` per
    /// level, `snapshots + r` levels; `r` is assumed at most 8, which covers 10^12 leaves at
    /// 256 snapshots).
    pub fn within(bytes: u64, record_bytes: u64, level_bytes: u64) -> Binomial {
        let half = bytes / 2;
        let leaf = (half / record_bytes.max(1)).clamp(1, u64::from(u32::MAX)) as u32;
        let levels = half / level_bytes.max(1);
        let snapshots = levels.saturating_sub(8).clamp(1, u64::from(MAX_SNAPSHOTS)) as u32;
        Binomial { snapshots, leaf }
    }
}

/// `@name`: the recursion described in the module docs (called with `depth` =
/// [`MAX_DEPTH`]) over the segment function `steps`
/// (`(header params..., invariants..., end) -> (header params..., float invariants...)`), whose
/// counter is header parameter `counter` of `header_params`. `me` is the id `@name` will have.
pub(super) fn revolve_function(
    steps: &Function,
    steps_id: FuncId,
    me: FuncId,
    header_params: usize,
    counter: usize,
    leaf: u32,
    name: &str,
) -> Function {
    let mut g = Function::new(name, steps.returns.clone());
    let params: Vec<Value> =
        steps.params.iter().map(|&p| g.add_param(steps.ty(p), steps.values[p.index()].name.as_deref())).collect();
    let snapshots = g.add_param(Type::I64, Some("snapshots"));
    let depth = g.add_param(Type::I64, Some("depth"));
    let (end, carried) = (params[params.len() - 1], &params[..params.len() - 1]);
    let i = carried[counter];
    let blocks = ["entry", "leaf", "split", "search", "grow", "place"].map(|b| g.add_block(b));
    let [entry, leaf_block, split, search, grow, place] = blocks;
    let mut em = BlockEmitter::new(&mut g, entry);
    let int = |em: &mut BlockEmitter<'_>, n: i64| em.emit(Opcode::IConst, &[], Imm::I64(n));
    let cmp =
        |em: &mut BlockEmitter<'_>, cc: CondCode, a: Value, b: Value| em.emit(Opcode::ICmp, &[a, b], Imm::Cond(cc));
    let (zero, one, len) = (int(&mut em, 0), int(&mut em, 1), int(&mut em, i64::from(leaf.max(1))));
    let n = em.bin(Opcode::ISub, end, i);
    // At most one leaf left, no snapshot or no depth left: run the iterations, recorded.
    let one_leaf = cmp(&mut em, CondCode::Le, n, len);
    let none_left = cmp(&mut em, CondCode::Lt, snapshots, one);
    let too_deep = cmp(&mut em, CondCode::Lt, depth, one);
    let stop = em.emit(Opcode::Select, &[none_left, none_left, too_deep], Imm::None);
    let direct = em.emit(Opcode::Select, &[one_leaf, one_leaf, stop], Imm::None);
    em.func().block_mut(entry).term = Some(Terminator::Branch {
        cond: direct,
        then_dest: BlockCall { block: leaf_block, args: smallvec::smallvec![] },
        else_dest: BlockCall { block: split, args: smallvec::smallvec![] },
    });
    em.switch_to(leaf_block);
    let direct_args: Vec<Value> = params.clone();
    let results = em.emit_multi(Opcode::Call, &direct_args, Imm::Callee(Callee::Func(steps_id)), &steps.returns);
    em.func().block_mut(leaf_block).term = Some(Terminator::Return(results));
    // leaves = ceil(n / L); find the least r with beta = C(c + r, r) >= leaves.
    em.switch_to(split);
    let len_less_one = em.bin(Opcode::ISub, len, one);
    let rounded = em.bin(Opcode::IAdd, n, len_less_one);
    let leaves = em.bin(Opcode::IDiv, rounded, len);
    em.func().block_mut(split).term =
        Some(Terminator::Jump(BlockCall { block: search, args: smallvec::smallvec![zero, one] }));
    let r = em.func().add_block_param(search, Type::I64, Some("r"));
    let beta = em.func().add_block_param(search, Type::I64, Some("beta"));
    em.switch_to(search);
    let enough = cmp(&mut em, CondCode::Ge, beta, leaves);
    em.func().block_mut(search).term = Some(Terminator::Branch {
        cond: enough,
        then_dest: BlockCall { block: place, args: smallvec::smallvec![] },
        else_dest: BlockCall { block: grow, args: smallvec::smallvec![] },
    });
    // C(c + r + 1, r + 1) = C(c + r, r) (c + r + 1) / (r + 1), exact at every step.
    em.switch_to(grow);
    let next_r = em.bin(Opcode::IAdd, r, one);
    let factor = em.bin(Opcode::IAdd, snapshots, next_r);
    let product = em.bin(Opcode::IMul, beta, factor);
    let next_beta = em.bin(Opcode::IDiv, product, next_r);
    em.func().block_mut(grow).term =
        Some(Terminator::Jump(BlockCall { block: search, args: smallvec::smallvec![next_r, next_beta] }));
    // The second part takes C(c - 1 + r, r) = C(c + r, r) c / (c + r) leaves, the first the rest
    // (at least one).
    em.switch_to(place);
    let total = em.bin(Opcode::IAdd, snapshots, r);
    let scaled = em.bin(Opcode::IMul, beta, snapshots);
    let second = em.bin(Opcode::IDiv, scaled, total);
    let first = em.bin(Opcode::ISub, leaves, second);
    let too_few = cmp(&mut em, CondCode::Lt, first, one);
    let first = em.emit(Opcode::Select, &[too_few, one, first], Imm::None);
    let offset = em.bin(Opcode::IMul, first, len);
    let middle = em.bin(Opcode::IAdd, i, offset);
    let me_callee = Imm::Callee(Callee::Func(me));
    let deeper = em.bin(Opcode::ISub, depth, one);
    let mut first_args: Vec<Value> = carried.to_vec();
    first_args.extend([middle, snapshots, deeper]);
    let halfway = em.emit_multi(Opcode::Call, &first_args, me_callee, &steps.returns);
    // The second part starts from the first's results: its header parameters, and the float
    // invariants as they were carried through (see `outline`).
    let mut floats = halfway[header_params..].iter().copied();
    let mut second_args: Vec<Value> = halfway[..header_params].to_vec();
    for &v in &carried[header_params..] {
        second_args.push(if em.ty(v) == Type::F64 { floats.next().unwrap_or(v) } else { v });
    }
    let fewer = em.bin(Opcode::ISub, snapshots, one);
    second_args.extend([end, fewer, deeper]);
    let results = em.emit_multi(Opcode::Call, &second_args, me_callee, &steps.returns);
    em.func().block_mut(place).term = Some(Terminator::Return(results));
    g.canonicalize();
    g
}
