//! Calls: to module functions (direct calls of their internal native functions, with status
//! propagation and, where recursion is possible, a call-depth check), to `extern "C"` float
//! functions (direct calls), and to closure externs (through the closure trampoline).

use super::func::FuncLowerer;
use super::{MAX_CALL_DEPTH, ResolvedExtern};
use crate::abi::{self, slots_of};
use crate::error::JitError;
use crate::sites::SiteKind;
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{self as clif, InstBuilder};
use jitdiff_ir::{Callee, InstData, Type};

impl FuncLowerer<'_, '_> {
    pub(super) fn lower_call(&mut self, callee: Callee, inst: &InstData) -> Result<(), JitError> {
        let Some((params, returns)) = self.m.ir.callee_signature(callee) else {
            return Err(self.internal(format!("call of a callee that does not exist: {callee:?}")));
        };
        if inst.args.len() != params.len() || inst.results.len() != returns.len() {
            return Err(self.internal(format!("call of {callee:?} with mismatched arguments or results")));
        }
        for (&a, &ty) in inst.args.iter().zip(&params) {
            if ty == Type::SliceMut {
                self.require_mutable(a)?;
            }
        }
        let mut args: Vec<clif::Value> = Vec::with_capacity(inst.args.len() + 3);
        match callee {
            Callee::Func(id) => {
                if self.m.depth_checks[self.fid.index()] {
                    let max = MAX_CALL_DEPTH as i64;
                    let ok = self.b.ins().icmp_imm_s(IntCC::SignedLessThan, self.depth, max);
                    self.fail_unless(ok, SiteKind::CallDepthExceeded);
                }
                let target = self.m.internal_id(id.index()).ok_or_else(|| self.internal("bad callee".into()))?;
                let target = self.func_ref(target);
                let deeper = self.b.ins().iadd_imm_s(self.depth, 1);
                let out = self.scratch_addr(0)?;
                args.extend([deeper, out, self.tape]);
                for &a in &inst.args {
                    args.extend(self.get(a).iter());
                }
                // The callee works on the same tape: hand it our length and cursor, and take
                // back what it leaves (see `tape.rs`).
                self.sync_tape_vars();
                let call = self.b.ins().call(target, &args);
                let status = self.b.inst_results(call)[0];
                self.reload_tape_vars();
                self.propagate_failure(status);
                self.bind_results(&inst.results, &returns, 0)
            }
            Callee::Extern(id) => match self.m.externs.get(id.index()) {
                Some(ResolvedExtern::Direct { .. }) => {
                    let target = self.m.direct_extern_id(id.index())?;
                    let target = self.func_ref(target);
                    for &a in &inst.args {
                        args.push(self.scalar(a));
                    }
                    let call = self.b.ins().call(target, &args);
                    let r = self.b.inst_results(call)[0];
                    if let Some(&result) = inst.results.first() {
                        self.set(result, &[r]);
                    }
                    Ok(())
                }
                Some(&ResolvedExtern::Closure { ctx }) => {
                    let arg_bytes = 8 * slots_of(&params) as i32;
                    let base = self.scratch_addr(0)?;
                    let mut offset = 0;
                    for (&a, &ty) in inst.args.iter().zip(&params) {
                        let parts = self.get(a);
                        abi::store_parts(&mut self.b, ty, &parts, base, offset);
                        offset += 8 * abi::slot_count(ty) as i32;
                    }
                    let results = self.scratch_addr(arg_bytes)?;
                    let target = self.m.trampoline_id()?;
                    let target = self.func_ref(target);
                    let ctx = self.iconst(ctx as i64);
                    let call = self.b.ins().call(target, &[ctx, base, results]);
                    let status = self.b.inst_results(call)[0];
                    let ok = self.b.ins().icmp_imm_s(IntCC::Equal, status, 0);
                    self.fail_unless(ok, SiteKind::ExternFailed);
                    self.bind_results(&inst.results, &returns, arg_bytes)
                }
                None => Err(self.internal(format!("extern {} was not resolved", id.index()))),
            },
        }
    }

    /// Load call results from the scratch slot (slot layout starting at `offset`).
    fn bind_results(&mut self, results: &[jitdiff_ir::Value], types: &[Type], offset: i32) -> Result<(), JitError> {
        if results.is_empty() {
            return Ok(());
        }
        let base = self.scratch_addr(0)?;
        let mut at = offset;
        let mut parts = Vec::with_capacity(8);
        for (&r, &ty) in results.iter().zip(types) {
            parts.clear();
            abi::load_parts(&mut self.b, ty, base, at, &mut parts);
            self.set(r, &parts);
            at += 8 * abi::slot_count(ty) as i32;
        }
        Ok(())
    }
}
