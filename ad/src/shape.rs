//! The control-flow shape of every source function, analysed once before any derivation (not
//! again for each activity pattern a callee is derived for): the control-flow graph, the
//! incoming edges of every block, the returning blocks and the counted loops.

use super::loops::Loops;
use jitdiff_ir::analysis::ControlFlow;
use jitdiff_ir::{Block, Function, Module, Terminator};
use rustc_hash::FxHashMap as HashMap;

/// One function's shape.
pub(crate) struct Shape {
    pub cfg: ControlFlow,
    /// Every reachable block's incoming edges `(predecessor, successor slot)`, in reverse
    /// post-order of the predecessors.
    pub incoming: HashMap<Block, Vec<(Block, usize)>>,
    /// The reachable blocks that return, in reverse post-order.
    pub returns: Vec<Block>,
    /// Nothing jumps back to the entry block (so what it computes is computed once per call).
    pub entry_runs_once: bool,
    /// The counted loops.
    pub loops: Loops,
}

impl Shape {
    /// Analyse one function.
    pub fn analyse(func: &Function) -> Shape {
        let cfg = ControlFlow::new(func);
        let mut incoming: HashMap<Block, Vec<(Block, usize)>> = HashMap::default();
        let mut returns = vec![];
        for &b in cfg.reverse_post_order() {
            match &func.block(b).term {
                Some(Terminator::Return(_)) => returns.push(b),
                Some(t) => {
                    for (slot, call) in t.successors().into_iter().enumerate() {
                        incoming.entry(call.block).or_default().push((b, slot));
                    }
                }
                None => {}
            }
        }
        let entry_runs_once = !incoming.contains_key(&Block::ENTRY);
        let loops = Loops::analyse(func, &cfg, &incoming, &returns);
        Shape { cfg, incoming, returns, entry_runs_once, loops }
    }

    /// The shapes of every function of `module`, by function index.
    pub fn of_module(module: &Module) -> Vec<Shape> {
        module.functions.iter().map(Shape::analyse).collect()
    }
}
