//! Preaccumulation of forward mode's tangent arithmetic.
//!
//! The forward transform emits each instruction's tangent on its own: `x · x` gets `x·dx +
//! x·dx`, and `100 · (y − x²)²` a chain of four lane operations for what is one multiply-add of
//! the tangents it starts from. With W lanes every lane operation costs W multiplies or adds, a
//! scalar operation one. So within a block, a tree of tangent operations whose inner values
//! have no other use is rewritten as `Σ c_k · leaf_k`: the coefficients `c_k` are products and
//! sums of scalars (partials), computed once, and each leaf — a tangent the tree starts from —
//! is scaled once however often it appears, each term after the first as a fused multiply-add
//! (`fma`) onto the sum. Rosenbrock's loop body goes from ten lane operations to three.
//!
//! The rewrite only reassociates products and sums of the tangent arithmetic, never the primal,
//! and only where it saves work by a cost that does not depend on W (a lane operation counts two,
//! a scalar operation one): a function's lanes compute bit for bit what its W = 1 sweeps
//! compute, as before.

use jitdiff_ir::{Function, Imm, InstData, Opcode, Type, Value};
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

/// How the forward transform computed one value of its tangent arithmetic (W lanes, or one
/// `f64` at W = 1), recorded as it emitted it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum LaneOp {
    /// `a + b`.
    Add(Value, Value),
    /// `a − b`.
    Sub(Value, Value),
    /// `−a`.
    Neg(Value),
    /// `coef · lane`, `coef` a scalar (`f64`), broadcast at W > 1.
    Scale { coef: Value, lane: Value },
    /// `fma coef, lane, acc`: `acc + coef · lane` with one rounding.
    MulAdd { coef: Value, lane: Value, acc: Value },
}

/// Most leaves of a rewritten tree, monomials of one coefficient and factors of a monomial: a
/// tree past them keeps its subtree as it is, so that the rewrite stays linear in the function.
const MAX_LEAVES: usize = 8;
const MAX_MONOMIALS: usize = 4;
const MAX_FACTORS: usize = 6;

/// `constant · factors[0] · factors[1] · …`, a product of scalars.
#[derive(Clone, Debug, PartialEq)]
struct Monomial {
    constant: f64,
    factors: Vec<Value>,
}

/// `Σ coefficient_k · leaf_k`, each coefficient a sum of monomials.
#[derive(Clone, Debug, Default)]
struct Form {
    terms: Vec<(Value, Vec<Monomial>)>,
    /// Lane operations of the tree it replaces.
    nodes: usize,
}

impl Form {
    fn leaf(v: Value) -> Form {
        Form { terms: vec![(v, vec![Monomial { constant: 1.0, factors: vec![] }])], nodes: 0 }
    }

    fn scale(mut self, constant: f64, factor: Option<Value>) -> Option<Form> {
        for monomial in self.terms.iter_mut().flat_map(|(_, c)| c.iter_mut()) {
            monomial.constant *= constant;
            if let Some(f) = factor {
                monomial.factors.push(f);
                if monomial.factors.len() > MAX_FACTORS {
                    return None;
                }
            }
        }
        Some(self)
    }

    fn add(mut self, other: Form) -> Option<Form> {
        self.nodes += other.nodes;
        for (leaf, monomials) in other.terms {
            let Some((_, mine)) = self.terms.iter_mut().find(|(l, _)| *l == leaf) else {
                self.terms.push((leaf, monomials));
                continue;
            };
            for m in monomials {
                // `a·x + b·x` is `(a + b)·x`: one product where the tree had two.
                match mine.iter_mut().find(|n| n.factors == m.factors) {
                    Some(n) => n.constant += m.constant,
                    None => mine.push(m),
                }
            }
            if mine.len() > MAX_MONOMIALS {
                return None;
            }
        }
        (self.terms.len() <= MAX_LEAVES).then_some(self)
    }

