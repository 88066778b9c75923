//! Methods: on slices (`len`, `is_empty`), on `f64` (the math library, lowered to IR primitives
//! with Rust's exact semantics where the primitive differs) and on integers (`min`, `max`,
//! `abs`). Iterator methods are in `iter.rs` / `forloop.rs`.

use crate::error::{FrontError, FrontErrorKind, Result, invalid, unsupported};
use crate::lower::{Lowered, Lowerer, Operand};
use crate::types::{IntKind, Ty};
use jitdiff_ir::{CondCode, Opcode, Value};
use proc_macro2::Span;
use syn::spanned::Spanned;

/// Methods of `f64` that map to one IR primitive of the same meaning.
const UNARY: [(&str, Opcode); 26] = [
    ("sin", Opcode::Sin),
    ("cos", Opcode::Cos),
    ("tan", Opcode::Tan),
    ("asin", Opcode::Asin),
    ("acos", Opcode::Acos),
    ("atan", Opcode::Atan),
    ("sinh", Opcode::Sinh),
    ("cosh", Opcode::Cosh),
    ("asinh", Opcode::Asinh),
    ("acosh", Opcode::Acosh),
    ("atanh", Opcode::Atanh),
    ("tanh", Opcode::Tanh),
    ("exp", Opcode::Exp),
    ("exp_m1", Opcode::Expm1),
    ("ln", Opcode::Ln),
    ("ln_1p", Opcode::Log1p),
    ("sqrt", Opcode::Sqrt),
    ("abs", Opcode::Abs),
    ("floor", Opcode::Floor),
    ("ceil", Opcode::Ceil),
    ("exp2", Opcode::Exp2),
    ("log2", Opcode::Log2),
    ("log10", Opcode::Log10),
    ("cbrt", Opcode::Cbrt),
    ("round", Opcode::Round),
    ("trunc", Opcode::Trunc),
];

/// Every `f64` method the front end knows, for error messages.
const KNOWN_FLOAT_METHODS: &str = "sin cos tan asin acos atan atan2 sinh cosh tanh asinh acosh atanh exp exp2 exp_m1 ln ln_1p log log2 log10 sqrt cbrt abs powi powf hypot min max signum floor ceil round trunc fract recip clamp mul_add to_degrees to_radians sin_cos is_nan is_finite is_infinite is_sign_negative is_sign_positive copysign rem_euclid div_euclid";

