//! Where a reversed counted loop's trip count and carried values live in `f_pullback`.
//!
//! The general scheme passes them as block parameters of every reversed block of the loop: at
//! nest depth `d` each reversed block carries the state of `d` loops, so a nest of depth `d`
//! costs `O(d²)` parameters (depth 400: a quarter of a million) that `remove_redundant_params`
//! then removes again. For a loop with an [`ExitTest`](crate::loops::ExitTest) (its header is
//! the only way out) whose latch's one edge is the back edge, the reversed loop has a single
//! entry, the reversed header, and the reversed header's back edge into the reversed latch is
//! the only way into the rest of the reversed body. So:
//!
//! - the reversed header keeps the parameters (entry and back edge meet there);
//! - the reversed latch takes the header's values: the decremented trip count, the carried
//!   values as the header received them (the latch's restore then steps the recurrences back);
//! - every other reversed block of the loop takes the decremented trip count and the latch's
//!   stepped carried values, which dominate it.
//!
//! Those are exactly the values the parameters would have received on every edge, so the
//! pullback computes the same; only the parameters are never made.

use crate::loops::Loops;
use jitdiff_ir::analysis::ControlFlow;
use jitdiff_ir::{Block, Function, Value};
use rustc_hash::FxHashSet as HashSet;

/// Which reversed blocks carry which loops' state as parameters, and the values the others
/// take, filled in as the pullback's blocks are built (in [`build_order`](Self::build_order)).
pub(super) struct LoopStatePlan {
    /// Per counted loop: does it take the dominating values instead of parameters?
    shared: Vec<bool>,
    headers: Vec<Block>,
    latches: Vec<Block>,
    /// Per shared loop, once its reversed header is built: the decremented trip count and the
    /// carried values as the header received them.
    at_header: Vec<Option<(Value, Vec<Value>)>>,
    /// Per shared loop, once its reversed latch is built: the carried values stepped back.
    at_latch: Vec<Option<Vec<Value>>>,
}

impl LoopStatePlan {
    /// Decide for each counted loop of `source`; `returns` are its returning blocks.
    pub fn new(source: &Function, cfg: &ControlFlow, loops: &Loops, returns: &[Block]) -> LoopStatePlan {
        // A reversed loop whose header reaches no return never runs: keep the general scheme,
        // so no value is used in a block its definition does not dominate.
        let mut reaches_return: HashSet<Block> = returns.iter().copied().collect();
        let mut work: Vec<Block> = returns.to_vec();
        while let Some(b) = work.pop() {
            for &p in cfg.predecessors(b) {
                if reaches_return.insert(p) {
                    work.push(p);
                }
            }
        }
        let edges = |b: Block| source.block(b).term.as_ref().map_or(0, |t| t.successors().len());
        let shared = loops
            .loops
            .iter()
            .map(|l| {
                let latch = l.back_edge.0;
                l.exit_test.is_some() && reaches_return.contains(&l.header) && (latch == l.header || edges(latch) == 1)
            })
            .collect();
        LoopStatePlan {
            shared,
            headers: loops.loops.iter().map(|l| l.header).collect(),
            latches: loops.loops.iter().map(|l| l.back_edge.0).collect(),
            at_header: vec![None; loops.loops.len()],
            at_latch: vec![None; loops.loops.len()],
        }
    }

    /// Does the reversed block of `b` (inside loop `k`) receive loop `k`'s state as parameters?
    pub fn has_params(&self, b: Block, k: usize) -> bool {
        !self.shared[k] || self.headers[k] == b
    }

    /// The blocks of `rpo` in an order that builds a shared loop's reversed header and latch
    /// before the reversed blocks taking their values (otherwise in `rpo`'s order).
    pub fn build_order(&self, rpo: &[Block], loops: &Loops) -> Vec<Block> {
        let mut done: HashSet<Block> = HashSet::default();
        let mut started: HashSet<Block> = HashSet::default();
        let mut order = Vec::with_capacity(rpo.len());
        // An explicit stack: a block's dependencies are the headers and latches of the loops
        // around it, as deep as the nest.
        for &root in rpo {
            let mut stack = vec![(root, false)];
            while let Some((b, ready)) = stack.pop() {
                if done.contains(&b) {
                    continue;
                }
                if ready {
                    done.insert(b);
                    order.push(b);
                    continue;
                }
                if !started.insert(b) {
                    continue;
                }
                stack.push((b, true));
                for k in loops.containing(b).into_iter().rev() {
                    if self.has_params(b, k) {
                        continue;
                    }
                    if b != self.latches[k] && !done.contains(&self.latches[k]) {
                        stack.push((self.latches[k], false));
                    }
                    if !done.contains(&self.headers[k]) {
                        stack.push((self.headers[k], false));
                    }
                }
            }
        }
        order
    }

