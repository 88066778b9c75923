//! Nested AD: derivatives declared in a module (`extern @g(...) = grad <mode> @f wrt ...`, or
//! `jitdiff::grad_forward/grad_reverse` in Rust) expanded into derived functions, and those
//! differentiated again — every forward/reverse combination, checked against finite
//! differences, against each other and against the classic perturbation-confusion case.

use jitdiff::ad::{AdError, expand_derivatives};
use jitdiff::ir::{ArgValue, interpret, parse_module, print_module};
use jitdiff::{Error, ForwardFn, GradientFn, GradientMode, PrimalFn, args};

const MODES: [&str; 2] = ["forward", "reverse"];
const OUTER: [GradientMode; 2] = [GradientMode::Forward, GradientMode::Reverse];

/// `@inner(a, y) = a·y·sin(y) + a²·y`, its partial in `y` declared with `mode`, and
/// `@outer(a, b) = ∂inner/∂y (a, a·b) · b`.
fn chain(mode: &str) -> String {
    format!(
        "extern @inner_dy(f64, f64) -> f64 = grad {mode} @inner wrt 1
func @inner(a: f64, y: f64) -> f64 {{
entry:
    s = sin y
    ys = fmul y, s
    t = fmul a, ys
    aa = fmul a, a
    u = fmul aa, y
    r = fadd t, u
    ret r
}}
func @outer(a: f64, b: f64) -> f64 {{
entry:
    y = fmul a, b
    d = call @inner_dy(a, y)
    r = fmul d, b
    ret r
}}
"
    )
}

/// ∂inner/∂y by hand.
fn inner_dy(a: f64, y: f64) -> f64 {
    a * (y.sin() + y * y.cos()) + a * a
}

#[test]
fn declarations_print_and_parse_back() {
    let text = chain("reverse");
    let m = parse_module(&text).unwrap();
    let printed = print_module(&m);
    assert!(printed.contains("extern @inner_dy(f64, f64) -> f64 = grad reverse @inner wrt 1"), "{printed}");
    assert_eq!(parse_module(&printed).unwrap(), m);
}

#[test]
fn an_expanded_declaration_computes_the_partial() {
    for mode in MODES {
        let m = expand_derivatives(&parse_module(&chain(mode)).unwrap(), &Default::default()).unwrap();
        assert!(m.externs.is_empty(), "{mode}: the declaration is replaced by a function");
        let (a, b) = (0.7, 1.3);
        let got = interpret(&m, "outer", &mut [ArgValue::F64(a), ArgValue::F64(b)]).unwrap()[0].as_f64().unwrap();
        let want = inner_dy(a, a * b) * b;
        assert!((got - want).abs() <= 1e-14 * want.abs().max(1.0), "{mode}: {got} vs {want}");
        let primal = PrimalFn::builder(&m, "outer").build().unwrap();
        let native = primal.call(&mut args![a, b]).unwrap()[0].as_f64().unwrap();
        assert!((native - want).abs() <= 1e-14 * want.abs().max(1.0), "{mode}: JIT {native} vs {want}");
    }
}

/// Second derivatives through a declared first one, in all four combinations: against finite
/// differences of the first derivative, and against each other.
#[test]
fn every_combination_of_modes_differentiates_a_declared_gradient() {
    let (a, b) = (0.7, 1.3);
    let mut gradients = vec![];
    for inner in MODES {
        let m = parse_module(&chain(inner)).unwrap();
        for outer in OUTER {
            let g = GradientFn::builder(&m, "outer").wrt_all().gradient_mode(outer).build().unwrap();
            let mut grad = [0.0; 2];
            let value = g.value_and_grad(&mut args![a, b], &mut grad).unwrap();
            assert!((value - inner_dy(a, a * b) * b).abs() < 1e-13, "{inner}/{outer:?}: value {value}");
            let outer_fn = |a: f64, b: f64| inner_dy(a, a * b) * b;
            let h = 1e-6;
            let fd = [
                (outer_fn(a + h, b) - outer_fn(a - h, b)) / (2.0 * h),
                (outer_fn(a, b + h) - outer_fn(a, b - h)) / (2.0 * h),
            ];
            for k in 0..2 {
                assert!((grad[k] - fd[k]).abs() < 1e-7 * fd[k].abs().max(1.0), "{inner}/{outer:?}: {grad:?} vs {fd:?}");
            }
            gradients.push(grad);
        }
    }
    for g in &gradients {
        for k in 0..2 {
            assert!((g[k] - gradients[0][k]).abs() <= 1e-13 * g[k].abs().max(1.0), "{gradients:?}");
        }
    }
}

