//! The text format round-trips: parse → print → parse gives the same module, and printing a
//! parsed canonical text gives that very text back.

use jitdiff_ir::{
    Callee, Imm, Module, Opcode, SourceMap, Terminator, Type, parse_module, parse_module_with_spans, print_module,
};

/// Parse `text`, print, parse again: both modules equal and the printed text is a fixpoint.
fn round_trip(text: &str) -> Module {
    let first = parse_module(text).unwrap_or_else(|e| panic!("{e}\nin:\n{text}"));
    let printed = print_module(&first);
    let second = parse_module(&printed).unwrap_or_else(|e| panic!("{e}\nin printed text:\n{printed}"));
    assert_eq!(first, second, "module changed by print+parse; printed:\n{printed}");
    assert_eq!(print_module(&second), printed, "printing is not a fixpoint");
    assert_eq!(first.to_string(), printed, "Display differs from print_module");
    first
}

/// Every opcode except the vector ones, with every scalar and slice type.
const SCALARS: &str = "\
func @scalars(x: f64, y: f64, n: i64, s: slice, m: mslice) -> f64, i64, bool {
entry:
    c0 = fconst 1.5
    c1 = iconst -3
    c2 = bconst true
    c3 = bconst false
    a0 = fadd x, y
    a1 = fsub a0, c0
    a2 = fmul a1, y
    a3 = fdiv a2, x
    a4 = fneg a3
    a5 = fmulsz a4, y
    u0 = sqrt a5
    u1 = exp u0
    u2 = ln u1
    u3 = sin u2
    u4 = cos u3
    u5 = tan u4
    u6 = tanh u5
    u7 = abs u6
    u8 = log1p u7
    u9 = expm1 u8
    u10 = floor u9
    u11 = ceil u10
    u12 = atan u11
    u13 = asin u12
    u14 = acos u13
    u15 = sinh u14
    u16 = cosh u15
    h0 = asinh u16
    h1 = acosh h0
    h2 = atanh h1
    u17 = sign h2
    b0 = min u17, x
    b1 = max b0, y
    b2 = pow b1, x
    b3 = atan2 b2, y
    b4 = hypot b3, x
    r0 = frem b4, y
    b5 = powi r0, n
    w0 = exp2 b5
    w1 = log2 w0
    w2 = log10 w1
    w3 = cbrt w2
    w4 = round w3
    w5 = trunc w4
    t0 = fma w5, x, y
    i0 = iadd n, c1
    i1 = isub i0, n
    i2 = imul i1, i0
    i3 = idiv i2, c1
    i4 = irem i3, c1
    i5 = ineg i4
    j0 = iand i5, n
    j1 = ior j0, c1
    j2 = ixor j1, i0
    j3 = ishl j2, c1
    j4 = ishr j3, c1
    j5 = ushr j4, c1
    l0 = and c2, c3
    l1 = or l0, c2
    l2 = not l1
    k0 = fcmp eq x, y
    k1 = fcmp ne x, y
    k2 = fcmp lt x, y
    k3 = fcmp le x, y
    k4 = fcmp gt x, y
    k6 = iszero x
    k5 = icmp ge n, i5
    sel = select k5, t0, x
    f = itof i5
    g = ftoi sel
    len_s = len s
    len_m = len m
    e = load s, g
    store m, len_m, e
    ret f, g, l2
}
";

/// Every vector width and every vector opcode.
const VECTORS: &str = "\
func @vectors(s: slice, m: mslice, i: i64, x: f64) -> f64 {
entry:
    w2 = splat.f64x2 x
    w4 = vload.f64x4 s, i
    w8 = splat.f64x8 x
    w16 = vload.f64x16 m, i
    p2 = fadd w2, w2
    p4 = fsub w4, w4
    p8 = fmul w8, w8
    p16 = fdiv w16, w16
    z8 = fmulsz p8, w8
    n4 = fneg p4
    e0 = extract n4, 3
    q8 = insert z8, 7, e0
    e1 = extract q8, 0
    r16 = insert p16, 15, e1
    vstore m, i, r16
    vstore m, i, p2
    ret e1
}
";

/// Externs, calls before the callee's definition, multiple results, calls without results,
/// branches with and without block arguments, a loop, and unnamed values.
const CALLS_AND_CONTROL: &str = "\
extern @bessel_j0(f64) -> f64

extern @fill(mslice)

extern @pair(f64, i64) -> f64, i64

