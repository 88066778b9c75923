//! Structs and their methods in a `#[jitdiff::module]`: the helpers that take and return them
//! get no typed handles (their IR parameters are the fields), the function over numbers and slices that
//! calls them does, and its JIT primal and derivatives are those of the Rust it was written as.

use jitdiff::check;
use jitdiff::fd::FdOptions;

#[jitdiff::module]
pub mod oscillator {
    #[derive(Clone, Copy)]
    pub struct State {
        pub x: f64,
        pub v: f64,
    }

    #[derive(Clone, Copy)]
    pub struct Spring {
        pub k: f64,
        pub damping: f64,
    }

    fn force(s: &State, spring: &Spring) -> f64 {
        -spring.k * s.x - spring.damping * s.v
    }

    /// One midpoint step.
    fn step(s: State, spring: &Spring, h: f64) -> State {
        let half = State { x: s.x + 0.5 * h * s.v, v: s.v + 0.5 * h * force(&s, spring) };
        State { x: s.x + h * half.v, v: s.v + h * force(&half, spring) }
    }

    impl State {
        fn at_rest(x: f64) -> Self {
            Self { x, v: 0.0 }
        }
        fn advance(&mut self, spring: &Spring, steps: usize) {
            for _ in 0..steps {
                *self = step(*self, spring, 0.05);
            }
        }
        fn kinetic(&self) -> f64 {
            0.5 * self.v * self.v
        }
    }

    /// The same with the spring as a struct: its typed handles take `&Spring`, and the
    /// gradient has one entry per field (then `x0`, `target`).
    pub fn misfit_of(spring: &Spring, x0: f64, target: f64, steps: usize) -> f64 {
        let mut s = State::at_rest(x0);
        s.advance(spring, steps);
        let miss = s.x - target;
        miss * miss + 0.2 * s.kinetic()
    }

    /// A tuple struct.
    #[derive(Clone, Copy)]
    pub struct Pt(pub f64, pub f64);

    /// The squared norm of a point scaled by `k`.
    pub fn norm2(p: &Pt, k: f64) -> f64 {
        let q = Pt(p.0 * k, p.1 * k);
        q.0 * q.0 + q.1 * q.1
    }

    /// A struct holding a struct and a count.
    pub struct Setup {
        pub spring: Spring,
        pub steps: usize,
    }

    /// [`misfit_of`] with the spring and the step count in one struct.
    pub fn misfit_setup(setup: &Setup, x0: f64, target: f64) -> f64 {
        misfit_of(&setup.spring, x0, target, setup.steps)
    }

    /// `params = [k, damping]`; the squared distance of the end state from `target`.
    pub fn misfit(params: &[f64], x0: f64, target: f64, steps: usize) -> f64 {
        let spring = Spring { k: params[0], damping: params[1] };
        let mut s = State::at_rest(x0);
        s.advance(&spring, steps);
        let miss = s.x - target;
        miss * miss + 0.2 * s.kinetic()
    }
}

#[test]
fn a_function_over_structs_runs_and_differentiates_as_written() {
    use oscillator::misfit;
    let params = [3.0, 0.4];
    let want = misfit(&params, 1.2, -0.3, 80);
    let primal = misfit::primal().unwrap();
    assert_eq!(primal.call(&params, 1.2, -0.3, 80).unwrap().to_bits(), want.to_bits());
    let g = misfit::gradient_wrt(&["params", "x0"]).unwrap();
    let (value, grad) = g.value_and_grad(&params, 1.2, -0.3, 80).unwrap();
    assert_eq!(value.to_bits(), want.to_bits());
    assert_eq!(grad.len(), 3);
    let mut args = misfit::args(&params, 1.2, -0.3, 80);
    let report = check::gradient(g.handle(), &mut args, FdOptions::central()).unwrap();
    assert!(report.passes(1e-6), "{report}");
    // The helpers are IR functions of the module, with one parameter per field.
    let module = oscillator::module();
    let step = module.func_by_name("step").unwrap();
    assert_eq!((step.params.len(), step.returns.len()), (5, 2));
}

#[test]
fn a_struct_parameter_is_one_gradient_entry_per_field() {
    use oscillator::{Spring, misfit, misfit_of};
    let spring = Spring { k: 3.0, damping: 0.4 };
    let want = misfit_of(&spring, 1.2, -0.3, 80);
    assert_eq!(want.to_bits(), misfit(&[3.0, 0.4], 1.2, -0.3, 80).to_bits());
    assert_eq!(misfit_of::PARAMS, ["spring_k", "spring_damping", "x0", "target", "steps"]);
    assert_eq!(misfit_of::primal().unwrap().call(&spring, 1.2, -0.3, 80).unwrap().to_bits(), want.to_bits());
    let (value, grad) = misfit_of::gradient().unwrap().value_and_grad(&spring, 1.2, -0.3, 80).unwrap();
    assert_eq!(value.to_bits(), want.to_bits());
    let (_, flat) = misfit::gradient().unwrap().value_and_grad(&[3.0, 0.4], 1.2, -0.3, 80).unwrap();
    assert_eq!(grad, flat, "the fields' gradient is the slice's");
    let g = misfit_of::gradient_wrt(&["spring_k"]).unwrap();
    let report =
        check::gradient(g.handle(), &mut misfit_of::args(&spring, 1.2, -0.3, 80), FdOptions::central()).unwrap();
    assert!(report.passes(1e-6), "{report}");
}

#[allow(dead_code)] // the example's `main`
#[path = "../../../examples/orbit_fit.rs"]
mod orbit_fit;

