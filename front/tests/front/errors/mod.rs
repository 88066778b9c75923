//! What is outside the subset, or wrong: each case asserts the whole message, line:column
//! included.

mod misuse;
mod unsupported;

/// Every case: (case name, source, the error exactly as displayed).
pub(crate) fn cases() -> impl Iterator<Item = &'static (&'static str, &'static str, &'static str)> {
    misuse::CASES.iter().chain(unsupported::CASES)
}

#[test]
fn every_case_reports_its_message_at_its_position() {
    let mut failures = vec![];
    for (name, source, expected) in cases() {
        match jitdiff_front::lower_source(source) {
            Ok(_) => failures.push(format!("{name}: lowered without error")),
            Err(e) if e.to_string() != *expected => {
                failures.push(format!("{name}:\n  got      {e}\n  expected {expected}"))
            }
            Err(_) => {}
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(cases().count() >= 40);
}

#[test]
fn positions_are_one_based_lines_and_columns() {
    let err = jitdiff_front::lower_source("fn f(x: f64) -> f64 {\n    x + y\n}").unwrap_err();
    assert_eq!(err.position, jitdiff_front::Position { line: 2, column: 9 });
    assert_eq!(
        err.message(),
        "cannot find value `y`; declare it with `let`, make it a parameter, or define a module-level `const`"
    );
    assert!(matches!(err.kind, jitdiff_front::FrontErrorKind::Unknown { .. }));
}
