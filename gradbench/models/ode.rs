// GradBench `ode`: s steps of RK4 on y' = (x_0, x_1 y_0, ..., x_{n-1} y_{n-2}), y(0) = 0, up
// to t = 2, into `yf`.
fn ode(x: &[f64], s: usize, yf: &mut [f64]) {
    let n = x.len();
    let h = 2.0 / s as f64;
    let mut k1 = vec![0.0; n];
    let mut k2 = vec![0.0; n];
    let mut k3 = vec![0.0; n];
    let mut k4 = vec![0.0; n];
    let mut tmp = vec![0.0; n];
    for i in 0..n {
        yf[i] = 0.0;
    }
    for _step in 0..s {
        k1[0] = x[0];
        for i in 1..n {
            k1[i] = x[i] * yf[i - 1];
        }
        for i in 0..n {
            tmp[i] = yf[i] + h * k1[i] / 2.0;
        }
        k2[0] = x[0];
        for i in 1..n {
            k2[i] = x[i] * tmp[i - 1];
        }
        for i in 0..n {
            tmp[i] = yf[i] + h * k2[i] / 2.0;
        }
        k3[0] = x[0];
        for i in 1..n {
            k3[i] = x[i] * tmp[i - 1];
        }
        for i in 0..n {
            tmp[i] = yf[i] + h * k3[i];
        }
        k4[0] = x[0];
        for i in 1..n {
            k4[i] = x[i] * tmp[i - 1];
        }
        for i in 0..n {
            yf[i] += h * (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i]) / 6.0;
        }
    }
}

// The last component of the solution: what GradBench differentiates.
fn ode_last(x: &[f64], s: usize, yf: &mut [f64]) -> f64 {
    ode(x, s, yf);
    yf[x.len() - 1]
}
