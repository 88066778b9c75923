//! Every opcode of the op table, at edge values, gives exactly what the interpreter gives:
//! results bit for bit, errors with the same kind and site, and the same final mslice contents.

use jitdiff_ir::{
    ArgValue, ExternArg, ExternRegistry, Interpreter, Module, OP_TABLE, Opcode, RuntimeValue, Shape, Type, parse_module,
};
use jitdiff_jit::{Agreement, Arg, JitOptions, compile, differential_call};

const EDGE_F64: [f64; 16] = [
    0.0,
    -0.0,
    1.0,
    -1.0,
    0.5,
    -2.5,
    3.7,
    100.0,
    1e300,
    -1e-300,
    5e-324,
    f64::INFINITY,
    f64::NEG_INFINITY,
    f64::NAN,
    9.223372036854776e18,
    -0.49999999999999994,
];
const EDGE_I64: [i64; 9] = [0, 1, -1, 2, -3, 7, i64::MAX, i64::MIN, 1 << 40];

/// Compile `text` and compare every call of `func` on `cases` with the interpreter; returns how
/// many calls failed (with the same error) so callers can check error paths were exercised.
fn check(text: &str, func: &str, cases: &[Vec<ArgValue>]) -> usize {
    check_with(text, func, cases, &ExternRegistry::new())
}