func @main(x: f64, out: mslice) -> f64, i64 {
entry:
    q, r = call @divmod(x)
    call @fill(out)
    j = call @bessel_j0(x)
    a, b = call @pair(j, r)
    zero = fconst 0.0
    pos = fcmp gt a, zero
    br pos, yes, no(b)
yes:
    ret q, r
no(k: i64):
    v10 = itof k
    jump done(v10, k)
done(v11: f64, v12: i64):
    ret v11, v12
}

func @divmod(x: f64) -> f64, i64 {
entry:
    k = ftoi x
    one = iconst 1
    negative = icmp lt k, one
    br negative, fail, start
fail:
    trap
    ret x, k
start:
    jump head(k, x)
head(i: i64, acc: f64):
    c = icmp le i, one
    br c, exit, body
body:
    i2 = isub i, one
    acc2 = fmul acc, x
    jump head(i2, acc2)
exit:
    ret acc, i
}

func @nothing() {
entry:
    ret
}
";

/// The tape instructions with every type they take.
const TAPE: &str = "\
func @tape(x: f64, n: i64, b: bool) -> f64, i64, bool {
entry:
    tpush x
    tpush n
    tpush b
    c = tpop.bool
    k = tpop.i64
    y = tpop.f64
    s = tsplit
    tpush x
    d = tpop.f64
    trejoin s
    ret y, k, c
}
";

const LOCAL_ARRAYS: &str = "\
func @local(x: f64, n: i64) -> f64 {
entry:
    zero = iconst 0
    arr = alloc n
    store arr, zero, x
    y = load arr, zero
    ret y
}
";

/// Data tables: one empty, one with the float spellings that need care (signed zero, infinities,
/// NaNs, subnormals), read in a branch (a `table` is a constant, defined anywhere).
const TABLES: &str = "\
extern @e(slice) -> f64

const @empty = []

const @odd = [-0.0, inf, -inf, NaN, -NaN, 0x7ff0000000000001, 5e-324, 1e300]

const @y = [0.14, 0.18, 0.22]

func @tables(k: i64, c: bool) -> f64, i64 {
entry:
    t = table @y
    n = len t
    br c, other, done(n)
other:
    u = table @odd
    x = load u, k
    m = len u
    v = table @empty
    z = call @e(v)
    jump done(m)
done(r: i64):
    a = load t, k
    ret a, r
}
";

#[test]
fn tables_round_trip_bit_for_bit_and_yield_slices() {
    let m = round_trip(TABLES);
    assert_eq!(print_module(&m), TABLES);
    assert_eq!(m.tables.len(), 3);
    let odd = &m.tables[m.table_id("odd").unwrap().index()];
    let bits: Vec<u64> = odd.data.iter().map(|x| x.to_bits()).collect();
    assert_eq!(bits[0], (-0.0f64).to_bits());
    assert_eq!(bits[4], (-f64::NAN).to_bits());
    assert_eq!(bits[5], 0x7ff0_0000_0000_0001);
    assert!(m.tables[m.table_id("empty").unwrap().index()].data.is_empty());
    let f = &m.functions[0];
    let first = &f.blocks[0].insts[0];
    assert_eq!((first.op, first.imm), (Opcode::Table, Imm::Table(m.table_id("y").unwrap())));
    assert_eq!(f.ty(first.results[0]), Type::Slice);
    assert!(jitdiff_ir::verify_module(&m).is_ok());
}

#[test]
fn long_tables_are_wrapped_and_line_breaks_inside_brackets_are_allowed() {
    let values: Vec<String> = (0..40).map(|k| format!("{}.25", k * 1000)).collect();
    let text = format!("const @long = [{}]\n", values.join(", "));
    let m = round_trip(&text);
    let printed = print_module(&m);
    assert!(printed.lines().count() > 3, "{printed}");
    assert!(printed.lines().all(|l| l.len() <= 100), "{printed}");
    // Free-form wrapping, a trailing comma and comments inside the brackets read the same.
    let loose = "const @long = [  ; the first values\n  0.25,\n\n 1000.25 , 2000.25,\n]\n";
    let m = parse_module(loose).unwrap();
    assert_eq!(m.tables[0].data.to_vec(), vec![0.25, 1000.25, 2000.25]);
}

