//! Lowering a verified IR module to Cranelift and finalizing it into native code.
//!
//! - [`func`]: per-function state (value parts, blocks, failure sites, cold error blocks).
//! - [`inst`]: arithmetic, math, comparisons, vectors and memory.
//! - [`calls`]: calls to module functions, direct externs and closure externs; call depth.
//! - [`control`]: jumps, branches and returns.
//! - [`entry`]: the `extern "C"` entry trampoline of each function.
//! - [`tape`]: `tpush` and `tpop`.
//! - [`doubling`]: the exact rewrite `fmul C, (fadd a, a)` → `fmul 2C, a`.
//! - [`checks`]: which bounds checks an earlier check makes redundant; shadow-length checks.
//! - [`versioning`]: counted loops lowered twice, with and without bounds checks, and a pre-check
//!   choosing the copy.
//! - [`tables`]: the module's data tables as read-only data objects.

mod calls;
mod checks;
mod constants;
mod control;
mod doubling;
mod entry;
mod func;
mod inst;
mod local_arrays;
mod loop_copies;
mod pairs;
mod parallel;
mod tables;
mod tape;
pub(crate) use tape::uses_tape;
mod rotate;
mod trig;
pub(crate) use trig::SIN_COS_SYMBOL;
mod versioning;

use crate::abi::{self, EntryFn};
use crate::closure::ClosureCtx;
use crate::error::JitError;
use crate::shadow::{BoundsCheckStats, Shadow};
use crate::sites::SiteTable;
pub(crate) use constants::ConstantPool;
use cranelift_codegen::ir::{AbiParam, InstBuilder, Signature, UserFuncName, types};
use cranelift_codegen::isa::{CallConv, TargetFrontendConfig};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_jit::JITModule;
use cranelift_module::{FuncId as ClifFuncId, Linkage, Module as _};
use jitdiff_ir::{MathFn, Module, Opcode};
use rustc_hash::FxHashMap as HashMap;
use std::mem::ManuallyDrop;

/// The maximum IR call depth native code allows (the interpreter's limit).
pub(crate) const MAX_CALL_DEPTH: usize = jitdiff_ir::MAX_CALL_DEPTH;

/// A `JITModule` whose code memory is freed when this is dropped (a plain `JITModule` leaks it).
pub(crate) struct OwnedJit {
    module: ManuallyDrop<JITModule>,
}

impl OwnedJit {
    pub fn new(module: JITModule) -> OwnedJit {
        OwnedJit { module: ManuallyDrop::new(module) }
    }
    pub fn get(&mut self) -> &mut JITModule {
        &mut self.module
    }
}

impl Drop for OwnedJit {
    fn drop(&mut self) {
        // SAFETY: `module` is never used again after this take. An `OwnedJit` is dropped either
        // when compilation failed (no code ever ran) or when the last `Arc` of its compiled
        // module goes away; every handle that can call the code holds such an `Arc` for the whole
        // call, so no code of this module is running or will run again.
        unsafe { ManuallyDrop::take(&mut self.module).free_memory() };
    }
}

/// How a declared extern is called.
pub(crate) enum ResolvedExtern {
    /// An `extern "C"` float function registered under `symbol`, taking `arity` `f64`s.
    Direct { symbol: String, arity: usize },
    /// A closure, called through the closure trampoline with this context.
    Closure { ctx: *const ClosureCtx },
}

