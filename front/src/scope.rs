//! Local variables: a stack of slots (one per `let` binding or parameter, shadowing included)
//! with lexical scopes, and the SSA value each slot holds at the current point of lowering.
//!
//! A slot's value is `None` where the variable is not initialised on every path to this point;
//! reading it then is an error, as in Rust. `maybe_init` is whether it may be initialised on some
//! path, which Rust forbids assigning an immutable binding again after.

use crate::types::Ty;
use jitdiff_ir::Value;

/// The state of one slot at one point of the program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SlotState {
    pub value: Option<Value>,
    pub maybe_init: bool,
}

/// What a slot stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SlotKind {
    /// A scalar or a slice (its value never changes: slices are parameters or local arrays).
    Plain,
    /// A local array the variable owns, as a Rust `Vec` or array it was bound to by value
    /// (`vec![..]`, `collect`, `to_vec`, `[x; N]`): assigning it another array of its length
    /// copies the elements (`u = next;`), which is what Rust's move amounts to.
    OwnedArray,
    /// An array of arrays (`[[f64; C]; R]`, `&[[f64; C]]`): a flat slice of rows of `cols`
    /// elements (see `rows.rs`).
    Rows { cols: i64 },
    /// A vector that grows by `push` into the local array `buffer`; its length is the slot
    /// before it, and `zero` an index 0 for the view it is (see `growing.rs`).
    Growing { buffer: Value, zero: Value },
    /// `v` of `for v in x.iter_mut()`: the element `slice[index]` (read and written in place).
    Element { slice: Value, index: Value },
    /// `w` of `for w in x.windows(k)` (or `chunks`, `chunks_exact`): indexed, measured and
    /// iterated in place, never a value (see `views.rs`).
    View(crate::views::View),
    /// A closure bound with `let`: number `n` of the function's closures (see `closures.rs`).
    Closure(usize),
    /// A struct variable (never a value itself): its scalar fields are the slots after it
    /// (`structs.rs`).
    Struct,
}

#[derive(Clone, Debug)]
pub(crate) struct Slot {
    pub name: String,
    pub ty: Ty,
    pub kind: SlotKind,
    pub mutable: bool,
    pub state: SlotState,
    /// Where an immutable variable declared without a value was last assigned: if a loop's
    /// back edge carries it initialised to a point where it was not, that assignment runs twice.
    pub assigned_at: Option<proc_macro2::Span>,
}

/// The slots in scope, innermost last.
#[derive(Default)]
pub(crate) struct Scopes {
    slots: Vec<Slot>,
    marks: Vec<usize>,
}

/// Slots and scopes taken out of sight by [`Scopes::hide_from`].
pub(crate) struct Hidden {
    slots: Vec<Slot>,
    marks: Vec<usize>,
}

/// The state of every slot below some count, to restore after lowering one branch.
pub(crate) type Snapshot = Vec<SlotState>;

impl Scopes {
    pub(crate) fn push(&mut self) {
        self.marks.push(self.slots.len());
    }
    pub(crate) fn pop(&mut self) {
        if let Some(mark) = self.marks.pop() {
            self.slots.truncate(mark);
        }
    }
    pub(crate) fn len(&self) -> usize {
        self.slots.len()
    }
    /// Drop slots above `len` (leaving a construct whose scopes were unwound by an error path).
    pub(crate) fn truncate(&mut self, len: usize) {
        self.slots.truncate(len);
        while self.marks.last().is_some_and(|&m| m > len) {
            self.marks.pop();
        }
    }
    pub(crate) fn declare(&mut self, slot: Slot) -> usize {
        self.slots.push(slot);
        self.slots.len() - 1
    }
    /// The innermost slot called `name`.
    pub(crate) fn lookup(&self, name: &str) -> Option<usize> {
        self.slots.iter().rposition(|s| s.name == name)
    }
    pub(crate) fn slot(&self, index: usize) -> &Slot {
        &self.slots[index]
    }
    pub(crate) fn slot_mut(&mut self, index: usize) -> &mut Slot {
        &mut self.slots[index]
    }
    pub(crate) fn slots(&self) -> &[Slot] {
        &self.slots
    }
    pub(crate) fn snapshot(&self) -> Snapshot {
        self.slots.iter().map(|s| s.state).collect()
    }
    /// Put back the states of the slots a snapshot covers (slots declared since are gone by then).
    pub(crate) fn restore(&mut self, snapshot: &Snapshot) {
        for (slot, state) in self.slots.iter_mut().zip(snapshot) {
            slot.state = *state;
        }
    }
    /// Take the slots from `index` on, and the scopes opened since, out of sight (a closure's
    /// body sees only what was in scope where it was written); [`Scopes::unhide`] puts them back.
    pub(crate) fn hide_from(&mut self, index: usize) -> Hidden {
        let slots = self.slots.split_off(index);
        let first_mark = self.marks.iter().position(|&m| m > index).unwrap_or(self.marks.len());
        Hidden { slots, marks: self.marks.split_off(first_mark) }
    }
    pub(crate) fn unhide(&mut self, hidden: Hidden) {
        self.slots.extend(hidden.slots);
        self.marks.extend(hidden.marks);
    }
    /// Swap the whole stack with `other` (constants are lowered with no local in scope).
    pub(crate) fn swap(&mut self, other: &mut Scopes) {
        std::mem::swap(self, other);
    }
}
