use jitdiff_macros as jitdiff;

#[jitdiff::function]
fn dot(x: &[f64], y: &[f64]) -> f64 {
    x.iter().map(|v| 2.0 * v).zip(y.iter()).map(|(a, b)| a * b).sum()
}

fn main() {}
