//! What both modes decide the same way about an active call: which function's derived rule it
//! calls (an extern without a custom rule has none: an error naming the call site), and which
//! of the callee's parameters are differentiated there (the active `f64` and slice arguments).

use super::activity::Activity;
use super::error::AdError;
use jitdiff_ir::{Callee, FuncId, Imm, InstData, Module, Type};

/// An active call of a module function without a custom rule.
pub(crate) struct DerivedCall {
    /// The callee, to derive for `mask`.
    pub callee: FuncId,
    /// One flag per callee parameter: differentiated here.
    pub mask: Vec<bool>,
}

/// Resolve the active call `inst` (with no custom rule) of a function of `source`, at `site`
/// (function, block, instruction index) for the error an extern without a rule is.
pub(crate) fn derived_call(
    source: &Module,
    inst: &InstData,
    activity: &Activity,
    (func, block, index): (&str, &str, usize),
) -> Result<DerivedCall, AdError> {
    let Imm::Callee(callee) = inst.imm else {
        return Err(AdError::Internal { func: func.into(), message: "a call without a callee".into() });
    };
    let Callee::Func(id) = callee else {
        return Err(AdError::NoRule {
            func: func.into(),
            block: block.into(),
            inst: index,
            callee: source.callee_name(callee).into(),
        });
    };
    let callee_fn = source.func(id);
    let mask = inst
        .args
        .iter()
        .zip(&callee_fn.params)
        .map(|(a, p)| activity.is_active(*a) && (callee_fn.ty(*p) == Type::F64 || callee_fn.ty(*p).is_slice()))
        .collect();
    Ok(DerivedCall { callee: id, mask })
}