#[test]
fn table_errors_point_at_the_offending_token() {
    let at = |text: &str| {
        let e = parse_module(text).unwrap_err();
        (e.pos.line, e.pos.col, e.kind.kind_name())
    };
    let func = |body: &str| format!("const @y = [1.0]\nfunc @f() -> f64 {{\nentry:\n{body}}}\n");
    assert_eq!(at(&func("    t = table @z\n    ret\n")), (4, 15, "UnknownTable"));
    assert_eq!(at(&func("    t = table @f\n    ret\n")), (4, 15, "UnknownTable"));
    assert_eq!(at(&func("    t = call @y()\n    ret\n")), (4, 14, "UnknownCallee"));
    assert_eq!(at(&func("    t = table y\n    ret\n")), (4, 15, "UnexpectedToken"));
    assert_eq!(at(&func("    table @y\n    ret\n")), (4, 5, "WrongResultCount"));
    assert_eq!(at("const @y = [1.0]\nconst @y = [2.0]\n"), (2, 7, "DuplicateFunction"));
    assert_eq!(at("const @f = [1.0]\nfunc @f() {\nentry:\n    ret\n}\n"), (2, 6, "DuplicateFunction"));
    assert_eq!(at("const @y = [1.0 2.0]\n"), (1, 17, "UnexpectedToken"));
    assert_eq!(at("const @y = [1.0, x]\n"), (1, 18, "BadNumber"));
    assert_eq!(at("const @y = [1.0, ,]\n"), (1, 18, "UnexpectedToken"));
    assert_eq!(at("const @y = [1.0, 1e]\n"), (1, 18, "BadNumber"));
    assert_eq!(at("const @y = [1.0\n"), (2, 1, "UnexpectedEof"));
    assert_eq!(at("const y = [1.0]\n"), (1, 7, "UnexpectedToken"));
    assert_eq!(at("const @y [1.0]\n"), (1, 10, "UnexpectedToken"));
    assert_eq!(at("const @y = [1.0] x\n"), (1, 18, "UnexpectedToken"));
}

#[test]
fn alloc_round_trips_and_yields_an_mslice() {
    let m = round_trip(LOCAL_ARRAYS);
    assert_eq!(print_module(&m), LOCAL_ARRAYS);
    let f = &m.functions[0];
    let alloc = &f.blocks[0].insts[1];
    assert_eq!(alloc.op, Opcode::Alloc);
    assert_eq!(f.ty(alloc.results[0]), Type::SliceMut);
}

#[test]
fn tape_instructions_round_trip_with_their_type_suffix() {
    let m = round_trip(TAPE);
    assert_eq!(print_module(&m), TAPE);
    let insts = &m.functions[0].blocks[0].insts;
    assert_eq!(insts[0].op, Opcode::TPush);
    assert!(insts[0].results.is_empty());
    assert_eq!(insts[4].imm, Imm::Type(Type::I64));
    assert_eq!(m.functions[0].ty(insts[5].results[0]), Type::F64);
}

#[test]
fn tpop_takes_only_a_scalar_type_suffix() {
    for (text, needle) in [
        (
            "func @f() -> f64x2 {\nentry:\n    x = tpop.f64x2\n    ret x\n}\n",
            "expected f64, i64 or bool, found `f64x2`",
        ),
        ("func @f() -> f64 {\nentry:\n    x = tpop f64\n    ret x\n}\n", "`tpop.f64`"),
        ("func @f(x: f64) {\nentry:\n    y = tpush x\n    ret\n}\n", "tpush"),
    ] {
        let e = parse_module(text).unwrap_err().to_string();
        assert!(e.contains(needle), "{e:?} lacks {needle:?}");
    }
}

#[test]
fn every_scalar_opcode_and_type_round_trips() {
    let m = round_trip(SCALARS);
    assert_eq!(print_module(&m), SCALARS, "canonical text prints back verbatim");
    let f = &m.functions[0];
    assert_eq!(f.returns, [Type::F64, Type::I64, Type::Bool]);
    assert_eq!(f.param_types(), [Type::F64, Type::F64, Type::I64, Type::Slice, Type::SliceMut]);
}

#[test]
fn every_vector_opcode_and_width_round_trips() {
    let m = round_trip(VECTORS);
    assert_eq!(print_module(&m), VECTORS);
    let f = &m.functions[0];
    let ty = |name: &str| f.values.iter().find(|d| d.name.as_deref() == Some(name)).map(|d| d.ty);
    assert_eq!(ty("w2"), Some(Type::F64x(2)));
    assert_eq!(ty("w4"), Some(Type::F64x(4)));
    assert_eq!(ty("q8"), Some(Type::F64x(8)));
    assert_eq!(ty("r16"), Some(Type::F64x(16)));
    assert_eq!(ty("e0"), Some(Type::F64));
}

