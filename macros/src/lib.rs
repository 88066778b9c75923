//! # jitdiff-macros
//!
//! Write the function once, in Rust: `#[jitdiff::function]` on a `fn` and `#[jitdiff::module]` on
//! a `mod` lower the Rust source to jitdiff IR while the crate compiles (with `jitdiff-front`),
//! keep every `fn` an ordinary Rust function, and add a module of the same name with the IR and
//! typed, JIT-compiled derivative handles. Use them through the `jitdiff` crate, which re-exports
//! both attributes (`jitdiff::function`, `jitdiff::module`) and holds what the generated code
//! calls (`jitdiff::typed`). `docs/rust.md` describes the subset and the generated API.
//!
//! Source outside the subset is a compile error at the offending construct, with the front
//! end's message (what to write instead). Run-time positions are not recorded: the front end
//! does not produce a source map yet, so a run-time fault names the IR block and instruction.

#![warn(missing_docs)]

mod emit;
mod errors;
mod expand;
mod signature;

use proc_macro::TokenStream;

/// Lower one `fn` to jitdiff IR at compile time and add typed derivative handles.
///
/// The function is emitted unchanged (it stays callable, testable Rust). Beside it comes a
/// module of the same name (modules live in the type namespace, so `fn f` and `mod f` coexist)
/// with the IR (`f::IR`, `f::module()`) and handle constructors taking the function's own
/// parameter types: `f::primal()`, `f::gradient()`, `f::forward(width)`, `f::hvp()`,
/// `f::jacobian()` (each also `_wrt(&["name", ...])`), `f::args(...)` (the `Arg` list of the
/// untyped API) and `f::builder::<K>()` (every builder option).
///
/// ```ignore
/// #[jitdiff::function]
/// fn rosenbrock(x: &[f64]) -> f64 { /* ... */ }
///
/// let g = rosenbrock::gradient()?;
/// let (f, df) = g.value_and_grad(&x)?;
/// ```
///
/// A function that calls another needs both lowered together: put them in a
/// [`#[jitdiff::module]`](macro@module).
#[proc_macro_attribute]
pub fn function(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand::guarded("function", attr.into(), item.into(), expand::function).into()
}

/// Lower every item of an inline `mod` to one jitdiff IR module at compile time (its functions
/// may call each other) and add typed derivative handles per function.
///
/// Every `fn` is emitted unchanged. The module gains `IR` and `module()` (the whole lowered
/// module) and, per function `f`, a module `f` with the same constructors as
/// [`#[jitdiff::function]`](macro@function) gives: `m::f::gradient()`, `m::f::hvp()`, ... The
/// names `IR` and `module` are taken in the annotated module.
///
/// ```ignore
/// #[jitdiff::module]
/// mod model {
///     fn accel(theta: f64) -> f64 { -theta.sin() }
///     pub fn energy(theta: f64) -> f64 { accel(theta) * theta }
/// }
/// let g = model::energy::gradient()?;
/// ```
#[proc_macro_attribute]
pub fn module(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand::guarded("module", attr.into(), item.into(), expand::module).into()
}
