//! Containing panics of code jitdiff does not control (Cranelift, a user's closure extern): run
//! it, and turn a panic into its message, without the panic hook printing a backtrace to the
//! user's terminal. A panic in Cranelift is a bug (ours or Cranelift's), never the user's; the
//! caller reports it as an error naming the user's function.

use std::cell::Cell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Once;

thread_local! {
    /// Set while this thread runs contained code: the hook stays quiet for its panics.
    static CONTAINED: Cell<bool> = const { Cell::new(false) };
    /// Where the last contained panic happened, for the error message (a bug report's clue).
    static LOCATION: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

static INSTALL: Once = Once::new();

/// Install (once per process) a panic hook that is silent for contained panics and defers to
/// the hook that was there before for every other panic.
fn install_quiet_hook() {
    INSTALL.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if CONTAINED.with(Cell::get) {
                let at = info.location().map(|l| format!("{}:{}", l.file(), l.line()));
                LOCATION.with(|slot| *slot.borrow_mut() = at);
            } else {
                previous(info);
            }
        }));
    });
}

/// Run `work`; a panic inside it becomes `Err(message)` (with the panic's source location).
///
/// ```
/// let r: Result<i32, String> = jitdiff_ir::contain_panics(|| panic!("boom"));
/// assert!(r.unwrap_err().contains("boom"));
/// assert_eq!(jitdiff_ir::contain_panics(|| 7), Ok(7));
/// ```
pub fn contain_panics<T>(work: impl FnOnce() -> T) -> Result<T, String> {
    install_quiet_hook();
    let was = CONTAINED.with(|c| c.replace(true));
    let outcome = catch_unwind(AssertUnwindSafe(work));
    CONTAINED.with(|c| c.set(was));
    outcome.map_err(|payload| {
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic without a message".into());
        match LOCATION.with(|slot| slot.borrow_mut().take()) {
            Some(at) => format!("{message} (at {at})"),
            None => message,
        }
    })
}
