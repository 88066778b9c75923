//! Robustness of the front end: valid IR programs (the examples under `examples/ir/` plus a few
//! embedded here) are mutated at token and line level — tokens dropped, swapped, duplicated or
//! replaced by random identifiers, numbers and punctuation; lines dropped, duplicated or swapped —
//! and fed to the parser and the verifier. Nothing may panic, every error must carry a sensible
//! position, and a mutant that passes verification must print and parse back to itself.
//!
//! A second property edits parsed modules directly (out-of-range values, blocks and callees,
//! wrong immediates and opcodes, moved instructions...), which text cannot express, to drive the
//! verifier through everything the raw API allows.

use jitdiff_ir::{
    Block, Callee, CondCode, ExternId, FuncId, Imm, Module, Opcode, Terminator, Type, Value, parse_module_with_spans,
    print_module, verify_all, verify_module_with_spans,
};
use proptest::prelude::*;
use proptest::test_runner::Config;
use std::path::Path;
use std::sync::OnceLock;

/// Small valid programs that exercise what the examples may not: vectors, stores, multiple
/// results, externs, booleans, every terminator.
const EMBEDDED: &[&str] = &[
    "extern @bessel_j0(f64) -> f64

func @pair(x: f64, k: i64) -> f64, i64 {
entry:
    y = call @bessel_j0(x)
    c = icmp ge k, k
    d = not c
    e = or c, d
    br e, yes, no(x)
yes:
    ret y, k
no(z: f64):
    j = ftoi z
    ret z, j
}
",
    "func @axpy(a: f64, x: slice, y: mslice) {
entry:
    n = len x
    zero = iconst 0
    two = iconst 2
    half = idiv n, two
    jump head(zero)
head(i: i64):
    more = icmp lt i, half
    br more, body, exit
body:
    xs = vload.f64x2 x, i
    ys = vload.f64x2 y, i
    av = splat.f64x2 a
    p = fmul av, xs
    s = fadd p, ys
    l0 = extract s, 0
    s2 = insert s, 1, l0
    vstore y, i, s2
    one = iconst 1
    inext = iadd i, one
    jump head(inext)
exit:
    ret
}
",
    "func @poly(x: f64) -> f64 {
entry:
    c0 = fconst -0.0
    c1 = fconst 1e-7
    big = fconst inf
    k = iconst -3
    p = powi x, k
    b = fcmp lt x, big
    s = select b, p, c1
    m = max s, c0
    r = call @sq(m)
    ret r
}

func @sq(t: f64) -> f64 {
entry:
    u = fmul t, t
    ret u
}
",
];

/// Replacement tokens: names of every kind, literals (good and bad), punctuation (good and bad).
const REPLACEMENTS: &[&str] = &[
    "x",
    "y",
    "entry",
    "head",
    "exit",
    "v0",
    "v99",
    "_",
    "f64",
    "i64",
    "bool",
    "slice",
    "mslice",
    "f64x4",
    "f64x3",
    "fadd",
    "load",
    "store",
    "vstore",
    "call",
    "select",
    "extract",
    "jump",
    "br",
    "ret",
    "func",
    "extern",
    "lt",
    "true",
    "0",
    "-1",
    "1.5",
    "1e308",
    "1e",
    "NaN",
    "-inf",
    "9223372036854775807",
    "99999999999999999999",
    "0x7ff8000000000001",
    "256",
    ",",
    ":",
    "=",
    "(",
    ")",
    "{",
    "}",
    "->",
    ".",
    "@",
    "@f",
    "-",
    "$",
    ";",
    "#",
    "\n",
    "λ",
];

fn programs() -> &'static [String] {
    static PROGRAMS: OnceLock<Vec<String>> = OnceLock::new();
    PROGRAMS.get_or_init(|| {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/ir");
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .map(|entries| entries.filter_map(Result::ok).map(|e| e.path()).collect())
            .unwrap_or_default();
        files.retain(|p| p.extension().is_some_and(|e| e == "ir"));
        files.sort();
        let mut all: Vec<String> = files.iter().filter_map(|p| std::fs::read_to_string(p).ok()).collect();
        all.extend(EMBEDDED.iter().map(|s| s.to_string()));
        all
    })
}

/// Split text into tokens, keeping whitespace (but not newlines) as separate pieces so that
/// joining the pieces gives the text back.
fn pieces(text: &str) -> Vec<String> {
    let mut out: Vec<String> = vec![];
    let word = |c: char| c.is_alphanumeric() || c == '_' || c == '@';
    let space = |c: char| c == ' ' || c == '\t';
    for c in text.chars() {
        let joins = out
            .last()
            .and_then(|p| p.chars().last())
            .is_some_and(|last| (word(last) && word(c)) || (space(last) && space(c)) || (last == '-' && c == '>'));
        match out.last_mut() {
            Some(p) if joins => p.push(c),
            _ => out.push(c.to_string()),
        }
    }
    out
}

