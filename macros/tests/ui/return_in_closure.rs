use jitdiff_macros as jitdiff;

#[jitdiff::function]
fn f(x: &[f64]) -> f64 {
    x.iter().map(|v| { if *v < 0.0 { return 0.0; } *v }).sum()
}

fn main() {}
