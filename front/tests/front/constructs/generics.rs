//! Generic functions over a float type (`T: Float`, as written for num-dual or num-traits),
//! lowered at `f64`: the `num_traits` constructors become constants, `T::f(x)` is `f64::f(x)`.

use crate::support::{Rng, lower};
use crate::{dual, same};

dual! { GENERICS:
    use num_traits::Float;
    fn square<T: std::ops::Mul<Output = T> + Copy>(v: T) -> T {
        v * v
    }
    fn rosenbrock<T: Float>(x: &[T]) -> T {
        let mut s = T::zero();
        let hundred = T::from(100.0).unwrap();
        for i in 0..x.len() - 1 {
            let d = x[i + 1] - x[i] * x[i];
            let e = T::one() - x[i];
            s = s + hundred * d * d + e * e;
        }
        s
    }
    fn mixed<D>(x: &[D], k: usize) -> D
    where
        D: Float + std::iter::Sum,
    {
        let n: D = D::from(x.len()).unwrap();
        let mean = x.iter().copied().sum::<D>() / n;
        let spread = x.iter().fold(D::zero(), |a, &b| Float::max(a, (b - mean).abs()));
        let scaled = D::from(k).expect("a count") * D::epsilon();
        mean + square(spread) + rosenbrock::<D>(x) + D::sqrt(square(x[0])) + scaled + D::min_positive_value()
    }
}

#[test]
fn generic_functions_run_at_f64_as_rustc_does() {
    let m = lower(GENERICS);
    assert!(m.func_by_name("rosenbrock").is_some_and(|f| f.returns == [jitdiff_ir::Type::F64]));
    let mut rng = Rng::new(31);
    for n in [2usize, 3, 7] {
        let x = rng.normals(n);
        same!(m, rosenbrock(&x[..]));
        same!(m, mixed(&x[..], n));
        same!(m, square(x[0]));
    }
}
