//! Iterator chains, as far as `for` loops and `sum`/`product`/`fold`/`count` consume them: the
//! sources (`a..b`, `a..=b`, `x.iter()`, `x.iter_mut()`, a slice, a sub-slice `x[a..b]`), the structural adapters
//! (`enumerate`, `zip` and `std::iter::zip`, `rev`, `step_by`, `skip`, `take`, `copied`,
//! `cloned`) and the value adapters (`map`, `filter`, `take_while`, `skip_while`, with closures).
//!
//! A closure argument may also be a function named by its path (`.map(f64::exp)`,
//! `.fold(f64::NEG_INFINITY, f64::max)`, `.map(square)`): it is lowered as the closure that calls
//! it (`|v| f64::exp(v)`), see [`closure_or_function`].
//!
//! A chain becomes one counted loop. A plain forward range (optionally with a literal
//! `step_by`) counts with the range's own value; every other chain counts `k` from 0 to the
//! number of items, computed before the loop, and computes item `k` from it: `rev` reads item
//! `n - 1 - k`, `step_by(s)` item `k s`, `skip(m)` item `k + m`, `zip` takes the shorter length.

use crate::error::{Result, invalid, unsupported};
use crate::lower::{Lowerer, Operand};
use crate::types::{IntKind, Ty};
use crate::views::{Chunking, View};
use jitdiff_ir::{CondCode, Opcode, Value};
use std::borrow::Cow;
use syn::spanned::Spanned;