#[derive(Clone, Debug)]
enum Mutation {
    DropToken(usize),
    SwapTokens(usize, usize),
    DuplicateToken(usize),
    ReplaceToken(usize, usize),
    /// Overwrite a token with a copy of another token of the same text (names stay plausible,
    /// so more mutants get past the parser to the verifier).
    CopyToken(usize, usize),
    DropLine(usize),
    DuplicateLine(usize),
    SwapLines(usize, usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        any::<usize>().prop_map(Mutation::DropToken),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Mutation::SwapTokens(a, b)),
        any::<usize>().prop_map(Mutation::DuplicateToken),
        (any::<usize>(), 0..REPLACEMENTS.len()).prop_map(|(a, r)| Mutation::ReplaceToken(a, r)),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Mutation::CopyToken(a, b)),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Mutation::CopyToken(a, b)),
        any::<usize>().prop_map(Mutation::DropLine),
        any::<usize>().prop_map(Mutation::DuplicateLine),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Mutation::SwapLines(a, b)),
    ]
}

/// Apply one mutation; indices are taken modulo the number of tokens (non-blank pieces) or lines.
fn apply(text: &str, m: &Mutation) -> String {
    match *m {
        Mutation::DropLine(_) | Mutation::DuplicateLine(_) | Mutation::SwapLines(..) => {
            let mut lines: Vec<&str> = text.split('\n').collect();
            let n = lines.len();
            match *m {
                Mutation::DropLine(a) => {
                    lines.remove(a % n);
                }
                Mutation::DuplicateLine(a) => lines.insert(a % n, lines[a % n]),
                Mutation::SwapLines(a, b) => lines.swap(a % n, b % n),
                _ => unreachable!("only line mutations here"),
            }
            lines.join("\n")
        }
        _ => {
            let mut ps = pieces(text);
            let tokens: Vec<usize> = (0..ps.len()).filter(|&i| !ps[i].trim().is_empty()).collect();
            if tokens.is_empty() {
                return text.to_string();
            }
            let at = |a: usize| tokens[a % tokens.len()];
            match *m {
                Mutation::DropToken(a) => ps[at(a)].clear(),
                Mutation::SwapTokens(a, b) => ps.swap(at(a), at(b)),
                Mutation::DuplicateToken(a) => {
                    let t = ps[at(a)].clone();
                    ps.insert(at(a), format!("{t} "));
                }
                Mutation::ReplaceToken(a, r) => ps[at(a)] = REPLACEMENTS[r].to_string(),
                Mutation::CopyToken(a, b) => ps[at(a)] = ps[at(b)].clone(),
                _ => unreachable!("only token mutations here"),
            }
            ps.concat()
        }
    }
}

/// Parse and verify `text`; check the invariants every outcome must satisfy.
fn check_front_end(text: &str) -> Result<(), TestCaseError> {
    let line_count = text.split('\n').count() as u32;
    match parse_module_with_spans(text) {
        Err(e) => {
            prop_assert!(e.pos.line >= 1 && e.pos.line <= line_count, "parse error line out of range: {e}");
            prop_assert!(e.pos.col >= 1, "parse error column 0: {e}");
            prop_assert!(e.to_string().starts_with(&format!("{}: ", e.pos)), "message lacks its position: {e}");
        }
        Ok((module, spans)) => {
            let all = verify_all(&module, Some(&spans));
            let first = verify_module_with_spans(&module, Some(&spans));
            prop_assert_eq!(first.as_ref().err(), all.first(), "verify_module disagrees with verify_all");
            for e in &all {
                let message = e.to_string();
                prop_assert!(message.contains(&format!("in @{}", e.func)), "message lacks the function: {}", message);
                let pos = e.pos.expect("a parsed module's errors have positions");
                prop_assert!(pos.line >= 1 && pos.line <= line_count, "verify error line out of range: {}", message);
                prop_assert!(message.starts_with(&format!("{pos}: ")), "message lacks its position: {}", message);
            }
            if all.is_empty() {
                let printed = print_module(&module);
                let reparsed = parse_module_with_spans(&printed).map(|(m, _)| m);
                prop_assert_eq!(
                    reparsed.as_ref().ok(),
                    Some(&module),
                    "printed text does not parse back:\n{}",
                    printed
                );
            }
        }
    }
    Ok(())
}

