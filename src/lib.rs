//! # jitdiff
//!
//! A JIT-compiling automatic-differentiation engine. (Being built.)

pub mod problems;
