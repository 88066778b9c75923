//! What reverse mode records, and that what it no longer records is recovered exactly: values
//! carried by reversed loops (invariants of an inner loop, recurrences such as a packed
//! triangular index) and deferred accumulation in stencil loops. Each program's JIT-compiled
//! gradient is compared with forward mode's Jacobian, and its tape size with what the plan
//! promises (nothing per iteration).

use super::agree_to_rounding;
use jitdiff::ir::parse_module;
use jitdiff::jit::Arg;
use jitdiff::{ForwardFn, GradientFn, GradientMode};

/// `(value, gradient, tape bytes)` of `@f(x: slice, n: i64)` by reverse mode, and the gradient
/// by forward mode. The tape is the pullback state `vjp` records (the plan); the fused
/// `value_and_grad`, whose gradient must be the same to rounding (its loops may run fused,
/// summing in forward order: see [`agree_to_rounding`]), passes the once-per-call
/// entries of it without the tape (see [`fused_tape_bytes`]).
fn both_modes(src: &str, x: &[f64], n: i64) -> (f64, Vec<f64>, usize, Vec<f64>) {
    let module = parse_module(src).unwrap_or_else(|e| panic!("{e}\n{src}"));
    let reverse = GradientFn::builder(&module, "f")
        .wrt_mask(&[true, false])
        .gradient_mode(GradientMode::Reverse)
        .build()
        .unwrap();
    let mut grad = vec![0.0; x.len()];
    let value = reverse.value_and_grad(&mut [Arg::Slice(x), Arg::I64(n)], &mut grad).unwrap();
    let mut by_vjp = vec![0.0; x.len()];
    reverse.vjp(&mut [Arg::Slice(x), Arg::I64(n)], &[1.0], &mut by_vjp).unwrap();
    assert!(
        agree_to_rounding(&grad, &by_vjp),
        "fused value_and_grad {grad:?} against forward function + pullback {by_vjp:?}"
    );
    let forward = ForwardFn::builder(&module, "f").wrt_mask(&[true, false]).width(4).build().unwrap();
    let jacobian = forward.jacobian(&mut [Arg::Slice(x), Arg::I64(n)]).unwrap();
    assert_eq!(jacobian.rows, 1);
    (value, grad, reverse.tape_bytes(), jacobian.data)
}

/// Tape bytes of one fused `value_and_grad` call of `@f(x: slice, n: i64)`.
fn fused_tape_bytes(src: &str, x: &[f64], n: i64) -> usize {
    let module = parse_module(src).unwrap();
    let reverse = GradientFn::builder(&module, "f")
        .wrt_mask(&[true, false])
        .gradient_mode(GradientMode::Reverse)
        .build()
        .unwrap();
    let mut grad = vec![0.0; x.len()];
    reverse.value_and_grad(&mut [Arg::Slice(x), Arg::I64(n)], &mut grad).unwrap();
    reverse.tape_bytes()
}

fn assert_close(reverse: &[f64], forward: &[f64], what: &str) {
    assert_eq!(reverse.len(), forward.len());
    for (k, (r, f)) in reverse.iter().zip(forward).enumerate() {
        assert!((r - f).abs() <= 1e-12 * f.abs().max(1.0), "{what}: d/dx[{k}] reverse {r}, forward {f}");
    }
}

fn inputs(len: usize) -> Vec<f64> {
    (0..len).map(|k| 0.3 + 0.7 * ((k * 37 % 11) as f64) / 11.0).collect()
}

/// A loop reading `x[r]`, where `r` starts at `n` and steps by `STEP` each iteration: written
/// with each of the forms a recurrence can take.
fn recurrence(update: &str, step: &str) -> String {
    format!(
        "func @f(x: slice, n: i64) -> f64 {{
entry:
    zero = iconst 0
    one = iconst 1
    two = iconst 2
    acc0 = fconst 0.0
    jump head(zero, n, acc0)
head(i: i64, r: i64, acc: f64):
    more = icmp lt i, n
    br more, body, exit
body:
    v = load x, r
    sv = sin v
    t = fmul sv, v
    acc2 = fadd acc, t
    {step}
    {update}
    i2 = iadd i, one
    jump head(i2, r2, acc2)
exit:
    ret acc
}}
"
    )
}