/// `examples/orbit_fit.rs`: vector operators, methods and a struct of unknowns, fitted by
/// L-BFGS on the gradient with respect to the struct's fields.
#[test]
fn the_orbit_fit_example_recovers_the_truth() {
    let (truth, minimum) = orbit_fit::fit().unwrap();
    assert!(minimum.value < 1e-20, "{minimum:?}");
    for (got, want) in minimum.x.iter().zip(truth) {
        assert!((got - want).abs() < 1e-8, "{:?} vs {truth:?}", minimum.x);
    }
}

#[test]
fn nested_struct_parameters_flatten_depth_first() {
    use oscillator::{Setup, Spring, misfit_of, misfit_setup};
    let setup = Setup { spring: Spring { k: 2.5, damping: 0.1 }, steps: 40 };
    assert_eq!(misfit_setup::PARAMS, ["setup_spring_k", "setup_spring_damping", "setup_steps", "x0", "target"]);
    let want = misfit_setup(&setup, 0.8, 0.2);
    assert_eq!(misfit_setup::primal().unwrap().call(&setup, 0.8, 0.2).unwrap().to_bits(), want.to_bits());
    let (value, grad) = misfit_setup::gradient().unwrap().value_and_grad(&setup, 0.8, 0.2).unwrap();
    let (_, flat) = misfit_of::gradient().unwrap().value_and_grad(&setup.spring, 0.8, 0.2, 40).unwrap();
    assert_eq!((value.to_bits(), grad), (want.to_bits(), flat));
}

/// A fault inside a method names it as the source spells it (`D::at`), not the IR function
/// (`D__at`), through the primal and the gradient.
#[test]
fn a_fault_inside_a_method_names_the_method() {
    use jitdiff::front::lower_source_as_written;
    use jitdiff::{Arg, GradientFn, PrimalFn};
    let source = "struct D<'a> { x: &'a [f64] }\nimpl D<'_> {\n    fn at(&self, i: usize) -> f64 {\n        self.x[i]\n    }\n}\n\
                  fn f(x: &[f64], i: usize) -> f64 {\n    let d = D { x };\n    d.at(i) * 2.0\n}\n";
    let lowered = lower_source_as_written(source).unwrap();
    let m = &lowered.module;
    let x = [1.0, 2.0];
    let primal = PrimalFn::builder(m, "f").rust_source(&lowered).build().unwrap();
    let e = primal.call(&mut [Arg::from(&x[..]), Arg::I64(5)]).unwrap_err().to_string();
    assert!(e.contains("at line 4, column 9 of @D::at, which it calls"), "{e}");
    let grad = GradientFn::builder(m, "f").wrt(["x"]).rust_source(&lowered).build().unwrap();
    let e = grad.value_and_grad(&mut [Arg::from(&x[..]), Arg::I64(5)], &mut [0.0; 2]).unwrap_err().to_string();
    assert!(e.contains("of @D::at, which it calls") && !e.contains("D__at"), "{e}");
}

#[test]
fn tuple_struct_parameters_are_numbered_fields() {
    use oscillator::{Pt, norm2};
    assert_eq!(norm2::PARAMS, ["p_0", "p_1", "k"]);
    let (value, grad) = norm2::gradient().unwrap().value_and_grad(&Pt(3.0, 4.0), 2.0).unwrap();
    assert_eq!(value, norm2(&Pt(3.0, 4.0), 2.0));
    assert_eq!(grad, vec![24.0, 32.0, 100.0]);
}

/// A model as Rust code usually holds one: owned `Vec<f64>` fields beside scalars.
#[jitdiff::module]
pub mod linear_model {
    pub struct Model {
        pub weights: Vec<f64>,
        pub bias: f64,
    }

    impl Model {
        fn predict(&self, x: &[f64]) -> f64 {
            self.weights.iter().zip(x).map(|(w, v)| w * v).sum::<f64>() + self.bias
        }
    }

    /// The mean squared error over the rows of `xs` (as many columns as weights).
    pub fn mse(model: &Model, xs: &[f64], ys: &[f64]) -> f64 {
        let d = model.weights.len();
        let mut total = 0.0;
        for (row, y) in xs.chunks(d).zip(ys) {
            let e = model.predict(row) - y;
            total += e * e;
        }
        total / ys.len() as f64
    }
}

#[test]
fn a_vec_field_is_a_slice_parameter_and_its_gradient_block() {
    use linear_model::{Model, mse};
    let model = Model { weights: vec![0.5, -1.0, 2.0], bias: 0.25 };
    let xs = [1.0, 2.0, 3.0, -1.0, 0.5, 4.0];
    let ys = [2.0, 7.0];
    assert_eq!(mse::PARAMS, ["model_weights", "model_bias", "xs", "ys"]);
    let want = mse(&model, &xs, &ys);
    assert_eq!(mse::primal().unwrap().call(&model, &xs, &ys).unwrap().to_bits(), want.to_bits());
    let g = mse::gradient_wrt(&["model_weights", "model_bias"]).unwrap();
    let (value, grad) = g.value_and_grad(&model, &xs, &ys).unwrap();
    assert_eq!(value.to_bits(), want.to_bits());
    // d/dw_j = 2/n sum_i e_i x_ij, d/db = 2/n sum_i e_i.
    let errors: Vec<f64> =
        (0..2).map(|i| (0..3).map(|j| model.weights[j] * xs[3 * i + j]).sum::<f64>() + model.bias - ys[i]).collect();
    let mut want_grad: Vec<f64> = (0..3).map(|j| (0..2).map(|i| errors[i] * xs[3 * i + j]).sum::<f64>()).collect();
    want_grad.push(errors.iter().sum());
    let want_grad: Vec<f64> = want_grad.iter().map(|v| v * 2.0 / ys.len() as f64).collect();
    super::assert_close(&grad, &want_grad, 1e-14, "gradient");
}