const TYPES: [Type; 9] = [
    Type::F64,
    Type::I64,
    Type::Bool,
    Type::Slice,
    Type::SliceMut,
    Type::F64x(2),
    Type::F64x(4),
    Type::F64x(3),
    Type::F64x(0),
];

const IMMEDIATES: [Imm; 13] = [
    Imm::None,
    Imm::F64(1.0),
    Imm::I64(-1),
    Imm::Bool(true),
    Imm::Cond(CondCode::Lt),
    Imm::Lane(0),
    Imm::Lane(7),
    Imm::Type(Type::F64x(4)),
    Imm::Type(Type::F64x(5)),
    Imm::Type(Type::I64),
    Imm::Callee(Callee::Func(FuncId::from_index(0))),
    Imm::Callee(Callee::Func(FuncId::from_index(99))),
    Imm::Callee(Callee::Extern(ExternId::from_index(0))),
];

/// A direct edit of a parsed module: `(what, a, b, c, d)`, indices taken modulo the lengths
/// (value indices may land just past the end of the value table).
type Edit = (u8, usize, usize, usize, usize);

fn apply_edit(m: &mut Module, (what, a, b, c, d): Edit) {
    let n_funcs = m.functions.len().max(1);
    let Some(f) = m.functions.get_mut(a % n_funcs) else { return };
    let value = |n: usize, count: usize| Value::from_index(n % (count + 2));
    let count = f.values.len();
    if what == 0 {
        if let Some(v) = f.values.get_mut(b % count.max(1)) {
            v.ty = TYPES[c % TYPES.len()];
        }
        return;
    }
    if what == 1 {
        f.params.push(value(b, count));
        return;
    }
    let n_blocks = f.blocks.len();
    let Some(block) = f.blocks.get_mut(b % n_blocks.max(1)) else { return };
    match what {
        2 => block.term = None,
        3 => block.params.push(value(c, count)),
        4 => {
            if let Some(t) = &mut block.term {
                let retargeted = match t.successors_mut().into_iter().next() {
                    Some(call) => {
                        call.block = Block::from_index(c % (n_blocks + 1));
                        true
                    }
                    None => false,
                };
                if !retargeted {
                    *t = Terminator::Return(vec![value(c, count); d % 3]);
                }
            }
        }
        5 => {
            if let Some(t) = &mut block.term {
                let mut k = 0;
                t.map_uses(|v| {
                    k += 1;
                    if k == 1 + d % 3 { value(c, count) } else { v }
                });
            }
        }
        _ => {
            let n_insts = block.insts.len();
            let Some(inst) = block.insts.get_mut(c % n_insts.max(1)) else { return };
            match what {
                6 => {
                    let n_args = inst.args.len().max(1);
                    if let Some(arg) = inst.args.get_mut(d % n_args) {
                        *arg = value(d / 7, count);
                    } else {
                        inst.args.push(value(d, count));
                    }
                }
                7 => inst.imm = IMMEDIATES[d % IMMEDIATES.len()],
                8 => inst.op = Opcode::all().nth(d % Opcode::all().count()).expect("in range"),
                9 => inst.results.push(value(d, count)),
                10 => {
                    inst.results.pop();
                }
                11 => {
                    let moved = block.insts.remove(c % n_insts);
                    let to = d % n_blocks;
                    let at = d % (f.blocks[to].insts.len() + 1);
                    f.blocks[to].insts.insert(at, moved);
                }
                _ => {
                    block.insts.remove(c % n_insts);
                }
            }
        }
    }
}

/// Program number `program` (modulo their count), parsed and then edited by `edits`, with the
/// source map of the unedited text.
fn edited(program: usize, edits: &[Edit]) -> (Module, jitdiff_ir::SourceMap) {
    let programs = programs();
    let (mut module, spans) = parse_module_with_spans(&programs[program % programs.len()]).expect("valid program");
    for &e in edits {
        apply_edit(&mut module, e);
    }
    (module, spans)
}

fn edit() -> impl Strategy<Value = Edit> {
    (0u8..13, any::<usize>(), any::<usize>(), any::<usize>(), any::<usize>())
}

