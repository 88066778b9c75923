use jitdiff_macros as jitdiff;

#[jitdiff::function]
fn f(x: f64) -> f64 {
    x.frobnicate()
}

fn main() {}
