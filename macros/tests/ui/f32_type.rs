use jitdiff_macros as jitdiff;

#[jitdiff::function]
fn f(x: f32) -> f32 {
    x * 2.0
}

fn main() {}
