//! The tape as native code sees it: a [`TapeState`] the handle builds from a borrowed
//! [`jitdiff_ir::Tape`] for the duration of one call, and the grow helper native code calls when
//! a `tpush` finds the buffer full.
//!
//! The hot paths are inline: `tpush` loads `len` and `cap`, calls [`tape_grow`] only when they are
//! equal, stores the entry at `base + 8 * len` and writes `len + 1` to both `len` and `cursor`;
//! `tpop` fails when `cursor` is 0, else decrements it and loads `base + 8 * cursor`. The state's
//! invariant, which every operation keeps, is `cursor <= len <= cap`, with `base` valid for `cap`
//! entries of which the first `len` are initialised.

use jitdiff_ir::{LocalArrays, Tape};
use std::marker::PhantomData;

/// Byte offsets of the [`TapeState`] fields native code reads and writes.
pub(crate) const BASE_OFFSET: i32 = 0;
pub(crate) const LEN_OFFSET: i32 = 8;
pub(crate) const CAP_OFFSET: i32 = 16;
pub(crate) const CURSOR_OFFSET: i32 = 24;

/// The symbol of [`tape_grow`] in every JIT module.
pub(crate) const GROW_SYMBOL: &str = "jitdiff_tape_grow";

/// The tape of a running call, as native code reads it.
#[repr(C)]
#[derive(Debug)]
pub(crate) struct TapeState {
    base: *mut u64,
    len: u64,
    cap: u64,
    cursor: u64,
    /// The vector `base` points into; only [`tape_grow`] and the write-back touch it.
    owner: *mut Vec<u64>,
    /// The tape's memory for `alloc`; only the local-array helpers below touch it.
    arrays: *mut LocalArrays,
    /// The most entries [`tape_grow`] may make room for (the tape's and the module's limit).
    limit: u64,
}

impl TapeState {
    /// The state lent to a call of a function that needs no tape (see
    /// [`needs_tape`](crate::callgraph::needs_tape)): nothing behind it. Such native code never
    /// reads it, so a call need not borrow a tape (which costs a small call most of its time).
    #[inline]
    pub(crate) fn unused() -> TapeState {
        TapeState {
            base: std::ptr::null_mut(),
            len: 0,
            cap: 0,
            cursor: 0,
            owner: std::ptr::null_mut(),
            arrays: std::ptr::null_mut(),
            limit: 0,
        }
    }
}

// The offsets native code uses are the field offsets.
const _: () = {
    assert!(std::mem::offset_of!(TapeState, base) == BASE_OFFSET as usize);
    assert!(std::mem::offset_of!(TapeState, len) == LEN_OFFSET as usize);
    assert!(std::mem::offset_of!(TapeState, cap) == CAP_OFFSET as usize);
    assert!(std::mem::offset_of!(TapeState, cursor) == CURSOR_OFFSET as usize);
};

/// Called by native code when a `tpush` (or a run of pushes) finds fewer free entries than it
/// needs: grows the owning vector (amortised doubling, up to the limit) until `cap >= need` and
/// updates `base` and `cap`. Returns 0, or 1 when the limit or the allocator stops it first;
/// `cap` is then the largest capacity reached, so entries up to it fit (and native code names
/// the first push past it).
pub(crate) extern "C" fn tape_grow(state: *mut TapeState, need: u64) -> i32 {
    // SAFETY: native code passes the `TapeState` pointer it was given by `NativeTape::state`,
    // which points to a live state exclusively used by this call (no other reference to it
    // exists while native code runs).
    let state = unsafe { &mut *state };
    // SAFETY: `owner` was taken from the `&mut Tape` that `NativeTape` borrows for the whole call,
    // and nothing else touches that vector while native code runs.
    let entries = unsafe { &mut *state.owner };
    // SAFETY: native code keeps `len <= cap` (the vector's capacity, since `base`/`cap` are only
    // ever set from this vector) and has written every entry below `len`.
    unsafe { entries.set_len(state.len as usize) };
    let len = state.len as usize;
    let mut status = 0;
    while state.cap < need {
        let cap = state.cap as usize;
        let target = (2 * cap).max(cap + 1).max(4).min(state.limit as usize);
        if target <= cap || entries.try_reserve_exact(target - len).is_err() {
            status = 1;
            break;
        }
        state.base = entries.as_mut_ptr();
        state.cap = entries.capacity() as u64;
    }
    status
}

