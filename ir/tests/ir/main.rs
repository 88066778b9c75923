//! jitdiff-ir's integration tests, one binary: the builder, the interpreter, the passes, the
//! text format (round trips, random modules), data tables and the tape.

mod builder;
mod interp;
mod passes;
mod random_roundtrip;
mod tables;
mod tape;
mod text_roundtrip;
