//! Skipping a reversed loop whose incoming cotangents are zero.
//!
//! A pullback is linear in its cotangents. Where the primal picks one of several values — the
//! nearest centroid in k-means, the larger operand of a `max`, the taken side of any branch —
//! the others receive a cotangent of exactly zero, and their reversed loops then add zeros to
//! the differentials, at full cost: k-means' pullback walked every (point, centroid, coordinate)
//! although only one centroid per point receives anything. This pass puts a guard on the entry
//! edge of such a loop:
//!
//! ```text
//!     skip_rev_for_head2(adj_closest, trip):          ; the loop's entry, moved here
//!         z = iszero adj_dist
//!         br z, <the loop's exit>, rev_for_head2(adj_closest, trip)
//! ```
//!
//! **When it is exact.** The loop may do nothing but arithmetic and accumulations
//! `store d, i, fadd(load d, i, x)` into differentials; it leaves only through its header; and
//! every cotangent flowing into it — the *adjoint* values (those computed from cotangent
//! parameters, differential loads and call results) defined before the loop and used inside it,
//! and the entry values of the adjoints it carries — is checked to be zero, except carried
//! adjoints that the loop passes along unchanged (which leave with their entry value either
//! way). Every instruction in the loop that computes an adjoint must be linear in adjoints
//! (sums of them, products of one with primal values, choices between them and zeros: checked,
//! `linear`). Every increment is then a product of those zeros with primal partials, so the skipped
//! loop would have added zeros, and left the carried adjoints at zero. Only the sign of a zero
//! and a `0 × ∞ = NaN` are lost, as with the strong zeros of `docs/rules.md`: the skipped
//! contributions are those the primal did not use.
//!
//! **Derivatives of the guard.** Forward mode over a pullback (Hessian-vector products) asks
//! the tangent of a guarded value to be zero as well (`iszero`'s rule in `forward.rs`), since
//! the skipped code's tangent is `partial × d(cotangent)`; reverse mode over a pullback reads
//! `iszero` as `false` and so never skips (`without_guards`).
//!
//! **When it pays.** A guard costs a compare per entry into the loop; it is only placed when a
//! checked value is zero by construction on some path (a block parameter that receives a
//! constant `0.0` on one of its edges, or a `select` with a `0.0` arm), which is how the pullback
//! spells "this value was not chosen".

use jitdiff_ir::analysis::{ControlFlow, NaturalLoop};
use jitdiff_ir::{Block, BlockCall, Function, Imm, InstData, Module, Opcode, Terminator, Type, Value};
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::borrow::Cow;

/// `module` with every `iszero` read as `bconst false`: what reverse mode differentiates, since
/// its pullback of a skipped path would miss the cotangents of the values the guard tested
/// (the skipped code is zero, but its derivative with respect to them is not).
pub(crate) fn without_guards(module: &Module) -> Cow<'_, Module> {
    let guarded = |f: &Function| f.blocks.iter().flat_map(|b| &b.insts).any(|i| i.op == Opcode::IsZero);
    if !module.functions.iter().any(guarded) {
        return Cow::Borrowed(module);
    }
    let mut module = module.clone();
    for inst in module.functions.iter_mut().flat_map(|f| f.blocks.iter_mut()).flat_map(|b| b.insts.iter_mut()) {
        if inst.op == Opcode::IsZero {
            inst.op = Opcode::BConst;
            inst.imm = Imm::Bool(false);
            inst.args.clear();
        }
    }
    Cow::Owned(module)
}

/// Guard the reversed loops of the pullback `func` that can be skipped when their incoming
/// cotangents are zero; true when a guard was added.
pub(crate) fn skip_zero_cotangent_loops(func: &mut Function) -> bool {
    let cfg = ControlFlow::new(func);
    let loops = cfg.natural_loops();
    if loops.is_empty() {
        return false;
    }
    let facts = Facts::of(func);
    let guards: Vec<Guard> = loops.iter().filter_map(|l| plan(func, &cfg, l, &facts)).collect();
    let changed = !guards.is_empty();
    for guard in guards {
        apply(func, guard);
    }
    if changed {
        func.canonicalize();
    }
    changed
}