/// Module-wide lowering state.
pub(crate) struct ModuleLowering<'m> {
    pub ir: &'m Module,
    pub jit: OwnedJit,
    pub externs: &'m [ResolvedExtern],
    pub sites: SiteTable,
    pub depth_checks: Vec<bool>,
    pub bounds_checks: bool,
    /// Branch to a check's error exit as the second successor, so that Cranelift's block order
    /// puts the exit right after the check rather than at the end of the function (see
    /// `FuncLowerer::fail_unless_with`). Without Cranelift's optimizer only: its loop-invariant
    /// code motion needs the continuation second.
    pub exits_follow_checks: bool,
    /// Shadow-slice declarations per function.
    pub shadows: Vec<Vec<Shadow>>,
    /// Bounds checks emitted and elided per function.
    pub check_stats: Vec<BoundsCheckStats>,
    pub frontend_config: TargetFrontendConfig,
    pub constants: ConstantPool,
    /// The read-only data object of each table some function reads.
    pub table_data: Vec<Option<cranelift_module::DataId>>,
    internal_ids: Vec<ClifFuncId>,
    math_ids: HashMap<Opcode, ClifFuncId>,
    sin_cos_id: Option<ClifFuncId>,
    extern_ids: HashMap<usize, ClifFuncId>,
    trampoline_id: Option<ClifFuncId>,
    tape_grow_id: Option<ClifFuncId>,
    tape_grow_preserving_id: Option<ClifFuncId>,
    local_array_ids: Option<local_arrays::LocalArrayHelpers>,
}

/// The result of lowering: the finalized module and one entry trampoline per IR function.
pub(crate) struct Lowered {
    pub jit: OwnedJit,
    /// Read by the code: must live as long as `jit`.
    pub constants: ConstantPool,
    pub entries: Vec<EntryFn>,
    /// The address of each function's internal native function (see `abi::internal_signature`).
    pub internals: Vec<usize>,
    /// Do the functions use the System V calling convention (which direct calls speak)?
    pub system_v: bool,
    pub sites: SiteTable,
    pub check_stats: Vec<BoundsCheckStats>,
}

fn module_error(what: &str, e: impl std::fmt::Display) -> JitError {
    JitError::Module(format!("{what}: {e}"))
}

