//! Redundant block parameters: parameters that can only ever hold one value.

use super::Aliases;
use crate::function::{Block, Function, Value};
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

/// Replace block parameters that always hold the same value by that value, and drop them with
/// the jump arguments bound to them.
///
/// A parameter is redundant when every jump binds it to itself, to another redundant parameter
/// of the same group, or to one single value `v` from outside: a loop header parameter carried
/// around the loop unchanged (`jump head(i2, c)` where `head(i, c)` was entered with `c = x`) is
/// `x`. Groups are the strongly connected components of the "is bound to" graph between
/// parameters (Braun et al., *Simple and Efficient Construction of SSA Form*, 2013), so a value
/// carried unchanged through several blocks of a loop — as reverse mode carries adjoints that a
/// loop does not change — is found too. `v` is defined on every path into the group, so it
/// dominates every block of the group and the rewritten function stays in SSA form.
///
/// Removing them matters beyond tidiness: an adjoint carried through a loop as a parameter looks
/// loop-variant, so everything computed from it stays inside the loop; replaced by its value it
/// becomes invariant and [`licm`](super::licm) hoists the work out.
///
/// ```
/// use jitdiff_ir::{parse_module, passes, print_module};
/// let src = "func @f(n: i64, c: f64) -> f64 {
/// entry:
///     zero = iconst 0
///     one = iconst 1
///     acc0 = fconst 0.0
///     jump head(zero, acc0, c)
/// head(i: i64, acc: f64, k: f64):
///     more = icmp lt i, n
///     br more, body, exit
/// body:
///     acc2 = fadd acc, k
///     i2 = iadd i, one
///     jump head(i2, acc2, k)
/// exit:
///     ret acc
/// }
/// ";
/// let mut m = parse_module(src).unwrap();
/// passes::remove_redundant_params(&mut m.functions[0]);
/// let text = print_module(&m);
/// assert!(text.contains("head(i: i64, acc: f64):") && text.contains("fadd acc, c"));
/// ```
pub fn remove_redundant_params(func: &mut Function) {
    if func.blocks.is_empty() {
        return;
    }
    // Parameter → (block, position); the entry block has no parameters.
    let mut position: HashMap<Value, (Block, usize)> = HashMap::default();
    for (b, block) in func.blocks.iter().enumerate().skip(1) {
        for (k, &p) in block.params.iter().enumerate() {
            position.insert(p, (Block(b as u32), k));
        }
    }
    if position.is_empty() {
        return;
    }
    // What each parameter is bound to, over every jump into its block.
    let mut bound: HashMap<Value, Vec<Value>> = HashMap::default();
    for block in &func.blocks {
        let Some(term) = &block.term else { continue };
        for call in term.successors() {
            let Some(target) = func.blocks.get(call.block.index()) else { continue };
            for (&p, &a) in target.params.iter().zip(&call.args) {
                bound.entry(p).or_default().push(a);
            }
        }
    }
    let mut aliases = Aliases::new(func);
    let mut removed: HashSet<Value> = HashSet::default();
    // Tarjan emits a component after every component it depends on, so the values bound from
    // outside are already resolved when a component is examined.
    for group in strongly_connected(&position, &bound) {
        let members: HashSet<Value> = group.iter().copied().collect();
        let mut outside: Option<Value> = None;
        let mut unique = true;
        for p in &group {
            for &a in bound.get(p).into_iter().flatten() {
                let a = aliases.resolve(a);
                if members.contains(&a) {
                    continue;
                }
                match outside {
                    None => outside = Some(a),
                    Some(v) if v == a => {}
                    Some(_) => unique = false,
                }
            }
        }
        // No binding from outside: the group is unreachable; leave it to dead-code elimination.
        let (true, Some(v)) = (unique, outside) else { continue };
        for &p in &group {
            aliases.set(p, v);
            removed.insert(p);
        }
    }
    if removed.is_empty() {
        return;
    }
    super::drop_block_params(func, |p| !removed.contains(&p));
    aliases.apply(func);
    func.canonicalize();
}

/// The strongly connected components of the graph whose nodes are block parameters and whose
/// edges go from a parameter to the parameters bound to it, in Tarjan's order (a component
/// after every component it reaches). Iterative, so large functions cannot overflow the stack.
fn strongly_connected(
    position: &HashMap<Value, (Block, usize)>,
    bound: &HashMap<Value, Vec<Value>>,
) -> Vec<Vec<Value>> {
    let mut nodes: Vec<Value> = position.keys().copied().collect();
    nodes.sort();
    let successors = |v: Value| -> Vec<Value> {
        let mut s: Vec<Value> =
            bound.get(&v).into_iter().flatten().copied().filter(|a| position.contains_key(a)).collect();
        s.sort();
        s.dedup();
        s
    };
    let mut index: HashMap<Value, usize> = HashMap::default();
    let mut low: HashMap<Value, usize> = HashMap::default();
    let mut on_stack: HashSet<Value> = HashSet::default();
    let mut stack: Vec<Value> = vec![];
    let mut components = vec![];
    let mut next_index = 0;
    for &root in &nodes {
        if index.contains_key(&root) {
            continue;
        }
        // Each frame: a node and the successors it has yet to visit.
        let mut frames: Vec<(Value, Vec<Value>)> = vec![];
        index.insert(root, next_index);
        low.insert(root, next_index);
        next_index += 1;
        stack.push(root);
        on_stack.insert(root);
        frames.push((root, successors(root)));
        while let Some((v, pending)) = frames.last_mut() {
            let v = *v;
            if let Some(w) = pending.pop() {
                if let std::collections::hash_map::Entry::Vacant(slot) = index.entry(w) {
                    slot.insert(next_index);
                    low.insert(w, next_index);
                    next_index += 1;
                    stack.push(w);
                    on_stack.insert(w);
                    frames.push((w, successors(w)));
                } else if on_stack.contains(&w) {
                    let lw = index[&w];
                    let lv = low.get_mut(&v).expect("visited");
                    *lv = (*lv).min(lw);
                }
                continue;
            }
            frames.pop();
            let lv = low[&v];
            if let Some((parent, _)) = frames.last() {
                let lp = low.get_mut(parent).expect("visited");
                *lp = (*lp).min(lv);
            }
            if lv == index[&v] {
                let mut component = vec![];
                while let Some(w) = stack.pop() {
                    on_stack.remove(&w);
                    component.push(w);
                    if w == v {
                        break;
                    }
                }
                components.push(component);
            }
        }
    }
    components
}
