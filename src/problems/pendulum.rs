//! A damped pendulum with Coulomb friction, integrated by classical RK4; the loss is
//! `theta_final^2 + omega_final^2`. The friction term branches on the sign of the velocity.

use super::Problem;
use jitdiff_ir::ArgValue;

/// The IR text of `@pendulum(params: slice, theta0: f64, omega0: f64, dt: f64, steps: i64) -> f64`
/// and its helper `@accel` (`examples/ir/pendulum.ir`).
pub const PENDULUM_IR: &str = include_str!("../../examples/ir/pendulum.ir");

/// The entry function of [`PENDULUM_IR`].
pub const ENTRY: &str = "pendulum";

/// The pendulum's parameters `[g/L, damping, friction]`.
pub type Params = [f64; 3];

/// The angular acceleration
/// `-(g/L) sin(theta) - damping omega - friction sgn(omega)` (no friction at `omega == 0`).
///
/// ```
/// use jitdiff::problems::pendulum::accel;
/// assert_eq!(accel(0.0, 1.0, &[9.81, 0.5, 0.25]), -0.75);
/// assert_eq!(accel(0.0, -1.0, &[9.81, 0.5, 0.25]), 0.75);
/// ```
pub fn accel(theta: f64, omega: f64, params: &Params) -> f64 {
    let [gl, damping, friction] = *params;
    let smooth = -(gl * theta.sin() + damping * omega);
    if omega > 0.0 {
        smooth - friction
    } else if omega < 0.0 {
        smooth + friction
    } else {
        smooth
    }
}

/// One RK4 step of size `dt` from `(theta, omega)`; same operation order as the IR.
pub fn rk4_step((theta, omega): (f64, f64), params: &Params, dt: f64) -> (f64, f64) {
    let half_dt = dt * 0.5;
    let sixth_dt = dt / 6.0;
    let k1 = accel(theta, omega, params);
    let omega2 = omega + half_dt * k1;
    let k2 = accel(theta + half_dt * omega, omega2, params);
    let omega3 = omega + half_dt * k2;
    let k3 = accel(theta + half_dt * omega2, omega3, params);
    let omega4 = omega + dt * k3;
    let k4 = accel(theta + dt * omega3, omega4, params);
    (
        theta + sixth_dt * (omega + 2.0 * omega2 + 2.0 * omega3 + omega4),
        omega + sixth_dt * (k1 + 2.0 * k2 + 2.0 * k3 + k4),
    )
}

/// The reference primal: `steps` RK4 steps from `(theta0, omega0)`, then `theta^2 + omega^2`.
pub fn pendulum_loss(params: &Params, theta0: f64, omega0: f64, dt: f64, steps: usize) -> f64 {
    let (theta, omega) = (0..steps).fold((theta0, omega0), |state, _| rk4_step(state, params, dt));
    theta * theta + omega * omega
}

/// A pendulum instance.
#[derive(Clone, Debug, PartialEq)]
pub struct Pendulum {
    /// `[g/L, damping, friction]`.
    pub params: Params,
    /// Initial angle (radians).
    pub theta0: f64,
    /// Initial angular velocity.
    pub omega0: f64,
    /// Step size.
    pub dt: f64,
    /// Number of RK4 steps.
    pub steps: usize,
}

impl Pendulum {
    /// The benchmark instance: g/L = 9.81, damping 0.25, friction 0.5, released at rest from
    /// 1 rad, dt = 0.01, 1000 steps (10 s: several swings in both directions, all three friction
    /// branches taken).
    pub fn standard() -> Pendulum {
        Pendulum::with_steps(1000)
    }

    /// The benchmark instance with a different number of steps.
    pub fn with_steps(steps: usize) -> Pendulum {
        Pendulum { params: [9.81, 0.25, 0.5], theta0: 1.0, omega0: 0.0, dt: 0.01, steps }
    }

    /// The reference loss of this instance ([`pendulum_loss`]).
    pub fn loss(&self) -> f64 {
        pendulum_loss(&self.params, self.theta0, self.omega0, self.dt, self.steps)
    }

    /// The states `(theta, omega)` after 0, 1, ..., `steps` steps.
    pub fn trajectory(&self) -> Vec<(f64, f64)> {
        let mut states = Vec::with_capacity(self.steps + 1);
        states.push((self.theta0, self.omega0));
        for _ in 0..self.steps {
            let last = states[states.len() - 1];
            states.push(rk4_step(last, &self.params, self.dt));
        }
        states
    }
}

impl Problem for Pendulum {
    fn label(&self) -> String {
        format!("pendulum steps={}", self.steps)
    }
    fn ir(&self) -> &'static str {
        PENDULUM_IR
    }
    fn entry(&self) -> &'static str {
        ENTRY
    }
    /// The three parameters `[g/L, damping, friction]`.
    fn active_params(&self) -> &'static [usize] {
        &[0]
    }
    fn args(&self) -> Vec<ArgValue> {
        vec![
            ArgValue::Slice(self.params.to_vec()),
            ArgValue::F64(self.theta0),
            ArgValue::F64(self.omega0),
            ArgValue::F64(self.dt),
            ArgValue::I64(self.steps as i64),
        ]
    }
    fn reference(&self) -> f64 {
        self.loss()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_friction_and_damping_energy_is_nearly_conserved() {
        let p = Pendulum { params: [9.81, 0.0, 0.0], theta0: 0.5, omega0: 0.0, dt: 0.001, steps: 2000 };
        let energy = |(theta, omega): (f64, f64)| 0.5 * omega * omega - 9.81 * theta.cos();
        let states = p.trajectory();
        let (first, last) = (energy(states[0]), energy(states[states.len() - 1]));
        assert!((first - last).abs() < 1e-9, "{first} vs {last}");
    }

    #[test]
    fn the_standard_swing_loses_energy_and_moves_both_ways() {
        let p = Pendulum::standard();
        let states = p.trajectory();
        assert!(states.iter().any(|s| s.1 > 0.0) && states.iter().any(|s| s.1 < 0.0));
        assert!(p.loss() < p.theta0 * p.theta0);
        let (theta, omega) = states[p.steps];
        assert_eq!(p.loss(), theta * theta + omega * omega);
    }
}