/// Lower every function of `ir` (already verified, externs resolved) into `jit` and finalize.
pub(crate) fn lower_module(
    ir: &Module,
    jit: OwnedJit,
    externs: &[ResolvedExtern],
    bounds_checks: bool,
    exits_follow_checks: bool,
    shadows: Vec<Vec<Shadow>>,
) -> Result<Lowered, JitError> {
    let mut m = ModuleLowering {
        exits_follow_checks,
        ir,
        frontend_config: jit.module.target_config(),
        constants: ConstantPool::of(ir),
        table_data: vec![],
        jit,
        externs,
        sites: SiteTable::default(),
        depth_checks: crate::callgraph::needs_depth_check(ir, MAX_CALL_DEPTH),
        bounds_checks,
        shadows,
        check_stats: vec![BoundsCheckStats::default(); ir.functions.len()],
        internal_ids: vec![],
        math_ids: HashMap::default(),
        sin_cos_id: None,
        extern_ids: HashMap::default(),
        trampoline_id: None,
        tape_grow_id: None,
        tape_grow_preserving_id: None,
        local_array_ids: None,
    };
    m.table_data = tables::define_tables(&mut m, ir)?;
    let template = m.jit.get().make_signature();
    let mut entry_ids = Vec::with_capacity(ir.functions.len());
    for f in &ir.functions {
        let internal = abi::internal_signature(&template, &f.param_types());
        let id = m.jit.get().declare_anonymous_function(&internal).map_err(|e| module_error("declare", e))?;
        m.internal_ids.push(id);
        let entry = abi::entry_signature(&template);
        entry_ids.push(m.jit.get().declare_anonymous_function(&entry).map_err(|e| module_error("declare", e))?);
    }
    // Debugging aid: JITDIFF_DISASM=1 prints every function's Cranelift IR and machine code;
    // JITDIFF_DISASM=ir prints the jitdiff IR of the module being compiled instead.
    if std::env::var_os("JITDIFF_DISASM").is_some_and(|v| v == "ir") {
        eprintln!("{ir}");
    }
    let disasm = std::env::var_os("JITDIFF_DISASM").is_some_and(|v| v != "ir");
    // Profiling aid: JITDIFF_PERF_MAP=1 appends every function's address range and name to
    // /tmp/perf-PID.map, where `perf report` looks up symbols of JIT code.
    let perf_map = std::env::var_os("JITDIFF_PERF_MAP").is_some();
    let mut code_sizes: Vec<(ClifFuncId, usize, String)> = vec![];
    let mut fctx = FunctionBuilderContext::new();
    // Lower every function (and its entry) to Cranelift IR first, compile them all (in
    // parallel when there is enough work), then define their code in the module.
    let mut pending: Vec<parallel::Pending> = Vec::with_capacity(2 * ir.functions.len());
    for ((index, f), fid) in ir.functions.iter().enumerate().zip(ir.func_ids()) {
        for entry in [false, true] {
            let mut ctx = m.jit.get().make_context();
            let (id, signature) = match entry {
                false => (m.internal_ids[index], abi::internal_signature(&template, &f.param_types())),
                true => (entry_ids[index], abi::entry_signature(&template)),
            };
            ctx.func.signature = signature;
            ctx.func.name = UserFuncName::user(0, id.as_u32());
            // A panic inside our lowering is a bug: an error naming the function, never an
            // unwind into the caller.
            jitdiff_ir::contain_panics(|| match entry {
                false => func::lower_function(&mut m, &mut ctx.func, &mut fctx, fid),
                true => entry::lower_entry(&mut m, &mut ctx.func, &mut fctx, fid),
            })
            .map_err(|message| parallel::panicked(&f.name, message))??;
            ctx.set_disasm(disasm && !entry);
            // Printed with the machine code below, so that each function's two stay together.
            let clif = (disasm && !entry).then(|| ctx.func.display().to_string());
            pending.push(parallel::Pending { id, ctx, name: f.name.clone(), entry, clif });
        }
    }
    parallel::compile_all(&mut pending, m.jit.get().isa())?;
    for p in &pending {
        parallel::define(m.jit.get(), p)?;
        if let Some(clif) = &p.clif {
            eprintln!("; @{}\n{clif}", p.name);
        }
        let Some(code) = p.ctx.compiled_code().filter(|_| !p.entry) else { continue };
        if perf_map {
            code_sizes.push((p.id, code.code_buffer().len(), p.name.clone()));
            // The machine code too, for `objdump -D -b binary -m i386:x86-64`.
            let path = format!("/tmp/perf-{}-{}.bin", std::process::id(), p.name);
            if let Err(e) = std::fs::write(&path, code.code_buffer()) {
                eprintln!("jitdiff: cannot write {path}: {e}");
            }
        }
        if disasm && std::env::var_os("JITDIFF_DISASM").is_some_and(|v| v == "optimized") {
            eprintln!("; @{} after Cranelift's optimisations\n{}", p.name, p.ctx.func.display());
        }
        if let Some(vcode) = code.vcode.as_ref().filter(|_| disasm) {
            eprintln!("; machine code of @{}\n{vcode}", p.name);
        }
    }
    drop(pending);
    let mut ctx = m.jit.get().make_context();
    if let Some(id) = m.tape_grow_preserving_id {
        define_tape_grow_preserving(&mut m, id, &mut ctx, &mut fctx)?;
    }
    // Every symbol referenced was registered before the module was created, so finalizing cannot
    // hit cranelift-jit's unresolved-symbol panic; catch one anyway rather than unwind through
    // the caller. (On a panic the module's memory is still freed when `m.jit` drops.)
    let finalized =
        jitdiff_ir::contain_panics(|| m.jit.get().finalize_definitions().map_err(|e| module_error("finalize", e)));
    match finalized {
        Ok(Ok(())) => {}
        Ok(Err(e)) => return Err(e),
        Err(message) => return Err(JitError::Module(format!("finalizing native code panicked: {message}"))),
    }
    if perf_map {
        let lines: String = code_sizes
            .iter()
            .map(|(id, size, name)| {
                format!("{:x} {size:x} jit@{name}\n", m.jit.get().get_finalized_function(*id) as usize)
            })
            .collect();
        let path = format!("/tmp/perf-{}.map", std::process::id());
        let appended = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .and_then(|mut file| std::io::Write::write_all(&mut file, lines.as_bytes()));
        if let Err(e) = appended {
            eprintln!("jitdiff: cannot write {path}: {e}");
        }
    }
    let entries = entry_ids
        .iter()
        .map(|&id| {
            let ptr = m.jit.get().get_finalized_function(id);
            // SAFETY: `id` was defined with `entry_signature`, which is
            // `extern "C" fn(*const u64, *mut u64, *mut TapeState) -> i32` under the host's default (System V)
            // calling convention, and the module is finalized, so `ptr` is executable code of
            // exactly that type for as long as `jit` lives.
            unsafe { std::mem::transmute::<*const u8, EntryFn>(ptr) }
        })
        .collect();
    let internals = m.internal_ids.iter().map(|&id| m.jit.get().get_finalized_function(id) as usize).collect();
    let system_v = template.call_conv == CallConv::SystemV;
    Ok(Lowered {
        jit: m.jit,
        constants: m.constants,
        entries,
        internals,
        system_v,
        sites: m.sites,
        check_stats: m.check_stats,
    })
}

