//! IR passes: what each removes or rewrites, and that the result behaves exactly like the input.

use jitdiff_ir::{
    ArgValue, InterpError, Interpreter, Module, RuntimeValue, math, parse_module, passes, print_module, verify_module,
};

fn module(src: &str) -> Module {
    let m = parse_module(src).unwrap_or_else(|e| panic!("parse error {e:?} in\n{src}"));
    verify_module(&m).unwrap_or_else(|e| panic!("verify error {e:?} in\n{src}"));
    m
}

/// What a call observably does: its results or its error kind, and the final memory of its
/// slice arguments (as bits, so NaN compares equal to itself).
fn observe(m: &Module, func: &str, args: &[ArgValue]) -> (Result<Vec<RuntimeValue>, &'static str>, Vec<Vec<u64>>) {
    let mut args = args.to_vec();
    let r =
        Interpreter::new(m).with_step_limit(1_000_000).call(func, &mut args).map_err(|e| InterpError::kind_name(&e));
    let memory = args.iter().filter_map(|a| a.as_slice()).map(|s| s.iter().map(|x| x.to_bits()).collect()).collect();
    (r, memory)
}

/// Negation folding is exact but for the sign bit of a NaN (`a + -NaN` is `-NaN`, `a - NaN` is
/// `NaN`); every other pass is bit-exact, NaNs included.
/// Sinking may move a failing load past another error (see `passes::sink`): where the source
/// fails, the sunk function must fail too, but possibly with the other error first.
fn errors_may_reorder(pass: &str) -> bool {
    pass == "sink"
}

fn nan_sign_may_change(pass: &str) -> bool {
    matches!(pass, "negate" | "optimize")
}

/// An observation with the sign bit of every NaN cleared.
fn without_nan_signs<E>(
    (result, memory): (Result<Vec<RuntimeValue>, E>, Vec<Vec<u64>>),
) -> (Result<Vec<RuntimeValue>, E>, Vec<Vec<u64>>) {
    let clear = |x: f64| if x.is_nan() { f64::from_bits(x.to_bits() & !(1 << 63)) } else { x };
    let result = result.map(|values| {
        values
            .into_iter()
            .map(|v| match v {
                RuntimeValue::F64(x) => RuntimeValue::F64(clear(x)),
                RuntimeValue::Vector(lanes) => RuntimeValue::Vector(lanes.into_iter().map(clear).collect()),
                other => other,
            })
            .collect()
    });
    let memory =
        memory.into_iter().map(|s| s.into_iter().map(|b| clear(f64::from_bits(b)).to_bits()).collect()).collect();
    (result, memory)
}

/// Run `pass` on a copy of `m`; check the result is verified, canonical (prints and parses back
/// to itself) and behaves like `m` on every input.
fn check_pass(m: &Module, pass: &str, func: &str, inputs: &[Vec<ArgValue>]) -> Module {
    let mut out = m.clone();
    passes::run_pass(pass, &mut out).unwrap();
    let text = print_module(&out);
    verify_module(&out).unwrap_or_else(|e| panic!("{pass} broke the module: {e:?}\n{text}"));
    assert_eq!(parse_module(&text).unwrap(), out, "{pass} left a non-canonical module:\n{text}");
    for args in inputs {
        let (before, after) = (observe(m, func, args), observe(&out, func, args));
        if errors_may_reorder(pass) && before.0.is_err() {
            assert!(after.0.is_err(), "{pass} lost an error on {args:?}\n{text}");
        } else if nan_sign_may_change(pass) {
            assert_eq!(
                without_nan_signs(before),
                without_nan_signs(after),
                "{pass} changed behaviour on {args:?}\n{text}"
            );
        } else {
            assert_eq!(before, after, "{pass} changed behaviour on {args:?}\n{text}");
        }
    }
    out
}

const ALL_PASSES: [&str; 13] = [
    "dce",
    "fold",
    "reciprocal",
    "cse",
    "loads",
    "negate",
    "params",
    "reassociate",
    "licm",
    "sink",
    "counters",
    "inline",
    "optimize",
];

fn count(m: &Module, needle: &str) -> usize {
    print_module(m).matches(needle).count()
}

const EFFECTS: &str = "func @helper(x: f64) -> f64 {
entry:
    ret x
}

func @f(s: mslice, i: i64, d: i64, x: f64) -> f64 {
entry:
    dead_sin = sin x
    dead_chain = fadd dead_sin, x
    dead_len = len s
    dead_cmp = icmp lt i, d
    kept_load = load s, i
    kept_div = idiv i, d
    kept_call = call @helper(x)
    store s, i, x
    ret x
}
";

