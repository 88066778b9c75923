//! Sparse derivatives: Jacobians ([`SparseJacobianFn`]) and Hessians ([`SparseHessianFn`]) by
//! sparsity detection, graph coloring and compressed evaluation, as [`CsrMatrix`]es.
//!
//! At the first call a handle runs the function once in an abstract interpreter that finds
//! which outputs depend on which inputs ([`jitdiff_ad::sparsity`]), colours the pattern
//! ([`jitdiff_ad::coloring`]) and keeps the result for every later call with the same shapes
//! and integer arguments. An evaluation is then `ceil(colours / W)` sweeps of the handle's
//! compiled forward mode (Jacobians) or Hessian-vector products (Hessians): for a banded
//! problem a few sweeps, whatever `n`. See `docs/sparse.md`.
//!
//! ```
//! use jitdiff::{SparseHessianFn, args, ir::parse_module};
//! // Chained Rosenbrock: a tridiagonal Hessian, star-coloured with 3 colours.
//! let m = parse_module("func @f(x: slice) -> f64 {
//! entry:
//!     n = len x
//!     one = iconst 1
//!     last = isub n, one
//!     zero = iconst 0
//!     acc0 = fconst 0.0
//!     hundred = fconst 100.0
//!     onef = fconst 1.0
//!     jump head(zero, acc0)
//! head(i: i64, acc: f64):
//!     more = icmp lt i, last
//!     br more, body, exit(acc)
//! body:
//!     xi = load x, i
//!     inext = iadd i, one
//!     xn = load x, inext
//!     xi2 = fmul xi, xi
//!     d = fsub xn, xi2
//!     d2 = fmul d, d
//!     t1 = fmul hundred, d2
//!     e = fsub onef, xi
//!     e2 = fmul e, e
//!     term = fadd t1, e2
//!     acc2 = fadd acc, term
//!     jump head(inext, acc2)
//! exit(r: f64):
//!     ret r
//! }").unwrap();
//! let h = SparseHessianFn::builder(&m, "f").wrt(["x"]).build().unwrap();
//! let x = vec![1.0; 1000];
//! let hessian = h.hessian(&mut args![&x]).unwrap();
//! assert_eq!(hessian.nnz(), 3 * 1000 - 2);
//! assert_eq!(h.info(&args![&x]).unwrap().colors, 3);
//! assert_eq!(hessian.get(0, 0), 802.0); // 1200 x0^2 - 400 x1 + 2
//! ```

mod csr;
mod hessian;
mod jacobian;
mod plan;

pub use csr::CsrMatrix;
pub use hessian::SparseHessianFn;
pub use jacobian::SparseJacobianFn;
pub use plan::SparsityInfo;
