//! The one error type of the public API: every handle, finite differences, checks, the
//! optimiser and the parallel sums return [`Error`], and its variants can be matched on.
//!
//! Messages speak the user's terms: the function and parameter names they wrote, the counts
//! they gave, and for a run-time fault the site in their function (with its line and column
//! when a [`SourceMap`](crate::ir::SourceMap) was given) — never the name of a derived function.

use crate::ad::AdError;
use crate::rule_test::RuleTestError;
use jitdiff_ir::{Fault, ParseError, Pos, Type, VerifyError};
use jitdiff_jit::JitError;
use std::fmt;

/// Anything that can go wrong between IR and a derivative value. Each variant's message says
/// what to fix.
///
/// ```
/// use jitdiff::{Error, GradientFn, ir::parse_module};
/// let m = parse_module("func @f(x: f64, n: i64) -> f64 {\nentry:\n    ret x\n}").unwrap();
/// let err = GradientFn::builder(&m, "f").wrt(["y"]).build().unwrap_err();
/// assert!(matches!(err, Error::UnknownParameter { .. }));
/// assert_eq!(err.to_string(), "@f has no parameter named `y`; its parameters are x: f64, n: i64");
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// IR text did not parse.
    #[error(transparent)]
    Parse(#[from] ParseError),
    /// A module did not verify.
    #[error(transparent)]
    Verify(#[from] Box<VerifyError>),
    /// Rust source outside the front end's subset (with its line:column).
    #[error(transparent)]
    Front(#[from] Box<jitdiff_front::FrontError>),
    /// The function could not be differentiated.
    #[error(transparent)]
    Ad(#[from] AdError),
    /// The function or its derivative could not be compiled to native code.
    #[error("cannot compile @{function}: {message}")]
    Compile {
        /// The user's function.
        function: String,
        /// Why (Cranelift's or the JIT's words, with derived names replaced).
        message: String,
    },
    /// No function of that name in the module.
    #[error("no function @{name} in the module; it has {}", function_list(available))]
    UnknownFunction {
        /// The name asked for.
        name: String,
        /// The functions the module has.
        available: Vec<String>,
    },
    /// `.wrt` named a parameter the function does not have.
    #[error("@{function} has no parameter named `{name}`; its parameters are {signature}")]
    UnknownParameter {
        /// The function.
        function: String,
        /// The name given.
        name: String,
        /// Its parameters, `name: type` each.
        signature: String,
    },
    /// `.wrt` gave a parameter index out of range.
    #[error("@{function} has {count} parameter(s) ({signature}), so there is no parameter {index}")]
    ParameterIndex {
        /// The function.
        function: String,
        /// The index given.
        index: i64,
        /// How many parameters the function has.
        count: usize,
        /// Its parameters, `name: type` each.
        signature: String,
    },
    /// Nothing was marked for differentiation.
    #[error(
        "nothing to differentiate in @{function}: name the parameters with .wrt([...]) (its f64 and slice parameters are {})",
        list_or_none(candidates)
    )]
    NoWrt {
        /// The function.
        function: String,
        /// The parameters that could be differentiated.
        candidates: Vec<String>,
    },
    /// A parameter that cannot carry a derivative was marked.
    #[error("parameter `{param}` of @{function} is {ty}; only f64, slice and mslice parameters can be differentiated")]
    NotDifferentiable {
        /// The function.
        function: String,
        /// The parameter's name.
        param: String,
        /// Its type.
        ty: Type,
    },
    /// The operation needs an `f64` result (a gradient, a Hessian-vector product, an objective).
    #[error("@{function} returns no f64 result, so it has no {what}")]
    NoFloatResult {
        /// The function.
        function: String,
        /// What was asked for ("gradient", ...).
        what: &'static str,
    },
    /// The wrong number of arguments.
    #[error("@{function} takes {expected} argument(s) ({signature}), but {got} were given")]
    ArgumentCount {
        /// The function.
        function: String,
        /// Its parameters, `name: type` each.
        signature: String,
        /// Its parameter count.
        expected: usize,
        /// The number of arguments given.
        got: usize,
    },
    /// An argument of the wrong kind.
    #[error("argument {index} of @{function} (`{param}: {expected}`) must be {}, but {got} was given", arg_hint(*expected))]
    ArgumentType {
        /// The function.
        function: String,
        /// The 0-based position.
        index: usize,
        /// The parameter's name.
        param: String,
        /// The parameter's type.
        expected: Type,
        /// What was given (`Arg::F64`, ...).
        got: &'static str,
    },
    /// A buffer (gradient, tangents, cotangents ...) of the wrong length.
    #[error("{buffer} for @{function} must hold {expected} value(s), but it holds {got}{}", why(reason))]
    BufferLength {
        /// The function.
        function: String,
        /// Which buffer.
        buffer: Buffer,
        /// The length it must have.
        expected: usize,
        /// The length given.
        got: usize,
        /// How the expected length comes about.
        reason: String,
    },
    /// A run-time fault (an index out of bounds, an integer division by zero ...).
    #[error("{}", fault_message(function, fault, position.as_ref(), *in_derivative))]
    Fault {
        /// The user's function that was called.
        function: String,
        /// The fault, at its site in the user's code when `in_derivative` is false.
        fault: Box<Fault>,
        /// The line and column of the faulting instruction, when a source map was given.
        position: Option<Pos>,
        /// The fault happened in derivative code and the function alone does not fault with
        /// these arguments (so there is no site in the user's code to name).
        in_derivative: bool,
    },
    /// Sparsity detection could not find a pattern: a loop whose trip count depends on the
    /// differentiated inputs, an unregistered extern, a pattern too dense to be worth it ...
    #[error("@{function}: sparsity detection failed: {message}")]
    Sparsity {
        /// The user's function.
        function: String,
        /// What and where (with the line and column when a source map was given).
        message: String,
    },
    /// An objective gave a value or gradient that is NaN or infinite: an optimiser cannot
    /// continue from it (argmin's line searches would loop for ever).
    #[error(
        "the objective's {what} is not finite ({value}) at the point tried; the model overflows or leaves its domain there — bound the step, rescale the variables or guard the model"
    )]
    NonFinite {
        /// `value`, or `gradient entry k`.
        what: String,
        /// The offending number.
        value: f64,
    },
    /// A finite-difference step outside `[f64::EPSILON, 1]`.
    #[error(
        "the finite-difference step {0:e} is not in [2.2e-16, 1]; use a small positive relative step (the defaults are 6.06e-6 for central and 1.49e-8 for forward differences)"
    )]
    BadStep(f64),
    /// A setting that does not fit the function or the other settings.
    #[error("{0}")]
    Setting(String),
    /// A dense result too large to allocate.
    #[error(
        "the dense {what} of @{function} would have {rows} × {cols} entries, more than this machine can allocate; use the products (jvp, vjp, hvp) or the sparse handles instead"
    )]
    TooLarge {
        /// The user's function.
        function: String,
        /// `"Jacobian"` or `"Hessian"`.
        what: &'static str,
        /// Its rows.
        rows: usize,
        /// Its columns.
        cols: usize,
    },
    /// A sparsity pattern that is not consistent (see `Pattern::check`).
    #[error("the sparsity pattern is not consistent: {0}")]
    Pattern(String),
    /// A list given with a sparse matrix whose length does not fit the matrix's shape.
    #[error("{what} must hold {expected} value(s) for this {rows}×{cols} sparse matrix, but it holds {got}")]
    MatrixShape {
        /// Which list: `"the values"`, `"x"` or `"y"`.
        what: &'static str,
        /// The length it must have.
        expected: usize,
        /// The length given.
        got: usize,
        /// The matrix's rows.
        rows: usize,
        /// The matrix's columns.
        cols: usize,
    },
    /// Data that are not a whole number of samples.
    #[error("the data ({len} values) must be a non-empty whole number of samples of {sample_len} values")]
    Data {
        /// Length of the data.
        len: usize,
        /// Length of one sample.
        sample_len: usize,
    },
    /// A thread pool could not be built.
    #[error("could not start a thread pool of {threads} threads: {source}")]
    ThreadPool {
        /// The requested number of threads.
        threads: usize,
        /// Why.
        source: rayon::ThreadPoolBuildError,
    },
    /// A bug in jitdiff: something its own checks should have ruled out.
    #[error(
        "internal error in jitdiff while computing a derivative of @{function}: {message} (please report this with the IR)"
    )]
    Internal {
        /// The user's function.
        function: String,
        /// What went wrong.
        message: String,
    },
    /// A custom rule failed [`test_rule`](crate::test_rule).
    #[error(transparent)]
    RuleTest(#[from] Box<RuleTestError>),
}