#[test]
fn the_corpus_covers_every_opcode() {
    let mut seen = std::collections::HashSet::new();
    for text in [SCALARS, VECTORS, CALLS_AND_CONTROL, TAPE, LOCAL_ARRAYS, TABLES] {
        for f in parse_module(text).unwrap().functions {
            for b in &f.blocks {
                seen.extend(b.insts.iter().map(|i| i.op));
            }
        }
    }
    let missing: Vec<Opcode> = Opcode::all().filter(|op| !seen.contains(op)).collect();
    assert!(missing.is_empty(), "opcodes not covered: {missing:?}");
}

#[test]
fn externs_calls_before_definition_and_multiple_results_round_trip() {
    let m = round_trip(CALLS_AND_CONTROL);
    assert_eq!(print_module(&m), CALLS_AND_CONTROL);
    assert_eq!(m.externs.len(), 3);
    let main = &m.functions[0];
    let first = &main.blocks[0].insts[0];
    assert_eq!(first.imm, Imm::Callee(Callee::Func(m.func_id("divmod").unwrap())));
    assert_eq!(first.results.len(), 2);
    assert_eq!(main.ty(first.results[1]), Type::I64, "call results take the callee's types");
    assert_eq!(main.blocks[0].insts[1].imm, Imm::Callee(Callee::Extern(m.extern_id("fill").unwrap())));
    assert!(main.blocks[0].insts[1].results.is_empty());
    // `v10`, `v11`, `v12` are unnamed values, printed by their (canonical) index.
    let no = &main.blocks[2];
    assert_eq!(main.values[no.insts[0].results[0].index()].name, None);
}

#[test]
fn unnamed_values_are_renumbered_canonically() {
    let text = "func @f(v5: f64) -> f64 {\nentry:\n    v0 = fneg v5\n    ret v0\n}\n";
    let m = round_trip(text);
    assert_eq!(print_module(&m), "func @f(v0: f64) -> f64 {\nentry:\n    v1 = fneg v0\n    ret v1\n}\n");
}

#[test]
fn comments_blank_lines_and_spacing_are_not_significant() {
    let messy = "\
; a module with comments
# of both kinds

extern   @g(f64)->f64   ; trailing comment

func @f( x : f64 ) -> f64 {   # header comment
entry:  ; label comment

    ; comment line inside a block
    y=call @g( x )
\tret   y
}
";
    let clean = "extern @g(f64) -> f64\n\nfunc @f(x: f64) -> f64 {\nentry:\n    y = call @g(x)\n    ret y\n}\n";
    assert_eq!(print_module(&round_trip(messy)), clean);
    assert_eq!(parse_module(messy), parse_module(clean));
}

#[test]
fn special_float_constants_round_trip_bit_exactly() {
    let text = "\
func @consts() -> f64 {
entry:
    a = fconst NaN
    b = fconst -NaN
    c = fconst inf
    d = fconst -inf
    e = fconst -0.0
    f = fconst 0.0
    g = fconst 1e-7
    h = fconst 5e-324
    i = fconst 1.7976931348623157e308
    j = fconst 0x7ff0000000000001
    k = fconst 0xfff4000000000123
    l = fconst 0.1
    ret a
}
";
    let m = round_trip(text);
    assert_eq!(print_module(&m), text);
    let bits: Vec<u64> = m.functions[0].blocks[0]
        .insts
        .iter()
        .map(|i| match i.imm {
            Imm::F64(x) => x.to_bits(),
            other => panic!("not a float: {other:?}"),
        })
        .collect();
    let expected = [
        f64::NAN.to_bits(),
        (-f64::NAN).to_bits(),
        f64::INFINITY.to_bits(),
        f64::NEG_INFINITY.to_bits(),
        (-0.0f64).to_bits(),
        0,
        1e-7f64.to_bits(),
        1,
        f64::MAX.to_bits(),
        0x7ff0000000000001,
        0xfff4000000000123,
        0.1f64.to_bits(),
    ];
    assert_eq!(bits, expected);
    // A float equal in value but not in bits is a different module.
    let plus_zero = text.replace("e = fconst -0.0", "e = fconst 0.0");
    assert_ne!(parse_module(&plus_zero).unwrap(), m);
}

#[test]
fn integer_extremes_round_trip() {
    let text = "func @ints() -> i64, i64 {\nentry:\n    a = iconst -9223372036854775808\n    b = iconst 9223372036854775807\n    ret a, b\n}\n";
    let m = round_trip(text);
    assert_eq!(m.functions[0].blocks[0].insts[0].imm, Imm::I64(i64::MIN));
    assert_eq!(m.functions[0].blocks[0].insts[1].imm, Imm::I64(i64::MAX));
}

