use jitdiff_macros as jitdiff;

#[jitdiff::module]
mod m {
    const INDEX: [usize; 3] = [2, 0, 1];

    pub fn pick(x: &[f64]) -> f64 {
        x[INDEX[1]]
    }
}

fn main() {}