/// Siskind and Pearlmutter's example: d/dx [x · d/dy (x + y) at y = x] is 1; an implementation
/// that confuses the inner tangent with the outer one gets 2.
#[test]
fn no_perturbation_confusion() {
    for inner in MODES {
        let text = format!(
            "extern @add_dy(f64, f64) -> f64 = grad {inner} @add wrt 1
func @add(x: f64, y: f64) -> f64 {{
entry:
    s = fadd x, y
    ret s
}}
func @c(x: f64) -> f64 {{
entry:
    d = call @add_dy(x, x)
    r = fmul x, d
    ret r
}}
"
        );
        let m = parse_module(&text).unwrap();
        for outer in OUTER {
            let g = GradientFn::builder(&m, "c").wrt_all().gradient_mode(outer).build().unwrap();
            let mut grad = [0.0];
            g.value_and_grad(&mut args![3.0], &mut grad).unwrap();
            assert_eq!(grad[0], 1.0, "{inner} inside {outer:?}");
        }
    }
}

/// Three levels: f = x⁴, its first derivative declared, the derivative of that declared, and
/// the gradient of the result taken by a handle: 24x.
#[test]
fn derivatives_nest_three_deep() {
    for (first, second) in [("reverse", "forward"), ("forward", "reverse"), ("reverse", "reverse")] {
        let text = format!(
            "extern @d1(f64) -> f64 = grad {first} @f wrt 0
extern @d2(f64) -> f64 = grad {second} @f1 wrt 0
func @f(x: f64) -> f64 {{
entry:
    x2 = fmul x, x
    x4 = fmul x2, x2
    ret x4
}}
func @f1(x: f64) -> f64 {{
entry:
    d = call @d1(x)
    ret d
}}
func @f2(x: f64) -> f64 {{
entry:
    d = call @d2(x)
    ret d
}}
"
        );
        let m = parse_module(&text).unwrap();
        for outer in OUTER {
            let g = GradientFn::builder(&m, "f2").wrt_all().gradient_mode(outer).build().unwrap();
            let mut grad = [0.0];
            let value = g.value_and_grad(&mut args![1.5], &mut grad).unwrap();
            assert!((value - 12.0 * 1.5 * 1.5).abs() < 1e-12, "{first}/{second}: f'' = {value}");
            assert!((grad[0] - 24.0 * 1.5).abs() < 1e-12, "{first}/{second}/{outer:?}: f''' = {}", grad[0]);
        }
    }
}

#[test]
fn a_derivative_that_depends_on_itself_is_an_error() {
    let text = "extern @f_dx(f64) -> f64 = grad reverse @f wrt 0
func @f(x: f64) -> f64 {
entry:
    d = call @f_dx(x)
    r = fmul d, x
    ret r
}
";
    let m = parse_module(text).unwrap();
    let err = PrimalFn::builder(&m, "f").build().unwrap_err();
    assert!(matches!(err, Error::Ad(AdError::NestedDerivative { .. })), "{err:?}");
    let message = err.to_string();
    assert!(message.contains("@f_dx") && message.contains("depends on itself"), "{message}");
}

