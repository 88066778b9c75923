//! # jitdiff
//!
//! A JIT-compiling automatic-differentiation engine. A program in jitdiff's IR — text
//! ([`ir::parse_module`]) or the Rust builder ([`ir::builder`]) — is verified, interpreted by the
//! reference interpreter ([`ir::Interpreter`]) and compiled to native code through Cranelift
//! ([`jit::compile`]), callable through safe handles.
//!
//! ```
//! use jitdiff::ir::{parse_module, ExternRegistry, RuntimeValue};
//! use jitdiff::jit::{compile, Arg, JitOptions};
//!
//! let module = parse_module("
//! func @f(x: f64, y: f64) -> f64 {
//! entry:
//!     p = fmul x, y
//!     s = sin p
//!     ret s
//! }").unwrap();
//! let compiled = compile(&module, &ExternRegistry::new(), &JitOptions::new()).unwrap();
//! let f = compiled.function("f").unwrap();
//! let out = f.call(&mut [Arg::F64(2.0), Arg::F64(0.25)]).unwrap();
//! assert_eq!(out, vec![RuntimeValue::F64(0.5f64.sin())]);
//! ```
//!
//! Differentiation: forward mode with SIMD-batched tangents ([`ForwardFn`]), reverse mode with
//! pullback state ([`GradientFn`]); finite differences on the compiled primal ([`fd`]) and gradient
//! checks of AD against them ([`check`]). See ARCHITECTURE.md.

#![warn(missing_docs)]

pub use jitdiff_ad as ad;
pub use jitdiff_ir as ir;
pub use jitdiff_jit as jit;
pub use jitdiff_rules as rules;

pub mod check;
mod error;
pub mod fd;
mod forward;
mod gradient;
mod hvp;
#[cfg(feature = "argmin")]
pub mod optim;
pub mod parallel;
mod rng;
mod rule_test;

pub use error::Error;
#[cfg(feature = "testing")]
pub use forward::with_tangent_shadows;
pub use forward::{ForwardFn, Jacobian, JvpOutput};
pub use gradient::{GradientFn, Pullback};
pub use hvp::HvpFn;
pub use jitdiff_rules::{RuleError, RuleSet, ScalarRule};
pub use rng::SplitMix64;
pub use rule_test::{RuleTestConfig, RuleTestError, RuleTestReport, test_rule};

// The README's example is compiled and run as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
