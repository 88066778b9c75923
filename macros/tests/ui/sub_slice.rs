use jitdiff_macros as jitdiff;

#[jitdiff::function]
fn head_sum(x: &[f64]) -> f64 {
    let head = &x[0..2];
    head[0] + head[1]
}

fn main() {}
