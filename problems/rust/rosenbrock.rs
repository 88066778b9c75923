//! Extended Rosenbrock, `sum_{i < n-1} 100 (x[i+1] - x[i]^2)^2 + (1 - x[i])^2`: a loop over a
//! slice with the same operation order as `examples/ir/rosenbrock.ir`.

/// The objective; `x` has at least two elements.
pub fn rosenbrock(x: &[f64]) -> f64 {
    let mut sum = 0.0;
    for i in 0..x.len() - 1 {
        let xi = x[i];
        let d = x[i + 1] - xi * xi;
        let e = 1.0 - xi;
        sum += 100.0 * (d * d) + e * e;
    }
    sum
}
