//! The checking harness: random programs from `jitdiff_ir::arbitrary`, each run through every
//! check in `harness/checks.rs` (interpreter vs JIT on the program and on its forward, batched
//! and reverse derivatives; forward mode vs central differences; batched lanes vs scalar sweeps;
//! reverse vs forward mode by the dot-product identity; derived IR verifies; the public handles
//! agree with the interpreter; nested AD: a declared gradient of the program and the
//! derivatives of a function that calls it, `harness/nested.rs`), after the saved failures in
//! `tests/regressions/*.ir` and the hand-written programs in `tests/harness_programs/*.ir`.
//!
//! `cargo test` runs it with no arguments: 800 seeded programs (a fixed mix of smooth,
//! piecewise-smooth, general and everything-goes programs). Any number:
//!
//! ```text
//! cargo test --release --test harness -- --cases 10000 --seed 42
//! ```
//!
//! prints `N passed, N failed`. A failing case is minimised with proptest's shrinking and
//! printed as a regression file (IR text with a header giving the arguments) to put under
//! `tests/regressions/`; `--save DIR` writes them. Options: `--cases N`, `--seed S`,
//! `--case I` (only case I of the seed), `--kind smooth|piecewise|general|full`, `--save DIR`,
//! `--shrink-steps N` (default 2000), `--report N` (minimise at most N failures, default 3),
//! `--strict` (also run the checks that known bugs fail; see `harness/checks.rs`),
//! `--scaling K` (the compile-budget programs of `harness/scaling.rs` at K times their size;
//! 0 skips them; default 1).

#[path = "harness/case.rs"]
mod case;
#[path = "harness/checks.rs"]
mod checks;
#[path = "harness/minimise.rs"]
mod minimise;
#[path = "harness/nested.rs"]
mod nested;
#[path = "harness/probe.rs"]
mod probe;
#[path = "harness/scaling.rs"]
mod scaling;
#[path = "harness/singular.rs"]
mod singular;
#[path = "harness/vector.rs"]
mod vector;

use case::{Case, Kind};
use checks::{Coverage, Failure};
use jitdiff::ir::arbitrary::arb_streams;
use jitdiff_problems::SplitMix64;
use minimise::{minimise, run_checks};
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The programs `cargo test` checks: at least as many per check as the proptest suites this
/// harness replaced (500 each).
const CI_CASES: u64 = 800;
const CI_SEED: u64 = 0x0005_eed0_f1a7;

struct Options {
    cases: u64,
    seed: u64,
    only: Option<u64>,
    kind: Option<Kind>,
    save: Option<PathBuf>,
    shrink_steps: usize,
    report: usize,
    strict: bool,
    /// Size multiplier of the compile-budget programs (0: skip them).
    scaling: usize,
}

fn parse_args() -> Result<Options, String> {
    let mut o = Options {
        cases: CI_CASES,
        seed: CI_SEED,
        only: None,
        kind: None,
        save: None,
        shrink_steps: 2000,
        report: 3,
        strict: false,
        scaling: 1,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = |name: &str| args.next().ok_or_else(|| format!("{name} needs a value"));
        let number = |name: &str, v: String| v.parse::<u64>().map_err(|_| format!("{name} takes a number, not `{v}`"));
        match a.as_str() {
            "--cases" => o.cases = number("--cases", value("--cases")?)?,
            "--seed" => o.seed = number("--seed", value("--seed")?)?,
            "--case" => o.only = Some(number("--case", value("--case")?)?),
            "--shrink-steps" => o.shrink_steps = number("--shrink-steps", value("--shrink-steps")?)? as usize,
            "--report" => o.report = number("--report", value("--report")?)? as usize,
            "--strict" => o.strict = true,
            "--scaling" => o.scaling = number("--scaling", value("--scaling")?)? as usize,
            "--save" => o.save = Some(PathBuf::from(value("--save")?)),
            "--kind" => {
                let v = value("--kind")?;
                o.kind = Some(
                    Kind::parse(&v).ok_or(format!("--kind is one of smooth, piecewise, general, full; not `{v}`"))?,
                );
            }
            // Flags cargo or libtest may pass to every test binary (`--quiet`, a name filter...).
            _ => eprintln!("harness: ignoring argument `{a}`"),
        }
    }
    Ok(o)
}

/// Case `index`'s own seed, so one case can be rerun alone.
fn case_seed(seed: u64, index: u64) -> u64 {
    SplitMix64::new(seed ^ index.wrapping_mul(0x9e37_79b9_7f4a_7c15)).next_u64()
}

fn report_failure(o: &Options, label: &str, case: Option<&Case>, streams: &[Vec<u32>], failure: &Failure) {
    println!("\nFAILED {label}: {}: {}", failure.check, failure.message);
    match case {
        Some(case) => {
            let text = case.to_regression(&format!("{}: {}", failure.check, failure.message));
            println!("--- minimised; save under tests/regressions/ ---\n{text}--- end ---");
            if let Some(dir) = &o.save {
                let path = dir.join(format!("{}.ir", label.replace([' ', ',', '(', ')'], "_")));
                match std::fs::create_dir_all(dir).and_then(|_| std::fs::write(&path, &text)) {
                    Ok(()) => println!("saved {}", path.display()),
                    Err(e) => println!("could not save {}: {e}", path.display()),
                }
            }
        }
        None => println!("the generator itself panics on streams {streams:?}"),
    }
}

