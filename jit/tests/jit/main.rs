//! jitdiff-jit's integration tests, one binary: native code against the interpreter (every op,
//! random programs, tapes, externs, threads), bad input, loop versioning and shadow slices, and
//! the `// SAFETY:` comment of every `unsafe` block. The memory figures are `tests/memory`.

mod bad_input;
mod doubling;
mod externs;
mod inline;
mod loop_copies;
mod ops;
mod pairs;
mod random;
mod rotation;
mod safety_comments;
mod shadow;
mod tape;
mod tape_loops;
mod threads;
mod trig;
mod typed;
mod versioning;

/// Call `name` of the module in `source` with each argument list under the JIT and the
/// interpreter; both must agree (results, or error and site). Returns how many calls returned
/// and how many failed.
fn agree(source: &str, name: &str, cases: &[Vec<jitdiff_ir::ArgValue>]) -> (usize, usize) {
    use jitdiff_jit::Agreement;
    let module = jitdiff_ir::parse_module(source).unwrap();
    let compiled =
        jitdiff_jit::compile(&module, &jitdiff_ir::ExternRegistry::new(), &jitdiff_jit::JitOptions::new()).unwrap();
    let interp = jitdiff_ir::Interpreter::new(&module).with_step_limit(10_000_000);
    let (mut returned, mut failed) = (0, 0);
    for args in cases {
        match jitdiff_jit::differential_call(&compiled, &interp, name, args) {
            Ok(Agreement::Returned(_)) => returned += 1,
            Ok(Agreement::Failed(_)) => failed += 1,
            Ok(Agreement::Skipped) => panic!("@{name}: step limit"),
            Err(d) => panic!("@{name} {args:?}: {d}"),
        }
    }
    (returned, failed)
}
