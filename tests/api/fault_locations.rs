//! Run-time faults reported in the user's terms: a fault of the user's own instruction names the
//! user's function and, with a source map, the line and column of that instruction — whichever
//! derived function (forward sweep, value-and-gradient, pullback) actually faulted; a fault that
//! only derivative code has says so. No message names a derived function.

use jitdiff::ir::parse_module_with_spans;
use jitdiff::{Error, ForwardFn, GradientFn, GradientMode, HvpFn, JacobianFn, args};

/// `@f` reads `s[k]` at line 5, column 5 (the `load`), inside a loop from line 9.
const PROGRAM: &str = "func @f(x: f64, s: slice, k: i64) -> f64 {
entry:
    zero = iconst 0
    one = iconst 1
    v = load s, k
    p = fmul v, x
    jump head(zero, p)
head(i: i64, acc: f64):
    more = icmp lt i, k
    br more, body, exit
body:
    w = load s, i
    q = fmul w, acc
    i2 = iadd i, one
    jump head(i2, q)
exit:
    ret acc
}";

/// Names the derived functions carry (`@f_jvp_w4`, `@f_fwd`, `@f_vg`, `@f_pullback` ...).
fn names_no_derived_function(message: &str) {
    for suffix in ["_jvp", "_fwd", "_vg", "_pullback", "_hvp", "_lanes", "loop_body"] {
        assert!(!message.contains(suffix), "names derived code ({suffix}): {message}");
    }
}

fn assert_user_fault(e: &Error, line: usize, col: usize) {
    let message = e.to_string();
    assert!(matches!(e, Error::Fault { in_derivative: false, .. }), "{e:?}");
    assert!(message.starts_with("@f: index 7 out of bounds for a slice of length 3"), "{message}");
    assert!(message.contains(&format!("at line {line}, column {col}")), "{message}");
    names_no_derived_function(&message);
}

#[test]
fn an_out_of_bounds_read_names_the_users_line_in_every_handle() {
    let (module, spans) = parse_module_with_spans(PROGRAM).unwrap();
    let s = [1.0, 2.0, 3.0];
    let gradient = GradientFn::builder(&module, "f").wrt(["x", "s"]).source_map(&spans).build().unwrap();
    let e = gradient.value_and_grad(&mut args![2.0, &s, 7i64], &mut [0.0; 4]).unwrap_err();
    assert_user_fault(&e, 5, 5);
    let e = gradient.pullback(&mut args![2.0, &s, 7i64]).unwrap_err();
    assert_user_fault(&e, 5, 5);
    let e = gradient.vjp(&mut args![2.0, &s, 7i64], &[1.0], &mut [0.0; 4]).unwrap_err();
    assert_user_fault(&e, 5, 5);
    // Reverse mode's fused function, the forward function and pullback inlined into it.
    let reverse = GradientFn::builder(&module, "f")
        .wrt(["x", "s"])
        .gradient_mode(GradientMode::Reverse)
        .source_map(&spans)
        .build()
        .unwrap();
    let e = reverse.value_and_grad(&mut args![2.0, &s, 7i64], &mut [0.0; 4]).unwrap_err();
    assert_user_fault(&e, 5, 5);
    for width in [1, 4] {
        let forward = ForwardFn::builder(&module, "f").wrt(["x"]).width(width).source_map(&spans).build().unwrap();
        let e = forward.jvp(&mut args![2.0, &s, 7i64], &[&vec![1.0; width as usize]]).unwrap_err();
        assert_user_fault(&e, 5, 5);
    }
    let hvp = HvpFn::builder(&module, "f").wrt(["x"]).source_map(&spans).build().unwrap();
    let e = hvp.hvp(&mut args![2.0, &s, 7i64], &[1.0], &mut [0.0]).unwrap_err();
    assert_user_fault(&e, 5, 5);
    let jacobian = JacobianFn::builder(&module, "f").wrt(["s"]).source_map(&spans).build().unwrap();
    let e = jacobian.jacobian(&mut args![2.0, &s, 7i64]).unwrap_err();
    assert_user_fault(&e, 5, 5);
}

#[test]
fn without_a_source_map_the_fault_names_block_and_instruction() {
    let (module, _) = parse_module_with_spans(PROGRAM).unwrap();
    for mode in [GradientMode::Auto, GradientMode::Reverse] {
        let gradient = GradientFn::builder(&module, "f").wrt(["x"]).gradient_mode(mode).build().unwrap();
        let e = gradient.value_and_grad(&mut args![2.0, &[1.0, 2.0, 3.0], 7i64], &mut [0.0]).unwrap_err();
        let message = e.to_string();
        assert!(
            message.contains("@f: index 7 out of bounds") && message.contains("block entry, instruction 2"),
            "{mode:?}: {message}"
        );
        names_no_derived_function(&message);
    }
}

