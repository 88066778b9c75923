//! Per-thread scratch memory for the handles: a tape for the pullback state, result slots and
//! buffers. Handles evaluate through `&self`; each call takes a scratch from its thread's pool
//! and returns it, so a handle can sit in an `Arc`, in argmin's `&self` traits or in a rayon
//! closure without a lock, and after the first call on a thread nothing is allocated.

use jitdiff_ir::{RuntimeValue, Tape, Type};
use std::cell::{Cell, RefCell};

/// One call's working memory.
#[derive(Default)]
pub(crate) struct Scratch {
    /// The tape (pullback state).
    pub tape: Tape,
    /// Result slots of a native call.
    pub results: Vec<RuntimeValue>,
    /// Result slots of a pullback run after a forward call in the same scratch.
    pub pullback_results: Vec<RuntimeValue>,
    /// Buffers: d-slices, tangents, seeds.
    pub buffers: Vec<Vec<f64>>,
    /// The results of the forward sweeps of a Jacobian.
    pub jvp_output: Option<crate::forward::JvpOutput>,
    /// Tape entries the last call using this scratch pushed (see [`KEEP_TAPE_BYTES`]).
    pub last_tape_len: usize,
}

impl Scratch {
    /// Result slots shaped for `types`.
    pub fn results_for(&mut self, types: &[Type]) {
        if self.results.len() != types.len() || self.results.iter().zip(types).any(|(r, t)| !fits(r, *t)) {
            self.results = types.iter().map(|&t| zero_of(t)).collect();
        }
    }

    /// `count` buffers of the given sizes, zeroed.
    pub fn zeroed_buffers(&mut self, sizes: impl Iterator<Item = usize>) {
        let mut k = 0;
        for n in sizes {
            if k == self.buffers.len() {
                self.buffers.push(Vec::new());
            }
            let b = &mut self.buffers[k];
            b.clear();
            b.resize(n, 0.0);
            k += 1;
        }
        self.buffers.truncate(k);
    }
}

/// A tape holding more than this is freed after its call, so that one long run does not pin its
/// memory to the thread for the rest of the program — unless the call needed about as much tape
/// as the call before it (within a factor of 2): a large gradient evaluated again and again, as
/// in an optimisation loop, keeps its tape rather than page in fresh memory on every call (GMM
/// d = 32, K = 50, n = 1000: a 77 MB tape, whose page faults made the gradient 1.7 × slower).
/// The first call of a run frees its tape, so one large call costs no memory afterwards.
const KEEP_TAPE_BYTES: usize = 64 << 20;

thread_local! {
    // Boxed, so that taking one out and putting it back moves a pointer, not the struct.
    /// The scratch the next call takes (that of the last outermost call): no borrow flag, no
    /// vector to pop from.
    static HOT: Cell<Option<Box<Scratch>>> = const { Cell::new(None) };
    /// More scratches, for nested calls (from a closure extern that calls a handle); boxed like
    /// the hot one, so that moving one between the two moves a pointer.
    #[allow(clippy::vec_box)]
    static POOL: RefCell<Vec<Box<Scratch>>> = const { RefCell::new(Vec::new()) };
}

/// Run `f` with a scratch of this thread (nested calls get distinct ones).
/// (The native code applies the tape limit of its compile options itself.)
#[inline]
pub(crate) fn with_scratch<R>(f: impl FnOnce(&mut Scratch) -> R) -> R {
    let mut scratch = HOT.take().or_else(|| POOL.with(|p| p.borrow_mut().pop())).unwrap_or_default();
    scratch.tape.clear();
    let result = f(&mut scratch);
    let (used, before) = (scratch.tape.len(), scratch.last_tape_len);
    let repeated = used <= 2 * before && before <= 2 * used;
    if scratch.tape.bytes() > KEEP_TAPE_BYTES && !repeated {
        scratch.tape.release();
    }
    scratch.last_tape_len = used;
    if let Some(nested) = HOT.replace(Some(scratch)) {
        POOL.with(|p| p.borrow_mut().push(nested));
    }
    result
}

/// Free the working memory that derivative calls keep on the calling thread for the next call
/// (the tape of the pullback state and buffers; a tape above 64 MiB is freed after its call
/// anyway, unless the call before needed about as much: see `KEEP_TAPE_BYTES`). Handles evaluate through `&self`, so this memory belongs to the thread, not to a
/// handle: dropping a handle does not free it, this does. The next call allocates again.
///
/// ```
/// jitdiff::release_scratch(); // nothing to free: a no-op
/// ```
pub fn release_scratch() {
    HOT.take();
    POOL.with(|p| p.borrow_mut().clear());
}

/// A zero of type `t`, for result slots.
pub(crate) fn zero_of(t: Type) -> RuntimeValue {
    match t {
        Type::I64 => RuntimeValue::I64(0),
        Type::Bool => RuntimeValue::Bool(false),
        Type::F64x(w) => RuntimeValue::Vector(vec![0.0; w as usize]),
        _ => RuntimeValue::F64(0.0),
    }
}

/// Can `value` hold a result of type `t`?
pub(crate) fn fits(value: &RuntimeValue, t: Type) -> bool {
    match (value, t) {
        (RuntimeValue::I64(_), Type::I64) | (RuntimeValue::Bool(_), Type::Bool) => true,
        (RuntimeValue::Vector(v), Type::F64x(w)) => v.len() == w as usize,
        (RuntimeValue::F64(_), Type::F64) => true,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::{KEEP_TAPE_BYTES, release_scratch, with_scratch};

    /// A call that pushes `entries` tape entries, returning the tape memory the calls before it
    /// left to it.
    fn call(entries: usize) -> usize {
        with_scratch(|s| {
            let inherited = s.tape.bytes();
            (0..entries).for_each(|k| s.tape.push_bits(k as u64).unwrap());
            inherited
        })
    }

    #[test]
    fn a_large_tape_is_kept_only_while_calls_keep_needing_it() {
        release_scratch();
        let large = KEEP_TAPE_BYTES / 8 + 1;
        assert_eq!(call(large), 0);
        // A first large call frees its tape: one long run pins no memory.
        assert_eq!(call(large), 0);
        // The same size again: kept, the next call pages nothing in.
        assert!(call(large) > KEEP_TAPE_BYTES);
        assert!(call(large * 3 / 2) > KEEP_TAPE_BYTES);
        // A call needing far less frees it.
        assert!(call(10) > KEEP_TAPE_BYTES);
        assert!(call(10) < KEEP_TAPE_BYTES);
        release_scratch();
    }
}
