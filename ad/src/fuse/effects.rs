//! What the blocks of a loop do besides computing: calls, tape traffic and accesses to
//! mutable slices, and whether those accesses are only accumulations, which commute.

use jitdiff_ir::analysis::LoopBody;
use jitdiff_ir::{Function, Imm, Opcode, Type, Value};
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

/// What the blocks `body` do besides computing.
#[derive(Default)]
pub(super) struct Effects {
    pub calls: bool,
    pub pushes: bool,
    pub pops: bool,
    /// The mutable slices loaded from or stored to.
    pub mutable: Vec<Value>,
    /// Every access to a mutable slice is part of an accumulation `d[j] = d[j] + a` (or
    /// `- a`) whose loaded value nothing else uses, or a load nothing uses.
    pub accumulates_only: bool,
}

/// `None` when the blocks split the tape, allocate or use vector memory access.
pub(super) fn effects_of(func: &Function, body: &LoopBody) -> Option<Effects> {
    let mut uses: HashMap<Value, usize> = HashMap::default();
    for block in &func.blocks {
        for a in block.insts.iter().flat_map(|i| i.args.iter().copied()).chain(block.term.iter().flat_map(|t| t.uses()))
        {
            *uses.entry(a).or_default() += 1;
        }
    }
    let count = |v: Value| uses.get(&v).copied().unwrap_or(0);
    let mut effects = Effects { accumulates_only: true, ..Effects::default() };
    for (b, block) in func.blocks.iter().enumerate() {
        if !body[b] {
            continue;
        }
        let mut accumulated: HashSet<usize> = HashSet::default();
        for (k, inst) in block.insts.iter().enumerate() {
            match inst.op {
                Opcode::Call => effects.calls = true,
                Opcode::TPush => effects.pushes = true,
                Opcode::TPop => effects.pops = true,
                Opcode::TSplit | Opcode::TRejoin | Opcode::Alloc | Opcode::VLoad | Opcode::VStore => return None,
                Opcode::Load | Opcode::Store if func.ty(inst.args[0]) == Type::SliceMut => {
                    if !effects.mutable.contains(&inst.args[0]) {
                        effects.mutable.push(inst.args[0]);
                    }
                    if inst.op == Opcode::Store {
                        match accumulation(block, k, &count) {
                            Some(load) => {
                                accumulated.insert(load);
                            }
                            None => effects.accumulates_only = false,
                        }
                    }
                }
                _ => {}
            }
        }
        // A load of a mutable slice is either an accumulation's or unused.
        for (k, inst) in block.insts.iter().enumerate() {
            let mutable_load = inst.op == Opcode::Load && func.ty(inst.args[0]) == Type::SliceMut;
            if mutable_load && !accumulated.contains(&k) && count(inst.results[0]) != 0 {
                effects.accumulates_only = false;
            }
        }
    }
    Some(effects)
}

/// The store at `store` in `block` ends `old = load d, j; new = fadd old, a (or fsub);
/// store d, j, new` with `old` and `new` used once and no other access to `d` in between: the
/// position of the load.
pub(super) fn accumulation(
    block: &jitdiff_ir::BlockData,
    store: usize,
    count: &impl Fn(Value) -> usize,
) -> Option<usize> {
    let insts = &block.insts;
    let [slice, index, new] = insts[store].args[..] else { return None };
    let op_at = insts[..store].iter().rposition(|i| i.results.first() == Some(&new))?;
    let add = &insts[op_at];
    if !matches!(add.op, Opcode::FAdd | Opcode::FSub) || count(new) != 1 {
        return None;
    }
    let old = add.args[0];
    let load = insts[..op_at].iter().rposition(|i| i.results.first() == Some(&old))?;
    let load_data = &insts[load];
    let between = insts[load + 1..store].iter().any(|i| i.args.first() == Some(&slice));
    (load_data.op == Opcode::Load
        && load_data.args[..] == [slice, index]
        && count(old) == 1
        && add.args[1] != old
        && !between)
        .then_some(load)
}

/// Is there a `tpop` outside the blocks `body`?
pub(super) fn pops_outside(func: &Function, body: &LoopBody) -> bool {
    func.blocks.iter().enumerate().any(|(b, block)| !body[b] && block.insts.iter().any(|i| i.op == Opcode::TPop))
}

/// After fusion an iteration may push its record and pop it again in the same block (the
/// record of a loop without inner loops): where that accounts for every pop of the function,
/// each pop takes the pushed value and the function uses no tape at all. A block's pushes and
/// pops pair up as a stack; one pop that finds no push before it in its block, a type that
/// differs, or a call (whose tape use is not visible here) leaves the function as it is.
pub(super) fn forward_iteration_tape(func: &mut Function) -> bool {
    let mut replace: HashMap<Value, Value> = HashMap::default();
    let mut any = false;
    for block in &func.blocks {
        let mut pushed: Vec<Value> = vec![];
        for inst in &block.insts {
            match (inst.op, inst.imm) {
                (Opcode::TPush, _) => pushed.push(inst.args[0]),
                (Opcode::TPop, Imm::Type(read_as)) => match pushed.pop() {
                    Some(v) if func.ty(v) == read_as => {
                        replace.insert(inst.results[0], v);
                    }
                    _ => return false,
                },
                (Opcode::TPop | Opcode::Call | Opcode::TSplit | Opcode::TRejoin, _) => return false,
                _ => {}
            }
            any |= inst.op == Opcode::TPush;
        }
    }
    if !any {
        return false;
    }
    // No pop is left, so no push is read: drop them all.
    for block in &mut func.blocks {
        block.insts.retain(|i| !matches!(i.op, Opcode::TPush | Opcode::TPop));
    }
    super::rename_uses(func, |v| replace.get(&v).copied().unwrap_or(v));
    func.canonicalize();
    true
}