/// `n` iterations of `acc += sin(x·i)`: reverse mode records the loop on the tape.
const LOOP: &str = "extern @g_dx(f64, i64) -> f64 = grad reverse @g wrt 0
func @g(x: f64, n: i64) -> f64 {
entry:
    zero = iconst 0
    acc0 = fconst 0.0
    jump head(zero, acc0)
head(i: i64, acc: f64):
    more = icmp lt i, n
    br more, body, exit
body:
    fi = itof i
    xi = fmul x, fi
    s = sin xi
    acc2 = fadd acc, s
    one = iconst 1
    i2 = iadd i, one
    jump head(i2, acc2)
exit:
    ret acc
}
func @h(x: f64, n: i64) -> f64 {
entry:
    d1 = call @g_dx(x, n)
    y = fmul x, x
    d2 = call @g_dx(y, n)
    r = fadd d1, d2
    ret r
}
";

fn g_dx(x: f64, n: i64) -> f64 {
    (0..n).map(|i| i as f64 * (x * i as f64).cos()).sum()
}

/// A reverse-mode gradient with a loop keeps its state on the tape: calls of it leave the tape
/// as they found it (two calls in one function, and many calls of the handle); forward mode
/// differentiates it, and so does reverse mode, through the Hessian-row rules of its partial
/// (the integer parameter passed along undifferentiated).
#[test]
fn a_recorded_inner_gradient_with_an_integer_parameter_works_in_both_modes() {
    let m = parse_module(LOOP).unwrap();
    let primal = PrimalFn::builder(&m, "h").build().unwrap();
    let (x, n) = (0.4, 7);
    let want = g_dx(x, n) + g_dx(x * x, n);
    for _ in 0..3 {
        let got = primal.call(&mut args![x, n]).unwrap()[0].as_f64().unwrap();
        assert!((got - want).abs() < 1e-12, "{got} vs {want}");
    }
    // d/dx [g'(x) + g'(x²)] = g''(x) + 2x g''(x²), g''(x) = -Σ i² sin(x i).
    let g2 = |x: f64| -(0..n).map(|i| (i * i) as f64 * (x * i as f64).sin()).sum::<f64>();
    let exact = g2(x) + 2.0 * x * g2(x * x);
    // (A `GradientFn` derives reverse mode whatever its mode, so forward mode is a `ForwardFn`.)
    let forward = ForwardFn::builder(&m, "h").wrt(["x"]).width(1).build().unwrap();
    let (_, tangent) = forward.jvp(&mut args![x, n], &[&[1.0]]).unwrap();
    assert!((tangent[0] - exact).abs() < 1e-12 * exact.abs().max(1.0), "{} vs {exact}", tangent[0]);
    let reverse = GradientFn::builder(&m, "h").wrt(["x"]).gradient_mode(GradientMode::Reverse).build().unwrap();
    let mut grad = [0.0];
    reverse.value_and_grad(&mut args![x, n], &mut grad).unwrap();
    assert!((grad[0] - exact).abs() < 1e-12 * exact.abs().max(1.0), "{} vs {exact}", grad[0]);
}

/// A recorded inner gradient of a function with an `mslice` parameter (which each partial
/// would write again) gets no rules: reverse mode over it says why it cannot.
#[test]
fn reverse_mode_refuses_a_recorded_gradient_that_writes_a_slice() {
    let text = LOOP
        .replace(
            "extern @g_dx(f64, i64) -> f64 = grad reverse @g wrt 0",
            "extern @g_dx(f64, i64, mslice) -> f64 = grad reverse @g wrt 0",
        )
        .replace("func @g(x: f64, n: i64) -> f64 {", "func @g(x: f64, n: i64, out: mslice) -> f64 {")
        .replace("exit:\n    ret acc", "exit:\n    count = itof n\n    store out, zero, count\n    ret acc")
        .replace("func @h(x: f64, n: i64) -> f64 {", "func @h(x: f64, n: i64, out: mslice) -> f64 {")
        .replace("call @g_dx(x, n)", "call @g_dx(x, n, out)")
        .replace("call @g_dx(y, n)", "call @g_dx(y, n, out)");
    let m = parse_module(&text).unwrap();
    let err = GradientFn::builder(&m, "h").wrt(["x"]).gradient_mode(GradientMode::Reverse).build().unwrap_err();
    assert!(matches!(err, Error::Ad(AdError::NestedDerivative { .. })), "{err:?}");
    let message = err.to_string();
    assert!(message.contains("@g_dx") && message.contains("grad forward"), "{message}");
}

