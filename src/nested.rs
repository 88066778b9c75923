//! Nested gradients in plain Rust: [`grad_forward`] and [`grad_reverse`], which a function
//! lowered by jitdiff's front end (`#[jitdiff::function]`, `jitdiff::front::lower_source`) may
//! call to take the gradient of another function inside it — the derivative jitdiff then
//! differentiates again when the outer function is differentiated.
//!
//! Under jitdiff, a call is an exact derivative by the mode named (a derivative declaration in
//! the IR, `grad forward|reverse @f wrt ...`, expanded when a handle is built). When the same
//! Rust is compiled by rustc and run natively, these functions cannot see the code of the
//! closure; they approximate the gradient by central differences (relative step ∛ε), so that
//! the model still runs, close to what jitdiff computes.

/// A point at which a gradient is taken: an `f64`, or a tuple of two to eight `f64`s; the
/// gradient has the same shape.
pub trait Point: Copy {
    /// The number of coordinates.
    const LEN: usize;
    /// Coordinate `i`.
    fn coordinate(&self, i: usize) -> f64;
    /// The point with coordinate `i` replaced by `value`.
    fn with_coordinate(self, i: usize, value: f64) -> Self;
    /// The point of all zeros.
    fn zero() -> Self;
}

impl Point for f64 {
    const LEN: usize = 1;
    fn coordinate(&self, _: usize) -> f64 {
        *self
    }
    fn with_coordinate(self, _: usize, value: f64) -> f64 {
        value
    }
    fn zero() -> f64 {
        0.0
    }
}

macro_rules! tuple_point {
    ($len:expr; $($index:tt),*) => {
        impl Point for ($(tuple_point!(@f64 $index),)*) {
            const LEN: usize = $len;
            fn coordinate(&self, i: usize) -> f64 {
                match i { $($index => self.$index,)* _ => f64::NAN }
            }
            fn with_coordinate(mut self, i: usize, value: f64) -> Self {
                match i { $($index => self.$index = value,)* _ => {} }
                self
            }
            fn zero() -> Self {
                ($(tuple_point!(@zero $index),)*)
            }
        }
    };
    (@f64 $index:tt) => { f64 };
    (@zero $index:tt) => { 0.0 };
}

tuple_point!(2; 0, 1);
tuple_point!(3; 0, 1, 2);
tuple_point!(4; 0, 1, 2, 3);
tuple_point!(5; 0, 1, 2, 3, 4);
tuple_point!(6; 0, 1, 2, 3, 4, 5);
tuple_point!(7; 0, 1, 2, 3, 4, 5, 6);
tuple_point!(8; 0, 1, 2, 3, 4, 5, 6, 7);

/// The gradient of `f` at `at`, by forward mode under jitdiff (one sweep with a tangent lane
/// per coordinate).
///
/// ```
/// fn f(a: f64, y1: f64, y2: f64) -> f64 {
///     a * y1 * y1 + y2
/// }
/// let (g1, g2) = jitdiff::grad_forward(|(y1, y2)| f(3.0, y1, y2), (1.0, 5.0));
/// assert!((g1 - 6.0).abs() < 1e-8 && (g2 - 1.0).abs() < 1e-8);
/// ```
pub fn grad_forward<P: Point>(f: impl Fn(P) -> f64, at: P) -> P {
    central_differences(f, at)
}

/// The gradient of `f` at `at`, by reverse mode under jitdiff (one forward run, one pullback).
///
/// ```
/// fn f(a: f64, y: f64) -> f64 {
///     a * y.sin()
/// }
/// let g = jitdiff::grad_reverse(|y| f(2.0, y), 0.0);
/// assert!((g - 2.0).abs() < 1e-8);
/// ```
pub fn grad_reverse<P: Point>(f: impl Fn(P) -> f64, at: P) -> P {
    central_differences(f, at)
}

fn central_differences<P: Point>(f: impl Fn(P) -> f64, at: P) -> P {
    let mut gradient = P::zero();
    for i in 0..P::LEN {
        let x = at.coordinate(i);
        let h = f64::EPSILON.cbrt() * x.abs().max(1.0);
        let (up, down) = (f(at.with_coordinate(i, x + h)), f(at.with_coordinate(i, x - h)));
        gradient = gradient.with_coordinate(i, (up - down) / (2.0 * h));
    }
    gradient
}
