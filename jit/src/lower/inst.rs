//! Lowering of straight-line instructions: constants, float and integer arithmetic, library
//! math, comparisons, select, conversions, vectors and bounds-checked memory.

use super::func::{FuncLowerer, Parts};
use crate::abi;
use crate::error::JitError;
use crate::sites::SiteKind;
use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::immediates::Ieee64;
use cranelift_codegen::ir::{self as clif, InstBuilder, MemFlagsData, types};
use jitdiff_ir::{CondCode, Imm, InstData, MathFn, Opcode, Type};

/// The largest `|n|` of a constant `powi` exponent expanded into multiplications inline.
const INLINE_POWI_MAX: u64 = 4;

impl FuncLowerer<'_, '_> {
    pub(super) fn lower_inst(&mut self, inst: &InstData) -> Result<(), JitError> {
        use Opcode::*;
        let result = inst.results.first().copied();
        let arg = |k: usize| inst.args.get(k).copied();
        let missing = || JitError::Codegen { function: String::new(), message: format!("{} lacks operands", inst.op) };
        let a = arg(0);
        let lanewise = |l: &mut Self, f: &dyn Fn(&mut Self, clif::Value, clif::Value) -> clif::Value| {
            let (x, y) = (l.get(a.ok_or_else(missing)?), l.get(arg(1).ok_or_else(missing)?));
            let parts: Vec<clif::Value> = x.iter().zip(y.iter()).map(|(&p, &q)| f(l, p, q)).collect();
            Ok::<_, JitError>(Parts::new(&parts))
        };
        let value: Option<Parts> = match inst.op {
            FConst => {
                let Imm::F64(x) = inst.imm else { return Err(self.internal("fconst without value".into())) };
                if let Some(r) = result {
                    self.define_doubled_constant(r, x);
                }
                Some(Parts::new(&[self.float_constant(x)]))
            }
            IConst => {
                let Imm::I64(k) = inst.imm else { return Err(self.internal("iconst without value".into())) };
                Some(Parts::new(&[self.iconst(k)]))
            }
            BConst => {
                let Imm::Bool(k) = inst.imm else { return Err(self.internal("bconst without value".into())) };
                Some(Parts::new(&[self.b.ins().iconst(types::I8, i64::from(k))]))
            }
            FAdd => Some(lanewise(self, &|l, p, q| l.b.ins().fadd(p, q))?),
            FSub => Some(lanewise(self, &|l, p, q| l.b.ins().fsub(p, q))?),
            FMul => match self.doubling.rewrite(&inst.args, self.at_block) {
                Some((c, a)) => {
                    let twice = self.doubled_constant(c);
                    let a = self.scalar(a);
                    Some(Parts::new(&[self.b.ins().fmul(twice, a)]))
                }
                None => Some(lanewise(self, &|l, p, q| l.b.ins().fmul(p, q))?),
            },
            FMulSz => Some(lanewise(self, &|l, p, q| l.strong_zero_mul(p, q))?),
            FDiv => Some(lanewise(self, &|l, p, q| l.b.ins().fdiv(p, q))?),
            FNeg => {
                let x_ir = a.ok_or_else(missing)?;
                if self.ty(x_ir) == Type::F64 {
                    // `x xor -0.0`, the constant as an `f64const`: Cranelift materialises it once
                    // per block that uses it (its remat rule), so it never lives across a loop.
                    // (Cranelift's own `fneg` materialises the mask at every use; a mask loaded
                    // once at entry lived through the whole function, and in GMM's inlined
                    // one-lane JVP the register allocator spilled and reloaded it inside the
                    // innermost loop: 1.4-1.9x slower.)
                    let x = self.scalar(x_ir);
                    let sign = self.b.ins().f64const(Ieee64::with_bits((-0.0f64).to_bits()));
                    Some(Parts::new(&[self.b.ins().bxor(x, sign)]))
                } else {
                    let x = self.get(x_ir);
                    let parts: Vec<clif::Value> = x.iter().map(|&p| self.b.ins().fneg(p)).collect();
                    Some(Parts::new(&parts))
                }
            }
            Sqrt | Abs | Floor | Ceil | Trunc => {
                let x = self.scalar(a.ok_or_else(missing)?);
                let ins = self.b.ins();
                Some(Parts::new(&[match inst.op {
                    Sqrt => ins.sqrt(x),
                    Abs => ins.fabs(x),
                    Floor => ins.floor(x),
                    Trunc => ins.trunc(x),
                    _ => ins.ceil(x),
                }]))
            }
            // `a < b ? a : b` exactly as math::min (Cranelift's fmin propagates NaN instead); the
            // compare-and-select is matched to minsd/maxsd.
            Min | Max => {
                let (x, y) = (self.scalar(a.ok_or_else(missing)?), self.scalar(arg(1).ok_or_else(missing)?));
                let cc = if inst.op == Min { FloatCC::LessThan } else { FloatCC::GreaterThan };
                let c = self.b.ins().fcmp(cc, x, y);
                Some(Parts::new(&[self.b.ins().select(c, x, y)]))
            }
            Powi => {
                let (x_ir, n_ir) = (a.ok_or_else(missing)?, arg(1).ok_or_else(missing)?);
                let x = self.scalar(x_ir);
                let v = match self.consts.get(&n_ir) {
                    Some(&n) if n.unsigned_abs() <= INLINE_POWI_MAX => self.inline_powi(x, n),
                    _ => {
                        let n = self.scalar(n_ir);
                        self.call_math(Powi, &[x, n])?
                    }
                };
                Some(Parts::new(&[v]))
            }
            // Cranelift's `fma` is one fused instruction with the host's FMA, else the "fma"
            // libcall, registered as the same fused `mul_add` the interpreter computes.
            Fma => {
                let &[x, y, z] = inst.args.as_slice() else {
                    return Err(self.internal("fma without three operands".into()));
                };
                // f64xW: one fused multiply-add per pair of lanes.
                let (x, y, z) = (self.get(x), self.get(y), self.get(z));
                let parts: Vec<clif::Value> =
                    x.iter().zip(y.iter()).zip(z.iter()).map(|((&x, &y), &z)| self.b.ins().fma(x, y, z)).collect();
                Some(Parts::new(&parts))
            }
            op if matches!(op.info().math, MathFn::Unary(_) | MathFn::Binary(_)) => {
                let args: Vec<clif::Value> = inst.args.iter().map(|&v| self.scalar(v)).collect();
                let paired = match (op, result, args.first()) {
                    (Sin | Cos, Some(r), Some(&x)) => self.lower_trig_pair(op, r, x)?,
                    _ => None,
                };
                Some(Parts::new(&[match paired {
                    Some(v) => v,
                    None => self.call_math(op, &args)?,
                }]))
            }
            IAdd | ISub | IMul | IAnd | IOr | IXor | IShl | IShr | UShr => {
                let (x, y) = (self.scalar(a.ok_or_else(missing)?), self.scalar(arg(1).ok_or_else(missing)?));
                let ins = self.b.ins();
                Some(Parts::new(&[match inst.op {
                    IAdd => ins.iadd(x, y),
                    ISub => ins.isub(x, y),
                    IAnd => ins.band(x, y),
                    IOr => ins.bor(x, y),
                    IXor => ins.bxor(x, y),
                    // Cranelift takes the shift amount modulo the width (64), as the IR does.
                    IShl => ins.ishl(x, y),
                    IShr => ins.sshr(x, y),
                    UShr => ins.ushr(x, y),
                    _ => ins.imul(x, y),
                }]))
            }
            IDiv | IRem => {
                let (x_ir, y_ir) = (a.ok_or_else(missing)?, arg(1).ok_or_else(missing)?);
                let (x, y) = (self.scalar(x_ir), self.scalar(y_ir));
                let remainder = inst.op == IRem;
                Some(Parts::new(&[match self.consts.get(&y_ir) {
                    // A constant divisor other than 0 and -1 needs no guard: Cranelift's own
                    // division by a constant (multiply and shift) without the checks' blocks,
                    // which every compile would otherwise fold away again.
                    Some(&d) if d != 0 && d != -1 => {
                        if remainder {
                            self.b.ins().srem(x, y)
                        } else {
                            self.b.ins().sdiv(x, y)
                        }
                    }
                    _ => self.checked_division(x, y, remainder),
                }]))
            }
            INeg => {
                let x = self.scalar(a.ok_or_else(missing)?);
                Some(Parts::new(&[self.b.ins().ineg(x)]))
            }
            And | Or => {
                let (x, y) = (self.scalar(a.ok_or_else(missing)?), self.scalar(arg(1).ok_or_else(missing)?));
                let v = if inst.op == And { self.b.ins().band(x, y) } else { self.b.ins().bor(x, y) };
                Some(Parts::new(&[v]))
            }
            Not => {
                let x = self.scalar(a.ok_or_else(missing)?);
                Some(Parts::new(&[self.b.ins().bxor_imm_u(x, 1)]))
            }
            FCmp | ICmp => {
                let Imm::Cond(cc) = inst.imm else { return Err(self.internal("compare without condition".into())) };
                let (x, y) = (self.scalar(a.ok_or_else(missing)?), self.scalar(arg(1).ok_or_else(missing)?));
                let v = if inst.op == FCmp {
                    self.b.ins().fcmp(float_cc(cc), x, y)
                } else {
                    self.b.ins().icmp(int_cc(cc), x, y)
                };
                Some(Parts::new(&[v]))
            }
            // Every part (a scalar or a vector of lanes) equal to ±0.
            IsZero => {
                let parts = self.get(a.ok_or_else(missing)?);
                let mut all: Option<clif::Value> = None;
                for &part in parts.iter() {
                    let ty = self.b.func.dfg.value_type(part);
                    let zero = if ty.is_vector() {
                        let scalar = self.b.ins().f64const(0.0);
                        self.b.ins().splat(ty, scalar)
                    } else {
                        self.b.ins().f64const(0.0)
                    };
                    let equal = self.b.ins().fcmp(FloatCC::Equal, part, zero);
                    let equal = if ty.is_vector() { self.b.ins().vall_true(equal) } else { equal };
                    all = Some(match all {
                        None => equal,
                        Some(previous) => self.b.ins().band(previous, equal),
                    });
                }
                Some(Parts::new(&[all.ok_or_else(missing)?]))
            }
            Select => {
                let c = self.scalar(a.ok_or_else(missing)?);
                let (x, y) = (self.get(arg(1).ok_or_else(missing)?), self.get(arg(2).ok_or_else(missing)?));
                let parts: Vec<clif::Value> =
                    x.iter().zip(y.iter()).map(|(&p, &q)| self.b.ins().select(c, p, q)).collect();
                Some(Parts::new(&parts))
            }
            IToF => {
                let x = self.scalar(a.ok_or_else(missing)?);
                Some(Parts::new(&[self.b.ins().fcvt_from_sint(types::F64, x)]))
            }
            // Saturating, NaN -> 0: Rust's `as i64`.
            FToI => {
                let x = self.scalar(a.ok_or_else(missing)?);
                Some(Parts::new(&[self.b.ins().fcvt_to_sint_sat(types::I64, x)]))
            }
            Len => Some(Parts::new(&[self.get(a.ok_or_else(missing)?)[1]])),
            Load => {
                let addr = self.element_address(a.ok_or_else(missing)?, arg(1).ok_or_else(missing)?, 1);
                // A load whose value nothing uses is there for its bounds check only (derived code
                // keeps such checks where an access moved): the check is done, the read is not.
                if result.is_some_and(|r| !self.used[r.index()]) {
                    Some(Parts::new(&[self.b.ins().f64const(0.0)]))
                } else {
                    Some(Parts::new(&[self.b.ins().load(types::F64, scalar_flags(), addr, 0)]))
                }
            }
            Store => {
                self.require_mutable(a.ok_or_else(missing)?)?;
                let x = self.scalar(arg(2).ok_or_else(missing)?);
                let addr = self.element_address(a.ok_or_else(missing)?, arg(1).ok_or_else(missing)?, 1);
                self.b.ins().store(scalar_flags(), x, addr, 0);
                None
            }
            VLoad => {
                let Imm::Type(ty @ Type::F64x(w)) = inst.imm else {
                    return Err(self.internal("vload without a vector type".into()));
                };
                let addr = self.element_address(a.ok_or_else(missing)?, arg(1).ok_or_else(missing)?, w);
                let parts: Vec<clif::Value> = (0..abi::part_count(ty))
                    .map(|c| self.b.ins().load(types::F64X2, abi::vector_flags(), addr, 16 * c as i32))
                    .collect();
                Some(Parts::new(&parts))
            }
            VStore => {
                self.require_mutable(a.ok_or_else(missing)?)?;
                let v_ir = arg(2).ok_or_else(missing)?;
                let w = self.ty(v_ir).lanes();
                let v = self.get(v_ir);
                let addr = self.element_address(a.ok_or_else(missing)?, arg(1).ok_or_else(missing)?, w);
                for (c, &chunk) in v.iter().enumerate() {
                    self.b.ins().store(abi::vector_flags(), chunk, addr, 16 * c as i32);
                }
                None
            }
            Splat => {
                let Imm::Type(ty) = inst.imm else { return Err(self.internal("splat without a vector type".into())) };
                let x = self.scalar(a.ok_or_else(missing)?);
                let chunk = self.b.ins().splat(types::F64X2, x);
                Some(Parts::new(&vec![chunk; abi::part_count(ty)]))
            }
            Extract => {
                let Imm::Lane(k) = inst.imm else { return Err(self.internal("extract without a lane".into())) };
                let v = self.get(a.ok_or_else(missing)?);
                let chunk = *v.get(usize::from(k / 2)).ok_or_else(|| self.internal("lane out of range".into()))?;
                Some(Parts::new(&[self.b.ins().extractlane(chunk, k % 2)]))
            }
            Insert => {
                let Imm::Lane(k) = inst.imm else { return Err(self.internal("insert without a lane".into())) };
                let v = self.get(a.ok_or_else(missing)?);
                let x = self.scalar(arg(1).ok_or_else(missing)?);
                let mut parts = v.to_vec();
                let c = usize::from(k / 2);
                let chunk = *parts.get(c).ok_or_else(|| self.internal("lane out of range".into()))?;
                parts[c] = self.b.ins().insertlane(chunk, x, k % 2);
                Some(Parts::new(&parts))
            }
            Call => {
                let Imm::Callee(callee) = inst.imm else { return Err(self.internal("call without a callee".into())) };
                self.lower_call(callee, inst)?;
                None
            }
            Alloc => Some(self.lower_alloc(a.ok_or_else(missing)?)?),
            Table => {
                let Imm::Table(t) = inst.imm else { return Err(self.internal("table without a table".into())) };
                Some(self.lower_table(t)?)
            }
            TPush => {
                self.lower_tpush(a.ok_or_else(missing)?)?;
                None
            }
            TPop => {
                let Imm::Type(ty) = inst.imm else { return Err(self.internal("tpop without a type".into())) };
                Some(Parts::new(&[self.lower_tpop(ty)?]))
            }
            TSplit => Some(Parts::new(&[self.lower_tsplit()?])),
            TRejoin => {
                self.lower_trejoin(a.ok_or_else(missing)?)?;
                None
            }
            // A check that always fails; what follows it in the block is unreachable (Cranelift
            // drops it).
            Trap => {
                let never = self.b.ins().iconst(types::I8, 0);
                self.fail_unless(never, SiteKind::Panic);
                None
            }
            op => return Err(self.internal(format!("no lowering for {op}"))),
        };
        if let (Some(r), Some(parts)) = (result, value) {
            self.set(r, &parts);
        }
        Ok(())
    }

