//! Merging straight-line chains of blocks.

use super::{Aliases, dce::remove_unreachable_blocks};
use crate::analysis::ControlFlow;
use crate::function::{Block, Function, Terminator};

/// Merge every block `C` into its only predecessor `B` when `B` ends in `jump C(args)`: `C`'s
/// parameters become `args`, its instructions and terminator move to the end of `B`, and `C`
/// goes. Chains merge whole.
///
/// Nothing is computed differently: the same instructions run in the same order. What changes
/// is how many blocks there are — a reversed chain of blocks is mostly blocks that only jump
/// on, and every block boundary costs the register allocator (values live across it) and
/// Cranelift's block bookkeeping, which made long block chains compile in quadratic time.
///
/// ```
/// use jitdiff_ir::{parse_module, passes, print_module};
/// let mut m = parse_module("func @f(x: f64) -> f64 {\nentry:\n    jump a(x)\na(y: f64):\n    z = fmul y, y\n    jump b\nb:\n    ret z\n}\n").unwrap();
/// passes::merge_blocks(&mut m.functions[0]);
/// assert_eq!(print_module(&m), "func @f(x: f64) -> f64 {\nentry:\n    z = fmul x, x\n    ret z\n}\n");
/// ```
pub fn merge_blocks(func: &mut Function) {
    if func.blocks.is_empty() {
        return;
    }
    let cfg = ControlFlow::new(func);
    let n = func.blocks.len();
    let single_pred: Vec<bool> = (0..n).map(|c| cfg.predecessors(Block(c as u32)).len() == 1).collect();
    let mut aliases = Aliases::new(func);
    let mut merged_any = false;
    for &b in cfg.reverse_post_order() {
        // `b` may itself have been merged into its predecessor (its block is then empty and
        // unreachable); its own chain was merged there.
        while let Some(Terminator::Jump(call)) = &func.blocks[b.index()].term {
            let c = call.block;
            let mergeable = c != b
                && c != Block::ENTRY
                && c.index() < n
                && single_pred[c.index()]
                && cfg.is_reachable(c)
                && func.blocks[c.index()].params.len() == call.args.len();
            if !mergeable {
                break;
            }
            let args = call.args.clone();
            let target = &mut func.blocks[c.index()];
            let params = std::mem::take(&mut target.params);
            let insts = std::mem::take(&mut target.insts);
            // The merged block keeps a terminator that jumps to itself, so that it stays a
            // well-formed (unreachable) block until it is removed below.
            let term = target.term.replace(Terminator::Jump(crate::function::BlockCall { block: c, args: vec![] }));
            for (p, a) in params.into_iter().zip(args) {
                aliases.set(p, a);
            }
            let block = &mut func.blocks[b.index()];
            block.insts.extend(insts);
            block.term = term;
            merged_any = true;
        }
    }
    if merged_any {
        aliases.apply(func);
        remove_unreachable_blocks(func);
        func.canonicalize();
    }
}