/// The saved failures, then the hand-written programs of `tests/harness_programs/` (features
/// the generator does not produce, such as local arrays), in the same file format.
fn regression_files() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut all = vec![];
    for dir in ["tests/regressions", "tests/harness_programs"] {
        let mut files: Vec<PathBuf> = std::fs::read_dir(root.join(dir))
            .map(|d| {
                d.filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|p| p.extension().is_some_and(|x| x == "ir"))
                    .collect()
            })
            .unwrap_or_default();
        files.sort();
        all.extend(files);
    }
    all
}

fn main() {
    let o = parse_args().unwrap_or_else(|e| {
        eprintln!("harness: {e}");
        std::process::exit(2);
    });
    // Panics become failures with their message; the default hook's output would only be noise.
    std::panic::set_hook(Box::new(|_| {}));
    let start = Instant::now();
    let (mut passed, mut failed, mut reported) = (0u64, 0u64, 0usize);
    let mut cov = Coverage::default();

    let regressions = regression_files();
    for path in &regressions {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let name = path.file_name().unwrap_or_default().to_string_lossy().to_string();
        match Case::from_regression(&text) {
            Ok(case) => match (run_checks(|| case.clone(), true), &case.expect_fail) {
                (Ok(c), None) => {
                    passed += 1;
                    cov += c;
                }
                (Err(f), Some(known)) if f.check == known => {
                    passed += 1;
                    println!("known bug still present ({name}): {}: {}", f.check, f.message);
                }
                (Ok(_), Some(known)) => {
                    failed += 1;
                    println!(
                        "FAILED regression {name}: it expects `{known}` to fail, but every check passes: the bug is \
                         fixed, so delete its `; expect-fail:` line and the skip in tests/harness/checks.rs"
                    );
                }
                (Err(f), _) => {
                    failed += 1;
                    println!("FAILED regression {name}: {}: {}", f.check, f.message);
                }
            },
            Err(e) => {
                failed += 1;
                println!("FAILED regression {name}: cannot read it: {e}");
            }
        }
    }

    // Compile-time budgets of long programs (not when rerunning one case).
    if o.only.is_none() && o.scaling > 0 {
        let started = Instant::now();
        match scaling::compile_budgets(o.scaling) {
            Ok(timed) => {
                passed += 1;
                println!(
                    "compile budgets: {timed} derivative builds in budget ({:.1} s)",
                    started.elapsed().as_secs_f64()
                );
            }
            Err(f) => {
                failed += 1;
                println!("FAILED {}: {}", f.check, f.message);
            }
        }
    }

    let range = match o.only {
        Some(i) => i..i + 1,
        None => 0..o.cases,
    };
    for index in range.clone() {
        let kind = o.kind.unwrap_or(Kind::of_case(index));
        let seed = case_seed(o.seed, index);
        let mut bytes = [0u8; 32];
        let mut rng = SplitMix64::new(seed);
        bytes.chunks_mut(8).for_each(|c| c.copy_from_slice(&rng.next_u64().to_le_bytes()));
        let mut runner = TestRunner::new_with_rng(Config::default(), TestRng::from_seed(RngAlgorithm::ChaCha, &bytes));
        let tree = arb_streams(&kind.config()).new_tree(&mut runner).expect("streams generate");
        // Half the cases differentiate every f64 and slice parameter, half a random subset.
        let wrt_bits = if rng.next_u64().is_multiple_of(2) { u64::MAX } else { rng.next_u64() };
        let dir_seed = rng.next_u64();
        let make = move |s: &[Vec<u32>]| Case::generate(kind, s, wrt_bits, dir_seed);
        let streams = tree.current();
        match run_checks(|| make(&streams), o.strict) {
            Ok(c) => {
                passed += 1;
                cov += c;
            }
            Err(f) => {
                failed += 1;
                let label = format!("case {index} ({}, seed {})", kind.name(), o.seed);
                if reported < o.report {
                    reported += 1;
                    let (small, f, steps) = minimise(tree, f, make, o.shrink_steps, o.strict);
                    let case = std::panic::catch_unwind(|| make(&small)).ok();
                    report_failure(&o, &format!("{label}, minimised in {steps} steps"), case.as_ref(), &small, &f);
                    println!("rerun: cargo test --release --test harness -- --seed {} --case {index}", o.seed);
                } else {
                    println!("FAILED {label}: {}: {}", f.check, f.message);
                }
            }
        }
    }

    let secs = start.elapsed().as_secs_f64();
    println!(
        "harness: seed {}, cases {}..{} and {} regression file(s) in {secs:.1} s",
        o.seed,
        range.start,
        range.end,
        regressions.len()
    );
    println!("coverage: {cov:?}");
    println!("{passed} passed, {failed} failed");
    if failed > 0 {
        std::process::exit(1);
    }
    // The default run must have exercised every check (so a generator change that silently
    // disables one is noticed).
    if o.only.is_none() && o.kind.is_none() && o.cases >= CI_CASES {
        let n = o.cases;
        let low = [
            ("programs that returned", cov.returned, n / 2),
            ("programs that hit a run-time error", cov.runtime_errors, n / 200),
            ("derived programs", cov.derived, n / 2),
            ("central-difference comparisons", cov.fd_compared, n / 2),
            ("batched lanes compared", cov.lanes_compared, n),
            ("dot-product identities", cov.dot_products, n / 3),
            ("handle calls compared", cov.handle_calls, n / 3),
            ("declared gradients compared (nested AD)", cov.nested, n / 5),
            ("second derivatives compared between the modes (nested AD)", cov.nested_outer, n / 5),
            ("second derivatives against central differences (nested AD)", cov.nested_fd, n / 5),
        ];
        for (what, got, want) in low {
            if got < want {
                println!("harness: only {got} {what} in {n} cases (want at least {want})");
                std::process::exit(1);
            }
        }
    }
}
