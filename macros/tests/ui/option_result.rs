use jitdiff_macros as jitdiff;

#[jitdiff::function]
fn safe_sqrt(x: f64) -> Option<f64> {
    if x >= 0.0 { Some(x.sqrt()) } else { None }
}

fn main() {}
