use jitdiff_macros as jitdiff;

fn square(x: f64) -> f64 {
    x * x
}

#[jitdiff::function]
fn f(x: f64) -> f64 {
    square(x) + 1.0
}

fn main() {}