impl ModuleLowering<'_> {
    /// The internal native function of IR function `index`.
    pub fn internal_id(&self, index: usize) -> Option<ClifFuncId> {
        self.internal_ids.get(index).copied()
    }

    /// The imported math function of `op` (declared on first use).
    pub fn math_id(&mut self, op: Opcode) -> Result<ClifFuncId, JitError> {
        if let Some(&id) = self.math_ids.get(&op) {
            return Ok(id);
        }
        let mut sig = self.jit.get().make_signature();
        match op.info().math {
            MathFn::Unary(_) => sig.params.push(AbiParam::new(types::F64)),
            MathFn::Binary(_) => sig.params.extend([AbiParam::new(types::F64), AbiParam::new(types::F64)]),
            MathFn::Powi(_) => sig.params.extend([AbiParam::new(types::F64), AbiParam::new(types::I64)]),
            MathFn::Ternary(_) => sig.params.extend([AbiParam::new(types::F64); 3]),
            MathFn::None => {
                return Err(JitError::Codegen {
                    function: String::new(),
                    message: format!("{op} has no math function"),
                });
            }
        }
        sig.returns.push(AbiParam::new(types::F64));
        let id = self.import(&crate::symbols::math_symbol(op), &sig)?;
        self.math_ids.insert(op, id);
        Ok(id)
    }

    /// The imported direct (`extern "C"`) implementation of extern `index`.
    pub fn direct_extern_id(&mut self, index: usize) -> Result<ClifFuncId, JitError> {
        if let Some(&id) = self.extern_ids.get(&index) {
            return Ok(id);
        }
        let Some(ResolvedExtern::Direct { symbol, arity }) = self.externs.get(index) else {
            return Err(JitError::Module(format!("extern {index} is not a direct function")));
        };
        let mut sig = self.jit.get().make_signature();
        sig.params.extend(std::iter::repeat_n(AbiParam::new(types::F64), *arity));
        sig.returns.push(AbiParam::new(types::F64));
        let symbol = symbol.clone();
        let id = self.import(&symbol, &sig)?;
        self.extern_ids.insert(index, id);
        Ok(id)
    }

    /// The imported closure trampoline `(ctx, args, results) -> i32`.
    pub fn trampoline_id(&mut self) -> Result<ClifFuncId, JitError> {
        if let Some(id) = self.trampoline_id {
            return Ok(id);
        }
        let mut sig = self.jit.get().make_signature();
        sig.params.extend([AbiParam::new(abi::PTR); 3]);
        sig.returns.push(AbiParam::new(abi::STATUS));
        let id = self.import(crate::closure::TRAMPOLINE_SYMBOL, &sig)?;
        self.trampoline_id = Some(id);
        Ok(id)
    }

    /// The imported tape grow helper `(state, need) -> i32`.
    pub fn tape_grow_id(&mut self) -> Result<ClifFuncId, JitError> {
        if let Some(id) = self.tape_grow_id {
            return Ok(id);
        }
        let mut sig = self.jit.get().make_signature();
        sig.params.push(AbiParam::new(abi::PTR));
        sig.params.push(AbiParam::new(types::I64));
        sig.returns.push(AbiParam::new(abi::STATUS));
        let id = self.import(crate::tape::GROW_SYMBOL, &sig)?;
        self.tape_grow_id = Some(id);
        Ok(id)
    }

    /// The module's `preserve_all` wrapper `(state) -> ()` around the grow helper (declared on
    /// first use, defined at the end of [`lower_module`]). A `tpush` calls it from a cold block:
    /// under the System V convention that call would clobber every float register, and the
    /// register allocator then keeps a loop's float values on the stack for the whole loop,
    /// hot path included; a call that clobbers nothing leaves them in registers. Success is
    /// visible in the state: the helper raises `cap` above `len`, or leaves both unchanged.
    pub fn tape_grow_preserving_id(&mut self) -> Result<ClifFuncId, JitError> {
        if let Some(id) = self.tape_grow_preserving_id {
            return Ok(id);
        }
        let sig = preserving_grow_signature(&self.jit.get().make_signature());
        let id = self.jit.get().declare_anonymous_function(&sig).map_err(|e| module_error("declare", e))?;
        self.tape_grow_preserving_id = Some(id);
        Ok(id)
    }

    fn import(&mut self, symbol: &str, sig: &Signature) -> Result<ClifFuncId, JitError> {
        self.jit.get().declare_function(symbol, Linkage::Import, sig).map_err(|e| module_error("declare", e))
    }
}

