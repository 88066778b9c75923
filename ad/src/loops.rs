//! Counted loops, for the reverse transform: loops whose pullback knows how often to run from
//! one recorded trip count per loop run, instead of one recorded edge index per iteration.
//!
//! A loop header entered by exactly one edge from outside the loop and one back edge is
//! *counted*: `f_fwd` gives the header a `trip` parameter (0 on entry, `trip + 1` on the back
//! edge) and pushes it on every edge leaving the loop; the reversed loop carries it (as block
//! parameters where it must, see `reverse/loop_state.rs`), runs the reversed back edge while it
//! is not zero (decrementing it) and leaves by the reversed entry edge when it is. A loop containing a
//! returning block, or with more entries or back edges, keeps the general scheme (the header
//! pushes which edge entered it).
//!
//! The trip count also recovers *induction variables*: a header parameter that starts at `init`
//! and steps by `step` (`iadd iv, step` on the back edge) equals `init + trip * step`, so the
//! pullback recomputes a loop index instead of reading it from the tape when `init` and `step`
//! are constants or values recorded once per call.
//!
//! A counted loop whose only way out is its header's test of an induction variable stepping
//! by one against a bound fixed before the loop (`i < n`, `i >= lo`, `i != end`) has an
//! [`ExitTest`]: its trip count is a function of the variable's start and the bound, so when
//! the pullback can compute those two where the loop ends, nothing of the loop's control needs
//! recording.

use jitdiff_ir::analysis::ControlFlow;
use jitdiff_ir::{Block, CondCode, Function, Imm, Opcode, Terminator, Type, Value};
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

/// One counted loop of the source function.
#[derive(Clone, Debug)]
pub(super) struct CountedLoop {
    pub header: Block,
    /// The edge entering the loop: `(predecessor, successor slot)`.
    pub entry_edge: (Block, usize),
    /// The back edge: `(latch, successor slot)`.
    pub back_edge: (Block, usize),
    /// The header and every block that reaches the latch without passing the header.
    pub body: HashSet<Block>,
    /// Induction variables (source values).
    pub inductions: Vec<Induction>,
    /// Recurrences (source values), for loops whose latch is not the header.
    pub recurrences: Vec<Recurrence>,
    /// How the loop ends, when its trip count follows from its start and bound.
    pub exit_test: Option<ExitTest>,
}

/// The header's test that alone ends a counted loop: the loop runs while `iv cond bound`
/// (`iv` on the left), where `iv` is an induction variable stepping by +1 (`up`) or -1 and
/// `bound` is defined before the loop. Then the trip count is `bound - init` (up) or
/// `init - bound` (down), plus one for `le`/`ge`, and zero when the test fails at once; for `ne`
/// it is that difference in wrapping arithmetic. (A loop whose count would not fit in an `i64`
/// never ends, so the wrapping cannot matter.)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct ExitTest {
    pub induction: Induction,
    pub bound: Value,
    pub cond: CondCode,
    pub up: bool,
    /// The block the loop exits to.
    pub exit: Block,
}

/// A header parameter `iv` that starts at `init` and that the back edge replaces by
/// `iv + step` (or `step + iv`, or `iv - step` when `subtract`): it equals
/// `init ± trip * step` when `step` does not change in the loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Induction {
    pub iv: Value,
    pub init: Value,
    pub step: Value,
    pub subtract: bool,
}

/// A header parameter `param` that the back edge replaces by `param + step` (or `step + param`,
/// or `param - step` when `subtract`), where the step changes from iteration to iteration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Recurrence {
    pub param: Value,
    pub subtract: bool,
    pub step: Step,
}

/// How a recurrence's step is computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Step {
    /// A value defined before the loop.
    Value(Value),
    /// `op(args)`: an `iadd`, `isub` or `imul` in the latch.
    Op(Opcode, [Value; 2]),
}

impl Step {
    /// The values the step is computed from.
    pub fn operands(&self) -> Vec<Value> {
        match *self {
            Step::Value(v) => vec![v],
            Step::Op(_, args) => args.to_vec(),
        }
    }

    /// The same step with its operands renamed.
    pub fn map(self, f: impl Fn(Value) -> Value) -> Step {
        match self {
            Step::Value(v) => Step::Value(f(v)),
            Step::Op(op, args) => Step::Op(op, args.map(f)),
        }
    }
}