#[test]
fn dce_removes_pure_dead_code_and_keeps_effects_and_failures() {
    let m = module(EFFECTS);
    let inputs = vec![
        vec![ArgValue::SliceMut(vec![0.0; 3]), ArgValue::I64(1), ArgValue::I64(2), ArgValue::F64(0.5)],
        vec![ArgValue::SliceMut(vec![0.0; 3]), ArgValue::I64(5), ArgValue::I64(2), ArgValue::F64(0.5)],
        vec![ArgValue::SliceMut(vec![0.0; 3]), ArgValue::I64(1), ArgValue::I64(0), ArgValue::F64(0.5)],
    ];
    let out = check_pass(&m, "dce", "f", &inputs);
    for gone in ["sin", "dead_chain", "len", "icmp"] {
        assert_eq!(count(&out, gone), 0, "{gone} should be removed:\n{out}");
    }
    for kept in ["load s, i", "idiv i, d", "call @helper", "store s, i, x"] {
        assert_eq!(count(&out, kept), 1, "{kept} must stay:\n{out}");
    }
    // The failing instructions still fail after DCE.
    assert_eq!(observe(&out, "f", &inputs[1]).0, Err("OutOfBounds"));
    assert_eq!(observe(&out, "f", &inputs[2]).0, Err("DivisionByZero"));
}

const LOOP_WITH_DEAD_PARAM: &str = "func @sum(x: slice) -> f64 {
entry:
    n = len x
    zero = iconst 0
    acc0 = fconst 0.0
    junk0 = fconst 1.0
    jump head(zero, acc0, junk0)
head(i: i64, acc: f64, junk: f64):
    more = icmp lt i, n
    br more, body, exit(acc)
body:
    xi = load x, i
    one = iconst 1
    inext = iadd i, one
    acc2 = fadd acc, xi
    junk2 = fmul junk, xi
    jump head(inext, acc2, junk2)
never:
    y = fconst 3.0
    jump exit(y)
exit(r: f64):
    ret r
}
";

#[test]
fn dce_removes_unreachable_blocks_and_self_feeding_loop_params() {
    let m = module(LOOP_WITH_DEAD_PARAM);
    let inputs: Vec<Vec<ArgValue>> =
        [vec![], vec![1.0], vec![1.5, -2.0, 4.25]].into_iter().map(|x| vec![ArgValue::Slice(x)]).collect();
    let out = check_pass(&m, "dce", "sum", &inputs);
    let text = print_module(&out);
    assert!(!text.contains("never") && !text.contains("junk"), "dead block and loop parameter stay:\n{text}");
    assert!(text.contains("head(i: i64, acc: f64):"), "{text}");
    assert_eq!(out.functions[0].blocks.len(), 4);
}

#[test]
fn fold_evaluates_constants_with_interpreter_semantics() {
    let m = module(
        "func @f(x: f64) -> f64, i64, f64, bool, f64 {
entry:
    inf = fconst inf
    nzero = fconst -0.0
    sign_nan = fmul inf, nzero
    a = fconst 2.0
    b = fconst 3.0
    c = fmul a, b
    s = sin c
    n = iconst -7
    two = iconst 2
    q = irem n, two
    nan = fconst NaN
    p = fadd nan, a
    zero = fconst 0.0
    keep = fmul x, zero
    r = fadd s, keep
    t = fcmp ne p, p
    v = splat.f64x2 c
    w = fadd v, v
    e = extract w, 1
    u = fadd r, e
    ret u, q, p, t, sign_nan
}
",
    );
    let inputs: Vec<Vec<ArgValue>> =
        [0.5, -0.0, f64::INFINITY, f64::NAN].into_iter().map(|x| vec![ArgValue::F64(x)]).collect();
    let out = check_pass(&m, "fold", "f", &inputs);
    let text = print_module(&out);
    assert!(text.contains(&format!("s = fconst {:?}", math::sin(6.0))), "{text}");
    assert!(
        text.contains("q = iconst -1") && text.contains("t = bconst true") && text.contains("e = fconst 12.0"),
        "{text}"
    );
    // No algebra: x * 0.0 depends on x (NaN, -0.0, inf), so it stays.
    assert!(text.contains("keep = fmul x, zero"), "{text}");
    let folded = observe(&out, "f", &[ArgValue::F64(0.5)]).0.unwrap();
    assert_eq!(folded[2].as_f64().unwrap().to_bits(), (f64::NAN + 2.0).to_bits());
    // A NaN whose sign or payload the text format cannot spell is left unfolded, so the module
    // still prints and parses back to itself (checked by check_pass).
    assert!(
        text.contains("sign_nan = fmul inf, nzero") || (f64::INFINITY * -0.0).to_bits() == f64::NAN.to_bits(),
        "{text}"
    );
}

