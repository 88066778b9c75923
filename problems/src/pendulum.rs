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
/// use jitdiff_problems::pendulum::accel;
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

/// The hand-written analytic gradient of [`pendulum_loss`] with respect to `params` (the
/// benchmarks' baseline), written into `grad` (overwritten); returns the loss.
///
/// A forward sweep stores, for each of the four RK4 stages of every step, what the reverse sweep
/// needs — `sin` and `cos` of the stage angle and the stage velocity — in `scratch` (resized; reuse
/// it between calls to avoid allocating). The reverse sweep then runs the steps backwards,
/// carrying the adjoints of `(theta, omega)` and accumulating the parameters' adjoints, with no
/// transcendental calls. Same operation order as [`rk4_step`] in the forward sweep.
///
/// ```
/// use jitdiff_problems::pendulum::{pendulum_gradient, pendulum_loss};
/// let params = [9.81, 0.25, 0.5];
/// let mut grad = [0.0; 3];
/// let loss = pendulum_gradient(&params, 1.0, 0.0, 0.01, 100, &mut grad, &mut Vec::new());
/// assert_eq!(loss, pendulum_loss(&params, 1.0, 0.0, 0.01, 100));
/// ```
pub fn pendulum_gradient(
    params: &Params,
    theta0: f64,
    omega0: f64,
    dt: f64,
    steps: usize,
    grad: &mut [f64; 3],
    scratch: &mut Vec<f64>,
) -> f64 {
    const PER_STEP: usize = 12;
    let [gl, damping, friction] = *params;
    let half_dt = dt * 0.5;
    let sixth_dt = dt / 6.0;
    // The acceleration from the stage's sin(theta) (same order as `accel`).
    let accel_of = |sin: f64, omega: f64| {
        let smooth = -(gl * sin + damping * omega);
        smooth - friction * sign(omega)
    };
    scratch.clear();
    scratch.resize(steps * PER_STEP, 0.0);
    let (mut theta, mut omega) = (theta0, omega0);
    for stage in scratch.as_chunks_mut::<PER_STEP>().0 {
        let (s1, c1) = theta.sin_cos();
        let k1 = accel_of(s1, omega);
        let theta2 = theta + half_dt * omega;
        let omega2 = omega + half_dt * k1;
        let (s2, c2) = theta2.sin_cos();
        let k2 = accel_of(s2, omega2);
        let theta3 = theta + half_dt * omega2;
        let omega3 = omega + half_dt * k2;
        let (s3, c3) = theta3.sin_cos();
        let k3 = accel_of(s3, omega3);
        let theta4 = theta + dt * omega3;
        let omega4 = omega + dt * k3;
        let (s4, c4) = theta4.sin_cos();
        let k4 = accel_of(s4, omega4);
        *stage = [s1, c1, omega, s2, c2, omega2, s3, c3, omega3, s4, c4, omega4];
        theta += sixth_dt * (omega + 2.0 * omega2 + 2.0 * omega3 + omega4);
        omega += sixth_dt * (k1 + 2.0 * k2 + 2.0 * k3 + k4);
    }
    let loss = theta * theta + omega * omega;

    // Reverse sweep. Partials of accel at a stage: d/dtheta = -gl cos, d/domega = -damping,
    // d/dgl = -sin, d/ddamping = -omega, d/dfriction = -sgn(omega).
    let (mut theta_bar, mut omega_bar) = (2.0 * theta, 2.0 * omega);
    let mut params_bar = [0.0; 3];
    let mut through_accel = |k_bar: f64, sin: f64, cos: f64, omega: f64| {
        params_bar[0] -= k_bar * sin;
        params_bar[1] -= k_bar * omega;
        params_bar[2] -= k_bar * sign(omega);
        (-k_bar * gl * cos, -k_bar * damping)
    };
    for &[s1, c1, omega1, s2, c2, omega2, s3, c3, omega3, s4, c4, omega4] in
        scratch.as_chunks::<PER_STEP>().0.iter().rev()
    {
        // theta' = theta + dt/6 (omega + 2 omega2 + 2 omega3 + omega4), omega' likewise with k.
        let t = sixth_dt * theta_bar;
        let w = sixth_dt * omega_bar;
        let (mut t_bar, mut w_bar) = (theta_bar, omega_bar + t);
        let (mut omega2_bar, mut omega3_bar, mut omega4_bar) = (2.0 * t, 2.0 * t, t);
        let (k1_bar, mut k2_bar, mut k3_bar, k4_bar) = (w, 2.0 * w, 2.0 * w, w);
        // k4 = accel(theta + dt omega3, omega + dt k3)
        let (theta4_bar, o) = through_accel(k4_bar, s4, c4, omega4);
        omega4_bar += o;
        w_bar += omega4_bar;
        k3_bar += dt * omega4_bar;
        t_bar += theta4_bar;
        omega3_bar += dt * theta4_bar;
        // k3 = accel(theta + dt/2 omega2, omega + dt/2 k2)
        let (theta3_bar, o) = through_accel(k3_bar, s3, c3, omega3);
        omega3_bar += o;
        w_bar += omega3_bar;
        k2_bar += half_dt * omega3_bar;
        t_bar += theta3_bar;
        omega2_bar += half_dt * theta3_bar;
        // k2 = accel(theta + dt/2 omega, omega + dt/2 k1)
        let (theta2_bar, o) = through_accel(k2_bar, s2, c2, omega2);
        omega2_bar += o;
        w_bar += omega2_bar;
        let k1_bar = k1_bar + half_dt * omega2_bar;
        t_bar += theta2_bar;
        w_bar += half_dt * theta2_bar;
        // k1 = accel(theta, omega)
        let (theta1_bar, o) = through_accel(k1_bar, s1, c1, omega1);
        theta_bar = t_bar + theta1_bar;
        omega_bar = w_bar + o;
    }
    *grad = params_bar;
    loss
}

/// `sgn(omega)` with `sgn(0) = 0`, the friction direction of [`accel`].
fn sign(omega: f64) -> f64 {
    if omega > 0.0 {
        1.0
    } else if omega < 0.0 {
        -1.0
    } else {
        0.0
    }
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
    fn hand_value_and_grad(&self, grad: &mut [f64]) -> Option<f64> {
        let mut g = [0.0; 3];
        let loss =
            pendulum_gradient(&self.params, self.theta0, self.omega0, self.dt, self.steps, &mut g, &mut Vec::new());
        grad.copy_from_slice(&g);
        Some(loss)
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