    /// The terms in the order they are summed: ±1 coefficients first (the sum starts from a
    /// tangent, not a product), then the rest, each a fused multiply-add onto the sum; block
    /// parameters last of all, so that a tangent carried around a loop (`d_acc` of `acc + …`)
    /// waits for one operation per iteration, not one per term.
    fn ordered(&self, carried: &HashSet<Value>) -> Vec<&(Value, Vec<Monomial>)> {
        let rank = |(leaf, c): &&(Value, Vec<Monomial>)| (carried.contains(leaf), unit_sign(c).is_none());
        let mut ordered: Vec<_> = self.terms.iter().collect();
        ordered.sort_by_key(rank);
        ordered
    }

    /// Lane operations to compute the form: one per term after the first (a sum or a fused
    /// multiply-add), one for a first term with a coefficient other than ±1, and a negation when
    /// every ±1 term is subtracted and one comes first.
    fn lane_ops(&self, carried: &HashSet<Value>) -> usize {
        let ordered = self.ordered(carried);
        let first_scaled = ordered.first().is_some_and(|(_, c)| unit_sign(c).is_none());
        // The sum is held negated from a subtracted first term until a ±1 term of the other
        // sign (a product keeps the sign it finds).
        let mut negated = None;
        for (_, c) in &ordered {
            if let Some(sign) = unit_sign(c) {
                negated = Some(match negated {
                    None => sign < 0.0,
                    Some(n) => n && sign < 0.0,
                });
            }
        }
        ordered.len() - 1 + usize::from(first_scaled) + usize::from(negated == Some(true) && !first_scaled)
    }

    /// Scalar operations to compute the coefficients.
    fn scalar_ops(&self) -> usize {
        self.terms
            .iter()
            .filter(|(_, c)| unit_sign(c).is_none())
            .map(|(_, c)| {
                let products: usize =
                    c.iter().map(|m| m.factors.len().saturating_sub(1) + usize::from(m.constant != 1.0)).sum();
                products + c.len() - 1
            })
            .sum()
    }
}

/// `Some(±1)` for a coefficient that is the constant 1 or −1.
fn unit_sign(coefficient: &[Monomial]) -> Option<f64> {
    match coefficient {
        [m] if m.factors.is_empty() && m.constant.abs() == 1.0 => Some(m.constant),
        _ => None,
    }
}

/// Rewrite the trees of recorded tangent operations of `func` (see the module docs). Dead
/// operations stay behind for DCE.
pub(crate) fn preaccumulate(func: &mut Function, ops: &HashMap<Value, LaneOp>) {
    if ops.is_empty() {
        return;
    }
    let ops = &merge_repeats(func, ops);
    let mut constants: HashMap<Value, f64> = HashMap::default();
    // Uses by instruction (an instruction reading a value twice uses it once) and the user.
    let mut uses: HashMap<Value, (usize, Option<Value>)> = HashMap::default();
    let mut where_defined: HashMap<Value, usize> = HashMap::default();
    for (b, block) in func.blocks.iter().enumerate() {
        for inst in &block.insts {
            if let (Opcode::FConst, Imm::F64(c), [r]) = (inst.op, inst.imm, inst.results.as_slice()) {
                constants.insert(*r, c);
            }
            let user = match inst.results.as_slice() {
                [r] if ops.contains_key(r) => Some(*r),
                _ => None,
            };
            for r in &inst.results {
                where_defined.insert(*r, b);
            }
            let mut seen: smallvec::SmallVec<[Value; 4]> = smallvec::SmallVec::new();
            for &a in &inst.args {
                if !seen.contains(&a) {
                    seen.push(a);
                    let entry = uses.entry(a).or_insert((0, None));
                    entry.0 += 1;
                    entry.1 = user;
                }
            }
        }
        if let Some(term) = &block.term {
            for a in term.uses() {
                let entry = uses.entry(a).or_insert((0, None));
                entry.0 += 1;
                entry.1 = None;
            }
        }
    }
    let trees = Trees { ops, constants: &constants, uses: &uses, where_defined: &where_defined };
    let carried: HashSet<Value> = func.blocks.iter().flat_map(|b| b.params.iter().copied()).collect();
    // Each value's form once, operands first (block order is definition order): a value whose
    // form passes the limits has none and is a leaf of its user's form.
    let mut forms: HashMap<Value, Option<Form>> = HashMap::default();
    for block in &func.blocks {
        for inst in &block.insts {
            if let [r] = inst.results.as_slice()
                && ops.contains_key(r)
            {
                let form = trees.form(*r, &forms);
                forms.insert(*r, form);
            }
        }
    }
    // Roots: recorded values not folded into a single user in their block.
    let mut roots: Vec<Value> = ops.keys().copied().filter(|&v| !trees.foldable(v)).collect();
    let mut rewrites: HashMap<Value, Form> = HashMap::default();
    while let Some(root) = roots.pop() {
        match &forms[&root] {
            Some(form)
                if form.lane_ops(&carried) > 0 && 2 * form.lane_ops(&carried) + form.scalar_ops() < 2 * form.nodes =>
            {
                rewrites.insert(root, form.clone());
                // Values the tree stopped at keep their instructions: their own trees may pay.
                let mut inside = vec![root];
                while let Some(v) = inside.pop() {
                    for a in trees.operands(v) {
                        match forms.get(&a) {
                            Some(Some(_)) if trees.foldable(a) => inside.push(a),
                            Some(None) if trees.foldable(a) => roots.push(a),
                            _ => {}
                        }
                    }
                }
            }
            // Not worth it: the root stays, its foldable operands become roots of their own.
            _ => roots.extend(trees.operands(root).into_iter().filter(|&a| trees.foldable(a))),
        }
    }
    if rewrites.is_empty() {
        return;
    }
    for b in 0..func.blocks.len() {
        let insts = std::mem::take(&mut func.blocks[b].insts);
        let mut out = Vec::with_capacity(insts.len());
        for inst in insts {
            match inst.results.as_slice() {
                [r] if rewrites.contains_key(r) => {
                    let form = &rewrites[r];
                    emit_form(func, &mut out, *r, form, &carried);
                }
                _ => out.push(inst),
            }
        }
        func.blocks[b].insts = out;
    }
}