#[test]
fn fold_keeps_failing_division_and_resolves_constant_control_flow() {
    let m = module(
        "func @f(x: f64, y: f64) -> f64, i64 {
entry:
    one = iconst 1
    zero = iconst 0
    bad = idiv one, zero
    yes = bconst true
    pick = select yes, x, y
    same = select yes, y, y
    br yes, left(pick), right(same)
left(a: f64):
    ret a, bad
right(b: f64):
    ret b, zero
}
",
    );
    let inputs = vec![vec![ArgValue::F64(1.0), ArgValue::F64(2.0)]];
    let out = check_pass(&m, "fold", "f", &inputs);
    let text = print_module(&out);
    assert!(text.contains("idiv one, zero"), "division by zero must not be folded away:\n{text}");
    assert!(!text.contains("select") && !text.contains("br "), "{text}");
    assert!(text.contains("jump left(x)"), "{text}");
    assert_eq!(observe(&out, "f", &inputs[0]).0, Err("DivisionByZero"));
    // After DCE the untaken block is gone.
    let mut cleaned = out.clone();
    passes::run_pass("dce", &mut cleaned).unwrap();
    assert!(!print_module(&cleaned).contains("right"));
}

#[test]
fn fold_adds_negative_zero_exactly_and_leaves_positive_zero() {
    // x + -0.0 is x for every x, the sign of a zero included; x + 0.0 turns -0.0 into +0.0.
    let m = module(
        "func @f(x: f64) -> f64, f64, f64 {
entry:
    minus_zero = fconst -0.0
    plus_zero = fconst 0.0
    a = fadd x, minus_zero
    b = fadd minus_zero, x
    c = fadd x, plus_zero
    ret a, b, c
}
",
    );
    let inputs: Vec<Vec<ArgValue>> = [-0.0, 0.0, 1.5, -2.0, f64::INFINITY, f64::NEG_INFINITY, f64::NAN]
        .iter()
        .map(|&x| vec![ArgValue::F64(x)])
        .collect();
    let out = check_pass(&m, "fold", "f", &inputs);
    let text = print_module(&out);
    assert_eq!(count(&out, "fadd"), 1, "only the +0.0 addition stays:\n{text}");
    assert!(text.contains("ret x, x, c"), "{text}");
    let zero = observe(&out, "f", &inputs[0]).0.unwrap();
    assert_eq!(zero[0].as_f64().unwrap().to_bits(), (-0.0f64).to_bits());
    assert_eq!(zero[2].as_f64().unwrap().to_bits(), 0.0f64.to_bits());
}

#[test]
fn cse_merges_dominated_duplicates_only() {
    let m = module(
        "func @f(s: mslice, x: f64, c: bool, d: i64) -> f64 {
entry:
    a1 = sin x
    a2 = sin x
    k1 = fconst 2.0
    k2 = fconst 2.0
    zero = iconst 0
    l1 = load s, zero
    store s, zero, x
    l2 = load s, zero
    q1 = idiv d, d
    q2 = idiv d, d
    t = fadd a1, a2
    u = fadd t, l1
    w = fadd u, l2
    br c, left, right
left:
    b1 = cos x
    a3 = sin x
    l = fadd b1, a3
    jump join(l)
right:
    b2 = cos x
    r = fmul b2, k2
    jump join(r)
join(v: f64):
    b3 = cos x
    y = fadd v, w
    z = fadd y, b3
    ret z
}
",
    );
    let inputs: Vec<Vec<ArgValue>> = [(true, 0.3), (false, -1.2)]
        .into_iter()
        .map(|(c, x)| vec![ArgValue::SliceMut(vec![5.0]), ArgValue::F64(x), ArgValue::Bool(c), ArgValue::I64(3)])
        .collect();
    let out = check_pass(&m, "cse", "f", &inputs);
    assert_eq!(count(&out, "= sin x"), 1, "sin merged in entry and into `left`:\n{out}");
    assert_eq!(count(&out, "fconst 2.0"), 1, "{out}");
    assert_eq!(count(&out, "= cos x"), 3, "cos in sibling blocks and the join are not dominated:\n{out}");
    assert_eq!(count(&out, "= load s, zero"), 2, "loads are never merged:\n{out}");
    assert_eq!(count(&out, "= idiv d, d"), 2, "failing instructions are never merged:\n{out}");
}

