//! jitdiff as a [GradBench](https://github.com/gradbench/gradbench) tool.
//!
//! GradBench's evals drive a tool over stdin/stdout, one JSON message per line (`start`,
//! `define`, `evaluate`, `analysis`); [`Tool::respond`] answers one message. Each eval's
//! functions are plain Rust in jitdiff's subset (`models/*.rs`), lowered by
//! [`jitdiff::front::lower_source`], differentiated and JIT-compiled at `define` (reported as a
//! `"compile"` timing), and called at `evaluate` through jitdiff's handles. No derivative is
//! written by hand.
//!
//! Evals the engine cannot express today answer `define` with `success: false` and an error
//! naming the missing feature (see [`evals::define`]).

#![warn(missing_docs)]

pub mod error;
pub mod evals;
pub mod input;
pub mod protocol;

pub use error::ToolError;
pub use protocol::Tool;
