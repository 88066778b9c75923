//! Errors of the differentiation transforms.

use jitdiff_ir::VerifyError;

/// Why a function could not be differentiated. Messages name the function and, where there is
/// one, the block and instruction, and say what to change.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum AdError {
    /// The module does not verify; differentiate only verified IR.
    #[error("the module does not verify: {0}")]
    Verify(Box<VerifyError>),
    /// No function of that name.
    #[error("no function @{0} in the module")]
    UnknownFunction(String),
    /// The activity mask does not have one entry per parameter.
    #[error("@{func} has {expected} parameters but {found} differentiation flags were given")]
    WrongMaskLength {
        /// The function.
        func: String,
        /// Its parameter count.
        expected: usize,
        /// Flags given.
        found: usize,
    },
    /// An integer or boolean parameter was marked as differentiated.
    #[error(
        "parameter {index} of @{func} has type {ty}, which has no tangent; differentiate only f64 and slice parameters"
    )]
    NotDifferentiable {
        /// The function.
        func: String,
        /// The parameter position.
        index: usize,
        /// Its type.
        ty: jitdiff_ir::Type,
    },
    /// The tangent width is not 1, 2, 4, 8 or 16.
    #[error("tangent width {0} is not supported; use 1, 2, 4, 8 or 16")]
    BadWidth(u8),
    /// An active value is stored into a slice that is not differentiated, so its derivative
    /// would be lost.
    #[error(
        "@{func}, block {block}, inst {inst}: an active value is stored into `{slice}`, which is not differentiated; differentiate that slice parameter too"
    )]
    StoreIntoInactiveSlice {
        /// The function.
        func: String,
        /// The block label.
        block: String,
        /// The instruction index in the block.
        inst: usize,
        /// The slice parameter's name.
        slice: String,
    },
    /// A custom rule that does not fit the function it is registered for.
    #[error("the custom rule for @{function} (from {origin}) does not fit: {message}")]
    BadRule {
        /// The function the rule is registered for.
        function: String,
        /// Where the rule came from.
        origin: String,
        /// What is wrong.
        message: String,
    },
    /// An active call to an extern with no registered rule.
    #[error(
        "@{func}, block {block}, inst {inst}: active call to extern @{callee}, which has no differentiation rule; register one or make the call inactive"
    )]
    NoRule {
        /// The calling function.
        func: String,
        /// The block label.
        block: String,
        /// The instruction index.
        inst: usize,
        /// The extern.
        callee: String,
    },
    /// An active value flows through an operation this transform does not differentiate yet.
    #[error("@{func}, block {block}, inst {inst}: `{op}` on an active value is not differentiable yet")]
    Unsupported {
        /// The function.
        func: String,
        /// The block label.
        block: String,
        /// The instruction index.
        inst: usize,
        /// The opcode spelling.
        op: &'static str,
    },
    /// A function differentiated in reverse mode (or one it calls) uses the tape itself: its
    /// pushes and pops would interleave with the pullback state its derivative records there.
    #[error(
        "@{func}, block {block}, inst {inst}: `{op}` in a function differentiated in reverse mode; the derivative keeps its pullback state on the call's tape, so the function (and everything it calls) must not push or pop the tape itself — keep its own state in a local array or a slice instead"
    )]
    TapeInReverseMode {
        /// The function holding the instruction.
        func: String,
        /// The block label.
        block: String,
        /// The instruction index.
        inst: usize,
        /// `tpush` or `tpop`.
        op: &'static str,
    },
    /// A differentiated function (or one it calls) passes one `mslice` both to a read-only
    /// `slice` parameter of a callee and to one of its `mslice` parameters: derivatives read a
    /// `slice` again after the call, assuming nothing writes it.
    #[error(
        "@{func}, block {block}, inst {inst}: call @{callee} passes the mutable slice `{slice}` both to a read-only slice parameter and to a mutable one; derivatives read a `slice` again after writes (and merge repeated reads of it), assuming nothing writes it through another parameter — pass a copy to the read-only parameter"
    )]
    AliasedSlices {
        /// The function holding the call.
        func: String,
        /// The block label.
        block: String,
        /// The instruction index.
        inst: usize,
        /// The called function.
        callee: String,
        /// The slice passed twice, as the caller names it.
        slice: String,
    },
    /// A derivative declared in the module (`extern @name(...) = grad ...`) cannot be derived.
    #[error("the derivative @{name} declared in the module cannot be derived: {reason}")]
    NestedDerivative {
        /// The declaration's name.
        name: String,
        /// Why, and what to change.
        reason: String,
    },
    /// The transform itself failed (a panic inside it): a bug in jitdiff, reported as an error
    /// naming the function rather than unwinding into the caller.
    #[error("internal error while differentiating @{func}: {message} (a bug in jitdiff; please report it with the IR)")]
    Internal {
        /// The function being differentiated.
        func: String,
        /// What went wrong.
        message: String,
    },
    /// Checkpointing was asked for and no loop of the function can be checkpointed: the first
    /// loop, and why.
    #[error(
        "cannot checkpoint the loop at block `{block}` of @{func}: {reason}. Checkpointing takes a counted loop \
         (`i < bound`, `i + 1` each iteration) whose body reads only scalars and read-only slices and stores \
         nothing (docs/reverse.md, \"Checkpointing\"); rewrite the loop, or build this function without \
         checkpointing (Checkpoint::Off)"
    )]
    NotCheckpointable {
        /// The function (as written).
        func: String,
        /// The loop's header block.
        block: String,
        /// What keeps it from being checkpointed.
        reason: String,
    },
    /// The derived IR failed verification: a bug in the transform, reported rather than hidden.
    #[error("internal error: derived function does not verify: {0}")]
    DerivedInvalid(Box<VerifyError>),
}

impl From<VerifyError> for AdError {
    fn from(e: VerifyError) -> AdError {
        AdError::Verify(Box::new(e))
    }
}

impl AdError {
    /// Does this error name a function, block and instruction?
    pub fn names_instruction(&self) -> bool {
        matches!(self, AdError::StoreIntoInactiveSlice { .. } | AdError::NoRule { .. } | AdError::Unsupported { .. })
    }
}
