//! Each construct of the subset, written once (`dual!`) as Rust compiled by rustc and as the
//! front end's input; the interpreter must give the same bits on every input.

// The functions exercise the subset's constructs one by one, not idiomatic Rust.
#![allow(clippy::all)]

mod arith;
pub(crate) mod arrays;
mod calls;
pub(crate) mod control;
mod generics;
pub(crate) mod iterators;
mod math;
pub(crate) mod picks;
pub(crate) mod rows;
pub(crate) mod structs;
mod tables;