/// The structural part of a chain, as written.
pub(crate) enum Source<'e> {
    Range {
        start: &'e syn::Expr,
        end: &'e syn::Expr,
        inclusive: bool,
    },
    /// A slice expression; `mutable` for `iter_mut` (or a `&mut` slice iterated directly).
    Slice {
        expr: &'e syn::Expr,
        mutable: Option<bool>,
    },
    /// `m.iter().flatten()` of an array of arrays: its elements, row after row (see `rows.rs`).
    Flattened {
        expr: &'e syn::Expr,
        mutable: Option<bool>,
    },
    Enumerate(Box<Source<'e>>),
    Zip(Box<Source<'e>>, Box<Source<'e>>),
    /// `a.chain(b)`: the items of `a`, then those of `b` (numbers: elements or range values).
    Chain(Box<Source<'e>>, Box<Source<'e>>),
    Rev(Box<Source<'e>>),
    Step(Box<Source<'e>>, &'e syn::Expr),
    Skip(Box<Source<'e>>, &'e syn::Expr),
    Take(Box<Source<'e>>, &'e syn::Expr),
    /// `x.windows(k)`, `x.chunks(k)`, `x.chunks_exact(k)` of a slice expression, and
    /// `chunks_mut`, `chunks_exact_mut` (`mutable`: views the loop body may write through).
    Chunked {
        expr: &'e syn::Expr,
        size: &'e syn::Expr,
        chunking: Chunking,
        mutable: bool,
    },
}

/// A value adapter, applied to each item in order.
pub(crate) enum Adapter<'e> {
    Map(Cow<'e, syn::ExprClosure>),
    Filter(Cow<'e, syn::ExprClosure>),
    /// `take_while(|v| c)`: the loop ends at the first item `c` rejects.
    TakeWhile(Cow<'e, syn::ExprClosure>),
    /// `skip_while(|v| c)`: items are dropped while `c` accepts them; from the first it rejects
    /// on, `c` is not called again (a flag the loop carries).
    SkipWhile(Cow<'e, syn::ExprClosure>),
}

impl Adapter<'_> {
    /// Whether the adapter may drop items (so that a `collect` keeps a prefix of its array).
    pub(crate) fn drops_items(&self) -> bool {
        !matches!(self, Adapter::Map(_))
    }
}

/// A parsed chain: source, then adapters in application order.
pub(crate) struct Chain<'e> {
    pub source: Source<'e>,
    pub adapters: Vec<Adapter<'e>>,
}

const STRUCTURAL: [&str; 19] = [
    "iter",
    "iter_mut",
    "into_iter",
    "copied",
    "cloned",
    "enumerate",
    "zip",
    "rev",
    "step_by",
    "skip",
    "take",
    "by_ref",
    "windows",
    "chunks",
    "chunks_exact",
    "chunks_mut",
    "chunks_exact_mut",
    "flatten",
    "chain",
];

/// Is `expr` (syntactically) an iterator chain?
pub(crate) fn is_iterator(expr: &syn::Expr) -> bool {
    match expr {
        syn::Expr::Paren(p) => is_iterator(&p.expr),
        syn::Expr::Range(_) => true,
        syn::Expr::MethodCall(m) => {
            let name = m.method.to_string();
            STRUCTURAL.contains(&name.as_str())
                || matches!(name.as_str(), "map" | "filter" | "take_while" | "skip_while")
        }
        syn::Expr::Call(call) => zip_function(call).is_some(),
        _ => false,
    }
}

/// The two arguments of `std::iter::zip(a, b)` (or `core::iter::zip`), which is
/// `a.into_iter().zip(b)`.
fn zip_function(call: &syn::ExprCall) -> Option<(&syn::Expr, &syn::Expr)> {
    let syn::Expr::Path(path) = &*call.func else { return None };
    let names: Vec<String> = path.path.segments.iter().map(|s| s.ident.to_string()).collect();
    let is_zip = matches!(names.iter().map(String::as_str).collect::<Vec<_>>()[..], ["std" | "core", "iter", "zip"]);
    match (is_zip, &call.args.iter().collect::<Vec<_>>()[..]) {
        (true, [a, b]) => Some((a, b)),
        _ => None,
    }
}

/// Parse a chain (the receiver of `sum()`, the iterable of a `for` loop).
pub(crate) fn parse_chain(expr: &syn::Expr) -> Result<Chain<'_>> {
    let mut adapters = vec![];
    let mut at = expr;
    loop {
        match at {
            syn::Expr::Paren(p) => at = &p.expr,
            syn::Expr::MethodCall(m)
                if matches!(m.method.to_string().as_str(), "map" | "filter" | "take_while" | "skip_while") =>
            {
                let closure = closure_arg(m)?;
                adapters.push(match m.method.to_string().as_str() {
                    "map" => Adapter::Map(closure),
                    "filter" => Adapter::Filter(closure),
                    "take_while" => Adapter::TakeWhile(closure),
                    _ => Adapter::SkipWhile(closure),
                });
                at = &m.receiver;
            }
            // Items are values here: `copied()` after a closure adapter changes nothing.
            syn::Expr::MethodCall(m)
                if matches!(m.method.to_string().as_str(), "copied" | "cloned")
                    && m.args.is_empty()
                    && closure_adapter_below(&m.receiver) =>
            {
                at = &m.receiver;
            }
            _ => break,
        }
    }
    adapters.reverse();
    Ok(Chain { source: parse_source(at)?, adapters })
}

/// Is `expr` (through parentheses, `copied` and `cloned`) a call of a closure adapter?
fn closure_adapter_below(expr: &syn::Expr) -> bool {
    match expr {
        syn::Expr::Paren(p) => closure_adapter_below(&p.expr),
        syn::Expr::MethodCall(m) => match m.method.to_string().as_str() {
            "map" | "filter" | "take_while" | "skip_while" => true,
            "copied" | "cloned" => closure_adapter_below(&m.receiver),
            _ => false,
        },
        _ => false,
    }
}

fn closure_arg(m: &syn::ExprMethodCall) -> Result<Cow<'_, syn::ExprClosure>> {
    match (m.args.len(), m.args.first().and_then(|arg| closure_or_function(arg, 1))) {
        (1, Some(closure)) => Ok(closure),
        _ => Err(unsupported(
            m.span(),
            format!("`{}` calls without one closure written in place or a function's name", m.method),
            format!("write the closure in the call: `.{}(|v| ...)`", m.method),
        )),
    }
}