/// The Rust front end: `jitdiff::grad_forward` / `grad_reverse` with a closure; the same
/// source compiled by rustc (the functions below) runs the plain-Rust fallback.
mod rust {
    #![allow(dead_code)]
    pub const SOURCE: &str = r#"
fn energy(k: f64, x: f64, y: f64) -> f64 {
    k * (x * x + 3.0 * y * y) + (x * y).sin()
}

fn force_fwd(k: f64, x: f64, y: f64) -> (f64, f64) {
    jitdiff::grad_forward(|(a, b)| energy(k, a, b), (x, y))
}

fn force_rev(k: f64, x: f64, y: f64) -> (f64, f64) {
    jitdiff::grad_reverse(|(b, a)| energy(k, a, b), (y, x))
}

fn work(k: f64, x: f64, y: f64, forward: bool) -> f64 {
    let (fx, fy) = if forward { force_fwd(k, x, y) } else { force_rev(k, x, y) };
    let dk = jitdiff::grad_reverse(|kk| energy(kk, x, y), k);
    fx * x + fy * y + dk
}
"#;

    pub fn energy(k: f64, x: f64, y: f64) -> f64 {
        k * (x * x + 3.0 * y * y) + (x * y).sin()
    }

    pub fn force_fwd(k: f64, x: f64, y: f64) -> (f64, f64) {
        jitdiff::grad_forward(|(a, b)| energy(k, a, b), (x, y))
    }

    pub fn force_rev(k: f64, x: f64, y: f64) -> (f64, f64) {
        jitdiff::grad_reverse(|(b, a)| energy(k, a, b), (y, x))
    }

    pub fn work(k: f64, x: f64, y: f64, forward: bool) -> f64 {
        let (fx, fy) = if forward { force_fwd(k, x, y) } else { force_rev(k, x, y) };
        let dk = jitdiff::grad_reverse(|kk| energy(kk, x, y), k);
        fx * x + fy * y + dk
    }
}

#[test]
fn rust_closures_lower_to_declared_gradients() {
    let m = jitdiff::front::lower_source(rust::SOURCE).unwrap();
    let declared: Vec<String> = m.externs.iter().filter_map(|e| e.derivative.as_ref().map(|d| d.spelling())).collect();
    assert_eq!(
        declared,
        ["grad forward @energy wrt 1, 2", "grad reverse @energy wrt 1, 2", "grad reverse @energy wrt 0"],
        "one declaration per function, mode and parameter set"
    );
    let (k, x, y): (f64, f64, f64) = (0.8, 0.6, -1.1);
    // Exact: 2kx + y cos(xy), 6ky + x cos(xy), in the closure's order.
    let (fx, fy) = (2.0 * k * x + y * (x * y).cos(), 6.0 * k * y + x * (x * y).cos());
    let forward = PrimalFn::builder(&m, "force_fwd").build().unwrap().call(&mut args![k, x, y]).unwrap();
    let reverse = PrimalFn::builder(&m, "force_rev").build().unwrap().call(&mut args![k, x, y]).unwrap();
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-14 * b.abs().max(1.0);
    assert!(close(forward[0].as_f64().unwrap(), fx) && close(forward[1].as_f64().unwrap(), fy), "{forward:?}");
    assert!(close(reverse[0].as_f64().unwrap(), fy) && close(reverse[1].as_f64().unwrap(), fx), "{reverse:?}");
    // Natively, the fallback's central differences come close.
    let (nx, ny) = rust::force_fwd(k, x, y);
    assert!((nx - fx).abs() < 1e-8 && (ny - fy).abs() < 1e-8, "native {nx}, {ny}");
    let (ny2, nx2) = rust::force_rev(k, x, y);
    assert!((nx2 - fx).abs() < 1e-8 && (ny2 - fy).abs() < 1e-8, "native {nx2}, {ny2}");
    // And the outer gradient of a function taking inner gradients, against finite differences
    // of the native function (whose inner gradients are themselves differences: loose).
    for forward in [true, false] {
        for outer in OUTER {
            let g = GradientFn::builder(&m, "work").wrt(["k", "x", "y"]).gradient_mode(outer).build().unwrap();
            let mut grad = [0.0; 3];
            let value = g.value_and_grad(&mut args![k, x, y, forward], &mut grad).unwrap();
            assert!((value - rust::work(k, x, y, forward)).abs() < 1e-7, "{value}");
            let h = 1e-4;
            let point = [k, x, y];
            for p in 0..3 {
                let at = |d: f64| {
                    let mut q = point;
                    q[p] += d;
                    rust::work(q[0], q[1], q[2], forward)
                };
                let fd = (at(h) - at(-h)) / (2.0 * h);
                assert!((grad[p] - fd).abs() < 1e-5 * fd.abs().max(1.0), "{outer:?} p{p}: {} vs {fd}", grad[p]);
            }
        }
    }
}