    /// `fmulsz` on one `f64` or one `f64x2` chunk: `p * q`, but +0 where `p == 0` or `q == 0`.
    /// A scalar is two compares and a select; a chunk compares lane-wise into all-ones masks and
    /// clears the masked lanes of the product (`andnpd`): +0 has no bits set.
    pub(super) fn strong_zero_mul(&mut self, p: clif::Value, q: clif::Value) -> clif::Value {
        let product = self.b.ins().fmul(p, q);
        let zero = self.b.ins().f64const(0.0);
        if self.b.func.dfg.value_type(q) == types::F64 {
            let p_zero = self.b.ins().fcmp(FloatCC::Equal, p, zero);
            let q_zero = self.b.ins().fcmp(FloatCC::Equal, q, zero);
            let either = self.b.ins().bor(p_zero, q_zero);
            return self.b.ins().select(either, zero, product);
        }
        let zeros = self.b.ins().splat(types::F64X2, zero);
        let p_mask = self.b.ins().fcmp(FloatCC::Equal, p, zeros);
        let q_mask = self.b.ins().fcmp(FloatCC::Equal, q, zeros);
        let mask = self.b.ins().bor(p_mask, q_mask);
        let mask = self.b.ins().bitcast(types::F64X2, MemFlagsData::new(), mask);
        self.b.ins().band_not(product, mask)
    }

