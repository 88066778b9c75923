use jitdiff_macros as jitdiff;

#[jitdiff::function]
fn f(n: usize) -> f64 {
    let v = vec![0.0; n];
    v[0]
}

fn main() {}
