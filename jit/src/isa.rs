//! The host target ISA, built once per distinct set of flags and shared by every module.

use crate::error::JitError;
use crate::options::{OptLevel, RegAlloc};
use cranelift_codegen::isa::OwnedTargetIsa;
use cranelift_codegen::settings::{self, Configurable};
use rustc_hash::FxHashMap as HashMap;
use std::sync::{Mutex, OnceLock};

/// The flags that distinguish one cached ISA from another.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct IsaKey {
    pub opt_level: OptLevel,
    /// `true` for the single-pass register allocator (after resolving [`RegAlloc::Auto`]).
    pub single_pass: bool,
    /// Run Cranelift's IR verifier (debug builds, functions below the size threshold: it is
    /// quadratic in the operands of one instruction, a call with 40,000 argument words).
    pub verify: bool,
}

impl IsaKey {
    /// Resolve the options for a module whose largest function has size `max_insts` (see
    /// `options::compile_size`).
    pub fn new(opt_level: OptLevel, regalloc: RegAlloc, max_insts: usize) -> IsaKey {
        let large = max_insts > RegAlloc::AUTO_SINGLE_PASS_THRESHOLD;
        let single_pass = match regalloc {
            RegAlloc::SinglePass => true,
            RegAlloc::Backtracking => false,
            RegAlloc::Auto => large,
        };
        let opt_level = match opt_level {
            OptLevel::Auto if large => OptLevel::None,
            OptLevel::Auto => OptLevel::Speed,
            level => level,
        };
        IsaKey { opt_level, single_pass, verify: cfg!(debug_assertions) && !large }
    }
}

/// The host ISA for `key`. Building one costs about 8 µs and an `OwnedTargetIsa` is an
/// `Arc`, so each distinct key is built once per process.
pub(crate) fn host_isa(key: IsaKey) -> Result<OwnedTargetIsa, JitError> {
    static CACHE: OnceLock<Mutex<HashMap<IsaKey, OwnedTargetIsa>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    // A poisoned lock only means another thread panicked while inserting; the map is still valid.
    let mut map = cache.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(isa) = map.get(&key) {
        return Ok(isa.clone());
    }
    let isa = build_isa(key)?;
    map.insert(key, isa.clone());
    Ok(isa)
}

fn build_isa(key: IsaKey) -> Result<OwnedTargetIsa, JitError> {
    let setting = |name: &str, value: &str| JitError::Isa(format!("cannot set Cranelift flag {name}={value}"));
    let mut flags = settings::builder();
    let mut set = |name: &'static str, value: &'static str| flags.set(name, value).map_err(|_| setting(name, value));
    set("opt_level", if key.opt_level == OptLevel::Speed { "speed" } else { "none" })?;
    set("regalloc_algorithm", if key.single_pass { "single_pass" } else { "backtracking" })?;
    // cranelift-jit needs non-PIC code, and far libcalls must not use 32-bit relocations
    // (`JITBuilder::with_isa` does not force these the way `with_flags` does).
    set("is_pic", "false")?;
    set("use_colocated_libcalls", "false")?;
    // Cranelift's IR verifier checks our lowering: on in debug builds (every test runs with it,
    // including thousands of random programs) for all but very large functions, off in release
    // builds, where it would cost 10-15% of compile time.
    set("enable_verifier", if key.verify { "true" } else { "false" })?;
    // Large frames (deep recursion of big functions) must hit the guard page, never skip it.
    set("enable_probestack", "true")?;
    set("probestack_strategy", "inline")?;
    let builder = cranelift_native::builder()
        .map_err(|e| JitError::Isa(format!("this host is not supported by Cranelift: {e}")))?;
    builder.finish(settings::Flags::new(flags)).map_err(|e| JitError::Isa(format!("cannot build the host ISA: {e}")))
}