#[test]
fn malformed_nested_gradients_are_front_end_errors() {
    let cases = [
        (
            "fn f(x: f64, y: f64) -> f64 { x * y }\nfn g(x: f64) -> f64 { jitdiff::grad_reverse(|y| f(x, y * 2.0), x) }",
            "inside an argument expression",
        ),
        (
            "fn f(x: f64, y: f64) -> f64 { x * y }\nfn g(x: f64) -> f64 { jitdiff::grad_reverse(|y| f(x, x), x) }",
            "not passed",
        ),
        (
            "fn f(x: f64, y: f64) -> f64 { x * y }\nfn g(x: f64) -> f64 { jitdiff::grad_reverse(|y| x * y, x) }",
            "one call of a `fn`",
        ),
        (
            "fn f(x: f64, n: i64) -> f64 { x }\nfn g(x: f64) -> f64 { jitdiff::grad_forward(|n| f(x, n), 2) }",
            "`f64` parameters",
        ),
        (
            "fn f(x: f64, y: f64) -> f64 { x * y }\nfn g(x: f64) -> (f64, f64) { jitdiff::grad_forward(|(a, b)| f(a, b), x) }",
            "mismatched types",
        ),
        ("fn f(x: f64) -> f64 { x }\nfn g(x: f64) -> f64 { jitdiff::grad_forward(|y| f(y)) }", "argument"),
    ];
    for (source, needle) in cases {
        let err = jitdiff::front::lower_source(source).unwrap_err().to_string();
        assert!(err.contains(needle), "{source}\n→ {err}");
        assert!(err.contains("2:"), "names the line: {err}");
    }
}

/// An extern that no compiled function calls needs no implementation.
#[test]
fn an_uncalled_extern_needs_no_implementation() {
    let m =
        parse_module("extern @unused(f64) -> f64\nfunc @f(x: f64) -> f64 {\nentry:\n    y = fmul x, x\n    ret y\n}\n")
            .unwrap();
    let g = GradientFn::builder(&m, "f").wrt_all().build().unwrap();
    let mut grad = [0.0];
    assert_eq!(g.value_and_grad(&mut args![3.0], &mut grad).unwrap(), 9.0);
    assert_eq!(grad[0], 6.0);
}

