//! Terminators: `jump`, `br` and `ret`.

use super::func::FuncLowerer;
use crate::abi;
use crate::error::JitError;
use cranelift_codegen::ir::condcodes::{CondCode as _, FloatCC, IntCC};
use cranelift_codegen::ir::{self as clif, BlockArg, InstBuilder};
use jitdiff_ir::{BlockCall, CondCode, Opcode, Terminator, Value};

impl FuncLowerer<'_, '_> {
    pub(super) fn lower_terminator(&mut self, term: &Terminator) -> Result<(), JitError> {
        match term {
            Terminator::Jump(dest) => {
                let (block, args) = self.block_call(dest)?;
                self.b.ins().jump(block, &args);
            }
            // Cranelift lays out a branch's *second* successor right after it, and its
            // loop-invariant code motion only works for a loop whose blocks it visits before any
            // block outside the loop that hangs off the same dominator — it visits a branch's
            // second successor first (Cranelift 0.135 forgets the loop once it has seen a block
            // outside it). So the successor inside more loops goes second: the loop body falls
            // through from its header, and pure work in it can be hoisted. With equal depths
            // `then` goes second (`brif !cond, else, then`): it is the hot side more often.
            Terminator::Branch { cond, then_dest, else_dest } => {
                let (then_block, then_args) = self.block_call(then_dest)?;
                let (else_block, else_args) = self.block_call(else_dest)?;
                if then_block == else_block && self.lower_select_jump(*cond, then_block, &then_args, &else_args) {
                    return Ok(());
                }
                let depth = |b: jitdiff_ir::Block| self.loop_depth.get(b.index()).copied().unwrap_or(0);
                if depth(else_dest.block) > depth(then_dest.block) {
                    let c = self.scalar(*cond);
                    self.b.ins().brif(c, then_block, &then_args, else_block, &else_args);
                } else {
                    let not_cond = self.negated_condition(*cond);
                    self.b.ins().brif(not_cond, else_block, &else_args, then_block, &then_args);
                }
            }
            Terminator::Return(values) => {
                let mut offset = 0;
                for &v in values {
                    let ty = self.ty(v);
                    let parts = self.get(v);
                    let out = self.out;
                    abi::store_parts(&mut self.b, ty, &parts, out, offset);
                    offset += 8 * abi::slot_count(ty) as i32;
                }
                self.sync_tape_vars();
                self.release_local_arrays()?;
                let ok = self.b.ins().iconst(abi::STATUS, 0);
                self.b.ins().return_(&[ok]);
            }
        }
        Ok(())
    }

