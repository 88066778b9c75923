//! [`FrontError`]: what is wrong with the Rust source, where (1-based line and column), and what
//! to write instead.

use proc_macro2::Span;
use std::fmt;

/// A 1-based line and column in the Rust source (columns count characters).
///
/// ```
/// use jitdiff_front::Position;
/// assert_eq!(Position { line: 3, column: 9 }.to_string(), "3:9");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Position {
    /// 1-based line.
    pub line: u32,
    /// 1-based column, in characters.
    pub column: u32,
}

impl Position {
    /// Where a syntax node starts (`proc-macro2` reports 0-based columns; ours are 1-based).
    pub(crate) fn of(span: Span) -> Position {
        let start = span.start();
        let clamp = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        Position { line: clamp(start.line), column: clamp(start.column).saturating_add(1) }
    }
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.column)
    }
}

/// Why a Rust source could not be lowered, at a [`Position`].
///
/// Displays as `line:column: message`; every message names the construct and says what to
/// write instead.
///
/// ```
/// let err = jitdiff_front::lower_source("fn f(x: f64) -> f64 {\n    let g = |y: f64| y;\n    let h = g;\n    h(x)\n}").unwrap_err();
/// assert_eq!((err.position.line, err.position.column), (3, 13));
/// assert!(err.to_string().starts_with("3:13: closures used other than by a call"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{position}: {kind}")]
pub struct FrontError {
    /// Where the offending construct starts.
    pub position: Position,
    /// What is wrong.
    pub kind: FrontErrorKind,
}

impl FrontError {
    /// An error of `kind` at the start of `span`.
    pub(crate) fn new(span: Span, kind: FrontErrorKind) -> FrontError {
        FrontError { position: Position::of(span), kind }
    }
    /// The message without the position.
    pub fn message(&self) -> String {
        self.kind.to_string()
    }
}

/// What a [`FrontError`] is about. Each message says what to write instead.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FrontErrorKind {
    /// The text is not Rust at all (the parser's message).
    #[error("this is not valid Rust: {message}")]
    Syntax {
        /// The parser's message.
        message: String,
    },
    /// A Rust construct outside the subset (named in the plural: "closures that capture a
    /// mutable variable", "generic functions"...).
    #[error("{construct} are not supported; {instead}")]
    Unsupported {
        /// The construct.
        construct: String,
        /// The rewrite to use.
        instead: String,
    },
    /// A construct the IR has no primitive for yet.
    #[error("{construct} is not supported yet: {why}; {instead}")]
    NotYetSupported {
        /// The construct.
        construct: String,
        /// What is missing.
        why: String,
        /// What to write meanwhile.
        instead: String,
    },
    /// A name that is not a local, a parameter, a constant or a function of the program.
    #[error("cannot find {what} `{name}`; {instead}")]
    Unknown {
        /// "value", "function", "method on `f64`" ...
        what: String,
        /// The name.
        name: String,
        /// What exists instead.
        instead: String,
    },
    /// A method the type does not have (in the subset).
    #[error("no method `{method}` on `{ty}`; {instead}")]
    UnknownMethod {
        /// The receiver's type.
        ty: String,
        /// The method.
        method: String,
        /// What exists instead.
        instead: String,
    },
    /// Operand or argument types that do not fit.
    #[error("mismatched types: expected `{expected}`, found `{found}`; {instead}")]
    TypeMismatch {
        /// The type wanted.
        expected: String,
        /// The type given.
        found: String,
        /// The fix (`add \`as f64\``...).
        instead: String,
    },
    /// A read of a variable that is not initialised on every path to it.
    #[error(
        "`{name}` is used before it is initialised on every path; assign it in every branch before, or initialise it in its `let`"
    )]
    Uninitialised {
        /// The variable.
        name: String,
    },
    /// An assignment to an immutable binding.
    #[error("cannot assign to `{name}`, which is not declared `mut`; declare it with `let mut {name}`")]
    Immutable {
        /// The variable.
        name: String,
    },
    /// A mutable slice passed more than once to one call.
    #[error("`{name}` is borrowed mutably by this call and passed to it again; pass it once")]
    AliasedMutable {
        /// The slice.
        name: String,
    },
    /// An integer or float literal that does not fit its type.
    #[error("literal `{literal}` does not fit in `{ty}`; use a smaller value or a wider type")]
    LiteralOverflow {
        /// The literal as written.
        literal: String,
        /// Its type.
        ty: String,
    },
    /// A call with the wrong number of arguments.
    #[error("`{name}` takes {expected} argument{} but {found} {} given; pass {expected}", plural(*expected), were(*found))]
    ArgCount {
        /// The callee.
        name: String,
        /// Its parameter count.
        expected: usize,
        /// The arguments given.
        found: usize,
    },
    /// A function declared without a body (outside an `extern` block).
    #[error(
        "function `{name}` has no body; give it one, or declare it inside `extern \"C\" {{ ... }}` to call a native function"
    )]
    MissingBody {
        /// The function.
        name: String,
    },
    /// Two items with one name.
    #[error("`{name}` is defined more than once; rename one of them")]
    Duplicate {
        /// The name.
        name: String,
    },
    /// A function with a result whose body can end without one.
    #[error(
        "`{name}` must return `{ty}` but its body ends without a value; end it with an expression (no `;`) or a `return`"
    )]
    MissingReturnValue {
        /// The function.
        name: String,
        /// Its result type.
        ty: String,
    },
    /// Any other misuse, with its explanation and fix.
    #[error("{message}")]
    Invalid {
        /// What is wrong and what to write instead.
        message: String,
    },
    /// A bug of this crate (the IR it built does not verify, or it panicked).
    #[error("internal error of the Rust front end: {message}; please report it with the source")]
    Internal {
        /// What went wrong.
        message: String,
    },
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

fn were(n: usize) -> &'static str {
    if n == 1 { "was" } else { "were" }
}

/// Shorthands for building errors at a span.
pub(crate) fn unsupported(span: Span, construct: impl Into<String>, instead: impl Into<String>) -> FrontError {
    FrontError::new(span, FrontErrorKind::Unsupported { construct: construct.into(), instead: instead.into() })
}

pub(crate) fn invalid(span: Span, message: impl Into<String>) -> FrontError {
    FrontError::new(span, FrontErrorKind::Invalid { message: message.into() })
}

pub(crate) fn mismatch(
    span: Span,
    expected: impl fmt::Display,
    found: impl fmt::Display,
    instead: impl Into<String>,
) -> FrontError {
    FrontError::new(
        span,
        FrontErrorKind::TypeMismatch {
            expected: expected.to_string(),
            found: found.to_string(),
            instead: instead.into(),
        },
    )
}

/// The result type of lowering.
pub(crate) type Result<T> = std::result::Result<T, FrontError>;
