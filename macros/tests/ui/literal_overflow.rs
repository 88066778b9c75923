use jitdiff_macros as jitdiff;

#[jitdiff::function]
fn f(x: f64) -> f64 {
    let big: i64 = 99999999999999999999;
    x * big as f64
}

fn main() {}