/// Where each value is defined, and which values are adjoints.
struct Facts {
    /// The defining block of each value; `None` for function parameters.
    block: Vec<Option<Block>>,
    /// The defining instruction of each instruction result.
    inst: Vec<Option<(Block, usize)>>,
    /// Computed from a cotangent parameter, a differential load or a call result (an
    /// over-approximation: a wrongly adjoint value is only checked needlessly).
    adjoint: Vec<bool>,
    /// The blocks reading each value (in an instruction or the terminator), so that a loop's
    /// plan looks at its own values' uses instead of at every block of the function.
    used_in: Vec<Vec<Block>>,
}

impl Facts {
    fn of(func: &Function) -> Facts {
        let n = func.values.len();
        let (mut block, mut inst, mut adjoint) = (vec![None; n], vec![None; n], vec![false; n]);
        let mut used_in: Vec<Vec<Block>> = vec![vec![]; n];
        for &p in &func.params {
            adjoint[p.index()] = func.ty(p) == Type::F64;
        }
        for b in func.block_ids() {
            let data = func.block(b);
            let reads = data.insts.iter().flat_map(|i| i.args.iter().copied());
            for v in reads.chain(data.term.iter().flat_map(|t| t.uses())) {
                if let Some(blocks) = used_in.get_mut(v.index())
                    && blocks.last() != Some(&b)
                {
                    blocks.push(b);
                }
            }
            for &p in &data.params {
                block[p.index()] = Some(b);
            }
            for (k, i) in data.insts.iter().enumerate() {
                for &r in &i.results {
                    block[r.index()] = Some(b);
                    inst[r.index()] = Some((b, k));
                }
            }
        }
        // To a fixpoint: block parameters take what their edges pass.
        loop {
            let mut changed = false;
            for b in func.block_ids() {
                let data = func.block(b);
                for i in &data.insts {
                    let seed = match i.op {
                        Opcode::Load => func.ty(i.args[0]) == Type::SliceMut,
                        Opcode::Call => true,
                        _ => false,
                    };
                    if seed || i.args.iter().any(|a| adjoint[a.index()]) {
                        for r in &i.results {
                            changed |= !std::mem::replace(&mut adjoint[r.index()], true);
                        }
                    }
                }
                if let Some(term) = &data.term {
                    for call in term.successors() {
                        let params = &func.block(call.block).params;
                        for (a, p) in call.args.iter().zip(params) {
                            if adjoint[a.index()] && !adjoint[p.index()] {
                                adjoint[p.index()] = true;
                                changed = true;
                            }
                        }
                    }
                }
            }
            if !changed {
                break;
            }
        }
        Facts { block, inst, adjoint, used_in }
    }

