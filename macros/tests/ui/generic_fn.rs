use jitdiff_macros as jitdiff;

#[jitdiff::function]
fn double<T: std::ops::Add<Output = T> + Copy>(x: T) -> T {
    x + x
}

fn main() {}
