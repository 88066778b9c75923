use jitdiff_macros as jitdiff;

#[jitdiff::module]
mod m {
    const WEIGHTS: [f64; 3] = [0.25, 0.5, 0.25];

    pub fn smooth(x: f64) -> f64 {
        WEIGHTS[1] * x
    }
}

fn main() {}
