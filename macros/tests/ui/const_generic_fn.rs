use jitdiff_macros as jitdiff;

// A const generic parameter: the attribute has no length to lower it with (type parameters are
// lowered at `f64`, see docs/rust.md).
#[jitdiff::function]
fn repeat<const N: usize>(x: f64) -> f64 {
    x * N as f64
}

fn main() {}
