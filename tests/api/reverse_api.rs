//! Compiled reverse mode: gradients match central finite differences and the interpreter on the
//! benchmark problems, `value_and_grad` allocates nothing after warm-up, a `Pullback` can be
//! applied to many cotangents, and a long loop differentiates with its tape released afterwards.

use super::agree_to_rounding;
use super::fixtures::LONG_LOOP;
use jitdiff::ir::{ArgValue, Interpreter, Tape, parse_module};
use jitdiff::jit::Arg;
use jitdiff::jit::alloc_count::allocations_on_this_thread;
use jitdiff::{GradientFn, GradientMode, ir::ExternRegistry};
use jitdiff_problems::{Gmm, Mlp, Pendulum, Problem, Rosenbrock};

fn native_args(values: &[ArgValue]) -> Vec<Arg<'_>> {
    values
        .iter()
        .map(|a| match a {
            ArgValue::F64(x) => Arg::F64(*x),
            ArgValue::I64(x) => Arg::I64(*x),
            ArgValue::Bool(x) => Arg::Bool(*x),
            ArgValue::Vector(v) => Arg::Vector(v),
            ArgValue::Slice(v) | ArgValue::SliceMut(v) => Arg::Slice(v),
        })
        .collect()
}

fn wrt_of(problem: &dyn Problem) -> Vec<bool> {
    (0..problem.args().len()).map(|i| problem.active_params().contains(&i)).collect()
}

fn value_at(f: &jitdiff::jit::CompiledFn, args: &[ArgValue]) -> f64 {
    f.call(&mut native_args(args)).unwrap()[0].as_f64().unwrap()
}

/// Every gradient entry against a central difference of the JIT-compiled primal.
fn check_against_finite_differences(problem: &dyn Problem) {
    let module = parse_module(problem.ir()).unwrap();
    let args = problem.args();
    let f = GradientFn::builder(&module, problem.entry())
        .wrt_mask(&wrt_of(problem))
        .gradient_mode(GradientMode::Reverse)
        .build()
        .unwrap();
    let size: usize = problem.active_params().iter().map(|&i| args[i].as_slice().map_or(1, <[f64]>::len)).sum();
    let mut grad = vec![0.0; size];
    let value = f.value_and_grad(&mut native_args(&args), &mut grad).unwrap();
    assert!((value - problem.reference()).abs() <= 1e-12 * problem.reference().abs().max(1.0));
    let primal = jitdiff::jit::compile(&module, &ExternRegistry::new(), &Default::default()).unwrap();
    let primal = primal.function(problem.entry()).unwrap();
    let mut k = 0;
    for &i in problem.active_params() {
        let n = args[i].as_slice().map_or(1, <[f64]>::len);
        for e in 0..n {
            let shifted = |h: f64| {
                let mut a = args.clone();
                match &mut a[i] {
                    ArgValue::F64(x) => *x += h,
                    ArgValue::Slice(v) | ArgValue::SliceMut(v) => v[e] += h,
                    _ => unreachable!(),
                }
                a
            };
            let x0 = match &args[i] {
                ArgValue::F64(x) => *x,
                other => other.as_slice().unwrap()[e],
            };
            let h = 1e-6 * x0.abs().max(1.0);
            let fd = (value_at(&primal, &shifted(h)) - value_at(&primal, &shifted(-h))) / (2.0 * h);
            let scale = grad[k].abs().max(fd.abs()).max(1e-2 * value.abs().max(1.0) * 1e-3);
            assert!(
                (grad[k] - fd).abs() / scale <= 1e-6,
                "{}: d/d(param {i}[{e}]) = {} vs FD {fd}",
                problem.label(),
                grad[k]
            );
            k += 1;
        }
    }
}

#[test]
fn gradients_match_central_differences() {
    check_against_finite_differences(&Rosenbrock::new(20));
    check_against_finite_differences(&Gmm::generate(2, 3, 15, 3));
    check_against_finite_differences(&Pendulum::with_steps(200));
    check_against_finite_differences(&Mlp::generate(3, 4, 5, 1));
}

#[test]
fn jit_and_interpreter_agree_on_the_derived_value_and_grad() {
    let problems: Vec<Box<dyn Problem>> = vec![
        Box::new(Rosenbrock::new(50)),
        Box::new(Gmm::generate(2, 5, 40, 1)),
        Box::new(Pendulum::with_steps(100)),
        Box::new(Mlp::generate(4, 6, 8, 2)),
    ];
    for p in problems {
        let module = parse_module(p.ir()).unwrap();
        let f = GradientFn::builder(&module, p.entry()).wrt_mask(&wrt_of(p.as_ref())).build().unwrap();
        let d = f.derivative();
        let compiled = jitdiff::jit::compile(&d.module, &ExternRegistry::new(), &Default::default()).unwrap();
        let interp = Interpreter::new(&d.module);
        let mut args = p.args();
        for &i in p.active_params() {
            if let Some(s) = args[i].as_slice() {
                args.push(ArgValue::SliceMut(vec![0.0; s.len()]));
            }
        }
        let r = jitdiff::jit::differential_call_with_tape(
            &compiled,
            &interp,
            d.value_and_grad.as_ref().unwrap(),
            &args,
            &Tape::new(),
        );
        assert!(r.is_ok(), "{}: {r:?}", p.label());
    }
}

