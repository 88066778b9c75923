use jitdiff_macros as jitdiff;

#[jitdiff::function]
fn f(x: f64, n: i64) -> f64 {
    if let 0 = n { x } else { 2.0 * x }
}

fn main() {}
