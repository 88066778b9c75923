//! No input panics: valid programs mutated at random (characters deleted, duplicated, swapped,
//! tokens inserted) either lower to a module that verifies or give a `FrontError` — never an
//! internal error (which is what a contained panic or an unverifiable module becomes).

use crate::support::Rng;
use jitdiff_front::FrontErrorKind;

/// Fragments to splice in: keywords, operators, types and method calls of the subset and just
/// outside it.
const TOKENS: [&str; 54] = [
    ";",
    "{",
    "}",
    "(",
    ")",
    "[",
    "]",
    ",",
    "let ",
    "mut ",
    "for ",
    "in ",
    "while ",
    "loop ",
    "break ",
    "continue ",
    "return ",
    "if ",
    "else ",
    "..",
    "..=",
    " as f64",
    " as usize",
    "0",
    "1.0",
    "x",
    "i",
    "&mut ",
    "&",
    "*",
    "-",
    "!",
    " && ",
    " || ",
    ".iter()",
    ".sum::<f64>()",
    "|v| v",
    ".len()",
    "f64::NAN",
    "'a: ",
    "é",
    "r#",
    "1e999",
    "u8",
    "match x { _ => ",
    " => ",
    " | ",
    "..=",
    ".x",
    "self",
    "Self",
    "impl P ",
    "struct ",
    "&mut self",
];

/// The benchmark programs (valid) and the sources of the error cases (invalid).
fn corpus() -> (Vec<String>, Vec<String>) {
    let valid: Vec<String> = [
        include_str!("../../../problems/rust/rosenbrock.rs"),
        include_str!("../../../problems/rust/logistic.rs"),
        include_str!("../../../problems/rust/pendulum.rs"),
        include_str!("../../../problems/rust/mlp.rs"),
        include_str!("../../../problems/rust/gmm.rs"),
        include_str!("../../../problems/rust/lotka_volterra.rs"),
    ]
    .iter()
    .map(|s| s.to_string())
    .chain(
        [
            crate::constructs::structs::STRUCTS,
            crate::constructs::structs::METHODS,
            crate::constructs::structs::SLICES,
            crate::constructs::structs::OPERATORS,
            crate::constructs::structs::TUPLES,
            crate::constructs::structs::PATTERNS,
            crate::constructs::structs::EQUALITY,
            crate::constructs::structs::TUPLE_STRUCTS,
            crate::constructs::control::PANICS,
            crate::constructs::arrays::SLICE_UPDATES,
            crate::constructs::arrays::COLLECTED,
            crate::constructs::arrays::GROWING,
            crate::constructs::picks::PICKS,
            crate::constructs::rows::ROWS,
            crate::constructs::iterators::CONSUMERS,
        ]
        .map(String::from),
    )
    .collect();
    let invalid = crate::errors::cases().map(|(_, source, _)| source.to_string()).collect();
    (valid, invalid)
}

/// `edits` random edits of `source`.
fn mutate(source: &str, edits: u64, rng: &mut Rng) -> String {
    let mut chars: Vec<char> = source.chars().collect();
    for _ in 0..edits {
        if chars.is_empty() {
            break;
        }
        let at = rng.below(chars.len() as u64) as usize;
        match rng.below(4) {
            0 => {
                let len = (1 + rng.below(8) as usize).min(chars.len() - at);
                chars.drain(at..at + len);
            }
            1 => {
                let len = (1 + rng.below(12) as usize).min(chars.len() - at);
                let copy: Vec<char> = chars[at..at + len].to_vec();
                let to = rng.below(chars.len() as u64) as usize;
                chars.splice(to..to, copy);
            }
            2 => {
                let other = rng.below(chars.len() as u64) as usize;
                chars.swap(at, other);
            }
            _ => {
                let token = TOKENS[rng.below(TOKENS.len() as u64) as usize];
                chars.splice(at..at, token.chars());
            }
        }
    }
    chars.into_iter().collect()
}

#[test]
fn mutated_sources_never_panic_nor_produce_unverifiable_ir() {
    let (valid, invalid) = corpus();
    // `FRONT_FUZZ_ROUNDS` and `FRONT_FUZZ_SEED` run longer or other campaigns locally.
    let env = |name: &str, default: u64| std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default);
    let mut rng = Rng::new(env("FRONT_FUZZ_SEED", 0x5eed));
    let (mut lowered, mut rejected) = (0, 0);
    for round in 0..env("FRONT_FUZZ_ROUNDS", 4000) as usize {
        // Mostly one edit of a valid program (which often still lowers), sometimes several,
        // and the invalid sources too.
        let source = match round % 4 {
            0 | 1 => mutate(&valid[round % valid.len()], 1, &mut rng),
            2 => mutate(&valid[round % valid.len()], 1 + rng.below(4), &mut rng),
            _ => mutate(&invalid[round % invalid.len()], 1 + rng.below(2), &mut rng),
        };
        match jitdiff_front::lower_source(&source) {
            Ok(module) => {
                assert!(jitdiff_ir::verify_module(&module).is_ok());
                let text = jitdiff_ir::print_module(&module);
                assert_eq!(jitdiff_ir::parse_module(&text).as_ref(), Ok(&module), "{text}");
                if round % 8 == 0 {
                    crate::support::check_as_written(&source, &module);
                }
                lowered += 1;
            }
            Err(e) => {
                assert!(!matches!(e.kind, FrontErrorKind::Internal { .. }), "{e}\nsource:\n{source}");
                assert!(e.position.line >= 1 && e.position.column >= 1, "{e}");
                rejected += 1;
            }
        }
    }
    // Both outcomes occur: the mutations are neither all harmless nor all fatal.
    assert!(lowered > 200 && rejected > 200, "lowered {lowered}, rejected {rejected}");
}

#[test]
fn pathological_inputs_are_errors() {
    let deep = format!("fn f(x: f64) -> f64 {{ {}x{} }}", "(".repeat(5000), ")".repeat(5000));
    let long_chain = format!("fn f(x: f64) -> f64 {{ {} }}", vec!["x"; 400].join(" + "));
    let deep_blocks = format!("fn f(x: f64) -> f64 {{ {}x{} }}", "{ ".repeat(90), " }".repeat(90));
    let deep_unary = format!("fn f(x: f64) -> f64 {{ {}x }}", "-".repeat(300));
    let huge_chain = format!("fn f(x: f64) -> f64 {{ {} }}", vec!["x"; 20_000].join(" + "));
    let huge_unary = format!("fn f(x: f64) -> f64 {{ {}x }}", "- ".repeat(20_000));
    // Deep for the parser, within the statement bound: parsed on the front end's own stack.
    let deep_parse = format!("fn f(x: f64) -> f64 {{ {}x }}", "- ".repeat(9_000));
    let huge_methods = format!("fn f(x: f64) -> f64 {{ x{} }}", ".sin()".repeat(20_000));
    let huge_casts = format!("fn f(x: f64) -> f64 {{ x{} }}", " as f64".repeat(20_000));
    for source in [
        "",
        "fn",
        "fn f(",
        "}",
        "\u{0}",
        "fn f() -> f64 { 1e999999 }",
        &deep,
        &long_chain,
        &deep_blocks,
        &deep_unary,
        &huge_chain,
        &huge_unary,
        &huge_methods,
        &huge_casts,
        &deep_parse,
    ] {
        match jitdiff_front::lower_source(source) {
            Ok(module) => assert!(jitdiff_ir::verify_module(&module).is_ok()),
            Err(e) => assert!(!matches!(e.kind, FrontErrorKind::Internal { .. }), "{e}"),
        }
    }
}
