//! A Lotka–Volterra predator–prey model integrated by RK4. `theta` is
//! `[alpha, beta, gamma, delta, x0, y0]`: the rates of prey `x` and predators `y`
//! (`dx/dt = alpha x - beta x y`, `dy/dt = delta x y - gamma y`) and the initial populations.
//! Plain Rust: `examples/lotka_volterra.rs` compiles this file with rustc (`mod model`) *and*
//! hands its text to jitdiff's front end.

/// The rates `(dx/dt, dy/dt)`.
pub fn rates(x: f64, y: f64, theta: &[f64]) -> (f64, f64) {
    (theta[0] * x - theta[1] * x * y, theta[3] * x * y - theta[2] * y)
}

/// One RK4 step of length `dt` from `(x, y)`.
pub fn step(x: f64, y: f64, theta: &[f64], dt: f64) -> (f64, f64) {
    let half = 0.5 * dt;
    let (k1x, k1y) = rates(x, y, theta);
    let (k2x, k2y) = rates(x + half * k1x, y + half * k1y, theta);
    let (k3x, k3y) = rates(x + half * k2x, y + half * k2y, theta);
    let (k4x, k4y) = rates(x + dt * k3x, y + dt * k3y, theta);
    (x + dt / 6.0 * (k1x + 2.0 * k2x + 2.0 * k3x + k4x), y + dt / 6.0 * (k1y + 2.0 * k2y + 2.0 * k3y + k4y))
}

/// The populations after each of the `trajectory.len() / 2` steps, as pairs `(x, y)`.
pub fn trajectory(theta: &[f64], dt: f64, trajectory: &mut [f64]) {
    let (mut x, mut y) = (theta[4], theta[5]);
    for k in 0..trajectory.len() / 2 {
        (x, y) = step(x, y, theta, dt);
        trajectory[2 * k] = x;
        trajectory[2 * k + 1] = y;
    }
}
