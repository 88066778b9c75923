//! Inlining: calls of small module functions replaced by the callee's body.

use crate::function::{Block, BlockCall, Callee, FuncId, Function, Imm, InstData, Module, Terminator, Value};
use crate::opcode::Opcode;
use rustc_hash::FxHashMap as HashMap;

/// Replace calls of module functions by copies of their bodies, where `wanted(callee)` says so
/// and the callee cannot reach itself through calls (recursion is never inlined) and has no
/// `alloc` (a local array is fresh on every call, and must stay in an entry block). Callees are
/// processed before their callers, so a chain of small functions collapses into its caller.
/// A caller stops growing once it has `max_insts` instructions.
///
/// The inlined body runs exactly as the call did — same operations on the same operands, the
/// same memory, the same errors (reported at the inlined copy's blocks, named
/// `<callee>_<block>`) — except that it no longer counts towards the call-depth limit.
/// Differentiation gains most: a derived callee records its own state around every call and
/// has a calling convention to pay, while an inlined body is one more part of the caller, whose
/// loop-invariant work (a callee's per-call setup) can leave the caller's loops.
///
/// ```
/// use jitdiff_ir::{parse_module, passes, print_module};
/// let mut m = parse_module("func @f(x: f64) -> f64 {\nentry:\n    y = call @sq(x)\n    ret y\n}\nfunc @sq(a: f64) -> f64 {\nentry:\n    b = fmul a, a\n    ret b\n}\n").unwrap();
/// passes::inline_calls(&mut m, |_, _| true, 1000);
/// let text = print_module(&m);
/// assert!(!text[..text.find("func @sq").unwrap()].contains("call"), "{text}");
/// ```
pub fn inline_calls(module: &mut Module, wanted: impl Fn(FuncId, &Function) -> bool, max_insts: usize) {
    inline_sites(module, |site| wanted(site.callee_id, site.callee), max_insts);
}

/// One call [`inline_sites`] may inline: instruction `inst` of block `block` of `caller`
/// (module function `caller_id`) calls `callee` (`callee_id`).
#[derive(Clone, Copy, Debug)]
pub struct CallSite<'a> {
    /// The calling function.
    pub caller: &'a Function,
    /// Its id in the module.
    pub caller_id: FuncId,
    /// The block of the call.
    pub block: Block,
    /// The call's position among the block's instructions.
    pub inst: usize,
    /// The called function.
    pub callee: &'a Function,
    /// Its id in the module.
    pub callee_id: FuncId,
}