/// Counters in lockstep with an index: tested for equality (`down`, `ne_test`), used after the
/// loop (`up`, also on a branch leaving the loop), with two latches, stepping against the index
/// (`opposite`), or kept because they are
/// compared by order or used in the loop (`ordered`).
const COUNTERS: &str = "func @down(s: slice, n: i64, start: i64) -> f64, i64 {
entry:
    zero = iconst 0
    one = iconst 1
    acc0 = fconst 0.0
    trips = isub n, start
    jump head(trips, n, acc0)
head(trip: i64, r: i64, acc: f64):
    done = icmp eq trip, zero
    br done, exit, body
body:
    r_prev = isub r, one
    x = load s, r_prev
    acc2 = fadd acc, x
    trip_prev = isub trip, one
    jump head(trip_prev, r_prev, acc2)
exit:
    ret acc, r
}

func @up(s: slice, n: i64, start: i64, flag: bool) -> f64, i64 {
entry:
    one = iconst 1
    three = iconst 3
    acc0 = fconst 0.0
    jump head(start, three, acc0)
head(i: i64, count: i64, acc: f64):
    more = icmp lt i, n
    br more, body, exit
body:
    x = load s, i
    acc2 = fadd acc, x
    i2 = iadd i, one
    count2 = iadd one, count
    br flag, head(i2, count2, acc2), other
other:
    big = fconst 100.0
    acc3 = fadd acc2, big
    jump head(i2, count2, acc3)
exit:
    ret acc, count
}

func @ne_test(n: i64, start: i64) -> i64 {
entry:
    two = iconst 2
    zero = iconst 0
    jump head(zero, start, zero)
head(t: i64, r: i64, sum: i64):
    going = icmp ne n, t
    br going, body, exit
body:
    sum2 = iadd sum, r
    t2 = iadd t, two
    r2 = iadd r, two
    jump head(t2, r2, sum2)
exit:
    ret sum
}

func @opposite(n: i64, start: i64) -> i64, i64 {
entry:
    zero = iconst 0
    one = iconst 1
    jump head(n, start, zero)
head(trip: i64, i: i64, sum: i64):
    done = icmp eq zero, trip
    br done, exit, body
body:
    sum2 = iadd sum, i
    trip2 = isub trip, one
    i2 = iadd i, one
    jump head(trip2, i2, sum2)
exit:
    ret sum, trip
}

func @ordered(s: slice, n: i64) -> f64 {
entry:
    zero = iconst 0
    one = iconst 1
    acc0 = fconst 0.0
    jump head(zero, zero, acc0)
head(i: i64, k: i64, acc: f64):
    more = icmp lt i, n
    br more, body, exit
body:
    x = load s, k
    acc2 = fadd acc, x
    i2 = iadd i, one
    k2 = iadd k, one
    jump head(i2, k2, acc2)
exit:
    ret acc
}
";

#[test]
fn counters_in_lockstep_are_removed_exactly_even_when_they_wrap() {
    let m = module(COUNTERS);
    let data = vec![1.0, 2.0, 4.0, 8.0, 16.0];
    let slice = || ArgValue::Slice(data.clone());
    let (min, max) = (i64::MIN, i64::MAX);
    let mut inputs: Vec<(&str, Vec<ArgValue>)> = vec![];
    for (n, start) in [(5, 0), (5, 2), (3, 3), (2, 4), (5, -1), (0, min), (max, max - 1)] {
        inputs.push(("down", vec![slice(), ArgValue::I64(n), ArgValue::I64(start)]));
    }
    for (n, start, flag) in [(5, 0, true), (5, 1, false), (0, 0, true), (4, 6, true), (2, -3, false)] {
        inputs.push(("up", vec![slice(), ArgValue::I64(n), ArgValue::I64(start), ArgValue::Bool(flag)]));
    }
    // `r` and the sum wrap around; `n` odd never equals the even counter (the step limit ends it).
    for (n, start) in [(0, 0), (6, 1), (10, max - 3), (4, min), (3, 0)] {
        inputs.push(("ne_test", vec![ArgValue::I64(n), ArgValue::I64(start)]));
    }
    for (n, start) in [(0, 5), (4, -2), (3, max - 1), (5, min)] {
        inputs.push(("opposite", vec![ArgValue::I64(n), ArgValue::I64(start)]));
    }
    inputs.push(("ordered", vec![slice(), ArgValue::I64(5)]));
    let mut out = m.clone();
    passes::run_pass("counters", &mut out).unwrap();
    let text = print_module(&out);
    verify_module(&out).unwrap_or_else(|e| panic!("{e:?}\n{text}"));
    for (func, args) in &inputs {
        assert_eq!(observe(&m, func, args), observe(&out, func, args), "@{func} on {args:?}\n{text}");
    }
    for gone in ["trip: i64", "count: i64", "(t: i64"] {
        assert!(!text.contains(gone), "{gone} is removed:\n{text}");
    }
    assert!(text.contains("head(i: i64, k: i64, acc: f64)"), "ordered keeps both:\n{text}");
}

