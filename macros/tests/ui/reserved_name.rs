use jitdiff_macros as jitdiff;

#[jitdiff::module]
mod m {
    pub fn module(x: f64) -> f64 {
        x
    }
}

fn main() {}
