//! Constant hoisting: every constant is defined once, in the entry block.

use crate::function::{Block, Function};
use crate::opcode::Opcode;

/// Move every `fconst`, `iconst`, `bconst` and `table` to the end of the entry block (before its
/// terminator). A constant has no operands, so the entry block — which dominates every block —
/// is always a valid place for it; defined there, it is materialised once per call instead of
/// once per loop iteration (derivative rules re-create constants inside loop bodies), and
/// [`cse`](super::cse) then merges duplicates.
///
/// ```
/// use jitdiff_ir::{parse_module, passes, print_module};
/// let src = "func @f(x: f64) -> f64 {\nentry:\n    jump next\nnext:\n    two = fconst 2.0\n    r = fmul x, two\n    ret r\n}\n";
/// let mut m = parse_module(src).unwrap();
/// passes::hoist_constants(&mut m.functions[0]);
/// let text = print_module(&m);
/// assert!(text.find("fconst 2.0").unwrap() < text.find("next:").unwrap());
/// ```
pub fn hoist_constants(func: &mut Function) {
    if func.blocks.is_empty() {
        return;
    }
    let mut hoisted = vec![];
    for block in func.blocks.iter_mut().skip(1) {
        let (constants, rest) = block.insts.drain(..).partition(|i| is_constant(i.op));
        block.insts = rest;
        hoisted.extend::<Vec<_>>(constants);
    }
    if hoisted.is_empty() {
        return;
    }
    func.block_mut(Block::ENTRY).insts.extend(hoisted);
    func.canonicalize();
}

fn is_constant(op: Opcode) -> bool {
    matches!(op, Opcode::FConst | Opcode::IConst | Opcode::BConst | Opcode::Table)
}
