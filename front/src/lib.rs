//! # jitdiff-front
//!
//! A Rust front end for jitdiff: a subset of Rust source — `fn`s over `f64`, integers, `bool`
//! and `f64` slices, with `let`, `if`, `for`/`while`/`loop`, iterator sums and folds, the `f64`
//! math methods, `const`s and `extern "C"` declarations — lowered to a verified IR
//! [`Module`]. Each `fn` becomes an IR function of the same name; calls
//! between them become IR `call`s. Anything outside the subset is a [`FrontError`] at its
//! line and column, naming the construct and what to write instead; no input panics.
//!
//! `docs/rust.md` lists the subset (construct by construct, with its lowering) and the rewrite
//! for each unsupported construct.
//!
//! ```
//! use jitdiff_ir::{ArgValue, RuntimeValue, interpret};
//!
//! let source = "
//!     fn rosenbrock(x: &[f64]) -> f64 {
//!         let mut sum = 0.0;
//!         for i in 0..x.len() - 1 {
//!             sum += 100.0 * (x[i + 1] - x[i] * x[i]).powi(2) + (1.0 - x[i]).powi(2);
//!         }
//!         sum
//!     }";
//! let module = jitdiff_front::lower_source(source)?;
//! let value = interpret(&module, "rosenbrock", &mut [ArgValue::Slice(vec![1.0, 2.0, 3.0])]).unwrap();
//! assert_eq!(value, vec![RuntimeValue::F64(100.0 + 100.0 * 1.0 + 1.0)]);
//!
//! let err = jitdiff_front::lower_source("fn f(x: f64, n: i64) -> f64 {\n    x * n\n}").unwrap_err();
//! assert_eq!(err.to_string(), "2:9: mismatched types: expected `f64`, found `i64`; add `as f64`");
//! # Ok::<(), jitdiff_front::FrontError>(())
//! ```

#![warn(missing_docs)]

mod array_results;
mod arrays;
mod assoc_consts;
mod bits;
mod calls;
mod closures;
mod consts;
mod control;
mod defaults;
mod ends;
mod error;
mod expr;
mod forloop;
mod generics;
mod growing;
mod impls;
mod iter;
mod join;
mod lower;
mod matching;
mod methods;
mod module;
mod nested;
mod operators;
mod overload;
mod panics;
mod pick;
mod rows;
mod scope;
mod skip_while;
mod slice_updates;
mod ssa;
mod stmt;
mod structs;
mod types;
mod views;
mod worker;

pub use error::{FrontError, FrontErrorKind, Position};

use jitdiff_ir::Module;

/// The deepest bracket nesting a source may have (deeper input would exhaust the parser's
/// stack before lowering could refuse it).
const MAX_NESTING: usize = 96;

/// The most tokens one statement (text between `;`, `,`, `{` and `}`) may have: a chain of
/// prefix operators as long as that is as deep for the parser, which recurses on it.
const MAX_STATEMENT_TOKENS: usize = 10_000;

/// Is `name` the name of a function the front end added: a function of the source lowered
/// again for calls that pass sub-slices, windows or chunks (`dot(&w[i * n..], x)`), which
/// takes each such argument as the slice, an offset and a length. These come after the
/// source's own functions, which keep their order.
///
/// ```
/// let m = jitdiff_front::lower_source(
///     "fn total(v: &[f64]) -> f64 { v.iter().sum() }\nfn tail(x: &[f64]) -> f64 { total(&x[1..]) }",
/// )?;
/// let names: Vec<&str> = m.functions.iter().map(|f| f.name.as_str()).collect();
/// assert_eq!(names, ["total", "tail", "total__views_1"]);
/// assert!(jitdiff_front::is_view_variant("total__views_1") && !jitdiff_front::is_view_variant("tail"));
/// # Ok::<(), jitdiff_front::FrontError>(())
/// ```
pub fn is_view_variant(name: &str) -> bool {
    name.rsplit_once("__views_")
        .is_some_and(|(_, mask)| !mask.is_empty() && mask.bytes().all(|b| b == b'0' || b == b'1'))
}