/// Without a handle, the interpreter and the JIT say how to expand a declaration; the
/// derivation entry points expand it themselves.
#[test]
fn unexpanded_declarations_are_explained_and_derivations_expand_them() {
    let m = parse_module(&chain("reverse")).unwrap();
    let err = interpret(&m, "outer", &mut [ArgValue::F64(0.5), ArgValue::F64(2.0)]).unwrap_err();
    assert!(matches!(err, jitdiff::ir::InterpError::UnexpandedDerivative { .. }), "{err:?}");
    assert!(err.to_string().contains("expand_derivatives"), "{err}");
    let registry = jitdiff::ir::ExternRegistry::new();
    let Err(err) = jitdiff::jit::compile(&m, &registry, &jitdiff::jit::JitOptions::new()) else {
        panic!("compiled a module with an unexpanded declaration");
    };
    let message = err.to_string();
    assert!(message.contains("declared derivative") && message.contains("grad reverse @inner wrt 1"), "{message}");
    let derived = jitdiff::ad::derive_reverse(&m, "outer", &[true, true]).unwrap();
    assert!(derived.module.externs.is_empty());
    let vg = derived.value_and_grad.unwrap();
    let out = interpret(&derived.module, &vg, &mut [ArgValue::F64(0.5), ArgValue::F64(2.0)]).unwrap();
    let want = inner_dy(0.5, 1.0) * 2.0;
    assert!((out[0].as_f64().unwrap() - want).abs() < 1e-14, "{out:?}");
}

/// The same through `#[jitdiff::module]`: the items compile natively (the fallback's central
/// differences) and the generated handles derive the declared gradient exactly.
#[jitdiff::module]
mod physics {
    pub fn energy(k: f64, x: f64, y: f64) -> f64 {
        k * (x * x + 3.0 * y * y) + (x * y).sin()
    }

    pub fn work(k: f64, x: f64, y: f64) -> f64 {
        let (fx, fy) = jitdiff::grad_reverse(|(a, b)| energy(k, a, b), (x, y));
        fx * x + fy * y
    }
}

#[test]
fn the_module_attribute_takes_nested_gradients() {
    let (k, x, y): (f64, f64, f64) = (0.8, 0.6, -1.1);
    let exact = (2.0 * k * x + y * (x * y).cos()) * x + (6.0 * k * y + x * (x * y).cos()) * y;
    let native = physics::work(k, x, y);
    assert!((native - exact).abs() < 1e-8, "native {native} vs {exact}");
    let (value, grad) = physics::work::gradient().unwrap().value_and_grad(k, x, y).unwrap();
    assert!((value - exact).abs() < 1e-14, "{value} vs {exact}");
    // ∂/∂k of work = 2x² + 6y².
    assert!((grad[0] - (2.0 * x * x + 6.0 * y * y)).abs() < 1e-13, "{grad:?}");
}

/// Each forward-mode partial is a sweep of its own parameter: at x = ∞, ∂(x·y)/∂x is y, not
/// y·1 + x·0 = NaN, in both modes.
#[test]
fn forward_partials_do_not_see_the_other_seeds() {
    for mode in MODES {
        let text = format!(
            "extern @mul_grad(f64, f64) -> f64, f64 = grad {mode} @mul wrt 0, 1
func @mul(x: f64, y: f64) -> f64 {{
entry:
    p = fmul x, y
    ret p
}}
"
        );
        let m = expand_derivatives(&parse_module(&text).unwrap(), &Default::default()).unwrap();
        let out = interpret(&m, "mul_grad", &mut [ArgValue::F64(f64::INFINITY), ArgValue::F64(2.0)]).unwrap();
        assert_eq!((out[0].as_f64(), out[1].as_f64()), (Some(2.0), Some(f64::INFINITY)), "{mode}");
    }
}

/// `acc += y·sin(x·i)` for i in 0..5: a loop, so the inner reverse gradient keeps state on the
/// tape; every parameter is an `f64`, so its partial gets a custom rule (a row of the Hessian)
/// and reverse mode can differentiate it again.
const RECORDED: &str = "extern @g_dx(f64, f64) -> f64 = grad reverse @g wrt 0
func @g(x: f64, y: f64) -> f64 {
entry:
    zero = iconst 0
    five = iconst 5
    acc0 = fconst 0.0
    jump head(zero, acc0)
head(i: i64, acc: f64):
    more = icmp lt i, five
    br more, body, exit
body:
    fi = itof i
    xi = fmul x, fi
    s = sin xi
    t = fmul y, s
    acc2 = fadd acc, t
    one = iconst 1
    i2 = iadd i, one
    jump head(i2, acc2)
exit:
    ret acc
}
func @h(x: f64, y: f64) -> f64 {
entry:
    d = call @g_dx(x, y)
    r = fmul d, y
    ret r
}
";

