use jitdiff_macros as jitdiff;

pub struct Point {
    pub x: f64,
    pub y: f64,
}

#[jitdiff::function]
fn norm(p: Point) -> f64 {
    (p.x * p.x + p.y * p.y).sqrt()
}

fn main() {}