#[test]
fn a_fault_of_a_called_function_names_both() {
    let text = "func @g(s: slice, k: i64) -> f64 {
entry:
    v = load s, k
    ret v
}
func @f(x: f64, s: slice, k: i64) -> f64 {
entry:
    v = call @g(s, k)
    p = fmul v, x
    ret p
}";
    let (module, spans) = parse_module_with_spans(text).unwrap();
    let gradient = GradientFn::builder(&module, "f").wrt(["x"]).source_map(&spans).build().unwrap();
    let e = gradient.value_and_grad(&mut args![2.0, &[1.0], 3i64], &mut [0.0]).unwrap_err();
    let message = e.to_string();
    assert!(message.contains("@f: index 3 out of bounds"), "{message}");
    assert!(message.contains("at line 3, column 5 of @g, which it calls"), "{message}");
    names_no_derived_function(&message);
}

#[test]
fn a_fault_only_derivative_code_has_says_so() {
    // A loop of 2^40 iterations with a tape limit of 1 MiB: the function alone just runs long;
    // its gradient runs out of tape.
    let text = "func @f(x: f64, n: i64) -> f64 {
entry:
    zero = iconst 0
    one = iconst 1
    jump head(zero, x)
head(i: i64, acc: f64):
    more = icmp lt i, n
    br more, body, exit
body:
    s = sin acc
    i2 = iadd i, one
    jump head(i2, s)
exit:
    ret acc
}";
    let (module, spans) = parse_module_with_spans(text).unwrap();
    let options = jitdiff::jit::JitOptions::new().tape_limit(1 << 20);
    // The pullback state is reverse mode's (forward mode, which records none, would run on).
    let gradient = GradientFn::builder(&module, "f")
        .wrt(["x"])
        .options(&options)
        .source_map(&spans)
        .gradient_mode(GradientMode::Reverse)
        .build()
        .unwrap();
    let e = gradient.value_and_grad(&mut args![0.5, 1i64 << 40], &mut [0.0]).unwrap_err();
    let message = e.to_string();
    assert!(message.starts_with("@f: could not grow the pullback state"), "{message}");
    assert!(message.contains("JitOptions::tape_limit"), "{message}");
    names_no_derived_function(&message);
}