    /// Loop `k`'s trip count and carried values in the reversed block of `b`, which has no
    /// parameters for it.
    pub fn values(&self, b: Block, k: usize) -> (Value, Vec<Value>) {
        let (trip, received) = self.at_header[k].clone().expect("the reversed header is built first");
        if b == self.latches[k] {
            return (trip, received);
        }
        (trip, self.at_latch[k].clone().expect("the reversed latch is built first"))
    }

    /// Record what the reversed header of shared loop `k` passes to its reversed latch.
    pub fn set_header_values(&mut self, k: usize, trip: Value, carried: Vec<Value>) {
        if self.shared[k] {
            self.at_header[k] = Some((trip, carried));
        }
    }

    /// Record the carried values the reversed latch of shared loop `k` passes on (if `b` is
    /// that latch).
    pub fn set_latch_values(&mut self, b: Block, k: usize, carried: impl FnOnce() -> Vec<Value>) {
        if self.shared[k] && self.latches[k] == b && self.headers[k] != b {
            self.at_latch[k] = Some(carried());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shape::Shape;
    use jitdiff_ir::parse_module;

    /// Three nested counted loops, each stepping `i < n`, the latch of each the block after its
    /// inner loop.
    const NEST: &str = "func @f(x: f64, n: i64) -> f64 {
entry:
    zero = iconst 0
    one = iconst 1
    jump h0(zero, x)
h0(i0: i64, a0: f64):
    m0 = icmp lt i0, n
    br m0, e0, x0
e0:
    jump h1(zero, a0)
h1(i1: i64, a1: f64):
    m1 = icmp lt i1, n
    br m1, e1, l0(a1)
e1:
    jump h2(zero, a1)
h2(i2: i64, a2: f64):
    m2 = icmp lt i2, n
    br m2, e2, l1(a2)
e2:
    b2 = fmul a2, x
    j2 = iadd i2, one
    jump h2(j2, b2)
l1(r1: f64):
    j1 = iadd i1, one
    jump h1(j1, r1)
l0(r0: f64):
    j0 = iadd i0, one
    jump h0(j0, r0)
x0:
    ret a0
}
";

    #[test]
    fn only_a_loops_own_reversed_header_receives_its_state() {
        let module = parse_module(NEST).expect("parses");
        let func = &module.functions[0];
        let shape = Shape::analyse(func);
        let plan = LoopStatePlan::new(func, &shape.cfg, &shape.loops, &shape.returns);
        let block = |name: &str| func.block_ids().find(|&b| func.block(b).name == name).expect("a block");
        let loop_of = |name: &str| shape.loops.headed_by(block(name)).expect("a counted loop");
        let (outer, middle, inner) = (loop_of("h0"), loop_of("h1"), loop_of("h2"));
        // Each header receives its own loop's state and takes the enclosing loops' from them.
        assert!(plan.has_params(block("h0"), outer));
        assert!(plan.has_params(block("h1"), middle) && !plan.has_params(block("h1"), outer));
        assert!(plan.has_params(block("h2"), inner) && !plan.has_params(block("h2"), middle));
        for name in ["e0", "e1", "e2", "l0", "l1"] {
            for k in shape.loops.containing(block(name)) {
                assert!(!plan.has_params(block(name), k), "{name} in loop {k}");
            }
        }
        // Built after the header and latch whose values they take.
        let order = plan.build_order(shape.cfg.reverse_post_order(), &shape.loops);
        let at = |name: &str| order.iter().position(|&b| b == block(name)).expect("ordered");
        assert!(at("h0") < at("l0") && at("l0") < at("e0") && at("l0") < at("h1"));
        assert!(at("h1") < at("l1") && at("l1") < at("e1") && at("l1") < at("h2"));
        assert_eq!(order.len(), shape.cfg.reverse_post_order().len());
    }

    #[test]
    fn a_loop_left_from_its_body_keeps_parameters_everywhere() {
        // `e0` leaves the loop too: no exit test, so the general scheme.
        let text = "func @f(x: f64, n: i64) -> f64 {
entry:
    zero = iconst 0
    one = iconst 1
    jump h0(zero, x)
h0(i0: i64, a0: f64):
    m0 = icmp lt i0, n
    br m0, e0, done(a0)
e0:
    big = fcmp gt a0, x
    br big, done(a0), l0
l0:
    b0 = fmul a0, x
    j0 = iadd i0, one
    jump h0(j0, b0)
done(r: f64):
    ret r
}
";
        let module = parse_module(text).expect("parses");
        let func = &module.functions[0];
        let shape = Shape::analyse(func);
        let plan = LoopStatePlan::new(func, &shape.cfg, &shape.loops, &shape.returns);
        let block = |name: &str| func.block_ids().find(|&b| func.block(b).name == name).expect("a block");
        let k = shape.loops.headed_by(block("h0")).expect("a counted loop");
        assert!(plan.has_params(block("e0"), k) && plan.has_params(block("l0"), k));
    }
}
