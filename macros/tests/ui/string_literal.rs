use jitdiff_macros as jitdiff;

#[jitdiff::function]
fn f(x: f64) -> f64 {
    let label = "x";
    x
}

fn main() {}
