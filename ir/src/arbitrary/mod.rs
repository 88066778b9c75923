//! Random well-formed, terminating modules for property tests (feature `arbitrary`).
//!
//! Every generated module is built with the [builder](crate::builder), so it is canonical and
//! well-formed by construction, and it terminates: functions call only functions generated
//! before them (an acyclic call graph), and every loop is `for i in start..end` with `end`
//! clamped to at most [`GenConfig::max_trip`]. The work of one call (instructions and
//! terminators executed, callees included) is at most [`GenConfig::max_cost`].
//!
//! Programs are decoded from streams of random `u32` choices — one stream per function, read in
//! fixed-size records (one per statement), plus one for the arguments. A choice of 0 (and an
//! exhausted stream) always picks the simplest option, so shrinking (fewer streams, shorter
//! streams, deleted records, zeroed choices) shrinks the program: fewer functions, fewer
//! statements, simpler operations. [`generate_module`] and
//! [`generate_case`] expose the decoder for reproducing a case from saved streams.
//!
//! ```
//! use jitdiff_ir::arbitrary::{GenConfig, arb_case};
//! use proptest::strategy::{Strategy, ValueTree};
//! use proptest::test_runner::TestRunner;
//!
//! let mut runner = TestRunner::deterministic();
//! let (module, entry, args) = arb_case(GenConfig::smooth()).new_tree(&mut runner).unwrap().current();
//! let f = module.func_by_name(&entry).unwrap();
//! assert_eq!(f.param_types(), args.iter().map(|a| a.ty()).collect::<Vec<_>>());
//! ```

mod control;
mod emit;
mod generate;
mod shrink;

pub use shrink::{StreamsStrategy, StreamsTree};

use crate::externs::ExternRegistry;
use crate::function::{ExternDecl, Module};
use crate::interp::ArgValue;
use crate::opcode::MathFn;
use crate::types::Type;
use proptest::prelude::*;

/// The name of the entry function of generated cases (the last function of the module, which may
/// call every other one).
pub const ENTRY_NAME: &str = "main";

/// What the generator may produce. Start from a preset ([`GenConfig::default`],
/// [`GenConfig::smooth`], [`GenConfig::full`]) and adjust fields.
///
/// ```
/// use jitdiff_ir::arbitrary::GenConfig;
/// let cfg = GenConfig { allow_loops: false, max_functions: 1, ..GenConfig::smooth() };
/// assert!(cfg.smooth_only);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct GenConfig {
    /// At most this many functions per module (at least 1).
    pub max_functions: usize,
    /// At most this many parameters per function.
    pub max_params: usize,
    /// At most this many results per function (at least 1, unless a function has an `mslice`).
    pub max_returns: usize,
    /// At most this many statements per straight-line region (a branch side, a loop body; a
    /// function's top level gets twice as many). A statement is one operation or one nested
    /// construct.
    pub max_stmts: usize,
    /// How deeply loops and branches nest.
    pub max_depth: usize,
    /// Every loop runs at most this many iterations.
    pub max_trip: i64,
    /// One call of any generated function executes at most this many instructions and
    /// terminators (callees included; what the interpreter's step limit counts). The generator
    /// measures what it emits and stops adding statements before the bound could be exceeded.
    pub max_cost: u64,
    /// Slice arguments of generated cases have at most this many elements.
    pub max_slice_len: usize,
    /// Float arguments (and slice elements) of generated cases lie in `[-arg_magnitude, arg_magnitude]`.
    pub arg_magnitude: f64,
    /// Counted loops with carried values.
    pub allow_loops: bool,
    /// If/else with joined values (and, rarely, an early `ret` in one side).
    pub allow_branches: bool,
    /// Calls to functions generated earlier in the module.
    pub allow_calls: bool,
    /// Calls to the standard externs `ext_scale` and `ext_mix` (see [`standard_extern_semantics`]).
    pub allow_externs: bool,
    /// `slice` parameters, `len` and `load`.
    pub allow_slices: bool,
    /// `mslice` parameters and `store` (needs `allow_slices`).
    pub allow_stores: bool,
    /// `f64xW` values: splat, lane-wise arithmetic, extract, insert, vload, vstore; vector
    /// parameters and results of non-entry functions.
    pub allow_vectors: bool,
    /// The widest vector generated (2, 4, 8 or 16).
    pub max_vector_width: u8,
    /// `idiv` and `irem` statements (by non-zero constants unless `allow_runtime_errors`).
    /// Index guards use `irem` by a checked-positive length regardless.
    pub allow_int_div: bool,
    /// Operations that can fail at run time: division by a possibly-zero integer, loads and
    /// stores at unchecked indices.
    pub allow_runtime_errors: bool,
    /// Keep every function smooth in its float inputs: no `floor ceil sign abs min max`, no
    /// float comparisons or `ftoi` (so no control or integer depends on a float), math domains
    /// kept safe (`ln(x*x+1)`, `sqrt(x*x+1)`, `asin(0.9*tanh(x))`, `x / (y*y+1)`, `pow(x*x+1, y)`,
    /// `atan2(y, x*x+1)` ...) and magnitudes kept moderate by smooth squashing
    /// (`L*tanh(x/L)`), so values stay finite. Results are `f64` only.
    pub smooth_only: bool,
    /// With `smooth_only`: also the piecewise-smooth primitives — `abs min max sign floor ceil`,
    /// float comparisons (so selects, branches, loop trip counts and indices may depend on
    /// floats) and `ftoi` — on squashed operands, and entry arguments offset off the grid of
    /// round numbers, so a kink is hit exactly only by chance. Derivatives are then exact almost
    /// everywhere; a finite-difference check must skip points within its step of a kink (e.g.
    /// by comparing two step sizes).
    pub allow_kinks: bool,
    /// The length range of each function's random choice stream; longer streams give larger
    /// functions (up to the other limits).
    pub choices: std::ops::Range<usize>,
}