/// A Rust function that asserts and panics: each panic is a `Panic` fault at the macro's line
/// and column, in the primal and in every derivative, and an input that passes the checks gets
/// the same value and gradient as the function without them.
const CHECKED: &str = "fn f(x: &[f64], n: usize) -> f64 {
    assert!(x.len() >= n, \"need {} values\", n);
    assert_eq!(n % 2, 0);
    debug_assert!(x[100] > 0.0);
    let mut s = 0.0;
    for i in 0..n {
        s += match i % 3 {
            0 => x[i] * x[i],
            1 => x[i].sin(),
            2 => 1.0,
            _ => unreachable!(),
        };
        if s > 1e6 {
            panic!(\"diverged at {}\", i);
        }
    }
    s
}";

#[test]
fn a_panic_in_rust_source_names_its_line_in_every_handle() {
    use jitdiff::PrimalFn;
    let lowered = jitdiff::front::lower_source_as_written(CHECKED).unwrap();
    let module = &lowered.module;
    let primal = PrimalFn::builder(module, "f").rust_source(&lowered).build().unwrap();
    let mut gradients = vec![];
    for mode in [GradientMode::Auto, GradientMode::Reverse] {
        gradients.push(
            GradientFn::builder(module, "f").wrt(["x"]).gradient_mode(mode).rust_source(&lowered).build().unwrap(),
        );
    }
    let forward = ForwardFn::builder(module, "f").wrt(["x"]).width(4).rust_source(&lowered).build().unwrap();
    let hvp = HvpFn::builder(module, "f").wrt(["x"]).rust_source(&lowered).build().unwrap();
    let expect_panic = |e: Error, line: usize, col: usize| {
        let message = e.to_string();
        assert!(matches!(&e, Error::Fault { in_derivative: false, .. }), "{e:?}");
        assert!(message.starts_with("@f: explicit panic"), "{message}");
        assert!(message.contains(&format!("at line {line}, column {col}")), "{message}");
        names_no_derived_function(&message);
    };
    let x = [0.5, 1.0, 2.0, 3.0];
    let big = [2000.0, 1.0, 2.0, 3.0];
    // (n, x, line and column of the panic): too few values, an odd count, divergence.
    for (n, x, line, col) in [(6usize, &x, 2, 5), (3, &x, 3, 5), (4, &big, 14, 13)] {
        expect_panic(primal.call(&mut args![&x[..], n]).unwrap_err(), line, col);
        for gradient in &gradients {
            expect_panic(gradient.value_and_grad(&mut args![&x[..], n], &mut [0.0; 4]).unwrap_err(), line, col);
        }
        let tangents = vec![1.0; 16];
        expect_panic(forward.jvp(&mut args![&x[..], n], &[&tangents]).unwrap_err(), line, col);
        expect_panic(hvp.hvp(&mut args![&x[..], n], &[1.0; 4], &mut [0.0; 4]).unwrap_err(), line, col);
    }
    // Checks that pass: s = x0^2 + sin x1 + 1 + x3^2, the debug assertion compiled out.
    let expected = [2.0 * x[0], x[1].cos(), 0.0, 2.0 * x[3]];
    for gradient in &gradients {
        let mut grad = [0.0; 4];
        let value = gradient.value_and_grad(&mut args![&x[..], 4usize], &mut grad).unwrap();
        assert_eq!(value, x[0] * x[0] + x[1].sin() + 1.0 + x[3] * x[3]);
        assert_eq!(grad, expected);
    }
}

/// `@f` calls `@term` per element; `@term` reads `s[i + k]`. A primal handle inlines such calls
/// (the JIT alone keeps calls whose callee can fail): its results are the interpreter's, and a
/// fault inside the inlined body still names `@term`'s own instruction.
#[test]
fn a_primal_with_inlined_calls_reports_the_callees_fault() {
    use jitdiff::PrimalFn;
    use jitdiff::ir::{ArgValue, Interpreter, RuntimeValue, parse_module};
    let m = parse_module(
        "func @f(s: slice, k: i64, n: i64) -> f64 {
entry:
    zero = iconst 0
    one = iconst 1
    fzero = fconst 0.0
    jump head(zero, fzero)
head(i: i64, acc: f64):
    more = icmp lt i, n
    br more, body, exit
body:
    t = call @term(s, i, k)
    acc2 = fadd acc, t
    i2 = iadd i, one
    jump head(i2, acc2)
exit:
    ret acc
}
func @term(s: slice, i: i64, k: i64) -> f64 {
entry:
    j = iadd i, k
    v = load s, j
    sq = fmul v, v
    ret sq
}",
    )
    .unwrap();
    let primal = PrimalFn::builder(&m, "f").build().unwrap();
    let s = [1.0, 2.0, 3.0, 4.0, 5.0];
    let interpreted = |k: i64, n: i64| {
        Interpreter::new(&m).call("f", &mut [ArgValue::Slice(s.to_vec()), ArgValue::I64(k), ArgValue::I64(n)]).ok()
    };
    for (k, n) in [(0, 5), (1, 4), (2, 0)] {
        let native = primal.call(&mut args![&s[..], k, n]).unwrap();
        let reference = interpreted(k, n).expect("the interpreter runs it");
        assert_eq!(native, reference);
        assert!(matches!(native[0], RuntimeValue::F64(v) if v > 0.0 || n == 0));
    }
    // s[2 + 3] is out of bounds on the fourth call of @term.
    let e = primal.call(&mut args![&s[..], 2i64, 4i64]).unwrap_err();
    let Error::Fault { fault, in_derivative: false, .. } = &e else { panic!("{e:?}") };
    assert_eq!(fault.site().func, "term", "{e}");
    assert_eq!(fault.site().inst, 1, "{e}");
    assert!(e.to_string().contains("index 5 out of bounds for a slice of length 5"), "{e}");
    assert!(interpreted(2, 4).is_none());

    // The forward and HVP handles inline the derived calls too: their values agree with reverse
    // mode's, and the same fault names the same instruction of @term.
    let gradient = GradientFn::builder(&m, "f").wrt(["s"]).gradient_mode(GradientMode::Reverse).build().unwrap();
    let forward = ForwardFn::builder(&m, "f").wrt(["s"]).build().unwrap();
    let hvp = HvpFn::builder(&m, "f").wrt(["s"]).build().unwrap();
    let v = [0.5, -1.0, 2.0, 0.25, 1.5];
    let mut g = [0.0; 5];
    gradient.value_and_grad(&mut args![&s[..], 1i64, 4i64], &mut g).unwrap();
    let (_, tangent) = forward.jvp(&mut args![&s[..], 1i64, 4i64], &[&v]).unwrap();
    let dot: f64 = g.iter().zip(&v).map(|(a, b)| a * b).sum();
    assert!((tangent[0] - dot).abs() <= 1e-12 * dot.abs(), "{tangent:?} vs {dot}");
    // f = sum of s[i + 1]^2 for i < 4: H = 2 on s[1..5].
    let mut product = [0.0; 5];
    hvp.hvp(&mut args![&s[..], 1i64, 4i64], &v, &mut product).unwrap();
    assert_eq!(product, [0.0, -2.0, 4.0, 0.5, 3.0]);
    for e in [
        forward.jvp(&mut args![&s[..], 2i64, 4i64], &[&v]).unwrap_err(),
        hvp.hvp(&mut args![&s[..], 2i64, 4i64], &v, &mut product).unwrap_err(),
    ] {
        let Error::Fault { fault, in_derivative: false, .. } = &e else { panic!("{e:?}") };
        assert_eq!((fault.site().func.as_str(), fault.site().inst), ("term", 1), "{e}");
    }
}
