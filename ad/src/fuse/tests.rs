//! The fusion on functions of the shape the fused `value_and_grad` has after inlining (printed
//! from the real pipeline), and on variants that must be left alone.

use super::fuse_reversed_loops;
use jitdiff_ir::analysis::ControlFlow;
use jitdiff_ir::{ArgValue, Function, Interpreter, Module, RuntimeValue, Tape, parse_module, print_module};

/// `f(a, x, n, b, y) = b (a b + Σ_i a sin(x_i y_i))`, all four differentiated: a forward loop
/// that records `cos` and `sin` per iteration, and the reversed loop, which pops them, carries
/// the cotangent of `a` as a sum and accumulates into `d_x` and `d_y`.
const SUM_OF_SINES: &str =
    "func @f(a: f64, x: slice, n: i64, b: f64, y: slice, d_x: mslice, d_y: mslice) -> f64, f64, f64 {
entry:
    zero = iconst 0
    one = iconst 1
    v9 = fconst 0.0
    acc0 = fmul a, b
    jump head(zero, acc0)
head(i: i64, acc: f64):
    more = icmp lt i, n
    br more, body, head_leave
body:
    xi = load x, i
    yi = load y, i
    p = fmul xi, yi
    s = sin p
    c = cos p
    t = fmul s, a
    acc2 = fadd acc, t
    i2 = iadd i, one
    tpush c
    tpush s
    jump head(i2, acc2)
head_leave:
    e = fmul acc, b
    jump rev_head(v9, i)
rev_entry:
    v23 = fmul b, b
    v24 = fadd adj_a, v23
    v25 = fadd acc, acc0
    ret e, v24, v25
rev_head(adj_a: f64, trip: i64):
    k = isub trip, one
    done = icmp eq trip, zero
    br done, rev_entry, rev_body
rev_body:
    s_k = tpop.f64
    c_k = tpop.f64
    y_k = load y, k
    x_k = load x, k
    v34 = fmul s_k, b
    v35 = fadd adj_a, v34
    v36 = fmul c_k, acc0
    v37 = fmul y_k, v36
    v38 = fmul x_k, v36
    old_y = load d_y, k
    new_y = fadd old_y, v38
    store d_y, k, new_y
    old_x = load d_x, k
    new_x = fadd old_x, v37
    store d_x, k, new_x
    jump rev_head(v35, k)
}
";

fn loops(f: &Function) -> usize {
    ControlFlow::new(f).natural_loops().len()
}

fn run(module: &Module, n: i64) -> (Vec<RuntimeValue>, Vec<f64>) {
    let (x, y) = (vec![0.3, -1.2, 2.5, 0.7], vec![1.1, 0.4, -0.7, 2.0]);
    let mut args = [
        ArgValue::F64(0.8),
        ArgValue::Slice(x),
        ArgValue::I64(n),
        ArgValue::F64(-1.3),
        ArgValue::Slice(y),
        ArgValue::SliceMut(vec![0.0; 4]),
        ArgValue::SliceMut(vec![0.0; 4]),
    ];
    let results = Interpreter::new(module).call_with_tape("f", &mut args, &mut Tape::new()).unwrap();
    let mut gradient = vec![];
    for arg in &args[5..] {
        let ArgValue::SliceMut(d) = arg else { unreachable!() };
        gradient.extend(d);
    }
    (results, gradient)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 8.0 * f64::EPSILON * a.abs().max(b.abs())
}

#[test]
fn a_sum_over_a_loop_runs_in_one_sweep_without_the_tape() {
    let before = parse_module(SUM_OF_SINES).unwrap();
    let mut after = before.clone();
    assert_eq!(loops(&after.functions[0]), 2);
    assert!(fuse_reversed_loops(&mut after.functions[0]));
    jitdiff_ir::verify_module(&after).unwrap_or_else(|e| panic!("{e}\n{}", print_module(&after)));
    let text = print_module(&after);
    assert_eq!(loops(&after.functions[0]), 1, "{text}");
    assert!(!text.contains("tpush") && !text.contains("tpop"), "{text}");
    for n in [0, 1, 4] {
        let (want, want_gradient) = run(&before, n);
        let (got, gradient) = run(&after, n);
        assert_eq!(got[0], want[0], "the value, n = {n}");
        for (g, w) in got[1..].iter().zip(&want[1..]) {
            let (RuntimeValue::F64(g), RuntimeValue::F64(w)) = (g, w) else { unreachable!() };
            assert!(close(*g, *w), "n = {n}: {g} vs {w}");
        }
        assert!(gradient.iter().zip(&want_gradient).all(|(g, w)| close(*g, *w)), "{gradient:?} vs {want_gradient:?}");
    }
}

