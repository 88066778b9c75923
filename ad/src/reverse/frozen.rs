//! Local arrays *frozen* at a call: an entry-block `alloc` that nothing writes after the call.
//!
//! A callee reading a slice it cannot write (`slice` parameter) must record every value it
//! loads from it on the tape, unless the slice is *stable*: unchanged from the callee's forward
//! run until its pullback runs, so that the pullback can load again. The caller's own `slice`
//! parameters are stable. So is a local array of the caller that no instruction after the call
//! writes (no `store`, no call passing it as `mslice`) — provided the caller's pullback has it:
//! `f_fwd` pushes the array's entries once, just before returning (its contents then are its
//! contents at the call), and `f_pullback` pops them into a fresh array of its own first thing,
//! before any callee pullback runs.
//!
//! That costs one tape entry per array entry and call of `f`, against one per load for every
//! callee call; it pays when the call repeats, so only calls inside a loop of `f` count. GMM's
//! `exp(q)` table (K×d entries, filled once, read by 2·d·n·K loads of `main_term`) is the case in
//! point.

use jitdiff_ir::analysis::ControlFlow;
use jitdiff_ir::{Block, BlockCall, Callee, CondCode, Function, Imm, Module, Opcode, Terminator, Type, Value};
use jitdiff_rules::{BlockEmitter, Emit};
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

/// The local arrays frozen at each call site of one source function.
#[derive(Debug, Default)]
pub(super) struct FrozenArrays {
    /// `(block, instruction index)` of a call inside a loop → the entry-block arrays it receives
    /// that nothing writes from this call on.
    at_call: HashMap<(Block, usize), Vec<Value>>,
}

impl FrozenArrays {
    /// Find, for every call of `f` inside a loop, the local arrays frozen there.
    pub fn analyse(module: &Module, f: &Function, cfg: &ControlFlow) -> FrozenArrays {
        let arrays: HashSet<Value> = match f.blocks.first() {
            Some(entry) => entry.insts.iter().filter(|i| i.op == Opcode::Alloc).map(|i| i.results[0]).collect(),
            None => HashSet::default(),
        };
        if arrays.is_empty() {
            return FrozenArrays::default();
        }
        // Every write of an array: stores, and calls that may write it (`mslice` parameters).
        let mut writes: Vec<(Block, usize, Value)> = vec![];
        for (b, block) in f.block_ids().zip(&f.blocks) {
            for (index, inst) in block.insts.iter().enumerate() {
                let written: Vec<Value> = match (inst.op, inst.imm) {
                    (Opcode::Store | Opcode::VStore, _) => inst.args.first().copied().into_iter().collect(),
                    (Opcode::Call, Imm::Callee(callee)) => writable_args(module, callee, &inst.args),
                    _ => vec![],
                };
                writes.extend(written.into_iter().filter(|a| arrays.contains(a)).map(|a| (b, index, a)));
            }
        }
        let mut at_call = HashMap::default();
        for (b, block) in f.block_ids().zip(&f.blocks) {
            let calls: Vec<(usize, Callee)> = block
                .insts
                .iter()
                .enumerate()
                .filter_map(|(k, i)| match (i.op, i.imm) {
                    (Opcode::Call, Imm::Callee(callee)) if i.args.iter().any(|a| arrays.contains(a)) => {
                        Some((k, callee))
                    }
                    _ => None,
                })
                .collect();
            if calls.is_empty() || !cfg.is_reachable(b) {
                continue;
            }
            let after = reachable_after(cfg, b);
            if !after.contains(&b) {
                continue; // not in a loop: runs once per call of `f`
            }
            for (index, callee) in calls {
                let Some((params, _)) = module.callee_signature(callee) else { continue };
                let inst = &block.insts[index];
                // In a loop, every write of the block comes after the call on some path.
                let frozen: Vec<Value> = inst
                    .args
                    .iter()
                    .zip(&params)
                    .filter(|&(a, &t)| t == Type::Slice && arrays.contains(a))
                    .map(|(&a, _)| a)
                    .filter(|&a| !writes.iter().any(|&(wb, _, w)| w == a && after.contains(&wb)))
                    .collect();
                if !frozen.is_empty() {
                    at_call.insert((b, index), frozen);
                }
            }
        }
        FrozenArrays { at_call }
    }

    /// The arrays frozen at the call at `(block, index)` (empty for any other instruction).
    pub fn at(&self, block: Block, index: usize) -> &[Value] {
        self.at_call.get(&(block, index)).map_or(&[], Vec::as_slice)
    }
}

