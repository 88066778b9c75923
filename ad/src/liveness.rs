//! Liveness of active values at block boundaries, for the reverse transform: the adjoints a
//! reversed block must carry are those of the active values live at the end of the forward block.

use super::activity::Activity;
use jitdiff_ir::analysis::ControlFlow;
use jitdiff_ir::{Block, Function, Value};
use std::collections::BTreeSet;

/// Per block: the active values live at the end of its instructions (live-out, plus the values
/// its terminator reads), in a deterministic order.
pub struct Liveness {
    at_end: Vec<Vec<Value>>,
}

impl Liveness {
    /// Standard backward data flow over SSA with block parameters, restricted to active values.
    pub fn analyse(func: &Function, cfg: &ControlFlow, activity: &Activity) -> Liveness {
        let n = func.blocks.len();
        // Only f64 values carry adjoints; active slices have differential slices instead.
        let carries = |v: &Value| activity.is_active(*v) && func.ty(*v) == jitdiff_ir::Type::F64;
        let mut live_in: Vec<BTreeSet<Value>> = vec![BTreeSet::new(); n];
        let mut at_end: Vec<BTreeSet<Value>> = vec![BTreeSet::new(); n];
        let mut changed = true;
        while changed {
            changed = false;
            for &b in cfg.reverse_post_order().iter().rev() {
                let block = func.block(b);
                let mut live: BTreeSet<Value> = BTreeSet::new();
                for &s in cfg.successors(b) {
                    live.extend(live_in[s.index()].iter().copied());
                }
                if let Some(term) = &block.term {
                    live.extend(term.uses().into_iter().filter(carries));
                }
                if live != at_end[b.index()] {
                    at_end[b.index()] = live.clone();
                    changed = true;
                }
                for inst in block.insts.iter().rev() {
                    for r in &inst.results {
                        live.remove(r);
                    }
                    live.extend(inst.args.iter().copied().filter(carries));
                }
                for p in &block.params {
                    live.remove(p);
                }
                if live != live_in[b.index()] {
                    live_in[b.index()] = live;
                    changed = true;
                }
            }
        }
        Liveness { at_end: at_end.into_iter().map(|s| s.into_iter().collect()).collect() }
    }

    /// Active values live at the end of block `b`'s instructions.
    pub fn at_end(&self, b: Block) -> &[Value] {
        &self.at_end[b.index()]
    }
}
