//! Compile options: optimisation level, register allocator, shadow-slice declarations, and the
//! bounds-check switch.

use crate::shadow::ShadowSlice;

/// How hard Cranelift optimises (its `opt_level` setting).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum OptLevel {
    /// `Speed`, unless some function of the module is larger than
    /// [`RegAlloc::AUTO_SINGLE_PASS_THRESHOLD`] (instructions and terminators, and the values at
    /// calls and at its boundary): then `None`, so that compile time stays near linear in program size
    /// (long straight-line code, long chains of blocks, deep loop nests, wide calls). The
    /// default.
    #[default]
    Auto,
    /// No mid-end optimisation: faster to compile, the same speed on simple loops (jitdiff's
    /// own passes have already folded, merged and hoisted).
    None,
    /// Cranelift's e-graph mid-end (`opt_level = "speed"`).
    Speed,
}

/// Which register allocator Cranelift uses.
///
/// Cranelift's default (backtracking) allocator produces the best code but is super-linear in
/// compile time when very many values are live at once (straight-line code of tens of thousands
/// of instructions); the single-pass allocator compiles in linear time and produces slower code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum RegAlloc {
    /// Backtracking, unless some function of the module is larger than
    /// [`RegAlloc::AUTO_SINGLE_PASS_THRESHOLD`] (instructions and terminators, and the values at
    /// calls and at its boundary). The default.
    #[default]
    Auto,
    /// Always the backtracking allocator (best code).
    Backtracking,
    /// Always the single-pass allocator (linear compile time).
    SinglePass,
}

/// A function's size for [`RegAlloc::AUTO_SINGLE_PASS_THRESHOLD`]: its instructions and
/// terminators, plus twice the values crossing its calls and its own boundary (parameters,
/// results, call arguments and call results). A deep loop nest of few instructions per block
/// is as costly for the mid-end and the backtracking allocator as long code (their loop and
/// liveness analyses grow with blocks times live values), and so is a call of hundreds of
/// arguments or results, or a function of hundreds of parameters or results: values all live
/// at once, from their definitions to the call or the return.
pub(crate) fn compile_size(f: &jitdiff_ir::Function) -> usize {
    let call_args: usize = f
        .blocks
        .iter()
        .flat_map(|b| &b.insts)
        .filter(|i| i.op == jitdiff_ir::Opcode::Call)
        .map(|i| i.args.len() + i.results.len())
        .sum();
    let boundary = f.params.len() + f.returns.len() + call_args;
    f.blocks.iter().map(|b| b.insts.len() + 1).sum::<usize>() + 2 * boundary + nesting_cost(f)
}

/// The extra cost of deep loop nests: a sixteenth of each block's loop depth squared. Cranelift
/// walks a value's enclosing loops to hoist it and the backtracking allocator follows values
/// live across every level, so a nest of depth `d` costs the optimising path about `d` times
/// its size (depth 200, 800 instructions: 60 ms). Depths of 4 or less, as in every benchmark
/// and GradBench program (at most 21 per function), add next to nothing; a nest deeper than
/// about 20 crosses the threshold on its own.
fn nesting_cost(f: &jitdiff_ir::Function) -> usize {
    if !jitdiff_ir::analysis::has_back_edge(f) {
        return 0;
    }
    let cfg = jitdiff_ir::analysis::ControlFlow::new(f);
    let depths = cfg.loop_depths(&cfg.natural_loops());
    depths.iter().map(|&d| (d as usize).pow(2)).sum::<usize>() / 16
}

impl RegAlloc {
    /// Size of the largest function — instructions and terminators, plus twice the values
    /// crossing its calls and its boundary (parameters, results, call arguments and results),
    /// plus a sixteenth of each block's loop depth squared — above which [`RegAlloc::Auto`] picks the single-pass allocator (and [`OptLevel::Auto`]
    /// no mid-end). The benchmark programs' derivatives are a few hundred per function; long
    /// straight-line code (a residual written out term by term) compiles in linear time past
    /// this, with slower code when very many values are live. Blocks count because the
    /// mid-end's loop analysis and the backtracking allocator's liveness grow with blocks times
    /// live values: a nest of 400 loops (800 instructions in 800 blocks) took 249 ms to compile
    /// with them and 38 ms without; the values at calls and boundaries because they are live at
    /// once (a call of 300 arguments: 20 ms with them, 4 ms without).
    pub const AUTO_SINGLE_PASS_THRESHOLD: usize = 1_000;
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
    shadows: Vec<ShadowSlice>,
    tape_limit: usize,
}

