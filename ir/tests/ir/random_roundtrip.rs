#![cfg(feature = "arbitrary")]
//! Property tests of the random-module generator: generated modules verify, round-trip through
//! the text format, and run in the interpreter without panicking and within their step budget.
//!
//! Run with `cargo test -p jitdiff-ir --features arbitrary --test random_roundtrip`.

use jitdiff_ir::arbitrary::{ArgSpec, GenConfig, arb_case, arb_module, generate_case, standard_extern_registry};
use jitdiff_ir::{ArgValue, Interpreter, Module, Opcode, Type, parse_module, print_module, verify_module};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, TestRunner};
use std::collections::BTreeSet;

/// Every preset, so each property covers smooth, piecewise, default and full programs, plus deep
/// nesting under a tight budget (which stresses the step bound).
fn presets() -> [(&'static str, GenConfig); 6] {
    [
        ("default", GenConfig::default()),
        ("smooth", GenConfig::smooth()),
        ("piecewise", GenConfig::piecewise()),
        ("full", GenConfig::full()),
        ("straight_line", GenConfig::full().straight_line()),
        ("tight", GenConfig { max_cost: 150, max_trip: 8, max_depth: 3, max_stmts: 12, ..GenConfig::full() }),
    ]
}

fn runner(cases: u32) -> TestRunner {
    TestRunner::new(Config { cases, failure_persistence: None, ..Config::default() })
}

/// The generator guarantees that one call of the entry executes at most `max_cost` instructions
/// and terminators.
fn step_limit(cfg: &GenConfig) -> u64 {
    cfg.max_cost
}

#[test]
fn generated_modules_verify() {
    for (name, cfg) in presets() {
        runner(200)
            .run(&arb_module(cfg), |m| {
                if let Err(e) = verify_module(&m) {
                    panic!("preset {name}: {e}\n{}", print_module(&m));
                }
                Ok(())
            })
            .unwrap();
    }
}

#[test]
fn generated_modules_round_trip_through_text() {
    for (name, cfg) in presets() {
        runner(200)
            .run(&arb_module(cfg), |m| {
                let text = print_module(&m);
                let back = parse_module(&text);
                prop_assert_eq!(back.as_ref(), Ok(&m), "preset {}:\n{}", name, text);
                Ok(())
            })
            .unwrap();
    }
}

fn run_case(cfg: &GenConfig, m: &Module, entry: &str, args: &[ArgSpec]) -> Result<(), String> {
    let registry = standard_extern_registry();
    let interp = Interpreter::new(m).with_externs(&registry).with_step_limit(step_limit(cfg));
    let mut values: Vec<ArgValue> = args.iter().map(ArgSpec::to_arg_value).collect();
    match interp.call(entry, &mut values) {
        Ok(results) => {
            let f = m.func_by_name(entry).ok_or("entry function missing")?;
            let types: Vec<Option<Type>> = results.iter().map(|r| r.ty()).collect();
            let expected: Vec<Option<Type>> = f.returns.iter().map(|&t| Some(t)).collect();
            if types != expected {
                return Err(format!("results {results:?} do not match the signature {:?}", f.returns));
            }
            if cfg.smooth_only && results.iter().any(|r| r.as_f64().is_some_and(|x| !x.is_finite())) {
                return Err(format!("smooth program gave a non-finite result: {results:?}"));
            }
            Ok(())
        }
        Err(e) => match e.kind_name() {
            "OutOfBounds" | "DivisionByZero" | "Panic" if cfg.allow_runtime_errors => Ok(()),
            _ => Err(format!("{e}")),
        },
    }
}

#[test]
fn generated_cases_run_in_the_interpreter_within_budget() {
    for (name, cfg) in presets() {
        let strategy = arb_case(cfg.clone());
        runner(200)
            .run(&strategy, |(m, entry, args)| {
                if let Err(e) = run_case(&cfg, &m, &entry, &args) {
                    panic!("preset {name}: {e}\nargs {args:?}\n{}", print_module(&m));
                }
                Ok(())
            })
            .unwrap();
    }
}

#[test]
fn arguments_match_the_entry_signature() {
    runner(200)
        .run(&arb_case(GenConfig::full()), |(m, entry, args)| {
            let f = m.func_by_name(&entry).expect("entry exists");
            let types: Vec<Type> = args.iter().map(ArgSpec::ty).collect();
            prop_assert_eq!(types, f.param_types());
            Ok(())
        })
        .unwrap();
}

/// The generator reaches every opcode of the op table, every construct, and every vector width
/// (in full mode), so downstream differential tests cover them all.
#[test]
fn full_mode_covers_every_opcode() {
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut widths = BTreeSet::new();
    let (mut loops, mut joins, mut multi_returns, mut calls, mut extern_calls) = (0, 0, 0, 0, 0);
    // Deterministic, so the counts below cannot flake.
    let mut runner = TestRunner::deterministic();
    let strategy = arb_module(GenConfig::full());
    for _ in 0..600 {
        let m = strategy.new_tree(&mut runner).unwrap().current();
        for f in &m.functions {
            multi_returns += usize::from(f.returns.len() > 1);
            for b in &f.blocks {
                loops += usize::from(b.name.starts_with("loop_head"));
                joins += usize::from(b.name.starts_with("join") && !b.params.is_empty());
                for inst in &b.insts {
                    seen.insert(inst.op.spelling().to_string());
                    match inst.imm {
                        jitdiff_ir::Imm::Callee(jitdiff_ir::Callee::Func(_)) => calls += 1,
                        jitdiff_ir::Imm::Callee(jitdiff_ir::Callee::Extern(_)) => extern_calls += 1,
                        _ => {}
                    }
                    for r in &inst.results {
                        if let Type::F64x(w) = f.ty(*r) {
                            widths.insert(w);
                        }
                    }
                }
            }
        }
    }
    // Tape ops are left out on purpose: a random `tpop` would mostly underflow, and pushes and
    // pops only make sense paired across a forward function and its pullback, which reverse
    // mode generates; hand-written tape programs test them instead.
    // `iszero` neither: its derivative rules make a branch on it take the path whose result
    // agrees to first order, which only the guards reverse mode places guarantee
    // (`ad/src/reverse/skip.rs`; the text corpus and jit/tests/jit/ops.rs cover it).
    let generated = Opcode::all()
        .filter(|o| !matches!(o, Opcode::TPush | Opcode::TPop | Opcode::TSplit | Opcode::TRejoin | Opcode::IsZero));
    let missing: Vec<&str> = generated.map(|o| o.spelling()).filter(|s| !seen.contains(*s)).collect();
    assert!(missing.is_empty(), "opcodes never generated: {missing:?}");
    assert_eq!(widths.into_iter().collect::<Vec<_>>(), [2, 4, 8, 16]);
    for (what, n) in [
        ("loops", loops),
        ("joins", joins),
        ("multi-returns", multi_returns),
        ("calls", calls),
        ("extern calls", extern_calls),
    ] {
        assert!(n > 20, "only {n} {what} in 600 modules");
    }
}

/// Full mode produces run-time errors of every kind it can (bounds, division, `trap`) (for error-path differential tests);
/// the default preset produces none.
#[test]
fn full_mode_produces_runtime_errors_and_default_mode_does_not() {
    let registry = standard_extern_registry();
    let mut runner = TestRunner::deterministic();
    for (cfg, expect_errors) in [(GenConfig::full(), true), (GenConfig::default(), false)] {
        let strategy = arb_case(cfg.clone());
        let mut kinds = BTreeSet::new();
        for _ in 0..1500 {
            let (m, entry, args) = strategy.new_tree(&mut runner).unwrap().current();
            let mut values: Vec<ArgValue> = args.iter().map(ArgSpec::to_arg_value).collect();
            if let Err(e) = Interpreter::new(&m).with_externs(&registry).call(&entry, &mut values) {
                kinds.insert(e.kind_name());
            }
        }
        let expected: BTreeSet<&str> =
            if expect_errors { ["DivisionByZero", "OutOfBounds", "Panic"].into() } else { BTreeSet::new() };
        assert_eq!(kinds, expected, "allow_runtime_errors = {}", cfg.allow_runtime_errors);
    }
}

/// Smooth programs contain no non-smooth opcode and no float comparison.
#[test]
fn smooth_mode_avoids_non_smooth_operations() {
    let banned =
        [Opcode::Floor, Opcode::Ceil, Opcode::Sign, Opcode::Abs, Opcode::Min, Opcode::Max, Opcode::FCmp, Opcode::FToI];
    runner(300)
        .run(&arb_module(GenConfig::smooth()), |m| {
            for f in &m.functions {
                prop_assert!(f.returns.iter().all(|&t| t == Type::F64));
                for b in &f.blocks {
                    for inst in &b.insts {
                        prop_assert!(!banned.contains(&inst.op), "{} in a smooth program", inst.op);
                    }
                }
            }
            Ok(())
        })
        .unwrap();
}

/// Piecewise-smooth programs keep smooth mode's f64 results but use every kink: each banned
/// opcode of smooth mode appears across 300 modules.
#[test]
fn piecewise_mode_uses_every_kink() {
    let kinks =
        [Opcode::Floor, Opcode::Ceil, Opcode::Sign, Opcode::Abs, Opcode::Min, Opcode::Max, Opcode::FCmp, Opcode::FToI];
    let seen = std::sync::Mutex::new(BTreeSet::new());
    runner(300)
        .run(&arb_module(GenConfig::piecewise()), |m| {
            for f in &m.functions {
                prop_assert!(f.returns.iter().all(|&t| t == Type::F64));
                let ops = f.blocks.iter().flat_map(|b| &b.insts).map(|i| i.op).filter(|op| kinks.contains(op));
                seen.lock().unwrap().extend(ops.map(|op| op.spelling()));
            }
            Ok(())
        })
        .unwrap();
    let seen = seen.into_inner().unwrap();
    assert_eq!(seen.len(), kinks.len(), "only {seen:?} appeared");
}

/// Decoding is deterministic, and the all-zero (exhausted) stream gives the simplest module.
#[test]
fn decoding_is_deterministic_and_zero_is_simplest() {
    let cfg = GenConfig::default();
    let streams: Vec<Vec<u32>> =
        (0..3u32).map(|s| (0..500u32).map(|k| (k + 1000 * s).wrapping_mul(2_654_435_761)).collect()).collect();
    assert_eq!(generate_case(&cfg, &streams), generate_case(&cfg, &streams));
    let (m, entry, args) = generate_case(&cfg, &[]);
    assert_eq!(m.functions.len(), 1);
    assert_eq!(entry, "main");
    assert!(args.is_empty());
    assert_eq!(m.functions[0].blocks.len(), 1);
    assert_eq!(m.functions[0].returns, [Type::F64]);
}

/// Smooth programs are continuous in their float inputs: nudging any float argument or slice
/// element by 1e-7 changes the result (returns plus final `mslice` contents) by a difference
/// quotient far below what a jump would give. Observed quotients stay below ~1e3.
#[test]
fn smooth_programs_have_no_jumps() {
    let registry = standard_extern_registry();
    let total = |interp: &Interpreter<'_>, entry: &str, args: &[ArgSpec]| -> f64 {
        let mut values: Vec<ArgValue> = args.iter().map(ArgSpec::to_arg_value).collect();
        let results = interp.call(entry, &mut values).expect("smooth programs do not fail");
        let returned: f64 = results.iter().filter_map(|v| v.as_f64()).sum();
        let stored: f64 = values
            .iter()
            .filter_map(|v| match v {
                ArgValue::SliceMut(xs) => Some(xs.iter().sum::<f64>()),
                _ => None,
            })
            .sum();
        returned + stored
    };
    let h = 1e-7;
    runner(400)
        .run(&arb_case(GenConfig::smooth()), |(m, entry, args)| {
            let interp = Interpreter::new(&m).with_externs(&registry);
            let base = total(&interp, &entry, &args);
            for k in 0..args.len() {
                let mut nudged = args.clone();
                match &mut nudged[k] {
                    ArgSpec::F64(x) => *x += h,
                    ArgSpec::Slice(xs) | ArgSpec::SliceMut(xs) if !xs.is_empty() => xs[0] += h,
                    _ => continue,
                }
                let quotient = (total(&interp, &entry, &nudged) - base).abs() / h;
                prop_assert!(quotient < 1e5, "argument {}: |df|/h = {}\n{}", k, quotient, print_module(&m));
            }
            Ok(())
        })
        .unwrap();
}

/// A failing property shrinks to a tiny program: here "no function calls `sin`" shrinks to one
/// function that computes a sine of a constant and returns it.
#[test]
fn failures_shrink_to_small_programs() {
    let mut runner = TestRunner::new(Config { failure_persistence: None, ..Config::default() });
    let result = runner.run(&arb_module(GenConfig::default()), |m| {
        let has_sin = m.functions.iter().flat_map(|f| &f.blocks).flat_map(|b| &b.insts).any(|i| i.op == Opcode::Sin);
        prop_assert!(!has_sin);
        Ok(())
    });
    let Err(proptest::test_runner::TestError::Fail(_, m)) = result else {
        panic!("the property should fail: {result:?}");
    };
    let insts: usize = m.functions.iter().flat_map(|f| &f.blocks).map(|b| b.insts.len()).sum();
    assert_eq!(m.functions.len(), 1, "{}", print_module(&m));
    assert!(insts <= 3, "{insts} instructions left:\n{}", print_module(&m));
}
