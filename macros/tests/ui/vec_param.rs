use jitdiff_macros as jitdiff;

#[jitdiff::function]
fn total(x: Vec<f64>) -> f64 {
    x.iter().sum()
}

fn main() {}
