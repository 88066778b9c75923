//! Terminators: `jump`, `br` and `ret`.

use super::func::FuncLowerer;
use crate::abi;
use crate::error::JitError;
use cranelift_codegen::ir::{BlockArg, InstBuilder};
use jitdiff_ir::{BlockCall, Terminator};

impl FuncLowerer<'_, '_> {
    pub(super) fn lower_terminator(&mut self, term: &Terminator) -> Result<(), JitError> {
        match term {
            Terminator::Jump(dest) => {
                let (block, args) = self.block_call(dest)?;
                self.b.ins().jump(block, &args);
            }
            Terminator::Branch { cond, then_dest, else_dest } => {
                let c = self.scalar(*cond);
                let (then_block, then_args) = self.block_call(then_dest)?;
                let (else_block, else_args) = self.block_call(else_dest)?;
                self.b.ins().brif(c, then_block, &then_args, else_block, &else_args);
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
                let ok = self.b.ins().iconst(abi::STATUS, 0);
                self.b.ins().return_(&[ok]);
            }
        }
        Ok(())
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