    fn defining_inst<'f>(&self, func: &'f Function, v: Value) -> Option<&'f InstData> {
        self.inst[v.index()].map(|(b, k)| &func.block(b).insts[k])
    }

    fn is_float_constant(&self, func: &Function, v: Value, test: impl Fn(f64) -> bool) -> bool {
        matches!(self.defining_inst(func, v), Some(InstData { op: Opcode::FConst, imm: Imm::F64(x), .. }) if test(*x))
    }

    /// Zero by construction on some path: a parameter with a `0.0` on one of its edges, a
    /// `select` with a `0.0` arm, a product (or negation, or quotient) of such a value, or a sum
    /// of two — the pullback of `f64::min` scales the cotangent it passes on by the partial of
    /// the side not taken, `fmulsz partial, select(c, 0.0, cotangent)`, and adds the share of
    /// its NaN case. (A guard placed in vain costs one compare per entry into the loop.)
    fn sometimes_zero(&self, func: &Function, v: Value) -> bool {
        self.sometimes_zero_within(func, v, 8)
    }

    fn sometimes_zero_within(&self, func: &Function, v: Value, depth: u32) -> bool {
        let zero = |v: Value| self.is_float_constant(func, v, |x| x == 0.0);
        if let Some(i) = self.defining_inst(func, v) {
            let factor = |k: usize| depth > 0 && self.sometimes_zero_within(func, i.args[k], depth - 1);
            return match i.op {
                Opcode::Select => zero(i.args[1]) || zero(i.args[2]),
                Opcode::FMul | Opcode::FMulSz => factor(0) || factor(1),
                // `f64::min`'s other side: the NaN case's share plus the scaled share.
                Opcode::FAdd | Opcode::FSub => factor(0) && factor(1),
                Opcode::FNeg | Opcode::FDiv => factor(0),
                _ => false,
            };
        }
        let Some(b) = self.block[v.index()] else { return false };
        let Some(position) = func.block(b).params.iter().position(|&p| p == v) else { return false };
        func.blocks
            .iter()
            .filter_map(|d| d.term.as_ref())
            .any(|t| t.successors().iter().any(|c| c.block == b && zero(c.args[position])))
    }
}

/// A guard to place: on the edge `from → header`, test `checked` (values before the loop, or
/// positions of the header's parameters) and leave by `exit` when all are zero.
struct Guard {
    from: Block,
    header: Block,
    checked: Vec<Checked>,
    exit: BlockCall,
}

enum Checked {
    Value(Value),
    /// The entry value of the header's parameter at this position.
    Param(usize),
}