/// The function of the source a function of the lowered module stands for, as the source
/// spells it (what messages to the user name): `name` itself; for a
/// [view variant](is_view_variant) the function it was lowered from; for a method or operator
/// of a struct (`State__energy`, `V__add__V`: a capitalised type, two underscores) `State::energy`,
/// `V::add`.
///
/// ```
/// assert_eq!(jitdiff_front::source_function_name("total__views_10"), "total");
/// assert_eq!(jitdiff_front::source_function_name("total"), "total");
/// assert_eq!(jitdiff_front::source_function_name("State__energy__views_1"), "State::energy");
/// assert_eq!(jitdiff_front::source_function_name("V__mul__f64"), "V::mul");
/// assert_eq!(jitdiff_front::source_function_name("f64__mul__V"), "f64::mul");
/// ```
pub fn source_function_name(name: &str) -> std::borrow::Cow<'_, str> {
    let source = match name.rsplit_once("__views_") {
        Some((source, _)) if is_view_variant(name) => source,
        _ => name,
    };
    match source.split_once("__") {
        Some((ty, rest)) if (ty == "f64" || ty.starts_with(|c: char| c.is_ascii_uppercase())) && !rest.is_empty() => {
            let method = rest.split("__").next().unwrap_or(rest);
            std::borrow::Cow::Owned(format!("{ty}::{method}"))
        }
        _ => std::borrow::Cow::Borrowed(source),
    }
}

/// Lower a Rust source (one or more items) to a verified module.
///
/// ```
/// let module = jitdiff_front::lower_source("fn square(x: f64) -> f64 { x * x }")?;
/// assert!(module.func_by_name("square").is_some());
/// # Ok::<(), jitdiff_front::FrontError>(())
/// ```
pub fn lower_source(source: &str) -> Result<Module, FrontError> {
    check_nesting(source)?;
    worker::on_lowering_thread(source, false, lower_parsed).map(|lowered| lowered.module)
}

/// Parse `source` and lower its items (keeping the functions as written when `keep`).
fn lower_parsed(source: &str, keep: bool) -> Result<SourceModule, FrontError> {
    let file = syn::parse_file(source)
        .map_err(|e| FrontError::new(e.span(), FrontErrorKind::Syntax { message: e.to_string() }))?;
    match jitdiff_ir::contain_panics(|| module::lower_items_as_written(&file.items, keep)) {
        Ok(result) => result,
        Err(message) => Err(FrontError {
            position: Position { line: 1, column: 1 },
            kind: FrontErrorKind::Internal { message: format!("panic: {message}") },
        }),
    }
}

/// A lowered source: the module to compile, and the same functions as lowered before the
/// clean-up passes with the source position of each instruction — what a handle replays a
/// run-time fault on to name its line and column (`Builder::rust_source` in `jitdiff`).
#[derive(Clone, Debug)]
pub struct SourceModule {
    /// The module (verified, cleaned up): what [`lower_source`] returns.
    pub module: Module,
    /// The functions as written, each instruction's position in the source; `None` in the
    /// unlikely case that they do not verify before the clean-up.
    pub as_written: Option<(Module, jitdiff_ir::SourceMap)>,
}

/// [`lower_source`], with the functions as written and their source positions.
///
/// ```
/// let lowered = jitdiff_front::lower_source_as_written("fn f(x: &[f64]) -> f64 {\n    x[3]\n}")?;
/// let (as_written, spans) = lowered.as_written.expect("it verifies");
/// let f = as_written.func_by_name("f").unwrap();
/// // The load `x[3]` is on line 2, column 5.
/// let load = f.blocks[0].insts.iter().position(|i| i.op == jitdiff_ir::Opcode::Load).unwrap();
/// assert_eq!(spans.inst(0, 0, load), Some(jitdiff_ir::Pos { line: 2, col: 5 }));
/// # Ok::<(), jitdiff_front::FrontError>(())
/// ```
pub fn lower_source_as_written(source: &str) -> Result<SourceModule, FrontError> {
    check_nesting(source)?;
    worker::on_lowering_thread(source, true, lower_parsed)
}

