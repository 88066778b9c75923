//! The tool's one error type.

use std::fmt;

/// What can go wrong while answering a message. Every variant becomes a `success: false`
/// response with the message as `error`; none aborts the tool.
#[derive(Debug)]
pub enum ToolError {
    /// A line that is not a JSON object, or a message without a usable field.
    Message(String),
    /// An `evaluate` input that lacks a field or has the wrong shape.
    Input {
        /// The field (a path such as `x[3]`).
        field: String,
        /// What was wrong with it.
        reason: String,
    },
    /// `define` of an eval this tool does not know.
    UnknownModule(String),
    /// `evaluate` before a successful `define` of that module.
    NotDefined(String),
    /// A function name the eval does not have.
    UnknownFunction {
        /// The eval.
        module: &'static str,
        /// The function asked for.
        function: String,
    },
    /// An error from jitdiff (lowering, differentiation, compilation, a call).
    Jitdiff(jitdiff::Error),
    /// An error of the front end lowering a model's source.
    Front(String),
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ToolError::Message(m) => write!(f, "malformed message: {m}"),
            ToolError::Input { field, reason } => write!(f, "input field `{field}`: {reason}"),
            ToolError::UnknownModule(m) => write!(f, "jitdiff-gradbench does not implement the eval `{m}`"),
            ToolError::NotDefined(m) => write!(f, "module `{m}` has not been defined"),
            ToolError::UnknownFunction { module, function } => {
                write!(f, "eval `{module}` has no function `{function}`")
            }
            ToolError::Jitdiff(e) => write!(f, "jitdiff: {e}"),
            ToolError::Front(e) => write!(f, "front end: {e}"),
        }
    }
}

impl std::error::Error for ToolError {}

impl From<jitdiff::Error> for ToolError {
    fn from(e: jitdiff::Error) -> Self {
        ToolError::Jitdiff(e)
    }
}

impl From<jitdiff::front::FrontError> for ToolError {
    fn from(e: jitdiff::front::FrontError) -> Self {
        ToolError::Front(e.to_string())
    }
}