fn plan(func: &Function, cfg: &ControlFlow, l: &NaturalLoop, facts: &Facts) -> Option<Guard> {
    let inside = |b: Block| l.body.get(b.index()).copied().unwrap_or(false);
    let header = l.header;
    let outside_preds: Vec<Block> = cfg.predecessors(header).iter().copied().filter(|&p| !inside(p)).collect();
    let [from] = outside_preds[..] else { return None };
    let entry_edges = func.block(from).term.as_ref()?.successors().iter().filter(|c| c.block == header).count();
    if entry_edges != 1 {
        return None;
    }
    let blocks = l.blocks.clone();
    let in_loop = |v: Value| facts.block[v.index()].is_some_and(inside);
    // Only arithmetic and accumulations into differentials.
    let mut accumulations = 0;
    for &b in &blocks {
        let insts = &func.block(b).insts;
        let mut accumulated: HashSet<Value> = HashSet::default();
        for i in insts {
            if i.op != Opcode::Store {
                continue;
            }
            let (slice, index, new) = (i.args[0], i.args[1], i.args[2]);
            let update = facts.defining_inst(func, new).filter(|_| facts.block[new.index()] == Some(b))?;
            let old = match (update.op, &update.args[..]) {
                (Opcode::FAdd, &[x, y]) => [x, y].into_iter().find(|&v| loads(func, facts, v, slice, index, b)),
                (Opcode::FSub, &[x, _]) => Some(x).filter(|&v| loads(func, facts, v, slice, index, b)),
                _ => None,
            }?;
            accumulated.insert(old);
            accumulations += 1;
        }
        for i in insts {
            match i.op {
                Opcode::Store => {}
                Opcode::Load if func.ty(i.args[0]) == Type::SliceMut && !accumulated.contains(&i.results[0]) => {
                    return None;
                }
                op if op.has_side_effects() || matches!(op, Opcode::VLoad) => return None,
                _ if !linear(func, facts, i) => return None,
                _ => {}
            }
        }
    }
    // Leaves through one edge of the header; nothing defined inside is used after it.
    let mut exit: Option<BlockCall> = None;
    for &b in &blocks {
        for call in func.block(b).term.as_ref()?.successors() {
            if !inside(call.block) {
                if b != header || exit.is_some() {
                    return None;
                }
                exit = Some(call.clone());
            }
        }
    }
    let exit = exit?;
    for &b in &blocks {
        let data = func.block(b);
        let defined = data.params.iter().chain(data.insts.iter().flat_map(|i| &i.results));
        if defined.flat_map(|v| &facts.used_in[v.index()]).any(|&u| !inside(u)) {
            return None;
        }
    }
    let header_params = &func.block(header).params;
    let passed = pass_through(func, &blocks, header, facts, &inside);
    // A carried primal (a trip count) leaves with another value than it entered with; a carried
    // adjoint leaves with its entry value (passed along) or zero (checked).
    for &a in &exit.args {
        if in_loop(a) && !(header_params.contains(&a) && facts.adjoint[a.index()]) {
            return None;
        }
    }
    // What must be zero: non-passed carried adjoints at entry, and adjoints from before the loop.
    let mut checked = vec![];
    let mut seen: HashSet<Value> = HashSet::default();
    let entry_args = func.block(from).term.as_ref()?.successors().iter().find(|c| c.block == header)?.args.clone();
    let mut carried_updates = false;
    for (k, &p) in header_params.iter().enumerate() {
        if facts.adjoint[p.index()] && !passed.contains(&p) {
            carried_updates = true;
            let arg = entry_args[k];
            if func.ty(arg) != Type::F64 || facts.is_float_constant(func, arg, |x| x != 0.0) {
                return None;
            }
            if !facts.is_float_constant(func, arg, |x| x == 0.0) && seen.insert(arg) {
                checked.push((Checked::Param(k), arg));
            }
        }
    }
    for &b in &blocks {
        let data = func.block(b);
        let mut used: Vec<Value> = data.insts.iter().flat_map(|i| i.args.iter().copied()).collect();
        if let Some(term) = &data.term {
            for call in term.successors() {
                if b == header && !inside(call.block) {
                    continue;
                }
                used.extend(call.args.iter().copied());
            }
            if let Terminator::Branch { cond, .. } = term {
                used.push(*cond);
            }
        }
        for v in used {
            if in_loop(v) || !facts.adjoint[v.index()] || facts.is_float_constant(func, v, |x| x == 0.0) {
                continue;
            }
            if func.ty(v) != Type::F64 || facts.is_float_constant(func, v, |x| x != 0.0) {
                return None;
            }
            if seen.insert(v) {
                checked.push((Checked::Value(v), v));
            }
        }
    }
    let worthwhile = (accumulations > 0 || carried_updates)
        && !checked.is_empty()
        && checked.iter().any(|&(_, v)| facts.sometimes_zero(func, v));
    worthwhile.then(|| Guard { from, header, checked: checked.into_iter().map(|(c, _)| c).collect(), exit })
}

/// Is an instruction that computes an adjoint zero when its adjoint operands are? A pullback's
/// adjoints are linear in its cotangents by construction; this checks it rather than trusting
/// it, so that a skipped loop is one whose increments are zero, whatever emitted it: sums and
/// differences of adjoints, products and quotients of one adjoint by primal values, negations,
/// choices between adjoints (and zeros), and tests of them. An instruction computing no adjoint
/// is primal work, the same on both paths.
fn linear(func: &Function, facts: &Facts, inst: &InstData) -> bool {
    let Some(&result) = inst.results.first() else { return true };
    if !facts.adjoint[result.index()] {
        return true;
    }
    let adjoint = |v: Value| facts.adjoint[v.index()];
    let zero = |v: Value| facts.is_float_constant(func, v, |x| x == 0.0);
    let args = &inst.args[..];
    match (inst.op, func.ty(result)) {
        (Opcode::FAdd | Opcode::FSub, Type::F64) => args.iter().all(|&a| adjoint(a) || zero(a)),
        (Opcode::FMul | Opcode::FMulSz, Type::F64) => args.iter().filter(|&&a| adjoint(a)).count() == 1,
        (Opcode::FDiv, Type::F64) => adjoint(args[0]) && !adjoint(args[1]),
        (Opcode::FNeg, Type::F64) => true,
        (Opcode::Select, Type::F64) => args[1..].iter().all(|&a| adjoint(a) || zero(a)),
        (Opcode::Load, Type::F64) => true,
        (Opcode::FCmp | Opcode::IsZero | Opcode::And | Opcode::Or | Opcode::Not, Type::Bool) => true,
        _ => false,
    }
}