/// [`lower_items`], with the functions as written and their source positions (for a proc
/// macro: positions are those of the tokens it was given).
pub fn lower_items_as_written(items: &[syn::Item]) -> Result<SourceModule, FrontError> {
    match jitdiff_ir::contain_panics(|| module::lower_items_as_written(items, true)) {
        Ok(result) => result,
        Err(message) => Err(FrontError {
            position: Position { line: 1, column: 1 },
            kind: FrontErrorKind::Internal { message: format!("panic: {message}") },
        }),
    }
}

/// Lower already-parsed items (for a proc macro, or a caller that parsed the source itself).
///
/// ```
/// let file: syn::File = syn::parse_str("fn half(x: f64) -> f64 { x / 2.0 }").unwrap();
/// let module = jitdiff_front::lower_items(&file.items)?;
/// assert_eq!(module.functions.len(), 1);
/// # Ok::<(), jitdiff_front::FrontError>(())
/// ```
pub fn lower_items(items: &[syn::Item]) -> Result<Module, FrontError> {
    match jitdiff_ir::contain_panics(|| module::lower_items(items)) {
        Ok(result) => result,
        Err(message) => Err(FrontError {
            position: Position { line: 1, column: 1 },
            kind: FrontErrorKind::Internal { message: format!("panic: {message}") },
        }),
    }
}

/// `items` with every generic function instantiated at its one instance, every type parameter
/// `f64` (what [`lower_items`] lowers): `fn f<T: Float>(x: &[T]) -> T` reads
/// `fn f(x: &[f64]) -> f64`, `T::one()` reads `1.0`. For a caller that spells the lowered
/// function's types, as the `#[jitdiff::function]` attribute does for its typed handles.
///
/// ```
/// let items = syn::parse_file("fn f<T: num_traits::Float>(x: T) -> T { x * T::one() }").unwrap().items;
/// let syn::Item::Fn(f) = &jitdiff_front::instantiate_generics(&items)[0] else { unreachable!() };
/// assert!(f.sig.generics.params.is_empty());
/// ```
pub fn instantiate_generics(items: &[syn::Item]) -> Vec<syn::Item> {
    generics::monomorphize(items).into_owned()
}

/// Refuse sources nested deeper than [`MAX_NESTING`] brackets or with statements longer than
/// [`MAX_STATEMENT_TOKENS`] (counting roughly — brackets in comments and strings count too, a
/// word or a punctuation character is a token: a bound, not a parser).
fn check_nesting(source: &str) -> Result<(), FrontError> {
    let mut depth = 0usize;
    let mut tokens = 0usize;
    let mut in_word = false;
    let (mut line, mut column) = (1u32, 0u32);
    let refuse = |line, column, message: String| {
        Err(FrontError { position: Position { line, column }, kind: FrontErrorKind::Invalid { message } })
    };
    for c in source.chars() {
        column = column.saturating_add(1);
        let word = c.is_alphanumeric() || c == '_';
        if (word && !in_word) || (!word && !c.is_whitespace()) {
            tokens += 1;
        }
        in_word = word;
        match c {
            '\n' => {
                line = line.saturating_add(1);
                column = 0;
            }
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        if matches!(c, ';' | ',' | '{' | '}') {
            tokens = 0;
        }
        if depth > MAX_NESTING {
            return refuse(
                line,
                column,
                format!(
                    "brackets nested more than {MAX_NESTING} deep are not supported; split the expression with `let` bindings or helper functions"
                ),
            );
        }
        if tokens > MAX_STATEMENT_TOKENS {
            return refuse(
                line,
                column,
                format!(
                    "statements of more than {MAX_STATEMENT_TOKENS} tokens are not supported; split the expression with `let` bindings"
                ),
            );
        }
    }
    Ok(())
}
