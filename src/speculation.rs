//! How many scalars a gradient will differentiate, when the function alone says so: what lets
//! `GradientMode::Auto` build its forward lanes on a second core while reverse mode is derived,
//! before any call has shown a slice's length.
//!
//! An `f64` parameter is one scalar. A slice parameter whose every use is a `load` at a
//! constant index (the pendulum's `params[0]`, `params[1]`, `params[2]`) is taken to be as long
//! as its largest index plus one: the shortest slice a call can pass without faulting. A longer
//! slice makes the guess wrong, and the lanes built for it unused: the call then takes the mode
//! its real count asks for.

use crate::user::UserFunction;
use jitdiff_ir::{Imm, Opcode, Type, Value};
use std::collections::HashMap;

/// The differentiated scalars of `user`'s calls, if every differentiated parameter is an `f64`
/// or a slice read only at constant indices (see the module doc).
pub(crate) fn likely_inputs(user: &UserFunction) -> Option<usize> {
    let function = user.module.func_by_name(&user.name)?;
    let constants: HashMap<Value, i64> = function
        .blocks
        .iter()
        .flat_map(|b| &b.insts)
        .filter_map(|inst| match (inst.op, &inst.imm, inst.results.first()) {
            (Opcode::IConst, Imm::I64(k), Some(&r)) => Some((r, *k)),
            _ => None,
        })
        .collect();
    let mut total = 0usize;
    for ((&param, ty), _) in function.params.iter().zip(&user.params).zip(&user.wrt).filter(|(_, on)| **on) {
        total += match ty {
            Type::F64 => 1,
            Type::Slice => constant_reads(function, param, &constants)?,
            _ => return None,
        };
    }
    Some(total)
}

/// One more than the largest constant index `slice` is read at, if every use of it is such a
/// read.
fn constant_reads(function: &jitdiff_ir::Function, slice: Value, constants: &HashMap<Value, i64>) -> Option<usize> {
    let mut largest = None;
    for block in &function.blocks {
        for inst in &block.insts {
            if !inst.args.contains(&slice) {
                continue;
            }
            let index = match (inst.op, &inst.args[..]) {
                (Opcode::Load, [s, index]) if *s == slice && *index != slice => constants.get(index)?,
                _ => return None,
            };
            largest = largest.max(Some(usize::try_from(*index).ok()?));
        }
        if block.term.as_ref().is_some_and(|t| t.uses().contains(&slice)) {
            return None;
        }
    }
    largest.map(|k| k + 1)
}

#[cfg(test)]
mod tests {
    use super::likely_inputs;
    use crate::user::UserFunction;
    use jitdiff_ir::{ExternRegistry, parse_module};

    fn inputs(body: &str, wrt: Vec<bool>) -> Option<usize> {
        let m = parse_module(&format!("func @f(p: slice, x: f64, n: i64) -> f64 {{\nentry:\n{body}\n}}")).unwrap();
        let mut user = UserFunction::new(&m, "f", ExternRegistry::new(), None).unwrap();
        user.set_wrt(wrt);
        likely_inputs(&user)
    }

    #[test]
    fn slices_read_at_constant_indices_count_their_largest_index() {
        let reads = "    zero = iconst 0\n    two = iconst 2\n    a = load p, zero\n    b = load p, two\n    \
                     c = fmul a, b\n    r = fmul c, x\n    ret r";
        assert_eq!(inputs(reads, vec![true, true, false]), Some(4));
        assert_eq!(inputs(reads, vec![true, false, false]), Some(3));
        assert_eq!(inputs(reads, vec![false, true, false]), Some(1));
        // An index that is not a constant, a slice's length, a slice returned through a
        // branch argument or passed on: the count waits for a call.
        let variable = "    a = load p, n\n    r = fmul a, x\n    ret r";
        assert_eq!(inputs(variable, vec![true, true, false]), None);
        let length =
            "    zero = iconst 0\n    a = load p, zero\n    k = len p\n    t = itof k\n    r = fmul a, t\n    ret r";
        assert_eq!(inputs(length, vec![true, false, false]), None);
        assert_eq!(inputs(length, vec![false, true, false]), Some(1));
        let negative = "    minus = iconst -1\n    a = load p, minus\n    ret a";
        assert_eq!(inputs(negative, vec![true, false, false]), None);
        let unread = "    ret x";
        assert_eq!(inputs(unread, vec![true, true, false]), None);
    }
}