/// Is `v` a load of `slice[index]` in block `b`, used once?
fn loads(func: &Function, facts: &Facts, v: Value, slice: Value, index: Value, b: Block) -> bool {
    let Some(load) = facts.defining_inst(func, v) else { return false };
    if load.op != Opcode::Load || load.args[..] != [slice, index] || facts.block[v.index()] != Some(b) {
        return false;
    }
    let data = func.block(b);
    let uses = data.insts.iter().flat_map(|i| i.args.iter()).filter(|&&a| a == v).count()
        + data.term.as_ref().map_or(0, |t| t.uses().iter().filter(|&&a| a == v).count());
    uses == 1
}

/// The header's adjoint parameters that the loop carries unchanged (every back edge passes
/// the parameter itself, through block parameters that receive nothing else, and nothing else
/// reads it), with those block parameters.
fn pass_through(
    func: &Function,
    blocks: &[Block],
    header: Block,
    facts: &Facts,
    inside: &dyn Fn(Block) -> bool,
) -> HashSet<Value> {
    let mut passed: HashSet<Value> = HashSet::default();
    // Edges inside the loop: (source block, target, argument position, argument).
    let mut edges: Vec<(Block, Block, usize, Value)> = vec![];
    for &b in blocks {
        if let Some(term) = &func.block(b).term {
            for call in term.successors() {
                if inside(call.block) {
                    edges.extend(call.args.iter().enumerate().map(|(k, &a)| (b, call.block, k, a)));
                }
            }
        }
    }
    let instruction_uses: HashSet<Value> = blocks
        .iter()
        .flat_map(|&b| func.block(b).insts.iter().flat_map(|i| i.args.iter().copied()))
        .chain(blocks.iter().filter_map(|&b| match &func.block(b).term {
            Some(Terminator::Branch { cond, .. }) => Some(*cond),
            _ => None,
        }))
        .collect();
    // The arguments each (block, parameter position) receives along those edges.
    let mut incoming_args: HashMap<(Block, usize), Vec<Value>> = HashMap::default();
    for &(_, target, k, a) in &edges {
        incoming_args.entry((target, k)).or_default().push(a);
    }
    for (k, &p) in func.block(header).params.iter().enumerate() {
        if !facts.adjoint[p.index()] {
            continue;
        }
        // The parameter and the block parameters inside the loop that receive only its copies.
        let mut chain: HashSet<Value> = HashSet::from_iter([p]);
        loop {
            let mut grown = false;
            for &b in blocks.iter().filter(|&&b| b != header) {
                for (j, &q) in func.block(b).params.iter().enumerate() {
                    if chain.contains(&q) {
                        continue;
                    }
                    let incoming = incoming_args.get(&(b, j)).map_or(&[][..], Vec::as_slice);
                    if !incoming.is_empty() && incoming.iter().all(|a| chain.contains(a)) {
                        chain.insert(q);
                        grown = true;
                    }
                }
            }
            if !grown {
                break;
            }
        }
        let position = |target: Block, j: usize| func.block(target).params[j];
        let closed = edges.iter().filter(|e| chain.contains(&e.3)).all(|e| {
            let q = position(e.1, e.2);
            chain.contains(&q) && (e.1 != header || e.2 == k)
        });
        let back_edges_pass = edges.iter().filter(|e| e.1 == header && e.2 == k).all(|e| chain.contains(&e.3));
        if closed && back_edges_pass && !chain.iter().any(|v| instruction_uses.contains(v)) {
            passed.extend(chain);
        }
    }
    passed
}