    /// Memory safety must not rest on the verifier alone: native code writes only through
    /// `mslice` values (which come from `&mut [f64]` arguments), never through a read-only slice.
    pub(super) fn require_mutable(&self, slice: jitdiff_ir::Value) -> Result<(), JitError> {
        if self.ty(slice) == Type::SliceMut {
            Ok(())
        } else {
            Err(self.internal(format!("a write through {}, which is not an mslice", self.f.value_label(slice))))
        }
    }

    /// The address of element group `index` (each `width` f64s) of the slice `slice`, after
    /// checking `0 <= index` and `(index + 1) * width <= len` — unless bounds checks are off, or
    /// a dominating access already proved it (see `checks.rs`).
    ///
    /// The check is one unsigned compare — a negative index is a huge unsigned number — against
    /// `len / width`, which cannot overflow the way `(index + 1) * width` could.
    fn element_address(&mut self, slice: jitdiff_ir::Value, index: jitdiff_ir::Value, width: u8) -> clif::Value {
        let (s, i) = (self.get(slice), self.scalar(index));
        let (ptr, len) = (s[0], s[1]);
        let width = width.max(1);
        let shift = i64::from(width.trailing_zeros());
        if self.m.bounds_checks {
            // Facts are kept per slice value: a parameter by its position (shadow declarations
            // name parameters), a local array or table past them. A slice's length never changes,
            // and a dominating access ran with the same value of `slice` (its definition dominates
            // both accesses).
            let param =
                Some(self.f.params.iter().position(|&p| p == slice).unwrap_or(self.f.params.len() + slice.index()));
            let at = self.at_block;
            // In the fast copy of a versioned loop, the pre-check proved the affine accesses.
            let fast = self.copy.is_some_and(|k| self.versioned[k].unchecked.contains_key(&(at, self.at_inst)));
            let proved = param.is_some_and(|p| self.facts.proves(&self.cfg, at, self.copy, p, index, width));
            let stats = &mut self.facts.stats;
            match (fast, proved, self.copy.is_some()) {
                (true, _, _) => stats.unchecked_in_fast_copies += 1,
                (false, true, false) => stats.elided += 1,
                (false, false, false) => stats.emitted += 1,
                (false, _, true) => {}
            }
            if !(fast || proved) {
                let groups = if shift == 0 { len } else { self.b.ins().ushr_imm_u(len, shift) };
                let ok = self.b.ins().icmp(IntCC::UnsignedLessThan, i, groups);
                self.fail_unless_with(ok, SiteKind::OutOfBounds, Some((i, len)));
            }
            if let Some(p) = param {
                self.facts.record(at, self.copy, p, index, width);
            }
            if fast && let Some(address) = self.copy.and_then(|k| self.fast_address(k, (at, self.at_inst))) {
                return address;
            }
        }
        let offset = self.b.ins().ishl_imm_u(i, 3 + shift);
        self.b.ins().iadd(ptr, offset)
    }