fn check_with(text: &str, func: &str, cases: &[Vec<ArgValue>], externs: &ExternRegistry) -> usize {
    let module: Module = parse_module(text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let compiled = compile(&module, externs, &JitOptions::new()).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let interp = Interpreter::new(&module).with_externs(externs).with_step_limit(10_000_000);
    let mut failures = 0;
    for args in cases {
        match differential_call(&compiled, &interp, func, args) {
            Ok(Agreement::Failed(_)) => failures += 1,
            Ok(Agreement::Returned(_)) => {}
            Ok(Agreement::Skipped) => panic!("step limit in a test program\n{text}"),
            Err(d) => panic!("{d}\n{text}"),
        }
    }
    failures
}

fn f(x: f64) -> ArgValue {
    ArgValue::F64(x)
}
fn i(x: i64) -> ArgValue {
    ArgValue::I64(x)
}

#[test]
fn float_math_at_edge_values() {
    let mut ops = 0;
    for info in OP_TABLE {
        match info.shape {
            Shape::FloatUnary { .. } => {
                let text = format!("func @t(x: f64) -> f64 {{\nentry:\n    y = {} x\n    ret y\n}}\n", info.spelling);
                let cases: Vec<_> = EDGE_F64.iter().map(|&x| vec![f(x)]).collect();
                check(&text, "t", &cases);
                ops += 1;
            }
            Shape::FloatBinary { .. } => {
                let text = format!(
                    "func @t(a: f64, b: f64) -> f64 {{\nentry:\n    y = {} a, b\n    ret y\n}}\n",
                    info.spelling
                );
                let cases: Vec<_> =
                    EDGE_F64.iter().flat_map(|&a| EDGE_F64.iter().map(move |&b| vec![f(a), f(b)])).collect();
                check(&text, "t", &cases);
                ops += 1;
            }
            Shape::FloatTernary => {
                let text = format!(
                    "func @t(a: f64, b: f64, c: f64) -> f64 {{\nentry:\n    y = {} a, b, c\n    ret y\n}}\n",
                    info.spelling
                );
                let cases: Vec<_> = EDGE_F64
                    .iter()
                    .flat_map(|&a| {
                        EDGE_F64.iter().flat_map(move |&b| EDGE_F64.iter().map(move |&c| vec![f(a), f(b), f(c)]))
                    })
                    .collect();
                check(&text, "t", &cases);
                ops += 1;
            }
            _ => {}
        }
    }
    assert!(ops >= 36, "only {ops} float ops found in the op table");
}

#[test]
fn lane_wise_arithmetic_on_every_vector_width() {
    for w in [2usize, 4, 8, 16] {
        for op in ["fadd", "fsub", "fmul", "fmulsz", "fdiv"] {
            let text = format!(
                "func @t(a: f64x{w}, b: f64x{w}) -> f64x{w}, f64x{w} {{\nentry:\n    y = {op} a, b\n    z = fneg y\n    ret y, z\n}}\n"
            );
            let lanes = |k: usize| (0..w).map(|j| EDGE_F64[(j * 5 + k) % EDGE_F64.len()]).collect::<Vec<_>>();
            let cases: Vec<_> =
                (0..8).map(|k| vec![ArgValue::Vector(lanes(k)), ArgValue::Vector(lanes(k + 3))]).collect();
            check(&text, "t", &cases);
        }
        // splat, extract and insert of every lane, and a vector select
        let mut body = format!("    v = splat.f64x{w} x\n    c = fcmp lt x, y\n");
        let mut sum = "acc0".to_string();
        body.push_str("    acc0 = fconst 0.0\n");
        for k in 0..w {
            body.push_str(&format!(
                "    u{k} = insert v, {k}, y\n    e{k} = extract u{k}, {k}\n    acc{} = fadd {sum}, e{k}\n",
                k + 1
            ));
            sum = format!("acc{}", k + 1);
        }
        body.push_str(&format!("    s = select c, v, u0\n    ret s, {sum}\n"));
        let text = format!("func @t(x: f64, y: f64) -> f64x{w}, f64 {{\nentry:\n{body}}}\n");
        check(&text, "t", &[vec![f(1.5), f(-2.0)], vec![f(3.0), f(2.0)], vec![f(f64::NAN), f(0.0)]]);
    }
}

#[test]
fn fused_multiply_add_of_every_vector_width_is_one_rounding_per_lane() {
    for w in [2usize, 4, 8, 16] {
        let text = format!(
            "func @t(a: f64x{w}, b: f64x{w}, c: f64x{w}) -> f64x{w} {{\nentry:\n    y = fma a, b, c\n    ret y\n}}\n"
        );
        let lanes = |k: usize| (0..w).map(|j| EDGE_F64[(j * 7 + k) % EDGE_F64.len()]).collect::<Vec<_>>();
        let mut cases: Vec<_> = (0..8)
            .map(|k| vec![ArgValue::Vector(lanes(k)), ArgValue::Vector(lanes(k + 2)), ArgValue::Vector(lanes(k + 5))])
            .collect();
        // 0.1 · 10 − 1 is 5.55e-17 fused and 0 unfused: every lane must be the fused one.
        cases.push(vec![
            ArgValue::Vector(vec![0.1; w]),
            ArgValue::Vector(vec![10.0; w]),
            ArgValue::Vector(vec![-1.0; w]),
        ]);
        let m = jitdiff_ir::parse_module(&text).unwrap();
        let out = jitdiff_ir::Interpreter::new(&m).call("t", &mut cases[8].clone()).unwrap();
        assert_eq!(out, vec![jitdiff_ir::RuntimeValue::Vector(vec![0.1f64.mul_add(10.0, -1.0); w])]);
        // The compiled function computes what the interpreter does, bit for bit.
        check(&text, "t", &cases);
        assert_ne!(0.1f64.mul_add(10.0, -1.0), 0.1 * 10.0 - 1.0);
    }
}

#[test]
fn iszero_tests_every_lane_of_every_width() {
    check(
        "func @t(x: f64) -> bool {\nentry:\n    z = iszero x\n    ret z\n}\n",
        "t",
        &[vec![f(0.0)], vec![f(-0.0)], vec![f(1e-300)], vec![f(f64::NAN)], vec![f(f64::NEG_INFINITY)]],
    );
    for w in [2usize, 4, 8, 16] {
        let text = format!("func @t(v: f64x{w}) -> bool {{\nentry:\n    z = iszero v\n    ret z\n}}\n");
        // All zeros (of both signs), then one lane at a time not zero.
        let mut cases = vec![vec![ArgValue::Vector((0..w).map(|j| if j % 2 == 0 { 0.0 } else { -0.0 }).collect())]];
        for lane in 0..w {
            for odd in [5e-324, f64::NAN] {
                cases.push(vec![ArgValue::Vector((0..w).map(|j| if j == lane { odd } else { 0.0 }).collect())]);
            }
        }
        check(&text, "t", &cases);
    }
}

#[test]
fn strong_zero_multiply_is_zero_in_exactly_the_lanes_with_a_zero_operand() {
    // Every pairing of an infinite, NaN, zero or finite first operand with a zero (of either
    // sign), infinite, NaN or finite second one, in every lane position of every width.
    let firsts = [f64::INFINITY, f64::NEG_INFINITY, f64::NAN, 2.5, -0.0, 0.0];
    let seconds = [0.0, -0.0, 1.5, -2.0, f64::NAN, f64::INFINITY];
    let want = |a: f64, b: f64| if a == 0.0 || b == 0.0 { 0.0 } else { a * b };
    for w in [2usize, 4, 8, 16] {
        let text =
            format!("func @t(a: f64x{w}, b: f64x{w}) -> f64x{w} {{\nentry:\n    y = fmulsz a, b\n    ret y\n}}\n");
        let module = parse_module(&text).unwrap();
        let compiled = compile(&module, &ExternRegistry::new(), &JitOptions::new()).unwrap();
        let native = compiled.function("t").unwrap();
        for k in 0..firsts.len() * seconds.len() {
            let a: Vec<f64> = (0..w).map(|j| firsts[(k + j) % firsts.len()]).collect();
            let b: Vec<f64> = (0..w).map(|j| seconds[(k / firsts.len() + 2 * j) % seconds.len()]).collect();
            let out = native.call(&mut [Arg::Vector(&a), Arg::Vector(&b)]).unwrap();
            let RuntimeValue::Vector(y) = &out[0] else { panic!("fmulsz returned {out:?}") };
            for j in 0..w {
                let expected = want(a[j], b[j]);
                assert_eq!(y[j].to_bits(), expected.to_bits(), "f64x{w} lane {j}: fmulsz {} {}", a[j], b[j]);
            }
            check(&text, "t", &[vec![ArgValue::Vector(a), ArgValue::Vector(b)]]);
        }
    }
    // The scalar form: `fmulsz inf, 0` and `fmulsz 0, inf` are +0 where `fmul` is NaN.
    let text =
        "func @t(a: f64, b: f64) -> f64, f64 {\nentry:\n    y = fmulsz a, b\n    z = fmul a, b\n    ret y, z\n}\n";
    let module = parse_module(text).unwrap();
    let compiled = compile(&module, &ExternRegistry::new(), &JitOptions::new()).unwrap();
    for (a, b) in [(f64::INFINITY, -0.0), (-0.0, f64::NEG_INFINITY), (0.0, f64::NAN)] {
        let out = compiled.function("t").unwrap().call(&mut [Arg::F64(a), Arg::F64(b)]).unwrap();
        assert_eq!(out[0].as_f64().map(f64::to_bits), Some(0.0f64.to_bits()), "fmulsz {a}, {b}");
        assert!(out[1].as_f64().is_some_and(f64::is_nan));
    }
    let out = compiled.function("t").unwrap().call(&mut [Arg::F64(-3.0), Arg::F64(0.5)]).unwrap();
    assert_eq!(out[0].as_f64(), Some(-1.5));
}

#[test]
fn powi_with_constant_and_variable_exponents() {
    let xs = [0.0, -0.0, 1.5, -2.25, 1e-200, 1e200, f64::INFINITY, f64::NAN, 0.9999999];
    for n in -6..=6 {
        // A constant exponent (inline for |n| <= 4) must match the library call bit for bit.
        let text = format!("func @t(x: f64) -> f64 {{\nentry:\n    n = iconst {n}\n    y = powi x, n\n    ret y\n}}\n");
        check(&text, "t", &xs.iter().map(|&x| vec![f(x)]).collect::<Vec<_>>());
    }
    let text = "func @t(x: f64, n: i64) -> f64 {\nentry:\n    y = powi x, n\n    ret y\n}\n";
    let cases: Vec<_> = xs.iter().flat_map(|&x| EDGE_I64.iter().map(move |&n| vec![f(x), i(n)])).collect();
    check(text, "t", &cases);
}

/// Bit operations, shift amounts of every size (taken modulo 64) included: JIT and interpreter
/// agree on every pair of edge values.
#[test]
fn integer_bit_operations() {
    let text = "func @t(a: i64, b: i64) -> i64, i64, i64, i64, i64, i64 {
entry:
    x = iand a, b
    o = ior a, b
    e = ixor a, b
    l = ishl a, b
    r = ishr a, b
    u = ushr a, b
    ret x, o, e, l, r, u
}
";
    let mut values = EDGE_I64.to_vec();
    values.extend([13, 63, 64, 65, 127, -64]);
    let cases: Vec<_> = values.iter().flat_map(|&a| values.iter().map(move |&b| vec![i(a), i(b)])).collect();
    assert_eq!(check(text, "t", &cases), 0);
    let m = parse_module(text).unwrap();
    let out = compile(&m, &ExternRegistry::new(), &JitOptions::new())
        .unwrap()
        .function("t")
        .unwrap()
        .call(&mut [Arg::I64(-8), Arg::I64(65)])
        .unwrap();
    let ints: Vec<RuntimeValue> =
        [-8 & 65, -8 | 65, -8 ^ 65, -16, -4, ((-8i64 as u64) >> 1) as i64].into_iter().map(RuntimeValue::I64).collect();
    assert_eq!(out, ints);
}

