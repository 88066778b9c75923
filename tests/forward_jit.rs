//! Derived forward-mode IR runs identically under the interpreter and the JIT, at every width.

use jitdiff::ad::derive_forward;
use jitdiff::ir::{ArgValue, ExternRegistry, Interpreter, RuntimeValue, parse_module};
use jitdiff::jit::{Arg, JitOptions, compile};
use jitdiff::problems::{Gmm, Mlp, Pendulum, Problem, Rosenbrock, SplitMix64};

fn check(problem: &dyn Problem, width: u8) {
    let module = parse_module(problem.ir()).unwrap();
    let args = problem.args();
    let wrt: Vec<bool> = (0..args.len()).map(|i| problem.active_params().contains(&i)).collect();
    let derived = derive_forward(&module, problem.entry(), &wrt, width).unwrap();
    let mut rng = SplitMix64::new(u64::from(width));
    let mut all = args.clone();
    for (a, _) in args.iter().zip(&wrt).filter(|(_, on)| **on) {
        let n = match a {
            ArgValue::F64(_) => 1,
            other => other.as_slice().unwrap().len(),
        } * width as usize;
        let t: Vec<f64> = (0..n).map(|_| rng.uniform_in(-1.0, 1.0)).collect();
        all.push(match (a, width) {
            (ArgValue::F64(_), 1) => ArgValue::F64(t[0]),
            (ArgValue::F64(_), _) => ArgValue::Vector(t),
            _ => ArgValue::Slice(t),
        });
    }
    let expected = Interpreter::new(&derived.module).call(&derived.name, &mut all.clone()).unwrap();
    let compiled = compile(&derived.module, &ExternRegistry::new(), &JitOptions::new()).unwrap();
    let f = compiled.function(&derived.name).unwrap();
    let mut native_args: Vec<Arg<'_>> = all
        .iter()
        .map(|a| match a {
            ArgValue::F64(x) => Arg::F64(*x),
            ArgValue::I64(x) => Arg::I64(*x),
            ArgValue::Bool(x) => Arg::Bool(*x),
            ArgValue::Vector(v) => Arg::Vector(v),
            ArgValue::Slice(v) | ArgValue::SliceMut(v) => Arg::Slice(v),
        })
        .collect();
    let got = f.call(&mut native_args).unwrap();
    assert_eq!(got, expected, "{} at width {width}", problem.label());
    assert!(matches!(got.last(), Some(RuntimeValue::F64(_) | RuntimeValue::Vector(_))));
}

#[test]
fn derived_forward_ir_agrees_between_interpreter_and_jit() {
    for width in [1, 2, 4, 8, 16] {
        check(&Rosenbrock::new(50), width);
        check(&Gmm::generate(2, 3, 20, 5), width);
        check(&Pendulum::with_steps(50), width);
        check(&Mlp::generate(4, 5, 6, 9), width);
    }
}