#[test]
fn value_and_grad_allocates_nothing_after_warm_up() {
    let module = parse_module(jitdiff_problems::pendulum::PENDULUM_IR).unwrap();
    let p = Pendulum::standard();
    let args = p.args();
    let f = GradientFn::builder(&module, "pendulum").wrt_mask(&wrt_of(&p)).build().unwrap();
    let mut grad = [0.0; 3];
    f.value_and_grad(&mut native_args(&args), &mut grad).unwrap();
    let mut native = native_args(&args);
    let before = allocations_on_this_thread();
    for _ in 0..10_000 {
        f.value_and_grad(&mut native, &mut grad).unwrap();
    }
    assert_eq!(allocations_on_this_thread() - before, 0);
}

#[test]
fn a_pullback_serves_many_cotangents() {
    let module = parse_module(jitdiff_problems::rosenbrock::ROSENBROCK_IR).unwrap();
    let x = jitdiff_problems::rosenbrock::standard_start(10);
    let f = GradientFn::builder(&module, "rosenbrock").wrt_mask(&[true]).build().unwrap();
    let (values, mut pullback) = f.pullback(&mut [Arg::Slice(&x)]).unwrap();
    assert_eq!(values[0].as_f64().unwrap(), jitdiff_problems::rosenbrock::rosenbrock(&x));
    let g1 = pullback.apply(&[1.0]).unwrap();
    let g3 = pullback.apply(&[3.0]).unwrap();
    for (a, b) in g1.iter().zip(&g3) {
        assert!((3.0 * a - b).abs() <= 1e-14 * b.abs(), "{a} vs {b}");
    }
    assert!(pullback.state_bytes() > 0);
    assert!(pullback.apply(&[1.0, 2.0]).is_err());
}

/// sum_{i < n} sin(x * i) over a loop of n iterations: d/dx = sum i cos(x i).
#[test]
fn ten_million_iterations_differentiate_and_release_their_tape() {
    let module = parse_module(LONG_LOOP).unwrap();
    let f = GradientFn::builder(&module, "long")
        .wrt_mask(&[true, false])
        .gradient_mode(GradientMode::Reverse)
        .build()
        .unwrap();
    let n = 10_000_000i64;
    let x = 1e-7;
    let mut grad = [0.0];
    let value = f.value_and_grad(&mut [Arg::F64(x), Arg::I64(n)], &mut grad).unwrap();
    let (mut want_value, mut want_grad) = (0.0, 0.0);
    for i in 0..n {
        let fi = i as f64;
        want_value += (x * fi).sin();
        want_grad += (x * fi).cos() * fi;
    }
    assert!((value - want_value).abs() <= 1e-9 * want_value.abs());
    assert!((grad[0] - want_grad).abs() <= 1e-9 * want_grad.abs(), "{} vs {want_grad}", grad[0]);
    let per_iteration = f.tape_bytes() as f64 / n as f64;
    // One entry per iteration: the partial cos(x i). The loop index and its float are
    // recomputed from the trip count, and the loop header records nothing per iteration.
    assert!(per_iteration <= 8.001, "{per_iteration} tape bytes per iteration");
    eprintln!("tape: {per_iteration} bytes per iteration");
    // The 80 MB tape was freed after the call (the per-thread scratch keeps small tapes only).
}

/// A pullback state whose loop runs far longer than intended (a loop bound read from data,
/// here 2^40) stops with the documented `TapeAllocation` error at the tape limit given in
/// `JitOptions::tape_limit`, instead of taking the machine's memory; with a sane bound the
/// same handle works. (`vjp` records the state; `value_and_grad` of this loop needs no tape,
/// its reversed loop running fused with the forward one — see `tests/api/fused.rs`.)
#[test]
fn a_tape_limit_stops_a_runaway_gradient() {
    let module = parse_module(LONG_LOOP).unwrap();
    let options = jitdiff::jit::JitOptions::new().tape_limit(1 << 20);
    let g = GradientFn::builder(&module, "long")
        .wrt_mask(&[true, false])
        .gradient_mode(GradientMode::Reverse)
        .externs(&ExternRegistry::new())
        .options(&options)
        .build()
        .unwrap();
    let mut grad = [0.0];
    let err = g.vjp(&mut [Arg::F64(0.3), Arg::I64(1 << 40)], &[1.0], &mut grad).unwrap_err();
    assert!(err.to_string().contains("could not grow the pullback state"), "{err}");
    assert!(g.tape_bytes() <= 1 << 20, "tape {} bytes", g.tape_bytes());
    g.vjp(&mut [Arg::F64(0.3), Arg::I64(100)], &[1.0], &mut grad).unwrap();
    assert!(grad[0].is_finite());
}