/// `(state, need) -> ()` under the calling convention that clobbers no register.
fn preserving_grow_signature(template: &Signature) -> Signature {
    let mut sig = template.clone();
    sig.params.clear();
    sig.returns.clear();
    sig.call_conv = CallConv::PreserveAll;
    sig.params.push(AbiParam::new(abi::PTR));
    sig.params.push(AbiParam::new(types::I64));
    sig
}

/// The body of the `preserve_all` grow wrapper: call the System V helper and return (whether
/// it made room is read back from the state by the caller).
fn define_tape_grow_preserving(
    m: &mut ModuleLowering,
    id: ClifFuncId,
    ctx: &mut cranelift_codegen::Context,
    fctx: &mut FunctionBuilderContext,
) -> Result<(), JitError> {
    let helper = m.tape_grow_id()?;
    ctx.func.signature = preserving_grow_signature(&m.jit.get().make_signature());
    ctx.func.name = UserFuncName::user(0, id.as_u32());
    let helper_ref = m.jit.get().declare_func_in_func(helper, &mut ctx.func);
    {
        let mut b = FunctionBuilder::new(&mut ctx.func, fctx);
        let entry = b.create_block();
        b.append_block_params_for_function_params(entry);
        b.switch_to_block(entry);
        let (state, need) = (b.block_params(entry)[0], b.block_params(entry)[1]);
        b.ins().call(helper_ref, &[state, need]);
        b.ins().return_(&[]);
        b.seal_all_blocks();
        b.finalize(m.frontend_config);
    }
    m.jit
        .get()
        .define_function(id, ctx)
        .map_err(|e| JitError::Codegen { function: "tape grow wrapper".into(), message: format!("{e:?}") })?;
    m.jit.get().clear_context(ctx);
    Ok(())
}