#[test]
fn unused_parameters_go_with_their_arguments_even_when_only_passed_on() {
    // `@mid` passes `s` on to `@leaf`, which ignores it: once `@leaf` drops it, so does `@mid`.
    // `@top` is not a candidate and keeps its signature.
    let m = module(
        "func @top(s: slice, x: f64) -> f64 {
entry:
    y = call @mid(s, x, s)
    ret y
}
func @mid(s: slice, x: f64, t: slice) -> f64 {
entry:
    zero = iconst 0
    a = load t, zero
    y = call @leaf(x, s)
    z = fadd y, a
    ret z
}
func @leaf(x: f64, s: slice) -> f64 {
entry:
    y = fmul x, x
    ret y
}
",
    );
    let mut out = m.clone();
    let (mid, leaf) = (m.func_id("mid").unwrap(), m.func_id("leaf").unwrap());
    let mut kept = passes::remove_unused_params(&mut out, &[mid, leaf]);
    kept.sort_by_key(|(f, _)| f.index());
    assert_eq!(kept, vec![(mid, vec![1, 2]), (leaf, vec![0])]);
    let text = print_module(&out);
    verify_module(&out).unwrap_or_else(|e| panic!("{e:?}\n{text}"));
    assert!(text.contains("func @top(s: slice, x: f64)") && text.contains("call @mid(x, s)"), "{text}");
    let args = vec![ArgValue::Slice(vec![0.5]), ArgValue::F64(3.0)];
    assert_eq!(observe(&m, "top", &args), observe(&out, "top", &args));
}

#[test]
fn optimize_reaches_a_fixpoint_and_preserves_behaviour() {
    let m = module(
        "func @f(x: slice, k: f64) -> f64 {
entry:
    n = len x
    zero = iconst 0
    three = fconst 3.0
    four = fconst 4.0
    scale = fmul three, four
    acc0 = fconst 0.0
    jump head(zero, acc0, scale)
head(i: i64, acc: f64, unused: f64):
    more = icmp lt i, n
    br more, body, exit(acc)
body:
    xi = load x, i
    s1 = fmul xi, scale
    s2 = fmul xi, scale
    t = fadd s1, s2
    kk = fmul k, k
    acc2 = fadd acc, t
    acc3 = fadd acc2, kk
    one = iconst 1
    inext = iadd i, one
    jump head(inext, acc3, s1)
exit(r: f64):
    ret r
}
",
    );
    let inputs: Vec<Vec<ArgValue>> = [vec![], vec![2.0], vec![0.5, -1.0, 3.0, 1e10]]
        .into_iter()
        .map(|x| vec![ArgValue::Slice(x), ArgValue::F64(0.75)])
        .collect();
    for pass in ALL_PASSES {
        check_pass(&m, pass, "f", &inputs);
    }
    let once = check_pass(&m, "optimize", "f", &inputs);
    let text = print_module(&once);
    assert!(text.contains("fconst 12.0") && !text.contains("unused") && !text.contains("s2"), "{text}");
    let mut twice = once.clone();
    passes::optimize(&mut twice);
    assert_eq!(twice, once, "optimize is idempotent");
}

#[test]
fn every_pass_preserves_behaviour_on_sample_programs() {
    let programs: Vec<(&str, &str, Vec<Vec<ArgValue>>)> = vec![
        (
            EFFECTS,
            "f",
            vec![vec![ArgValue::SliceMut(vec![1.0, 2.0]), ArgValue::I64(0), ArgValue::I64(1), ArgValue::F64(3.0)]],
        ),
        (LOOP_WITH_DEAD_PARAM, "sum", vec![vec![ArgValue::Slice(vec![1.0, 2.0, 3.0])], vec![ArgValue::Slice(vec![])]]),
        (
            "func @g(a: i64, b: i64, v: f64x2) -> i64, f64x2 {
entry:
    c = iconst 10
    d = imul c, c
    e = iadd a, d
    f = iadd a, d
    g = isub e, f
    h = irem e, b
    big = iconst -9223372036854775808
    m1 = iconst -1
    w = idiv big, m1
    x = iadd w, h
    y = iadd x, g
    c25 = fconst 2.5
    p = splat.f64x2 c25
    q = fmul v, p
    ret y, q
}
",
            "g",
            vec![
                vec![ArgValue::I64(3), ArgValue::I64(4), ArgValue::Vector(vec![1.0, -2.0])],
                vec![ArgValue::I64(3), ArgValue::I64(0), ArgValue::Vector(vec![0.0, f64::NAN])],
            ],
        ),
    ];
    for (src, func, inputs) in programs {
        let m = module(src);
        for pass in ALL_PASSES {
            check_pass(&m, pass, func, &inputs);
        }
    }
}