/// `value_and_grad` takes one of two call paths: an argument frame for signatures of up to 16
/// slots in which every parameter that carries a derivative is an input, the general argument
/// list otherwise. Both give what a separate forward run and pullback give (`vjp` with
/// cotangent 1), to rounding (the loop here runs fused, see [`agree_to_rounding`]), for f64 and
/// slice inputs in any order.
#[test]
fn both_call_paths_of_value_and_grad_agree_with_vjp() {
    let src = "func @f(a: f64, x: slice, n: i64, b: f64, y: slice) -> f64 {
entry:
    zero = iconst 0
    one = iconst 1
    acc0 = fmul a, b
    jump head(zero, acc0)
head(i: i64, acc: f64):
    more = icmp lt i, n
    br more, body, done
body:
    xi = load x, i
    yi = load y, i
    p = fmul xi, yi
    s = sin p
    t = fmul s, a
    acc2 = fadd acc, t
    i2 = iadd i, one
    jump head(i2, acc2)
done:
    e = fmul acc, b
    ret e
}";
    let module = parse_module(src).unwrap();
    let (x, y) = ([0.3, -1.2, 2.5], [1.1, 0.4, -0.7]);
    for wrt in [vec!["a", "x", "b", "y"], vec!["x"], vec!["b"], vec!["y", "a"]] {
        let f =
            GradientFn::builder(&module, "f").wrt(wrt.clone()).gradient_mode(GradientMode::Reverse).build().unwrap();
        let mut args = [Arg::F64(0.8), Arg::Slice(&x), Arg::I64(3), Arg::F64(-1.3), Arg::Slice(&y)];
        let inputs = f.inputs(&args);
        let (mut grad, mut want) = (vec![f64::NAN; inputs], vec![0.0; inputs]);
        let value = f.value_and_grad(&mut args, &mut grad).unwrap();
        let results = f.vjp(&mut args, &[1.0], &mut want).unwrap();
        assert_eq!(results[0].as_f64(), Some(value), "{wrt:?}");
        assert!(agree_to_rounding(&grad, &want), "{wrt:?}: {grad:?} against {want:?}");
        // Wrong lengths and kinds are the user's errors on the framed path too.
        let err = f.value_and_grad(&mut args, &mut vec![0.0; inputs + 1]).unwrap_err();
        assert!(matches!(err, jitdiff::Error::BufferLength { .. }), "{err}");
        let err = f.value_and_grad(&mut args[..4], &mut grad).unwrap_err();
        assert!(matches!(err, jitdiff::Error::ArgumentCount { .. }), "{err}");
        let mut bad = [Arg::F64(0.8), Arg::F64(0.0), Arg::I64(3), Arg::F64(-1.3), Arg::Slice(&y)];
        let err = f.value_and_grad(&mut bad, &mut grad).unwrap_err();
        assert!(matches!(err, jitdiff::Error::ArgumentType { index: 1, .. }), "{err}");
    }
    // Nine slices: 18 argument slots, more than a frame holds, so the general path.
    let params = (0..9).map(|k| format!("s{k}: slice")).collect::<Vec<_>>().join(", ");
    let mut body = String::from("entry:\n    i = iconst 0\n    acc0 = fconst 0.0\n");
    for k in 0..9 {
        body += &format!("    v{k} = load s{k}, i\n    q{k} = fmul v{k}, v{k}\n    acc{} = fadd acc{k}, q{k}\n", k + 1);
    }
    let module = parse_module(&format!("func @wide({params}) -> f64 {{\n{body}    ret acc9\n}}")).unwrap();
    let f = GradientFn::builder(&module, "wide").wrt_all().build().unwrap();
    let data: Vec<[f64; 1]> = (0..9).map(|k| [k as f64 - 3.5]).collect();
    let mut args: Vec<Arg<'_>> = data.iter().map(|d| Arg::Slice(d)).collect();
    let (mut grad, mut want) = ([f64::NAN; 9], [0.0; 9]);
    let value = f.value_and_grad(&mut args, &mut grad).unwrap();
    f.vjp(&mut args, &[1.0], &mut want).unwrap();
    assert_eq!(value, data.iter().map(|d| d[0] * d[0]).sum::<f64>());
    assert_eq!(grad, want);
    assert_eq!(grad[0], 2.0 * -3.5);
}