#[test]
fn recurrences_are_stepped_back_exactly_and_not_recorded_per_iteration() {
    // With n iterations r visits n, n + step(0), ... and must stay inside x: steps of 1 and 2
    // upward from n (x has 4n entries), or downward from n by 1 (x has n + 1).
    let cases = [
        ("r2 = iadd r, s", "s = iadd i, one", 4),
        ("r2 = iadd s, r", "s = isub two, one", 4),
        ("r2 = isub r, s", "s = imul one, one", 1),
    ];
    for (update, step, spread) in cases {
        let src = recurrence(update, step);
        let mut tapes = vec![];
        for n in [6i64, 12] {
            // Room for r's whole walk: n + sum of steps stays below spread * n * n.
            let len = if spread == 1 { n as usize + 1 } else { (spread * n * n) as usize };
            let x = inputs(len);
            let (_, reverse, tape, forward) = both_modes(&src, &x, n);
            assert_close(&reverse, &forward, update);
            tapes.push(tape);
        }
        // Twice the iterations, the same tape: `r` and the loop are recorded once, not per step.
        // (Each iteration records `cos v` for `sin`; subtract that.)
        let per_iteration = 8 * 2;
        assert_eq!(tapes[1] - 12 * per_iteration, tapes[0] - 6 * per_iteration, "{update}: r recorded per iteration");
    }
}

/// An inner loop using its outer loop's index `j` and a value `w` computed per outer iteration.
const NESTED: &str = "func @f(x: slice, n: i64) -> f64 {
entry:
    zero = iconst 0
    one = iconst 1
    acc0 = fconst 0.0
    jump outer(zero, acc0)
outer(j: i64, acc: f64):
    more_j = icmp lt j, n
    br more_j, outer_body, done
outer_body:
    xj = load x, j
    w = sin xj
    jump inner(zero, acc)
inner(i: i64, s: f64):
    more_i = icmp lt i, n
    br more_i, inner_body, inner_done
inner_body:
    k = iadd j, i
    xk = load x, k
    t = fmul xk, w
    s2 = fadd s, t
    i2 = iadd i, one
    jump inner(i2, s2)
inner_done:
    j2 = iadd j, one
    jump outer(j2, s)
done:
    ret acc
}
";

#[test]
fn values_of_an_outer_loop_are_recorded_once_per_inner_loop() {
    let mut tapes = vec![];
    for n in [5i64, 10] {
        let x = inputs(2 * n as usize);
        let (value, reverse, tape, forward) = both_modes(NESTED, &x, n);
        assert!(value.is_finite());
        assert_close(&reverse, &forward, "nested loops");
        tapes.push((n, tape));
    }
    // Per outer iteration: `cos xj`, and at the inner loop's end `w`; nothing per inner
    // iteration (n^2 of them), not even the inner trip count, which the pullback computes from
    // `n`. Plus, once per call, the outer trip count and `n`.
    for (n, tape) in tapes {
        assert_eq!(tape, 8 * (2 * n as usize + 2), "n = {n}");
        // Fused, the two once-per-call entries never reach the tape.
        assert_eq!(fused_tape_bytes(NESTED, &inputs(2 * n as usize), n), 8 * 2 * n as usize, "n = {n}");
    }
}

/// An outer loop over `j` around an inner loop over `i` whose start, test and step are
/// `INNER`'s: each inner loop's trip count is computed where the reversed loop starts.
fn inner_loop(start: &str, test: &str, branch: &str, step: &str) -> String {
    format!(
        "func @f(x: slice, n: i64) -> f64 {{
entry:
    zero = iconst 0
    one = iconst 1
    two = iconst 2
    minus_one = iconst -1
    last = isub n, one
    half = idiv n, two
    acc0 = fconst 0.0
    jump outer(zero, acc0)
outer(j: i64, acc: f64):
    more_j = icmp lt j, n
    br more_j, outer_body, done
outer_body:
    j1 = iadd j, one
    xj = load x, j
    w = sin xj
    jump inner({start}, acc)
inner(i: i64, s: f64):
    c = {test}
    {branch}
inner_body:
    xi = load x, i
    t = fmul xi, w
    t2 = fmul t, xi
    s2 = fadd s, t2
    i2 = {step}
    jump inner(i2, s2)
inner_done:
    jump outer(j1, s)
done:
    ret acc
}}
"
    )
}