    /// `br cond, B(a..), B(b..)` — both sides into one block, so only the arguments depend on
    /// the condition — as `jump B(select(cond, a, b)..)` where every select is branch-free on
    /// the host: integer and boolean arguments (`cmov`), and an `f64` pair that is the compare's
    /// own operands under `lt` or `gt` — a running minimum or maximum, `if d < m { m = d }`,
    /// which becomes one `minsd`/`maxsd` (`x < y ? x : y` is exactly `minsd x, y`, NaN and ±0
    /// included). Any other `f64` select would be lowered by Cranelift as a branch around a move,
    /// so those keep the branch. Returns `false` (nothing emitted) when the branch stays.
    fn lower_select_jump(
        &mut self,
        cond: Value,
        block: clif::Block,
        then_args: &[BlockArg],
        else_args: &[BlockArg],
    ) -> bool {
        let min_max = match self.compares.get(&cond) {
            Some(&(at, Opcode::FCmp, cc @ (CondCode::Lt | CondCode::Gt), a, b)) if at == self.at_block => {
                // `a > b` is `b < a`, NaN included: name the pair (smaller-side, larger-side).
                let (a, b) = (self.scalar(a), self.scalar(b));
                Some(if cc == CondCode::Lt { (a, b) } else { (b, a) })
            }
            _ => None,
        };
        let mut picks = Vec::with_capacity(then_args.len());
        for (&t, &e) in then_args.iter().zip(else_args) {
            let (BlockArg::Value(t), BlockArg::Value(e)) = (t, e) else { return false };
            let ty = self.b.func.dfg.value_type(t);
            let pick = if t == e {
                Pick::Same(t)
            } else if ty.is_int()
                || ty == clif::types::F64 && min_max.is_some_and(|(lo, hi)| (t, e) == (lo, hi) || (t, e) == (hi, lo))
            {
                Pick::Select(t, e)
            } else {
                return false;
            };
            picks.push(pick);
        }
        let c = self.scalar(cond);
        let mut args = Vec::with_capacity(picks.len());
        for pick in picks {
            args.push(BlockArg::from(match pick {
                Pick::Same(v) => v,
                // For an `f64` pair, a fresh `lt` in the order Cranelift's `minsd`/`maxsd` rules
                // match (`select (fcmp lt x y) x y` is `minsd x, y`; with `y < x`, `maxsd`).
                Pick::Select(t, e) if self.b.func.dfg.value_type(t) == clif::types::F64 => {
                    let (lo, hi) = min_max.unwrap_or((t, e));
                    let less = self.b.ins().fcmp(FloatCC::LessThan, lo, hi);
                    self.b.ins().select(less, t, e)
                }
                Pick::Select(t, e) => self.b.ins().select(c, t, e),
            }));
        }
        self.b.ins().jump(block, &args);
        true
    }

    /// The negation of a boolean IR value: the inverted comparison when the value is a compare
    /// of the branching block (fused into the branch), else `cond == 0`. Only there: a compare
    /// from another block may read values that do not reach this one as themselves (a loop
    /// counter seen from an exit shared by the two copies of a versioned loop), whereas the
    /// compare's own result does.
    fn negated_condition(&mut self, cond: Value) -> clif::Value {
        if let Some(&(block, op, cc, a, b)) = self.compares.get(&cond)
            && block == self.at_block
        {
            let (x, y) = (self.scalar(a), self.scalar(b));
            return if op == Opcode::FCmp {
                self.b.ins().fcmp(super::inst::float_cc(cc).complement(), x, y)
            } else {
                self.b.ins().icmp(super::inst::int_cc(cc).complement(), x, y)
            };
        }
        let c = self.scalar(cond);
        self.b.ins().icmp_imm_u(IntCC::Equal, c, 0)
    }

    fn block_call(&self, dest: &BlockCall) -> Result<(cranelift_codegen::ir::Block, Vec<BlockArg>), JitError> {
        let mut block = *self
            .blocks
            .get(dest.block.index())
            .ok_or_else(|| self.internal(format!("jump to missing block {}", dest.block.index())))?;
        // Into a versioned loop: the current copy's block from inside it, the dispatch from outside.
        // Only loops containing this block or the destination can matter (indices in order).
        let mut candidates: Vec<usize> = [self.at_block, dest.block]
            .iter()
            .flat_map(|b| self.versioned_around.get(b.index()).into_iter().flatten().copied())
            .collect();
        candidates.sort_unstable();
        candidates.dedup();
        for k in candidates {
            let l = &self.versioned[k];
            let inside = l.body[self.at_block.index()];
            if inside && l.body[dest.block.index()] {
                if self.copy == Some(k) {
                    block = l.fast[&dest.block];
                }
            } else if dest.block == l.header && !inside {
                block = l.dispatch.unwrap_or(block);
            }
        }
        let mut args = Vec::with_capacity(dest.args.len());
        for &a in &dest.args {
            args.extend(self.get(a).iter().map(|&p| BlockArg::from(p)));
        }
        Ok((block, args))
    }
}

/// One argument of a branch whose two sides go into one block.
enum Pick {
    /// The same value on both sides.
    Same(clif::Value),
    /// `(then, else)`: chosen by the condition.
    Select(clif::Value, clif::Value),
}