/// A forward loop from 1: the reversed loop counts `i - 1` and rebuilds `i` as `1 + k`.
#[test]
fn a_loop_from_one_fuses_too() {
    let src = SUM_OF_SINES
        .replace("jump head(zero, acc0)", "jump head(one, acc0)")
        .replace("jump rev_head(v9, i)", "tr = isub i, one\n    jump rev_head(v9, tr)")
        .replace("    s_k = tpop.f64\n", "    s_k = tpop.f64\n    kk = iadd one, k\n")
        .replace("load y, k", "load y, kk")
        .replace("load x, k", "load x, kk")
        .replace("d_y, k", "d_y, kk")
        .replace("d_x, k", "d_x, kk");
    let before = parse_module(&src).unwrap_or_else(|e| panic!("{e}\n{src}"));
    let mut after = before.clone();
    assert!(fuse_reversed_loops(&mut after.functions[0]), "{src}");
    jitdiff_ir::verify_module(&after).unwrap_or_else(|e| panic!("{e}\n{}", print_module(&after)));
    let text = print_module(&after);
    assert_eq!(loops(&after.functions[0]), 1, "{text}");
    assert!(!text.contains("tpop"), "{text}");
    for n in [0, 1, 2, 4] {
        let ((want, want_gradient), (got, gradient)) = (run(&before, n), run(&after, n));
        assert_eq!(got[0], want[0], "the value, n = {n}");
        assert!(gradient.iter().zip(&want_gradient).all(|(g, w)| close(*g, *w)), "{gradient:?} vs {want_gradient:?}");
    }
}

/// A pair that records nothing fuses even where the function uses the tape elsewhere (an
/// entry pushed before the loops and popped after them), and the fusion stands.
#[test]
fn the_tape_of_other_code_does_not_undo_a_fusion() {
    let src = SUM_OF_SINES
        .replace("    tpush c\n    tpush s\n", "")
        .replace(
            "    s_k = tpop.f64\n    c_k = tpop.f64\n",
            "    x_r = load x, k\n    y_r = load y, k\n    p_r = fmul x_r, y_r\n    s_k = sin p_r\n    c_k = cos p_r\n",
        )
        .replace("    acc0 = fmul a, b\n", "    acc0 = fmul a, b\n    tpush b\n")
        .replace("    v23 = fmul b, b\n", "    bb = tpop.f64\n    v23 = fmul b, bb\n");
    let before = parse_module(&src).unwrap_or_else(|e| panic!("{e}\n{src}"));
    let mut after = before.clone();
    assert!(fuse_reversed_loops(&mut after.functions[0]), "{src}");
    let text = print_module(&after);
    assert_eq!(loops(&after.functions[0]), 1, "{text}");
    assert!(text.contains("tpush b") && text.contains("tpop"), "{text}");
    for n in [0, 3] {
        let ((want, want_gradient), (got, gradient)) = (run(&before, n), run(&after, n));
        assert_eq!(got[0], want[0], "the value, n = {n}");
        assert!(gradient.iter().zip(&want_gradient).all(|(g, w)| close(*g, *w)), "{gradient:?} vs {want_gradient:?}");
    }
}

/// Each variant breaks one condition of the fusion; the function must stay as it was.
#[test]
fn loops_whose_reversed_iterations_do_not_commute_stay_apart() {
    let variants = [
        // The cotangent of `a` carried as a product: it changes from one iteration to the next.
        ("a carried product", "v35 = fadd adj_a, v34", "v35 = fmul adj_a, v34"),
        // A differential read back for something other than an accumulation.
        ("a differential read", "v37 = fmul y_k, v36", "v37 = fmul old_x, v36"),
        // A value of the forward loop (its sum) used by the reversed loop.
        ("a forward value", "v36 = fmul c_k, acc0", "v36 = fmul c_k, acc"),
        // A store that is not an accumulation.
        ("an overwrite", "new_x = fadd old_x, v37", "new_x = fmul old_x, v37"),
        // The reversed loop counting from something else than the forward loop's counter.
        ("another trip count", "jump rev_head(v9, i)", "jump rev_head(v9, n)"),
        // A pop after the loops, which fusion would leave reading the wrong entry.
        ("a pop after the loops", "v23 = fmul b, b", "extra = tpop.f64\n    v23 = fmul b, extra"),
        // Part of the record pushed in other blocks than the one that pops it: fused, the loop
        // would still push and pop per iteration, which is slower than two sweeps; undone.
        (
            "a record from two blocks",
            "    tpush c\n    tpush s\n    jump head(i2, acc2)",
            "    wide = fcmp gt s, c\n    br wide, push_a, push_b\npush_a:\n    tpush c\n    jump join\npush_b:\n    tpush c\n    jump join\njoin:\n    tpush s\n    jump head(i2, acc2)",
        ),
    ];
    for (what, from, to) in variants {
        assert!(SUM_OF_SINES.contains(from), "{what}");
        let src = SUM_OF_SINES.replace(from, to);
        let mut module = parse_module(&src).unwrap_or_else(|e| panic!("{what}: {e}"));
        let original = module.clone();
        assert!(!fuse_reversed_loops(&mut module.functions[0]), "{what}:\n{}", print_module(&module));
        assert_eq!(module, original, "{what}");
    }
}
