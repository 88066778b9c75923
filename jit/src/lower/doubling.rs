//! An exact rewrite: `fmul C, (fadd a, a)` (either operand order, `f64`) is lowered as
//! `fmul 2C, a`, one float operation fewer per evaluation — the `fadd` is dropped by Cranelift
//! when nothing else uses it. `2C` is loaded from the constant pool where the IR defines `C`, so
//! a constant defined before a loop stays outside it. Forward mode produces this shape for a
//! constant times the derivative of a square (`100 * d(v^2)` is `100 * (t + t)`), and in a
//! loop that is float-throughput bound, one operation of eighteen is measurable.
//!
//! It is bit-identical, not an approximation, when `C` is finite with `1 <= |C|` and `2C` is
//! finite ([`doubling_is_exact`]): `2C` is exact. If `a + a` is finite it is exactly `2a`, so
//! both forms round the same real number `2Ca` once. If `a + a` overflows (`|a| >= 2^1023`),
//! `C * inf` is an infinity and so is `2C * a`, since `|2Ca| >= 2^1024`, with the same sign.
//! Zeros keep their signs, and a NaN `a` is the only NaN operand of either form, so it
//! propagates alike. (With `|C| < 1` the overflow case would differ, and `0 * inf` is NaN where
//! `0 * a` is not, so such constants are left alone.)
//!
//! Only an `fadd` of the product's own block is looked through: reading `a` in another block
//! could read a value that reaches there only as the `fadd`'s result (out of a versioned loop,
//! whose two copies meet at its exits through the escaping values' variables).

use super::func::FuncLowerer;
use cranelift_codegen::ir::{self as clif, InstBuilder};
use jitdiff_ir::{Block, Function, Imm, Opcode, Type, Value};
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

/// Is rewriting `C * (a + a)` as `2C * a` exact for this `C`?
pub(crate) fn doubling_is_exact(c: f64) -> bool {
    c.is_finite() && c.abs() >= 1.0 && (2.0 * c).is_finite()
}

/// The rewritable products of one function.
pub(crate) struct Doubling {
    /// `fconst` values whose constant qualifies, with the constant.
    constants: HashMap<Value, f64>,
    /// `f64` values defined by `fadd a, a`, with their block and their `a`.
    doubles: HashMap<Value, (Block, Value)>,
    /// Constants some rewritable `fmul` uses.
    wanted: HashSet<Value>,
    /// The lowered `2C` of each wanted constant, once its `fconst` is lowered.
    twice: HashMap<Value, clif::Value>,
}

impl Doubling {
    /// Find the rewritable products of `f`.
    pub fn of(f: &Function) -> Doubling {
        let insts = || f.blocks.iter().flat_map(|b| &b.insts);
        let block_insts = || f.block_ids().flat_map(|block| f.block(block).insts.iter().map(move |i| (block, i)));
        let constants = insts()
            .filter_map(|i| match (i.op, i.imm, i.results.first()) {
                (Opcode::FConst, Imm::F64(c), Some(&r)) if doubling_is_exact(c) => Some((r, c)),
                _ => None,
            })
            .collect();
        let doubles = block_insts()
            .filter_map(|(block, i)| match (i.op, &i.args[..], i.results.first()) {
                (Opcode::FAdd, &[a, b], Some(&r)) if a == b && f.ty(a) == Type::F64 => Some((r, (block, a))),
                _ => None,
            })
            .collect();
        let mut d = Doubling { constants, doubles, wanted: HashSet::default(), twice: HashMap::default() };
        let wanted: HashSet<Value> = block_insts()
            .filter(|(_, i)| i.op == Opcode::FMul)
            .filter_map(|(block, i)| d.rewrite(&i.args, block))
            .map(|(c, _)| c)
            .collect();
        d.wanted = wanted;
        d
    }

    /// For `fmul x, y` with these operands in `block`: the constant `C` and the `a` of `a + a`,
    /// if the product is rewritable.
    pub fn rewrite(&self, args: &[Value], block: Block) -> Option<(Value, Value)> {
        let &[x, y] = args else { return None };
        for (c, doubled) in [(x, y), (y, x)] {
            if let (true, Some(&(at, a))) = (self.constants.contains_key(&c), self.doubles.get(&doubled))
                && at == block
            {
                return Some((c, a));
            }
        }
        None
    }
}

impl FuncLowerer<'_, '_> {
    /// At the `fconst` defining `value = c`: load `2c` too if a rewritable product uses it.
    pub(super) fn define_doubled_constant(&mut self, value: Value, c: f64) {
        if self.doubling.wanted.contains(&value) {
            let twice = self.float_constant(2.0 * c);
            self.doubling.twice.insert(value, twice);
        }
    }

    /// `2C` for the constant value `c` of a rewritable product (computed here if its `fconst`
    /// was not lowered, which dominance rules out for verified IR).
    pub(super) fn doubled_constant(&mut self, c: Value) -> clif::Value {
        match self.doubling.twice.get(&c) {
            Some(&v) => v,
            None => {
                let k = self.scalar(c);
                self.b.ins().fadd(k, k)
            }
        }
    }
}
