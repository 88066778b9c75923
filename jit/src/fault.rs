//! Details of the last failure on this thread that a status code alone cannot carry: the index
//! and length of an out-of-bounds access, the name and message of a failed extern.
//!
//! Native code records them just before returning a failure status (from a cold block, so the
//! hot path pays nothing), and the safe handle takes them when it turns the status into an
//! error — on the same thread, right after the call.

use std::cell::RefCell;

/// What the status code does not say.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Fault {
    OutOfBounds { index: i64, len: usize },
    Extern { name: String, message: String },
}

thread_local! {
    static LAST_FAULT: RefCell<Option<Fault>> = const { RefCell::new(None) };
}

/// Record the detail of a failure about to be reported.
pub(crate) fn record(fault: Fault) {
    LAST_FAULT.with(|slot| *slot.borrow_mut() = Some(fault));
}

/// Take the detail of the last failure on this thread.
pub(crate) fn take() -> Option<Fault> {
    LAST_FAULT.with(|slot| slot.borrow_mut().take())
}

/// The symbol native code calls from an out-of-bounds error block.
pub(crate) const OUT_OF_BOUNDS_SYMBOL: &str = "jitdiff_record_out_of_bounds";

/// Called by native code with the failing index and the slice length.
pub(crate) extern "C" fn record_out_of_bounds(index: i64, len: i64) {
    record(Fault::OutOfBounds { index, len: len as usize });
}