/// The buffers whose lengths a call checks.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Buffer {
    /// The gradient (one entry per differentiated scalar).
    Gradient,
    /// The tangent of a parameter.
    Tangent(String),
    /// The list of tangents (one per differentiated parameter).
    Tangents,
    /// Output cotangents (one per output).
    Cotangents,
    /// The input cotangents a VJP writes (one per differentiated scalar).
    InputCotangents,
    /// Hessian-vector directions.
    Directions,
    /// Hessian-vector products.
    Products,
    /// An optimisation point.
    Point,
    /// Entry indices into the gradient.
    Entry,
}

impl fmt::Display for Buffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Buffer::Gradient => f.write_str("the gradient buffer"),
            Buffer::Tangent(p) => write!(f, "the tangent of `{p}`"),
            Buffer::Tangents => f.write_str("the list of tangents"),
            Buffer::Cotangents => f.write_str("the output cotangents"),
            Buffer::InputCotangents => f.write_str("the input-cotangent buffer"),
            Buffer::Directions => f.write_str("the directions"),
            Buffer::Products => f.write_str("the product buffer"),
            Buffer::Point => f.write_str("the point"),
            Buffer::Entry => f.write_str("a gradient entry index"),
        }
    }
}

impl From<jitdiff_front::FrontError> for Error {
    fn from(e: jitdiff_front::FrontError) -> Error {
        Error::Front(Box::new(e))
    }
}