impl Default for GenConfig {
    /// Every construct and opcode, vectors up to `f64x4`, no run-time errors (indices are
    /// checked, divisors are non-zero constants). NaN and infinities may occur.
    fn default() -> GenConfig {
        GenConfig {
            max_functions: 3,
            max_params: 4,
            max_returns: 2,
            max_stmts: 8,
            max_depth: 2,
            max_trip: 5,
            max_cost: 4_000,
            max_slice_len: 6,
            arg_magnitude: 2.0,
            allow_loops: true,
            allow_branches: true,
            allow_calls: true,
            allow_externs: true,
            allow_slices: true,
            allow_stores: true,
            allow_vectors: true,
            max_vector_width: 4,
            allow_int_div: true,
            allow_runtime_errors: false,
            smooth_only: false,
            allow_kinks: false,
            choices: 24..1200,
        }
    }
}

impl GenConfig {
    /// Smooth programs for derivative checks (AD against finite differences): see
    /// [`smooth_only`](Self::smooth_only). Externs and vectors are off (they need derivative
    /// rules and vector primal support); switch them on when the code under test has those.
    pub fn smooth() -> GenConfig {
        GenConfig { smooth_only: true, allow_externs: false, allow_vectors: false, ..GenConfig::default() }
    }
    /// [`GenConfig::smooth`] plus the piecewise-smooth primitives ([`allow_kinks`](Self::allow_kinks)):
    /// every scalar primitive appears, and control flow may depend on floats.
    ///
    /// ```
    /// use jitdiff_ir::arbitrary::GenConfig;
    /// assert!(GenConfig::piecewise().smooth_only && GenConfig::piecewise().allow_kinks);
    /// ```
    pub fn piecewise() -> GenConfig {
        GenConfig { allow_kinks: true, ..GenConfig::smooth() }
    }
    /// Everything: every opcode, vectors up to `f64x16`, special float constants (NaN, ±inf,
    /// -0.0, subnormals), extreme integers, and operations that can fail at run time
    /// (out-of-bounds loads and stores, division by zero).
    pub fn full() -> GenConfig {
        GenConfig { allow_runtime_errors: true, max_vector_width: 16, ..GenConfig::default() }
    }
    /// Only straight-line code in one function (no loops, branches or calls): small cases that
    /// exercise the opcodes themselves.
    pub fn straight_line(self) -> GenConfig {
        GenConfig { max_functions: 1, allow_loops: false, allow_branches: false, allow_calls: false, ..self }
    }
}

/// A plain description of one argument value, converted by the caller into interpreter or JIT
/// arguments.
#[derive(Clone, Debug, PartialEq)]
pub enum ArgSpec {
    /// An `f64`.
    F64(f64),
    /// An `i64`.
    I64(i64),
    /// A `bool`.
    Bool(bool),
    /// A read-only slice (`slice`).
    Slice(Vec<f64>),
    /// A mutable slice (`mslice`); its final contents are part of the result.
    SliceMut(Vec<f64>),
}

impl ArgSpec {
    /// The IR type of the parameter this argument is for.
    pub fn ty(&self) -> Type {
        match self {
            ArgSpec::F64(_) => Type::F64,
            ArgSpec::I64(_) => Type::I64,
            ArgSpec::Bool(_) => Type::Bool,
            ArgSpec::Slice(_) => Type::Slice,
            ArgSpec::SliceMut(_) => Type::SliceMut,
        }
    }
    /// The interpreter argument for this description.
    pub fn to_arg_value(&self) -> ArgValue {
        match self {
            ArgSpec::F64(x) => ArgValue::F64(*x),
            ArgSpec::I64(x) => ArgValue::I64(*x),
            ArgSpec::Bool(x) => ArgValue::Bool(*x),
            ArgSpec::Slice(xs) => ArgValue::Slice(xs.clone()),
            ArgSpec::SliceMut(xs) => ArgValue::SliceMut(xs.clone()),
        }
    }
}

