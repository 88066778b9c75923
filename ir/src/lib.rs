//! # jitdiff-ir
//!
//! The IR of jitdiff: SSA values with types `f64`, `i64`, `bool`, `f64` slices and `f64xW` lane
//! vectors; blocks with parameters; modules of externs, read-only data tables ([`Table`]) and
//! functions; one op table ([`OP_TABLE`]) that defines every primitive once.
//! Around it: a text format (parser and printer that round-trip), a Rust builder, a verifier that
//! names function, block, instruction and line:column, a reference interpreter (the oracle for
//! every later stage), and IR passes (dead-code elimination, constant folding, CSE).
//!
//! This crate knows nothing of Cranelift or of differentiation.

#![warn(missing_docs)]

pub mod analysis;
#[cfg(feature = "arbitrary")]
pub mod arbitrary;
pub mod builder;
mod contain;
mod derivative;
mod externs;
mod fault;
mod function;
pub mod interp;
mod local_arrays;
pub mod math;
mod opcode;
pub mod passes;
mod spans;
mod tape;
pub mod text;
mod types;
mod values;
pub mod verifier;

pub use contain::contain_panics;
pub use derivative::{DerivativeOf, DiffMode};
pub use externs::{ExternArg, ExternClosure, ExternError, ExternImpl, ExternRegistry};
pub use function::{
    Block, BlockCall, BlockData, Callee, ExternDecl, ExternId, FuncId, Function, Imm, InstData, Module, Table, TableId,
    Terminator, Value, ValueData, ValueList, is_anonymous_value_name,
};
pub use interp::{ArgValue, Fault, InterpError, Interpreter, MAX_CALL_DEPTH, RuntimeValue, Site, interpret};
pub use local_arrays::LocalArrays;
pub use opcode::{CondCode, MathFn, OP_TABLE, OpInfo, Opcode, Shape};
pub use spans::{FuncSpans, Pos, SourceMap};
pub use tape::{Tape, TapeError};
pub use text::{ParseError, ParseErrorKind, parse_module, parse_module_with_spans, print_function, print_module};
pub use types::{Type, VECTOR_WIDTHS};
pub use verifier::{
    InstRef, VerifyError, VerifyErrorKind, verify_all, verify_module, verify_module_from, verify_module_with_spans,
};
