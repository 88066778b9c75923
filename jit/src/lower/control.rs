//! Terminators: `jump`, `br` and `ret`.

use super::func::FuncLowerer;
use crate::abi;
use crate::error::JitError;
use cranelift_codegen::ir::condcodes::{CondCode as _, IntCC};
use cranelift_codegen::ir::{self as clif, BlockArg, InstBuilder};
use jitdiff_ir::{BlockCall, Opcode, Terminator, Value};

impl FuncLowerer<'_, '_> {
    pub(super) fn lower_terminator(&mut self, term: &Terminator) -> Result<(), JitError> {
        match term {
            Terminator::Jump(dest) => {
                let (block, args) = self.block_call(dest)?;
                self.b.ins().jump(block, &args);
            }
            // Emitted as `brif !cond, else, then`: Cranelift lays out a branch's *second*
            // successor right after it, and `then` is the hot side of a loop test (the body) far
            // more often than the exit, so the body falls through from the header.
            Terminator::Branch { cond, then_dest, else_dest } => {
                let not_cond = self.negated_condition(*cond);
                let (then_block, then_args) = self.block_call(then_dest)?;
                let (else_block, else_args) = self.block_call(else_dest)?;
                self.b.ins().brif(not_cond, else_block, &else_args, then_block, &then_args);
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
                let ok = self.b.ins().iconst(abi::STATUS, 0);
                self.b.ins().return_(&[ok]);
            }
        }
        Ok(())
    }

    /// The negation of a boolean IR value: the inverted comparison when the value is a compare
    /// of this function (fused into the branch), else `cond == 0`.
    fn negated_condition(&mut self, cond: Value) -> clif::Value {
        if let Some(&(op, cc, a, b)) = self.compares.get(&cond) {
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
        let block = *self
            .blocks
            .get(dest.block.index())
            .ok_or_else(|| self.internal(format!("jump to missing block {}", dest.block.index())))?;
        let mut args = Vec::with_capacity(dest.args.len());
        for &a in &dest.args {
            args.extend(self.get(a).iter().map(|&p| BlockArg::from(p)));
        }
        Ok((block, args))
    }
}
