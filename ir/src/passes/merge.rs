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
            let term = target
                .term
                .replace(Terminator::Jump(crate::function::BlockCall { block: c, args: smallvec::smallvec![] }));
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

/// Jump straight past empty blocks: an edge into a block `E` that has no instructions and
/// ends in `jump T(args)` goes to `T` instead, with `E`'s parameters in `args` replaced by what
/// the edge passed (when `E`'s parameters are used nowhere else). A loop header that left
/// through an empty exit block then exits straight into the next loop's header.
///
/// ```
/// use jitdiff_ir::{parse_module, passes, print_module};
/// let mut m = parse_module("func @f(c: bool, x: f64) -> f64 {\nentry:\n    br c, a(x), b\na(y: f64):\n    jump b\nb:\n    ret x\n}\n").unwrap();
/// passes::thread_jumps(&mut m.functions[0]);
/// assert_eq!(print_module(&m), "func @f(c: bool, x: f64) -> f64 {\nentry:\n    br c, b, b\nb:\n    ret x\n}\n");
/// ```
pub fn thread_jumps(func: &mut Function) {
    if func.blocks.is_empty() {
        return;
    }
    // Uses of each value outside the terminator of the block defining it as a parameter.
    let mut used_elsewhere = vec![false; func.values.len()];
    let param_of: Vec<Option<usize>> = {
        let mut owner = vec![None; func.values.len()];
        for (b, block) in func.blocks.iter().enumerate() {
            for &p in &block.params {
                if let Some(slot) = owner.get_mut(p.index()) {
                    *slot = Some(b);
                }
            }
        }
        owner
    };
    for (b, block) in func.blocks.iter().enumerate() {
        let mut mark = |v: crate::function::Value, own_term: bool| {
            if let Some(slot) = used_elsewhere.get_mut(v.index())
                && !(own_term && param_of[v.index()] == Some(b))
            {
                *slot = true;
            }
        };
        block.insts.iter().flat_map(|i| &i.args).for_each(|&v| mark(v, false));
        if let Some(t) = &block.term {
            t.uses().into_iter().for_each(|v| mark(v, true));
        }
    }
    let n = func.blocks.len();
    // An empty block's destination with its parameters' positions in the jump's arguments.
    let forward: Vec<Option<crate::function::BlockCall>> = (0..n)
        .map(|e| {
            let block = &func.blocks[e];
            match &block.term {
                Some(Terminator::Jump(call))
                    if e != 0
                        && block.insts.is_empty()
                        && call.block.index() != e
                        && call.block.index() < n
                        && block.params.iter().all(|p| !used_elsewhere.get(p.index()).copied().unwrap_or(true)) =>
                {
                    Some(call.clone())
                }
                _ => None,
            }
        })
        .collect();
    let mut changed = false;
    for b in 0..n {
        let Some(mut term) = func.blocks[b].term.take() else { continue };
        for call in term.successors_mut() {
            // Follow a chain of empty blocks (at most n steps: a cycle of them never ends).
            for _ in 0..n {
                let e = call.block.index();
                let Some(next) = forward.get(e).cloned().flatten() else { break };
                let params = &func.blocks[e].params;
                let args =
                    next.args.iter().map(|a| params.iter().position(|p| p == a).map_or(*a, |k| call.args[k])).collect();
                *call = crate::function::BlockCall { block: next.block, args };
                changed = true;
            }
        }
        func.blocks[b].term = Some(term);
    }
    if changed {
        remove_unreachable_blocks(func);
        func.canonicalize();
    }
}