/// The counted loops of a function, ordered by header.
#[derive(Clone, Debug, Default)]
pub(super) struct Loops {
    pub loops: Vec<CountedLoop>,
    /// Per block, the loops containing it, in order (asked for every block and edge: filtering
    /// every loop each time made a function of many loops quadratic).
    containing: HashMap<Block, Vec<usize>>,
    /// The loop headed by each header.
    by_header: HashMap<Block, usize>,
}

impl Loops {
    /// Find the counted loops; `incoming` lists every block's incoming edges.
    pub fn analyse(
        func: &Function,
        cfg: &ControlFlow,
        incoming: &HashMap<Block, Vec<(Block, usize)>>,
        returns: &[Block],
    ) -> Loops {
        let mut loops = vec![];
        // Every single-result instruction by result, built once for all loops.
        let definition: HashMap<Value, (Opcode, &[Value])> = func
            .blocks
            .iter()
            .flat_map(|b| &b.insts)
            .filter(|i| i.results.len() == 1)
            .map(|i| (i.results[0], (i.op, i.args.as_slice())))
            .collect();
        let mut headers: Vec<&Block> = incoming.keys().collect();
        headers.sort();
        for &header in headers {
            let edges = &incoming[&header];
            if edges.len() != 2 || header == Block::ENTRY {
                continue;
            }
            let back: Vec<&(Block, usize)> = edges.iter().filter(|(p, _)| cfg.is_back_edge(*p, header)).collect();
            let &[&back_edge] = back.as_slice() else { continue };
            let Some(&entry_edge) = edges.iter().find(|&&e| e != back_edge) else { continue };
            if cfg.is_back_edge(entry_edge.0, header) {
                continue;
            }
            let body = natural_loop(cfg, header, back_edge.0);
            if returns.iter().any(|r| body.contains(r)) {
                continue;
            }
            let inductions = inductions(func, &definition, header, entry_edge, back_edge);
            let recurrences = if back_edge.0 == header { vec![] } else { recurrences(func, header, back_edge, &body) };
            let exit_test = exit_test(func, header, &body, &inductions);
            loops.push(CountedLoop { header, entry_edge, back_edge, body, inductions, recurrences, exit_test });
        }
        let mut containing: HashMap<Block, Vec<usize>> = HashMap::default();
        for (k, l) in loops.iter().enumerate() {
            for &b in &l.body {
                containing.entry(b).or_default().push(k);
            }
        }
        let by_header = loops.iter().enumerate().map(|(k, l)| (l.header, k)).collect();
        Loops { loops, containing, by_header }
    }

    /// The loops containing `b` (indices into `loops`, in order).
    pub fn containing(&self, b: Block) -> Vec<usize> {
        self.containing.get(&b).cloned().unwrap_or_default()
    }

    /// The loops the edge `from -> to` leaves (containing `from` but not `to`), in order:
    /// `f_fwd` pushes their trip counts in this order on that edge.
    pub fn exited(&self, from: Block, to: Block) -> Vec<usize> {
        self.containing(from).into_iter().filter(|&k| !self.loops[k].body.contains(&to)).collect()
    }

    /// The counted loop headed by `b`.
    pub fn headed_by(&self, b: Block) -> Option<usize> {
        self.by_header.get(&b).copied()
    }
}

/// The loop's [`ExitTest`], if the header's branch is the only way out and tests an induction
/// variable stepping by one against a bound defined before the loop.
fn exit_test(func: &Function, header: Block, body: &HashSet<Block>, inductions: &[Induction]) -> Option<ExitTest> {
    let leaves =
        |b: Block| func.block(b).term.as_ref().is_some_and(|t| t.successors().iter().any(|c| !body.contains(&c.block)));
    if body.iter().any(|&b| b != header && leaves(b)) {
        return None;
    }
    let Some(Terminator::Branch { cond, then_dest, else_dest }) = &func.block(header).term else { return None };
    let stays_on_true = body.contains(&then_dest.block);
    if stays_on_true == body.contains(&else_dest.block) {
        return None;
    }
    let exit = if stays_on_true { else_dest.block } else { then_dest.block };
    let test = func.block(header).insts.iter().find(|i| i.results[..] == [*cond] && i.op == Opcode::ICmp)?;
    let (Imm::Cond(cc), &[a, b]) = (test.imm, test.args.as_slice()) else { return None };
    let (induction, bound, cc) = match (inductions.iter().find(|i| i.iv == a), inductions.iter().find(|i| i.iv == b)) {
        (Some(&i), None) => (i, b, cc),
        (None, Some(&i)) => (i, a, cc.swapped()),
        _ => return None,
    };
    let cond = if stays_on_true { cc } else { cc.complement() };
    let defined_in_loop = body.iter().any(|&blk| {
        let block = func.block(blk);
        block.params.contains(&bound) || block.insts.iter().any(|i| i.results.contains(&bound))
    });
    let step =
        func.blocks.iter().flat_map(|b| &b.insts).find(|i| i.results[..] == [induction.step] && i.op == Opcode::IConst);
    let up = match step.map(|i| i.imm) {
        Some(Imm::I64(1)) => !induction.subtract,
        Some(Imm::I64(-1)) => induction.subtract,
        _ => return None,
    };
    let fits = matches!(
        (up, cond),
        (_, CondCode::Ne) | (true, CondCode::Lt | CondCode::Le) | (false, CondCode::Gt | CondCode::Ge)
    );
    (!defined_in_loop && fits).then_some(ExitTest { induction, bound, cond, up, exit })
}