#[test]
fn integer_arithmetic_wraps_and_division_by_zero_fails_at_its_site() {
    let text = "func @t(a: i64, b: i64) -> i64, i64, i64, i64, i64, i64 {
entry:
    s = iadd a, b
    d = isub a, b
    p = imul a, b
    n = ineg a
    q = idiv a, b
    r = irem a, b
    ret s, d, p, n, q, r
}
";
    let cases: Vec<_> = EDGE_I64.iter().flat_map(|&a| EDGE_I64.iter().map(move |&b| vec![i(a), i(b)])).collect();
    let failures = check(text, "t", &cases);
    assert_eq!(failures, EDGE_I64.len(), "every b = 0 case must fail, and only those");
    // irem's own site: inst 1 of a block after a label
    let text = "func @t(a: i64, b: i64) -> i64 {\nentry:\n    jump next\nnext:\n    z = iconst 0\n    r = irem a, z\n    ret r\n}\n";
    assert_eq!(check(text, "t", &[vec![i(5), i(1)]]), 1);
}

/// `trap` fails at its own site wherever it is reached — in a loop, after a store (which has
/// happened), in a callee — and is never hoisted out of the branch that guards it.
#[test]
fn trap_fails_at_its_site_only_where_it_runs() {
    let text = "func @t(n: i64, limit: i64, out: mslice) -> i64 {
entry:
    zero = iconst 0
    one = iconst 1
    jump head(zero)
head(i: i64):
    more = icmp lt i, n
    br more, body, done
body:
    x = itof i
    store out, zero, x
    over = icmp ge i, limit
    br over, fail, next
fail:
    trap
    jump next
next:
    i2 = iadd i, one
    jump head(i2)
done:
    v = call @g(n)
    ret v
}
func @g(n: i64) -> i64 {
entry:
    ten = iconst 10
    big = icmp gt n, ten
    br big, fail, ok
fail:
    trap
    ret n
ok:
    ret n
}
";
    let out = || ArgValue::SliceMut(vec![0.0]);
    let cases = vec![
        vec![i(3), i(5), out()],   // returns 3
        vec![i(7), i(5), out()],   // traps at i = 5, after storing 5.0
        vec![i(0), i(0), out()],   // never enters the loop: returns 0
        vec![i(11), i(20), out()], // traps in @g
    ];
    assert_eq!(check(text, "t", &cases), 2);
    let module = parse_module(text).unwrap();
    let compiled = compile(&module, &ExternRegistry::new(), &JitOptions::new()).unwrap();
    let mut written = [0.0];
    let err =
        compiled.function("t").unwrap().call(&mut [Arg::I64(7), Arg::I64(5), Arg::SliceMut(&mut written)]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "explicit panic (`panic!`, `unreachable!` or a failed `assert!`) at @t, block fail, inst 0"
    );
    assert_eq!(written, [5.0]);
}

