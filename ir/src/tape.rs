//! [`Tape`]: the per-call record `tpush` appends to and `tpop` reads back, shared by the
//! interpreter and the JIT.
//!
//! Reverse mode uses it to hand values from a forward function to its pullback: the forward
//! function pushes, the pullback pops in reverse order. Pops only move a read cursor, so after
//! [`Tape::reset_cursor`] the same pullback can run again on the same entries.

use crate::local_arrays::LocalArrays;

/// Why a tape operation failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TapeError {
    /// `tpop` with the read cursor at the start of the tape.
    #[error("tape underflow: tpop with no entry left before the read cursor")]
    Underflow,
    /// Growing the tape failed: the allocator refused, or the tape reached its limit
    /// ([`Tape::set_limit_bytes`]; 4 GiB unless set).
    #[error("could not grow the tape: memory allocation failed or the tape limit was reached")]
    Allocation,
}

/// The tape of one call: a sequence of 64-bit entries and a read cursor.
///
/// `tpush x` appends the bits of `x` (a `bool` as 0 or 1) and moves the cursor to the end;
/// `tpop.T` fails when the cursor is 0, else steps it back one entry and reads that entry as `T`
/// (`f64` from its bits, `i64` as is, `bool` as `entry != 0`). Entries are never removed by a
/// pop. Callees share their caller's tape. The tape grows by amortised doubling and an
/// allocation failure is reported, never an abort.
///
/// ```
/// use jitdiff_ir::Tape;
/// let mut tape = Tape::new();
/// tape.push_bits(7).unwrap();
/// tape.push_bits(1.5f64.to_bits()).unwrap();
/// assert_eq!(tape.pop_bits().unwrap(), 1.5f64.to_bits());
/// assert_eq!(tape.pop_bits().unwrap(), 7);
/// assert!(tape.pop_bits().is_err());
/// tape.reset_cursor();
/// assert_eq!((tape.len(), tape.cursor()), (2, 2));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tape {
    entries: Vec<u64>,
    cursor: usize,
    /// The most entries the tape may hold: a push beyond is an allocation error, so a runaway
    /// loop ends in an error instead of taking the machine's memory.
    limit: usize,
    /// Was `limit` set (rather than the default)? Native code then applies it besides its
    /// module's limit; else the module's limit alone, which may be higher than the default.
    limit_set: bool,
    /// The JIT's memory for `alloc`, kept with the tape so that repeated calls reuse it.
    arrays: LocalArrays,
}

impl Default for Tape {
    fn default() -> Tape {
        Tape {
            entries: Vec::new(),
            cursor: 0,
            limit: Tape::DEFAULT_LIMIT_BYTES / 8,
            limit_set: false,
            arrays: LocalArrays::default(),
        }
    }
}

impl Tape {
    /// The limit of a new tape: 4 GiB of entries (512 Mi pushes).
    pub const DEFAULT_LIMIT_BYTES: usize = 4 << 30;

