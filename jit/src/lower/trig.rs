//! `sin x` and `cos x` of one operand in one block become one call that computes both (glibc's
//! `sincos`, through [`crate::symbols::sin_cos`]). Forward mode makes such pairs everywhere —
//! the tangent of `sin x` is `cos x · dx` and that of `cos x` is `−sin x · dx` — and the pair
//! costs about 0.78 of two calls. The fused call's results are bit-identical to the two calls
//! (checked once per process, [`crate::symbols::sin_cos_is_exact`]; otherwise nothing is fused).

use super::ModuleLowering;
use super::func::FuncLowerer;
use crate::error::JitError;
use cranelift_codegen::ir::{self as clif, AbiParam, InstBuilder, types};
use cranelift_module::{FuncId as ClifFuncId, Module as _};
use jitdiff_ir::{InstData, Opcode, Value};
use rustc_hash::FxHashMap as HashMap;

/// The symbol of the fused call in every JIT module.
pub(crate) const SIN_COS_SYMBOL: &str = "jitdiff_sin_cos";

/// For each `sin`/`cos` result of `insts` whose partner (the other function of the same operand)
/// is also computed in `insts`: that partner's result.
pub(super) fn partners(insts: &[InstData]) -> HashMap<Value, Value> {
    let mut partners = HashMap::default();
    if !insts.iter().any(|i| i.op == Opcode::Sin) || !crate::symbols::sin_cos_is_exact() {
        return partners;
    }
    // Operand -> (first sin result, first cos result).
    let mut by_operand: HashMap<Value, (Option<Value>, Option<Value>)> = HashMap::default();
    for inst in insts {
        let (Some(&x), Some(&r)) = (inst.args.first(), inst.results.first()) else { continue };
        let entry = by_operand.entry(x).or_default();
        match inst.op {
            Opcode::Sin if entry.0.is_none() => entry.0 = Some(r),
            Opcode::Cos if entry.1.is_none() => entry.1 = Some(r),
            _ => {}
        }
    }
    for (sin, cos) in by_operand.into_values() {
        if let (Some(sin), Some(cos)) = (sin, cos) {
            partners.insert(sin, cos);
            partners.insert(cos, sin);
        }
    }
    partners
}

impl ModuleLowering<'_> {
    /// The imported fused call `(f64) -> (f64, f64)`: sine and cosine, in registers.
    fn sin_cos_id(&mut self) -> Result<ClifFuncId, JitError> {
        if let Some(id) = self.sin_cos_id {
            return Ok(id);
        }
        let mut sig = self.jit.get().make_signature();
        sig.params.push(AbiParam::new(types::F64));
        sig.returns.extend([AbiParam::new(types::F64), AbiParam::new(types::F64)]);
        let id = self.import(SIN_COS_SYMBOL, &sig)?;
        self.sin_cos_id = Some(id);
        Ok(id)
    }
}

impl FuncLowerer<'_, '_> {
    /// `sin x` or `cos x` (`op`) with result `result`: the value the fused call of its pair
    /// already gave it, or the fused call now (keeping the partner's value for later), or
    /// `None` when it has no partner in this block.
    pub(super) fn lower_trig_pair(
        &mut self,
        op: Opcode,
        result: Value,
        x: clif::Value,
    ) -> Result<Option<clif::Value>, JitError> {
        if let Some(v) = self.trig_ready.remove(&result) {
            return Ok(Some(v));
        }
        let Some(&partner) = self.trig_partners.get(&result) else { return Ok(None) };
        let id = self.m.sin_cos_id()?;
        let r = self.func_ref(id);
        let call = self.b.ins().call(r, &[x]);
        let (sin, cos) = (self.b.inst_results(call)[0], self.b.inst_results(call)[1]);
        let (own, other) = if op == Opcode::Sin { (sin, cos) } else { (cos, sin) };
        self.trig_ready.insert(partner, other);
        Ok(Some(own))
    }
}
