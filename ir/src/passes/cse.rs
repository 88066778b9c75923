//! Dominator-based common-subexpression elimination.

use super::{Aliases, remove_marked};
use crate::analysis::ControlFlow;
use crate::function::{Block, Function, Imm, Value};
use crate::opcode::Opcode;
use crate::types::Type;
use rustc_hash::FxHashMap as HashMap;
use smallvec::SmallVec;

/// What makes two instructions compute the same value.
#[derive(Clone, PartialEq, Eq, Hash)]
struct Key {
    op: Opcode,
    args: SmallVec<[Value; 3]>,
    imm: (u8, u64),
}

/// Replace a pure, non-failing instruction by an identical one (same opcode, operands and
/// immediate) that dominates it. Loads are never merged (a store may come between), nor is
/// anything with side effects or that can fail. Operands are compared as written — `fadd a, b`
/// and `fadd b, a` are different — so results stay bit-identical even for NaN payloads.
///
/// ```
/// use jitdiff_ir::{parse_module, passes, print_module};
/// let src = "func @f(x: f64) -> f64 {\nentry:\n    a = sin x\n    b = sin x\n    r = fadd a, b\n    ret r\n}\n";
/// let mut m = parse_module(src).unwrap();
/// passes::cse(&mut m.functions[0]);
/// assert_eq!(print_module(&m).matches("sin").count(), 1);
/// ```
pub fn cse(func: &mut Function) {
    if func.blocks.is_empty() {
        return;
    }
    let cfg = ControlFlow::new(func);
    let mut aliases = Aliases::new(func);
    let count: usize = func.blocks.iter().map(|b| b.insts.len()).sum();
    let mut available: HashMap<Key, SmallVec<[(Block, Value); 1]>> =
        HashMap::with_capacity_and_hasher(count, Default::default());
    let mut dead: Vec<Vec<bool>> = func.blocks.iter().map(|b| vec![false; b.insts.len()]).collect();
    // Reverse post-order visits a block's dominators before it, so every dominating candidate
    // is already in `available` when the block is visited.
    for &b in cfg.reverse_post_order() {
        let block = &mut func.blocks[b.index()];
        for (i, inst) in block.insts.iter_mut().enumerate() {
            inst.args.iter_mut().for_each(|a| *a = aliases.resolve(*a));
            if inst.op.has_side_effects() || inst.op.can_fail() || inst.results.len() != 1 {
                continue;
            }
            let result = inst.results[0];
            let key = Key { op: inst.op, args: SmallVec::from_slice(&inst.args), imm: imm_key(&inst.imm) };
            let candidates = available.entry(key).or_default();
            match candidates.iter().find(|(cb, _)| cfg.dominates(*cb, b)) {
                Some(&(_, earlier)) => {
                    aliases.set(result, earlier);
                    dead[b.index()][i] = true;
                }
                None => candidates.push((b, result)),
            }
        }
        if let Some(term) = &mut block.term {
            term.map_uses(|v| aliases.resolve(v));
        }
    }
    remove_marked(func, &dead);
    aliases.apply(func);
    func.canonicalize();
}

/// A hashable encoding of an immediate; floats by bit pattern.
fn imm_key(imm: &Imm) -> (u8, u64) {
    match *imm {
        Imm::None => (0, 0),
        Imm::F64(x) => (1, x.to_bits()),
        Imm::I64(x) => (2, x as u64),
        Imm::Bool(x) => (3, x as u64),
        Imm::Cond(c) => (4, c as u64),
        Imm::Lane(k) => (5, k as u64),
        Imm::Type(t) => (
            6,
            match t {
                Type::F64 => 0,
                Type::I64 => 1,
                Type::Bool => 2,
                Type::Slice => 3,
                Type::SliceMut => 4,
                Type::F64x(w) => 16 + w as u64,
            },
        ),
        Imm::Callee(crate::Callee::Func(f)) => (7, f.0 as u64),
        Imm::Callee(crate::Callee::Extern(e)) => (8, e.0 as u64),
        Imm::Table(t) => (9, t.0 as u64),
    }
}