#[test]
fn comparisons_booleans_select_and_conversions() {
    let mut body = String::new();
    let mut rets = vec![];
    for cc in ["eq", "ne", "lt", "le", "gt", "ge"] {
        body.push_str(&format!("    f{cc} = fcmp {cc} a, b\n    i{cc} = icmp {cc} m, n\n"));
        rets.push(format!("f{cc}"));
        rets.push(format!("i{cc}"));
    }
    body.push_str("    both = and flt, ilt\n    either = or fge, ine\n    neither = not either\n");
    body.push_str(
        "    pick = select both, a, b\n    ipick = select either, m, n\n    bpick = select neither, both, either\n",
    );
    body.push_str("    fi = ftoi a\n    if = itof m\n");
    rets.extend(["both", "either", "neither", "pick", "ipick", "bpick", "fi", "if"].map(String::from));
    let types: Vec<&str> = rets
        .iter()
        .map(|r| match r.as_str() {
            "pick" | "if" => "f64",
            "ipick" | "fi" => "i64",
            _ => "bool",
        })
        .collect();
    let text = format!(
        "func @t(a: f64, b: f64, m: i64, n: i64) -> {} {{\nentry:\n{body}    ret {}\n}}\n",
        types.join(", "),
        rets.join(", ")
    );
    let mut cases = vec![];
    for (k, &a) in EDGE_F64.iter().enumerate() {
        for &b in &EDGE_F64[..6] {
            cases.push(vec![f(a), f(b), i(EDGE_I64[k % 9]), i(EDGE_I64[(k + 4) % 9])]);
        }
    }
    check(&text, "t", &cases);
}

