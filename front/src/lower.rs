//! The lowering of one function: [`Lowerer`] (the function being built, the variables in scope,
//! the enclosing loops) and the values expressions lower to ([`Lowered`], [`Operand`]).

use crate::error::{FrontError, FrontErrorKind, Result, invalid, unsupported};
use crate::join::Join;
use crate::module::{FnSig, ModuleCtx};
use crate::scope::{Scopes, Slot, SlotKind, SlotState};
use crate::ssa::Ssa;
use crate::types::Ty;
use jitdiff_ir::{Function, Terminator, Type, Value};
use syn::spanned::Spanned;

/// How deeply expressions may nest before lowering gives up (instead of exhausting the stack).
const MAX_DEPTH: usize = 192;

/// A scalar or slice value and its Rust type.
#[derive(Clone, Debug)]
pub(crate) struct Operand {
    pub value: Value,
    pub ty: Ty,
}

/// What an expression lowers to.
#[derive(Clone, Debug)]
pub(crate) enum Lowered {
    /// A scalar or slice.
    Value(Operand),
    /// `()`.
    Unit,
    /// A tuple of scalars (a call's results, `(a, b)`).
    Tuple(Vec<Operand>),
    /// A struct: its scalar fields, flattened (`structs.rs`).
    Struct(std::rc::Rc<crate::structs::StructTy>, Vec<Operand>),
    /// The expression never produces a value (`return`, `break`, `continue`, endless `loop`).
    Never,
}

impl Lowered {
    pub(crate) fn ty(&self) -> Ty {
        match self {
            Lowered::Value(op) => op.ty.clone(),
            Lowered::Unit => Ty::Unit,
            Lowered::Tuple(items) => Ty::Tuple(items.iter().map(|o| o.ty.clone()).collect()),
            Lowered::Struct(ty, _) => Ty::Struct(ty.clone()),
            Lowered::Never => Ty::Never,
        }
    }
    /// The SSA values it consists of (none for `()` and `!`).
    pub(crate) fn values(&self) -> Vec<Value> {
        match self {
            Lowered::Value(op) => vec![op.value],
            Lowered::Tuple(items) | Lowered::Struct(_, items) => items.iter().map(|o| o.value).collect(),
            Lowered::Unit | Lowered::Never => vec![],
        }
    }
}

/// A loop being lowered: where `break` and `continue` go.
pub(crate) struct LoopCtx {
    pub label: Option<String>,
    pub continue_join: Join,
    pub break_join: Join,
    /// The type of the `break` values seen so far (`loop` only).
    pub break_ty: Option<Ty>,
    /// Whether `break value` is allowed (`loop`, not `while` or `for`).
    pub allows_value: bool,
}

/// The lowering of one function body.
pub(crate) struct Lowerer<'a> {
    pub ctx: &'a ModuleCtx,
    pub ssa: Ssa,
    pub scopes: Scopes,
    pub loops: Vec<LoopCtx>,
    /// The function's result type.
    pub ret: Ty,
    /// While lowering a closure body: the slots that belong to the enclosing function (they may
    /// be read, not assigned).
    pub closure_floor: Option<usize>,
    /// Whether the closure being lowered is a `move` closure.
    pub closure_moves: bool,
    depth: usize,
    /// Constants being inlined (a constant that refers to itself is an error, not a loop).
    pub const_stack: Vec<String>,
    /// Closures bound with `let`, by number (`SlotKind::Closure`).
    pub closures: Vec<crate::closures::LocalClosure>,
    /// For a `&mut self` method: the slot of `self`, whose fields every return appends.
    pub receiver_slot: Option<usize>,
    /// The counters of the counted loops being lowered that run from 0 below their bound, with
    /// that bound: inside the body, `0 <= counter < bound` (`views.rs` skips range checks).
    pub counters: Vec<(Value, Value)>,
}