/// The closure an iterator method is given: a closure written in place, or a function named by
/// a path (`f64::max`, `square`), which is the closure of `arity` parameters calling it —
/// `|a, b| f64::max(a, b)` — with the path's span, so errors point at it. `None` for anything
/// else.
pub(crate) fn closure_or_function(arg: &syn::Expr, arity: usize) -> Option<Cow<'_, syn::ExprClosure>> {
    match arg {
        syn::Expr::Closure(closure) => Some(Cow::Borrowed(closure)),
        syn::Expr::Paren(inner) => closure_or_function(&inner.expr, arity),
        syn::Expr::Path(path) if path.qself.is_none() && path.attrs.is_empty() => {
            let span = path.span();
            let function = &path.path;
            let closure: syn::ExprClosure = match arity {
                1 => syn::parse_quote_spanned!(span=> |item__| #function(item__)),
                2 => syn::parse_quote_spanned!(span=> |accumulator__, item__| #function(accumulator__, item__)),
                _ => return None,
            };
            Some(Cow::Owned(closure))
        }
        _ => None,
    }
}

/// The most structural adapters one chain may have (a bound, so that absurd chains cannot
/// exhaust the stack).
const MAX_ADAPTERS: usize = 32;

fn parse_source(expr: &syn::Expr) -> Result<Source<'_>> {
    parse_source_within(expr, MAX_ADAPTERS)
}

fn parse_source_within(expr: &syn::Expr, depth: usize) -> Result<Source<'_>> {
    let Some(depth) = depth.checked_sub(1) else {
        return Err(unsupported(
            expr.span(),
            format!("iterator chains of more than {MAX_ADAPTERS} adapters"),
            "split the work into several loops",
        ));
    };
    let parse_source = |e| parse_source_within(e, depth);
    match expr {
        syn::Expr::Paren(p) => parse_source(&p.expr),
        syn::Expr::Range(r) => match (&r.start, &r.end) {
            (Some(start), Some(end)) => {
                Ok(Source::Range { start, end, inclusive: matches!(r.limits, syn::RangeLimits::Closed(_)) })
            }
            _ => Err(unsupported(r.span(), "open ranges", "give the range both ends: `a..b`")),
        },
        syn::Expr::Reference(r) => Ok(Source::Slice { expr: &r.expr, mutable: Some(r.mutability.is_some()) }),
        syn::Expr::Call(call) if let Some((a, b)) = zip_function(call) => {
            Ok(Source::Zip(Box::new(parse_source(a)?), Box::new(parse_source(b)?)))
        }
        syn::Expr::MethodCall(m) => {
            let name = m.method.to_string();
            let arg = |n: usize| -> Result<&syn::Expr> {
                match (m.args.len() == n, m.args.first()) {
                    (true, first) if n == 0 || first.is_some() => Ok(first.unwrap_or(&m.receiver)),
                    _ => Err(invalid(
                        m.span(),
                        format!("`{name}` takes {n} argument{}; pass {n}", if n == 1 { "" } else { "s" }),
                    )),
                }
            };
            let inner = || parse_source(&m.receiver).map(Box::new);
            match name.as_str() {
                "iter" => {
                    arg(0)?;
                    Ok(Source::Slice { expr: &m.receiver, mutable: Some(false) })
                }
                "iter_mut" => {
                    arg(0)?;
                    Ok(Source::Slice { expr: &m.receiver, mutable: Some(true) })
                }
                "into_iter" | "copied" | "cloned" | "by_ref" => {
                    arg(0)?;
                    parse_source(&m.receiver)
                }
                "enumerate" => {
                    arg(0)?;
                    Ok(Source::Enumerate(inner()?))
                }
                "flatten" => {
                    arg(0)?;
                    match parse_source(&m.receiver)? {
                        Source::Slice { expr, mutable } => Ok(Source::Flattened { expr, mutable }),
                        _ => Err(unsupported(
                            m.method.span(),
                            "`flatten` of anything but an array of arrays",
                            "iterate over the rows and then their elements with two `for` loops",
                        )),
                    }
                }
                "rev" => {
                    arg(0)?;
                    Ok(Source::Rev(inner()?))
                }
                "zip" => {
                    let other = arg(1)?;
                    Ok(Source::Zip(inner()?, Box::new(parse_source(other)?)))
                }
                "chain" => {
                    let other = arg(1)?;
                    Ok(Source::Chain(inner()?, Box::new(parse_source(other)?)))
                }
                "step_by" => Ok(Source::Step(inner()?, arg(1)?)),
                "skip" => Ok(Source::Skip(inner()?, arg(1)?)),
                "take" => Ok(Source::Take(inner()?, arg(1)?)),
                "map" | "filter" | "take_while" | "skip_while" => Err(unsupported(
                    m.method.span(),
                    format!("`{name}` adapters before `enumerate`, `zip`, `rev`, `step_by`, `skip` or `take`"),
                    "put `map`, `filter`, `take_while` and `skip_while` last in the chain, or use a `for` loop",
                )),
                "windows" | "chunks" | "chunks_exact" | "chunks_mut" | "chunks_exact_mut" => {
                    let mutable = name.ends_with("_mut");
                    let chunking = Chunking::from_method(name.trim_end_matches("_mut")).unwrap_or(Chunking::Windows);
                    Ok(Source::Chunked { expr: &m.receiver, size: arg(1)?, chunking, mutable })
                }
                _ => Err(unsupported(
                    m.method.span(),
                    format!("iterator methods such as `{name}`"),
                    "use `iter`, `enumerate`, `zip`, `rev`, `step_by`, `skip`, `take`, `map`, `filter`, `sum`, `product`, `fold`, `count`, or a `for` loop",
                )),
            }
        }
        other => Ok(Source::Slice { expr: other, mutable: None }),
    }
}

