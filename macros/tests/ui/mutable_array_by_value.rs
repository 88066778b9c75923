use jitdiff_macros as jitdiff;

#[jitdiff::function]
fn f(mut a: [f64; 3]) -> f64 {
    a[0] = 1.0;
    a[0] + a[1]
}

fn main() {}
