//! # jitdiff
//!
//! A JIT-compiling automatic-differentiation engine. A program in jitdiff's IR — text
//! ([`ir::parse_module`]) or the Rust builder ([`ir::builder`]) — is verified, interpreted by the
//! reference interpreter ([`ir::Interpreter`]) and compiled to native code through Cranelift
//! ([`jit::compile`]), callable through safe handles.
//!
//! ```
//! use jitdiff::{GradientFn, args, ir::parse_module};
//!
//! let module = parse_module("
//! func @f(x: f64, y: f64) -> f64 {
//! entry:
//!     p = fmul x, y
//!     s = sin p
//!     ret s
//! }").unwrap();
//! let f = GradientFn::builder(&module, "f").wrt(["x", "y"]).build().unwrap();
//! let mut grad = [0.0; 2];
//! let value = f.value_and_grad(&mut args![2.0, 0.25], &mut grad).unwrap();
//! assert_eq!(value, 0.5f64.sin());
//! assert_eq!(grad, [0.25 * 0.5f64.cos(), 2.0 * 0.5f64.cos()]);
//! ```
//!
//! Every handle is built the same way — `Kind::builder(&module, "name").wrt([...])` — and takes
//! its arguments as [`Arg`]s ([`args!`] converts plain Rust values). Differentiation: reverse
//! mode with pullback state ([`GradientFn`], also vector-Jacobian products), forward mode with
//! SIMD-batched tangents ([`ForwardFn`]), Jacobians by whichever mode fits their shape
//! ([`JacobianFn`]), Hessian-vector products ([`HvpFn`]); sparse Jacobians and Hessians by
//! coloring ([`SparseJacobianFn`], [`SparseHessianFn`], [`sparse`]); finite differences on the compiled
//! primal ([`fd`]) and checks of AD against them ([`check`]); objectives for argmin and a
//! minimiser ([`optim`]); data-parallel sums ([`parallel`]). One error type, [`Error`].
//! See docs/api.md and ARCHITECTURE.md.
//!
//! The function can also be written once, in Rust: [`macro@function`] (one `fn`) and
//! [`macro@module`] (functions that call each other) lower it to IR while the crate compiles —
//! source outside the subset of docs/rust.md is a compile error at the construct — and add typed
//! handles that take the function's own parameter types ([`typed`]); [`front::lower_source`]
//! does the same lowering at run time.
//!
//! ```
//! #[jitdiff::function]
//! fn rosenbrock(x: &[f64]) -> f64 {
//!     let mut sum = 0.0;
//!     for i in 0..x.len() - 1 {
//!         let (d, e) = (x[i + 1] - x[i] * x[i], 1.0 - x[i]);
//!         sum += 100.0 * d * d + e * e;
//!     }
//!     sum
//! }
//!
//! let x = [-1.2, 1.0, 1.0];
//! let g = rosenbrock::gradient()?; // still an ordinary fn too: rosenbrock(&x)
//! let (f, df) = g.value_and_grad(&x)?;
//! assert_eq!(f, rosenbrock(&x));
//! assert_eq!(df.len(), 3);
//! # Ok::<(), jitdiff::Error>(())
//! ```

#![warn(missing_docs)]

pub use jitdiff_ad as ad;
pub use jitdiff_front as front;
pub use jitdiff_ir as ir;
pub use jitdiff_jit as jit;
pub use jitdiff_rules as rules;

mod builder;
pub mod check;
mod error;
pub mod fd;
mod forward;
mod fused;
mod gradient;
mod hvp;
mod inlining;
mod jacobian;
mod layout;
#[cfg(feature = "argmin")]
pub mod nested;
pub mod optim;
pub mod parallel;
mod primal;
mod pullback;
mod replay;
mod rng;
mod rule_test;
mod scratch;
pub mod sparse;
mod speculation;
pub mod typed;
mod user;
mod vg_direct;

pub use builder::{Build, Builder, HasWidth, ParamRef};
pub use error::{Buffer, Error};
#[cfg(feature = "testing")]
pub use forward::with_tangent_shadows;
pub use forward::{ForwardFn, Jacobian, JvpOutput};
pub use fused::value_and_grad_ir;
pub use gradient::{GradientFn, GradientMode};
pub use hvp::HvpFn;
pub use jacobian::{JacobianFn, JacobianMode};
pub use jitdiff_jit::Arg;
pub use jitdiff_macros::{function, module};
pub use jitdiff_rules::{RuleError, RuleSet, ScalarRule};
pub use nested::{grad_forward, grad_reverse};
pub use primal::PrimalFn;
pub use pullback::Pullback;
pub use rng::SplitMix64;
pub use rule_test::{RuleTestConfig, RuleTestError, RuleTestReport, test_rule};
pub use scratch::release_scratch;
pub use sparse::{SparseHessianFn, SparseJacobianFn};

/// A fixed-size array of [`Arg`]s from plain Rust values: `f64`, integers, `bool`, `&[f64]` /
/// `&Vec<f64>` / `&[f64; N]` (read-only slices) and their `&mut` forms (mutable slices).
///
/// ```
/// use jitdiff::{Arg, args};
/// let (x, mut out) = (vec![1.0, 2.0], vec![0.0; 2]);
/// let list = args![&x, 0.5, 3, &mut out];
/// assert!(matches!(list, [Arg::Slice(_), Arg::F64(_), Arg::I64(3), Arg::SliceMut(_)]));
/// ```
#[macro_export]
macro_rules! args {
    ($($value:expr),* $(,)?) => {
        [$($crate::Arg::from($value)),*]
    };
}

// The README's example is compiled and run as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

// So are docs/api.md's.
#[cfg(doctest)]
#[doc = include_str!("../docs/api.md")]
struct ApiDocDoctests;

// And docs/sparse.md's.
#[cfg(doctest)]
#[doc = include_str!("../docs/sparse.md")]
struct SparseDocDoctests;
