//! `skip_while(|v| c)` in a counted loop: a flag the loop carries, set until the first item `c`
//! rejects. While it is set, each item is tested and skipped where `c` accepts it; after it,
//! `c` is not called again, as Rust's `SkipWhile` does not call it (a closure that counts its
//! calls, or reads past an end, sees the difference).

use crate::error::{Result, invalid};
use crate::forloop::Leave;
use crate::iter::Item;
use crate::lower::Lowerer;
use crate::types::Ty;
use syn::spanned::Spanned;

impl Lowerer<'_> {
    /// `skip_while` (the chain's adapter `k`) on `item`: while its flag is set, test the item
    /// and skip it where the closure accepts it; the first item it rejects clears the flag.
    /// Returns false where the rest of the iteration is unreachable.
    pub(crate) fn skip_while(&mut self, closure: &syn::ExprClosure, item: Item, k: usize) -> Result<bool> {
        let span = closure.span();
        let slot = self
            .scopes
            .lookup(&skipping_flag(k))
            .ok_or_else(|| invalid(span, "no `skip_while` flag (a front-end bug)"))?;
        let skipping = self.read_slot(slot, span)?;
        let (test, past) = (self.ssa.new_block("skip_test"), self.ssa.new_block("skip_past"));
        self.ssa.branch(skipping.value, test, past);
        let reachable = self.ssa.reachable;
        let before = self.scopes.snapshot();
        let mut join = self.new_join();
        self.ssa.switch_to(past, reachable);
        self.edge_to(&mut join, vec![]);
        self.scopes.restore(&before);
        self.ssa.switch_to(test, reachable);
        if let Some(skip) = self.predicate(closure, item)? {
            self.leave_where(skip, true, Leave::Continue, ("skipped", "first_kept"), |_| {});
            let no = self.ssa.bconst(false);
            self.set_accumulator(slot, no, Ty::Bool);
            self.edge_to(&mut join, vec![]);
        }
        self.finish_join(join, "skip_done", &[]);
        Ok(self.ssa.reachable)
    }
}

/// The name of the flag of the chain's `skip_while` adapter `k` (one user code cannot name).
pub(crate) fn skipping_flag(k: usize) -> String {
    format!("skipping#{k}")
}
