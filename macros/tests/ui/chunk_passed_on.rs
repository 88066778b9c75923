use jitdiff_macros as jitdiff;

#[jitdiff::function]
fn pairs(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for pair in x.chunks(2) {
        let copy = pair;
        s += copy[0];
    }
    s
}

fn main() {}
