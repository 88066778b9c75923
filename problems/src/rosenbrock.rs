//! Extended Rosenbrock: `f(x) = sum_{i<n-1} 100 (x[i+1] - x[i]^2)^2 + (1 - x[i])^2`.

use super::Problem;
use jitdiff_ir::ArgValue;

/// The IR text of `@rosenbrock(x: slice) -> f64` (`examples/ir/rosenbrock.ir`).
pub const ROSENBROCK_IR: &str = include_str!("../../examples/ir/rosenbrock.ir");

/// The entry function of [`ROSENBROCK_IR`].
pub const ENTRY: &str = "rosenbrock";

/// The reference primal: the extended Rosenbrock function of `x` (0 when `x.len() < 2`).
///
/// Evaluates in the same order as the IR, so the two agree to the last bit.
///
/// ```
/// use jitdiff_problems::rosenbrock::rosenbrock;
/// assert_eq!(rosenbrock(&[1.0, 1.0, 1.0]), 0.0);
/// assert_eq!(rosenbrock(&[0.0, 1.0]), 101.0);
/// ```
pub fn rosenbrock(x: &[f64]) -> f64 {
    let Some(tail) = x.get(1..) else { return 0.0 };
    x.iter().zip(tail).fold(0.0, |acc, (&xi, &xnext)| {
        let valley = xnext - xi * xi;
        let offset = 1.0 - xi;
        acc + (100.0 * (valley * valley) + offset * offset)
    })
}

/// The standard starting point `(-1.2, 1, -1.2, 1, ...)` of length `n`.
pub fn standard_start(n: usize) -> Vec<f64> {
    (0..n).map(|i| if i % 2 == 0 { -1.2 } else { 1.0 }).collect()
}

/// An instance: the point `x` at which the function is evaluated.
#[derive(Clone, Debug, PartialEq)]
pub struct Rosenbrock {
    /// The point; its length is the problem size n.
    pub x: Vec<f64>,
}

impl Rosenbrock {
    /// The sizes benchmarked (n = 10 … 100 000).
    pub const STANDARD_SIZES: [usize; 3] = [10, 1_000, 100_000];

    /// The instance of size `n` at the standard starting point.
    pub fn new(n: usize) -> Rosenbrock {
        Rosenbrock { x: standard_start(n) }
    }
}

impl Problem for Rosenbrock {
    fn label(&self) -> String {
        format!("rosenbrock n={}", self.x.len())
    }
    fn ir(&self) -> &'static str {
        ROSENBROCK_IR
    }
    fn entry(&self) -> &'static str {
        ENTRY
    }
    fn active_params(&self) -> &'static [usize] {
        &[0]
    }
    fn args(&self) -> Vec<ArgValue> {
        vec![ArgValue::Slice(self.x.clone())]
    }
    fn reference(&self) -> f64 {
        rosenbrock(&self.x)
    }
    fn hand_value_and_grad(&self, grad: &mut [f64]) -> Option<f64> {
        Some(rosenbrock_gradient(&self.x, grad))
    }
}

/// The hand-written analytic gradient of [`rosenbrock`] into `grad` (overwritten); returns the
/// value. The baseline the reverse-mode benchmark compares against.
///
/// ```
/// use jitdiff_problems::rosenbrock::rosenbrock_gradient;
/// let mut g = [0.0; 2];
/// assert_eq!(rosenbrock_gradient(&[1.0, 1.0], &mut g), 0.0);
/// assert_eq!(g, [0.0, 0.0]);
/// ```
pub fn rosenbrock_gradient(x: &[f64], grad: &mut [f64]) -> f64 {
    grad.fill(0.0);
    let mut total = 0.0;
    for i in 0..x.len().saturating_sub(1) {
        let (xi, xn) = (x[i], x[i + 1]);
        let valley = xn - xi * xi;
        let offset = 1.0 - xi;
        total += 100.0 * valley * valley + offset * offset;
        grad[i] += -400.0 * valley * xi - 2.0 * offset;
        grad[i + 1] += 200.0 * valley;
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_inputs_give_zero_and_the_minimum_is_zero() {
        assert_eq!(rosenbrock(&[]), 0.0);
        assert_eq!(rosenbrock(&[3.0]), 0.0);
        assert_eq!(rosenbrock(&[1.0; 50]), 0.0);
    }

    #[test]
    fn standard_start_matches_the_closed_form() {
        // Pairs (-1.2, 1) give 24.2 and pairs (1, -1.2) give 484.
        let x = standard_start(5);
        assert_eq!(x, vec![-1.2, 1.0, -1.2, 1.0, -1.2]);
        assert!((rosenbrock(&x) - (2.0 * 24.2 + 2.0 * 484.0)).abs() < 1e-9);
    }
}
