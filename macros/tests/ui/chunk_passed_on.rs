use jitdiff_macros as jitdiff;

#[jitdiff::function]
fn pairs(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for pair in x.chunks(2) {
        s += pair[0];
    }
    s
}

fn main() {}