/// [`inline_calls`] deciding per call site: `wanted(site)` says whether to inline it (the
/// rules about recursion, `alloc` and `max_insts` hold as there). A caller in which nothing is
/// inlined is left exactly as it was.
///
/// ```
/// use jitdiff_ir::{parse_module, passes, print_module};
/// let mut m = parse_module("func @f(x: f64) -> f64 {\nentry:\n    y = call @sq(x)\n    z = call @sq(y)\n    ret z\n}\nfunc @sq(a: f64) -> f64 {\nentry:\n    b = fmul a, a\n    ret b\n}\n").unwrap();
/// // Only the first call of each block.
/// passes::inline_sites(&mut m, |site| site.inst == 0 && site.block.index() == 0, 1000);
/// let text = print_module(&m);
/// assert_eq!(text[..text.find("func @sq").unwrap()].matches("call @sq").count(), 1, "{text}");
/// ```
pub fn inline_sites(module: &mut Module, wanted: impl Fn(CallSite<'_>) -> bool, max_insts: usize) {
    let n = module.functions.len();
    let callees: Vec<Vec<FuncId>> = (0..n).map(|f| calls_of(&module.functions[f])).collect();
    let recursive: Vec<bool> = (0..n).map(|f| reaches(&callees, FuncId(f as u32), FuncId(f as u32))).collect();
    for f in post_order(&callees) {
        let mut changed = false;
        loop {
            let caller = &module.functions[f.index()];
            let size: usize = caller.blocks.iter().map(|b| b.insts.len()).sum();
            let site = caller.blocks.iter().enumerate().find_map(|(b, block)| {
                block
                    .insts
                    .iter()
                    .enumerate()
                    .position(|(k, inst)| match (inst.op, inst.imm) {
                        (Opcode::Call, Imm::Callee(Callee::Func(g))) => {
                            g != f
                                && g.index() < n
                                && !recursive[g.index()]
                                && !module.functions[g.index()].allocates()
                                && size + body_size(&module.functions[g.index()]) <= max_insts
                                && wanted(CallSite {
                                    caller,
                                    caller_id: f,
                                    block: Block(b as u32),
                                    inst: k,
                                    callee: &module.functions[g.index()],
                                    callee_id: g,
                                })
                        }
                        _ => false,
                    })
                    .map(|k| (Block(b as u32), k))
            });
            let Some((block, k)) = site else { break };
            let Imm::Callee(Callee::Func(g)) = module.functions[f.index()].block(block).insts[k].imm else {
                unreachable!("found a call")
            };
            let callee = module.functions[g.index()].clone();
            inline_one(&mut module.functions[f.index()], block, k, &callee);
            changed = true;
        }
        if changed {
            module.functions[f.index()].canonicalize();
        }
    }
}

/// Does some function of `module` reach itself through calls (direct or mutual recursion)?
/// Without recursion a chain of calls visits each function at most once.
///
/// ```
/// use jitdiff_ir::{parse_module, passes};
/// let leaf = "func @f(x: f64) -> f64 {\nentry:\n    y = call @g(x)\n    ret y\n}\nfunc @g(a: f64) -> f64 {\nentry:\n    ret a\n}\n";
/// assert!(!passes::has_recursion(&parse_module(leaf).unwrap()));
/// let cycle = "func @f(x: f64) -> f64 {\nentry:\n    y = call @g(x)\n    ret y\n}\nfunc @g(a: f64) -> f64 {\nentry:\n    b = call @f(a)\n    ret b\n}\n";
/// assert!(passes::has_recursion(&parse_module(cycle).unwrap()));
/// ```
pub fn has_recursion(module: &Module) -> bool {
    let callees: Vec<Vec<FuncId>> = module.functions.iter().map(calls_of).collect();
    (0..callees.len()).any(|f| reaches(&callees, FuncId(f as u32), FuncId(f as u32)))
}

fn body_size(f: &Function) -> usize {
    f.blocks.iter().map(|b| b.insts.len() + 1).sum()
}

/// The module functions `f` calls.
fn calls_of(f: &Function) -> Vec<FuncId> {
    let mut out: Vec<FuncId> = f
        .blocks
        .iter()
        .flat_map(|b| &b.insts)
        .filter_map(|i| match i.imm {
            Imm::Callee(Callee::Func(g)) if i.op == Opcode::Call => Some(g),
            _ => None,
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Can `from` reach `to` through one or more calls?
fn reaches(callees: &[Vec<FuncId>], from: FuncId, to: FuncId) -> bool {
    let mut seen = vec![false; callees.len()];
    let mut stack: Vec<FuncId> = callees.get(from.index()).cloned().unwrap_or_default();
    while let Some(g) = stack.pop() {
        if g == to {
            return true;
        }
        if g.index() < callees.len() && !std::mem::replace(&mut seen[g.index()], true) {
            stack.extend(&callees[g.index()]);
        }
    }
    false
}

/// Every function once, each after the functions it calls (where calls do not form a cycle).
fn post_order(callees: &[Vec<FuncId>]) -> Vec<FuncId> {
    let n = callees.len();
    let mut state = vec![0u8; n]; // 0 new, 1 on the stack, 2 done
    let mut order = Vec::with_capacity(n);
    for root in 0..n {
        if state[root] != 0 {
            continue;
        }
        let mut stack: Vec<(usize, usize)> = vec![(root, 0)];
        state[root] = 1;
        while let Some((f, next)) = stack.pop() {
            match callees[f].get(next) {
                Some(g) => {
                    stack.push((f, next + 1));
                    if g.index() < n && state[g.index()] == 0 {
                        state[g.index()] = 1;
                        stack.push((g.index(), 0));
                    }
                }
                None => {
                    state[f] = 2;
                    order.push(FuncId(f as u32));
                }
            }
        }
    }
    order
}

/// Replace the call at instruction `k` of `block` in `f` by a copy of `callee`'s body: the
/// block is split after the call, the copy's returns jump to the second half, whose parameters
/// are the call's results.
fn inline_one(f: &mut Function, block: Block, k: usize, callee: &Function) {
    let call = f.block(block).insts[k].clone();
    let rest_label = format!("{}_after_{}", f.block(block).name, callee.name);
    let rest = f.add_block(&rest_label);
    let tail: Vec<InstData> = f.block_mut(block).insts.drain(k..).skip(1).collect();
    let term = f.block_mut(block).term.take();
    {
        let r = f.block_mut(rest);
        r.params = call.results.to_vec();
        r.insts = tail;
        r.term = term;
    }
    // The callee's values: its parameters are the call's arguments; everything else is new.
    let mut values: HashMap<Value, Value> = callee.params.iter().copied().zip(call.args.iter().copied()).collect();
    let fresh = |f: &mut Function, v: Value| -> Value {
        let nv = f.new_value(callee.ty(v));
        if let Some(name) = &callee.values[v.index()].name {
            f.set_value_name(nv, name);
        }
        nv
    };
    let mut blocks: HashMap<Block, Block> = HashMap::default();
    for (i, b) in callee.blocks.iter().enumerate() {
        blocks.insert(Block(i as u32), f.add_block(&format!("{}_{}", callee.name, b.name)));
    }
    for (i, b) in callee.blocks.iter().enumerate() {
        let nb = blocks[&Block(i as u32)];
        let params: Vec<Value> = b
            .params
            .iter()
            .map(|&p| {
                let v = fresh(f, p);
                values.insert(p, v);
                v
            })
            .collect();
        f.block_mut(nb).params = params;
        for inst in &b.insts {
            for &r in &inst.results {
                let v = fresh(f, r);
                values.insert(r, v);
            }
        }
    }
    let map = |values: &HashMap<Value, Value>, v: Value| values.get(&v).copied().unwrap_or(v);
    for (i, b) in callee.blocks.iter().enumerate() {
        let nb = blocks[&Block(i as u32)];
        let insts: Vec<InstData> = b
            .insts
            .iter()
            .map(|inst| InstData {
                op: inst.op,
                args: inst.args.iter().map(|&a| map(&values, a)).collect(),
                imm: inst.imm,
                results: inst.results.iter().map(|&r| map(&values, r)).collect(),
            })
            .collect();
        let remap_call = |c: &BlockCall| BlockCall {
            block: blocks.get(&c.block).copied().unwrap_or(c.block),
            args: c.args.iter().map(|&a| map(&values, a)).collect(),
        };
        let term = b.term.as_ref().map(|t| match t {
            Terminator::Jump(c) => Terminator::Jump(remap_call(c)),
            Terminator::Branch { cond, then_dest, else_dest } => Terminator::Branch {
                cond: map(&values, *cond),
                then_dest: remap_call(then_dest),
                else_dest: remap_call(else_dest),
            },
            Terminator::Return(vals) => {
                Terminator::Jump(BlockCall { block: rest, args: vals.iter().map(|&v| map(&values, v)).collect() })
            }
        });
        let data = f.block_mut(nb);
        data.insts = insts;
        data.term = term;
    }
    f.block_mut(block).term =
        Some(Terminator::Jump(BlockCall { block: blocks[&Block::ENTRY], args: smallvec::smallvec![] }));
}
