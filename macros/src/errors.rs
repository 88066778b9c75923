//! Front-end errors as compile errors at the construct they are about.
//!
//! The front end reports a 1-based line and column (where the construct's first token starts).
//! Inside a proc macro the tokens carry the compiler's own spans, whose line and column
//! `proc-macro2` reads (stable since Rust 1.88), so the error is put on the token of the input
//! that starts at that position: rustc then points at the user's code, as for its own errors.

use jitdiff_front::{FrontError, FrontErrorKind};
use proc_macro2::{Span, TokenStream, TokenTree};
use std::collections::HashMap;

/// The span of every token of a macro input, by where it starts.
pub(crate) struct SpanIndex {
    starts: HashMap<(usize, usize), Span>,
}

impl SpanIndex {
    /// Index the tokens of `tokens`, delimiters included (an array literal starts at its `[`).
    pub(crate) fn of(tokens: &TokenStream) -> SpanIndex {
        let mut index = SpanIndex { starts: HashMap::new() };
        index.add(tokens.clone());
        index
    }

    fn add(&mut self, tokens: TokenStream) {
        for token in tokens {
            match token {
                TokenTree::Group(g) => {
                    self.insert(g.span_open());
                    self.add(g.stream());
                    self.insert(g.span_close());
                }
                other => self.insert(other.span()),
            }
        }
    }

    fn insert(&mut self, span: Span) {
        let start = span.start();
        self.starts.entry((start.line, start.column)).or_insert(span);
    }

    /// The token starting at a front-end position (1-based column; `proc-macro2`'s are 0-based).
    fn at(&self, line: u32, column: u32) -> Option<Span> {
        let key = (usize::try_from(line).ok()?, usize::try_from(column).ok()?.checked_sub(1)?);
        self.starts.get(&key).copied()
    }
}

/// `error` as a compile error at its construct, or at `fallback` (the item's name) with the
/// position in the message when no token starts there.
pub(crate) fn front_error(error: &FrontError, index: &SpanIndex, fallback: Span, single_fn: bool) -> syn::Error {
    let mut message = error.message();
    if single_fn
        && let FrontErrorKind::Unknown { what, .. } = &error.kind
        && what == "function"
    {
        message.push_str(
            "; #[jitdiff::function] lowers this one `fn` alone: to call another function, put both in a `#[jitdiff::module] mod`",
        );
    }
    match index.at(error.position.line, error.position.column) {
        Some(span) => syn::Error::new(span, message),
        None => syn::Error::new(fallback, format!("{}: {message}", error.position)),
    }
}