/// `br c, B(x..), B(y..)` into one block is lowered as selects of the arguments (a running
/// minimum becomes `minsd`): every compare, both operand orders, arguments shared by the two
/// sides, integer, boolean and vector arguments, at edge values (NaN, ±0, infinities).
#[test]
fn branches_into_one_block_pick_arguments_like_the_interpreter() {
    let (mut blocks, mut rets, mut types) = (String::new(), vec![], vec![]);
    for cc in ["eq", "ne", "lt", "le", "gt", "ge"] {
        for (first, second) in [("a", "b"), ("b", "a"), ("a", "a"), ("b", "m_f")] {
            // With and without a vector argument (which keeps the branch).
            for vectors in [false, true] {
                let n = rets.len();
                let (vt, ve, vp) = if vectors { (", va", ", vb", ", w{n}: f64x4") } else { ("", "", "") };
                let vp = vp.replace("{n}", &n.to_string());
                blocks.push_str(&format!(
                    "    c{n} = fcmp {cc} a, b\n    br c{n}, j{n}({first}, m, c{n}{vt}), j{n}({second}, m, t{ve})\n\
                     j{n}(r{n}: f64, s{n}: i64, q{n}: bool{vp}):\n"
                ));
                rets.push(if vectors { format!("r{n}, s{n}, q{n}, w{n}") } else { format!("r{n}, s{n}, q{n}") });
                types.push(if vectors { "f64, i64, bool, f64x4" } else { "f64, i64, bool" });
            }
        }
    }
    let types = types.join(", ");
    let text = format!(
        "func @t(a: f64, b: f64, m: i64) -> {types} {{\nentry:\n    t = fcmp eq a, a\n    m_f = itof m\n    \
         va = splat.f64x4 a\n    vb = splat.f64x4 b\n{blocks}    ret {}\n}}\n",
        rets.join(", ")
    );
    let mut cases = vec![];
    for (k, &a) in EDGE_F64.iter().enumerate() {
        for &b in &EDGE_F64 {
            cases.push(vec![f(a), f(b), i(EDGE_I64[k % 9])]);
        }
    }
    check(&text, "t", &cases);
    // A running minimum over a slice, the loop shape `if v < best { best = v }` lowers to.
    let text = "func @m(x: slice) -> f64 {\nentry:\n    zero = iconst 0\n    one = iconst 1\n    n = len x\n    \
         inf = fconst inf\n    jump h(zero, inf)\nh(i: i64, best: f64):\n    c = icmp lt i, n\n    \
         br c, b, done\nb:\n    v = load x, i\n    less = fcmp lt v, best\n    br less, h1(v), h1(best)\n\
         h1(next: f64):\n    i1 = iadd i, one\n    jump h(i1, next)\ndone:\n    ret best\n}\n";
    let slices = [vec![3.0, -0.0, 0.0, f64::NAN, -7.5, 2.0], vec![f64::NAN, 1.0], vec![0.0, -0.0], vec![]];
    check(text, "m", &slices.map(|x| vec![ArgValue::Slice(x)]));
}

