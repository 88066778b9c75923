use jitdiff_macros as jitdiff;

#[jitdiff::module]
mod m {
    fn both(a: &mut [f64], b: &mut [f64]) {
        a[0] = b[0];
    }

    pub fn twice(x: &mut [f64]) {
        both(x, x);
    }
}

fn main() {}
