//! Shrinking of choice streams. Because choice 0 is always the simplest option and each
//! statement reads its own record of choices, good shrinks are: drop a function's stream,
//! truncate a stream (its tail reads as zeros), delete one record (one statement), zero one
//! choice, step one choice down. Proptest's generic `Vec` shrinking removes one element
//! at a time, which shifts every later choice and takes thousands of steps on these streams.

use super::GenConfig;
use super::generate::RECORD;
use proptest::collection::{SizeRange, VecStrategy, vec};
use proptest::prelude::*;
use proptest::strategy::{NewTree, ValueTree};
use proptest::test_runner::TestRunner;

/// Random choice streams — one for the arguments, then one per function — with a shrinker made
/// for them. See [`arb_streams`](super::arb_streams).
#[derive(Debug)]
pub struct StreamsStrategy {
    cfg: GenConfig,
    inner: VecStrategy<VecStrategy<proptest::num::u32::Any>>,
}

impl StreamsStrategy {
    pub(super) fn new(cfg: GenConfig, streams: impl Into<SizeRange>, choices: impl Into<SizeRange>) -> StreamsStrategy {
        StreamsStrategy { cfg, inner: vec(vec(any::<u32>(), choices), streams) }
    }
}

impl Strategy for StreamsStrategy {
    type Tree = StreamsTree;
    type Value = Vec<Vec<u32>>;
    fn new_tree(&self, runner: &mut TestRunner) -> NewTree<Self> {
        let streams = self.inner.new_tree(runner)?.current();
        Ok(StreamsTree {
            cfg: self.cfg.clone(),
            base: streams,
            edit: None,
            cursor: Cursor::default(),
            progressed: false,
            normalized: false,
        })
    }
}

/// One simplification of the base streams.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Edit {
    /// Remove stream `i` (a function; stream 0, the arguments, stays).
    Drop(usize),
    /// Cut stream `i` to `len` choices.
    Truncate(usize, usize),
    /// Remove choices `start..end` of stream `i`.
    Delete(usize, usize, usize),
    /// Set choice `j` of stream `i` to `v`.
    Set(usize, usize, u32),
}

/// Where the sweep over candidate edits is: phase 0 drops streams, 1 truncates them (to record
/// boundaries), 2 deletes single records, 3 pairs of records (a construct's header with the
/// end marker of its first region), 4 zeroes choices, 5 decrements them.
#[derive(Clone, Copy, Debug, Default)]
struct Cursor {
    phase: u8,
    i: usize,
    j: usize,
}

/// The value tree of [`StreamsStrategy`]: `base` is the simplest value known to fail; `edit`
/// the candidate being tried on it.
#[derive(Clone, Debug)]
pub struct StreamsTree {
    cfg: GenConfig,
    base: Vec<Vec<u32>>,
    edit: Option<Edit>,
    cursor: Cursor,
    /// Did the current sweep accept an edit (so another sweep may find more)?
    progressed: bool,
    /// Are the choices the decoder does not read zeroed in `base`?
    normalized: bool,
}

fn apply(base: &[Vec<u32>], edit: Option<Edit>) -> Vec<Vec<u32>> {
    let mut out = base.to_vec();
    match edit {
        None => {}
        Some(Edit::Drop(i)) => {
            out.remove(i);
        }
        Some(Edit::Truncate(i, len)) => out[i].truncate(len),
        Some(Edit::Delete(i, start, end)) => {
            out[i].drain(start..end);
        }
        Some(Edit::Set(i, j, v)) => out[i][j] = v,
    }
    out
}

impl StreamsTree {
    /// Zero every choice the decoder does not read and drop trailing zeros: the same case, with
    /// nothing left for the element phases to try in vain.
    fn normalize(&mut self) {
        let touched = super::touched_choices(&self.cfg, &self.base);
        for (stream, read) in self.base.iter_mut().zip(touched) {
            for (c, r) in stream.iter_mut().zip(read) {
                if !r {
                    *c = 0;
                }
            }
            while stream.last() == Some(&0) {
                stream.pop();
            }
        }
        self.normalized = true;
    }

    /// The next applicable edit of `base`, advancing the cursor; `None` when a sweep found
    /// nothing more.
    fn next_edit(&mut self) -> Option<Edit> {
        loop {
            let Cursor { phase, i, j } = self.cursor;
            if phase > 5 {
                if !self.progressed {
                    return None;
                }
                self.progressed = false;
                self.cursor = Cursor::default();
                continue;
            }
            let next_phase = Cursor { phase: phase + 1, i: 0, j: 0 };
            let next_stream = Cursor { phase, i: i + 1, j: 0 };
            let next_choice = Cursor { phase, i, j: j + 1 };
            let Some(stream) = self.base.get(i) else {
                self.cursor = next_phase;
                continue;
            };
            match phase {
                0 => {
                    self.cursor = next_stream;
                    // Keep the argument stream and at least one function.
                    if i >= 1 && self.base.len() > 2 {
                        return Some(Edit::Drop(i));
                    }
                }
                1 => {
                    let len = stream.len();
                    let records = len.div_ceil(RECORD);
                    let sizes = [0, records / 4, records / 2, 3 * records / 4, records.saturating_sub(1)];
                    if j >= sizes.len() {
                        self.cursor = next_stream;
                    } else {
                        self.cursor = next_choice;
                        let cut = sizes[j] * RECORD;
                        if cut < len && (j == 0 || sizes[j] != sizes[j - 1]) {
                            return Some(Edit::Truncate(i, cut));
                        }
                    }
                }
                2 | 3 => {
                    let start = j * RECORD;
                    let records = usize::from(phase) - 1;
                    if start >= stream.len() {
                        self.cursor = next_stream;
                    } else {
                        self.cursor = next_choice;
                        return Some(Edit::Delete(i, start, (start + records * RECORD).min(stream.len())));
                    }
                }
                _ => {
                    let Some(&v) = stream.get(j) else {
                        self.cursor = next_stream;
                        continue;
                    };
                    self.cursor = next_choice;
                    if phase == 4 && v != 0 {
                        return Some(Edit::Set(i, j, 0));
                    }
                    if phase == 5 && v != 0 {
                        return Some(Edit::Set(i, j, v - 1));
                    }
                }
            }
        }
    }

    /// Try the next edit, or settle on the base when there is none.
    fn advance(&mut self) -> bool {
        self.edit = self.next_edit();
        self.edit.is_some()
    }
}

impl ValueTree for StreamsTree {
    type Value = Vec<Vec<u32>>;
    fn current(&self) -> Vec<Vec<u32>> {
        apply(&self.base, self.edit)
    }
    /// The current value failed: keep its edit, then try the next one.
    fn simplify(&mut self) -> bool {
        if self.edit.is_some() {
            self.base = apply(&self.base, self.edit);
            self.progressed = true;
            self.normalized = false;
        }
        if !self.normalized {
            self.normalize();
        }
        self.advance()
    }
    /// The current value passed: drop its edit and try the next one.
    fn complicate(&mut self) -> bool {
        self.advance()
    }
}
