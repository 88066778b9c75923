//! Redundant block parameters: parameters that can only ever hold one value.

use super::Aliases;
use crate::function::{Function, Value};

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
/// dominates every block of the group and the rewritten function stays in SSA form. A group
/// bound to several values from outside is not redundant, but the parameters in it bound only
/// within it may be, among themselves: their own components are examined next (Braun et al.'s
/// recursion), so a value carried unchanged around an inner loop becomes the outer loop's
/// parameter it always equals (a running minimum's, in k-means).
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
    // The parameters, numbered densely in value order (`node`); the entry block has none.
    // Dense arrays, not hash maps: reverse mode's pullbacks carry tens of thousands of
    // parameters through long chains of blocks, and hashing them cost most of this pass.
    const NONE: u32 = u32::MAX;
    let mut node = vec![NONE; func.values.len()];
    let mut params: Vec<Value> = func.blocks.iter().skip(1).flat_map(|b| b.params.iter().copied()).collect();
    params.sort();
    params.dedup();
    params.retain(|p| p.index() < node.len());
    for (k, p) in params.iter().enumerate() {
        node[p.index()] = k as u32;
    }
    if params.is_empty() {
        return;
    }
    // What each parameter is bound to, over every jump into its block, flat: parameter `k`'s
    // bindings are `bound[start[k]..start[k + 1]]`.
    let bindings = || {
        func.blocks.iter().filter_map(|b| b.term.as_ref()).flat_map(|term| term.successors()).flat_map(|call| {
            let target = func.blocks.get(call.block.index()).map_or(&[][..], |t| &t.params[..]);
            target.iter().zip(&call.args).map(|(&p, &a)| (p, a))
        })
    };
    let mut start = vec![0u32; params.len() + 1];
    for (p, _) in bindings() {
        if let Some(&k) = node.get(p.index()) {
            start[k as usize + 1] += 1;
        }
    }
    for k in 0..params.len() {
        start[k + 1] += start[k];
    }
    let mut fill = start.clone();
    let mut bound = vec![Value(0); start[params.len()] as usize];
    for (p, a) in bindings() {
        if let Some(&k) = node.get(p.index()) {
            bound[fill[k as usize] as usize] = a;
            fill[k as usize] += 1;
        }
    }
    let bound_to = |k: usize| &bound[start[k] as usize..start[k + 1] as usize];
    let mut aliases = Aliases::new(func);
    let mut removed = vec![false; func.values.len()];
    let mut any_removed = false;
    let mut member = vec![false; params.len()];
    // Tarjan emits a component after every component it depends on, so the values bound from
    // outside are already resolved when a component is examined. A stack holds the components
    // still to examine, the next on top.
    let mut pending: Vec<Vec<u32>> = strongly_connected(params.len(), |k| {
        bound_to(k).iter().filter_map(|a| node.get(a.index()).copied().filter(|&n| n != NONE))
    });
    pending.reverse();
    let mut local = vec![NONE; params.len()];
    while let Some(group) = pending.pop() {
        for &k in &group {
            member[k as usize] = true;
        }
        let in_group =
            |a: Value, member: &[bool]| node.get(a.index()).is_some_and(|&n| n != NONE && member[n as usize]);
        let mut outside: Option<Value> = None;
        let mut unique = true;
        for &k in &group {
            for &a in bound_to(k as usize) {
                let a = aliases.resolve(a);
                if in_group(a, &member) {
                    continue;
                }
                match outside {
                    None => outside = Some(a),
                    Some(v) if v == a => {}
                    Some(_) => unique = false,
                }
            }
        }
        // Bound to two values or more from outside: the parameters bound only within the group
        // may still be redundant among themselves (Braun et al.: a value carried unchanged
        // around an inner loop is the outer loop's parameter, though the outer one is not
        // redundant). Their own components are examined next, before the rest.
        let inner: Vec<u32> = if unique {
            vec![]
        } else {
            let all_inside = |k: u32| bound_to(k as usize).iter().all(|&a| in_group(aliases.resolve(a), &member));
            group.iter().copied().filter(|&k| all_inside(k)).collect()
        };
        for &k in &group {
            member[k as usize] = false;
        }
        if !inner.is_empty() && inner.len() < group.len() {
            for (i, &k) in inner.iter().enumerate() {
                local[k as usize] = i as u32;
            }
            let mut components = strongly_connected(inner.len(), |i| {
                bound_to(inner[i] as usize).iter().filter_map(|a| {
                    let k = node.get(aliases.resolve(*a).index()).copied().filter(|&n| n != NONE)?;
                    Some(local[k as usize]).filter(|&l| l != NONE)
                })
            });
            for &k in &inner {
                local[k as usize] = NONE;
            }
            for component in components.iter_mut() {
                component.iter_mut().for_each(|i| *i = inner[*i as usize]);
            }
            pending.extend(components.into_iter().rev());
            continue;
        }
        // No binding from outside: the group is unreachable; leave it to dead-code elimination.
        let (true, Some(v)) = (unique, outside) else { continue };
        for &k in &group {
            let p = params[k as usize];
            aliases.set(p, v);
            removed[p.index()] = true;
            any_removed = true;
        }
    }
    if !any_removed {
        return;
    }
    super::drop_block_params(func, |p| !removed.get(p.index()).copied().unwrap_or(false));
    aliases.apply(func);
    func.canonicalize();
}

/// The strongly connected components of the graph on nodes `0..nodes` whose edges go from a
/// node to `successors(node)`, in Tarjan's order (a component after every component it
/// reaches). Iterative, so large functions cannot overflow the stack.
fn strongly_connected<I: Iterator<Item = u32>>(nodes: usize, successors: impl Fn(usize) -> I) -> Vec<Vec<u32>> {
    const UNVISITED: u32 = u32::MAX;
    let mut index = vec![UNVISITED; nodes];
    let mut low = vec![0u32; nodes];
    let mut on_stack = vec![false; nodes];
    let mut stack: Vec<u32> = vec![];
    let mut components = vec![];
    let mut next_index = 0;
    // Each frame: a node and the successors it has yet to visit.
    let mut frames: Vec<(u32, I)> = vec![];
    for root in 0..nodes {
        if index[root] != UNVISITED {
            continue;
        }
        let visit = |v: u32, index: &mut [u32], low: &mut [u32], on_stack: &mut [bool], next: &mut u32| {
            index[v as usize] = *next;
            low[v as usize] = *next;
            *next += 1;
            on_stack[v as usize] = true;
        };
        visit(root as u32, &mut index, &mut low, &mut on_stack, &mut next_index);
        stack.push(root as u32);
        frames.push((root as u32, successors(root)));
        while let Some((v, pending)) = frames.last_mut() {
            let v = *v;
            if let Some(w) = pending.next() {
                if index[w as usize] == UNVISITED {
                    visit(w, &mut index, &mut low, &mut on_stack, &mut next_index);
                    stack.push(w);
                    frames.push((w, successors(w as usize)));
                } else if on_stack[w as usize] {
                    low[v as usize] = low[v as usize].min(index[w as usize]);
                }
                continue;
            }
            frames.pop();
            let lv = low[v as usize];
            if let Some((parent, _)) = frames.last() {
                let lp = &mut low[*parent as usize];
                *lp = (*lp).min(lv);
            }
            if lv == index[v as usize] {
                let mut component = vec![];
                while let Some(w) = stack.pop() {
                    on_stack[w as usize] = false;
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
