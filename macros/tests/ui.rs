//! Compile-fail tests: each file under `tests/ui/` is Rust outside the subset (or a misuse of
//! the attributes), and its `.stderr` holds the error rustc prints — the front end's message at
//! the construct it is about. One `TestCases` for all, so the test project builds once.
//! Regenerate the `.stderr` files with `TRYBUILD=overwrite cargo test -p jitdiff-macros`, and
//! read them before committing.

#[test]
fn unsupported_rust_is_a_compile_error_at_the_construct() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/*.rs");
}