    /// A float constant: a load from the module's constant pool, kept where the IR defines the
    /// constant (see `constants.rs`); zero is `f64const` (one `xor`).
    pub(super) fn float_constant(&mut self, x: f64) -> clif::Value {
        match self.m.constants.address(x.to_bits()) {
            Some(address) => {
                let address = self.iconst(address as i64);
                let flags = MemFlagsData::new().with_notrap().with_aligned().with_readonly();
                self.b.ins().load(types::F64, flags, address, 0)
            }
            None => self.b.ins().f64const(Ieee64::with_bits(x.to_bits())),
        }
    }

    /// `idiv`/`irem` with the IR's semantics: zero divisor fails, `MIN / -1` wraps to `MIN`,
    /// `MIN % -1` is 0. Cranelift's `sdiv`/`srem` trap on both, so the divisor is made safe first.
    fn checked_division(&mut self, x: clif::Value, y: clif::Value, remainder: bool) -> clif::Value {
        let nonzero = self.b.ins().icmp_imm_s(IntCC::NotEqual, y, 0);
        self.fail_unless(nonzero, SiteKind::DivisionByZero);
        let minus_one = self.b.ins().icmp_imm_s(IntCC::Equal, y, -1);
        let one = self.iconst(1);
        let safe = self.b.ins().select(minus_one, one, y);
        if remainder {
            let r = self.b.ins().srem(x, safe);
            let zero = self.iconst(0);
            self.b.ins().select(minus_one, zero, r)
        } else {
            let q = self.b.ins().sdiv(x, safe);
            let negated = self.b.ins().ineg(x);
            self.b.ins().select(minus_one, negated, q)
        }
    }

