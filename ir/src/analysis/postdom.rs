//! Immediate post-dominators: where the two sides of a branch meet again (sparsity detection
//! runs both sides of a branch up to there; sinking moves a failing instruction only to a block
//! that post-dominates it).

use crate::function::{Block, Function, Terminator};

/// The immediate post-dominator of every block; `None` is the virtual exit (the sides meet only
/// when the function returns) and is also given for blocks from which no `ret` is reachable.
/// Cooper, Harvey and Kennedy's iteration on the reversed control-flow graph.
///
/// ```
/// use jitdiff_ir::{analysis::immediate_post_dominators, parse_module};
/// let m = parse_module("func @f(c: bool) {\nentry:\n    br c, a, b\na:\n    jump join\nb:\n    jump join\njoin:\n    ret\n}\n").unwrap();
/// let f = &m.functions[0];
/// let ipdom = immediate_post_dominators(f);
/// assert_eq!(ipdom[0], f.block_by_name("join"));
/// assert_eq!(ipdom[f.block_by_name("join").unwrap().index()], None);
/// ```
pub fn immediate_post_dominators(func: &Function) -> Vec<Option<Block>> {
    let n = func.blocks.len();
    let exit = n;
    let successors = |b: usize| -> Vec<usize> {
        match &func.blocks[b].term {
            Some(t) => t.successors().iter().map(|c| c.block.index()).filter(|&s| s < n).collect(),
            None => vec![],
        }
    };
    let succ: Vec<Vec<usize>> = (0..n).map(successors).collect();
    let returns: Vec<usize> = (0..n).filter(|&b| matches!(func.blocks[b].term, Some(Terminator::Return(_)))).collect();
    // Predecessors in the forward graph are the successors in the reversed one.
    let mut pred: Vec<Vec<usize>> = vec![vec![]; n];
    for (b, ss) in succ.iter().enumerate() {
        for &s in ss {
            pred[s].push(b);
        }
    }
    // Post-order of the reversed graph from the exit.
    let mut order = vec![usize::MAX; n + 1];
    let mut post = Vec::with_capacity(n + 1);
    let mut seen = vec![false; n + 1];
    let reversed_succ = |v: usize| -> &[usize] { if v == exit { &returns } else { &pred[v] } };
    let mut stack: Vec<(usize, usize)> = vec![(exit, 0)];
    seen[exit] = true;
    while let Some(&mut (v, ref mut next)) = stack.last_mut() {
        let out = reversed_succ(v);
        if *next < out.len() {
            let w = out[*next];
            *next += 1;
            if !seen[w] {
                seen[w] = true;
                stack.push((w, 0));
            }
        } else {
            order[v] = post.len();
            post.push(v);
            stack.pop();
        }
    }
    let mut ipdom = vec![usize::MAX; n + 1];
    ipdom[exit] = exit;
    let intersect = |ipdom: &[usize], mut a: usize, mut b: usize| {
        while a != b {
            while order[a] < order[b] {
                a = ipdom[a];
            }
            while order[b] < order[a] {
                b = ipdom[b];
            }
        }
        a
    };
    let mut changed = true;
    while changed {
        changed = false;
        for &v in post.iter().rev().filter(|&&v| v != exit) {
            // Predecessors of `v` in the reversed graph: its forward successors, and the exit
            // when it returns.
            let mut candidates = succ[v].iter().copied().chain(returns.contains(&v).then_some(exit));
            let mut new = usize::MAX;
            for p in candidates.by_ref() {
                if ipdom[p] != usize::MAX {
                    new = if new == usize::MAX { p } else { intersect(&ipdom, p, new) };
                }
            }
            if new != usize::MAX && ipdom[v] != new {
                ipdom[v] = new;
                changed = true;
            }
        }
    }
    let ids: Vec<Block> = func.block_ids().collect();
    (0..n).map(|b| ids.get(ipdom[b]).copied()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse_module;

    #[test]
    fn diamonds_loops_and_early_returns() {
        let m = parse_module(
            "func @f(x: f64, n: i64) -> f64 {
entry:
    z = fconst 0.0
    c = fcmp lt x, z
    br c, left, right
left:
    jump join(x)
right:
    y = fneg x
    jump join(y)
join(v: f64):
    k = iconst 0
    jump head(k)
head(i: i64):
    more = icmp lt i, n
    br more, body, done
body:
    d = fcmp gt v, z
    br d, early, latch
early:
    ret v
latch:
    one = iconst 1
    i2 = iadd i, one
    jump head(i2)
done:
    ret z
}",
        )
        .unwrap();
        let f = &m.functions[0];
        let ipdom = immediate_post_dominators(f);
        let name = |b: Option<Block>| b.map_or("exit".to_string(), |b| f.block(b).name.clone());
        let of = |label: &str| name(ipdom[f.block_by_name(label).unwrap().index()]);
        assert_eq!(of("entry"), "join");
        assert_eq!(of("left"), "join");
        assert_eq!(of("join"), "head");
        // The loop can leave through `early` or `done`: they meet only at the exit.
        assert_eq!(of("head"), "exit");
        assert_eq!(of("body"), "exit");
        assert_eq!(of("latch"), "head");
    }
}
