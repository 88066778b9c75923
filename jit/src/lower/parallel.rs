//! Compiling a module's lowered functions: Cranelift compiles each function on its own, so the
//! functions of a module (a derivative is several: forward, pullback, their callees, entries)
//! are compiled on rayon's threads when there is enough work to share, and their code is then
//! defined in the JIT module in order. The machine code does not depend on the thread that
//! compiled it.

use crate::error::JitError;
use cranelift_codegen::Context;
use cranelift_codegen::control::ControlPlane;
use cranelift_codegen::isa::TargetIsa;
use cranelift_jit::JITModule;
use cranelift_module::{FuncId as ClifFuncId, Module as _, ModuleError, ModuleReloc};
use rayon::prelude::*;

/// Below this many Cranelift instructions in all, a module compiles on the calling thread: handing
/// out the work would cost more than it saves.
const PARALLEL_INSTRUCTIONS: usize = 300;

/// One lowered function waiting for its machine code.
pub(super) struct Pending {
    /// Its id in the JIT module.
    pub id: ClifFuncId,
    /// Its Cranelift IR, and after [`compile_all`] its compiled code.
    pub ctx: Context,
    /// The IR function it comes from (for errors).
    pub name: String,
    /// Is it the function's entry trampoline (rather than the function itself)?
    pub entry: bool,
    /// Its Cranelift IR as lowered, for `JITDIFF_DISASM`.
    pub clif: Option<String>,
}

/// The error for a panic inside code generation: a bug, reported with the function's name.
pub(super) fn panicked(function: &str, message: String) -> JitError {
    JitError::Codegen {
        function: function.into(),
        message: format!(
            "code generation panicked (a bug in jitdiff or Cranelift; please report it with the IR): {message}"
        ),
    }
}

/// Compile every pending function (in parallel when their size makes it worth it); the first
/// failure, in module order, is the error.
pub(super) fn compile_all(pending: &mut [Pending], isa: &dyn TargetIsa) -> Result<(), JitError> {
    let size: usize = pending.iter().map(|p| p.ctx.func.dfg.num_insts()).sum();
    let compile = |p: &mut Pending| -> Result<(), JitError> {
        let compiled = jitdiff_ir::contain_panics(|| {
            p.ctx
                .compile(isa, &mut ControlPlane::default())
                .map(|_| ())
                .map_err(|e| format!("{:?}", ModuleError::Compilation(e.inner)))
        });
        match compiled {
            Ok(Ok(())) => Ok(()),
            Ok(Err(message)) => Err(JitError::Codegen { function: p.name.clone(), message }),
            Err(message) => Err(panicked(&p.name, message)),
        }
    };
    let outcomes: Vec<Result<(), JitError>> = if size >= PARALLEL_INSTRUCTIONS && pending.len() > 1 {
        pending.par_iter_mut().map(compile).collect()
    } else {
        pending.iter_mut().map(compile).collect()
    };
    outcomes.into_iter().collect()
}

/// Define a compiled function's code (and its relocations) in the module.
pub(super) fn define(jit: &mut JITModule, p: &Pending) -> Result<(), JitError> {
    let error = |message: String| JitError::Codegen { function: p.name.clone(), message };
    let code = p.ctx.compiled_code().ok_or_else(|| error("no compiled code".into()))?;
    let relocs: Vec<ModuleReloc> =
        code.buffer.relocs().iter().map(|reloc| ModuleReloc::from_mach_reloc(reloc, &p.ctx.func, p.id)).collect();
    jit.define_function_bytes(p.id, u64::from(code.buffer.alignment), code.code_buffer(), &relocs)
        .map_err(|e| error(format!("{e:?}")))
}
