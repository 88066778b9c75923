//! Functions written once in Rust (`#[jitdiff::function]`, `#[jitdiff::module]`).

mod programs;

use programs::{rosenbrock, mlp};

#[test]
fn smoke() {
    let x = [-1.2, 1.0, 0.5];
    let g = rosenbrock::gradient().unwrap();
    let (f, df) = g.value_and_grad(&x).unwrap();
    assert_eq!(f, rosenbrock(&x));
    assert_eq!(df.len(), 3);
    let _ = mlp::NAME;
}
