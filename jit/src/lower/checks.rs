//! Redundant bounds checks. An access `(slice p, index value i, width w)` that passed (or was
//! proved) means `(i + 1) * w <= len(p)` for the rest of the call: slices are parameters, so their
//! lengths never change, and `i` is one SSA value. A later access to `p` at `i` with a width
//! `w' <= w` is then in bounds wherever the first access dominates it. With a shadow declaration
//! `len(s) == L * len(q)` (checked on entry, see [`FuncLowerer::check_shadow_lengths`]), a fact
//! on `q` with width `w` proves accesses to `s` at `i` of width `w' <= w * L`, and a fact on `s`
//! with width `w` proves accesses to `q` at `i` of width `w'` with `w' * L <= w`.

use super::func::FuncLowerer;
use crate::shadow::{BoundsCheckStats, Shadow};
use crate::sites::SiteKind;
use cranelift_codegen::ir::InstBuilder;
use cranelift_codegen::ir::condcodes::IntCC;
use jitdiff_ir::analysis::ControlFlow;
use jitdiff_ir::{Block, Value};
use rustc_hash::FxHashMap as HashMap;

/// A proved access: its block, its width, and the copy of a versioned loop it was lowered in.
type Fact = (Block, u8, Option<usize>);

/// What the lowering of one function knows about bounds.
pub(crate) struct BoundsFacts {
    shadows: Vec<Shadow>,
    /// `(parameter, index value)` → the blocks holding a proved access, its width, and the copy
    /// of a versioned loop it was lowered in (`None`: the checked one; see `versioning.rs`).
    proven: HashMap<(usize, Value), Vec<Fact>>,
    pub stats: BoundsCheckStats,
}

impl BoundsFacts {
    pub fn new(shadows: Vec<Shadow>) -> BoundsFacts {
        BoundsFacts { shadows, proven: HashMap::default(), stats: BoundsCheckStats::default() }
    }

    /// Is an access to parameter `param` at `index` with `width` proved in bounds by an access
    /// lowered before it, in `at` or in a block dominating `at`? (Blocks are lowered in reverse
    /// post-order and instructions in order, so every dominating access is already recorded, and
    /// a recorded access in `at` itself comes before this one — when it was lowered in the same
    /// `copy`: the fast copy of a versioned loop is lowered after the checked one, whose record of
    /// this very access must not prove it. An access in a strictly dominating block ran in
    /// whichever copy was taken, so it proves this one in both.)
    pub fn proves(
        &self,
        cfg: &ControlFlow,
        at: Block,
        copy: Option<usize>,
        param: usize,
        index: Value,
        width: u8,
    ) -> bool {
        let width = u32::from(width);
        // (other parameter, the least width a fact on it needs to prove this access)
        let mut candidates = vec![(param, width)];
        for s in &self.shadows {
            let lanes = u32::from(s.lanes);
            if s.shadow == param {
                // (i + 1) * w_q <= len(q) gives (i + 1) * w_q * L <= len(s): need w_q * L >= width.
                candidates.push((s.primal, width.div_ceil(lanes)));
            } else if s.primal == param {
                // (i + 1) * w_s <= len(s) = L * len(q), so (i + 1) * width * L <= L * len(q) when
                // width * L <= w_s: need w_s >= width * L.
                candidates.push((s.shadow, width * lanes));
            }
        }
        candidates.into_iter().any(|(other, need)| {
            self.proven.get(&(other, index)).is_some_and(|facts| {
                facts.iter().any(|&(block, w, lowered_in)| {
                    u32::from(w) >= need && if block == at { lowered_in == copy } else { cfg.dominates(block, at) }
                })
            })
        })
    }

    /// Record that an access to `param` at `index` with `width` is in bounds from here on.
    pub fn record(&mut self, at: Block, copy: Option<usize>, param: usize, index: Value, width: u8) {
        self.proven.entry((param, index)).or_default().push((at, width, copy));
    }

    /// The declarations of this function.
    pub fn shadows(&self) -> &[Shadow] {
        &self.shadows
    }
}

impl FuncLowerer<'_, '_> {
    /// On entry (before any instruction), check `len(shadow) == lanes * len(primal)` for every
    /// shadow declaration: `len(shadow) >> log2(lanes) == len(primal)` and the low bits of
    /// `len(shadow)` are zero, which cannot overflow. A mismatch fails with the lengths in the
    /// detail slots.
    pub(super) fn check_shadow_lengths(&mut self) {
        if !self.m.bounds_checks {
            return;
        }
        let shadows = self.facts.shadows().to_vec();
        let params = self.f.params.clone();
        for s in shadows {
            let (shadow_len, primal_len) = (self.get(params[s.shadow])[1], self.get(params[s.primal])[1]);
            let shift = i64::from(s.lanes.trailing_zeros());
            let groups = if shift == 0 { shadow_len } else { self.b.ins().ushr_imm_u(shadow_len, shift) };
            let mut ok = self.b.ins().icmp(IntCC::Equal, groups, primal_len);
            if shift > 0 {
                let low = self.b.ins().band_imm_u(shadow_len, i64::from(s.lanes) - 1);
                let whole = self.b.ins().icmp_imm_s(IntCC::Equal, low, 0);
                ok = self.b.ins().band(ok, whole);
            }
            let kind = SiteKind::ShadowLength { shadow: s.shadow as u32, primal: s.primal as u32, lanes: s.lanes };
            self.fail_unless_with(ok, kind, Some((shadow_len, primal_len)));
        }
    }
}