impl Default for JitOptions {
    fn default() -> Self {
        JitOptions {
            opt_level: OptLevel::Auto,
            regalloc: RegAlloc::Auto,
            bounds_checks: true,
            shadows: vec![],
            tape_limit: jitdiff_ir::Tape::DEFAULT_LIMIT_BYTES,
        }
    }
}

impl JitOptions {
    /// The defaults: `OptLevel::Auto`, `RegAlloc::Auto`, bounds checks on.
    pub fn new() -> JitOptions {
        JitOptions::default()
    }
    /// Set the optimisation level.
    pub fn opt_level(mut self, level: OptLevel) -> JitOptions {
        self.opt_level = level;
        self
    }
    /// Limit the tape a call of the compiled code may grow to, in bytes (4 GiB by default; a
    /// tape's own lower limit, [`Tape::set_limit_bytes`](jitdiff_ir::Tape::set_limit_bytes),
    /// also holds). Reverse mode records its pullback state on the tape, so a loop that runs far
    /// longer than intended stops with a `TapeAllocation` error at this size instead of taking
    /// the machine's memory.
    ///
    /// ```
    /// use jitdiff_jit::JitOptions;
    /// assert_eq!(JitOptions::new().get_tape_limit(), 4 << 30);
    /// assert_eq!(JitOptions::new().tape_limit(1 << 20).get_tape_limit(), 1 << 20);
    /// ```
    pub fn tape_limit(mut self, bytes: usize) -> JitOptions {
        self.tape_limit = bytes;
        self
    }
    /// The tape limit in bytes.
    pub fn get_tape_limit(&self) -> usize {
        self.tape_limit
    }
    /// Set the register allocator.
    pub fn regalloc(mut self, regalloc: RegAlloc) -> JitOptions {
        self.regalloc = regalloc;
        self
    }
    /// Declare that slice parameter `shadow` of `@function` holds `lanes` entries per element of
    /// slice parameter `primal` — a tangent slice and its primal. The compiled function checks
    /// `len(shadow) == lanes * len(primal)` when it is entered (failing with
    /// [`CallError::ShadowLength`](crate::CallError::ShadowLength) otherwise, before any
    /// other instruction runs) and in exchange skips the bounds check of an access to one of
    /// the two slices at an index value that a dominating, already checked access to the other
    /// (or to the same slice) used with a covering width. Safe: the entry check and the earlier
    /// check together prove the access in bounds. The declaration is an extra precondition
    /// only native code has; the interpreter ignores it.
    ///
    /// ```
    /// use jitdiff_ir::{parse_module, ExternRegistry};
    /// use jitdiff_jit::{compile, Arg, JitOptions};
    /// let ir = parse_module("func @f(x: slice, d: slice, i: i64) -> f64 {\nentry:\n    a = load x, i\n    b = load d, i\n    c = fmul a, b\n    ret c\n}\n").unwrap();
    /// let options = JitOptions::new().shadow_slice("f", 1, 0, 1);
    /// let f = compile(&ir, &ExternRegistry::new(), &options).unwrap().function("f").unwrap();
    /// assert_eq!(f.bounds_check_stats().elided, 1);
    /// assert!(f.call(&mut [Arg::Slice(&[2.0]), Arg::Slice(&[3.0]), Arg::I64(0)]).is_ok());
    /// let err = f.call(&mut [Arg::Slice(&[2.0, 1.0]), Arg::Slice(&[3.0]), Arg::I64(1)]).unwrap_err();
    /// assert_eq!(err.to_string(), "shadow slice d must hold 1 entries per element of x: x has length 2, \
    ///                              so d needs length 2, but has 1 (at @f, block entry, inst 0)");
    /// ```
    pub fn shadow_slice(mut self, function: &str, shadow: usize, primal: usize, lanes: u8) -> JitOptions {
        self.shadows.push(ShadowSlice { function: function.to_string(), shadow, primal, lanes });
        self
    }
    /// The shadow-slice declarations, in the order they were made.
    pub fn shadow_slices(&self) -> &[ShadowSlice] {
        &self.shadows
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

#[cfg(test)]
mod tests {
    use super::{RegAlloc, compile_size};

    /// `@f` calls `@g` with `n` arguments; `@g` adds them up.
    fn wide(n: usize) -> jitdiff_ir::Module {
        let params: Vec<String> = (0..n).map(|k| format!("p{k}: f64")).collect();
        let mut text = format!("func @g({}) -> f64 {{\nentry:\n    s0 = fconst 0.0\n", params.join(", "));
        for k in 0..n {
            text += &format!("    s{} = fadd s{k}, p{k}\n", k + 1);
        }
        text += &format!("    ret s{n}\n}}\n\nfunc @f(x: f64) -> f64 {{\nentry:\n");
        let args = vec!["x"; n].join(", ");
        text += &format!("    y = call @g({args})\n    ret y\n}}\n");
        jitdiff_ir::parse_module(&text).expect("parses")
    }

    #[test]
    fn values_crossing_calls_and_boundaries_count_twice() {
        let m = wide(3);
        // @g: 4 instructions + 1 terminator, and 3 parameters + 1 result, twice.
        assert_eq!(compile_size(&m.functions[0]), 5 + 2 * 4);
        // @f: 1 instruction + 1 terminator, and 1 parameter + 1 result + 3 arguments + 1 call
        // result, twice.
        assert_eq!(compile_size(&m.functions[1]), 2 + 2 * 6);
        // 400 parameters take the fast path though @g has 402 instructions and terminators.
        let wide = wide(400);
        assert!(compile_size(&wide.functions[0]) > RegAlloc::AUTO_SINGLE_PASS_THRESHOLD);
        assert!(compile_size(&wide.functions[1]) < RegAlloc::AUTO_SINGLE_PASS_THRESHOLD);
    }

    /// `depth` loops nested in each other, each a header, a body entering the next and a latch.
    fn nest(depth: usize) -> jitdiff_ir::Function {
        let mut text = String::from("func @f(x: f64, n: i64) -> f64 {\nentry:\n    one = iconst 1\n    jump h0(one)\n");
        for d in 0..depth {
            text += &format!("h{d}(i{d}: i64):\n    m{d} = icmp lt i{d}, n\n    br m{d}, e{d}, x{d}\ne{d}:\n");
            text += &match d + 1 < depth {
                true => format!("    jump h{}(one)\n", d + 1),
                false => format!("    jump x{d}\n"),
            };
        }
        for d in (0..depth).rev() {
            let after = if d == 0 {
                "    ret x\n".to_string()
            } else {
                format!("    j{d} = iadd i{}, one\n    jump h{}(j{d})\n", d - 1, d - 1)
            };
            text += &format!("x{d}:\n{after}");
        }
        text += "}\n";
        jitdiff_ir::parse_module(&text).expect("parses").functions.remove(0)
    }

    #[test]
    fn deep_loop_nests_cost_more_than_their_instructions() {
        let plain = |f: &jitdiff_ir::Function| {
            f.blocks.iter().map(|b| b.insts.len() + 1).sum::<usize>() + 2 * (f.params.len() + f.returns.len())
        };
        // Four levels, as deep as the benchmarks go: a few units more.
        let shallow = nest(4);
        assert!(compile_size(&shallow) - plain(&shallow) < 10, "{}", compile_size(&shallow));
        // Fifty levels of a few hundred instructions take the fast path.
        let deep = nest(50);
        assert!(plain(&deep) < 400);
        assert!(compile_size(&deep) > RegAlloc::AUTO_SINGLE_PASS_THRESHOLD);
    }
}