/// The arguments a call may write: those passed as `mslice`.
fn writable_args(module: &Module, callee: Callee, args: &[Value]) -> Vec<Value> {
    match module.callee_signature(callee) {
        Some((params, _)) => args.iter().zip(params).filter(|(_, t)| *t == Type::SliceMut).map(|(&a, _)| a).collect(),
        // An unknown callee could do anything (verification rejects it before this).
        None => args.to_vec(),
    }
}

/// The blocks reachable from `b` by at least one edge (`b` itself only if it is in a loop).
fn reachable_after(cfg: &ControlFlow, b: Block) -> HashSet<Block> {
    let mut seen = HashSet::default();
    let mut stack: Vec<Block> = cfg.successors(b).to_vec();
    while let Some(next) = stack.pop() {
        if seen.insert(next) {
            stack.extend(cfg.successors(next).iter().copied());
        }
    }
    seen
}

/// In `f_fwd`: after the instructions of `at`, push every entry of `array` in order (its
/// length is pushed by the caller, after all arrays). Returns the block the code continues in
/// (it has no terminator yet).
pub(super) fn push_array(func: &mut Function, at: Block, array: Value) -> Block {
    let name = func.value_label(array);
    let head = func.add_block(&format!("freeze_{name}_head"));
    let index = func.add_block_param(head, Type::I64, Some(&format!("freeze_{name}_index")));
    let body = func.add_block(&format!("freeze_{name}_body"));
    let done = func.add_block(&format!("freeze_{name}_done"));
    let mut em = BlockEmitter::new(func, at);
    let len = em.emit(Opcode::Len, &[array], Imm::None);
    let zero = em.emit(Opcode::IConst, &[], Imm::I64(0));
    em.func().block_mut(at).term = Some(Terminator::Jump(BlockCall { block: head, args: smallvec::smallvec![zero] }));
    em.switch_to(head);
    let more = em.emit(Opcode::ICmp, &[index, len], Imm::Cond(CondCode::Lt));
    em.func().block_mut(head).term = Some(Terminator::Branch {
        cond: more,
        then_dest: BlockCall { block: body, args: smallvec::smallvec![] },
        else_dest: BlockCall { block: done, args: smallvec::smallvec![] },
    });
    em.switch_to(body);
    let entry = em.emit(Opcode::Load, &[array, index], Imm::None);
    em.func().set_value_name(entry, &format!("frozen_{name}"));
    em.emit_multi(Opcode::TPush, &[entry], Imm::None, &[]);
    let one = em.emit(Opcode::IConst, &[], Imm::I64(1));
    let next = em.emit(Opcode::IAdd, &[index, one], Imm::None);
    em.func().block_mut(body).term = Some(Terminator::Jump(BlockCall { block: head, args: smallvec::smallvec![next] }));
    done
}

/// In `f_pullback`: after the instructions of `at`, pop the entries [`push_array`] pushed into
/// `array` (allocated by the caller in the entry block, `len` entries long), last first.
/// Returns the block the code continues in (no terminator yet).
pub(super) fn pop_array(func: &mut Function, at: Block, array: Value, len: Value) -> Block {
    let name = func.value_label(array);
    let head = func.add_block(&format!("thaw_{name}_head"));
    let remaining = func.add_block_param(head, Type::I64, Some(&format!("thaw_{name}_remaining")));
    let body = func.add_block(&format!("thaw_{name}_body"));
    let done = func.add_block(&format!("thaw_{name}_done"));
    func.block_mut(at).term = Some(Terminator::Jump(BlockCall { block: head, args: smallvec::smallvec![len] }));
    let mut em = BlockEmitter::new(func, head);
    let zero = em.emit(Opcode::IConst, &[], Imm::I64(0));
    let finished = em.emit(Opcode::ICmp, &[remaining, zero], Imm::Cond(CondCode::Eq));
    em.func().block_mut(head).term = Some(Terminator::Branch {
        cond: finished,
        then_dest: BlockCall { block: done, args: smallvec::smallvec![] },
        else_dest: BlockCall { block: body, args: smallvec::smallvec![] },
    });
    em.switch_to(body);
    let one = em.emit(Opcode::IConst, &[], Imm::I64(1));
    let index = em.emit(Opcode::ISub, &[remaining, one], Imm::None);
    let entry = em.emit(Opcode::TPop, &[], Imm::Type(Type::F64));
    em.emit_multi(Opcode::Store, &[array, index, entry], Imm::None, &[]);
    em.func().block_mut(body).term =
        Some(Terminator::Jump(BlockCall { block: head, args: smallvec::smallvec![index] }));
    done
}