/// Merge repeated operations of one block (`x · x` gets `x·dx` twice), so that a value used
/// twice by one repeat each counts as used once: what CSE would do later, done first on the
/// recorded operations. Returns the operations left, reading the merged values.
fn merge_repeats(func: &mut Function, ops: &HashMap<Value, LaneOp>) -> HashMap<Value, LaneOp> {
    let mut merged: HashMap<Value, Value> = HashMap::default();
    let mut first: HashMap<(usize, LaneOp), Value> = HashMap::default();
    let mut kept: HashMap<Value, LaneOp> = HashMap::default();
    for (b, block) in func.blocks.iter().enumerate() {
        for inst in &block.insts {
            let [r] = inst.results.as_slice() else { continue };
            let Some(&op) = ops.get(r) else { continue };
            let to = |v: Value| merged.get(&v).copied().unwrap_or(v);
            let op = match op {
                LaneOp::Add(a, b) => LaneOp::Add(to(a), to(b)),
                LaneOp::Sub(a, b) => LaneOp::Sub(to(a), to(b)),
                LaneOp::Neg(a) => LaneOp::Neg(to(a)),
                LaneOp::Scale { coef, lane } => LaneOp::Scale { coef, lane: to(lane) },
                LaneOp::MulAdd { coef, lane, acc } => LaneOp::MulAdd { coef, lane: to(lane), acc: to(acc) },
            };
            match first.get(&(b, op)) {
                Some(&earlier) => {
                    merged.insert(*r, earlier);
                }
                None => {
                    first.insert((b, op), *r);
                    kept.insert(*r, op);
                }
            }
        }
    }
    if !merged.is_empty() {
        // The earlier copy precedes the repeat in its block, so it dominates every use.
        let to = |v: Value| merged.get(&v).copied().unwrap_or(v);
        for block in &mut func.blocks {
            block.insts.retain(|inst| !matches!(inst.results.as_slice(), [r] if merged.contains_key(r)));
            for inst in &mut block.insts {
                inst.args.iter_mut().for_each(|a| *a = to(*a));
            }
            if let Some(term) = &mut block.term {
                term.map_uses(to);
            }
        }
    }
    kept
}

struct Trees<'a> {
    ops: &'a HashMap<Value, LaneOp>,
    constants: &'a HashMap<Value, f64>,
    uses: &'a HashMap<Value, (usize, Option<Value>)>,
    where_defined: &'a HashMap<Value, usize>,
}

