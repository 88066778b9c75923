//! jitdiff-jit's integration tests, one binary: native code against the interpreter (every op,
//! random programs, tapes, externs, threads), bad input, loop versioning and shadow slices, and
//! the `// SAFETY:` comment of every `unsafe` block. The memory figures are `tests/memory`.

mod bad_input;
mod doubling;
mod externs;
mod inline;
mod loop_copies;
mod ops;
mod random;
mod rotation;
mod safety_comments;
mod shadow;
mod tape;
mod tape_loops;
mod threads;
mod trig;
mod typed;
mod versioning;
