//! A chain of pendulums coupled by springs, integrated by RK4: a map from the 2N initial states
//! (angles, then velocities) to the 2N final states. With N = 8 it is the 16 → 16 function whose
//! Jacobian the forward-mode benchmark computes.
//!
//! The IR is built with the Rust builder (16 loop-carried values are tedious to write by hand).

use jitdiff_ir::builder::{FunctionBuilder, ModuleBuilder, Var};
use jitdiff_ir::{Module, Type};

/// g / L of every pendulum.
pub const GRAVITY_OVER_LENGTH: f64 = 9.81;
/// Velocity damping.
pub const DAMPING: f64 = 0.1;
/// Spring constant between neighbours.
pub const SPRING: f64 = 2.0;
/// The entry function's name.
pub const ENTRY: &str = "coupled";

/// The time derivative of the state: angles' derivatives are the velocities; velocities feel
/// gravity, damping and the springs to their neighbours (free ends).
fn derivative(state: &[f64]) -> Vec<f64> {
    let n = state.len() / 2;
    let (theta, omega) = state.split_at(n);
    let mut d = omega.to_vec();
    for i in 0..n {
        let mut a = -(GRAVITY_OVER_LENGTH * theta[i].sin()) - DAMPING * omega[i];
        if i > 0 {
            a += SPRING * (theta[i - 1] - theta[i]);
        }
        if i + 1 < n {
            a += SPRING * (theta[i + 1] - theta[i]);
        }
        d.push(a);
    }
    d
}

/// The plain-Rust reference: `steps` RK4 steps of size `dt` from `state` (angles, then velocities).
///
/// ```
/// use jitdiff_problems::coupled::coupled_reference;
/// let s = coupled_reference(&[0.0; 16], 10, 0.01);
/// assert!(s.iter().all(|&v| v == 0.0)); // rest stays at rest
/// ```
pub fn coupled_reference(state: &[f64], steps: usize, dt: f64) -> Vec<f64> {
    let mut s = state.to_vec();
    let axpy = |s: &[f64], k: &[f64], h: f64| -> Vec<f64> { s.iter().zip(k).map(|(s, k)| s + h * k).collect() };
    for _ in 0..steps {
        let k1 = derivative(&s);
        let k2 = derivative(&axpy(&s, &k1, dt * 0.5));
        let k3 = derivative(&axpy(&s, &k2, dt * 0.5));
        let k4 = derivative(&axpy(&s, &k3, dt));
        s = (0..s.len()).map(|i| s[i] + dt / 6.0 * (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i])).collect();
    }
    s
}

/// The IR module: `@coupled(s0, ..., s{2N-1}: f64) -> f64 x 2N`, `steps` RK4 steps of size `dt`,
/// the same operations in the same order as [`coupled_reference`].
pub fn coupled_module(pendulums: usize, steps: i64, dt: f64) -> Module {
    let names: Vec<String> = (0..2 * pendulums)
        .map(|i| if i < pendulums { format!("theta{i}") } else { format!("omega{}", i - pendulums) })
        .collect();
    let params: Vec<(&str, Type)> = names.iter().map(|n| (n.as_str(), Type::F64)).collect();
    let mut mb = ModuleBuilder::new();
    mb.function(ENTRY, &params, &vec![Type::F64; 2 * pendulums], |f| {
        let state = f.params();
        let last = f.for_range(0, steps, state, |f, _, s| rk4_step(f, &s, dt));
        f.ret(&last);
    })
    .expect("the coupled-pendulum function builds");
    mb.finish().expect("the coupled-pendulum module builds")
}

fn derivative_ir<'a>(f: &'a FunctionBuilder, s: &[Var<'a>]) -> Vec<Var<'a>> {
    let n = s.len() / 2;
    let (theta, omega) = s.split_at(n);
    let mut d = omega.to_vec();
    for i in 0..n {
        let mut a = -(f.float(GRAVITY_OVER_LENGTH) * theta[i].sin()) - f.float(DAMPING) * omega[i];
        if i > 0 {
            a += f.float(SPRING) * (theta[i - 1] - theta[i]);
        }
        if i + 1 < n {
            a += f.float(SPRING) * (theta[i + 1] - theta[i]);
        }
        d.push(a);
    }
    d
}

fn rk4_step<'a>(f: &'a FunctionBuilder, s: &[Var<'a>], dt: f64) -> Vec<Var<'a>> {
    let axpy = |k: &[Var<'a>], h: f64| -> Vec<Var<'a>> { s.iter().zip(k).map(|(&s, &k)| s + f.float(h) * k).collect() };
    let k1 = derivative_ir(f, s);
    let k2 = derivative_ir(f, &axpy(&k1, dt * 0.5));
    let k3 = derivative_ir(f, &axpy(&k2, dt * 0.5));
    let k4 = derivative_ir(f, &axpy(&k3, dt));
    (0..s.len())
        .map(|i| s[i] + f.float(dt / 6.0) * (k1[i] + f.float(2.0) * k2[i] + f.float(2.0) * k3[i] + k4[i]))
        .collect()
}

/// A deterministic initial state for `pendulums` pendulums: angles spread in ±0.5, at rest.
pub fn initial_state(pendulums: usize) -> Vec<f64> {
    let mut s: Vec<f64> = (0..pendulums).map(|i| 0.5 * ((i as f64) * 1.7).sin()).collect();
    s.extend((0..pendulums).map(|i| 0.1 * ((i as f64) * 0.9).cos()));
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use jitdiff_ir::{ArgValue, Interpreter, RuntimeValue};

    #[test]
    fn ir_matches_the_reference() {
        let module = coupled_module(8, 50, 0.01);
        let s0 = initial_state(8);
        let mut args: Vec<ArgValue> = s0.iter().map(|&v| ArgValue::F64(v)).collect();
        let out = Interpreter::new(&module).call(ENTRY, &mut args).unwrap();
        let want = coupled_reference(&s0, 50, 0.01);
        for (got, want) in out.iter().zip(&want) {
            let RuntimeValue::F64(got) = got else { panic!("f64 expected") };
            assert!((got - want).abs() <= 1e-12 * want.abs().max(1.0), "{got} vs {want}");
        }
        assert!(want.iter().any(|v| v.abs() > 1e-3), "the chain moves");
    }
}