impl Trees<'_> {
    /// Is `v` a recorded value whose only use is a recorded operation of the same block?
    fn foldable(&self, v: Value) -> bool {
        self.ops.contains_key(&v)
            && matches!(self.uses.get(&v), Some(&(1, Some(user)))
                if self.where_defined.get(&user) == self.where_defined.get(&v))
    }

    fn operands(&self, v: Value) -> Vec<Value> {
        match self.ops[&v] {
            LaneOp::Add(a, b) | LaneOp::Sub(a, b) => vec![a, b],
            LaneOp::Neg(a) => vec![a],
            LaneOp::Scale { lane, .. } => vec![lane],
            LaneOp::MulAdd { lane, acc, .. } => vec![acc, lane],
        }
    }

    fn scaled(&self, form: Form, coef: Value) -> Option<Form> {
        match self.constants.get(&coef) {
            Some(&c) => form.scale(c, None),
            None => form.scale(1.0, Some(coef)),
        }
    }

    /// The form of the tree at `v`, from its operands' `forms`; `None` past the limits.
    fn form(&self, v: Value, forms: &HashMap<Value, Option<Form>>) -> Option<Form> {
        let operand = |a: Value| match forms.get(&a) {
            Some(Some(form)) if self.foldable(a) => form.clone(),
            _ => Form::leaf(a),
        };
        let form = match self.ops[&v] {
            LaneOp::Add(a, b) if a == b => operand(a).scale(2.0, None),
            LaneOp::Add(a, b) => operand(a).add(operand(b)),
            LaneOp::Sub(a, b) => operand(a).add(operand(b).scale(-1.0, None)?),
            LaneOp::Neg(a) => operand(a).scale(-1.0, None),
            LaneOp::Scale { coef, lane } => self.scaled(operand(lane), coef),
            LaneOp::MulAdd { coef, lane, acc } => operand(acc).add(self.scaled(operand(lane), coef)?),
        };
        form.map(|mut f| {
            f.nodes += 1;
            f
        })
    }
}

/// Emit `Σ c_k · leaf_k` into `out`, its last instruction defining `result`.
fn emit_form(func: &mut Function, out: &mut Vec<InstData>, result: Value, form: &Form, carried: &HashSet<Value>) {
    let lane_type = func.ty(result);
    let push = |func: &mut Function, out: &mut Vec<InstData>, op: Opcode, args: &[Value], imm: Imm, ty: Type| {
        let r = func.new_value(ty);
        out.push(InstData { op, args: args.into(), imm, results: [r].as_slice().into() });
        r
    };
    // `sign · coefficient`, broadcast to the lanes.
    let coefficient = |func: &mut Function, out: &mut Vec<InstData>, monomials: &[Monomial], sign: f64| {
        let mut scalar: Option<Value> = None;
        for m in monomials {
            let constant = m.constant * sign;
            let mut product: Option<Value> = None;
            for &f in &m.factors {
                product = Some(match product {
                    None => f,
                    Some(p) => push(func, out, Opcode::FMul, &[p, f], Imm::None, Type::F64),
                });
            }
            let monomial = match product {
                Some(p) if constant == 1.0 => p,
                Some(p) if constant == -1.0 => push(func, out, Opcode::FNeg, &[p], Imm::None, Type::F64),
                Some(p) => {
                    let c = push(func, out, Opcode::FConst, &[], Imm::F64(constant), Type::F64);
                    push(func, out, Opcode::FMul, &[c, p], Imm::None, Type::F64)
                }
                None => push(func, out, Opcode::FConst, &[], Imm::F64(constant), Type::F64),
            };
            scalar = Some(match scalar {
                None => monomial,
                Some(s) => push(func, out, Opcode::FAdd, &[s, monomial], Imm::None, Type::F64),
            });
        }
        let scalar = scalar.expect("a coefficient has a monomial");
        if lane_type == Type::F64 {
            scalar
        } else {
            push(func, out, Opcode::Splat, &[scalar], Imm::Type(lane_type), lane_type)
        }
    };
    // The sum so far and whether it holds its negation.
    let mut sum: Option<(Value, bool)> = None;
    for (leaf, monomials) in form.ordered(carried) {
        sum = Some(match (unit_sign(monomials), sum) {
            (Some(sign), None) => (*leaf, sign < 0.0),
            (Some(sign), Some((acc, acc_negative))) if (sign < 0.0) == acc_negative => {
                (push(func, out, Opcode::FAdd, &[acc, *leaf], Imm::None, lane_type), acc_negative)
            }
            (Some(_), Some((acc, false))) => {
                (push(func, out, Opcode::FSub, &[acc, *leaf], Imm::None, lane_type), false)
            }
            (Some(_), Some((acc, true))) => (push(func, out, Opcode::FSub, &[*leaf, acc], Imm::None, lane_type), false),
            (None, None) => {
                let c = coefficient(func, out, monomials, 1.0);
                (push(func, out, Opcode::FMul, &[c, *leaf], Imm::None, lane_type), false)
            }
            // A negated sum takes the term negated, and stays negated.
            (None, Some((acc, acc_negative))) => {
                let c = coefficient(func, out, monomials, if acc_negative { -1.0 } else { 1.0 });
                (push(func, out, Opcode::Fma, &[c, *leaf, acc], Imm::None, lane_type), acc_negative)
            }
        });
    }
    let (value, negative) = sum.expect("a rewritten form has a term");
    if negative {
        push(func, out, Opcode::FNeg, &[value], Imm::None, lane_type);
    }
    // The last instruction defines the root itself, so its uses stay as they are.
    let last = out.last_mut().expect("a rewritten form emits an operation");
    debug_assert!(last.results[0] != result);
    last.results[0] = result;
}

