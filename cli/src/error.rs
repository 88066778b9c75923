//! The command's error type: every message says what was wrong and what to do about it.

use jitdiff::ir::{InterpError, ParseError, VerifyError};
use jitdiff::jit::{CallError, JitError};

/// Anything that makes a `jitdiff` subcommand fail (exit status 1).
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// The IR file (or an `@file` argument) could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The path given.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The input is larger than the command reads.
    #[error("cannot read {path}: it is larger than {limit_mib} MiB, the most this command reads")]
    TooLarge {
        /// The path given (`-` for standard input).
        path: String,
        /// The limit.
        limit_mib: usize,
    },
    /// The input is not UTF-8 text.
    #[error("cannot read {path}: it is not UTF-8 text (a binary file?); give an IR text file, or - for standard input")]
    NotText {
        /// The path given.
        path: String,
    },
    /// An output file could not be written.
    #[error("cannot write {path}: {source}")]
    Write {
        /// The path.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The IR text does not parse.
    #[error("{path}:{error}")]
    Parse {
        /// The file.
        path: String,
        /// Where and what (line:column: message).
        error: ParseError,
    },
    /// A Rust source (`.rs`) outside the front end's subset.
    #[error("{path}:{error}")]
    Front {
        /// The file.
        path: String,
        /// Where and what (line:column: message).
        error: Box<jitdiff::front::FrontError>,
    },
    /// The IR parses but is not well formed.
    #[error("{}", verify_message(path, error))]
    Verify {
        /// The file.
        path: String,
        /// What is wrong (with line:column).
        error: Box<VerifyError>,
    },
    /// `--fn` names no function of the file.
    #[error("no function @{name} in {path}; it defines {available}")]
    UnknownFunction {
        /// The name given.
        name: String,
        /// The file.
        path: String,
        /// The functions it does define.
        available: String,
    },
    /// The file defines no function at all.
    #[error("{0} defines no function")]
    NoFunction(String),
    /// Wrong number of `--args` values.
    #[error("@{function}{signature} takes {expected} argument(s), but --args gave {got}")]
    ArgCount {
        /// The function.
        function: String,
        /// Its parameter list, e.g. `(x: slice, n: i64)`.
        signature: String,
        /// Its parameter count.
        expected: usize,
        /// The number given.
        got: usize,
    },
    /// An `--args` (or `--tangents`) value that does not fit its parameter.
    #[error("{what} {index} ({name}: {ty}): {message}")]
    BadValue {
        /// `argument` or `tangent`.
        what: &'static str,
        /// 0-based position.
        index: usize,
        /// The parameter's name.
        name: String,
        /// The parameter's type.
        ty: String,
        /// What is wrong and the expected syntax.
        message: String,
    },
    /// A bad `--wrt`, `--sizes`, `--width` or other option.
    #[error("{0}")]
    Usage(String),
    /// Differentiation, compilation, a derivative call, finite differences or a check failed.
    #[error(transparent)]
    Jitdiff(#[from] jitdiff::Error),
    /// A native call failed.
    #[error(transparent)]
    Call(Box<CallError>),
    /// The interpreter failed.
    #[error(transparent)]
    Interp(Box<InterpError>),
    /// Compilation failed.
    #[error(transparent)]
    Jit(Box<JitError>),
    /// The gradient check found errors above the tolerance.
    #[error("gradient check failed: max relative error {max_rel:.3e} is above the tolerance {tolerance:.1e}")]
    CheckFailed {
        /// The largest relative error.
        max_rel: f64,
        /// The tolerance (`--tol`).
        tolerance: f64,
    },
    /// Drawing the plot failed.
    #[error("cannot draw the plot {path}: {message}")]
    Plot {
        /// The output file.
        path: String,
        /// Why.
        message: String,
    },
    /// The demo found a result it did not expect.
    #[error("{0}")]
    Demo(String),
}

impl From<CallError> for CliError {
    fn from(e: CallError) -> CliError {
        CliError::Call(Box::new(e))
    }
}

impl From<InterpError> for CliError {
    fn from(e: InterpError) -> CliError {
        CliError::Interp(Box::new(e))
    }
}

impl From<JitError> for CliError {
    fn from(e: JitError) -> CliError {
        CliError::Jit(Box::new(e))
    }
}

/// `path:line:col: message` when the error has a position, `path: message` otherwise.
fn verify_message(path: &str, error: &VerifyError) -> String {
    match error.pos {
        Some(_) => format!("{path}:{error}"),
        None => format!("{path}: {error}"),
    }
}
