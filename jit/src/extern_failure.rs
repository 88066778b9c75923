//! Details of a failed closure extern that a status code alone cannot carry: its name and
//! message. The closure trampoline records them just before native code returns the failure
//! status, and the safe handle takes them when it turns the status into an error — on the same
//! thread, right after the call. (An out-of-bounds failure writes its index and length into the
//! result buffer instead: see the crate docs.)

use std::cell::RefCell;

/// What the status code does not say.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ExternFailure {
    pub name: String,
    pub message: String,
}

thread_local! {
    static LAST_FAULT: RefCell<Option<ExternFailure>> = const { RefCell::new(None) };
}

/// Record the detail of a failure about to be reported.
pub(crate) fn record(failure: ExternFailure) {
    LAST_FAULT.with(|slot| *slot.borrow_mut() = Some(failure));
}

/// Take the detail of the last failure on this thread.
pub(crate) fn take() -> Option<ExternFailure> {
    LAST_FAULT.with(|slot| slot.borrow_mut().take())
}