/// `(start, test, branch, step)` of inner loops: every exit test the pullback recognises
/// (`lt`, `le`, `gt`, `ge`, `ne`, up and down, either operand order, either branch polarity),
/// triangular (`i` from `j + 1` to `n`: never clamped) or possibly empty (`i` from `j` below
/// `n / 2`: clamped at zero trips).
const INNER: [(&str, &str, &str, &str); 9] = [
    ("j1", "icmp lt i, n", "br c, inner_body, inner_done", "iadd i, one"),
    ("j", "icmp lt i, half", "br c, inner_body, inner_done", "iadd i, one"),
    ("j", "icmp le i, last", "br c, inner_body, inner_done", "iadd i, one"),
    ("last", "icmp gt i, j", "br c, inner_body, inner_done", "isub i, one"),
    ("j", "icmp ge i, zero", "br c, inner_body, inner_done", "iadd i, minus_one"),
    ("j", "icmp ne i, n", "br c, inner_body, inner_done", "iadd i, one"),
    ("last", "icmp eq i, j", "br c, inner_done, inner_body", "isub i, one"),
    ("j1", "icmp gt n, i", "br c, inner_body, inner_done", "iadd i, one"),
    ("j", "icmp ge i, half", "br c, inner_done, inner_body", "iadd i, one"),
];

#[test]
fn inner_trip_counts_are_computed_from_start_and_bound() {
    inner_loops_record_no_state(|branch| branch.to_string());
}

/// Every loop of [`INNER`], its exit branch rewritten by `exit`: the gradient matches forward
/// mode, and nothing is recorded per run of the inner loop.
fn inner_loops_record_no_state(exit: impl Fn(&str) -> String) {
    for (start, test, branch, step) in INNER {
        let src = inner_loop(start, test, &exit(branch), step);
        let mut tapes = vec![];
        for n in [0i64, 1, 2, 5, 9] {
            let x = inputs(n as usize);
            let (_, reverse, tape, forward) = both_modes(&src, &x, n);
            assert_close(&reverse, &forward, &format!("{test} from {start}, n = {n}"));
            tapes.push(tape);
        }
        // Per outer iteration `cos xj` and `w`, nothing for the inner loop's control.
        assert_eq!(tapes[4] - tapes[3], 8 * 2 * 4, "{test} from {start}: inner loop state recorded");
    }
}

/// `sum_i (x[i+1] - x[i])^2 + (x[i] * x[i+1])`: every iteration adds into `d[i+1]` and `d[i]`,
/// which the next (earlier) reversed iteration adds into again.
const STENCIL: &str = "func @f(x: slice, n: i64) -> f64 {
entry:
    zero = iconst 0
    one = iconst 1
    acc0 = fconst 0.0
    len = len x
    last = isub len, one
    jump head(zero, acc0)
head(i: i64, acc: f64):
    more = icmp lt i, last
    br more, body, exit
body:
    xi = load x, i
    i1 = iadd i, one
    xn = load x, i1
    diff = fsub xn, xi
    sq = fmul diff, diff
    prod = fmul xi, xn
    term = fadd sq, prod
    acc2 = fadd acc, term
    jump head(i1, acc2)
exit:
    ret acc
}
";

#[test]
fn stencil_adjoints_carried_between_iterations_match_forward_mode() {
    for len in [0usize, 1, 2, 3, 17] {
        let x = inputs(len);
        let (_, reverse, tape, forward) = both_modes(STENCIL, &x, 0);
        assert_close(&reverse, &forward, &format!("stencil of {len}"));
        assert_eq!(tape, 8, "the trip count only (`len x` is recomputed)");
        assert_eq!(fused_tape_bytes(STENCIL, &x, 0), 0, "fused: the trip count is passed on directly");
    }
    let module = parse_module(STENCIL).unwrap();
    let derived = GradientFn::builder(&module, "f").wrt_mask(&[true, false]).build().unwrap();
    let text = jitdiff::ir::print_module(&derived.derivative().module);
    let pullback = &text[text.find("func @f_pullback").unwrap()..];
    let pullback = &pullback[..pullback.find("\n}").unwrap()];
    assert!(pullback.contains("pending"), "no deferred accumulation:\n{pullback}");
    assert_eq!(pullback.matches("store d_x").count(), 2, "one store in the loop, one when leaving it:\n{pullback}");
}

/// An inner loop that leaves straight to its outer loop's header (the outer back edge; the
/// template's `inner_done` is left unreachable): its bound `j` is that of the outer iteration
/// that ran it, not of the one the header starts.
#[test]
fn an_inner_loop_leaving_by_the_outer_back_edge_keeps_its_bound() {
    let src = inner_loop("zero", "icmp lt i, j", "br c, inner_body, outer(j1, s)", "iadd i, one");
    for n in [0i64, 1, 4, 7] {
        let x = inputs(n as usize);
        let (_, reverse, _, forward) = both_modes(&src, &x, n);
        assert_close(&reverse, &forward, &format!("n = {n}"));
    }
}

