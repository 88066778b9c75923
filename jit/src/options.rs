//! Compile options: optimisation level, register allocator, and the bounds-check switch.

/// How hard Cranelift optimises (its `opt_level` setting).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum OptLevel {
    /// No mid-end optimisation: slightly faster to compile, the same speed on simple loops.
    None,
    /// Cranelift's e-graph mid-end (`opt_level = "speed"`). The default.
    #[default]
    Speed,
}

/// Which register allocator Cranelift uses.
///
/// Cranelift's default (backtracking) allocator produces the best code but is super-linear in
/// compile time when very many values are live at once (straight-line code of tens of thousands
/// of instructions); the single-pass allocator compiles in linear time and produces slower code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum RegAlloc {
    /// Backtracking, unless some function of the module has more than
    /// [`RegAlloc::AUTO_SINGLE_PASS_THRESHOLD`] instructions. The default.
    #[default]
    Auto,
    /// Always the backtracking allocator (best code).
    Backtracking,
    /// Always the single-pass allocator (linear compile time).
    SinglePass,
}

impl RegAlloc {
    /// Instruction count of the largest function above which [`RegAlloc::Auto`] picks the
    /// single-pass allocator.
    pub const AUTO_SINGLE_PASS_THRESHOLD: usize = 20_000;
}

/// Options for [`compile`](crate::compile).
///
/// ```
/// use jitdiff_jit::{JitOptions, OptLevel};
/// let options = JitOptions::new().opt_level(OptLevel::Speed);
/// assert!(options.bounds_checks_enabled());
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct JitOptions {
    opt_level: OptLevel,
    regalloc: RegAlloc,
    // Private so that safe code cannot turn the checks off: see `without_bounds_checks`.
    bounds_checks: bool,
}

impl Default for JitOptions {
    fn default() -> Self {
        JitOptions { opt_level: OptLevel::Speed, regalloc: RegAlloc::Auto, bounds_checks: true }
    }
}

impl JitOptions {
    /// The defaults: `OptLevel::Speed`, `RegAlloc::Auto`, bounds checks on.
    pub fn new() -> JitOptions {
        JitOptions::default()
    }
    /// Set the optimisation level.
    pub fn opt_level(mut self, level: OptLevel) -> JitOptions {
        self.opt_level = level;
        self
    }
    /// Set the register allocator.
    pub fn regalloc(mut self, regalloc: RegAlloc) -> JitOptions {
        self.regalloc = regalloc;
        self
    }
    /// The optimisation level.
    pub fn get_opt_level(&self) -> OptLevel {
        self.opt_level
    }
    /// The register allocator choice.
    pub fn get_regalloc(&self) -> RegAlloc {
        self.regalloc
    }
    /// Are `load`/`store`/`vload`/`vstore` indices checked in native code? (Always, unless the
    /// options came from [`JitOptions::without_bounds_checks`].)
    pub fn bounds_checks_enabled(&self) -> bool {
        self.bounds_checks
    }
    /// Compile without bounds checks on slice accesses. Meant for benchmarking the cost of the
    /// checks; division-by-zero and call-depth checks stay on.
    ///
    /// # Safety
    ///
    /// Native code compiled with these options reads and writes `ptr + 8 * index` for every
    /// `load`, `store`, `vload` and `vstore` without comparing the index with the slice length.
    /// The caller promises that every function of a module compiled with these options is only
    /// ever called with arguments for which every such index is in bounds; otherwise the call is
    /// undefined behaviour (it may read or corrupt arbitrary memory), even though
    /// [`CompiledFn::call`](crate::CompiledFn::call) itself is a safe function.
    pub unsafe fn without_bounds_checks(mut self) -> JitOptions {
        self.bounds_checks = false;
        self
    }
}
