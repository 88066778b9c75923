use jitdiff_macros as jitdiff;

#[jitdiff::function]
async fn f(x: f64) -> f64 {
    x
}

fn main() {}