#[cfg(test)]
mod tests {
    use crate::derive_forward;
    use jitdiff_ir::{ArgValue, Interpreter, Module, Opcode, RuntimeValue, Type, parse_module};

    const ROSENBROCK_TERM: &str = "func @f(x: f64, y: f64) -> f64 {
entry:
    hundred = fconst 100.0
    one = fconst 1.0
    x_sq = fmul x, x
    valley = fsub y, x_sq
    valley_sq = fmul valley, valley
    valley_term = fmul hundred, valley_sq
    offset = fsub one, x
    offset_sq = fmul offset, offset
    r = fadd valley_term, offset_sq
    ret r
}
";

    /// Lane arithmetic (`fadd`, `fsub`, `fmul`, `fneg`, `fma` of `f64xW`) of the derived function.
    fn lane_ops(module: &Module, name: &str) -> usize {
        let f = module.func_by_name(name).expect("the derived function exists");
        let linear = [Opcode::FAdd, Opcode::FSub, Opcode::FMul, Opcode::FNeg, Opcode::Fma];
        f.blocks
            .iter()
            .flat_map(|b| &b.insts)
            .filter(|i| {
                linear.contains(&i.op) && matches!(i.results.as_slice(), [r] if matches!(f.ty(*r), Type::F64x(_)))
            })
            .count()
    }

    /// The tangents of `entry`'s first result at `point` in `lanes` directions (lane-major), by
    /// one sweep with that many lanes and by one W = 1 sweep per direction.
    fn sweeps(text: &str, point: &[f64], directions: &[Vec<f64>]) -> (Vec<f64>, Vec<f64>, Module, String) {
        let module = parse_module(text).expect("the test program parses");
        let wrt = vec![true; point.len()];
        let width = directions.len();
        let batched = derive_forward(&module, "f", &wrt, width as u8).expect("W lanes derive");
        let mut args: Vec<ArgValue> = point.iter().map(|&x| ArgValue::F64(x)).collect();
        args.extend((0..point.len()).map(|i| ArgValue::Vector(directions.iter().map(|d| d[i]).collect())));
        let out = Interpreter::new(&batched.module).call(&batched.name, &mut args).expect("the sweep runs");
        let RuntimeValue::Vector(lanes) = &out[1] else { panic!("a vector tangent, got {:?}", out[1]) };
        let scalar = derive_forward(&module, "f", &wrt, 1).expect("W = 1 derives");
        let singles = directions
            .iter()
            .map(|d| {
                let mut args: Vec<ArgValue> = point.iter().map(|&x| ArgValue::F64(x)).collect();
                args.extend(d.iter().map(|&t| ArgValue::F64(t)));
                match Interpreter::new(&scalar.module).call(&scalar.name, &mut args).expect("the sweep runs")[1] {
                    RuntimeValue::F64(t) => t,
                    ref other => panic!("an f64 tangent, got {other:?}"),
                }
            })
            .collect();
        (lanes.to_vec(), singles, batched.module, batched.name)
    }

    #[test]
    fn rosenbrock_term_takes_two_lane_operations_and_lanes_equal_scalar_sweeps() {
        let directions = vec![vec![1.0, 0.0], vec![0.0, 1.0], vec![0.5, -2.0], vec![-1.25, 3.0]];
        let (x, y) = (-1.2, 1.0);
        let (lanes, singles, module, name) = sweeps(ROSENBROCK_TERM, &[x, y], &directions);
        // fma(c_x, dx, c_y·dy), where the transform emits nine: x·dx twice summed, dy minus
        // that, valley·d_valley twice summed, 100·that, offset·dx twice summed, the difference.
        assert_eq!(lane_ops(&module, &name), 2, "{}", jitdiff_ir::print_module(&module));
        let (dfdx, dfdy) = (-400.0 * x * (y - x * x) - 2.0 * (1.0 - x), 200.0 * (y - x * x));
        for (lane, d) in directions.iter().enumerate() {
            assert_eq!(lanes[lane].to_bits(), singles[lane].to_bits(), "lane {lane}");
            let exact = dfdx * d[0] + dfdy * d[1];
            assert!(
                (lanes[lane] - exact).abs() <= 1e-13 * exact.abs().max(1.0),
                "lane {lane}: {} vs {exact}",
                lanes[lane]
            );
        }
    }

    #[test]
    fn a_tree_the_rewrite_would_grow_is_left_as_it_is() {
        // d(q·(x − m)) = (x − m)·dq + q·(dx − dm): three lane operations (a difference, a
        // product, a fused multiply-add), where the rewrite would take three as well and three
        // scalar products besides.
        let text =
            "func @f(q: f64, x: f64, m: f64) -> f64 {\nentry:\n    c = fsub x, m\n    r = fmul q, c\n    ret r\n}\n";
        let directions = vec![vec![1.0, 2.0, 3.0], vec![-1.0, 0.5, 0.25]];
        let (lanes, singles, module, name) = sweeps(text, &[2.0, 5.0, 1.5], &directions);
        assert_eq!(lane_ops(&module, &name), 3);
        let text = jitdiff_ir::print_module(&module);
        assert!(text.contains("fsub") && text.contains("fma"), "{text}");
        for (lane, d) in directions.iter().enumerate() {
            assert_eq!(lanes[lane].to_bits(), singles[lane].to_bits());
            assert_eq!(lanes[lane], 3.5 * d[0] + 2.0 * (d[1] - d[2]));
        }
    }

    #[test]
    fn long_chains_are_rewritten_piece_by_piece() {
        // acc ← acc·x + x, 3,000 times: one tree of 9,000 lane operations, cut at the limits.
        let mut text = String::from("func @f(x: f64) -> f64 {\nentry:\n    a0 = fmul x, x\n");
        let steps = 3000;
        for k in 0..steps {
            text.push_str(&format!("    m{k} = fmul a{k}, x\n    a{} = fadd m{k}, x\n", k + 1));
        }
        text.push_str(&format!("    ret a{steps}\n}}\n"));
        let x = 0.999;
        let directions = vec![vec![1.0], vec![-0.5]];
        let (lanes, singles, module, name) = sweeps(&text, &[x], &directions);
        let ops = lane_ops(&module, &name);
        assert!(ops < 4 * steps, "{ops} lane operations");
        // The derivative of the recurrence, by the product rule step by step.
        let (mut a, mut da) = (x * x, 2.0 * x);
        for _ in 0..steps {
            (a, da) = (a * x + x, da * x + a + 1.0);
        }
        assert!(a.is_finite());
        for (lane, d) in directions.iter().enumerate() {
            assert_eq!(lanes[lane].to_bits(), singles[lane].to_bits());
            let exact = da * d[0];
            assert!((lanes[lane] - exact).abs() <= 1e-9 * exact.abs(), "lane {lane}: {} vs {exact}", lanes[lane]);
        }
    }
}