impl From<VerifyError> for Error {
    fn from(e: VerifyError) -> Error {
        Error::Verify(Box::new(e))
    }
}

impl From<RuleTestError> for Error {
    fn from(e: RuleTestError) -> Error {
        Error::RuleTest(Box::new(e))
    }
}

impl Error {
    /// A compile error of `function`'s derivative, in its terms.
    pub(crate) fn compile(function: &str, e: JitError) -> Error {
        let message = match e {
            JitError::Codegen { message, .. } => message,
            other => other.to_string(),
        };
        Error::Compile { function: function.into(), message }
    }
}

fn list_or_none(names: &[String]) -> String {
    if names.is_empty() { "none".into() } else { names.join(", ") }
}

fn function_list(names: &[String]) -> String {
    let named: Vec<String> = names.iter().map(|n| format!("@{n}")).collect();
    list_or_none(&named)
}

fn why(reason: &str) -> String {
    if reason.is_empty() { String::new() } else { format!(" ({reason})") }
}

fn arg_hint(ty: Type) -> &'static str {
    match ty {
        Type::F64 => "Arg::F64 (an f64)",
        Type::I64 => "Arg::I64 (an integer)",
        Type::Bool => "Arg::Bool",
        Type::Slice => "Arg::Slice (&[f64]) or Arg::SliceMut",
        Type::SliceMut => "Arg::SliceMut (&mut [f64])",
        Type::F64x(_) => "Arg::Vector",
    }
}

fn fault_message(function: &str, fault: &Fault, position: Option<&Pos>, in_derivative: bool) -> String {
    let what = crate::replay::describe(fault);
    if in_derivative {
        return format!(
            "@{function}: {what}, in derivative code (the function alone does not fault at these arguments)"
        );
    }
    let site = fault.site();
    let at = match position {
        Some(p) => format!("line {}, column {}", p.line, p.col),
        None => format!("block {}, instruction {}", site.block, site.inst),
    };
    if site.func == function {
        format!("@{function}: {what} at {at}")
    } else {
        format!("@{function}: {what} at {at} of @{}, which it calls", jitdiff_front::source_function_name(&site.func))
    }
}
