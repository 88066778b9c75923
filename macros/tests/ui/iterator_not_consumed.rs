use jitdiff_macros as jitdiff;

#[jitdiff::function]
fn f(x: &[f64]) -> f64 {
    let it = x.iter();
    it.sum()
}

fn main() {}
