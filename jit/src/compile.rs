//! [`compile`]: verify, resolve externs, set up the JIT module, lower, finalize, wrap in handles.

use crate::abi::slots_of;
use crate::closure::ClosureCtx;
use crate::direct::FramePlan;
use crate::error::JitError;
use crate::handle::{CompiledModule, FnInfo, ModuleInner};
use crate::isa::{IsaKey, host_isa};
use crate::lower::{OwnedJit, ResolvedExtern, lower_module};
use crate::options::{JitOptions, OptLevel};
use cranelift_jit::{JITBuilder, JITModule};
use jitdiff_ir::{ExternImpl, ExternRegistry, Module};
use rustc_hash::FxHashMap as HashMap;
use std::sync::Mutex;

/// Compile every function of `module` to native code.
///
/// The module must pass [`jitdiff_ir::verify_module`] ([`JitError::Verify`] otherwise), and every
/// extern it declares must be registered in `externs` with the declared signature
/// ([`JitError::Extern`] otherwise). Math primitives call the very functions of
/// [`jitdiff_ir::math`] the interpreter calls, so results agree bit for bit.
///
/// ```
/// use jitdiff_ir::{parse_module, ExternRegistry, RuntimeValue};
/// use jitdiff_jit::{compile, Arg, JitOptions};
/// let ir = parse_module("extern @twice(f64) -> f64\n\nfunc @f(x: f64) -> f64 {\nentry:\n    y = call @twice(x)\n    ret y\n}\n").unwrap();
/// extern "C" fn twice(x: f64) -> f64 { 2.0 * x }
/// let mut externs = ExternRegistry::new();
/// externs.register_f1("twice", twice);
/// let compiled = compile(&ir, &externs, &JitOptions::new()).unwrap();
/// let out = compiled.function("f").unwrap().call(&mut [Arg::F64(1.5)]).unwrap();
/// assert_eq!(out, vec![RuntimeValue::F64(3.0)]);
/// // Without the extern registered, compilation fails and names the symbol.
/// let err = compile(&ir, &ExternRegistry::new(), &JitOptions::new()).unwrap_err();
/// assert!(err.to_string().contains("@twice"));
/// ```
pub fn compile(module: &Module, externs: &ExternRegistry, options: &JitOptions) -> Result<CompiledModule, JitError> {
    jitdiff_ir::verify_module(module)?;
    externs.check_module(module)?;
    let shadows = crate::shadow::resolve(module, options.shadow_slices())?;
    // From here on the module with its leaf calls inlined (same functions, same reports).
    let inlined = crate::inline::inline_leaves(module);
    let module: &Module = &inlined;

    let mut closures: Vec<Box<ClosureCtx>> = vec![];
    let mut resolved = Vec::with_capacity(module.externs.len());
    let mut symbols: Vec<(String, *const u8)> = vec![];
    for (index, decl) in module.externs.iter().enumerate() {
        // `check_module` guarantees every extern is registered with the declared signature.
        let Some(implementation) = externs.get(&decl.name) else {
            return Err(JitError::UnsupportedExtern { name: decl.name.clone(), reason: "not registered".into() });
        };
        let symbol = format!("jitdiff_extern_{index}");
        let (pointer, arity) = match implementation {
            ExternImpl::F1(f) => (*f as *const u8, 1),
            ExternImpl::F2(f) => (*f as *const u8, 2),
            ExternImpl::F3(f) => (*f as *const u8, 3),
            ExternImpl::F4(f) => (*f as *const u8, 4),
            ExternImpl::Closure { f, .. } => {
                let ctx = Box::new(ClosureCtx {
                    name: decl.name.clone(),
                    params: decl.params.clone(),
                    returns: decl.returns.clone(),
                    f: f.clone(),
                });
                // The box's heap address stays put when the box moves into `closures`.
                resolved.push(ResolvedExtern::Closure { ctx: &*ctx as *const ClosureCtx });
                closures.push(ctx);
                continue;
            }
        };
        symbols.push((symbol.clone(), pointer));
        resolved.push(ResolvedExtern::Direct { symbol, arity });
    }

    let largest = module.functions.iter().map(crate::options::compile_size).max();
    let key = IsaKey::new(options.get_opt_level(), options.get_regalloc(), largest.unwrap_or(0));
    let isa = host_isa(key)?;
    let mut builder = JITBuilder::with_isa(isa, cranelift_module::default_libcall_names());
    crate::symbols::register_math(&mut builder);
    crate::symbols::register_runtime(&mut builder);
    for (name, pointer) in symbols {
        builder.symbol(name, pointer);
    }
    let jit = OwnedJit::new(JITModule::new(builder));
    let lowered = lower_module(
        module,
        jit,
        &resolved,
        options.bounds_checks_enabled(),
        key.opt_level == OptLevel::None,
        shadows,
    )?;

    let tape_users = crate::callgraph::needs_tape(module);
    let functions: Vec<FnInfo> = module
        .functions
        .iter()
        .zip(lowered.entries)
        .zip(lowered.internals)
        .zip(lowered.check_stats)
        .zip(tape_users)
        .map(|((((f, entry), internal), checks), needs_tape)| {
            let params = f.param_types();
            let plan = FramePlan::new(&params, slots_of(&params), slots_of(&f.returns), lowered.system_v);
            FnInfo {
                name: f.name.clone(),
                param_names: f.params.iter().map(|&p| f.value_label(p)).collect(),
                checks,
                arg_slots: slots_of(&params),
                result_slots: slots_of(&f.returns),
                params,
                returns: f.returns.clone(),
                entry,
                internal,
                needs_tape,
                plan,
            }
        })
        .collect();
    let by_name: HashMap<String, usize> = functions.iter().enumerate().map(|(i, f)| (f.name.clone(), i)).collect();
    Ok(CompiledModule::new(ModuleInner {
        functions,
        by_name,
        block_labels: module.functions.iter().map(|f| f.blocks.iter().map(|b| b.name.clone()).collect()).collect(),
        sites: lowered.sites,
        bounds_checks: options.bounds_checks_enabled(),
        tape_limit: options.get_tape_limit(),
        _closures: closures,
        _constants: lowered.constants,
        _jit: Mutex::new(lowered.jit),
    }))
}