#[test]
fn reverse_mode_differentiates_a_recorded_reverse_gradient_by_hessian_rows() {
    let m = parse_module(RECORDED).unwrap();
    // h = y² Σ i cos(x i): ∂h/∂x = -y² Σ i² sin(x i), ∂h/∂y = 2y Σ i cos(x i).
    let (x, y) = (0.3, 1.7);
    let want = [
        -y * y * (0..5).map(|i| (i * i) as f64 * (x * i as f64).sin()).sum::<f64>(),
        2.0 * y * (0..5).map(|i| i as f64 * (x * i as f64).cos()).sum::<f64>(),
    ];
    let reverse = GradientFn::builder(&m, "h").wrt_all().gradient_mode(GradientMode::Reverse).build().unwrap();
    let mut grad = [0.0; 2];
    let value = reverse.value_and_grad(&mut args![x, y], &mut grad).unwrap();
    let h = y * y * (0..5).map(|i| i as f64 * (x * i as f64).cos()).sum::<f64>();
    assert!((value - h).abs() < 1e-13, "{value} vs {h}");
    for k in 0..2 {
        assert!((grad[k] - want[k]).abs() < 1e-12 * want[k].abs().max(1.0), "{grad:?} vs {want:?}");
    }
    let forward = ForwardFn::builder(&m, "h").wrt_all().width(2).build().unwrap();
    let (_, tangents) = forward.jvp(&mut args![x, y], &[&[1.0, 0.0], &[0.0, 1.0]]).unwrap();
    for k in 0..2 {
        assert!((tangents[k] - want[k]).abs() < 1e-12 * want[k].abs().max(1.0), "{tangents:?} vs {want:?}");
    }
    // The rule is what differentiates it: without the expansion's rules, reverse mode refuses.
    let bare = expand_derivatives(&m, &Default::default()).unwrap();
    let err = jitdiff::ad::derive_reverse(&bare, "h", &[true, true]).unwrap_err();
    assert!(matches!(err, AdError::NestedDerivative { .. }), "{err:?}");
}

/// Two levels of declarations, two at the inner level (derived at once) and an outer reverse
/// gradient of a function calling both: `@g = y Σ sin(x i)` as in [`RECORDED`], `@h = g_dx · y +
/// g_dy = y² Σ i cos(x i) + Σ sin(x i)`, and `@top` returning `∇h`.
fn levels() -> String {
    let g = &RECORDED[RECORDED.find("func @g").unwrap()..RECORDED.find("func @h").unwrap()];
    format!(
        "extern @g_dx(f64, f64) -> f64 = grad reverse @g wrt 0
extern @g_dy(f64, f64) -> f64 = grad forward @g wrt 1
extern @h_grad(f64, f64) -> f64, f64 = grad reverse @h wrt 0, 1
{g}func @h(x: f64, y: f64) -> f64 {{
entry:
    dx = call @g_dx(x, y)
    dy = call @g_dy(x, y)
    t = fmul dx, y
    r = fadd t, dy
    ret r
}}
func @top(x: f64, y: f64) -> f64, f64 {{
entry:
    a, b = call @h_grad(x, y)
    ret a, b
}}
"
    )
}

