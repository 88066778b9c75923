use jitdiff_macros as jitdiff;

#[jitdiff::function]
fn f(n: usize) -> f64 {
    let mut s = 0.0;
    for i in 0..n {
        let v = vec![1.0; i + 1];
        s += v[i];
    }
    s
}

fn main() {}
