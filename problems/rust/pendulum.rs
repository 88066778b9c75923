//! A damped pendulum with Coulomb friction integrated by classical RK4 (as
//! `examples/ir/pendulum.ir`): the friction term is a branch on the sign of the velocity.

/// The angular acceleration; friction opposes the motion, none at rest.
fn accel(theta: f64, omega: f64, gl: f64, damping: f64, friction: f64) -> f64 {
    let smooth = -(gl * theta.sin() + damping * omega);
    if omega > 0.0 {
        smooth - friction
    } else if omega < 0.0 {
        smooth + friction
    } else {
        smooth
    }
}

/// `params = [g/L, damping, friction]`; `steps` RK4 steps of size `dt` from `(theta0, omega0)`;
/// the loss is `theta^2 + omega^2` at the end.
pub fn pendulum(params: &[f64], theta0: f64, omega0: f64, dt: f64, steps: usize) -> f64 {
    let (gl, damping, friction) = (params[0], params[1], params[2]);
    let half_dt = dt * 0.5;
    let sixth_dt = dt / 6.0;
    let mut theta = theta0;
    let mut omega = omega0;
    for _ in 0..steps {
        let k1 = accel(theta, omega, gl, damping, friction);
        let omega2 = omega + half_dt * k1;
        let k2 = accel(theta + half_dt * omega, omega2, gl, damping, friction);
        let omega3 = omega + half_dt * k2;
        let k3 = accel(theta + half_dt * omega2, omega3, gl, damping, friction);
        let omega4 = omega + dt * k3;
        let k4 = accel(theta + dt * omega3, omega4, gl, damping, friction);
        let theta_next = theta + sixth_dt * (omega + 2.0 * omega2 + 2.0 * omega3 + omega4);
        omega += sixth_dt * (k1 + 2.0 * k2 + 2.0 * k3 + k4);
        theta = theta_next;
    }
    theta * theta + omega * omega
}
