//! A Lotka–Volterra predator–prey model integrated by RK4, fitted to observations: the mean
//! squared distance between the trajectory and the observed populations after each step.

/// The rates `(dx/dt, dy/dt)` of prey `x` and predators `y`.
fn rates(x: f64, y: f64, alpha: f64, beta: f64, gamma: f64, delta: f64) -> (f64, f64) {
    (alpha * x - beta * x * y, delta * x * y - gamma * y)
}

/// Integrate from `(x0, y0)` with `params = [alpha, beta, gamma, delta]`, writing the state
/// after each of the `trajectory.len() / 2` steps as pairs `(x, y)`.
pub fn lotka_volterra(params: &[f64], x0: f64, y0: f64, dt: f64, trajectory: &mut [f64]) {
    let (alpha, beta, gamma, delta) = (params[0], params[1], params[2], params[3]);
    let (mut x, mut y) = (x0, y0);
    let half = 0.5 * dt;
    for step in 0..trajectory.len() / 2 {
        let (k1x, k1y) = rates(x, y, alpha, beta, gamma, delta);
        let (k2x, k2y) = rates(x + half * k1x, y + half * k1y, alpha, beta, gamma, delta);
        let (k3x, k3y) = rates(x + half * k2x, y + half * k2y, alpha, beta, gamma, delta);
        let (k4x, k4y) = rates(x + dt * k3x, y + dt * k3y, alpha, beta, gamma, delta);
        x += dt / 6.0 * (k1x + 2.0 * k2x + 2.0 * k3x + k4x);
        y += dt / 6.0 * (k1y + 2.0 * k2y + 2.0 * k3y + k4y);
        trajectory[2 * step] = x;
        trajectory[2 * step + 1] = y;
    }
}

/// The fit: integrate into `work` (as long as `observed`) and compare.
pub fn lotka_volterra_fit(params: &[f64], x0: f64, y0: f64, dt: f64, observed: &[f64], work: &mut [f64]) -> f64 {
    lotka_volterra(params, x0, y0, dt, work);
    let mut loss = 0.0;
    for (simulated, measured) in work.iter().zip(observed.iter()) {
        let e = simulated - measured;
        loss += e * e;
    }
    loss / (observed.len() / 2) as f64
}