/// A source evaluated before the loop: what item `k` is, and how many there are.
pub(crate) enum Stream {
    Range {
        start: Value,
        count: Value,
        kind: IntKind,
    },
    /// A slice's items from `offset` on (a sub-slice `x[a..b]`), or from 0.
    Slice {
        slice: Value,
        offset: Option<Value>,
        count: Value,
        mutable: bool,
    },
    Enumerate(Box<Stream>),
    Zip(Box<Stream>, Box<Stream>, Value),
    /// The items of the first, then of the second (both numbers of one type), and their count.
    Chain(Box<Stream>, Box<Stream>, Value),
    Rev(Box<Stream>),
    Step(Box<Stream>, Value, Value),
    Skip(Box<Stream>, Value, Value),
    Take(Box<Stream>, Value),
    /// Windows or chunks of `size` over `len` elements of `slice` from `base`.
    Chunked {
        slice: Value,
        base: Value,
        len: Value,
        size: Value,
        chunking: Chunking,
        count: Value,
        mutable: bool,
    },
}

impl Stream {
    /// The types of its items' parts: one number, or the two of a pair (`enumerate`, `zip`).
    pub(crate) fn item_types(&self) -> Option<Vec<Ty>> {
        match self {
            Stream::Enumerate(inner) => Some(vec![Ty::Int(IntKind::Usize), inner.number_type()?]),
            Stream::Zip(a, b, _) => Some(vec![a.number_type()?, b.number_type()?]),
            Stream::Rev(inner) | Stream::Step(inner, ..) | Stream::Skip(inner, ..) | Stream::Take(inner, _)
                if matches!(**inner, Stream::Enumerate(_) | Stream::Zip(..)) =>
            {
                inner.item_types()
            }
            other => Some(vec![other.number_type()?]),
        }
    }

    /// The type of its items where they are numbers (a slice's elements, a range's values).
    fn number_type(&self) -> Option<Ty> {
        match self {
            Stream::Range { kind, .. } => Some(Ty::Int(*kind)),
            Stream::Slice { .. } => Some(Ty::F64),
            Stream::Rev(inner) | Stream::Step(inner, ..) | Stream::Skip(inner, ..) | Stream::Take(inner, _) => {
                inner.number_type()
            }
            Stream::Chain(first, ..) => first.number_type(),
            Stream::Enumerate(_) | Stream::Zip(..) | Stream::Chunked { .. } => None,
        }
    }

    pub(crate) fn count(&self) -> Value {
        match self {
            Stream::Range { count, .. } | Stream::Slice { count, .. } | Stream::Chunked { count, .. } => *count,
            Stream::Enumerate(inner) | Stream::Rev(inner) => inner.count(),
            Stream::Zip(_, _, count)
            | Stream::Chain(_, _, count)
            | Stream::Step(_, _, count)
            | Stream::Skip(_, _, count)
            | Stream::Take(_, count) => *count,
        }
    }
}

/// One item of a chain.
#[derive(Clone)]
pub(crate) enum Item {
    /// A number (a range's value, an index, a mapped value).
    Scalar(Operand),
    /// `&x[index]` or `&mut x[index]`: read when bound.
    Element {
        slice: Value,
        index: Value,
        mutable: bool,
    },
    Pair(Box<Item>, Box<Item>),
    /// A window or chunk (see `views.rs`).
    View(View),
}

