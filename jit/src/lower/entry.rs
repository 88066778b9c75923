//! Entry trampolines: `extern "C" fn(args: *const u64, results: *mut u64, tape: *mut TapeState) -> i32`.
//!
//! The trampoline loads every argument from the `args` slot buffer, calls the function's internal
//! native function at depth 1 with `results` as its out pointer and the call's tape state, and
//! returns its status. The safe
//! handle packs and checks the buffers, so one trampoline serves every way of calling.

use super::ModuleLowering;
use crate::abi;
use crate::error::JitError;
use cranelift_codegen::ir::{self as clif, ExtFuncData, ExternalName, InstBuilder, UserExternalName, types};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_module::Module as _;
use jitdiff_ir::FuncId;

pub(crate) fn lower_entry(
    m: &mut ModuleLowering,
    func: &mut clif::Function,
    fctx: &mut FunctionBuilderContext,
    fid: FuncId,
) -> Result<(), JitError> {
    let f = m.ir.func(fid);
    let target = m.internal_id(fid.index()).ok_or_else(|| JitError::Codegen {
        function: f.name.clone(),
        message: "entry trampoline for an undeclared function".into(),
    })?;
    let signature = m.jit.get().declarations().get_function_decl(target).signature.clone();
    let mut b = FunctionBuilder::new(func, fctx);
    let signature = b.import_signature(signature);
    let name = b.func.declare_imported_user_function(UserExternalName { namespace: 0, index: target.as_u32() });
    let target = b.import_function(ExtFuncData {
        name: ExternalName::user(name),
        signature,
        colocated: false,
        patchable: false,
    });

    let block = b.create_block();
    b.append_block_params_for_function_params(block);
    b.switch_to_block(block);
    let (args, results, tape) = (b.block_params(block)[0], b.block_params(block)[1], b.block_params(block)[2]);
    let depth = b.ins().iconst(types::I64, 1);
    let mut call_args = vec![depth, results, tape];
    let mut offset = 0;
    for ty in f.param_types() {
        abi::load_parts(&mut b, ty, args, offset, &mut call_args);
        offset += 8 * abi::slot_count(ty) as i32;
    }
    let call = b.ins().call(target, &call_args);
    let status = b.inst_results(call)[0];
    b.ins().return_(&[status]);
    b.seal_all_blocks();
    b.finalize(m.frontend_config);
    Ok(())
}
