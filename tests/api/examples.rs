//! The benchmark programs of `examples/ir/`: each parses, verifies, prints back to itself, and —
//! run in the reference interpreter — agrees with its plain-Rust reference in
//! `jitdiff_problems` to a relative error of 1e-12, at several sizes.

use jitdiff_ir::{ArgValue, Interpreter, Module, RuntimeValue, Type, parse_module, print_module, verify_module};
use jitdiff_problems::gmm::{self, Wishart};
use jitdiff_problems::{Gmm, Mlp, Pendulum, Problem, Rosenbrock, relative_error, standard_problems};

const TOLERANCE: f64 = 1e-12;

/// Parse and verify a problem's IR, with messages that name the problem.
fn module_of(problem: &dyn Problem) -> Module {
    let module = parse_module(problem.ir()).unwrap_or_else(|e| panic!("{}: parse error: {e}", problem.label()));
    verify_module(&module).unwrap_or_else(|e| panic!("{}: verify error: {e}", problem.label()));
    module
}

/// Run the problem's entry function in the interpreter and return its single f64 result.
fn interpret(problem: &dyn Problem) -> f64 {
    let module = module_of(problem);
    let mut args = problem.args();
    let results = Interpreter::new(&module)
        .call(problem.entry(), &mut args)
        .unwrap_or_else(|e| panic!("{}: interpreter error: {e}", problem.label()));
    match results.as_slice() {
        [RuntimeValue::F64(v)] => *v,
        other => panic!("{}: expected one f64 result, got {other:?}", problem.label()),
    }
}

/// The interpreted IR agrees with the Rust reference.
fn assert_matches_reference(problem: &dyn Problem) {
    let got = interpret(problem);
    let want = problem.reference();
    assert!(want.is_finite(), "{}: reference is {want}", problem.label());
    let err = relative_error(got, want);
    assert!(err <= TOLERANCE, "{}: IR gives {got:e}, reference {want:e} (relative error {err:e})", problem.label());
}

#[test]
fn every_program_parses_verifies_and_prints_back_to_itself() {
    for problem in standard_problems() {
        let module = module_of(problem.as_ref());
        let printed = print_module(&module);
        let reparsed = parse_module(&printed).unwrap_or_else(|e| panic!("{}: printed text: {e}", problem.label()));
        assert_eq!(reparsed, module, "{}: print/parse round trip changed the module", problem.label());
    }
}

#[test]
fn standard_arguments_fit_the_entry_signatures() {
    for problem in standard_problems() {
        let module = module_of(problem.as_ref());
        let func = module
            .func_by_name(problem.entry())
            .unwrap_or_else(|| panic!("{}: no function @{}", problem.label(), problem.entry()));
        assert_eq!(func.returns, vec![Type::F64], "{}", problem.label());
        let params = func.param_types();
        let args = problem.args();
        assert_eq!(args.len(), params.len(), "{}", problem.label());
        for (i, (arg, ty)) in args.iter().zip(&params).enumerate() {
            let fits = matches!(
                (arg, ty),
                (ArgValue::F64(_), Type::F64)
                    | (ArgValue::I64(_), Type::I64)
                    | (ArgValue::Bool(_), Type::Bool)
                    | (ArgValue::Slice(_), Type::Slice)
            );
            assert!(fits, "{}: argument {i} is {} for a {ty} parameter", problem.label(), arg.kind());
        }
        for &active in problem.active_params() {
            assert!(params[active] == Type::Slice || params[active] == Type::F64, "{}", problem.label());
        }
        assert!(problem.reference().is_finite(), "{}", problem.label());
    }
}

#[test]
fn rosenbrock_matches_reference() {
    for n in [0, 1, 2, 3, 10, 1000] {
        assert_matches_reference(&Rosenbrock::new(n));
    }
    // away from the standard start too
    let x: Vec<f64> = (0..57).map(|i| (i as f64 * 0.37).sin() * 1.5).collect();
    assert_matches_reference(&Rosenbrock { x });
}

#[test]
fn gmm_matches_reference() {
    let small = Gmm::generate(2, 5, 1000, gmm::DEFAULT_SEED);
    assert_eq!(small.label(), "gmm d=2 K=5 n=1000");
    assert_matches_reference(&small);
    assert_matches_reference(&Gmm::generate(10, 25, 1000, gmm::DEFAULT_SEED));
    // one dimension, one component: the triangle is empty and the log-sum-exp trivial
    assert_matches_reference(&Gmm::generate(1, 1, 7, 12));
    // a prior with extra degrees of freedom and another scale
    let mut prior = Gmm::generate(4, 3, 40, 13);
    prior.wishart = Wishart { gamma: 2.5, m: 3 };
    assert_matches_reference(&prior);
}

#[test]
fn gmm_components_far_apart_stay_finite() {
    // Huge differences between components' terms: log-sum-exp must subtract the maximum.
    let mut g = Gmm::generate(3, 4, 20, 14);
    for (c, alpha) in g.alphas.iter_mut().enumerate() {
        *alpha = 800.0 * c as f64 - 1000.0;
    }
    let got = interpret(&g);
    assert!(got.is_finite(), "{got}");
    assert!(relative_error(got, g.reference()) <= TOLERANCE);
}

#[test]
fn pendulum_matches_reference_in_both_swing_directions() {
    for steps in [0, 1, 2, 10, 250, 1000] {
        let p = Pendulum::with_steps(steps);
        assert_matches_reference(&p);
    }
    // The standard run swings both ways, so both friction branches decide the result...
    let trajectory = Pendulum::standard().trajectory();
    assert!(trajectory.iter().any(|&(_, omega)| omega > 0.0));
    assert!(trajectory.iter().any(|&(_, omega)| omega < 0.0));
    // ...and starting at rest takes the third one at the first stage.
    assert_eq!(Pendulum::standard().omega0, 0.0);
    // Started moving backward, with friction strong enough to stop the swing early.
    let p = Pendulum { params: [4.0, 0.1, 2.5], theta0: -0.3, omega0: -1.5, dt: 0.02, steps: 300 };
    assert_matches_reference(&p);
    // Friction changes the result, so the branch is not dead code.
    let frictionless = Pendulum { params: [4.0, 0.1, 0.0], ..p.clone() };
    assert!(relative_error(interpret(&frictionless), interpret(&p)) > 1e-3);
}

#[test]
fn mlp_matches_reference() {
    assert_matches_reference(&Mlp::generate(3, 2, 5, 21));
    assert_matches_reference(&Mlp::generate(32, 64, 16, 22));
    assert_matches_reference(&Mlp::standard());
}
