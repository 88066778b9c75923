//! Differential testing against the interpreter on random programs: thousands of generated
//! modules (every opcode, vectors up to f64x16, special floats, extreme integers, loops,
//! branches, calls, externs, run-time errors) give the same results, errors and final memory
//! under the JIT as under the interpreter.

use jitdiff_ir::arbitrary::{ArgSpec, GenConfig, arb_case, standard_extern_registry};
use jitdiff_ir::{ArgValue, Interpreter, Module};
use jitdiff_jit::{Agreement, Arg, JitOptions, compile, differential_call, same_value};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError};
use std::sync::atomic::{AtomicUsize, Ordering};

fn run_case(module: &Module, entry: &str, specs: &[ArgSpec]) -> Result<(), TestCaseError> {
    let externs = standard_extern_registry();
    let compiled = compile(module, &externs, &JitOptions::new())
        .map_err(|e| TestCaseError::fail(format!("compile failed: {e}\n{}", jitdiff_ir::print_module(module))))?;
    let interp = Interpreter::new(module).with_externs(&externs).with_step_limit(50_000_000);
    let args: Vec<ArgValue> = specs.iter().map(ArgSpec::to_arg_value).collect();
    let agreement = differential_call(&compiled, &interp, entry, &args)
        .map_err(|d| TestCaseError::fail(format!("{d}\n{}", jitdiff_ir::print_module(module))))?;
    match agreement {
        Agreement::Returned(want) => {
            // A run that stayed in bounds must give the same results without bounds checks.
            // SAFETY: these exact arguments just ran under the interpreter (and the checked
            // native code) without any out-of-bounds access, and the program is deterministic,
            // so the unchecked code performs the same in-bounds accesses.
            let unchecked = unsafe { JitOptions::new().without_bounds_checks() };
            let compiled = compile(module, &externs, &unchecked).map_err(|e| TestCaseError::fail(e.to_string()))?;
            let mut owned = args.clone();
            let mut borrowed: Vec<Arg<'_>> = owned.iter_mut().map(Arg::from).collect();
            let have = compiled
                .function(entry)
                .unwrap()
                .call(&mut borrowed)
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert!(want.iter().zip(&have).all(|(a, b)| same_value(a, b)), "unchecked: {want:?} vs {have:?}");
        }
        Agreement::Failed(_) | Agreement::Skipped => {}
    }
    Ok(())
}

proptest! {
    #![proptest_config(Config { cases: 1200, failure_persistence: None, ..Config::default() })]

    #[test]
    fn random_programs_with_everything_agree_with_the_interpreter((module, entry, args) in arb_case(GenConfig::full())) {
        run_case(&module, &entry, &args)?;
    }
}

proptest! {
    #![proptest_config(Config { cases: 400, failure_persistence: None, ..Config::default() })]

    #[test]
    fn random_straight_line_programs_agree_with_the_interpreter(
        (module, entry, args) in arb_case(GenConfig { max_stmts: 40, ..GenConfig::full().straight_line() })
    ) {
        run_case(&module, &entry, &args)?;
    }

    #[test]
    fn random_larger_programs_agree_with_the_interpreter(
        (module, entry, args) in arb_case(GenConfig { max_functions: 5, max_depth: 3, max_stmts: 12, max_trip: 8, max_cost: 20_000, ..GenConfig::full() })
    ) {
        run_case(&module, &entry, &args)?;
    }
}

/// The generated programs exercise both normal returns and run-time errors (so the agreement
/// above covers both paths).
#[test]
fn both_returns_and_errors_are_exercised() {
    let mut runner =
        proptest::test_runner::TestRunner::new(Config { cases: 300, failure_persistence: None, ..Config::default() });
    let (ok, err) = (AtomicUsize::new(0), AtomicUsize::new(0));
    runner
        .run(&arb_case(GenConfig::full()), |(module, entry, specs)| {
            let externs = standard_extern_registry();
            let compiled = compile(&module, &externs, &JitOptions::new()).unwrap();
            let interp = Interpreter::new(&module).with_externs(&externs).with_step_limit(50_000_000);
            let args: Vec<ArgValue> = specs.iter().map(ArgSpec::to_arg_value).collect();
            match differential_call(&compiled, &interp, &entry, &args) {
                Ok(Agreement::Returned(_)) => ok.fetch_add(1, Ordering::Relaxed),
                Ok(Agreement::Failed(_)) => err.fetch_add(1, Ordering::Relaxed),
                Ok(Agreement::Skipped) => 0,
                Err(d) => return Err(TestCaseError::fail(d.to_string())),
            };
            Ok(())
        })
        .unwrap();
    let (ok, err) = (ok.into_inner(), err.into_inner());
    assert!(ok >= 100, "only {ok} of 300 random programs returned normally");
    assert!(err >= 10, "only {err} of 300 random programs hit a run-time error");
}
