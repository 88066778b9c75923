use jitdiff_macros as jitdiff;

#[jitdiff::module]
mod m {
    fn g(x: f64, y: f64) -> f64 {
        x * y
    }

    pub fn f(x: f64) -> f64 {
        g(x)
    }
}

fn main() {}
