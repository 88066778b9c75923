//! Dependency sets: which inputs a value depends on, as ids into an arena.
//!
//! Small sets (up to [`SMALL`] inputs) are sorted runs of a shared pool and are merged eagerly;
//! a union involving a larger set is a node naming its two operands, expanded only when a row
//! of a pattern is read off. So `acc = acc + term` over `n` terms costs one node per step and
//! one walk of `n` nodes at the end, not the `n²` of copying the growing set at every step.

/// A set of inputs: an index into [`Sets`]. `EMPTY` is the empty set; `1 + k` is `{k}`.
pub(super) type SetId = u32;

/// The empty set.
pub(super) const EMPTY: SetId = 0;

/// Sets up to this size are kept as sorted lists and merged eagerly.
const SMALL: usize = 16;

#[derive(Clone, Copy, Debug)]
enum Node {
    /// `pool[start .. start + len]`, sorted, without duplicates.
    Leaf { start: u32, len: u32 },
    /// The union of two sets.
    Union(SetId, SetId),
}

/// The arena of every set one analysis creates.
#[derive(Debug)]
pub(super) struct Sets {
    nodes: Vec<Node>,
    pool: Vec<u32>,
    /// Per node, the walk that last visited it (so a shared node is expanded once per walk).
    visited: Vec<u32>,
    /// Per input, the walk that last collected it.
    collected: Vec<u32>,
    walk: u32,
    stack: Vec<SetId>,
}

impl Sets {
    /// The empty set and the singletons of `inputs` inputs.
    pub fn new(inputs: usize) -> Sets {
        let mut nodes = Vec::with_capacity(1 + 2 * inputs);
        nodes.push(Node::Leaf { start: 0, len: 0 });
        nodes.extend((0..inputs as u32).map(|k| Node::Leaf { start: k, len: 1 }));
        Sets {
            nodes,
            pool: {
                let mut pool = Vec::with_capacity(8 * inputs);
                pool.extend(0..inputs as u32);
                pool
            },
            visited: vec![],
            collected: vec![0; inputs],
            walk: 0,
            stack: vec![],
        }
    }

    /// `{input}`.
    pub fn singleton(input: usize) -> SetId {
        input as SetId + 1
    }

    /// Number of sets created (for tests of the arena's growth).
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// `a ∪ b`.
    #[inline]
    pub fn union(&mut self, a: SetId, b: SetId) -> SetId {
        if a == b || b == EMPTY {
            return a;
        }
        if a == EMPTY {
            return b;
        }
        if let (Node::Leaf { start: sa, len: la }, Node::Leaf { start: sb, len: lb }) =
            (self.nodes[a as usize], self.nodes[b as usize])
            && (la + lb) as usize <= SMALL
        {
            return self.merge_leaves(a, (sa, la), b, (sb, lb));
        }
        self.push(Node::Union(a, b))
    }

    /// `a ∪ b ∪ c`.
    pub fn union3(&mut self, a: SetId, b: SetId, c: SetId) -> SetId {
        let ab = self.union(a, b);
        self.union(ab, c)
    }

    fn merge_leaves(&mut self, a: SetId, (sa, la): (u32, u32), b: SetId, (sb, lb): (u32, u32)) -> SetId {
        let start = self.pool.len();
        let (mut i, mut j) = (sa as usize, sb as usize);
        let (ea, eb) = (i + la as usize, j + lb as usize);
        while i < ea && j < eb {
            let (x, y) = (self.pool[i], self.pool[j]);
            let next = x.min(y);
            self.pool.push(next);
            i += usize::from(x == next);
            j += usize::from(y == next);
        }
        self.pool.extend_from_within(i..ea);
        self.pool.extend_from_within(j..eb);
        let len = self.pool.len() - start;
        // A merge that adds nothing gives back the larger operand: no new set.
        if len == la as usize {
            self.pool.truncate(start);
            return a;
        }
        if len == lb as usize {
            self.pool.truncate(start);
            return b;
        }
        self.push(Node::Leaf { start: start as u32, len: len as u32 })
    }

    fn push(&mut self, node: Node) -> SetId {
        self.nodes.push(node);
        (self.nodes.len() - 1) as SetId
    }

    /// The elements of `s` if it is stored as a sorted list (every set of up to 16 inputs).
    #[inline]
    pub fn as_slice(&self, s: SetId) -> Option<&[u32]> {
        match self.nodes[s as usize] {
            Node::Leaf { start, len } => Some(&self.pool[start as usize..(start + len) as usize]),
            Node::Union(..) => None,
        }
    }

    /// The elements of `s`, sorted, into `out` (cleared first).
    pub fn collect(&mut self, s: SetId, out: &mut Vec<u32>) {
        out.clear();
        if let Node::Leaf { start, len } = self.nodes[s as usize] {
            out.extend_from_slice(&self.pool[start as usize..(start + len) as usize]);
            return;
        }
        self.walk = self.walk.wrapping_add(1);
        if self.walk == 0 {
            // Wrapped: forget every mark.
            self.visited.iter_mut().for_each(|v| *v = 0);
            self.collected.iter_mut().for_each(|v| *v = 0);
            self.walk = 1;
        }
        if self.visited.len() < self.nodes.len() {
            self.visited.resize(self.nodes.len(), 0);
        }
        let walk = self.walk;
        self.stack.clear();
        self.stack.push(s);
        while let Some(id) = self.stack.pop() {
            if std::mem::replace(&mut self.visited[id as usize], walk) == walk {
                continue;
            }
            match self.nodes[id as usize] {
                Node::Leaf { start, len } => {
                    for &k in &self.pool[start as usize..(start + len) as usize] {
                        if std::mem::replace(&mut self.collected[k as usize], walk) != walk {
                            out.push(k);
                        }
                    }
                }
                Node::Union(a, b) => {
                    self.stack.push(a);
                    self.stack.push(b);
                }
            }
        }
        out.sort_unstable();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn elements(sets: &mut Sets, s: SetId) -> Vec<u32> {
        let mut out = vec![];
        sets.collect(s, &mut out);
        out
    }

    #[test]
    fn small_unions_merge_and_reuse_operands() {
        let mut sets = Sets::new(10);
        let (a, b) = (Sets::singleton(3), Sets::singleton(1));
        let ab = sets.union(a, b);
        assert_eq!(elements(&mut sets, ab), [1, 3]);
        let before = sets.len();
        assert_eq!(sets.union(ab, a), ab);
        assert_eq!(sets.union(b, ab), ab);
        assert_eq!(sets.union(ab, EMPTY), ab);
        assert_eq!(sets.len(), before);
        assert_eq!(elements(&mut sets, EMPTY), [] as [u32; 0]);
    }

    #[test]
    fn a_long_accumulation_is_linear_and_exact() {
        let n = 10_000;
        let mut sets = Sets::new(n);
        let mut acc = EMPTY;
        for k in 0..n {
            let pair = sets.union(Sets::singleton(k), Sets::singleton((k + 1) % n));
            acc = sets.union(acc, pair);
        }
        assert!(sets.len() < 4 * n, "{} sets for {n} steps", sets.len());
        let all = elements(&mut sets, acc);
        assert_eq!(all, (0..n as u32).collect::<Vec<_>>());
        // A second walk sees the same (the marks are per walk).
        assert_eq!(elements(&mut sets, acc).len(), n);
    }
}