    /// `powi(x, n)` for a constant `n`, with exactly the multiplications of `math::powi` in the
    /// same order, so the result is bit-identical.
    fn inline_powi(&mut self, x: clif::Value, n: i64) -> clif::Value {
        let mut e = n.unsigned_abs();
        let mut base = x;
        let mut acc: Option<clif::Value> = None;
        while e > 0 {
            if e & 1 == 1 {
                acc = Some(match acc {
                    None => base,
                    Some(a) => self.b.ins().fmul(a, base),
                });
            }
            e >>= 1;
            if e > 0 {
                base = self.b.ins().fmul(base, base);
            }
        }
        let acc = match acc {
            Some(a) => a,
            None => self.b.ins().f64const(1.0),
        };
        if n < 0 {
            let one = self.b.ins().f64const(1.0);
            self.b.ins().fdiv(one, acc)
        } else {
            acc
        }
    }

    /// Call the `jitdiff_ir::math` function of `op`.
    fn call_math(&mut self, op: Opcode, args: &[clif::Value]) -> Result<clif::Value, JitError> {
        let id = self.m.math_id(op)?;
        let r = self.func_ref(id);
        let call = self.b.ins().call(r, args);
        Ok(self.b.inst_results(call)[0])
    }
}

/// Flags for slice element accesses: `f64` slices from Rust are 8-byte aligned, and the index
/// was checked, so the access cannot trap.
fn scalar_flags() -> MemFlagsData {
    MemFlagsData::new().with_notrap().with_aligned()
}

pub(super) fn float_cc(cc: CondCode) -> FloatCC {
    match cc {
        CondCode::Eq => FloatCC::Equal,
        CondCode::Ne => FloatCC::NotEqual,
        CondCode::Lt => FloatCC::LessThan,
        CondCode::Le => FloatCC::LessThanOrEqual,
        CondCode::Gt => FloatCC::GreaterThan,
        CondCode::Ge => FloatCC::GreaterThanOrEqual,
    }
}

pub(super) fn int_cc(cc: CondCode) -> IntCC {
    match cc {
        CondCode::Eq => IntCC::Equal,
        CondCode::Ne => IntCC::NotEqual,
        CondCode::Lt => IntCC::SignedLessThan,
        CondCode::Le => IntCC::SignedLessThanOrEqual,
        CondCode::Gt => IntCC::SignedGreaterThan,
        CondCode::Ge => IntCC::SignedGreaterThanOrEqual,
    }
}
