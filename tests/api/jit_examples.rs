//! The example programs of `examples/ir/` under the JIT: every file compiles, and each benchmark
//! problem gives exactly the interpreter's result (bit for bit) and its plain-Rust reference's
//! (to 1e-12), at several sizes. Also checks that a problem's arguments with a slice too short
//! fail the same way in both.

use jitdiff_ir::{ArgValue, ExternRegistry, Interpreter, RuntimeValue, parse_module};
use jitdiff_jit::{Agreement, Arg, JitOptions, compile, differential_call};
use jitdiff_problems::{Gmm, Mlp, Pendulum, Problem, Rosenbrock, relative_error};

fn problems() -> Vec<Box<dyn Problem>> {
    vec![
        Box::new(Rosenbrock::new(1)),
        Box::new(Rosenbrock::new(10)),
        Box::new(Rosenbrock::new(1000)),
        Box::new(Gmm::generate(2, 5, 100, 7)),
        Box::new(Gmm::generate(5, 3, 40, 11)),
        Box::new(Pendulum::with_steps(200)),
        Box::new(Mlp::generate(8, 16, 32, 3)),
    ]
}

#[test]
fn every_example_file_compiles() {
    let mut files = 0;
    for entry in std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/ir")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("ir") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let module = parse_module(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let compiled = compile(&module, &ExternRegistry::new(), &JitOptions::new())
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(compiled.function_names().count(), module.functions.len());
        files += 1;
    }
    assert!(files >= 4, "expected the four benchmark programs, found {files} .ir files");
}

#[test]
fn problems_agree_with_the_interpreter_bit_for_bit_and_with_their_references() {
    for problem in problems() {
        let label = problem.label();
        let module = parse_module(problem.ir()).unwrap();
        let compiled = compile(&module, &ExternRegistry::new(), &JitOptions::new()).unwrap();
        let interp = Interpreter::new(&module);
        let got = differential_call(&compiled, &interp, problem.entry(), &problem.args())
            .unwrap_or_else(|d| panic!("{label}: {d}"));
        let Agreement::Returned(values) = got else { panic!("{label}: expected a result, got {got:?}") };
        let [RuntimeValue::F64(value)] = values[..] else { panic!("{label}: expected one f64, got {values:?}") };
        let err = relative_error(value, problem.reference());
        assert!(err <= 1e-12, "{label}: JIT {value:e} vs reference {:e}", problem.reference());
    }
}

#[test]
fn truncated_slices_fail_identically_in_both() {
    let mut failed = 0;
    for problem in problems() {
        let label = problem.label();
        let module = parse_module(problem.ir()).unwrap();
        let compiled = compile(&module, &ExternRegistry::new(), &JitOptions::new()).unwrap();
        let interp = Interpreter::new(&module);
        let mut args = problem.args();
        // Cut every slice but the first to half its length: loops sized by the first slice run off
        // the end of the others (or, for Rosenbrock, simply sum fewer terms).
        let mut seen_first = false;
        for arg in &mut args {
            if let ArgValue::Slice(v) | ArgValue::SliceMut(v) = arg {
                if seen_first {
                    v.truncate(v.len() / 2);
                }
                seen_first = true;
            }
        }
        let got =
            differential_call(&compiled, &interp, problem.entry(), &args).unwrap_or_else(|d| panic!("{label}: {d}"));
        failed += usize::from(got == Agreement::Failed("OutOfBounds"));
    }
    assert!(failed >= 3, "only {failed} problems ran out of bounds on truncated slices");
}

#[test]
fn a_large_rosenbrock_runs_through_call_into() {
    let problem = Rosenbrock::new(100_000);
    let module = parse_module(problem.ir()).unwrap();
    let f = compile(&module, &ExternRegistry::new(), &JitOptions::new()).unwrap().function("rosenbrock").unwrap();
    let mut args = problem.args();
    let mut borrowed: Vec<Arg<'_>> = args.iter_mut().map(Arg::from).collect();
    let mut out = [RuntimeValue::F64(0.0)];
    f.call_into(&mut borrowed, &mut out).unwrap();
    let value = out[0].as_f64().unwrap();
    assert!(relative_error(value, problem.reference()) <= 1e-12, "{value} vs {}", problem.reference());
}
