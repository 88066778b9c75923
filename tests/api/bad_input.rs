//! The bad-input corpus: every `tests/bad_input/*.ir` file is malformed or ill-typed IR whose
//! first line says which error it must produce and where:
//!
//! ```text
//! ; expect: <KindName> at <line>:<col>
//! ```
//!
//! `KindName` is a [`ParseErrorKind`](jitdiff_ir::ParseErrorKind) name when the parser must reject
//! the text, or a [`VerifyErrorKind`](jitdiff_ir::VerifyErrorKind) name when the text parses and
//! the verifier must reject the module. Each file must fail with exactly that kind at exactly that
//! position, and the error message must show the position and say something.

use jitdiff_ir::{Pos, parse_module_with_spans, verify_module_with_spans};
use std::path::{Path, PathBuf};

/// The fewest files the corpus may have (so that losing files is noticed).
const MIN_FILES: usize = 40;

/// What a file's header promises.
#[derive(Debug, PartialEq)]
struct Expectation {
    kind: String,
    pos: Pos,
}

/// The error the pipeline (parse, then verify) actually produced.
struct Outcome {
    stage: &'static str,
    kind: &'static str,
    pos: Option<Pos>,
    message: String,
}

fn corpus_files() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/bad_input");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|entry| entry.expect("readable directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "ir"))
        .collect();
    files.sort();
    files
}

/// Read `; expect: Kind at line:col` from the first line.
fn parse_header(text: &str) -> Result<Expectation, String> {
    let first = text.lines().next().unwrap_or("");
    let rest = first
        .strip_prefix("; expect: ")
        .ok_or_else(|| format!("first line must be `; expect: <KindName> at <line>:<col>`, found {first:?}"))?;
    let (kind, at) = rest.split_once(" at ").ok_or_else(|| format!("missing ` at ` in header {first:?}"))?;
    let (line, col) = at.trim().split_once(':').ok_or_else(|| format!("position must be line:col in {first:?}"))?;
    let number = |s: &str| s.parse::<u32>().map_err(|e| format!("bad number {s:?} in header: {e}"));
    Ok(Expectation { kind: kind.trim().to_string(), pos: Pos { line: number(line)?, col: number(col)? } })
}

/// Parse, then verify with the source map; the first error, if any.
fn run_pipeline(text: &str) -> Option<Outcome> {
    match parse_module_with_spans(text) {
        Err(e) => Some(Outcome { stage: "parse", kind: e.kind.kind_name(), pos: Some(e.pos), message: e.to_string() }),
        Ok((module, spans)) => verify_module_with_spans(&module, Some(&spans)).err().map(|e| Outcome {
            stage: "verify",
            kind: e.kind_name(),
            pos: e.pos,
            message: e.to_string(),
        }),
    }
}

/// Check one file; a description of what is wrong, if anything.
fn check_file(path: &Path) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read: {e}"))?;
    let expected = parse_header(&text)?;
    let Some(got) = run_pipeline(&text) else {
        return Err(format!("expected {} at {}, but the text parsed and verified", expected.kind, expected.pos));
    };
    let got_pos = got.pos.map_or_else(|| "<no position>".to_string(), |p| p.to_string());
    if got.kind != expected.kind || got.pos != Some(expected.pos) {
        return Err(format!(
            "expected {} at {}, got {} error {} at {}: {}",
            expected.kind, expected.pos, got.stage, got.kind, got_pos, got.message
        ));
    }
    let prefix = format!("{}: ", expected.pos);
    let Some(what) = got.message.strip_prefix(&prefix) else {
        return Err(format!("message does not start with the position {prefix:?}: {}", got.message));
    };
    if what.trim().len() < 10 {
        return Err(format!("message says too little: {:?}", got.message));
    }
    Ok(())
}

#[test]
fn every_bad_input_fails_with_the_expected_kind_and_position() {
    let files = corpus_files();
    assert!(files.len() >= MIN_FILES, "the corpus has {} files, expected at least {MIN_FILES}", files.len());
    let failures: Vec<String> = files
        .iter()
        .filter_map(|path| {
            let name = path.file_name().map_or_else(String::new, |n| n.to_string_lossy().into_owned());
            check_file(path).err().map(|why| format!("{name}: {why}"))
        })
        .collect();
    assert!(failures.is_empty(), "{} of {} corpus files failed:\n{}", failures.len(), files.len(), failures.join("\n"));
}

#[test]
fn corpus_covers_both_parser_and_verifier_errors() {
    let mut stages = std::collections::BTreeMap::<&str, usize>::new();
    for path in corpus_files() {
        let text = std::fs::read_to_string(&path).expect("readable corpus file");
        if let Some(got) = run_pipeline(&text) {
            *stages.entry(got.stage).or_default() += 1;
        }
    }
    assert!(stages.get("parse").copied().unwrap_or(0) >= 15, "too few parse errors in the corpus: {stages:?}");
    assert!(stages.get("verify").copied().unwrap_or(0) >= 25, "too few verify errors in the corpus: {stages:?}");
}

#[test]
fn header_parsing_rejects_malformed_headers() {
    assert_eq!(
        parse_header("; expect: TypeMismatch at 3:5\nfunc"),
        Ok(Expectation { kind: "TypeMismatch".into(), pos: Pos { line: 3, col: 5 } })
    );
    assert!(parse_header("; TypeMismatch at 3:5").is_err());
    assert!(parse_header("; expect: TypeMismatch 3:5").is_err());
    assert!(parse_header("; expect: TypeMismatch at 3").is_err());
    assert!(parse_header("; expect: TypeMismatch at x:5").is_err());
}
