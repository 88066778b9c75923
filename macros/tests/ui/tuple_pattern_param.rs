use jitdiff_macros as jitdiff;

#[jitdiff::function]
fn f((a, b): (f64, f64)) -> f64 {
    a * b
}

fn main() {}
