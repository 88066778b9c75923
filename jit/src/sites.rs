//! The per-module site table: every place in the IR where native code can fail gets a number,
//! and a failing native function returns that number as its status.

use jitdiff_ir::{Block, FuncId};

/// What went wrong at a site.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum SiteKind {
    /// A `load`/`store`/`vload`/`vstore` index outside the slice.
    OutOfBounds,
    /// `idiv`/`irem` by zero.
    DivisionByZero,
    /// A call that would exceed `MAX_CALL_DEPTH` frames.
    CallDepthExceeded,
    /// A `tpop` with the tape's cursor at 0.
    TapeUnderflow,
    /// A `tpush` that could not grow the tape.
    TapeAllocation,
    /// An `alloc` with a negative length or whose memory could not be allocated.
    AllocFailed,
    /// A shadow slice parameter whose length is not `lanes` times its primal's (parameter indices).
    ShadowLength { shadow: u32, primal: u32, lanes: u8 },
    /// A closure extern returned an error (its message is in the thread-local extern-error slot).
    ExternFailed,
    /// A `trap`.
    Panic,
}

/// One failure site.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Site {
    pub kind: SiteKind,
    pub func: FuncId,
    pub block: Block,
    /// Index of the instruction within its block.
    pub inst: u32,
}

/// The sites of a module; the status of site `k` is `k + 1` (0 means success).
#[derive(Debug, Default)]
pub(crate) struct SiteTable {
    sites: Vec<Site>,
}

impl SiteTable {
    /// Register a site and return its status code.
    pub fn add(&mut self, site: Site) -> i32 {
        self.sites.push(site);
        // Site counts are bounded by the instruction count of the module, far below i32::MAX;
        // saturate rather than wrap if that were ever violated.
        i32::try_from(self.sites.len()).unwrap_or(i32::MAX)
    }
    /// The site a non-zero status refers to.
    pub fn get(&self, status: i32) -> Option<&Site> {
        let index = usize::try_from(status).ok()?.checked_sub(1)?;
        self.sites.get(index)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_round_trip_and_zero_is_no_site() {
        let mut t = SiteTable::default();
        let (f0, f1) = (FuncId::from_index(0), FuncId::from_index(1));
        let a = Site { kind: SiteKind::OutOfBounds, func: f0, block: Block::from_index(1), inst: 2 };
        let b = Site { kind: SiteKind::DivisionByZero, func: f1, block: Block::ENTRY, inst: 0 };
        let (sa, sb) = (t.add(a), t.add(b));
        assert_ne!(sa, 0);
        assert_eq!(t.get(sa), Some(&a));
        assert_eq!(t.get(sb), Some(&b));
        assert_eq!(t.get(0), None);
        assert_eq!(t.get(-3), None);
        assert_eq!(t.get(99), None);
    }
}
