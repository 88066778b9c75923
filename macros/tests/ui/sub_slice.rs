use jitdiff_macros as jitdiff;

#[jitdiff::function]
fn head(x: &[f64]) -> f64 {
    let t = (x[1..][0], 1.0);
    t.0
}

fn main() {}