/// The loops of [`INNER`] leaving straight to the outer header, as jump threading leaves a
/// triangular `for i { for j in i + 1..n { .. } }`: reverse mode gives them an exit block of
/// their own, where the reversed inner loop starts from computed state — nothing recorded per
/// inner loop run, as with an exit block in the source.
#[test]
fn inner_loops_leaving_by_the_outer_back_edge_record_no_state() {
    inner_loops_record_no_state(|branch| branch.replace("inner_done", "outer(j1, s)"));
}

/// A loop whose header is also the join of an `if` (GradBench's llsq: the running residual
/// starts at the sign of `t_i`, then `for j in 0..m`): the differentiation source gives the loop
/// an entry block of its own, so the reversed loop counts itself down and the edge the `if`
/// took is recorded once per entry. Per inner iteration only the running power `t_i^j` (no
/// derivative flows into it, but the pullback multiplies by it) is recorded — 24 bytes before.
#[test]
fn a_loop_entered_from_an_if_records_only_its_values_per_iteration() {
    let source = include_str!("../../gradbench/models/llsq.rs").replace("fn llsq(", "fn f(");
    let lowered = jitdiff::front::lower_source(&source).unwrap();
    let text = jitdiff::ir::print_module(&lowered);
    for (m, n) in [(4usize, 9i64), (8, 20)] {
        let x = inputs(m);
        let (value, reverse, tape, forward) = both_modes(&text, &x, n);
        // 1/2 Σ_i r_i², r_i = s(t_i) - Σ_j x_j t_i^j: d/dx_j = -Σ_i r_i t_i^j.
        let t = |i: i64| -1.0 + i as f64 * 2.0 / (n as f64 - 1.0);
        let r = |i: i64| {
            t(i).signum() * (t(i) != 0.0) as u8 as f64 - (0..m).map(|j| x[j] * t(i).powi(j as i32)).sum::<f64>()
        };
        let closed: Vec<f64> = (0..m).map(|j| -(0..n).map(|i| r(i) * t(i).powi(j as i32)).sum::<f64>()).collect();
        assert!((value - 0.5 * (0..n).map(|i| r(i) * r(i)).sum::<f64>()).abs() <= 1e-12 * value.abs().max(1.0));
        assert_close(&reverse, &forward, "llsq");
        assert_close(&reverse, &closed, "llsq against the closed form");
        let n = n as usize;
        // 8 bytes per inner iteration, a few entries per outer one (the edge taken, the inner
        // loop's end, the residual) and per call.
        assert!(tape <= 8 * n * m + 8 * 4 * n + 64, "m = {m}, n = {n}: {tape} bytes");
    }
}

/// A rule's partial computed from constants alone — `1 / 2` and `1 / 6` for GradBench ode's
/// `h * k[i] / 2.0` and `(...) / 6.0` — is re-created by the pullback, not recorded on every
/// iteration. Per step and component, the RK4 loops record only the four values that the
/// stages overwrite (`y[i-1]` and the three `tmp[i-1]`): 32 bytes, 56 before. The gradient is
/// checked against forward mode.
#[test]
fn partials_computed_from_constants_are_not_recorded() {
    use jitdiff::args;
    let module = jitdiff::front::lower_source(include_str!("../../gradbench/models/ode.rs")).unwrap();
    let reverse =
        GradientFn::builder(&module, "ode_last").wrt(["x"]).gradient_mode(GradientMode::Reverse).build().unwrap();
    let forward = ForwardFn::builder(&module, "ode_last").wrt(["x"]).width(4).build().unwrap();
    for (n, s) in [(5usize, 3usize), (12, 7)] {
        let x = inputs(n);
        let mut yf = vec![0.0; n];
        let mut grad = vec![0.0; n];
        let mut by_vjp = vec![0.0; n];
        // The cotangent of the result; none for the slice the function also writes.
        let mut cotangents = vec![0.0; 1 + n];
        cotangents[0] = 1.0;
        reverse.vjp(&mut args![&x, s, &mut yf], &cotangents, &mut by_vjp).unwrap();
        let tape = reverse.tape_bytes();
        reverse.value_and_grad(&mut args![&x, s, &mut yf], &mut grad).unwrap();
        let jacobian = forward.jacobian(&mut args![&x, s, &mut yf]).unwrap();
        // Row 0 of the Jacobian: the result's (`yf`'s rows follow).
        let row = &jacobian.data[..n];
        assert_close(&grad, row, "ode");
        assert_close(&by_vjp, row, "ode by vjp");
        // 4 entries per step and component, a few per loop run (trip counts) and per call.
        assert!(tape <= 8 * 4 * n * s + 8 * 12 * s + 64, "n = {n}, s = {s}: {tape} bytes");
    }
}

