use jitdiff_macros as jitdiff;

#[jitdiff::function]
fn f(n: usize) -> usize {
    n.min(usize::MAX)
}

fn main() {}