/// The header plus every block that reaches `latch` backwards without passing the header.
fn natural_loop(cfg: &ControlFlow, header: Block, latch: Block) -> HashSet<Block> {
    let mut body: HashSet<Block> = [header].into_iter().collect();
    let mut work = vec![latch];
    while let Some(b) = work.pop() {
        if body.insert(b) {
            work.extend(cfg.predecessors(b).iter().copied().filter(|p| cfg.is_reachable(*p)));
        }
    }
    body
}

/// Header parameters updated as `iv + step`, `step + iv` or `iv - step` on the back edge.
fn inductions(
    func: &Function,
    definition: &HashMap<Value, (Opcode, &[Value])>,
    header: Block,
    entry: (Block, usize),
    back: (Block, usize),
) -> Vec<Induction> {
    let arg = |(b, slot): (Block, usize), k: usize| -> Option<Value> {
        let term: &Terminator = func.block(b).term.as_ref()?;
        term.successors().get(slot)?.args.get(k).copied()
    };
    let mut found = vec![];
    for (k, &iv) in func.block(header).params.iter().enumerate() {
        if func.ty(iv) != Type::I64 {
            continue;
        }
        let (Some(init), Some(next)) = (arg(entry, k), arg(back, k)) else { continue };
        let (step, subtract) = match definition.get(&next) {
            Some(&(Opcode::IAdd, &[a, b])) if a == iv && b != iv => (b, false),
            Some(&(Opcode::IAdd, &[a, b])) if b == iv && a != iv => (a, false),
            Some(&(Opcode::ISub, &[a, b])) if a == iv && b != iv => (b, true),
            _ => continue,
        };
        found.push(Induction { iv, init, step, subtract });
    }
    found
}

/// Integer header parameters updated on the back edge by adding or subtracting a step that is
/// either defined before the loop or computed in the latch with one `iadd`, `isub` or `imul`.
fn recurrences(
    func: &Function,
    header: Block,
    (latch, slot): (Block, usize),
    body: &HashSet<Block>,
) -> Vec<Recurrence> {
    let Some(back) = func.block(latch).term.as_ref().and_then(|t| t.successors().get(slot).map(|c| (*c).clone()))
    else {
        return vec![];
    };
    let in_latch: HashMap<Value, (Opcode, &[Value])> = func
        .block(latch)
        .insts
        .iter()
        .filter(|i| i.results.len() == 1)
        .map(|i| (i.results[0], (i.op, i.args.as_slice())))
        .collect();
    let in_loop = |v: Value| {
        body.iter().any(|&b| {
            let block = func.block(b);
            block.params.contains(&v) || block.insts.iter().any(|i| i.results.contains(&v))
        })
    };
    let mut found = vec![];
    for (&param, &next) in func.block(header).params.iter().zip(&back.args) {
        // A step that does not change in the loop makes an induction variable; the plan tries
        // that first, and a recurrence where its start or step are not known once per call.
        if func.ty(param) != Type::I64 {
            continue;
        }
        let Some(&(op, &[a, b])) = in_latch.get(&next) else { continue };
        let (step, subtract) = match op {
            Opcode::IAdd if a == param && b != param => (b, false),
            Opcode::IAdd if b == param && a != param => (a, false),
            Opcode::ISub if a == param && b != param => (b, true),
            _ => continue,
        };
        let step = match in_latch.get(&step) {
            Some(&(step_op @ (Opcode::IAdd | Opcode::ISub | Opcode::IMul), &[x, y])) if x != param && y != param => {
                Step::Op(step_op, [x, y])
            }
            None if !in_loop(step) => Step::Value(step),
            _ => continue,
        };
        found.push(Recurrence { param, subtract, step });
    }
    found
}