#[test]
fn run_pass_rejects_unknown_names() {
    let mut m = module(EFFECTS);
    let err = passes::run_pass("unroll", &mut m).unwrap_err();
    assert_eq!(err.name, "unroll");
    assert!(err.to_string().contains("dce"));
    for name in passes::PASS_NAMES {
        assert!(passes::run_pass(name, &mut m).is_ok());
    }
}

/// Random well-formed programs (run with `--features arbitrary`): every pass keeps the module
/// verified and canonical and does not change what the interpreter observes.
#[cfg(feature = "arbitrary")]
mod random_programs {
    use super::*;
    use jitdiff_ir::arbitrary::{GenConfig, arb_case, standard_extern_registry};
    use proptest::prelude::*;

    fn observe_with_externs(
        m: &Module,
        func: &str,
        args: &[ArgValue],
    ) -> (Result<Vec<RuntimeValue>, String>, Vec<Vec<u64>>) {
        let registry = standard_extern_registry();
        let mut args = args.to_vec();
        let r = Interpreter::new(m).with_externs(&registry).with_step_limit(1_000_000).call(func, &mut args);
        let memory =
            args.iter().filter_map(|a| a.as_slice()).map(|s| s.iter().map(|x| x.to_bits()).collect()).collect();
        (r.map_err(|e| e.kind_name().to_string()), memory)
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]
        #[test]
        fn passes_preserve_behaviour((m, entry, args) in arb_case(GenConfig::full())) {
            let args: Vec<ArgValue> = args.iter().map(|a| a.to_arg_value()).collect();
            let expected = observe_with_externs(&m, &entry, &args);
            for pass in ALL_PASSES {
                let mut out = m.clone();
                passes::run_pass(pass, &mut out).unwrap();
                let text = print_module(&out);
                prop_assert!(verify_module(&out).is_ok(), "{} broke the module:\n{}", pass, text);
                prop_assert_eq!(&parse_module(&text).unwrap(), &out, "{} left a non-canonical module", pass);
                let observed = observe_with_externs(&out, &entry, &args);
                if errors_may_reorder(pass) && expected.0.is_err() {
                    prop_assert!(observed.0.is_err(), "{} lost an error:\n{}", pass, text);
                } else if nan_sign_may_change(pass) {
                    prop_assert_eq!(&without_nan_signs(observed), &without_nan_signs(expected.clone()), "{} changed behaviour:\n{}", pass, text);
                } else {
                    prop_assert_eq!(&observed, &expected, "{} changed behaviour:\n{}", pass, text);
                }
            }
        }
    }
}

/// A counter stepping by `i64::MIN`: its negation is itself (`checked_neg` is None), which
/// must not make a float parameter with no step at all its "lockstep" partner (#25, item 6:
/// the pass rewired the loop test to a float, and derived functions failed to verify).
#[test]
fn a_counter_stepping_by_the_most_negative_integer_has_no_float_partner() {
    let m = module(
        "func @f(x: f64, n: i64) -> f64 {
entry:
    zero = iconst 0
    step = iconst -9223372036854775808
    jump head(zero, x, n)
head(i: i64, acc: f64, j: i64):
    more = icmp ne i, n
    br more, body, exit(acc)
body:
    a2 = fmul acc, x
    i2 = iadd i, step
    j2 = isub j, step
    jump head(i2, a2, j2)
exit(r: f64):
    ret r
}",
    );
    let mut out = m.clone();
    passes::run_pass("counters", &mut out).unwrap();
    let text = print_module(&out);
    verify_module(&out).unwrap_or_else(|e| panic!("{e:?}\n{text}"));
    for n in [0, i64::MIN, 5] {
        let args = vec![ArgValue::F64(1.5), ArgValue::I64(n)];
        assert_eq!(observe(&m, "f", &args), observe(&out, "f", &args), "n = {n}\n{text}");
    }
    let mut optimized = m.clone();
    passes::optimize(&mut optimized);
    verify_module(&optimized).unwrap_or_else(|e| panic!("{e:?}\n{}", print_module(&optimized)));
}

