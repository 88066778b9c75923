//! The fuzz target's pipeline (`tests/fuzz_pipeline/`, also built into `fuzz/`) on its seed
//! corpus, on a sample of what the fuzzer found, and on any input that once crashed it
//! (`tests/fuzz_corpus/`): the example programs, the filetests, the bad-input corpus and the
//! harness regressions must go through parse → verify → round trip → interpreter vs JIT →
//! derivatives without a panic.

#[path = "../fuzz_pipeline/mod.rs"]
mod fuzz_pipeline;

use std::path::{Path, PathBuf};

fn inputs(dir: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.is_file()).collect())
        .unwrap_or_default();
    files.sort();
    files
}

fn run_all(dir: &str) -> Vec<(PathBuf, fuzz_pipeline::Reached)> {
    inputs(dir)
        .into_iter()
        .map(|path| {
            let data = std::fs::read(&path).unwrap();
            let reached = fuzz_pipeline::run(&data);
            (path, reached)
        })
        .collect()
}

#[test]
fn the_examples_go_all_the_way_through() {
    let results = run_all("examples/ir");
    assert!(results.len() >= 4, "{} example programs", results.len());
    for (path, r) in results {
        assert!(r.verified && r.calls > 0 && r.derived > 0, "{}: {r:?}", path.display());
    }
}

#[test]
fn filetests_bad_input_and_harness_regressions_do_not_crash_the_pipeline() {
    let mut verified = 0;
    let mut rejected = 0;
    for dir in ["tests/filetests", "tests/bad_input", "tests/regressions"] {
        for (_, r) in run_all(dir) {
            if r.verified { verified += 1 } else { rejected += 1 }
        }
    }
    assert!(verified >= 10 && rejected >= 40, "{verified} verified, {rejected} rejected");
}

/// A sample of the fuzzer's own corpus (inputs that reached new code in a 30-minute run), and
/// any input that once crashed the pipeline: all must run through, and the sample must still
/// reach deep (so a change that makes the pipeline stop early is noticed).
#[test]
fn the_fuzz_corpus_sample_runs_through() {
    let results = run_all("tests/fuzz_corpus");
    let verified = results.iter().filter(|(_, r)| r.verified).count();
    let derived = results.iter().filter(|(_, r)| r.derived > 0).count();
    println!("{} inputs: {verified} verified, {derived} differentiated", results.len());
    assert!(
        results.len() >= 40 && verified >= 10 && derived >= 5,
        "{} inputs: {verified} verified, {derived} differentiated",
        results.len()
    );
}