/// Run `f` on this thread's scratch tape, emptied first: the tape of a call made without one
/// ([`CompiledFn::call`](crate::CompiledFn::call) and the like). Reusing it keeps the memory of
/// local arrays (and of any pushes) from one call to the next, so such calls do not allocate once
/// warm. A nested call on the same thread (from a closure extern) gets a fresh tape, and a
/// scratch tape that grew beyond 16 MiB is freed afterwards.
pub(crate) fn with_scratch_tape<T>(f: impl FnOnce(&mut Tape) -> T) -> T {
    thread_local! {
        static SCRATCH: std::cell::RefCell<Tape> = std::cell::RefCell::new(Tape::new());
    }
    const KEEP_BYTES: usize = 16 << 20;
    SCRATCH.with(|cell| match cell.try_borrow_mut() {
        Ok(mut tape) => {
            tape.clear();
            let out = f(&mut tape);
            if tape.bytes() + tape.local_array_bytes() > KEEP_BYTES {
                tape.release();
            }
            out
        }
        Err(_) => f(&mut Tape::new()),
    })
}

/// The symbols of the local-array helpers in every JIT module.
pub(crate) const ALLOC_SYMBOL: &str = "jitdiff_local_alloc";
pub(crate) const MARK_SYMBOL: &str = "jitdiff_local_mark";
pub(crate) const RELEASE_SYMBOL: &str = "jitdiff_local_release";

/// `alloc len`: a zeroed array of `len` `f64`s from the tape's [`LocalArrays`], or null when
/// `len < 0` or the memory cannot be allocated. The array stays valid until native code releases
/// to a mark taken before it (the chunks never move).
pub(crate) extern "C" fn local_alloc(state: *mut TapeState, len: i64) -> *mut f64 {
    // SAFETY: as in `tape_grow`: native code passes the live state `NativeTape::state` gave it,
    // and `arrays` came from the `&mut Tape` that `NativeTape` borrows for the whole call; no
    // reference into the allocator is held across native code (arrays are raw pointers there).
    let arrays = unsafe { &mut *(*state).arrays };
    match usize::try_from(len).ok().and_then(|len| arrays.alloc(len)) {
        Some(array) => array.as_mut_ptr(),
        None => std::ptr::null_mut(),
    }
}

/// The allocator's mark, taken when a function that allocates starts.
pub(crate) extern "C" fn local_mark(state: *mut TapeState) -> u64 {
    // SAFETY: see `local_alloc`.
    unsafe { (*(*state).arrays).mark() }
}

/// Free the arrays allocated since `mark`, when the function that took it returns.
pub(crate) extern "C" fn local_release(state: *mut TapeState, mark: u64) {
    // SAFETY: see `local_alloc`.
    unsafe { (*(*state).arrays).release(mark) }
}

/// A [`Tape`] lent to native code for one call: the state native code works on, written back to
/// the tape (length and cursor) when this is dropped — also after a failed call, so the tape
/// holds what was pushed before the failure, as with the interpreter.
pub(crate) struct NativeTape<'t> {
    state: TapeState,
    cursor: *mut usize,
    /// The local-array mark when the call started, released to on drop: a failed call returns
    /// without releasing its arrays.
    arrays_mark: u64,
    _tape: PhantomData<&'t mut Tape>,
}

