#![allow(unused)]

use jitdiff_macros as jitdiff;

#[jitdiff::function]
fn total(x: &[f64]) -> f64 {
    let mut count = 0.0;
    let s: f64 = x.iter().map(move |v| {
        count += 1.0;
        v * 2.0
    }).sum();
    s / count
}

fn main() {}
