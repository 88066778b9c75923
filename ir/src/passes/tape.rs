//! Tape entries that never need the tape: a `tpop` that reads what a `tpush` on the same
//! straight stretch of code pushed takes the pushed value instead.

use super::{Aliases, remove_marked};
use crate::analysis::ControlFlow;
use crate::function::{Block, Callee, Function, Imm, Terminator};
use crate::opcode::Opcode;

/// Where one instruction is: block and position.
type Site = (Block, usize);

/// Replace each `tpop` whose entry was pushed by a `tpush` on the same straight stretch of code
/// (every block between them has one predecessor, which jumps to it unconditionally) by the
/// pushed value, and drop both. A function that first calls its forward part and then its
/// pullback, both inlined, passes its once-per-call state this way (Extended Rosenbrock's
/// trip count): it then needs no tape at all.
///
/// The tape's `tpop` reads below a cursor that each `tpush` resets to the end of the tape, so
/// the pairing by nesting depth is exact only where no push follows a pop: the pass does
/// nothing in a function where a push can run after a pop (or that splits the tape or calls a
/// module function, whose own tape use it cannot see). There every run pushes first and then
/// pops from the top down; dropping a matched pair removes one entry that one pop read, and
/// every other pop reads the same entry as before. Returns whether anything changed.
///
/// ```
/// use jitdiff_ir::{parse_module, passes, print_module};
/// let src = "func @f(x: f64) -> f64 {\nentry:\n    tpush x\n    jump next\nnext:\n    y = tpop.f64\n    z = fmul x, y\n    ret z\n}\n";
/// let mut m = parse_module(src).unwrap();
/// assert!(passes::forward_tape_entries(&mut m.functions[0]));
/// let text = print_module(&m);
/// assert!(!text.contains("tpush") && !text.contains("tpop") && text.contains("fmul x, x"), "{text}");
/// ```
pub fn forward_tape_entries(func: &mut Function) -> bool {
    let pops = func.blocks.iter().flat_map(|b| &b.insts).any(|inst| inst.op == Opcode::TPop);
    if !pops {
        return false;
    }
    let cfg = ControlFlow::new(func);
    if !pushes_precede_pops(func, &cfg) {
        return false;
    }
    let mut pairs: Vec<(Site, Site)> = vec![];
    for (b, block) in func.blocks.iter().enumerate() {
        for (i, inst) in block.insts.iter().enumerate() {
            if inst.op == Opcode::TPop
                && let Some(push) = matching_push(func, &cfg, (Block(b as u32), i))
            {
                pairs.push((push, (Block(b as u32), i)));
            }
        }
    }
    let mut aliases = Aliases::new(func);
    let mut dead: Vec<Vec<bool>> = func.blocks.iter().map(|b| vec![false; b.insts.len()]).collect();
    let mut changed = false;
    for ((push_block, push_at), (pop_block, pop_at)) in pairs {
        let pushed = func.blocks[push_block.index()].insts[push_at].args[0];
        let pop = &func.blocks[pop_block.index()].insts[pop_at];
        let (Imm::Type(read_as), [popped]) = (pop.imm, pop.results.as_slice()) else { continue };
        if func.ty(pushed) != read_as {
            continue;
        }
        aliases.set(*popped, pushed);
        dead[push_block.index()][push_at] = true;
        dead[pop_block.index()][pop_at] = true;
        changed = true;
    }
    if changed {
        remove_marked(func, &dead);
        aliases.apply(func);
        func.canonicalize();
    }
    changed
}

/// The `tpush` whose entry the `tpop` at `pop` reads, found by walking back along a straight
/// stretch: pops on the way nest one level deeper, pushes close them.
fn matching_push(func: &Function, cfg: &ControlFlow, pop: Site) -> Option<Site> {
    let (mut block, mut end) = pop;
    let mut depth = 0usize;
    // Each step moves to another block; a straight stretch visits each at most once.
    for _ in 0..=func.blocks.len() {
        for at in (0..end).rev() {
            match func.blocks[block.index()].insts[at].op {
                Opcode::TPush if depth == 0 => return Some((block, at)),
                Opcode::TPush => depth -= 1,
                Opcode::TPop => depth += 1,
                _ => {}
            }
        }
        let &[previous] = cfg.predecessors(block) else { return None };
        if block == Block::ENTRY || !matches!(&func.blocks[previous.index()].term, Some(Terminator::Jump(_))) {
            return None;
        }
        block = previous;
        end = func.blocks[block.index()].insts.len();
    }
    None
}

