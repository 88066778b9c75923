//! `tpush` and `tpop` on the call's `TapeState` (see `crate::tape` for the layout and the
//! invariant `cursor <= len <= cap`). Both are inline; only a `tpush` that finds the buffer full
//! calls out, to the grow helper, from a cold block.

use super::func::FuncLowerer;
use crate::abi;
use crate::error::JitError;
use crate::sites::SiteKind;
use crate::tape::{BASE_OFFSET, CAP_OFFSET, CURSOR_OFFSET, LEN_OFFSET};
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{self as clif, InstBuilder, MemFlagsData, types};
use jitdiff_ir::{Type, Value};

/// Tape entries and the state's fields: 8-byte aligned, in bounds by the state's invariant.
fn tape_flags() -> MemFlagsData {
    MemFlagsData::new().with_notrap().with_aligned()
}

impl FuncLowerer<'_, '_> {
    /// `tpush x`: grow if `len == cap`, store `x`'s 64 bits at `base + 8 * len`, then
    /// `len = cursor = len + 1`.
    pub(super) fn lower_tpush(&mut self, x: Value) -> Result<(), JitError> {
        let value = self.scalar(x);
        // An f64 is stored as is (its bits); a bool widened to 0 or 1.
        let bits = match self.ty(x) {
            Type::F64 | Type::I64 => value,
            Type::Bool => self.b.ins().uextend(types::I64, value),
            other => return Err(self.internal(format!("tpush of a {other}"))),
        };
        let tape = self.tape;
        let len = self.b.ins().load(types::I64, tape_flags(), tape, LEN_OFFSET);
        let cap = self.b.ins().load(types::I64, tape_flags(), tape, CAP_OFFSET);
        let full = self.b.ins().icmp(IntCC::Equal, len, cap);
        let grow = self.b.create_block();
        self.b.set_cold_block(grow);
        let store = self.b.create_block();
        self.b.ins().brif(full, grow, &[], store, &[]);

        self.b.switch_to_block(grow);
        let helper = self.m.tape_grow_id()?;
        let helper = self.func_ref(helper);
        let call = self.b.ins().call(helper, &[tape]);
        let status = self.b.inst_results(call)[0];
        let grown = self.b.ins().icmp_imm_s(IntCC::Equal, status, 0);
        self.fail_unless(grown, SiteKind::TapeAllocation);
        self.b.ins().jump(store, &[]);

        self.b.switch_to_block(store);
        let base = self.b.ins().load(abi::PTR, tape_flags(), tape, BASE_OFFSET);
        let offset = self.b.ins().ishl_imm_u(len, 3);
        let addr = self.b.ins().iadd(base, offset);
        self.b.ins().store(tape_flags(), bits, addr, 0);
        let next = self.b.ins().iadd_imm_s(len, 1);
        self.b.ins().store(tape_flags(), next, tape, LEN_OFFSET);
        self.b.ins().store(tape_flags(), next, tape, CURSOR_OFFSET);
        Ok(())
    }

    /// `tpop.T`: fail if `cursor == 0`, else `cursor -= 1` and read the entry there as `ty`.
    pub(super) fn lower_tpop(&mut self, ty: Type) -> Result<clif::Value, JitError> {
        let tape = self.tape;
        let cursor = self.b.ins().load(types::I64, tape_flags(), tape, CURSOR_OFFSET);
        let nonempty = self.b.ins().icmp_imm_s(IntCC::NotEqual, cursor, 0);
        self.fail_unless(nonempty, SiteKind::TapeUnderflow);
        let below = self.b.ins().iadd_imm_s(cursor, -1);
        self.b.ins().store(tape_flags(), below, tape, CURSOR_OFFSET);
        let base = self.b.ins().load(abi::PTR, tape_flags(), tape, BASE_OFFSET);
        let offset = self.b.ins().ishl_imm_u(below, 3);
        let addr = self.b.ins().iadd(base, offset);
        Ok(match ty {
            Type::F64 => self.b.ins().load(types::F64, tape_flags(), addr, 0),
            Type::I64 => self.b.ins().load(types::I64, tape_flags(), addr, 0),
            Type::Bool => {
                let entry = self.b.ins().load(types::I64, tape_flags(), addr, 0);
                self.b.ins().icmp_imm_s(IntCC::NotEqual, entry, 0)
            }
            other => return Err(self.internal(format!("tpop of a {other}"))),
        })
    }
}
