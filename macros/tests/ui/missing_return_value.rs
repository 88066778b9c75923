use jitdiff_macros as jitdiff;

#[jitdiff::function]
fn f(x: f64) -> f64 {
    let y = x * 2.0;
}

fn main() {}