/// `ext_scale(x) = 1.5 * x + 0.25`: the semantics of the standard extern `@ext_scale(f64) -> f64`.
pub extern "C" fn ext_scale(x: f64) -> f64 {
    1.5 * x + 0.25
}

/// `ext_mix(a, b) = a * 0.5 + b * b * 0.25`: the semantics of the standard extern
/// `@ext_mix(f64, f64) -> f64`.
pub extern "C" fn ext_mix(a: f64, b: f64) -> f64 {
    a * 0.5 + b * b * 0.25
}

/// The externs generated modules may declare and call, with their semantics, for registering
/// with the interpreter or the JIT: `@ext_scale(f64) -> f64` is [`ext_scale`] and
/// `@ext_mix(f64, f64) -> f64` is [`ext_mix`]. Both are smooth.
///
/// ```
/// use jitdiff_ir::{MathFn, arbitrary::standard_extern_semantics};
/// for (decl, f) in standard_extern_semantics() {
///     match (decl.name.as_str(), f) {
///         ("ext_scale", MathFn::Unary(g)) => assert_eq!(g(2.0), 3.25),
///         ("ext_mix", MathFn::Binary(g)) => assert_eq!(g(2.0, 2.0), 2.0),
///         _ => unreachable!(),
///     }
/// }
/// ```
pub fn standard_extern_semantics() -> Vec<(ExternDecl, MathFn)> {
    vec![
        (
            ExternDecl {
                name: "ext_scale".into(),
                params: vec![Type::F64],
                returns: vec![Type::F64],
                derivative: None,
            },
            MathFn::Unary(ext_scale),
        ),
        (
            ExternDecl {
                name: "ext_mix".into(),
                params: vec![Type::F64, Type::F64],
                returns: vec![Type::F64],
                derivative: None,
            },
            MathFn::Binary(ext_mix),
        ),
    ]
}

/// An [`ExternRegistry`] with the standard externs of [`standard_extern_semantics`], for
/// running generated modules in the interpreter.
///
/// ```
/// use jitdiff_ir::arbitrary::standard_extern_registry;
/// let reg = standard_extern_registry();
/// assert_eq!(reg.names().collect::<Vec<_>>(), ["ext_mix", "ext_scale"]);
/// ```
pub fn standard_extern_registry() -> ExternRegistry {
    let mut reg = ExternRegistry::new();
    reg.register_f1("ext_scale", ext_scale).register_f2("ext_mix", ext_mix);
    reg
}

/// Decode a module from choice streams (the decoder behind [`arb_module`]): `streams[0]` gives
/// the arguments, `streams[k + 1]` function `k` (at least one function, at most
/// [`GenConfig::max_functions`]; the last is [`ENTRY_NAME`]). Deterministic: the same
/// configuration and streams give the same module.
///
/// ```
/// use jitdiff_ir::arbitrary::{GenConfig, generate_module};
/// let streams = vec![vec![], vec![7, 1, 2, 3, 99, 12], vec![4, 4, 4]];
/// let m = generate_module(&GenConfig::default(), &streams);
/// assert_eq!(m.functions.len(), 2);
/// assert!(m.func_by_name("main").is_some());
/// assert_eq!(m, generate_module(&GenConfig::default(), &streams));
/// ```
pub fn generate_module(cfg: &GenConfig, streams: &[Vec<u32>]) -> Module {
    generate_case(cfg, streams).0
}

/// Decode a case — module, entry function name, arguments — from choice streams (the decoder
/// behind [`arb_case`]; see [`generate_module`]).
pub fn generate_case(cfg: &GenConfig, streams: &[Vec<u32>]) -> (Module, String, Vec<ArgSpec>) {
    generate::Generator::new(cfg, streams).case()
}

/// Which choices of `streams` the decoder reads (the others do not affect the case).
fn touched_choices(cfg: &GenConfig, streams: &[Vec<u32>]) -> Vec<Vec<bool>> {
    let mut g = generate::Generator::new(cfg, streams);
    g.case();
    g.touched
}

/// Random choice streams for `cfg`: one for the arguments and one per function. They shrink by
/// dropping functions, truncating streams, zeroing and decrementing choices.
pub fn arb_streams(cfg: &GenConfig) -> StreamsStrategy {
    StreamsStrategy::new(cfg.clone(), 2..=cfg.max_functions.max(1) + 1, cfg.choices.clone())
}

/// Random modules: see the [module docs](self).
pub fn arb_module(cfg: GenConfig) -> impl Strategy<Value = Module> {
    arb_streams(&cfg).prop_map(move |streams| generate_module(&cfg, &streams))
}

/// Random cases: a module, the name of its entry function ([`ENTRY_NAME`]) and arguments for it.
pub fn arb_case(cfg: GenConfig) -> impl Strategy<Value = (Module, String, Vec<ArgSpec>)> {
    arb_streams(&cfg).prop_map(move |streams| generate_case(&cfg, &streams))
}