/// Sinking: a read at the top of an iteration used after two inner loops moves to its use; a
/// failing read does not leave its loop, nor move to a block not always reached.
#[test]
fn sinking_moves_late_uses_down_and_keeps_failing_reads_where_they_must_run() {
    let m = module(
        "func @f(y: slice, n: i64) -> f64 {
entry:
    zero = iconst 0
    one = iconst 1
    acc0 = fconst 0.0
    jump outer(zero, acc0)
outer(b: i64, acc: f64):
    more = icmp lt b, n
    br more, body, done(acc)
body:
    t = load y, b
    twice = fadd t, t
    late = load y, zero
    c = fcmp gt acc, acc0
    jump inner(zero, acc)
inner(i: i64, s: f64):
    more_i = icmp lt i, n
    br more_i, inner_body, after
inner_body:
    s2 = fadd s, s
    i2 = iadd i, one
    jump inner(i2, s2)
after:
    e = fsub s, twice
    b2 = iadd b, one
    br c, maybe, outer(b2, e)
maybe:
    u = fadd e, late
    jump outer(b2, u)
done(r: f64):
    ret r
}
",
    );
    let inputs: Vec<Vec<ArgValue>> = [(vec![], 0), (vec![2.0, -1.0], 2), (vec![0.5, -1.0, 3.0], 3), (vec![1.0], 3)]
        .into_iter()
        .map(|(y, n)| vec![ArgValue::Slice(y), ArgValue::I64(n)])
        .collect();
    let out = check_pass(&m, "sink", "f", &inputs);
    let text = print_module(&out);
    let block_of = |needle: &str| {
        let at = text.find(needle).unwrap_or_else(|| panic!("{needle} missing:\n{text}"));
        text[..at].lines().rev().find(|l| l.ends_with(':') || l.contains("):")).map(str::to_string)
    };
    // `t = load y, b` and `twice` move past the inner loop: `after` post-dominates `body`.
    assert_eq!(block_of("load y, b").as_deref(), Some("after:"), "{text}");
    assert_eq!(block_of("fadd t").as_deref().map(|l| l.trim()), Some("after:"), "{text}");
    // `late` is used only in `maybe`, which is not always reached: the read can fail, so it stays.
    assert_eq!(block_of("load y, zero").as_deref(), Some("body:"), "{text}");
    // The compare cannot fail and is used by `after`'s branch: it moves there.
    assert_eq!(block_of("fcmp gt").as_deref(), Some("after:"), "{text}");
}

/// Within a block, a value is computed after a library call when it is used only after it (so it
/// is not kept on the stack across the call); an operand used both before and after stays put.
#[test]
fn sinking_moves_values_past_library_calls_and_keeps_operands_before_every_use() {
    let m = module(
        "func @f(y: slice, i: i64, x: f64) -> f64 {
entry:
    a = load y, i
    b = fmul a, x
    c = fadd a, x
    t = tanh c
    r = fadd b, t
    ret r
}
",
    );
    let inputs: Vec<Vec<ArgValue>> = [(vec![0.5, 2.0], 1, 0.25), (vec![-1.0], 0, 3.0), (vec![1.0], 4, 1.0)]
        .into_iter()
        .map(|(y, i, x)| vec![ArgValue::Slice(y), ArgValue::I64(i), ArgValue::F64(x)])
        .collect();
    let out = check_pass(&m, "sink", "f", &inputs);
    let text = print_module(&out);
    let at = |needle: &str| text.find(needle).unwrap_or_else(|| panic!("{needle} missing:\n{text}"));
    assert!(at("tanh c") < at("fmul a, x"), "{text}");
    assert!(at("load y") < at("fadd a, x"), "{text}");
}

/// A second read of the same location goes unless a store or call in between may have written
/// it: reads of a read-only slice merge across stores, reads of an `mslice` do not.
#[test]
fn redundant_loads_merge_only_where_nothing_can_have_written_the_location() {
    let m = module(
        "func @f(x: slice, y: mslice, i: i64) -> f64 {
entry:
    a = load x, i
    b = load y, i
    c = fmul b, b
    store y, i, c
    d = load x, i
    e = load y, i
    f = load y, i
    s = fadd a, d
    t = fadd e, f
    r = fadd s, t
    ret r
}
",
    );
    let inputs: Vec<Vec<ArgValue>> = [(vec![0.5, 2.0], vec![3.0, -1.5], 1), (vec![1.0], vec![2.0], 3)]
        .into_iter()
        .map(|(x, y, i)| vec![ArgValue::Slice(x), ArgValue::SliceMut(y), ArgValue::I64(i)])
        .collect();
    let out = check_pass(&m, "loads", "f", &inputs);
    let text = print_module(&out);
    assert_eq!(text.matches("load x").count(), 1, "{text}");
    assert_eq!(text.matches("load y").count(), 2, "{text}");
}