impl<'t> NativeTape<'t> {
    /// Lend `tape` to native code, which may grow it to `limit_bytes` at most (or the limit set
    /// on the tape, if lower). A cursor past the end is treated as the end.
    #[inline]
    pub fn new(tape: &'t mut Tape, limit_bytes: usize) -> NativeTape<'t> {
        // The module's limit (`JitOptions::tape_limit`, which may exceed the tape's default),
        // and the tape's own when one was set.
        let limit = (tape.set_limit().unwrap_or(usize::MAX).min(limit_bytes) / 8) as u64;
        let (entries, cursor, arrays) = tape.parts_mut();
        let arrays_mark = arrays.mark();
        let arrays: *mut LocalArrays = arrays;
        let len = entries.len();
        *cursor = (*cursor).min(len);
        let cursor_value = *cursor;
        let cursor: *mut usize = cursor;
        let owner: *mut Vec<u64> = entries;
        // SAFETY: `owner` comes from a live `&mut Vec<u64>`; reading its buffer pointer and
        // capacity through it creates no lasting reference.
        let (base, cap) = unsafe { ((*owner).as_mut_ptr(), (*owner).capacity()) };
        let state =
            TapeState { base, len: len as u64, cap: cap as u64, cursor: cursor_value as u64, owner, arrays, limit };
        NativeTape { state, cursor, arrays_mark, _tape: PhantomData }
    }

    /// The pointer to pass to native code (valid while `self` is neither moved nor dropped).
    #[inline]
    pub fn state(&mut self) -> *mut TapeState {
        &mut self.state
    }
}

impl Drop for NativeTape<'_> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: native code has returned, so `owner` and `cursor` are again only reachable
        // through this value, which holds the `&mut Tape` borrow they came from; native code kept
        // `cursor <= len <= capacity` and initialised every entry below `len`. `arrays` came from
        // the same borrow, and no native code holds one of its arrays any more.
        unsafe {
            (*self.state.owner).set_len(self.state.len as usize);
            *self.cursor = self.state.cursor as usize;
            (*self.state.arrays).release(self.arrays_mark);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The module's limit applies even above a tape's default (a handle's scratch tape was never
    /// given a limit); a limit set on the tape applies too, whichever is lower.
    #[test]
    fn the_limit_is_the_modules_and_the_one_set_on_the_tape() {
        let mut tape = Tape::new();
        assert_eq!(NativeTape::new(&mut tape, 8 << 30).state.limit, 1 << 30);
        assert_eq!(NativeTape::new(&mut tape, 1 << 20).state.limit, 1 << 17);
        tape.set_limit_bytes(4096);
        assert_eq!(NativeTape::new(&mut tape, 8 << 30).state.limit, 512);
        assert_eq!(NativeTape::new(&mut tape, 1024).state.limit, 128);
    }

    #[test]
    fn grow_keeps_the_entries_and_the_write_back_sets_length_and_cursor() {
        let mut tape = Tape::new();
        tape.push_bits(11).unwrap();
        {
            let mut native = NativeTape::new(&mut tape, usize::MAX);
            let state = native.state();
            // Play native code: fill to capacity, grow, push one more.
            // SAFETY: `state` is the live state of `native`; the writes below keep the invariant
            // `cursor <= len <= cap` and stay within `cap` entries of `base`.
            unsafe {
                while (*state).len < (*state).cap {
                    *(*state).base.add((*state).len as usize) = (*state).len;
                    (*state).len += 1;
                }
                let need = (*state).len + 1;
                assert_eq!(tape_grow(state, need), 0);
                assert!((*state).cap >= need);
                *(*state).base.add((*state).len as usize) = 99;
                (*state).len += 1;
                (*state).cursor = (*state).len - 1;
            }
        }
        let n = tape.len();
        assert!(n >= 3);
        assert_eq!(tape.entries()[0], 11);
        assert_eq!(tape.entries()[n - 1], 99);
        assert_eq!(tape.cursor(), n - 1);
    }
}