#[test]
fn declarations_of_one_level_expand_together_and_outer_ones_after() {
    let m = parse_module(&levels()).unwrap();
    let (x, y) = (0.3, 1.7);
    let sum = |f: &dyn Fn(f64) -> f64| (0..5).map(|i| f(i as f64)).sum::<f64>();
    let want =
        [-y * y * sum(&|i| i * i * (x * i).sin()) + sum(&|i| i * (x * i).cos()), 2.0 * y * sum(&|i| i * (x * i).cos())];
    let (with_rules, rules) = jitdiff::ad::expand_derivatives_with_rules(&m, &Default::default()).unwrap();
    let bare = expand_derivatives(&m, &Default::default()).unwrap();
    for expanded in [&with_rules, &bare] {
        let out = interpret(expanded, "top", &mut [ArgValue::F64(x), ArgValue::F64(y)]).unwrap();
        for k in 0..2 {
            let got = out[k].as_f64().unwrap();
            assert!((got - want[k]).abs() < 1e-12 * want[k].abs().max(1.0), "{out:?} vs {want:?}");
        }
    }
    // The same module whichever thread derived what.
    let again = jitdiff::ad::expand_derivatives_with_rules(&m, &Default::default()).unwrap().0;
    assert_eq!(print_module(&again), print_module(&with_rules));
    // `@g_dx` keeps its state on the tape and `@h_grad` differentiates it: its partial gets a
    // rule in both expansions. `@h_grad` (recorded too, since `@h` calls a fenced gradient) gets
    // one only when the caller may differentiate the result.
    assert!(bare.func_id("g_dx__partial_0").is_some() && with_rules.func_id("g_dx__partial_0").is_some());
    assert!(rules.lookup("h_grad__partial_0").is_some(), "{}", print_module(&with_rules));
    assert!(bare.func_id("h_grad__partial_0").is_none(), "{}", print_module(&bare));
    let primal = PrimalFn::builder(&m, "top").build().unwrap();
    let out = primal.call(&mut args![x, y]).unwrap();
    assert!((out[1].as_f64().unwrap() - want[1]).abs() < 1e-12 * want[1].abs(), "{out:?}");
}

/// Forward mode over a pullback that writes into the adjoint of a local array the primal never
/// made active (constants stored, then passed to a call): the pullback's writes depend on the
/// tape, so the array's adjoint is active (found by the harness's nested-AD check; `HvpFn`
/// refused the same program).
#[test]
fn forward_over_a_pullback_into_a_constant_local_arrays_adjoint() {
    let text = "func @scaled_cube(x: f64, s: slice) -> f64 {
entry:
    zero = iconst 0
    c = load s, zero
    x2 = fmul x, x
    x3 = fmul x2, x
    r = fmul c, x3
    ret r
}
func @main(x: f64) -> f64 {
entry:
    one = iconst 1
    a = alloc one
    zero = iconst 0
    k = fconst 1.5
    store a, zero, k
    r = call @scaled_cube(x, a)
    ret r
}
";
    let m = parse_module(text).unwrap();
    let hvp = jitdiff::HvpFn::builder(&m, "main").wrt(["x"]).build().unwrap();
    let mut product = [0.0];
    hvp.hvp(&mut args![2.0], &[1.0], &mut product).unwrap();
    assert_eq!(product[0], 9.0 * 2.0, "d²(1.5 x³)/dx² = 9x");
}

/// A `fn` of one `f64` parameter passed by name, as `grad(f)(x)` in JAX; natively too.
#[test]
fn a_function_passed_by_name_is_differentiated() {
    fn cube(x: f64) -> f64 {
        x * x * x
    }
    fn slope(x: f64) -> f64 {
        jitdiff::grad_forward(cube, x) + jitdiff::grad_reverse(cube, x)
    }
    let source = "fn cube(x: f64) -> f64 {\n    x * x * x\n}\nfn slope(x: f64) -> f64 {\n    jitdiff::grad_forward(cube, x) + jitdiff::grad_reverse(cube, x)\n}\n";
    let m = jitdiff::front::lower_source(source).unwrap();
    let out = PrimalFn::builder(&m, "slope").build().unwrap().call(&mut args![2.0]).unwrap();
    assert_eq!(out[0].as_f64(), Some(24.0));
    assert!((slope(2.0) - 24.0).abs() < 1e-7, "native {}", slope(2.0));
    let g = GradientFn::builder(&m, "slope").wrt_all().build().unwrap();
    let mut grad = [0.0];
    g.value_and_grad(&mut args![2.0], &mut grad).unwrap();
    assert_eq!(grad[0], 24.0, "d/dx 6x² = 12x");
}