#[test]
fn unmutated_programs_parse_and_verify() {
    let programs = programs();
    assert!(programs.len() > EMBEDDED.len(), "no example programs found under examples/ir");
    for text in programs {
        let (module, spans) = parse_module_with_spans(text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(verify_all(&module, Some(&spans)), vec![], "{text}");
    }
}

#[test]
fn mutation_helpers_mutate() {
    let text = "a = fadd b, c\nret a";
    assert_eq!(pieces(text).concat(), text);
    assert_eq!(apply(text, &Mutation::DropToken(0)), " = fadd b, c\nret a");
    assert_eq!(apply(text, &Mutation::SwapLines(0, 1)), "ret a\na = fadd b, c");
    assert_eq!(apply(text, &Mutation::ReplaceToken(2, 0)), "a = x b, c\nret a");
    assert_eq!(apply("x -> y", &Mutation::DropToken(1)), "x  y");
}

proptest! {
    #![proptest_config(Config { cases: 3000, failure_persistence: None, ..Config::default() })]

    #[test]
    fn mutated_programs_never_panic_the_front_end(
        program in any::<usize>(),
        mutations in prop::collection::vec(mutation(), 1..4),
    ) {
        let programs = programs();
        let mut text = programs[program % programs.len()].clone();
        for m in &mutations {
            text = apply(&text, m);
        }
        check_front_end(&text)?;
    }
}

proptest! {
    #![proptest_config(Config { cases: 2000, failure_persistence: None, ..Config::default() })]

    #[test]
    fn edited_modules_never_panic_the_verifier(
        program in any::<usize>(),
        edits in prop::collection::vec(edit(), 1..4),
    ) {
        let (module, spans) = edited(program, &edits);
        // The source map no longer matches the edited module; positions may be off but nothing
        // may panic, with or without it.
        let with_spans = verify_all(&module, Some(&spans));
        let without = verify_all(&module, None);
        prop_assert_eq!(with_spans.len(), without.len());
        let first = verify_module_with_spans(&module, None).err();
        prop_assert_eq!(first.as_ref(), without.first());
        for e in &without {
            prop_assert!(e.pos.is_none());
            prop_assert!(e.to_string().starts_with(&format!("in @{}", e.func)), "{}", e);
        }
        if without.is_empty() {
            let mut canonical = module.clone();
            canonical.canonicalize();
            let printed = print_module(&module);
            let reparsed = parse_module_with_spans(&printed).map(|(m, _)| m);
            prop_assert_eq!(reparsed.as_ref().ok(), Some(&canonical), "verified module does not round-trip:\n{}", printed);
        }
    }
}

proptest! {
    #![proptest_config(Config { cases: 150, failure_persistence: None, ..Config::default() })]

    /// The handles' builders take a `Module` whose fields anyone may edit: an edited module
    /// gets the verifier's error (the same as `verify_module`'s), never a panic from reading a
    /// signature that is not there.
    #[test]
    fn edited_modules_never_panic_the_builders(
        program in any::<usize>(),
        edits in prop::collection::vec(edit(), 1..4),
    ) {
        let (module, _) = edited(program, &edits);
        let Some(name) = module.functions.first().map(|f| f.name.clone()) else { return Ok(()) };
        let verified = verify_module_with_spans(&module, None);
        let built = std::panic::catch_unwind(|| {
            jitdiff::GradientFn::builder(&module, &name).wrt_all().build().map(|_| ())
        });
        let Ok(built) = built else { return Err(TestCaseError::fail(format!("building @{name} panicked"))) };
        if let Err(e) = verified {
            prop_assert!(matches!(built, Err(jitdiff::Error::Verify(ref v)) if **v == e), "{:?} vs {}", built, e);
        }
    }
}

/// The queries that size buffers from an argument list (`inputs`, `outputs`, `input_labels`)
/// answer for a short or long list without panicking; the calls report the mismatch.
#[test]
fn buffer_size_queries_take_any_argument_list() {
    use jitdiff::{Arg, GradientFn, ir::parse_module};
    let m = parse_module(
        "func @f(x: slice, out: mslice) -> f64 {\nentry:\n    z = iconst 0\n    a = load x, z\n    store out, z, a\n    ret a\n}\n",
    )
    .unwrap();
    let g = GradientFn::builder(&m, "f").wrt(["x"]).build().unwrap();
    let x = [1.0, 2.0];
    let mut out = [0.0; 3];
    assert_eq!(g.outputs(&[Arg::from(&x[..])]), 1, "a missing mslice counts as empty");
    assert_eq!(g.outputs(&[Arg::from(&x[..]), Arg::from(&mut out[..])]), 4);
    assert_eq!(g.inputs(&[]), 0);
    let (mut extra, mut more) = ([0.0; 1], [0.0; 2]);
    let long = [Arg::from(&x[..]), Arg::from(&mut extra[..]), Arg::from(&mut more[..])];
    assert_eq!(g.input_labels(&long), ["x[0]", "x[1]"]);
    let mut grad = [0.0; 2];
    assert!(matches!(g.value_and_grad(&mut [Arg::from(&x[..])], &mut grad), Err(jitdiff::Error::ArgumentCount { .. })));
}