#[test]
fn slice_memory_is_bounds_checked_with_the_interpreters_index_and_length() {
    let text = "func @t(x: slice, y: mslice, k: i64) -> f64, i64 {
entry:
    n = len x
    v = load x, k
    w = fmul v, v
    store y, k, w
    ret w, n
}
";
    let data = vec![1.5, -2.0, 3.25];
    let mut cases = vec![];
    for k in [-1, 0, 2, 3, 4, i64::MIN, i64::MAX] {
        cases.push(vec![ArgValue::Slice(data.clone()), ArgValue::SliceMut(vec![0.0; 4]), i(k)]);
        cases.push(vec![ArgValue::SliceMut(data.clone()), ArgValue::SliceMut(vec![0.0; 2]), i(k)]);
    }
    cases.push(vec![ArgValue::Slice(vec![]), ArgValue::SliceMut(vec![]), i(0)]);
    assert!(check(text, "t", &cases) >= 10);
    for w in [2usize, 4, 8, 16] {
        let text = format!(
            "func @t(x: slice, y: mslice, k: i64) -> f64x{w} {{\nentry:\n    v = vload.f64x{w} x, k\n    u = fadd v, v\n    vstore y, k, u\n    ret u\n}}\n"
        );
        let data: Vec<f64> = (0..2 * w + 1).map(|j| j as f64 * 0.75 - 3.0).collect();
        let mut cases = vec![];
        for k in [-1, 0, 1, 2, 3, i64::MAX / 4, i64::MIN] {
            cases.push(vec![ArgValue::Slice(data.clone()), ArgValue::SliceMut(vec![9.0; 2 * w + 1]), i(k)]);
            cases.push(vec![ArgValue::Slice(data.clone()), ArgValue::SliceMut(vec![9.0; w]), i(k)]);
        }
        assert!(check(&text, "t", &cases) >= 10, "f64x{w}");
    }
}

#[test]
fn loops_block_parameters_of_every_type_and_multiple_returns() {
    let text = "func @t(x: slice, v: f64x4, flag: bool) -> f64, f64x4, bool, i64 {
entry:
    zero = iconst 0
    one = iconst 1
    acc0 = fconst 0.0
    jump head(zero, acc0, v, flag)
head(i: i64, acc: f64, w: f64x4, b: bool):
    n = len x
    more = icmp lt i, n
    br more, body, exit(acc, w, b, i)
body:
    xi = load x, i
    acc2 = fadd acc, xi
    s = splat.f64x4 xi
    w2 = fmul w, s
    nb = not b
    i2 = iadd i, one
    big = fcmp gt xi, acc
    br big, head(i2, acc2, w2, nb), head(i2, acc, w, b)
exit(r: f64, rw: f64x4, rb: bool, ri: i64):
    ret r, rw, rb, ri
}
";
    let cases: Vec<_> = (0..6)
        .map(|n| {
            vec![
                ArgValue::Slice((0..n).map(|j| (j as f64 - 2.0) * 1.25).collect()),
                ArgValue::Vector(vec![1.0, -0.5, 2.0, 0.25]),
                ArgValue::Bool(n % 2 == 0),
            ]
        })
        .collect();
    check(text, "t", &cases);
}

#[test]
fn calls_recursion_depth_and_errors_inside_callees() {
    let text = "func @fib(n: i64) -> i64 {
entry:
    two = iconst 2
    small = icmp lt n, two
    br small, base, rec
base:
    ret n
rec:
    one = iconst 1
    a = isub n, one
    b = isub n, two
    fa = call @fib(a)
    fb = call @fib(b)
    s = iadd fa, fb
    ret s
}

func @down(n: i64) -> i64 {
entry:
    zero = iconst 0
    done = icmp le n, zero
    br done, stop, more
stop:
    ret n
more:
    one = iconst 1
    m = isub n, one
    r = call @down(m)
    ret r
}

func @pair(x: f64, v: f64x2) -> f64x2, f64 {
entry:
    w = fadd v, v
    y = fmul x, x
    ret w, y
}

func @uses_pair(x: f64, s: slice, k: i64) -> f64 {
entry:
    v = splat.f64x2 x
    w, y = call @pair(x, v)
    e = extract w, 1
    z = fadd e, y
    q = call @get(s, k)
    r = fadd z, q
    ret r
}