    /// An empty tape; allocates nothing until something is pushed.
    pub fn new() -> Tape {
        Tape::default()
    }
    /// The most memory, in bytes, the tape's entries may take (a multiple of 8).
    pub fn limit_bytes(&self) -> usize {
        self.limit * 8
    }
    /// Limit the tape's entries to `bytes` of memory (rounded down to whole entries): a push
    /// past it fails with [`TapeError::Allocation`] (natively, the `TapeAllocation` error).
    ///
    /// ```
    /// let mut tape = jitdiff_ir::Tape::new();
    /// tape.set_limit_bytes(16);
    /// tape.push_bits(1).unwrap();
    /// tape.push_bits(2).unwrap();
    /// assert!(tape.push_bits(3).is_err());
    /// ```
    pub fn set_limit_bytes(&mut self, bytes: usize) {
        self.limit = bytes / 8;
        self.limit_set = true;
    }
    /// The limit set by [`set_limit_bytes`](Self::set_limit_bytes), if any (native code applies
    /// it besides its module's own limit).
    pub fn set_limit(&self) -> Option<usize> {
        self.limit_set.then_some(self.limit * 8)
    }
    /// An empty tape with room for `entries` entries (a failed allocation is an error).
    pub fn with_capacity(entries: usize) -> Result<Tape, TapeError> {
        let mut tape = Tape::new();
        tape.entries.try_reserve_exact(entries).map_err(|_| TapeError::Allocation)?;
        Ok(tape)
    }
    /// The number of entries pushed (pops do not change it).
    pub fn len(&self) -> usize {
        self.entries.len()
    }
    /// Has nothing been pushed (since the last [`clear`](Self::clear))?
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
    /// The memory the tape holds, in bytes (its capacity, not its length).
    pub fn bytes(&self) -> usize {
        self.entries.capacity() * std::mem::size_of::<u64>()
    }
    /// The read cursor: the next `tpop` reads entry `cursor - 1`.
    pub fn cursor(&self) -> usize {
        self.cursor
    }
    /// The entries, oldest first, as raw bits.
    pub fn entries(&self) -> &[u64] {
        &self.entries
    }
    /// Move the read cursor to the end, so a pullback can pop every entry again.
    pub fn reset_cursor(&mut self) {
        self.cursor = self.entries.len();
    }
    /// Remove every entry but keep the memory, for the next forward call.
    pub fn clear(&mut self) {
        self.entries.clear();
        self.cursor = 0;
    }
    /// Remove every entry and free the memory (also that of local arrays).
    pub fn release(&mut self) {
        self.entries = Vec::new();
        self.cursor = 0;
        self.arrays = LocalArrays::default();
    }
    /// The memory held for local arrays (`alloc`) of native calls, in bytes.
    pub fn local_array_bytes(&self) -> usize {
        self.arrays.bytes()
    }
    /// Append `bits` and move the cursor to the end (the semantics of `tpush`).
    pub fn push_bits(&mut self, bits: u64) -> Result<(), TapeError> {
        let len = self.entries.len();
        if len >= self.limit {
            return Err(TapeError::Allocation);
        }
        if len == self.entries.capacity() {
            // Amortised doubling, as `push` does, but never past the limit.
            let target = (2 * len).max(len + 1).max(4).min(self.limit);
            self.entries.try_reserve_exact(target - len).map_err(|_| TapeError::Allocation)?;
        }
        self.entries.push(bits);
        self.cursor = self.entries.len();
        Ok(())
    }
    /// Step the cursor back one entry and return it (the semantics of `tpop`).
    pub fn pop_bits(&mut self) -> Result<u64, TapeError> {
        let below = self.cursor.min(self.entries.len()).checked_sub(1).ok_or(TapeError::Underflow)?;
        let bits = self.entries[below];
        self.cursor = below;
        Ok(bits)
    }
    /// `tsplit`: return the read cursor and move it to the end, so a segment pushed next and
    /// popped again lies above the entries still to be read.
    ///
    /// ```
    /// let mut tape = jitdiff_ir::Tape::new();
    /// tape.push_bits(1).unwrap();
    /// tape.push_bits(2).unwrap();
    /// assert_eq!(tape.pop_bits().unwrap(), 2);
    /// let c = tape.split();
    /// tape.push_bits(9).unwrap();
    /// assert_eq!(tape.pop_bits().unwrap(), 9);
    /// tape.rejoin(c as u64).unwrap();
    /// assert_eq!((tape.len(), tape.pop_bits().unwrap()), (2, 1));
    /// ```
    pub fn split(&mut self) -> i64 {
        let cursor = self.cursor.min(self.entries.len());
        self.cursor = self.entries.len();
        cursor as i64
    }
    /// `trejoin c`: drop the entries from the cursor on and move the cursor back to `c` (an
    /// underflow error when `c` is above the cursor).
    pub fn rejoin(&mut self, cursor: u64) -> Result<(), TapeError> {
        let at = self.cursor.min(self.entries.len());
        if cursor > at as u64 {
            return Err(TapeError::Underflow);
        }
        self.entries.truncate(at);
        self.cursor = cursor as usize;
        Ok(())
    }
    /// The storage, the cursor and the local-array memory, for an executor that runs tape
    /// instructions itself (the JIT builds its native tape state from them and writes the state
    /// back after a call). An executor must keep `cursor <= entries.len()`; readers of a cursor
    /// past the end treat it as the end.
    pub fn parts_mut(&mut self) -> (&mut Vec<u64>, &mut usize, &mut LocalArrays) {
        (&mut self.entries, &mut self.cursor, &mut self.arrays)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_pop_reset_and_clear() {
        let mut tape = Tape::new();
        assert_eq!(tape.bytes(), 0);
        for k in 0..100u64 {
            tape.push_bits(k).unwrap();
        }
        assert_eq!((tape.len(), tape.cursor()), (100, 100));
        assert!(tape.bytes() >= 800);
        for k in (0..100u64).rev() {
            assert_eq!(tape.pop_bits(), Ok(k));
        }
        assert_eq!(tape.pop_bits(), Err(TapeError::Underflow));
        assert_eq!(tape.cursor(), 0);
        tape.reset_cursor();
        assert_eq!(tape.pop_bits(), Ok(99));
        let bytes = tape.bytes();
        tape.clear();
        assert_eq!((tape.len(), tape.cursor(), tape.bytes()), (0, 0, bytes));
        tape.release();
        assert_eq!(tape.bytes(), 0);
    }

    #[test]
    fn a_cursor_past_the_end_counts_as_the_end() {
        let mut tape = Tape::new();
        tape.push_bits(5).unwrap();
        *tape.parts_mut().1 = 10;
        assert_eq!(tape.pop_bits(), Ok(5));
        assert_eq!(tape.pop_bits(), Err(TapeError::Underflow));
    }

    #[test]
    fn an_impossible_reservation_is_an_error() {
        assert_eq!(Tape::with_capacity(usize::MAX).unwrap_err(), TapeError::Allocation);
    }
}
