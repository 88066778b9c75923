use jitdiff_macros as jitdiff;

#[jitdiff::function(fast)]
fn f(x: f64) -> f64 {
    x
}

fn main() {}