/// A float read from a differentiated slice only to become an index (`c[cj] as usize` in
/// GradBench det's linked list of columns) has no cotangent, so reverse mode neither reverses
/// the load nor records its index: per loop iteration det by minors records 5 entries (the
/// column and the one before it, the minor and the entry it multiplies, the branch taken), 6
/// before; per leaf call 4, per other call 6. The gradient is checked against forward mode and,
/// for ℓ = 3, against the cofactor matrix.
#[test]
fn values_read_only_as_indices_are_not_recorded() {
    use jitdiff::args;
    let module = jitdiff::front::lower_source(include_str!("../../gradbench/models/det.rs")).unwrap();
    let reverse = GradientFn::builder(&module, "det").wrt(["a"]).gradient_mode(GradientMode::Reverse).build().unwrap();
    let forward = ForwardFn::builder(&module, "det").wrt(["a"]).width(4).build().unwrap();
    for ell in [3usize, 5] {
        let a = inputs(ell * ell);
        let (mut r, mut c) = (vec![0.0; ell + 1], vec![0.0; ell + 1]);
        let mut grad = vec![0.0; ell * ell];
        let value = reverse.value_and_grad(&mut args![&a, ell, &mut r, &mut c], &mut grad).unwrap();
        let tape = reverse.tape_bytes();
        let jacobian = forward.jacobian(&mut args![&a, ell, &mut r, &mut c]).unwrap();
        assert_close(&grad, &jacobian.data[..ell * ell], "det");
        if ell == 3 {
            let m = |i: usize, j: usize| a[i * 3 + j];
            let det = m(0, 0) * (m(1, 1) * m(2, 2) - m(1, 2) * m(2, 1))
                - m(0, 1) * (m(1, 0) * m(2, 2) - m(1, 2) * m(2, 0))
                + m(0, 2) * (m(1, 0) * m(2, 1) - m(1, 1) * m(2, 0));
            assert!((value - det).abs() <= 1e-12);
            // d det / d a_00 = a_11 a_22 - a_12 a_21.
            assert!((grad[0] - (m(1, 1) * m(2, 2) - m(1, 2) * m(2, 1))).abs() <= 1e-12);
        }
        // Calls with m columns left: ℓ! / m!, each running m iterations when m ≥ 2.
        let factorial = |k: usize| (1..=k).product::<usize>();
        let calls = |m: usize| factorial(ell) / factorial(m);
        let iterations: usize = (2..=ell).map(|m| calls(m) * m).sum();
        let inner_calls: usize = (2..=ell).map(calls).sum();
        let bound = 8 * (5 * iterations + 4 * calls(1) + 6 * inner_calls) + 64;
        assert!(tape <= bound, "ell = {ell}: {tape} bytes, at most {bound} expected");
    }
}

/// `m = m.min(d)` with `d` an inner loop's sum: `f64::min`'s partials (selects of constants on
/// `m < d` and `m == d`) are recomputed from `m` and `d`, which are recorded anyway (`d` for
/// the NaN test): two entries per outer iteration, not the two partials and `d`.
#[test]
fn min_records_its_operands_not_its_partials() {
    let source = "fn f(x: &[f64], n: usize) -> f64 {
    let mut m = f64::INFINITY;
    for i in 0..x.len() {
        let mut d = 0.0;
        for k in 0..n {
            d += (x[i] - k as f64) * (x[i] - k as f64);
        }
        m = m.min(d);
    }
    m
}";
    let module = jitdiff::front::lower_source(source).unwrap();
    let reverse = GradientFn::builder(&module, "f").wrt(["x"]).gradient_mode(GradientMode::Reverse).build().unwrap();
    let forward = ForwardFn::builder(&module, "f").wrt(["x"]).width(4).build().unwrap();
    let tape = |len: usize| {
        let x = inputs(len);
        let mut grad = vec![0.0; len];
        reverse.value_and_grad(&mut [Arg::Slice(&x), Arg::I64(3)], &mut grad).unwrap();
        let jacobian = forward.jacobian(&mut [Arg::Slice(&x), Arg::I64(3)]).unwrap();
        assert_close(&grad, &jacobian.data, "gradient against forward mode");
        reverse.tape_bytes()
    };
    let per_iteration = (tape(200) - tape(100)) / 100;
    assert_eq!(per_iteration, 16, "bytes per outer iteration");
}
