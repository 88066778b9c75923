//! SSA construction across blocks. A variable lives in SSA values; where control flow meets (the
//! end of an `if`, a loop's exit, a `continue` target) each variable that may hold different
//! values on the incoming edges becomes a block parameter, and each edge passes its value.
//!
//! Edges into a join are collected while the construct is lowered ([`Join`]), and the join block
//! is made once all are known: a variable gets a parameter only where the edges disagree, is
//! uninitialised after the join where some edge had it uninitialised (Rust's definite
//! initialisation), and the jumps are written then. A loop header cannot wait for its back edges,
//! so every mutable variable initialised on entry becomes a parameter of it; the clean-up passes
//! (`remove_redundant_params`) drop those the loop never changes.

use crate::lower::Lowerer;
use crate::scope::{SlotKind, SlotState, Snapshot};
use jitdiff_ir::{Block, BlockCall, Terminator, Type, Value};

/// One jump into a join: from which block, with which variable states and extra values (the
/// result of an `if` expression, a `break` value).
pub(crate) struct Edge {
    from: Block,
    states: Vec<SlotState>,
    extras: Vec<Value>,
}

/// A join point whose incoming edges are still being collected.
pub(crate) struct Join {
    /// The variables (slots `0..slots`) in scope at the join.
    slots: usize,
    edges: Vec<Edge>,
    /// The variable states to assume if no edge arrives (the join is then dead code).
    fallback: Snapshot,
}

impl Join {
    pub(crate) fn has_edges(&self) -> bool {
        !self.edges.is_empty()
    }
}

/// A loop header: its block and which variables it carries as parameters (in order, after the
/// hidden parameters such as a `for` loop's counter).
pub(crate) struct Header {
    pub block: Block,
    pub hidden: Vec<Value>,
    pub carried: Vec<usize>,
}

impl Lowerer<'_> {
    /// A join for the variables in scope now.
    pub(crate) fn new_join(&self) -> Join {
        Join { slots: self.scopes.len(), edges: vec![], fallback: self.scopes.snapshot() }
    }

    /// Leave the current block for `join`, passing `extras`; code after this is dead until the
    /// join is finished. From dead code, nothing is recorded.
    pub(crate) fn edge_to(&mut self, join: &mut Join, extras: Vec<Value>) {
        if self.ssa.reachable {
            let mut states = self.scopes.snapshot();
            states.truncate(join.slots);
            join.edges.push(Edge { from: self.ssa.current, states, extras });
        }
        self.ssa.reachable = false;
    }

    /// Make the join block (named `name`), with one parameter per variable on which the edges
    /// disagree and one per extra value (of types `extra_types`), write the jumps into it and
    /// continue there. Returns the extra values. The variables in scope must be those of the
    /// join's creation (inner scopes popped).
    pub(crate) fn finish_join(&mut self, join: Join, name: &str, extra_types: &[Type]) -> Vec<Value> {
        let block = self.ssa.new_block(name);
        if join.edges.is_empty() {
            // Dead: nothing arrives. Placeholder values keep the dead code well formed.
            self.scopes.restore(&join.fallback);
            self.ssa.switch_to(block, false);
            return extra_types.iter().map(|&t| self.ssa.zero(t)).collect();
        }
        let mut args: Vec<Vec<Value>> = vec![vec![]; join.edges.len()];
        for slot in 0..join.slots.min(self.scopes.len()) {
            let states: Vec<SlotState> = join
                .edges
                .iter()
                .map(|e| e.states.get(slot).copied().unwrap_or(SlotState { value: None, maybe_init: false }))
                .collect();
            let maybe_init = states.iter().any(|s| s.maybe_init);
            let values: Option<Vec<Value>> = states.iter().map(|s| s.value).collect();
            let value = match values {
                None => None,
                Some(values) if values.iter().all(|&v| v == values[0]) => Some(values[0]),
                Some(values) => {
                    let (name, ty) = {
                        let s = self.scopes.slot(slot);
                        (s.name.clone(), s.ty.ir())
                    };
                    // Slices never change, so only scalars disagree.
                    let ty = ty.unwrap_or(Type::F64);
                    let param = self.ssa.func.add_block_param(block, ty, Some(&name));
                    for (edge_args, v) in args.iter_mut().zip(values) {
                        edge_args.push(v);
                    }
                    Some(param)
                }
            };
            self.scopes.slot_mut(slot).state = SlotState { value, maybe_init };
        }
        let extras: Vec<Value> = extra_types.iter().map(|&t| self.ssa.func.add_block_param(block, t, None)).collect();
        for (edge, mut edge_args) in join.edges.into_iter().zip(args) {
            edge_args.extend(edge.extras);
            self.ssa.func.block_mut(edge.from).term =
                Some(Terminator::Jump(BlockCall { block, args: edge_args.into() }));
        }
        self.ssa.switch_to(block, true);
        extras
    }

    /// Jump to a new loop header carrying every mutable, initialised scalar variable plus the
    /// `hidden` values (of their types), and continue in the header with the variables bound
    /// to its parameters.
    pub(crate) fn open_header(&mut self, name: &str, hidden: &[Value]) -> Header {
        let block = self.ssa.new_block(name);
        let mut args = hidden.to_vec();
        let hidden_params: Vec<Value> =
            hidden.iter().map(|&v| self.ssa.func.add_block_param(block, self.ssa.func.ty(v), None)).collect();
        let mut carried = vec![];
        for (index, slot) in self.scopes.slots().iter().enumerate() {
            if let (true, Some(value), Some(ty), SlotKind::Plain) =
                (slot.mutable && slot.ty.is_scalar(), slot.state.value, slot.ty.ir(), slot.kind)
            {
                carried.push((index, value, ty, slot.name.clone()));
            }
        }
        let mut carried_slots = vec![];
        for (index, value, ty, name) in carried {
            let param = self.ssa.func.add_block_param(block, ty, Some(&name));
            args.push(value);
            self.scopes.slot_mut(index).state.value = Some(param);
            carried_slots.push(index);
        }
        let reachable = self.ssa.reachable;
        if reachable {
            self.ssa.jump(block, args);
        }
        self.ssa.switch_to(block, reachable);
        Header { block, hidden: hidden_params, carried: carried_slots }
    }

    /// Jump back to `header` with the `hidden` values and the carried variables' current values.
    pub(crate) fn jump_back(&mut self, header: &Header, hidden: &[Value]) {
        if !self.ssa.reachable {
            return;
        }
        let mut args = hidden.to_vec();
        for &slot in &header.carried {
            let value = match self.scopes.slot(slot).state.value {
                Some(v) => v,
                // Cannot happen (a carried variable was initialised on entry and assignments
                // keep it so); a placeholder keeps the IR well formed if it did.
                None => {
                    let ty = self.scopes.slot(slot).ty.ir().unwrap_or(Type::F64);
                    self.ssa.zero(ty)
                }
            };
            args.push(value);
        }
        self.ssa.jump(header.block, args);
        self.ssa.reachable = false;
    }
}