#[test]
fn values_may_be_used_before_their_definition_line() {
    // Not valid SSA order (the verifier rejects it) but parseable: types are inferred anyway.
    let text = "\
func @f(x: f64) -> i64 {
entry:
    b = ftoi a
    a = fneg x
    jump later
later:
    ret c
done:
    c = iadd b, b
    ret c
}
";
    let m = round_trip(text);
    let f = &m.functions[0];
    let ty = |name: &str| f.values.iter().find(|d| d.name.as_deref() == Some(name)).map(|d| d.ty);
    assert_eq!((ty("a"), ty("b"), ty("c")), (Some(Type::F64), Some(Type::I64), Some(Type::I64)));
}

#[test]
fn ill_typed_instructions_parse_with_f64_results() {
    let text = "func @f(n: i64) -> f64 {\nentry:\n    y = fadd n, n\n    z = fadd y, y\n    ret z\n}\n";
    let f = &round_trip(text).functions[0];
    assert!(f.values.iter().skip(1).all(|d| d.ty == Type::F64));
    // Wrong arity is the verifier's concern too.
    assert!(parse_module("func @f(x: f64) {\nentry:\n    y = fadd x\n    ret\n}\n").is_ok());
}

#[test]
fn a_block_without_terminator_parses_with_none() {
    let text = "func @f() {\nentry:\n    x = fconst 1.0\nnext:\n    ret\n}\n";
    let m = round_trip(text);
    assert_eq!(m.functions[0].blocks[0].term, None);
    assert_eq!(m.functions[0].blocks[1].term, Some(Terminator::Return(vec![])));
    assert_eq!(print_module(&m), text);
}

#[test]
fn source_map_records_every_position() {
    let (m, spans): (Module, SourceMap) = parse_module_with_spans(CALLS_AND_CONTROL).unwrap();
    assert_eq!(spans.externs.len(), m.externs.len());
    assert_eq!(spans.externs[1].line, 3);
    assert_eq!(spans.func(1).map(|p| (p.line, p.col)), Some((25, 1)));
    assert_eq!(spans.block(0, 1).map(|p| (p.line, p.col)), Some((16, 1)));
    assert_eq!(spans.inst(0, 0, 3).map(|p| (p.line, p.col)), Some((12, 5)));
    assert_eq!(spans.term(0, 0).map(|p| (p.line, p.col)), Some((15, 5)));
    assert_eq!(spans.inst(0, 0, 99), None);
    for (f, func) in m.functions.iter().enumerate() {
        let fs = &spans.funcs[f];
        assert_eq!(fs.blocks.len(), func.blocks.len());
        for (b, block) in func.blocks.iter().enumerate() {
            assert_eq!(fs.insts[b].len(), block.insts.len());
            assert_eq!(fs.terms[b].is_some(), block.term.is_some());
        }
    }
}

#[test]
fn the_empty_module_is_the_empty_text() {
    assert_eq!(parse_module("").unwrap(), Module::new());
    assert_eq!(parse_module("\n; nothing\n\n").unwrap(), Module::new());
    assert_eq!(print_module(&Module::new()), "");
}

const IR_DOC: &str = include_str!("../../../docs/ir.md");

/// The fenced ```ir examples of docs/ir.md.
fn doc_examples() -> Vec<String> {
    let mut examples = vec![];
    let mut current: Option<String> = None;
    for line in IR_DOC.lines() {
        match (&mut current, line.trim_end()) {
            (None, "```ir") => current = Some(String::new()),
            (Some(text), "```") => {
                examples.push(std::mem::take(text));
                current = None;
            }
            (Some(text), _) => {
                text.push_str(line);
                text.push('\n');
            }
            (None, _) => {}
        }
    }
    examples
}

#[test]
fn the_examples_of_the_format_reference_parse_and_round_trip() {
    let examples = doc_examples();
    assert!(examples.len() >= 3, "expected the ```ir examples of docs/ir.md, found {}", examples.len());
    for text in &examples {
        round_trip(text);
    }
    let rosenbrock = parse_module(&examples[1]).unwrap();
    assert!(rosenbrock.func_by_name("rosenbrock").is_some());
    let calls = parse_module(&examples[2]).unwrap();
    assert_eq!(calls.externs.len(), 1);
    assert_eq!(calls.func_by_name("fold_j0").map(|f| f.returns.len()), Some(2));
}

#[test]
fn the_format_reference_documents_every_opcode() {
    for op in Opcode::all() {
        let row = format!("| `{}` | `", op.spelling());
        assert!(IR_DOC.contains(&row), "docs/ir.md has no opcode table row for `{}`", op.spelling());
    }
}
