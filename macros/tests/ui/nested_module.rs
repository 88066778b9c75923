use jitdiff_macros as jitdiff;

#[jitdiff::module]
mod m {
    mod inner {}

    pub fn f(x: f64) -> f64 {
        x
    }
}

fn main() {}
