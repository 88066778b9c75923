use jitdiff_macros as jitdiff;

#[jitdiff::function]
fn scale(x: f64, n: i64) -> f64 {
    x + n
}

fn main() {}
