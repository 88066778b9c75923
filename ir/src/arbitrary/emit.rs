//! Leaf statements of generated programs: float and integer math, comparisons, select,
//! conversions, memory, vectors, extern calls — and the operand pickers and smooth-mode guards
//! they share.

use super::generate::{Env, F, Generator, LIMIT};
use crate::builder::{FunctionBuilder, Var};
use crate::opcode::{CondCode, Opcode};
use crate::types::Type;
use std::f64::consts::{FRAC_PI_2, PI};

/// Magnitude of every `ftoi`/`itof` result: `|i64| <= 2^63`.
const I64_BOUND: f64 = 9.3e18;
/// Names given to some values, to exercise naming (`v1` is reserved and gets a suffix).
const NAMES: [&str; 7] = ["t", "acc", "tmp", "x", "v1", "sum", "loop_i"];

impl Generator<'_> {
    // ---- operand pickers: a visible value of the wanted type, or a fresh constant ----

    /// Index into a pool of `n > 0` values, biased toward recent ones (deeper expressions).
    fn pick_index(&mut self, n: usize) -> usize {
        if self.chance(50) { n - 1 - self.below(n.min(4)) } else { self.below(n) }
    }

    pub(super) fn float<'a>(&mut self, f: &'a FunctionBuilder, env: &mut Env<'a>) -> F<'a> {
        if env.floats.is_empty() || self.chance(6) {
            let c = self.float_const();
            let x = F { v: f.float(c), bound: c.abs() };
            env.floats.push(x);
            return x;
        }
        env.floats[self.pick_index(env.floats.len())]
    }

    pub(super) fn int<'a>(&mut self, f: &'a FunctionBuilder, env: &mut Env<'a>) -> Var<'a> {
        if env.ints.is_empty() || self.chance(6) {
            let v = f.int(self.int_const());
            env.ints.push(v);
            return v;
        }
        env.ints[self.pick_index(env.ints.len())]
    }

    pub(super) fn bool<'a>(&mut self, f: &'a FunctionBuilder, env: &mut Env<'a>) -> Var<'a> {
        if env.bools.is_empty() {
            let b = if env.ints.is_empty() {
                f.bool(self.chance(50))
            } else {
                let (a, c) = (self.int(f, env), self.int(f, env));
                f.icmp(self.cond(), a, c)
            };
            env.bools.push(b);
            return b;
        }
        env.bools[self.pick_index(env.bools.len())]
    }

    /// A vector of `lanes` lanes: a visible one or a splat.
    fn vector_of<'a>(&mut self, f: &'a FunctionBuilder, env: &mut Env<'a>, lanes: u8) -> F<'a> {
        let fitting: Vec<F<'a>> = env.vecs.iter().copied().filter(|v| v.v.ty() == Type::F64x(lanes)).collect();
        if fitting.is_empty() || self.chance(10) {
            let x = self.float(f, env);
            let x = self.tame(x, LIMIT);
            let v = F { v: f.splat(lanes, x.v), bound: x.bound };
            env.vecs.push(v);
            return v;
        }
        fitting[self.pick_index(fitting.len())]
    }

    /// A value of type `ty` (not a slice).
    pub(super) fn value_of<'a>(&mut self, f: &'a FunctionBuilder, env: &mut Env<'a>, ty: Type) -> F<'a> {
        match ty {
            Type::I64 => F { v: self.int(f, env), bound: 0.0 },
            Type::Bool => F { v: self.bool(f, env), bound: 0.0 },
            Type::F64x(w) => self.vector_of(f, env, w),
            _ => self.float(f, env),
        }
    }

    /// Make `v` visible, squashed below [`LIMIT`] first in smooth mode if its bound may exceed it.
    pub(super) fn keep<'a>(&self, env: &mut Env<'a>, v: Var<'a>, bound: f64) {
        let x = self.tame(F { v, bound }, LIMIT);
        env.push(x.v, x.bound);
    }

    /// The value a function returns or a branch side yields: the newest value of the type,
    /// for floats plus up to two more, so results depend on the computation before them.
    pub(super) fn result_value<'a>(&mut self, f: &'a FunctionBuilder, env: &mut Env<'a>, ty: Type) -> F<'a> {
        match ty {
            Type::F64 => {
                let mut acc = match env.floats.last() {
                    Some(&x) => x,
                    None => self.float(f, env),
                };
                for _ in 0..self.below(3) {
                    let y = self.float_except(f, env, acc.v);
                    acc = self.tame(F { v: acc.v + y.v, bound: acc.bound + y.bound }, LIMIT);
                }
                acc
            }
            Type::I64 => F { v: env.ints.last().copied().unwrap_or_else(|| self.int(f, env)), bound: 0.0 },
            Type::Bool => F { v: env.bools.last().copied().unwrap_or_else(|| self.bool(f, env)), bound: 0.0 },
            Type::F64x(w) => match env.vecs.iter().rev().find(|v| v.v.ty() == ty) {
                Some(&v) => v,
                None => self.vector_of(f, env, w),
            },
            _ => self.float(f, env),
        }
    }

    /// The next value of a loop-carried `cur`: mostly an update of it (an accumulator), else
    /// any value of its type.
    pub(super) fn next_carried<'a>(&mut self, f: &'a FunctionBuilder, env: &mut Env<'a>, cur: F<'a>) -> F<'a> {
        match cur.v.ty() {
            Type::F64 if self.below(4) != 3 => {
                let y = self.float_except(f, env, cur.v);
                let y = self.tame(y, LIMIT);
                if self.chance(30) {
                    F { v: cur.v * y.v, bound: cur.bound * y.bound }
                } else {
                    F { v: cur.v + y.v, bound: cur.bound + y.bound }
                }
            }
            Type::I64 if self.chance(50) => {
                let y = self.int(f, env);
                F { v: cur.v + y, bound: 0.0 }
            }
            ty => self.result_value(f, env, ty),
        }
    }

    /// A float other than `avoid` when there is a choice.
    pub(super) fn float_except<'a>(&mut self, f: &'a FunctionBuilder, env: &mut Env<'a>, avoid: Var<'a>) -> F<'a> {
        let x = self.float(f, env);
        if x.v.value() == avoid.value() && env.floats.len() > 1 { self.float(f, env) } else { x }
    }

    /// An integer other than `avoid` when there is a choice.
    fn int_except<'a>(&mut self, f: &'a FunctionBuilder, env: &mut Env<'a>, avoid: Var<'a>) -> Var<'a> {
        let x = self.int(f, env);
        if x.value() == avoid.value() && env.ints.len() > 1 { self.int(f, env) } else { x }
    }

    /// In smooth mode, squash `x` below `limit` if its bound may exceed it: `L*tanh(x/L)` for
    /// scalars (near the identity for small `x`), `x / (1 + (x/L)^2)` lane-wise for vectors.
    pub(super) fn tame<'a>(&self, x: F<'a>, limit: f64) -> F<'a> {
        if !self.cfg.smooth_only || x.bound <= limit || !x.v.ty().is_float_like() {
            return x;
        }
        if x.v.ty() == Type::F64 {
            F { v: (x.v * (1.0 / limit)).tanh() * limit, bound: limit }
        } else {
            let s = x.v * (1.0 / limit);
            F { v: x.v / (s * s + 1.0), bound: limit / 2.0 }
        }
    }

    // ---- constants ----

    /// A float constant: mostly multiples of 1/16 in [-2.5, 2.5] (choice 0 gives 0.0); outside
    /// smooth mode sometimes large or tiny; in full mode also NaN, infinities, -0.0, subnormals.
    pub(super) fn float_const(&mut self) -> f64 {
        if !self.cfg.smooth_only && self.chance(6) {
            if self.cfg.allow_runtime_errors {
                const SPECIAL: [f64; 12] = [
                    0.0,
                    -0.0,
                    f64::INFINITY,
                    f64::NEG_INFINITY,
                    f64::NAN,
                    1e300,
                    -1e-300,
                    f64::MIN_POSITIVE,
                    5e-324,
                    0.1,
                    1e16,
                    f64::MAX,
                ];
                return SPECIAL[self.below(SPECIAL.len())];
            }
            return [1e3, -1e-3, 0.1, 1e16, -0.0, 1e-7][self.below(6)];
        }
        let k = self.below(81) as f64;
        if k <= 40.0 { k / 16.0 } else { -(k - 40.0) / 16.0 }
    }

    /// An integer constant: mostly in [-4, 10] (choice 0 gives 0); in full mode sometimes extreme.
    pub(super) fn int_const(&mut self) -> i64 {
        if self.cfg.allow_runtime_errors && self.chance(6) {
            return [i64::MIN, i64::MAX, -1, 1 << 40][self.below(4)];
        }
        let k = self.below(15) as i64;
        if k <= 10 { k } else { 10 - k }
    }

    fn cond(&mut self) -> CondCode {
        CondCode::ALL[self.below(CondCode::ALL.len())]
    }

    // ---- float math ----

    pub(super) fn float_binary<'a>(&mut self, f: &'a FunctionBuilder, env: &mut Env<'a>) {
        use Opcode::*;
        const SMOOTH: [Opcode; 7] = [FAdd, FSub, FMul, FDiv, Pow, Atan2, Hypot];
        const ALL: [Opcode; 10] = [FAdd, FSub, FMul, FDiv, Min, Max, Pow, Atan2, Hypot, FRem];
        let ops: &[Opcode] = if self.cfg.smooth_only && !self.cfg.allow_kinks { &SMOOTH } else { &ALL };
        if self.chance(10) {
            return self.fma(f, env);
        }
        let op = ops[self.below(ops.len())];
        let a = self.float(f, env);
        let mut b = self.float_except(f, env, a.v);
        // Exponents 0, 1 and -1 of `pow`: their derivatives at a zero base are the edge cases.
        if op == Pow && self.chance(20) {
            b = F { v: f.fconst([0.0, 1.0, -1.0][self.below(3)]), bound: 1.0 };
        }
        if !self.cfg.smooth_only {
            return self.keep(env, f.op(op, &[a.v, b.v]), f64::INFINITY);
        }
        let a = self.tame(a, LIMIT);
        let b = self.tame(b, LIMIT);
        let (v, bound) = match op {
            FAdd => (a.v + b.v, a.bound + b.bound),
            FSub => (a.v - b.v, a.bound + b.bound),
            FMul => (a.v * b.v, a.bound * b.bound),
            // Denominators at least 1; bases of pow at least 1; atan2 away from its branch cut.
            FDiv => (a.v / (b.v * b.v + 1.0), a.bound),
            Pow => {
                let base = self.tame(a, 3.0);
                let e = if b.bound == 1.0 { b } else { self.tame(b, 2.0) };
                (((base.v * base.v) + 1.0).powf(e.v), (base.bound * base.bound + 1.0).powf(e.bound))
            }
            Atan2 => (a.v.atan2(b.v * b.v + 1.0), PI),
            Min | Max => (f.op(op, &[a.v, b.v]), a.bound.max(b.bound)),
            // A divisor at least 1: |x % y| < |y|.
            FRem => (f.op(op, &[a.v, b.v * b.v + 1.0]), b.bound * b.bound + 1.0),
            _ => (a.v.hypot(b.v * b.v + 1.0), a.bound + b.bound * b.bound + 1.0),
        };
        self.keep(env, v, bound);
    }

    /// `fma a, b, c`: the one ternary float op.
    fn fma<'a>(&mut self, f: &'a FunctionBuilder, env: &mut Env<'a>) {
        let a = self.float(f, env);
        let b = self.float(f, env);
        let c = self.float(f, env);
        if !self.cfg.smooth_only {
            return self.keep(env, f.op(Opcode::Fma, &[a.v, b.v, c.v]), f64::INFINITY);
        }
        let (a, b, c) = (self.tame(a, LIMIT), self.tame(b, LIMIT), self.tame(c, LIMIT));
        let v = f.op(Opcode::Fma, &[a.v, b.v, c.v]);
        self.keep(env, v, a.bound * b.bound + c.bound);
    }

    pub(super) fn float_unary<'a>(&mut self, f: &'a FunctionBuilder, env: &mut Env<'a>) {
        use Opcode::*;
        const SMOOTH: [Opcode; 22] = [
            FNeg, Sqrt, Exp, Ln, Sin, Cos, Tan, Tanh, Log1p, Expm1, Atan, Asin, Acos, Sinh, Cosh, Exp2, Log2, Log10,
            Cbrt, Asinh, Acosh, Atanh,
        ];
        const ALL: [Opcode; 28] = [
            FNeg, Sqrt, Exp, Ln, Sin, Cos, Tan, Tanh, Abs, Log1p, Expm1, Floor, Ceil, Atan, Asin, Acos, Sinh, Cosh,
            Sign, Exp2, Log2, Log10, Cbrt, Round, Trunc, Asinh, Acosh, Atanh,
        ];
        let ops: &[Opcode] = if self.cfg.smooth_only && !self.cfg.allow_kinks { &SMOOTH } else { &ALL };
        let op = ops[self.below(ops.len())];
        let a = self.float(f, env);
        if !self.cfg.smooth_only {
            return self.keep(env, f.op(op, &[a.v]), f64::INFINITY);
        }
        let a = self.tame(a, LIMIT);
        let square_plus_one = |a: F<'_>| a.bound * a.bound + 1.0;
        let (v, bound) = match op {
            FNeg => (-a.v, a.bound),
            Sqrt => ((a.v * a.v + 1.0).sqrt(), square_plus_one(a).sqrt()),
            Ln => ((a.v * a.v + 1.0).ln(), square_plus_one(a).ln()),
            Log2 | Log10 => (f.op(op, &[a.v * a.v + 1.0]), square_plus_one(a).log2()),
            // cbrt's derivative is infinite at zero: keep its argument at least 1.
            Cbrt => (f.op(op, &[a.v * a.v + 1.0]), square_plus_one(a).cbrt()),
            Log1p => ((a.v * a.v).log1p(), square_plus_one(a).ln()),
            Exp | Exp2 | Expm1 | Sinh | Cosh => {
                let a = self.tame(a, 5.0);
                (f.op(op, &[a.v]), a.bound.exp())
            }
            Tan => (a.v.tanh().tan(), 1.0f64.tan()),
            Asin => ((a.v.tanh() * 0.9).asin(), FRAC_PI_2),
            Acos => ((a.v.tanh() * 0.9).acos(), PI),
            Atan => (a.v.atan(), FRAC_PI_2),
            Asinh => (f.op(op, &[a.v]), (2.0 * square_plus_one(a).sqrt()).ln()),
            // acosh's derivative is infinite at 1: keep its argument at least 2.
            Acosh => (f.op(op, &[a.v * a.v + 2.0]), (square_plus_one(a) + 1.0).ln() + 1.0),
            Atanh => (f.op(op, &[a.v.tanh() * 0.9]), 0.9f64.atanh()),
            Abs => (f.op(op, &[a.v]), a.bound),
            Floor | Ceil | Round | Trunc => (f.op(op, &[a.v]), a.bound + 1.0),
            _ => (f.op(op, &[a.v]), 1.0), // sin, cos, tanh, sign
        };
        self.keep(env, v, bound);
    }

    pub(super) fn powi<'a>(&mut self, f: &'a FunctionBuilder, env: &mut Env<'a>) {
        let a = self.float(f, env);
        if self.cfg.smooth_only {
            let k = self.below(4) as i32;
            if self.chance(25) {
                let a = self.tame(a, LIMIT);
                return self.keep(env, (a.v * a.v + 1.0).powi(-k), 1.0);
            }
            let a = self.tame(a, 10.0);
            return self.keep(env, a.v.powi(k), a.bound.powi(k));
        }
        let n = if self.chance(30) {
            self.int(f, env)
        } else if self.chance(10) {
            // Exponents whose derivatives are edge cases: 0 at a zero base, and n - 1 wrapping.
            f.int([0, 1, -1, i64::MIN][self.below(4)])
        } else {
            f.int(self.below(8) as i64 - 3)
        };
        self.keep(env, a.v.powi(n), f64::INFINITY);
    }

    // ---- integers, booleans, select, conversions ----

    pub(super) fn int_arith<'a>(&mut self, f: &'a FunctionBuilder, env: &mut Env<'a>) {
        use Opcode::*;
        let ops: &[Opcode] = if self.cfg.allow_int_div {
            &[IAdd, ISub, IMul, INeg, IDiv, IRem, IAnd, IOr, IXor, IShl, IShr, UShr]
        } else {
            &[IAdd, ISub, IMul, INeg, IAnd, IOr, IXor, IShl, IShr, UShr]
        };
        let op = ops[self.below(ops.len())];
        let a = self.int(f, env);
        let v = match op {
            INeg => -a,
            IDiv | IRem => {
                let b = if self.cfg.allow_runtime_errors && self.chance(50) {
                    self.int(f, env)
                } else {
                    f.int([1, 2, 3, -1, -2, 5, 7][self.below(7)])
                };
                f.op(op, &[a, b])
            }
            _ => {
                let b = self.int_except(f, env, a);
                f.op(op, &[a, b])
            }
        };
        self.keep(env, v, 0.0);
    }

    pub(super) fn compare<'a>(&mut self, f: &'a FunctionBuilder, env: &mut Env<'a>) {
        let cond = self.cond();
        // Smooth programs branch or select on a float comparison only with kinks allowed.
        let v = if (!self.cfg.smooth_only || self.cfg.allow_kinks) && self.chance(50) {
            let a = self.float(f, env);
            let b = self.float_except(f, env, a.v);
            f.fcmp(cond, a.v, b.v)
        } else {
            let a = self.int(f, env);
            let b = self.int_except(f, env, a);
            f.icmp(cond, a, b)
        };
        self.keep(env, v, 0.0);
    }

    pub(super) fn bool_op<'a>(&mut self, f: &'a FunctionBuilder, env: &mut Env<'a>) {
        let v = match self.below(4) {
            0 => {
                let (a, b) = (self.bool(f, env), self.bool(f, env));
                a & b
            }
            1 => {
                let (a, b) = (self.bool(f, env), self.bool(f, env));
                a | b
            }
            2 => !self.bool(f, env),
            _ => f.bool(self.chance(50)),
        };
        self.keep(env, v, 0.0);
    }

    pub(super) fn select<'a>(&mut self, f: &'a FunctionBuilder, env: &mut Env<'a>) {
        let c = self.bool(f, env);
        let ty = match self.below(6) {
            0..=2 => Type::F64,
            3 => Type::I64,
            4 => Type::Bool,
            _ => env.vecs.last().map_or(Type::F64, |v| v.v.ty()),
        };
        let a = self.value_of(f, env, ty);
        let b = self.value_of(f, env, ty);
        self.keep(env, f.select(c, a.v, b.v), a.bound.max(b.bound));
    }

    pub(super) fn convert<'a>(&mut self, f: &'a FunctionBuilder, env: &mut Env<'a>) {
        if (!self.cfg.smooth_only || self.cfg.allow_kinks) && self.chance(50) {
            let x = self.float(f, env);
            // Squashed, so integers from floats stay small (they may become trip counts).
            let x = self.tame(x, LIMIT);
            self.keep(env, x.v.ftoi(), 0.0);
        } else {
            let i = self.int(f, env);
            self.keep(env, i.itof(), I64_BOUND);
        }
    }

    pub(super) fn name<'a>(&mut self, f: &'a FunctionBuilder, env: &mut Env<'a>) {
        let name = NAMES[self.below(NAMES.len())];
        let v = match self.below(3) {
            0 => self.float(f, env).v,
            1 => self.int(f, env),
            _ => self.bool(f, env),
        };
        f.name(v, name);
    }

    pub(super) fn extern_call<'a>(&mut self, f: &'a FunctionBuilder, env: &mut Env<'a>) {
        let Some((scale, mix)) = self.externs else { return };
        let a = self.float(f, env);
        let a = self.tame(a, LIMIT);
        if self.chance(50) {
            let b = self.float(f, env);
            let b = self.tame(b, LIMIT);
            if let Some(&r) = f.call(mix, &[a.v, b.v]).first() {
                self.keep(env, r, 0.5 * a.bound + 0.25 * b.bound * b.bound);
            }
        } else if let Some(&r) = f.call(scale, &[a.v]).first() {
            self.keep(env, r, 1.5 * a.bound + 0.25);
        }
    }

    // ---- memory ----

    /// An index for a `lanes`-lane access of `s`: a loop index known to be in bounds, an
    /// unchecked index (full mode), or `None` (the access must be guarded by a length check).
    fn index_for<'a>(&mut self, f: &'a FunctionBuilder, env: &mut Env<'a>, s: Var<'a>, lanes: u8) -> Option<Var<'a>> {
        let valid: Vec<Var<'a>> =
            env.valid.iter().filter(|(vs, l, _)| vs.value() == s.value() && *l == lanes).map(|e| e.2).collect();
        if !valid.is_empty() && self.below(10) < 7 {
            return Some(valid[self.below(valid.len())]);
        }
        if self.cfg.allow_runtime_errors && self.chance(25) || !self.cfg.allow_branches {
            return self.cfg.allow_runtime_errors.then(|| self.int(f, env)).or(valid.first().copied());
        }
        None
    }

    /// `if count > 0 { access(((e % count) + count) % count) }`, `count` the number of
    /// `lanes`-lane elements of `s`: in bounds for any integer `e`.
    fn guarded<'a, R: crate::builder::VarList<'a>>(
        &mut self,
        f: &'a FunctionBuilder,
        env: &mut Env<'a>,
        s: Var<'a>,
        lanes: u8,
        access: impl FnOnce(&'a FunctionBuilder, Var<'a>) -> R,
        otherwise: impl FnOnce(&'a FunctionBuilder) -> R,
    ) -> R {
        let e = self.int(f, env);
        let n = f.len(s);
        let count = if lanes == 1 { n } else { n / i64::from(lanes) };
        f.if_else(count.gt(0), |f| access(f, ((e % count) + count) % count), otherwise)
    }

    /// Pick a slice (mutable if `mutable`).
    fn slice<'a>(&mut self, env: &Env<'a>, mutable: bool) -> Option<Var<'a>> {
        let pool: Vec<Var<'a>> = env.slices.iter().copied().filter(|s| !mutable || s.ty() == Type::SliceMut).collect();
        (!pool.is_empty()).then(|| pool[self.below(pool.len())])
    }

    pub(super) fn load<'a>(&mut self, f: &'a FunctionBuilder, env: &mut Env<'a>) {
        let Some(s) = self.slice(env, false) else { return };
        let fallback = self.float_const();
        let v = match self.index_for(f, env, s, 1) {
            Some(i) => f.load(s, i),
            None if self.cfg.allow_branches => self.guarded(f, env, s, 1, |f, i| f.load(s, i), |f| f.float(fallback)),
            None => f.float(fallback),
        };
        self.keep(env, v, self.iface().max(fallback.abs()));
    }

    pub(super) fn store<'a>(&mut self, f: &'a FunctionBuilder, env: &mut Env<'a>) {
        let Some(s) = self.slice(env, true) else { return };
        let x = self.float(f, env);
        let x = self.tame(x, self.iface());
        match self.index_for(f, env, s, 1) {
            Some(i) => f.store(s, i, x.v),
            None if self.cfg.allow_branches => self.guarded(f, env, s, 1, |f, i| f.store(s, i, x.v), |_| ()),
            None => {}
        }
    }

    pub(super) fn vector<'a>(&mut self, f: &'a FunctionBuilder, env: &mut Env<'a>) {
        let lanes = match env.vecs.last() {
            Some(v) if self.chance(60) => v.v.ty().lanes(),
            _ => self.width(),
        };
        match self.below(7) {
            0 => {
                let x = self.float(f, env);
                let x = self.tame(x, LIMIT);
                self.keep(env, f.splat(lanes, x.v), x.bound);
            }
            1 => {
                let a = self.vector_of(f, env, lanes);
                let b = self.vector_of(f, env, lanes);
                let (a, b) = (self.tame(a, LIMIT), self.tame(b, LIMIT));
                let (v, bound) = match self.below(5) {
                    0 => (a.v + b.v, a.bound + b.bound),
                    1 => (a.v - b.v, a.bound + b.bound),
                    2 => (a.v * b.v, a.bound * b.bound),
                    // The strong-zero product forward mode emits for batched tangents.
                    3 => (f.op(Opcode::FMulSz, &[a.v, b.v]), a.bound * b.bound),
                    _ if self.cfg.smooth_only => (a.v / (b.v * b.v + 1.0), a.bound),
                    _ => (a.v / b.v, f64::INFINITY),
                };
                self.keep(env, v, bound);
            }
            2 => {
                let a = self.vector_of(f, env, lanes);
                self.keep(env, -a.v, a.bound);
            }
            3 => {
                let a = self.vector_of(f, env, lanes);
                let lane = self.below(lanes as usize) as u8;
                self.keep(env, a.v.extract(lane), a.bound);
            }
            4 => {
                let a = self.vector_of(f, env, lanes);
                let x = self.float(f, env);
                let x = self.tame(x, LIMIT);
                let lane = self.below(lanes as usize) as u8;
                self.keep(env, a.v.insert(lane, x.v), a.bound.max(x.bound));
            }
            5 => {
                let Some(s) = self.slice(env, false) else { return };
                let fallback = self.float_const();
                let v = match self.index_for(f, env, s, lanes) {
                    Some(i) => f.vload(lanes, s, i),
                    None if self.cfg.allow_branches => self.guarded(
                        f,
                        env,
                        s,
                        lanes,
                        |f, i| f.vload(lanes, s, i),
                        |f| f.splat(lanes, f.float(fallback)),
                    ),
                    None => f.splat(lanes, f.float(fallback)),
                };
                self.keep(env, v, self.iface().max(fallback.abs()));
            }
            _ => {
                let Some(s) = self.slice(env, true) else { return };
                let x = self.vector_of(f, env, lanes);
                let x = self.tame(x, self.iface());
                match self.index_for(f, env, s, lanes) {
                    Some(i) => f.vstore(s, i, x.v),
                    None if self.cfg.allow_branches => {
                        self.guarded(f, env, s, lanes, |f, i| f.vstore(s, i, x.v), |_| ())
                    }
                    None => {}
                }
            }
        }
    }
}