/// How the loop counts: with the range's own value, or `k` over `0..count`.
pub(crate) enum Plan {
    Direct { start: Value, bound: Value, cond: CondCode, step: Value, kind: IntKind },
    Indexed(Stream),
}

impl Lowerer<'_> {
    /// Evaluate the source's bounds and slices, in source order.
    pub(crate) fn plan(&mut self, source: &Source<'_>) -> Result<Plan> {
        let (range, step) = match source {
            Source::Range { .. } => (source, None),
            Source::Step(inner, step) if matches!(**inner, Source::Range { .. }) => match literal_usize(step) {
                Some(0) => return Err(invalid(step.span(), "`step_by(0)` panics in Rust; step by at least 1")),
                Some(s) => (&**inner, Some(s)),
                None => return Ok(Plan::Indexed(self.stream(source)?)),
            },
            _ => return Ok(Plan::Indexed(self.stream(source)?)),
        };
        let Source::Range { start, end, inclusive } = range else {
            return Ok(Plan::Indexed(self.stream(source)?));
        };
        let (start, end, kind) = self.range_bounds(start, end)?;
        let step = self.ssa.iconst(step.unwrap_or(1));
        let cond = if *inclusive { CondCode::Le } else { CondCode::Lt };
        Ok(Plan::Direct { start, bound: end, cond, step, kind })
    }

    fn range_bounds(&mut self, start: &syn::Expr, end: &syn::Expr) -> Result<(Value, Value, IntKind)> {
        let a = self.scalar(start, None)?;
        let expect = if a.ty == Ty::Int(IntKind::Literal) { None } else { Some(a.ty.clone()) };
        let b = self.scalar(end, expect.as_ref())?;
        let kind = match (&a.ty, &b.ty) {
            (Ty::Int(x), Ty::Int(y)) => match x.unify(*y) {
                Some(k) => k,
                None => return Err(crate::expr::type_error(end.span(), &a.ty, &b.ty, Some(end))),
            },
            (Ty::Int(_), other) => return Err(crate::expr::type_error(end.span(), &a.ty, other, Some(end))),
            (other, _) => {
                return Err(unsupported(
                    start.span(),
                    format!("ranges of `{other}`"),
                    "iterate over an integer range and compute the float from it: `for i in 0..n { let x = i as f64 * h; }`",
                ));
            }
        };
        Ok((a.value, b.value, kind))
    }

    pub(crate) fn usize_arg(&mut self, expr: &syn::Expr) -> Result<Value> {
        Ok(self.scalar_of(expr, &Ty::Int(IntKind::Usize))?.value)
    }

    pub(crate) fn stream(&mut self, source: &Source<'_>) -> Result<Stream> {
        Ok(match source {
            Source::Range { start, end, inclusive } => {
                let (start, end, kind) = self.range_bounds(start, end)?;
                // count = max(end - start (+ 1), 0)
                let mut diff = self.ssa.op(Opcode::ISub, &[end, start]);
                if *inclusive {
                    let one = self.ssa.iconst(1);
                    diff = self.ssa.op(Opcode::IAdd, &[diff, one]);
                }
                let count = self.clamp_at_zero(diff);
                Stream::Range { start, count, kind }
            }
            // The rows of an array of arrays, as `chunks_exact(C)` gives them (see `rows.rs`).
            Source::Slice { expr, mutable } if let Some(cols) = self.rows_of(expr) => {
                let view = self.slice_source(expr, *mutable)?;
                let size = self.ssa.iconst(cols);
                let count = self.chunk_count(Chunking::ChunksExact, view.len, size);
                Stream::Chunked {
                    slice: view.slice,
                    base: view.offset,
                    len: view.len,
                    size,
                    chunking: Chunking::ChunksExact,
                    count,
                    mutable: view.mutable,
                }
            }
            Source::Flattened { expr, mutable } if self.rows_of(expr).is_none() => {
                return Err(unsupported(
                    expr.span(),
                    "`flatten` of anything but an array of arrays",
                    "iterate over the rows and then their elements with two `for` loops",
                ));
            }
            Source::Slice { expr, mutable } | Source::Flattened { expr, mutable } => {
                let view = self.slice_source(expr, *mutable)?;
                Stream::Slice { slice: view.slice, offset: Some(view.offset), count: view.len, mutable: view.mutable }
            }
            Source::Chunked { expr, size, chunking, mutable } => {
                // The elements chunked: a slice, a sub-slice or a window, as for `iter()` (or
                // `iter_mut()`).
                let Stream::Slice { slice, offset, count: len, .. } =
                    self.stream(&Source::Slice { expr, mutable: Some(*mutable) })?
                else {
                    return Err(invalid(expr.span(), "chunk a slice"));
                };
                let base = offset.unwrap_or_else(|| self.ssa.iconst(0));
                let size = self.usize_arg(size)?;
                let count = self.chunk_count(*chunking, len, size);
                Stream::Chunked { slice, base, len, size, chunking: *chunking, count, mutable: *mutable }
            }
            Source::Enumerate(inner) => Stream::Enumerate(Box::new(self.stream(inner)?)),
            Source::Rev(inner) => Stream::Rev(Box::new(self.stream(inner)?)),
            Source::Chain(first, second) => {
                let (a, b) = (self.stream(first)?, self.stream(second)?);
                match (a.number_type(), b.number_type()) {
                    (Some(x), Some(y)) if x.unify(&y).is_some() => {}
                    _ => {
                        return Err(unsupported(
                            source_start(first),
                            "`chain` of anything but two iterators over numbers of one type (slices' elements, ranges)",
                            "chain the slices or ranges first and `map`, `zip` or `enumerate` after, or write two loops",
                        ));
                    }
                }
                let count = self.ssa.op(Opcode::IAdd, &[a.count(), b.count()]);
                Stream::Chain(Box::new(a), Box::new(b), count)
            }
            Source::Zip(a, b) => {
                let (a, b) = (self.stream(a)?, self.stream(b)?);
                let (na, nb) = (a.count(), b.count());
                let shorter = self.ssa.icmp(CondCode::Lt, na, nb);
                let count = self.ssa.select(shorter, na, nb);
                Stream::Zip(Box::new(a), Box::new(b), count)
            }
            Source::Step(inner, step) => {
                let inner = self.stream(inner)?;
                let step = self.usize_arg(step)?;
                // ceil(n / step); a zero step divides by zero, as Rust's `step_by(0)` panics.
                let one = self.ssa.iconst(1);
                let step_less_one = self.ssa.op(Opcode::ISub, &[step, one]);
                let padded = self.ssa.op(Opcode::IAdd, &[inner.count(), step_less_one]);
                let count = self.ssa.op(Opcode::IDiv, &[padded, step]);
                Stream::Step(Box::new(inner), step, count)
            }
            Source::Skip(inner, n) => {
                let inner = self.stream(inner)?;
                let n = self.usize_arg(n)?;
                let rest = self.ssa.op(Opcode::ISub, &[inner.count(), n]);
                let count = self.clamp_at_zero(rest);
                Stream::Skip(Box::new(inner), n, count)
            }
            Source::Take(inner, n) => {
                let inner = self.stream(inner)?;
                let n = self.usize_arg(n)?;
                let fewer = self.ssa.icmp(CondCode::Lt, n, inner.count());
                let count = self.ssa.select(fewer, n, inner.count());
                Stream::Take(Box::new(inner), count)
            }
        })
    }

    pub(crate) fn clamp_at_zero(&mut self, v: Value) -> Value {
        let zero = self.ssa.iconst(0);
        let positive = self.ssa.icmp(CondCode::Gt, v, zero);
        self.ssa.select(positive, v, zero)
    }

    /// Item `k` of `stream`.
    pub(crate) fn item_at(&mut self, stream: &Stream, k: Value) -> Item {
        match stream {
            Stream::Range { start, kind, .. } => {
                let value = self.ssa.op(Opcode::IAdd, &[*start, k]);
                Item::Scalar(Operand { value, ty: Ty::Int(*kind) })
            }
            Stream::Slice { slice, offset, mutable, .. } => {
                let index = match offset {
                    Some(offset) => self.ssa.op(Opcode::IAdd, &[*offset, k]),
                    None => k,
                };
                Item::Element { slice: *slice, index, mutable: *mutable }
            }
            Stream::Enumerate(inner) => {
                let item = self.item_at(inner, k);
                Item::Pair(Box::new(Item::Scalar(Operand { value: k, ty: Ty::Int(IntKind::Usize) })), Box::new(item))
            }
            Stream::Zip(a, b, _) => {
                let (a, b) = (self.item_at(a, k), self.item_at(b, k));
                Item::Pair(Box::new(a), Box::new(b))
            }
            Stream::Chain(a, b, _) => {
                // Read from the stream the item is in only (the other may have no such index).
                let ty = match (a.number_type(), b.number_type()) {
                    (Some(x), Some(y)) => x.unify(&y).unwrap_or(x),
                    _ => Ty::F64,
                };
                let first_count = a.count();
                let in_first = self.ssa.icmp(CondCode::Lt, k, first_count);
                let (from_first, from_second) = (self.ssa.new_block("chain_first"), self.ssa.new_block("chain_second"));
                let join = self.ssa.new_block("chain_item");
                let value = self.ssa.func.add_block_param(join, ty.ir().unwrap_or(jitdiff_ir::Type::F64), None);
                let reachable = self.ssa.reachable;
                self.ssa.branch(in_first, from_first, from_second);
                self.ssa.switch_to(from_first, reachable);
                let item = self.item_at(a, k);
                let item = self.item_value(item).value;
                self.ssa.jump(join, vec![item]);
                self.ssa.switch_to(from_second, reachable);
                let rest = self.ssa.op(Opcode::ISub, &[k, first_count]);
                let item = self.item_at(b, rest);
                let item = self.item_value(item).value;
                self.ssa.jump(join, vec![item]);
                self.ssa.switch_to(join, reachable);
                Item::Scalar(Operand { value, ty })
            }
            Stream::Rev(inner) => {
                let one = self.ssa.iconst(1);
                let last = self.ssa.op(Opcode::ISub, &[inner.count(), one]);
                let back = self.ssa.op(Opcode::ISub, &[last, k]);
                self.item_at(inner, back)
            }
            Stream::Step(inner, step, _) => {
                let at = self.ssa.op(Opcode::IMul, &[k, *step]);
                self.item_at(inner, at)
            }
            Stream::Skip(inner, n, _) => {
                let at = self.ssa.op(Opcode::IAdd, &[k, *n]);
                self.item_at(inner, at)
            }
            Stream::Take(inner, _) => self.item_at(inner, k),
            Stream::Chunked { slice, base, len, size, chunking, mutable, .. } => {
                let view = self.chunk_at(*chunking, *slice, *base, *len, *size, k);
                Item::View(crate::views::View { mutable: *mutable, ..view })
            }
        }
    }

    /// Bind a pattern (`v`, `&v`, `(i, v)`, `(&a, &b)`, `_`, `mut v`) to an item.
    pub(crate) fn bind_item(&mut self, pat: &syn::Pat, item: Item) -> Result<()> {
        match (pat, item) {
            (syn::Pat::Wild(_), _) => Ok(()),
            (syn::Pat::Paren(p), item) => self.bind_item(&p.pat, item),
            (syn::Pat::Reference(r), item) => self.bind_item(&r.pat, item),
            (syn::Pat::Type(t), item) => self.bind_item(&t.pat, item),
            (syn::Pat::Tuple(t), Item::Pair(a, b)) if t.elems.len() == 2 => {
                self.bind_item(&t.elems[0], *a)?;
                self.bind_item(&t.elems[1], *b)
            }
            (syn::Pat::Ident(_), Item::View(view)) => {
                let (name, _) = crate::stmt::binding(pat)?;
                self.declare_view(&name, view);
                Ok(())
            }
            (syn::Pat::Ident(_), Item::Element { slice, index, mutable: true }) => {
                let (name, _) = crate::stmt::binding(pat)?;
                self.declare_element(&name, slice, index);
                Ok(())
            }
            (syn::Pat::Ident(_), item @ (Item::Scalar(_) | Item::Element { .. })) => {
                let (name, mutable) = crate::stmt::binding(pat)?;
                let op = self.item_value(item);
                self.declare(&name, op.ty, mutable, Some(op.value));
                Ok(())
            }
            // A pair of numbers bound to one name (`|a, b| a.1.total_cmp(b.1)`): a tuple variable.
            (syn::Pat::Ident(_), Item::Pair(a, b))
                if !matches!(*a, Item::Pair(..) | Item::View(_)) && !matches!(*b, Item::Pair(..) | Item::View(_)) =>
            {
                let (name, mutable) = crate::stmt::binding(pat)?;
                let items = [self.item_value(*a), self.item_value(*b)];
                self.declare_tuple(&name, &items, mutable);
                Ok(())
            }
            (_, Item::Pair(..)) => Err(invalid(
                pat.span(),
                "this item is a pair; destructure it: `(i, v)` for `enumerate`, `(a, b)` for `zip`",
            )),
            (syn::Pat::Tuple(_), _) => Err(invalid(pat.span(), "this item is a single value; bind it to one name")),
            (other, _) => {
                Err(unsupported(other.span(), "patterns of this kind", "bind a name, `&name`, `(a, b)` or `_`"))
            }
        }
    }

    /// The value of a scalar item (an element is read now).
    pub(crate) fn item_value(&mut self, item: Item) -> Operand {
        match item {
            Item::Scalar(op) => op,
            Item::Element { slice, index, .. } => {
                Operand { value: self.ssa.op(Opcode::Load, &[slice, index]), ty: Ty::F64 }
            }
            // Callers check for pairs and views first; a placeholder keeps this total.
            Item::Pair(..) | Item::View(_) => self.placeholder(&Ty::F64),
        }
    }
}