func @get(s: slice, k: i64) -> f64 {
entry:
    v = load s, k
    ret v
}
";
    check(text, "fib", &(0..15).map(|n| vec![i(n)]).collect::<Vec<_>>());
    // 255 nested calls fit in 256 frames; 256 do not.
    assert_eq!(check(text, "down", &[vec![i(10)], vec![i(254)], vec![i(255)]]), 0);
    assert_eq!(check(text, "down", &[vec![i(256)], vec![i(100_000)]]), 2);
    let s = ArgValue::Slice(vec![4.0, 5.0]);
    assert_eq!(check(text, "uses_pair", &[vec![f(1.5), s.clone(), i(1)], vec![f(2.0), s, i(2)]]), 1);
}

#[test]
fn every_optimisation_level_and_register_allocator_agrees() {
    use jitdiff_jit::{OptLevel, RegAlloc};
    let text = "func @t(x: slice, n: i64) -> f64, i64 {
entry:
    zero = iconst 0
    one = iconst 1
    c = fconst 0.75
    acc0 = fconst 0.0
    jump head(zero, acc0)
head(i: i64, acc: f64):
    more = icmp lt i, n
    br more, body, exit(acc, i)
body:
    xi = load x, i
    s = fmul xi, c
    t = sin s
    acc2 = fadd acc, t
    i2 = iadd i, one
    jump head(i2, acc2)
exit(r: f64, k: i64):
    ret r, k
}
";
    let module = parse_module(text).unwrap();
    let interp = Interpreter::new(&module);
    let x = ArgValue::Slice((0..7).map(|j| j as f64 * 0.3 - 1.0).collect());
    for opt in [OptLevel::None, OptLevel::Speed] {
        for regalloc in [RegAlloc::Auto, RegAlloc::Backtracking, RegAlloc::SinglePass] {
            let options = JitOptions::new().opt_level(opt).regalloc(regalloc);
            let compiled = compile(&module, &ExternRegistry::new(), &options).unwrap();
            for n in [0, 3, 7, 8] {
                let got = differential_call(&compiled, &interp, "t", &[x.clone(), i(n)]);
                let want = if n == 8 { Agreement::Failed("OutOfBounds") } else { got.clone().unwrap() };
                assert_eq!(got, Ok(want), "{opt:?} {regalloc:?} n={n}");
            }
        }
    }
}

#[test]
fn unreachable_blocks_are_dropped() {
    // Dead blocks may use values defined in other dead blocks (dominance is vacuous there).
    let text = "func @t(x: f64) -> f64 {
entry:
    ret x
dead(p: f64x4, k: i64):
    y = fadd x, z
    jump more(p, y)
more(q: f64x4, z: f64):
    zero = iconst 0
    w = idiv k, zero
    jump dead(q, w)
}
";
    check(text, "t", &[vec![f(2.5)], vec![f(f64::NAN)]]);
}

#[test]
fn alloc_gives_zeroed_per_call_arrays_and_fails_on_negative_lengths() {
    // @outer calls @inner k times: each call's array starts at zeros, whatever the previous call
    // left; the lengths span empty, small, a multi-chunk size (the first chunk holds 4096) and
    // negative ones (an error, with the length, in both executors).
    let text = "func @outer(n: i64, k: i64, x: f64) -> f64 {
entry:
    zero = iconst 0
    one = iconst 1
    fzero = fconst 0.0
    mine = alloc n
    jump head(zero, fzero)
head(i: i64, s: f64):
    more = icmp lt i, k
    br more, body, done(s)
body:
    part = call @inner(n, x)
    s_next = fadd s, part
    i_next = iadd i, one
    jump head(i_next, s_next)
done(t: f64):
    size = len mine
    size_f = itof size
    out = fadd t, size_f
    ret out
}
func @inner(n: i64, x: f64) -> f64 {
entry:
    zero = iconst 0
    one = iconst 1
    fzero = fconst 0.0
    arr = alloc n
    jump head(zero, fzero)
head(i: i64, s: f64):
    more = icmp lt i, n
    br more, body, done(s)
body:
    old = load arr, i
    new = fadd old, x
    store arr, i, new
    s_next = fadd s, new
    i_next = iadd i, one
    jump head(i_next, s_next)
done(t: f64):
    ret t
}
";
    let mut cases = vec![];
    for n in [-5, -1, 0, 1, 3, 5000, 20_000] {
        for k in [0, 1, 4] {
            cases.push(vec![i(n), i(k), f(0.5)]);
        }
    }
    // Both negative lengths fail, for each k, identically in both executors.
    assert_eq!(check(text, "outer", &cases), 6);
}

