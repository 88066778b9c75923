use jitdiff_macros as jitdiff;

#[jitdiff::function]
fn f(x: f64) -> f64 {
    let square = |y: f64| y * y;
    let again = square;
    again(x)
}

fn main() {}