/// `x[a..b]` (also `a..`, `..b`, `a..=b`, in parentheses): the sliced expression and the
/// range; anything else (including the whole slice `x[..]`) as it is, with no range.
pub(crate) fn sub_slice(expr: &syn::Expr) -> (&syn::Expr, Option<&syn::ExprRange>) {
    match expr {
        syn::Expr::Paren(p) => sub_slice(&p.expr),
        syn::Expr::Index(index) => match peel_parens(&index.index) {
            syn::Expr::Range(r) if r.start.is_some() || r.end.is_some() => (&index.expr, Some(r)),
            syn::Expr::Range(_) => (&index.expr, None),
            _ => (expr, None),
        },
        _ => (expr, None),
    }
}

/// `expr` without the parentheses around it.
pub(crate) fn peel_parens(expr: &syn::Expr) -> &syn::Expr {
    match expr {
        syn::Expr::Paren(p) => peel_parens(&p.expr),
        other => other,
    }
}

/// Does every item of `source` lie in `[0, bound)`, the loop's own bound, counted by one from
/// zero? (`for i in 0..b`, a non-negative literal start, or any indexed chain, whose counter
/// runs from 0 to its count.) Then the counter never wraps, and reading a view at it needs no
/// range check when `bound` is the view's length (`views.rs`).
pub(crate) fn counts_from_zero_below_bound(source: &Source<'_>, plan: &Plan) -> bool {
    match (plan, source) {
        (Plan::Indexed(_), _) => true,
        (Plan::Direct { cond: CondCode::Lt, .. }, Source::Range { start, inclusive: false, .. }) => {
            literal_usize(start).is_some_and(|k| k >= 0)
        }
        _ => false,
    }
}

fn literal_usize(expr: &syn::Expr) -> Option<i64> {
    match expr {
        syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(i), .. }) if matches!(i.suffix(), "" | "usize") => {
            i.base10_parse().ok()
        }
        syn::Expr::Paren(p) => literal_usize(&p.expr),
        _ => None,
    }
}

/// Where a source starts (its first slice or range), for errors.
pub(crate) fn source_start(source: &Source<'_>) -> proc_macro2::Span {
    match source {
        Source::Range { start, .. } => start.span(),
        Source::Slice { expr, .. } | Source::Flattened { expr, .. } | Source::Chunked { expr, .. } => expr.span(),
        Source::Enumerate(inner)
        | Source::Zip(inner, _)
        | Source::Chain(inner, _)
        | Source::Rev(inner)
        | Source::Step(inner, _)
        | Source::Skip(inner, _)
        | Source::Take(inner, _) => source_start(inner),
    }
}
