//! `alloc`: local arrays from the tape's `LocalArrays` (see `crate::tape`). A function that
//! allocates takes the allocator's mark in its entry block and releases back to it before every
//! return, so a callee's arrays are freed when it returns, and a loop of calls reuses the same
//! memory. An error exit does not release: the whole call fails, and the handle releases to the
//! mark it took when the call started.

use super::ModuleLowering;
use super::func::{FuncLowerer, Parts};
use crate::abi;
use crate::error::JitError;
use crate::sites::SiteKind;
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{self as clif, AbiParam, InstBuilder, types};
use cranelift_module::{FuncId as ClifFuncId, Module as _};
use jitdiff_ir::Value;

/// The three helpers, in the order `alloc`, `mark`, `release`.
#[derive(Clone, Copy)]
pub(crate) struct LocalArrayHelpers([ClifFuncId; 3]);

impl ModuleLowering<'_> {
    /// The imported helpers (declared on first use).
    fn local_array_helpers(&mut self) -> Result<LocalArrayHelpers, JitError> {
        if let Some(ids) = self.local_array_ids {
            return Ok(ids);
        }
        let template = self.jit.get().make_signature();
        let mut alloc = template.clone();
        alloc.params.extend([AbiParam::new(abi::PTR), AbiParam::new(types::I64)]);
        alloc.returns.push(AbiParam::new(abi::PTR));
        let mut mark = template.clone();
        mark.params.push(AbiParam::new(abi::PTR));
        mark.returns.push(AbiParam::new(types::I64));
        let mut release = template;
        release.params.extend([AbiParam::new(abi::PTR), AbiParam::new(types::I64)]);
        let ids = LocalArrayHelpers([
            self.import(crate::tape::ALLOC_SYMBOL, &alloc)?,
            self.import(crate::tape::MARK_SYMBOL, &mark)?,
            self.import(crate::tape::RELEASE_SYMBOL, &release)?,
        ]);
        self.local_array_ids = Some(ids);
        Ok(ids)
    }
}

impl FuncLowerer<'_, '_> {
    /// In the entry block of a function that allocates: take the allocator's mark.
    pub(super) fn take_local_array_mark(&mut self) -> Result<(), JitError> {
        let LocalArrayHelpers([_, mark, _]) = self.m.local_array_helpers()?;
        let mark = self.func_ref(mark);
        let tape = self.tape;
        let call = self.b.ins().call(mark, &[tape]);
        self.local_array_mark = Some(self.b.inst_results(call)[0]);
        Ok(())
    }

    /// Before a return: free this call's local arrays.
    pub(super) fn release_local_arrays(&mut self) -> Result<(), JitError> {
        let Some(mark) = self.local_array_mark else { return Ok(()) };
        let LocalArrayHelpers([_, _, release]) = self.m.local_array_helpers()?;
        let release = self.func_ref(release);
        let tape = self.tape;
        self.b.ins().call(release, &[tape, mark]);
        Ok(())
    }

    /// `alloc len`: the helper's array, or an `AllocFailed` error (with the length) when it
    /// returns null.
    pub(super) fn lower_alloc(&mut self, len: Value) -> Result<Parts, JitError> {
        let LocalArrayHelpers([alloc, _, _]) = self.m.local_array_helpers()?;
        let alloc = self.func_ref(alloc);
        let (tape, len) = (self.tape, self.scalar(len));
        let call = self.b.ins().call(alloc, &[tape, len]);
        let pointer: clif::Value = self.b.inst_results(call)[0];
        let ok = self.b.ins().icmp_imm_u(IntCC::NotEqual, pointer, 0);
        self.fail_unless_with(ok, SiteKind::AllocFailed, Some((len, len)));
        Ok(Parts::new(&[pointer, len]))
    }
}
