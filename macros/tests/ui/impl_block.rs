use jitdiff_macros as jitdiff;

pub struct Model;

#[jitdiff::module]
mod m {
    impl super::Model {
        pub fn eval(&self, x: f64) -> f64 {
            x
        }
    }
}

fn main() {}