#[test]
fn tables_are_read_only_data_with_bounds_checked_reads() {
    // Reads at variable and constant indices (in and out of bounds), `len`, vector loads, a table
    // defined in a branch, passed to a callee and to an extern closure, an empty table, and NaN
    // bit patterns that must come back exactly.
    let text = "extern @sum(slice) -> f64

const @y = [0.14, 0.18, 0.22, 0.25, 0.29, 0.32, 0.35, 0.39, 0.37, 0.58, 0.73, 0.96, 1.34, 2.1, 4.39]

const @empty = []

const @odd = [-0.0, NaN, 0x7ff0000000000001, -inf, 5e-324]

func @t(k: i64, c: bool) -> f64, i64, f64, f64 {
entry:
    t = table @y
    x = load t, k
    n = len t
    two = iconst 2
    fixed = load t, two
    u = fadd x, fixed
    v = vload.f64x4 t, k
    w = extract v, 3
    s = call @total(t)
    e = call @sum(t)
    r = fadd s, e
    br c, other, done(u, n)
other:
    o = table @odd
    z = load o, k
    m = table @empty
    mn = len m
    jump done(z, mn)
done(a: f64, b: i64):
    ret a, b, w, r
}

func @total(s: slice) -> f64 {
entry:
    n = len s
    zero = iconst 0
    one = iconst 1
    acc0 = fconst 0.0
    jump head(zero, acc0)
head(i: i64, acc: f64):
    more = icmp lt i, n
    br more, body, exit
body:
    x = load s, i
    acc2 = fadd acc, x
    i2 = iadd i, one
    jump head(i2, acc2)
exit:
    ret acc
}
";
    let mut externs = ExternRegistry::new();
    externs.register_closure("sum", vec![Type::Slice], vec![Type::F64], |args: &mut [ExternArg<'_>]| {
        Ok(vec![RuntimeValue::F64(args[0].as_slice().map_or(f64::NAN, |s| s.iter().rev().sum()))])
    });
    let mut cases = vec![];
    for k in [-1, 0, 1, 2, 3, 4, 5, 14, 15, i64::MAX, i64::MIN] {
        for c in [false, true] {
            cases.push(vec![i(k), ArgValue::Bool(c)]);
        }
    }
    let failed = check_with(text, "t", &cases, &externs);
    assert!(failed >= 10, "{failed}");
    let module = parse_module(text).unwrap();
    let compiled = compile(&module, &externs, &JitOptions::new()).unwrap();
    let out = compiled.function("t").unwrap().call(&mut [Arg::I64(1), Arg::Bool(true)]).unwrap();
    assert_eq!(out[0].as_f64().map(f64::to_bits), Some(f64::NAN.to_bits()));
    assert_eq!(out[1], RuntimeValue::I64(0));
    let out = compiled.function("t").unwrap().call(&mut [Arg::I64(2), Arg::Bool(true)]).unwrap();
    assert_eq!(out[0].as_f64().map(f64::to_bits), Some(0x7ff0_0000_0000_0001));
}

#[test]
fn every_opcode_is_covered_by_these_tests() {
    // Guard: a new opcode added to the table must get a lowering and a test here.
    let covered = [
        "fconst", "iconst", "bconst", "fadd", "fsub", "fmul", "fdiv", "fneg", "powi", "iadd", "isub", "imul", "idiv",
        "irem", "ineg", "iand", "ior", "ixor", "ishl", "ishr", "ushr", "and", "or", "not", "fcmp", "icmp", "select",
        "itof", "ftoi", "len", "load", "store", "vload", "vstore", "splat", "extract", "insert", "call", "alloc",
        "table", "iszero", "trap",
        // Covered by jit/tests/jit/tape.rs and jit/tests/memory/tape.rs (they need tapes shared across calls).
        "tpush", "tpop", "tsplit", "trejoin",
    ];
    for op in Opcode::all() {
        let float_math =
            matches!(op.shape(), Shape::FloatUnary { .. } | Shape::FloatBinary { .. } | Shape::FloatTernary);
        assert!(float_math || covered.contains(&op.spelling()), "{op} is not covered");
    }
}