/// Index sums with one term that changes in the loop: every order of `iadd`/`isub` keeps its
/// values, and the invariant part is computed once per entry into the loop after LICM.
#[test]
fn reassociation_splits_index_sums_into_an_invariant_part_and_the_loop_index() {
    let m = module(
        "func @f(x: slice, c: i64, b: i64, n: i64) -> f64 {
entry:
    zero = iconst 0
    one = iconst 1
    acc0 = fconst 0.0
    jump head(zero, acc0)
head(r: i64, acc: f64):
    more = icmp lt r, n
    br more, body, done
body:
    t1 = iadd c, r
    k1 = isub t1, b
    t2 = iadd r, c
    k2 = isub t2, b
    t3 = isub r, b
    k3 = iadd t3, c
    t4 = isub c, r
    k4 = iadd t4, b
    v1 = load x, k1
    v2 = load x, k2
    v3 = load x, k3
    v4 = load x, k4
    s1 = fadd v1, v2
    s2 = fadd v3, v4
    s = fadd s1, s2
    acc2 = fadd acc, s
    r2 = iadd r, one
    jump head(r2, acc2)
done:
    ret acc
}
",
    );
    let x: Vec<f64> = (0..12).map(|k| 1.5 * k as f64 - 0.25).collect();
    let inputs: Vec<Vec<ArgValue>> = [(5, 2, 3), (6, 1, 4), (8, 8, 1), (20, 0, 2)]
        .into_iter()
        .map(|(c, b, n)| vec![ArgValue::Slice(x.clone()), ArgValue::I64(c), ArgValue::I64(b), ArgValue::I64(n)])
        .collect();
    let mut out = check_pass(&m, "reassociate", "f", &inputs);
    passes::licm(&mut out.functions[0]);
    let text = print_module(&out);
    let body = &text[text.find("body:").unwrap()..];
    // Each sum leaves one operation in the loop (`c - r + b` as `(c + b) - r`), beside `r + 1`.
    assert_eq!(body.matches("iadd").count() + body.matches("isub").count(), 4 + 1, "{text}");
}

/// `zero_unused_results` zeroes a float result only where no call site reads it: a result one
/// caller reads is kept for all, the entries and functions nobody calls keep theirs, a callee's
/// result read only to compute a zeroed one is zeroed in the next round, and the callers
/// compute the same values as before.
#[test]
fn zero_unused_results_zeroes_only_what_no_caller_reads() {
    let src = "func @top(x: f64) -> f64, f64 {
entry:
    a, b = call @g(x)
    c, e = call @h(x)
    ret a, c
}
func @other(x: f64) -> f64 {
entry:
    a, b = call @h(x)
    ret b
}
func @g(x: f64) -> f64, f64 {
entry:
    y = fmul x, x
    z, w = call @inner(x)
    ret y, z
}
func @h(x: f64) -> f64, f64 {
entry:
    p = sin x
    q = cos x
    ret p, q
}
func @inner(x: f64) -> f64, f64 {
entry:
    s = exp x
    t = ln x
    ret s, t
}
func @alone(x: f64) -> f64 {
entry:
    u = tanh x
    ret u
}
";
    let original = module(src);
    let mut m = original.clone();
    let top = m.func_id("top").unwrap();
    let other = m.func_id("other").unwrap();
    assert!(passes::zero_unused_results(&mut m, &[top, other]));
    verify_module(&m).unwrap();
    let text = print_module(&m);
    // g's second result (exp of inner) is unread; then inner's first result, which fed it, and
    // inner's second, read by nobody; h's two results are each read by one caller.
    for gone in ["exp", "ln"] {
        assert!(!text.contains(gone), "{gone} left in\n{text}");
    }
    for kept in ["fmul", "sin", "cos", "tanh"] {
        assert!(text.contains(kept), "{kept} removed from\n{text}");
    }
    for (f, x) in [("top", 0.7), ("other", 0.7)] {
        assert_eq!(observe(&original, f, &[ArgValue::F64(x)]), observe(&m, f, &[ArgValue::F64(x)]), "{f}");
    }
    assert!(!passes::zero_unused_results(&mut m, &[top, other]), "a second run changes nothing");
}