/// Put `guard` on its edge: a new block with the header's parameters tests the checked values
/// and goes to the loop's exit when all are zero, else into the loop.
fn apply(func: &mut Function, guard: Guard) {
    let Guard { from, header, checked, exit } = guard;
    let name = format!("skip_{}", func.block(header).name);
    let block = func.add_block(&name);
    let header_params = func.block(header).params.clone();
    let params: Vec<Value> = header_params
        .iter()
        .map(|&p| {
            let label = func.values[p.index()].name.clone();
            func.add_block_param(block, func.ty(p), label.as_deref())
        })
        .collect();
    let local = |v: Value| header_params.iter().position(|&p| p == v).map_or(v, |k| params[k]);
    let mut all: Option<Value> = None;
    let mut insts = vec![];
    for c in checked {
        let v = match c {
            Checked::Value(v) => v,
            Checked::Param(k) => params[k],
        };
        let zero = func.new_value(Type::Bool);
        insts.push(InstData {
            op: Opcode::IsZero,
            args: [v].as_slice().into(),
            imm: Imm::None,
            results: [zero].as_slice().into(),
        });
        all = Some(match all {
            None => zero,
            Some(previous) => {
                let both = func.new_value(Type::Bool);
                insts.push(InstData {
                    op: Opcode::And,
                    args: [previous, zero].as_slice().into(),
                    imm: Imm::None,
                    results: [both].as_slice().into(),
                });
                both
            }
        });
    }
    let cond = all.expect("a guard checks a value");
    let skip = BlockCall { block: exit.block, args: exit.args.iter().map(|&a| local(a)).collect() };
    let enter = BlockCall { block: header, args: params.as_slice().into() };
    let data = func.block_mut(block);
    data.insts = insts;
    data.term = Some(Terminator::Branch { cond, then_dest: skip, else_dest: enter });
    if let Some(term) = func.block_mut(from).term.as_mut() {
        for call in term.successors_mut() {
            if call.block == header {
                call.block = block;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::skip_zero_cotangent_loops;
    use jitdiff_ir::{parse_module, print_module, verify_module};

    /// A pullback-shaped function: `a` is zero on one edge (the side a choice did not take), and
    /// the loop accumulates `increment` into `d_x`.
    fn pullback(increment: &str) -> String {
        format!(
            "func @pb(x: slice, d_x: mslice, cot: f64, n: i64) {{
entry:
    zero = iconst 0
    one = iconst 1
    fz = fconst 0.0
    c = icmp lt zero, n
    br c, pick(cot), pick(fz)
pick(a: f64):
    jump head(zero)
head(i: i64):
    more = icmp lt i, n
    br more, body, exit
body:
    p = load x, i
    t = {increment}
    old = load d_x, i
    new = fadd old, t
    store d_x, i, new
    i2 = iadd i, one
    jump head(i2)
exit:
    ret
}}
"
        )
    }

    fn guards(text: &str) -> usize {
        let mut module = parse_module(text).unwrap();
        skip_zero_cotangent_loops(&mut module.functions[0]);
        verify_module(&module).unwrap();
        print_module(&module).matches("iszero").count()
    }

    #[test]
    fn a_loop_adding_multiples_of_a_zero_cotangent_is_guarded() {
        assert_eq!(guards(&pullback("fmul p, a")), 1);
        assert_eq!(guards(&pullback("fdiv a, p")), 1);
    }

    #[test]
    fn loops_whose_increments_need_not_vanish_are_not() {
        // Not linear in `a`: a square, an affine sum, a quotient by it, a function of it.
        for increment in ["fmul a, a", "fadd p, a", "fdiv p, a", "exp a"] {
            assert_eq!(guards(&pullback(increment)), 0, "{increment}");
        }
        // A loop that reads the tape.
        let popping = pullback("fmul p, a").replace("    p = load x, i\n", "    p = tpop.f64\n");
        assert_eq!(guards(&popping), 0);
    }
}
