//! The Rust front end's tests: every construct lowered and run in the interpreter against the
//! same function compiled by rustc (`constructs`), the errors for what is outside the subset
//! (`errors`), random programs against rustc (`differential`), the benchmark programs of `problems/rust/` (`programs`) and mutated sources
//! that must never panic (`robustness`).

mod support;

mod constructs;
mod differential;
mod errors;
mod programs;
mod robustness;
