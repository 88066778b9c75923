use jitdiff_macros as jitdiff;

#[jitdiff::function]
struct Model {
    weight: f64,
}

fn main() {}