impl<'a> Lowerer<'a> {
    fn new(ctx: &'a ModuleCtx, sig: &FnSig) -> Lowerer<'a> {
        Lowerer {
            ctx,
            ssa: Ssa::new(&sig.name, {
                let mut results = sig.ret.ir_results();
                if sig.updates_receiver {
                    results.extend(crate::structs::receiver_parts(sig.params.first()));
                }
                results
            }),
            scopes: Scopes::default(),
            loops: vec![],
            ret: sig.ret.clone(),
            closure_floor: None,
            closure_moves: false,
            depth: 0,
            const_stack: vec![],
            closures: vec![],
            receiver_slot: None,
            counters: vec![],
        }
    }

    /// Attribute the instructions emitted from here on to where `span` starts (a span of one
    /// token or bracket: cheap, unlike a whole expression's, which walks its subtree). The
    /// accesses, operators and calls that can fault set it, so a fault replayed on the
    /// function as written names their line and column.
    pub(crate) fn at(&mut self, span: proc_macro2::Span) {
        let p = crate::error::Position::of(span);
        self.ssa.pos = jitdiff_ir::Pos { line: p.line, col: p.column };
    }

    /// Guard against stack exhaustion on absurdly nested input: call around every recursion.
    /// (`span` is computed only for the error: a node's span walks its whole subtree.)
    pub(crate) fn nested<T>(
        &mut self,
        span: impl FnOnce() -> proc_macro2::Span,
        work: impl FnOnce(&mut Self) -> Result<T>,
    ) -> Result<T> {
        if self.depth >= MAX_DEPTH {
            return Err(invalid(
                span(),
                format!(
                    "expressions nested more than {MAX_DEPTH} deep are not supported; split it with `let` bindings"
                ),
            ));
        }
        self.depth += 1;
        let result = work(self);
        self.depth -= 1;
        result
    }

    /// Declare a variable holding `value` (or uninitialised if `None`).
    pub(crate) fn declare(&mut self, name: &str, ty: Ty, mutable: bool, value: Option<Value>) -> usize {
        if let Some(v) = value {
            self.ssa.name_value(v, name);
        }
        self.scopes.declare(Slot {
            name: name.to_string(),
            ty,
            kind: SlotKind::Plain,
            mutable,
            state: SlotState { value, maybe_init: value.is_some() },
            assigned_at: None,
        })
    }

    /// Declare `name` as the element `slice[index]` (`for v in x.iter_mut()`).
    pub(crate) fn declare_element(&mut self, name: &str, slice: Value, index: Value) {
        self.scopes.declare(Slot {
            name: name.to_string(),
            ty: Ty::F64,
            kind: SlotKind::Element { slice, index },
            mutable: false,
            state: SlotState { value: None, maybe_init: true },
            assigned_at: None,
        });
    }

    /// A placeholder operand of type `ty` (for dead code after a diverging expression).
    pub(crate) fn placeholder(&mut self, ty: &Ty) -> Operand {
        let ir = ty.ir().filter(|t| !t.is_slice()).unwrap_or(Type::F64);
        let value = self.ssa.zero(ir);
        let ty = if ty.is_scalar() { ty.clone() } else { Ty::F64 };
        Operand { value, ty }
    }

    /// Return `value` from the function (checked against its result type).
    pub(crate) fn emit_return(&mut self, value: Lowered, span: proc_macro2::Span) -> Result<()> {
        if matches!(value, Lowered::Never) || !self.ssa.reachable {
            return Ok(());
        }
        let found = value.ty();
        if !found.fits(&self.ret) {
            return Err(crate::expr::type_error(span, &self.ret, &found, None));
        }
        let mut values = value.values();
        if let Some(slot) = self.receiver_slot
            && let Lowered::Struct(ty, items) = self.read_struct(slot, span)?
        {
            values.extend(ty.changeable().into_iter().map(|k| items[k].value));
        }
        self.ssa.terminate(Terminator::Return(values));
        self.ssa.reachable = false;
        Ok(())
    }
}

/// Lower the body of `item`, whose signature is `sig`.
/// Slice parameters marked in `views` are taken as views: three IR parameters each (the slice,
/// the offset of the view's first element and its length), bound as a view (`views.rs`).
pub(crate) fn lower_function(
    ctx: &ModuleCtx,
    item: &syn::ItemFn,
    sig: &FnSig,
    views: &[bool],
) -> Result<(Function, jitdiff_ir::FuncSpans)> {
    let mut lowerer = Lowerer::new(ctx, sig);
    lowerer.at(item.sig.fn_token.span);
    lowerer.ssa.spans.func = lowerer.ssa.pos;
    if let Some(entry) = lowerer.ssa.spans.blocks.first_mut() {
        *entry = lowerer.ssa.pos;
    }
    for (index, (input, ty)) in item.sig.inputs.iter().zip(&sig.params).enumerate() {
        let syn::FnArg::Typed(typed) = input else {
            return Err(unsupported(
                input.span(),
                "methods (`self` parameters)",
                "write a free `fn` and pass the fields",
            ));
        };
        let (name, mutable) = match &*typed.pat {
            syn::Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => {
                (crate::types::name_of(&p.ident), p.mutability.is_some())
            }
            syn::Pat::Wild(_) => ("_".to_string(), false),
            other => {
                return Err(unsupported(
                    other.span(),
                    "patterns in parameters",
                    "name the parameter (`x: f64`) and destructure in the body",
                ));
            }
        };
        if mutable && matches!(ty, Ty::Slice { .. }) && is_array_type(&typed.ty) {
            return Err(unsupported(
                typed.span(),
                "mutable array parameters taken by value",
                "take `&mut [f64; N]` to write the caller's array, or copy it into a local array",
            ));
        }
        if let Ty::Struct(st) = ty {
            // One IR parameter per scalar field, named after it (`s_x`, `s_inner_a`).
            let names = st.leaf_names();
            let leaves: Vec<Value> = ty
                .ir_parts()
                .into_iter()
                .zip(&names)
                .map(|(ir, leaf)| lowerer.ssa.func.add_param(ir, Some(&format!("{name}_{}", leaf.replace('.', "_")))))
                .collect();
            if index == 0 && sig.updates_receiver {
                lowerer.receiver_slot = Some(lowerer.scopes.len());
            }
            lowerer.declare_struct(&name, st, mutable, &leaves);
            continue;
        }
        let ir = ty.ir().unwrap_or(Type::F64);
        let value = lowerer.ssa.func.add_param(ir, Some(&name));
        if views.get(index).copied().unwrap_or(false) {
            let offset = lowerer.ssa.func.add_param(Type::I64, Some(&format!("{name}_offset")));
            let len = lowerer.ssa.func.add_param(Type::I64, Some(&format!("{name}_len")));
            let mutable = *ty == (Ty::Slice { mutable: true });
            lowerer.declare_view(&name, crate::views::View { slice: value, offset, len, mutable });
            continue;
        }
        let slot = lowerer.declare(&name, ty.clone(), mutable, Some(value));
        if let Some(cols) = crate::rows::row_length_of_type(&typed.ty) {
            let cols = crate::consts::const_int(lowerer.ctx, cols, "the length of a row")?;
            lowerer.scopes.slot_mut(slot).kind = SlotKind::Rows { cols };
        }
    }
    let body = lowerer.lower_block(&item.block, Some(&sig.ret.clone()))?;
    let close = item.block.brace_token.span.close();
    if lowerer.ssa.reachable {
        match body {
            Lowered::Unit if sig.ret != Ty::Unit => {
                let at = item.block.stmts.last().map_or(close, |s| s.span());
                return Err(FrontError::new(
                    at,
                    FrontErrorKind::MissingReturnValue { name: sig.shown.clone(), ty: sig.ret.to_string() },
                ));
            }
            value => {
                let at = tail_span(&item.block).unwrap_or(close);
                lowerer.emit_return(value, at)?;
            }
        }
    }
    lowerer.ssa.close_dead_blocks();
    Ok((lowerer.ssa.func, lowerer.ssa.spans))
}

fn tail_span(block: &syn::Block) -> Option<proc_macro2::Span> {
    match block.stmts.last() {
        Some(syn::Stmt::Expr(e, None)) => Some(e.span()),
        _ => None,
    }
}

fn is_array_type(ty: &syn::Type) -> bool {
    matches!(ty, syn::Type::Array(_))
}