/// Can no `tpush` run after a `tpop` (and nothing else touches the tape)?
fn pushes_precede_pops(func: &Function, cfg: &ControlFlow) -> bool {
    let touches_tape_unseen = |op: Opcode, imm: &Imm| {
        matches!(op, Opcode::TSplit | Opcode::TRejoin)
            || (op == Opcode::Call && matches!(imm, Imm::Callee(Callee::Func(_))))
    };
    // Blocks some pop can reach, the pop's own block counted from the pop on.
    let mut reached = vec![false; func.blocks.len()];
    let mut stack: Vec<Block> = vec![];
    for (b, block) in func.blocks.iter().enumerate() {
        let mut popped = false;
        for inst in &block.insts {
            if touches_tape_unseen(inst.op, &inst.imm) || (popped && inst.op == Opcode::TPush) {
                return false;
            }
            popped |= inst.op == Opcode::TPop;
        }
        if popped {
            stack.extend(cfg.successors(Block(b as u32)));
        }
    }
    while let Some(b) = stack.pop() {
        if !std::mem::replace(&mut reached[b.index()], true) {
            stack.extend(cfg.successors(b));
        }
    }
    let pushes_in = |b: usize| func.blocks[b].insts.iter().any(|inst| inst.op == Opcode::TPush);
    !(0..func.blocks.len()).any(|b| reached[b] && pushes_in(b))
}

#[cfg(test)]
mod tests {
    use super::forward_tape_entries;
    use crate::{ArgValue, interpret, parse_module, print_module, verify_module};

    /// Forward the entries of `@f` (its only function) and return the printed result, after
    /// checking that the interpreter gives the same results at `inputs` before and after.
    fn forwarded(src: &str, inputs: &[f64]) -> (bool, String) {
        let before = parse_module(src).unwrap();
        let mut after = before.clone();
        let changed = forward_tape_entries(&mut after.functions[0]);
        verify_module(&after).unwrap_or_else(|e| panic!("{e}\n{}", print_module(&after)));
        for &x in inputs {
            let run = |m| interpret(m, "f", &mut [ArgValue::F64(x)]).unwrap();
            assert_eq!(run(&before), run(&after), "x = {x}\n{}", print_module(&after));
        }
        (changed, print_module(&after))
    }

    #[test]
    fn nested_pairs_on_a_straight_stretch_are_all_forwarded() {
        let src = "func @f(x: f64) -> f64 {\nentry:\n    two = fconst 2.0\n    a = fmul x, two\n    tpush x\n    tpush a\n    jump mid\nmid:\n    b = tpop.f64\n    c = tpop.f64\n    d = fsub b, c\n    ret d\n}\n";
        let (changed, text) = forwarded(src, &[1.5, -3.0]);
        assert!(changed && !text.contains("tpush") && !text.contains("tpop"), "{text}");
    }

    #[test]
    fn entries_behind_a_loop_or_a_branch_stay_on_the_tape() {
        // A loop pushes per iteration between the push and the pop: the pop's stretch ends at the
        // loop's exit, whose predecessor (the header) branches.
        let looped = "func @f(x: f64) -> f64 {\nentry:\n    zero = iconst 0\n    one = iconst 1\n    three = iconst 3\n    tpush x\n    jump head(zero)\nhead(i: i64):\n    more = icmp lt i, three\n    br more, body, done\nbody:\n    tpush x\n    j = iadd i, one\n    jump head(j)\ndone:\n    a = tpop.f64\n    b = tpop.f64\n    c = tpop.f64\n    d = tpop.f64\n    s = fadd a, d\n    ret s\n}\n";
        let (changed, text) = forwarded(looped, &[2.0]);
        assert!(!changed, "{text}");
        // Two pushes on two paths, one pop after the join: which entry it reads depends on the
        // path, so it keeps reading the tape.
        let branched = "func @f(x: f64) -> f64 {\nentry:\n    zero = fconst 0.0\n    c = fcmp gt x, zero\n    br c, l, r\nl:\n    tpush x\n    jump join\nr:\n    y = fneg x\n    tpush y\n    jump join\njoin:\n    v = tpop.f64\n    ret v\n}\n";
        let (changed, text) = forwarded(branched, &[2.0, -2.0]);
        assert!(!changed, "{text}");
    }

    #[test]
    fn a_push_after_a_pop_turns_the_pass_off() {
        // `tpush c` after two pops moves the cursor to the end of the tape, above the entries of
        // `a` and `b` that stay: the last pop then reads `b` again, where pairing by depth would
        // say `a`. The interpreter comparison in `forwarded` fails without the check.
        let src = "func @f(x: f64) -> f64 {\nentry:\n    two = fconst 2.0\n    three = fconst 3.0\n    b = fmul x, two\n    c = fmul x, three\n    tpush x\n    tpush b\n    y = tpop.f64\n    z = tpop.f64\n    tpush c\n    v = tpop.f64\n    w = tpop.f64\n    s = fadd y, z\n    t = fadd s, v\n    u = fmul t, w\n    ret u\n}\n";
        let (changed, text) = forwarded(src, &[1.0, 5.0]);
        assert!(!changed, "{text}");
    }
}