impl Lowerer<'_> {
    pub(crate) fn lower_method_call(&mut self, m: &syn::ExprMethodCall, expect: Option<&Ty>) -> Result<Lowered> {
        let name = m.method.to_string();
        // `chain.position(..)`, `find`, `max_by`, `min_by` and the `Option` taken apart at once.
        let takes_apart = matches!(name.as_str(), "unwrap" | "unwrap_or" | "expect" | "is_some" | "is_none")
            || crate::defaults::is_default(&name);
        if takes_apart && let Some((inner, maps)) = crate::pick::option_source(&m.receiver) {
            return self.lower_option_consumer(m, inner, &maps);
        }
        // `x.first()` / `x.last()` and the `Option` taken apart at once.
        if let Some((slice, last)) = crate::ends::end_of(m) {
            return self.lower_slice_end(m, slice, last);
        }
        // The same through `map` or with a default: the picks of `x.iter()` that they are.
        if takes_apart && let Some(picked) = crate::ends::as_iterator_pick(m) {
            return self.lower_method_call(&picked, expect);
        }
        if let Some(called) = self.struct_method_call(m)? {
            return Ok(called);
        }
        if let Some(slot) = self.growing_of(&m.receiver)
            && let Some(done) = self.growing_method(m, slot)?
        {
            return Ok(done);
        }
        if let Some(cols) = self.rows_of(&m.receiver)
            && !matches!(name.as_str(), "iter" | "iter_mut" | "into_iter")
        {
            return self.rows_method(m, cols);
        }
        if crate::iter::is_iterator(&m.receiver) {
            return self.lower_iter_consumer(m, expect);
        }
        // `a.map(|v| ..)` of an array (`[f64; N]::map`): a new local array, as
        // `a.iter().map(..).collect()` makes.
        if name == "map" && m.args.len() == 1 && (makes_an_array(&m.receiver) || self.writes_a_slice(&m.receiver)?) {
            let (receiver, f) = (&m.receiver, &m.args[0]);
            let mapped: syn::ExprMethodCall =
                syn::parse_quote_spanned!(m.span()=> #receiver.iter().map(#f).collect::<Vec<f64>>());
            return self.lower_method_call(&mapped, expect);
        }
        if matches!(
            name.as_str(),
            "iter"
                | "iter_mut"
                | "enumerate"
                | "zip"
                | "map"
                | "rev"
                | "step_by"
                | "into_iter"
                | "windows"
                | "chunks"
                | "chunks_exact"
                | "chunks_mut"
                | "chunks_exact_mut"
        ) {
            return Err(unsupported(
                m.span(),
                "iterators that are not consumed in place",
                "consume the chain where it is built, with `sum()`, `product()`, `fold(...)`, `count()` or a `for` loop",
            ));
        }
        if crate::slice_updates::SLICE_UPDATES.contains(&name.as_str()) && self.writes_a_slice(&m.receiver)? {
            return self.lower_slice_update(m);
        }
        // `x.to_vec()`: a copy in a local array, as `x.iter().copied().collect()` makes.
        if matches!(name.as_str(), "to_vec" | "to_owned" | "clone")
            && m.args.is_empty()
            && self.writes_a_slice(&m.receiver)?
        {
            let receiver = &m.receiver;
            let copy: syn::ExprMethodCall =
                syn::parse_quote_spanned!(m.span()=> #receiver.iter().copied().collect::<Vec<f64>>());
            let (array, _, _) = self.lower_collect(&copy, None)?;
            return Ok(Lowered::Value(Operand { value: array, ty: Ty::Slice { mutable: true } }));
        }
        if let Some(view) = self.view_of(&m.receiver) {
            return self.view_method(view, m);
        }
        // `x[a..b].len()`, `x[a..].is_empty()`: a sub-slice measured in place.
        if let (_, Some(_)) = crate::iter::sub_slice(&m.receiver) {
            let view = self.slice_source(&m.receiver, None)?;
            return self.view_method(view, m);
        }
        let receiver = match self.lower_expr(&m.receiver, None)? {
            Lowered::Value(op) => op,
            Lowered::Never => return Ok(Lowered::Never),
            Lowered::Struct(ty, items) => return self.method_of_temporary(m, &ty, &items),
            other => {
                return Err(invalid(
                    m.receiver.span(),
                    format!("`{}` has no methods; call methods on numbers or slices", other.ty()),
                ));
            }
        };
        let args: Vec<&syn::Expr> = m.args.iter().collect();
        self.method(&name, receiver, &args, m.method.span(), m.span())
    }

    /// Is `receiver` a slice or a view, written as a place (`x`, `self.out`, `&mut w[a..b]`)?
    /// Only places are looked at, so that lowering one to see its type has no effect.
    fn writes_a_slice(&mut self, receiver: &syn::Expr) -> Result<bool> {
        let mut at = receiver;
        while let syn::Expr::Reference(syn::ExprReference { expr, .. })
        | syn::Expr::Paren(syn::ExprParen { expr, .. }) = at
        {
            at = expr;
        }
        if !matches!(at, syn::Expr::Path(_) | syn::Expr::Field(_) | syn::Expr::Index(_)) {
            return Ok(false);
        }
        if self.view_of(at).is_some() || crate::iter::sub_slice(at).1.is_some() {
            return Ok(true);
        }
        Ok(matches!(self.lower_expr(at, None)?, Lowered::Value(Operand { ty: Ty::Slice { .. }, .. })))
    }

    /// `a.sub(b).norm()`: a method of a struct value that is no variable (a call's result, a
    /// struct literal). The value is bound to a hidden variable, whose method is then called as
    /// any variable's would be (a `&mut self` method updates the temporary, as in Rust).
    fn method_of_temporary(
        &mut self,
        m: &syn::ExprMethodCall,
        ty: &std::rc::Rc<crate::structs::StructTy>,
        items: &[Operand],
    ) -> Result<Lowered> {
        const TEMPORARY: &str = "__jitdiff_receiver";
        self.scopes.push();
        let values: Vec<Value> = items.iter().map(|o| o.value).collect();
        self.declare_struct(TEMPORARY, ty, true, &values);
        let receiver: syn::Expr = syn::parse_quote_spanned!(m.receiver.span()=> __jitdiff_receiver);
        let call = syn::ExprMethodCall { receiver: Box::new(receiver), ..m.clone() };
        let result = self.struct_method_call(&call);
        self.scopes.pop();
        match result? {
            Some(lowered) => Ok(lowered),
            None => Err(invalid(m.receiver.span(), format!("`{}` has no methods here", ty.name))),
        }
    }

    /// `receiver.name(args)`, also reached from `f64::name(receiver, args)`.
    pub(crate) fn method(
        &mut self,
        name: &str,
        receiver: Operand,
        args: &[&syn::Expr],
        name_span: Span,
        span: Span,
    ) -> Result<Lowered> {
        match receiver.ty.clone() {
            Ty::Slice { .. } => self.slice_method(name, receiver.value, args, name_span, span),
            Ty::F64 => self.float_method(name, receiver.value, args, name_span, span),
            Ty::Int(kind) => self.int_method(name, receiver.value, kind, args, name_span, span),
            other => Err(unknown_method(name_span, name, &other, "`bool` has no methods here; use `!`, `&&`, `||`")),
        }
    }

    fn slice_method(
        &mut self,
        name: &str,
        slice: Value,
        args: &[&syn::Expr],
        name_span: Span,
        span: Span,
    ) -> Result<Lowered> {
        if matches!(
            name,
            "push" | "pop" | "extend" | "extend_from_slice" | "resize" | "insert" | "remove" | "truncate" | "clear"
        ) {
            return Err(unsupported(
                name_span,
                format!("calls of `{name}` (a `Vec` here keeps the length it was made with)"),
                "to `push`, make it with `Vec::with_capacity(n)` (`n` the most it will hold); else make it with its \
                 final length (`vec![0.0; n]`, `collect()`) and assign its elements (`v[i] = x`)",
            ));
        }
        if matches!(name, "first" | "last" | "get") {
            let call = if name == "get" { "get(k)" } else { name };
            return Err(unsupported(
                name_span,
                format!("`{call}` results kept as `Option`s"),
                format!(
                    "take it apart where it is made: `.{call}.unwrap()`, `.unwrap_or(d)`, `.map_or(d, |v| ..)`, \
                     `.is_some()`, or `if let Some(v) = x.{call} {{ .. }}`"
                ),
            ));
        }
        arg_count(name, args, 0, span)?;
        let len = self.ssa.op(Opcode::Len, &[slice]);
        match name {
            "len" => Ok(Lowered::Value(Operand { value: len, ty: Ty::Int(IntKind::Usize) })),
            "is_empty" => {
                let zero = self.ssa.iconst(0);
                Ok(Lowered::Value(Operand { value: self.ssa.icmp(CondCode::Eq, len, zero), ty: Ty::Bool }))
            }
            _ => Err(unknown_method(
                name_span,
                name,
                &Ty::Slice { mutable: false },
                "slices have `len`, `is_empty`, `iter`, `iter_mut` and (mutable ones) `swap`, `fill`, `copy_from_slice`, `reverse`",
            )),
        }
    }

    fn float_method(
        &mut self,
        name: &str,
        x: Value,
        args: &[&syn::Expr],
        name_span: Span,
        span: Span,
    ) -> Result<Lowered> {
        let float = |value| Ok(Lowered::Value(Operand { value, ty: Ty::F64 }));
        if let Some(&(_, op)) = UNARY.iter().find(|(n, _)| *n == name) {
            arg_count(name, args, 0, span)?;
            return float(self.ssa.op(op, &[x]));
        }
        match name {
            "atan2" | "hypot" | "powf" | "min" | "max" | "log" => {
                arg_count(name, args, 1, span)?;
                let y = self.scalar_of(args[0], &Ty::F64)?.value;
                let value = match name {
                    "atan2" => self.ssa.op(Opcode::Atan2, &[x, y]),
                    "hypot" => self.ssa.op(Opcode::Hypot, &[x, y]),
                    "powf" => self.ssa.op(Opcode::Pow, &[x, y]),
                    "min" => self.rust_min_max(x, y, true),
                    "max" => self.rust_min_max(x, y, false),
                    // Rust's `log(self, base)` is `self.ln() / base.ln()`.
                    _ => {
                        let (lx, ly) = (self.ssa.op(Opcode::Ln, &[x]), self.ssa.op(Opcode::Ln, &[y]));
                        self.ssa.op(Opcode::FDiv, &[lx, ly])
                    }
                };
                float(value)
            }
            "powi" => {
                arg_count(name, args, 1, span)?;
                let n = self.scalar(args[0], Some(&Ty::Int(IntKind::I32)))?;
                if !matches!(n.ty, Ty::Int(IntKind::I32 | IntKind::Literal)) {
                    return Err(crate::error::mismatch(
                        args[0].span(),
                        "i32",
                        &n.ty,
                        "`powi` takes an `i32`: add `as i32`",
                    ));
                }
                float(self.ssa.op(Opcode::Powi, &[x, n.value]))
            }
            "mul_add" => {
                arg_count(name, args, 2, span)?;
                let a = self.scalar_of(args[0], &Ty::F64)?.value;
                let b = self.scalar_of(args[1], &Ty::F64)?.value;
                float(self.ssa.op(Opcode::Fma, &[x, a, b]))
            }
            "fract" => {
                // Rust: `self - self.trunc()`.
                arg_count(name, args, 0, span)?;
                let whole = self.ssa.op(Opcode::Trunc, &[x]);
                float(self.ssa.op(Opcode::FSub, &[x, whole]))
            }
            "signum" => {
                arg_count(name, args, 0, span)?;
                float(self.rust_signum(x))
            }
            "recip" => {
                arg_count(name, args, 0, span)?;
                let one = self.ssa.fconst(1.0);
                float(self.ssa.op(Opcode::FDiv, &[one, x]))
            }
            "clamp" => {
                arg_count(name, args, 2, span)?;
                let lo = self.scalar_of(args[0], &Ty::F64)?.value;
                let hi = self.scalar_of(args[1], &Ty::F64)?.value;
                // Rust: `if x < lo { x = lo } if x > hi { x = hi } x` — a NaN `x` stays NaN.
                let below = self.ssa.fcmp(CondCode::Lt, x, lo);
                let raised = self.ssa.select(below, lo, x);
                let above = self.ssa.fcmp(CondCode::Gt, raised, hi);
                float(self.ssa.select(above, hi, raised))
            }
            "to_degrees" | "to_radians" => {
                arg_count(name, args, 0, span)?;
                // The constants Rust multiplies by.
                let factor =
                    if name == "to_degrees" { 180.0f64 / std::f64::consts::PI } else { std::f64::consts::PI / 180.0 };
                let k = self.ssa.fconst(factor);
                float(self.ssa.op(Opcode::FMul, &[x, k]))
            }
            "sin_cos" => {
                arg_count(name, args, 0, span)?;
                let (s, c) = (self.ssa.op(Opcode::Sin, &[x]), self.ssa.op(Opcode::Cos, &[x]));
                Ok(Lowered::Tuple(vec![Operand { value: s, ty: Ty::F64 }, Operand { value: c, ty: Ty::F64 }]))
            }
            "is_nan" | "is_finite" | "is_infinite" => {
                arg_count(name, args, 0, span)?;
                let value = if name == "is_nan" {
                    self.ssa.fcmp(CondCode::Ne, x, x)
                } else {
                    let magnitude = self.ssa.op(Opcode::Abs, &[x]);
                    let inf = self.ssa.fconst(f64::INFINITY);
                    let cond = if name == "is_finite" { CondCode::Lt } else { CondCode::Eq };
                    self.ssa.fcmp(cond, magnitude, inf)
                };
                Ok(Lowered::Value(Operand { value, ty: Ty::Bool }))
            }
            "is_sign_negative" | "is_sign_positive" => {
                arg_count(name, args, 0, span)?;
                let negative = self.sign_negative(x);
                let value = if name == "is_sign_negative" { negative } else { self.ssa.op(Opcode::Not, &[negative]) };
                Ok(Lowered::Value(Operand { value, ty: Ty::Bool }))
            }
            "copysign" => {
                // |x| with the sign of y (by `sign_negative`: a NaN `y` counts as positive).
                arg_count(name, args, 1, span)?;
                let y = self.scalar_of(args[0], &Ty::F64)?.value;
                let negative = self.sign_negative(y);
                let magnitude = self.ssa.op(Opcode::Abs, &[x]);
                let negated = self.ssa.op(Opcode::FNeg, &[magnitude]);
                float(self.ssa.select(negative, negated, magnitude))
            }
            "rem_euclid" | "div_euclid" => {
                // Rust: `r = x % y; if r < 0 { r + |y| } else { r }`, and
                // `q = trunc(x / y); if x % y < 0 { if y > 0 { q - 1 } else { q + 1 } } else { q }`.
                arg_count(name, args, 1, span)?;
                let y = self.scalar_of(args[0], &Ty::F64)?.value;
                let r = self.ssa.op(Opcode::FRem, &[x, y]);
                let zero = self.ssa.fconst(0.0);
                let below = self.ssa.fcmp(CondCode::Lt, r, zero);
                if name == "rem_euclid" {
                    let magnitude = self.ssa.op(Opcode::Abs, &[y]);
                    let raised = self.ssa.op(Opcode::FAdd, &[r, magnitude]);
                    return float(self.ssa.select(below, raised, r));
                }
                let quotient = self.ssa.op(Opcode::FDiv, &[x, y]);
                let q = self.ssa.op(Opcode::Trunc, &[quotient]);
                let one = self.ssa.fconst(1.0);
                let (down, up) = (self.ssa.op(Opcode::FSub, &[q, one]), self.ssa.op(Opcode::FAdd, &[q, one]));
                let positive = self.ssa.fcmp(CondCode::Gt, y, zero);
                let adjusted = self.ssa.select(positive, down, up);
                float(self.ssa.select(below, adjusted, q))
            }
            _ => Err(unknown_method(
                name_span,
                name,
                &Ty::F64,
                &format!("the `f64` methods supported are {KNOWN_FLOAT_METHODS}"),
            )),
        }
    }

    /// Rust's `f64::min`/`max`, which ignore a NaN operand (NaN only when both are), from IR
    /// `min`/`max` (`a < b ? a : b`, which gives `b` when either is NaN): where `b` is NaN the
    /// result is `a`. (Rust leaves the sign of a zero result unspecified when the operands are
    /// `0.0` and `-0.0`; so does this lowering.)
    fn rust_min_max(&mut self, a: Value, b: Value, min: bool) -> Value {
        let primitive = self.ssa.op(if min { Opcode::Min } else { Opcode::Max }, &[a, b]);
        let b_is_nan = self.ssa.fcmp(CondCode::Ne, b, b);
        self.ssa.select(b_is_nan, a, primitive)
    }

    /// Rust's `signum`: 1.0 for `+0.0` and positive numbers, -1.0 for `-0.0` and negative ones,
    /// NaN (`f64::NAN`) for NaN. IR `sign` keeps zeros and NaN as they are, so zeros take
    /// the sign of `1 / x` (±inf) and a NaN becomes `f64::NAN`.
    /// Whether `x`'s sign bit is set, as far as comparisons tell: `x < 0`, or `x` is a zero
    /// whose reciprocal is `-inf` (`-0.0`). The IR cannot read the sign of a NaN: it counts as
    /// positive (Rust's `f64::NAN` is; a NaN made by arithmetic may not be).
    fn sign_negative(&mut self, x: Value) -> Value {
        let zero = self.ssa.fconst(0.0);
        let one = self.ssa.fconst(1.0);
        let below = self.ssa.fcmp(CondCode::Lt, x, zero);
        let inverse = self.ssa.op(Opcode::FDiv, &[one, x]);
        let negative_zero = self.ssa.fcmp(CondCode::Lt, inverse, zero);
        let is_zero = self.ssa.fcmp(CondCode::Eq, x, zero);
        let zero_negative = self.ssa.op(Opcode::And, &[is_zero, negative_zero]);
        self.ssa.op(Opcode::Or, &[below, zero_negative])
    }

    fn rust_signum(&mut self, x: Value) -> Value {
        let sign = self.ssa.op(Opcode::Sign, &[x]);
        let zero = self.ssa.fconst(0.0);
        let one = self.ssa.fconst(1.0);
        let is_zero = self.ssa.fcmp(CondCode::Eq, x, zero);
        let inverse = self.ssa.op(Opcode::FDiv, &[one, x]);
        let negative_zero = self.ssa.fcmp(CondCode::Lt, inverse, zero);
        let minus_one = self.ssa.fconst(-1.0);
        let zero_sign = self.ssa.select(negative_zero, minus_one, one);
        let fixed = self.ssa.select(is_zero, zero_sign, sign);
        let is_nan = self.ssa.fcmp(CondCode::Ne, x, x);
        let nan = self.ssa.fconst(f64::NAN);
        self.ssa.select(is_nan, nan, fixed)
    }

    fn int_method(
        &mut self,
        name: &str,
        x: Value,
        kind: IntKind,
        args: &[&syn::Expr],
        name_span: Span,
        span: Span,
    ) -> Result<Lowered> {
        let ty = Ty::Int(kind);
        match name {
            "min" | "max" => {
                arg_count(name, args, 1, span)?;
                let y = self.scalar_of(args[0], &ty)?;
                let kind = match y.ty {
                    Ty::Int(k) => kind.unify(k).unwrap_or(kind),
                    _ => kind,
                };
                let cond = if name == "min" { CondCode::Le } else { CondCode::Ge };
                let keep = self.ssa.icmp(cond, x, y.value);
                Ok(Lowered::Value(Operand { value: self.ssa.select(keep, x, y.value), ty: Ty::Int(kind) }))
            }
            "abs" if !kind.is_unsigned() => {
                arg_count(name, args, 0, span)?;
                let zero = self.ssa.iconst(0);
                let negative = self.ssa.icmp(CondCode::Lt, x, zero);
                let negated = self.ssa.op(Opcode::INeg, &[x]);
                Ok(Lowered::Value(Operand { value: self.ssa.select(negative, negated, x), ty }))
            }
            "wrapping_add" | "wrapping_sub" | "wrapping_mul" => {
                // 64-bit arithmetic wraps as the IR's does; a 32-bit type keeps its low 32 bits.
                arg_count(name, args, 1, span)?;
                let y = self.scalar_of(args[0], &ty)?.value;
                let op = match name {
                    "wrapping_add" => Opcode::IAdd,
                    "wrapping_sub" => Opcode::ISub,
                    _ => Opcode::IMul,
                };
                let value = self.ssa.op(op, &[x, y]);
                let value =
                    if matches!(kind, IntKind::I32 | IntKind::U32) { self.extend_32(value, kind) } else { value };
                Ok(Lowered::Value(Operand { value, ty }))
            }
            "saturating_add" | "saturating_sub" => {
                arg_count(name, args, 1, span)?;
                let y = self.scalar_of(args[0], &ty)?.value;
                Ok(Lowered::Value(Operand { value: self.saturating(name == "saturating_add", x, y, kind), ty }))
            }
            "pow" => {
                // A literal exponent: square and multiply, unrolled (wrapping at 64 bits).
                arg_count(name, args, 1, span)?;
                let Some(mut e) = literal_u32(args[0]) else {
                    return Err(unsupported(
                        args[0].span(),
                        "integer `pow` with an exponent that is not a literal",
                        "multiply in a loop, or compute in `f64` with `powi`",
                    ));
                };
                let (mut acc, mut base) = (self.ssa.iconst(1), x);
                while e > 0 {
                    if e & 1 == 1 {
                        acc = self.ssa.op(Opcode::IMul, &[acc, base]);
                    }
                    e >>= 1;
                    if e > 0 {
                        base = self.ssa.op(Opcode::IMul, &[base, base]);
                    }
                }
                Ok(Lowered::Value(Operand { value: acc, ty }))
            }
            _ => Err(unknown_method(
                name_span,
                name,
                &ty,
                "integers have `min`, `max`, `abs`, `pow` (by a literal), `wrapping_add`/`_sub`/`_mul` and `saturating_add`/`_sub`; convert with `as f64` for math",
            )),
        }
    }

    /// `x.saturating_add(y)` / `x.saturating_sub(y)` of `kind`: a result past `i64` (the
    /// operation wrapped: the operands' signs say so) is `i64`'s bound on `x`'s side, and then
    /// the result is clamped to the type's range (32-bit types, and below 0 for unsigned ones;
    /// unsigned 64-bit values stop at `i64::MAX`, the most an IR integer holds).
    fn saturating(&mut self, add: bool, x: Value, y: Value, kind: IntKind) -> Value {
        let result = self.ssa.op(if add { Opcode::IAdd } else { Opcode::ISub }, &[x, y]);
        let x_flip = self.ssa.op(Opcode::IXor, &[x, result]);
        let other = if add { self.ssa.op(Opcode::IXor, &[y, result]) } else { self.ssa.op(Opcode::IXor, &[x, y]) };
        let both = self.ssa.op(Opcode::IAnd, &[x_flip, other]);
        let zero = self.ssa.iconst(0);
        let wrapped = self.ssa.icmp(CondCode::Lt, both, zero);
        let x_negative = self.ssa.icmp(CondCode::Lt, x, zero);
        let (min, max) = (self.ssa.iconst(i64::MIN), self.ssa.iconst(i64::MAX));
        let bound = self.ssa.select(x_negative, min, max);
        let result = self.ssa.select(wrapped, bound, result);
        let (lo, hi) = kind.range();
        let (lo, hi) = (self.ssa.iconst(lo as i64), self.ssa.iconst(hi as i64));
        let below = self.ssa.icmp(CondCode::Lt, result, lo);
        let result = self.ssa.select(below, lo, result);
        let above = self.ssa.icmp(CondCode::Gt, result, hi);
        self.ssa.select(above, hi, result)
    }
}

fn arg_count(name: &str, args: &[&syn::Expr], expected: usize, span: Span) -> Result<()> {
    if args.len() == expected {
        Ok(())
    } else {
        Err(FrontError::new(span, FrontErrorKind::ArgCount { name: name.to_string(), expected, found: args.len() }))
    }
}

fn unknown_method(span: Span, name: &str, ty: &Ty, instead: &str) -> FrontError {
    FrontError::new(
        span,
        FrontErrorKind::UnknownMethod { ty: ty.to_string(), method: name.to_string(), instead: instead.into() },
    )
}

/// A `u32` literal (`3`, `3u32`, in parentheses).
fn literal_u32(expr: &syn::Expr) -> Option<u32> {
    match expr {
        syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(i), .. }) if matches!(i.suffix(), "" | "u32") => {
            i.base10_parse().ok()
        }
        syn::Expr::Paren(p) => literal_u32(&p.expr),
        _ => None,
    }
}

/// Is `expr` an array written in place: `[a, b]`, `[v; N]`, or a block ending in one (a call of
/// a function returning an array, see `array_results.rs`)?
fn makes_an_array(expr: &syn::Expr) -> bool {
    match expr {
        syn::Expr::Paren(p) => makes_an_array(&p.expr),
        syn::Expr::Array(_) | syn::Expr::Repeat(_) => true,
        syn::Expr::Block(b) => {
            matches!(b.block.stmts.last(), Some(syn::Stmt::Expr(tail, None)) if makes_an_array(tail))
        }
        _ => false,
    }
}
