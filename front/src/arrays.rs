//! Local arrays: `[a, b, c]`, `[x; N]`, `vec![...]` and `collect()`, allocated once per call in
//! the entry block (where the IR wants every `alloc`) and filled where the expression runs.

use crate::error::{Result, invalid, unsupported};
use crate::forloop::Consumer;
use crate::iter::{Adapter, Plan, parse_chain};
use crate::lower::{Lowered, Lowerer, Operand};
use crate::types::{IntKind, Ty};
use jitdiff_ir::{Block, CondCode, Imm, Opcode, Value};
use syn::spanned::Spanned;

/// The largest local array `[x; N]` the front end allocates.
const MAX_LOCAL_ARRAY: i64 = 1 << 24;

/// Local arrays up to this length are filled by straight-line stores, longer ones by a loop.
const UNROLLED_FILL: i64 = 16;

impl Lowerer<'_> {
    /// A macro call as an expression: `vec![...]` is a local array; any other is an error.
    pub(crate) fn lower_macro(&mut self, mac: &syn::Macro) -> Result<Lowered> {
        if let Some(name) = mac.path.get_ident().map(crate::types::name_of)
            && crate::panics::PANIC_MACROS.contains(&name.as_str())
        {
            return self.lower_panic_macro(mac, &name);
        }
        if !mac.path.is_ident("vec") {
            return Err(crate::expr::macro_error(mac));
        }
        let group = proc_macro2::Group::new(proc_macro2::Delimiter::Bracket, mac.tokens.clone());
        let inner: syn::Expr = syn::parse2(proc_macro2::TokenTree::Group(group).into())
            .map_err(|_| invalid(mac.span(), "`vec!` takes `[x; n]` or `[a, b, c]` between its brackets"))?;
        match &inner {
            syn::Expr::Array(array) => self.lower_array_literal(array),
            syn::Expr::Repeat(repeat) if crate::consts::const_int(self.ctx, &repeat.len, "").is_ok() => {
                self.lower_array_repeat(repeat)
            }
            syn::Expr::Repeat(repeat) => self.lower_vec_of_length(repeat, mac),
            _ => Err(invalid(mac.span(), "`vec!` takes `[x; n]` or `[a, b, c]` between its brackets")),
        }
    }

    /// `[a, b, c]`: a local array (allocated once per call, in the entry block), filled here.
    pub(crate) fn lower_array_literal(&mut self, array: &syn::ExprArray) -> Result<Lowered> {
        let len = array.elems.len() as i64;
        if len == 0 {
            return Err(unsupported(array.span(), "empty arrays", "give the array at least one element"));
        }
        // `[[a, b], [c, d]]`: rows of the same length, flat (see `rows.rs`).
        if matches!(crate::iter::peel_parens(&array.elems[0]), syn::Expr::Array(_) | syn::Expr::Repeat(_)) {
            let mut values = vec![];
            let mut width = None;
            for elem in &array.elems {
                let Some(row) = self.row_values(elem)? else {
                    return Err(invalid(
                        elem.span(),
                        "every row of an array of arrays must be written `[a, b, ..]` or `[x; C]`",
                    ));
                };
                if *width.get_or_insert(row.len()) != row.len() {
                    return Err(invalid(elem.span(), "the rows of an array of arrays must have the same length"));
                }
                values.extend(row);
            }
            return Ok(self.stored_in_new_array(values));
        }
        let mut values = vec![];
        for elem in &array.elems {
            values.push(self.scalar_of(elem, &Ty::F64)?.value);
        }
        Ok(self.stored_in_new_array(values))
    }

    /// A local array of `values`, stored one by one.
    fn stored_in_new_array(&mut self, values: Vec<Value>) -> Lowered {
        let slice = self.ssa.alloc_in_entry(values.len() as i64);
        for (k, value) in values.into_iter().enumerate() {
            let index = self.ssa.iconst(k as i64);
            self.ssa.store(slice, index, value);
        }
        Lowered::Value(Operand { value: slice, ty: Ty::Slice { mutable: true } })
    }

    /// `[x; N]` with a constant `N`: a local array filled with `x` each time this runs.
    pub(crate) fn lower_array_repeat(&mut self, repeat: &syn::ExprRepeat) -> Result<Lowered> {
        let len = self.const_int(&repeat.len)?;
        if !(1..=MAX_LOCAL_ARRAY).contains(&len) {
            return Err(invalid(
                repeat.len.span(),
                format!(
                    "a local array needs a length from 1 to {MAX_LOCAL_ARRAY}, not {len}; pass a `&mut [f64]` for larger buffers"
                ),
            ));
        }
        // `[[x; C]; R]`, `[[a, b]; R]`: R copies of the row, flat (see `rows.rs`).
        if let Some(row) = self.row_values(&repeat.expr)? {
            let total = len.saturating_mul(row.len() as i64);
            if total > MAX_LOCAL_ARRAY {
                return Err(invalid(
                    repeat.span(),
                    format!("a local array holds at most {MAX_LOCAL_ARRAY} elements, not {total}"),
                ));
            }
            let slice = self.ssa.alloc_in_entry(total);
            let count = self.ssa.iconst(len);
            self.fill_rows(slice, count, &row);
            return Ok(Lowered::Value(Operand { value: slice, ty: Ty::Slice { mutable: true } }));
        }
        let fill = self.scalar_of(&repeat.expr, &Ty::F64)?.value;
        let slice = self.ssa.alloc_in_entry(len);
        if len <= UNROLLED_FILL {
            for k in 0..len {
                let index = self.ssa.iconst(k);
                self.ssa.store(slice, index, fill);
            }
        } else {
            let bound = self.ssa.iconst(len);
            self.fill_loop(slice, bound, fill);
        }
        Ok(Lowered::Value(Operand { value: slice, ty: Ty::Slice { mutable: true } }))
    }

    /// `vec![x; n]` with `n` computed at run time. In the entry block it is allocated where it
    /// is written. Elsewhere (in a loop or branch) the IR still wants the `alloc` in the entry
    /// block: `n` is computed there too, which needs it to depend only on parameters, their
    /// lengths and constants (see [`crate::ssa::Ssa::value_in_entry`]), and the array is filled
    /// where the `vec!` runs, each time it runs, as Rust makes a fresh one.
    fn lower_vec_of_length(&mut self, repeat: &syn::ExprRepeat, mac: &syn::Macro) -> Result<Lowered> {
        // `vec![[x; C]; n]`: n rows, flat (see `rows.rs`).
        if let Some(row) = self.row_values(&repeat.expr)? {
            let count = self.scalar_of(&repeat.len, &Ty::Int(IntKind::Usize))?.value;
            let width = self.ssa.iconst(row.len() as i64);
            let len = self.ssa.op(Opcode::IMul, &[count, width]);
            self.at(mac.path.span());
            let slice = if self.ssa.current == Block::ENTRY {
                self.ssa.op(Opcode::Alloc, &[len])
            } else {
                self.array_allocated_at_entry(len, mac.span())?
            };
            self.fill_rows(slice, count, &row);
            return Ok(Lowered::Value(Operand { value: slice, ty: Ty::Slice { mutable: true } }));
        }
        let fill = self.scalar_of(&repeat.expr, &Ty::F64)?.value;
        let len = self.scalar_of(&repeat.len, &Ty::Int(IntKind::Usize))?.value;
        self.at(mac.path.span());
        if self.ssa.current == Block::ENTRY {
            let slice = self.ssa.op(Opcode::Alloc, &[len]);
            // `alloc` zeroes (+0.0): only another fill needs stores.
            let positive_zero = matches!(&*repeat.expr, syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Float(f), .. })
                if f.base10_parse::<f64>().is_ok_and(|v| v.to_bits() == 0));
            if !positive_zero {
                self.fill_loop(slice, len, fill);
            }
            return Ok(Lowered::Value(Operand { value: slice, ty: Ty::Slice { mutable: true } }));
        }
        let slice = self.array_allocated_at_entry(len, mac.span())?;
        self.fill_loop(slice, len, fill);
        Ok(Lowered::Value(Operand { value: slice, ty: Ty::Slice { mutable: true } }))
    }

    /// A local array of `len` elements for code outside the entry block: allocated in the entry
    /// block with `len` computed there (an error where it cannot be), at least 0 long. Where
    /// `len` is negative (a `usize` that wrapped below 0), the code here fails with a `Panic`
    /// fault, as Rust panics on the capacity overflow; the entry block allocates nothing then.
    pub(crate) fn array_allocated_at_entry(&mut self, len: Value, span: proc_macro2::Span) -> Result<Value> {
        let Some(at_entry) = self.ssa.value_in_entry(len) else {
            return Err(unsupported(
                span,
                "local arrays whose length depends on values computed in a loop or branch (a loop counter, an element)",
                "compute the length from parameters, their `len()` and constants, or allocate the largest size once at \
                 the top of the function and use a part of it",
            ));
        };
        // Entry-block code: clamp at 0, so a length only a path that never runs would see
        // cannot fail the call.
        let zero_at_entry = self.ssa.at_entry_end(Opcode::IConst, &[], Imm::I64(0));
        let negative_at_entry =
            self.ssa.at_entry_end(Opcode::ICmp, &[at_entry, zero_at_entry], Imm::Cond(CondCode::Lt));
        let clamped = self.ssa.at_entry_end(Opcode::Select, &[negative_at_entry, zero_at_entry, at_entry], Imm::None);
        let slice = self.ssa.at_entry_end(Opcode::Alloc, &[clamped], Imm::None);
        // Here: the length Rust asks for must be the one allocated.
        let zero = self.ssa.iconst(0);
        let negative = self.ssa.icmp(CondCode::Lt, len, zero);
        let fail = self.ssa.new_block("capacity_overflow");
        let fine = self.ssa.new_block("allocated");
        let reachable = self.ssa.reachable;
        self.ssa.branch(negative, fail, fine);
        self.ssa.switch_to(fail, reachable);
        self.ssa.push(Opcode::Trap, vec![], jitdiff_ir::Imm::None);
        self.ssa.jump(fine, vec![]);
        self.ssa.switch_to(fine, reachable);
        Ok(slice)
    }

    /// `for k in 0..len { slice[k] = fill }` (variables are unchanged: no carried state).
    fn fill_loop(&mut self, slice: Value, len: Value, fill: Value) {
        self.fill_rows(slice, len, &[fill]);
    }

    /// `chain.collect::<Vec<f64>>()` (or with the type from a `let`'s annotation): the local
    /// array the items are stored in, how many there are, and whether a `filter` may have left
    /// some out (then the `Vec` is the array's first `count` elements, a view).
    ///
    /// The array is as long as the chain's source, allocated in the entry block as the IR
    /// wants; outside it, with a length the entry block computes too (see
    /// [`Lowerer::array_allocated_at_entry`]). A chain run again (in a loop) refills it, as
    /// Rust would make a new `Vec`.
    pub(crate) fn lower_collect(
        &mut self,
        m: &syn::ExprMethodCall,
        expect: Option<&Ty>,
    ) -> Result<(Value, Value, bool)> {
        if !m.args.is_empty() {
            return Err(invalid(m.span(), "`collect` takes no arguments"));
        }
        let into_vec = match &m.turbofish {
            Some(generics) => {
                generics.args.len() == 1
                    && matches!(generics.args.first(), Some(syn::GenericArgument::Type(t)) if crate::types::is_vec_of_f64(t, true))
            }
            None => expect.is_none_or(|t| matches!(t, Ty::Slice { .. })),
        };
        if !into_vec {
            return Err(unsupported(
                m.span(),
                "`collect` calls into anything but a `Vec<f64>`",
                "collect `f64` items: `.collect::<Vec<f64>>()`, or `let v: Vec<f64> = ....collect();`",
            ));
        }
        let chain = parse_chain(&m.receiver)?;
        let filtered = chain.adapters.iter().any(Adapter::drops_items);
        let Lowered::Tuple(parts) = self.counted_loop(&chain, Consumer::Collect, None, m.span())? else {
            return Err(invalid(m.span(), "`collect` gave no array (a front-end bug)"));
        };
        Ok((parts[0].value, parts[1].value, filtered))
    }

    /// The number of items `plan` gives, at least 0 (the length of a `collect`ed array).
    pub(crate) fn item_count(&mut self, plan: &Plan) -> Value {
        let (start, bound, cond, step) = match plan {
            Plan::Indexed(stream) => return stream.count(),
            Plan::Direct { start, bound, cond, step, .. } => (*start, *bound, *cond, *step),
        };
        let mut span = self.ssa.op(Opcode::ISub, &[bound, start]);
        if cond == CondCode::Le {
            let one = self.ssa.iconst(1);
            span = self.ssa.op(Opcode::IAdd, &[span, one]);
        }
        let zero = self.ssa.iconst(0);
        let empty = self.ssa.icmp(CondCode::Le, span, zero);
        let span = self.ssa.select(empty, zero, span);
        // `step_by(s)`: ceil(span / s), `s` a constant of at least 1.
        let one = self.ssa.iconst(1);
        let less_one = self.ssa.op(Opcode::ISub, &[step, one]);
        let rounded_up = self.ssa.op(Opcode::IAdd, &[span, less_one]);
        self.ssa.op(Opcode::IDiv, &[rounded_up, step])
    }

    /// `let (left, right) = x.split_at(k);` (or `split_at_mut`): the views `&x[..k]` and
    /// `&x[k..]`, `k` evaluated once; `k` past the end is a `Panic` fault, as Rust panics.
    /// `false` where `init` is no such call.
    pub(crate) fn bind_split(&mut self, plain: &syn::Pat, init: &syn::Expr) -> Result<bool> {
        let syn::Expr::MethodCall(m) = crate::iter::peel_parens(init) else { return Ok(false) };
        let mutable = m.method == "split_at_mut";
        if !(mutable || m.method == "split_at") || m.args.len() != 1 {
            return Ok(false);
        }
        let syn::Pat::Tuple(pair) = plain else { return Ok(false) };
        let [left, right] = &pair.elems.iter().collect::<Vec<_>>()[..] else {
            return Err(invalid(plain.span(), "`split_at` gives two slices: bind them as `(left, right)`"));
        };
        let (left, _) = crate::stmt::binding(left)?;
        let (right, _) = crate::stmt::binding(right)?;
        let span = m.span();
        let at = self.scalar_of(&m.args[0], &Ty::Int(IntKind::Usize))?;
        self.scopes.push();
        self.declare("_jitdiff_mid", at.ty.clone(), false, Some(at.value));
        let receiver = &m.receiver;
        let whole = self.slice_source(receiver, Some(mutable))?;
        let inside = self.ssa.icmp(CondCode::Le, at.value, whole.len);
        self.trap_unless(inside, m.method.span(), ("mid_past_end", "split"));
        let front: syn::Expr = syn::parse_quote_spanned!(span=> #receiver[.._jitdiff_mid]);
        let back: syn::Expr = syn::parse_quote_spanned!(span=> #receiver[_jitdiff_mid..]);
        let views = (self.sub_slice_view(&front, mutable), self.sub_slice_view(&back, mutable));
        self.scopes.pop();
        let (front, back) = (views.0?, views.1?);
        self.declare_view(&left, front);
        self.declare_view(&right, back);
        Ok(true)
    }

    /// `let kept: Vec<f64> = x.iter().filter(..).copied().collect();`: the first `count`
    /// elements of the array collected into, a view; `false` where `init` is no `collect`
    /// after a `filter`.
    pub(crate) fn bind_filtered_collect(
        &mut self,
        local: &syn::Local,
        plain: &syn::Pat,
        init: &syn::Expr,
    ) -> Result<bool> {
        if let syn::Expr::MethodCall(m) = crate::iter::peel_parens(init)
            && m.method == "collect"
            && crate::iter::is_iterator(&m.receiver)
            && let Ok(chain) = crate::iter::parse_chain(&m.receiver)
            && chain.adapters.iter().any(crate::iter::Adapter::drops_items)
        {
            let annotated = match &local.pat {
                syn::Pat::Type(pt) => Some(crate::types::parse_type(&pt.ty, crate::types::TypePlace::Local)?),
                _ => None,
            };
            let (name, mutable) = crate::stmt::binding(plain)?;
            let (slice, len, _) = self.lower_collect(m, annotated.as_ref())?;
            let offset = self.ssa.iconst(0);
            self.declare_view(&name, crate::views::View { slice, offset, len, mutable });
            return Ok(true);
        }
        Ok(false)
    }

    /// `let [a, _, mut c] = array;` and `let [first, .., last] = array;`: each name bound to its
    /// element (`load`, bounds-checked; elements after `..` counted from the end).
    pub(crate) fn bind_array_pattern(&mut self, pattern: &syn::PatSlice, array: jitdiff_ir::Value) -> Result<()> {
        let rest = pattern.elems.iter().position(|p| matches!(p, syn::Pat::Rest(_)));
        let count = pattern.elems.len();
        for (k, elem) in pattern.elems.iter().enumerate() {
            if matches!(elem, syn::Pat::Wild(_) | syn::Pat::Rest(_)) {
                continue;
            }
            if !matches!(elem, syn::Pat::Ident(_)) {
                return Err(unsupported(
                    elem.span(),
                    "array patterns other than names, `_` and `..`",
                    "bind the elements by name",
                ));
            }
            let (name, mutable) = crate::stmt::binding(elem)?;
            let index = match rest {
                Some(r) if k > r => {
                    let len = self.ssa.op(jitdiff_ir::Opcode::Len, &[array]);
                    let back = self.ssa.iconst((count - k) as i64);
                    self.ssa.op(jitdiff_ir::Opcode::ISub, &[len, back])
                }
                _ => self.ssa.iconst(k as i64),
            };
            let value = self.ssa.op(jitdiff_ir::Opcode::Load, &[array, index]);
            self.ssa.name_value(value, &name);
            self.declare(&name, Ty::F64, mutable, Some(value));
        }
        Ok(())
    }

    /// `name = value;` of a local array `name` owns: the elements of `value` copied into it
    /// (Rust moves `value` there, so nothing can tell a copy apart), which needs the two to
    /// have the same length — a `Panic` fault where they have not (the IR's local arrays keep
    /// the length they were allocated with).
    pub(crate) fn copy_into_owned_array(&mut self, name: &str, value: Operand, span: proc_macro2::Span) -> Result<()> {
        self.scopes.push();
        self.declare("_assigned", value.ty, false, Some(value.value));
        let target = syn::Ident::new(name, span);
        let copy: syn::Block = syn::parse_quote_spanned!(span=> { #target.copy_from_slice(&_assigned); });
        let lowered = self.lower_block(&copy, Some(&Ty::Unit));
        self.scopes.pop();
        lowered.map(|_| ())
    }
}

/// Does `expr` make a new array the variable bound to it owns (`vec![..]`, `[x; N]`, `[a, b]`,
/// `collect()`, `to_vec()`, ...)?
pub(crate) fn makes_an_array(expr: &syn::Expr) -> bool {
    match crate::iter::peel_parens(expr) {
        syn::Expr::Array(_) | syn::Expr::Repeat(_) => true,
        syn::Expr::Macro(m) => m.mac.path.is_ident("vec"),
        syn::Expr::MethodCall(m) => {
            matches!(m.method.to_string().as_str(), "collect" | "to_vec" | "to_owned" | "clone")
        }
        _ => false,
    }
}
