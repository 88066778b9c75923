//! Small leaf functions inlined into their callers before lowering. A call costs more than a
//! short body: arguments and results pass through registers and memory by the calling
//! convention, the caller spills its live floats around it (every XMM register is
//! caller-saved) and checks a status. The pendulum's primal, four calls of its acceleration per
//! step, took 53.9 µs called and 40.2 µs inlined (rustc: 41.5 µs).
//!
//! Only what cannot change a run's reports is inlined, so native code still fails exactly where
//! the interpreter does, at the same function, block and instruction:
//! - the callee is a *leaf*: short, and no instruction of it can fail (no access, division,
//!   call, tape operation or allocation);
//! - no instruction after the call in its block can fail, other than calls of leaves — those
//!   instructions move to the continuation block the inlining creates, where their sites would
//!   change;
//! - the caller cannot run at the call-depth limit (`callgraph::needs_depth_check`), where the
//!   interpreter would report the call itself;
//! - the caller stays below the size at which the whole module would switch to the single-pass
//!   register allocator.

use crate::lower::MAX_CALL_DEPTH;
use crate::options::RegAlloc;
use jitdiff_ir::passes::{CallSite, inline_sites};
use jitdiff_ir::{Callee, Function, Imm, InstData, Module, Opcode};
use std::borrow::Cow;

/// The most instructions (and terminators) of a callee inlined this way.
const LEAF_LIMIT: usize = 128;

/// `module` with its leaf calls inlined where that is invisible (see the module docs), or
/// `module` itself when there is none.
pub(crate) fn inline_leaves(module: &Module) -> Cow<'_, Module> {
    let leaves: Vec<bool> = module.functions.iter().map(is_leaf).collect();
    if !leaves.iter().any(|&l| l) {
        return Cow::Borrowed(module);
    }
    let deep = crate::callgraph::needs_depth_check(module, MAX_CALL_DEPTH);
    let wanted = |site: CallSite<'_>| {
        !deep[site.caller_id.index()] && invisible_at(&site.caller.block(site.block).insts, site.inst, &leaves)
    };
    // Copy the module only when some call qualifies.
    let any = module.functions.iter().enumerate().any(|(f, func)| {
        !deep[f] && func.blocks.iter().any(|b| (0..b.insts.len()).any(|k| invisible_at(&b.insts, k, &leaves)))
    });
    if !any {
        return Cow::Borrowed(module);
    }
    let mut inlined = module.clone();
    inline_sites(&mut inlined, wanted, RegAlloc::AUTO_SINGLE_PASS_THRESHOLD);
    Cow::Owned(inlined)
}

/// Short, and no instruction can fail or touch the tape.
fn is_leaf(f: &Function) -> bool {
    let size: usize = f.blocks.iter().map(|b| b.insts.len() + 1).sum();
    size <= LEAF_LIMIT
        && f.blocks.iter().flat_map(|b| &b.insts).all(|i| !i.op.can_fail() && !matches!(i.op, Opcode::TSplit))
}

/// Is `insts[k]` a call of a leaf after which nothing in its block can fail?
fn invisible_at(insts: &[InstData], k: usize, leaves: &[bool]) -> bool {
    leaf_call(&insts[k], leaves) && insts[k + 1..].iter().all(|later| cannot_fail(later, leaves))
}

/// Is `inst` a call of a leaf?
fn leaf_call(inst: &InstData, leaves: &[bool]) -> bool {
    matches!((inst.op, inst.imm), (Opcode::Call, Imm::Callee(Callee::Func(g))) if leaves.get(g.index()) == Some(&true))
}

/// Can `inst` not fail: not a failing kind, or a call of a leaf.
fn cannot_fail(inst: &InstData, leaves: &[bool]) -> bool {
    !inst.op.can_fail() || leaf_call(inst, leaves)
}
