use jitdiff_macros as jitdiff;

#[jitdiff::module]
mod model {
    fn sum(x: &[f64]) -> f64 {
        x.iter().sum()
    }

    pub fn head_sum(x: &[f64]) -> f64 {
        sum(&x[0..2])
    }
}

fn main() {}
