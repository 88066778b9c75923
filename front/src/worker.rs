//! The thread [`lower_source`](crate::lower_source) parses and lowers on: one per process,
//! started on first use and kept, with a stack of known size.
//!
//! Parsing recurses as deep as the source nests, so it needs a stack the caller's thread may
//! not have. A thread started per call would cost its start and, worse, a fresh allocator
//! arena whose every page faults on first touch — together more than parsing a small model. One
//! kept thread costs two channel messages per call.

use crate::SourceModule;
use crate::error::{FrontError, FrontErrorKind, Position};
use std::sync::mpsc::{Sender, channel};
use std::sync::{Mutex, OnceLock};

/// The stack of the lowering thread: enough for the deepest input the bounds of
/// `check_nesting` let through, whatever the caller's stack.
const STACK_SIZE: usize = 64 << 20;

/// A source, whether to keep the functions as written, and where the answer goes.
type Job = (String, bool, Sender<Result<SourceModule, FrontError>>);

/// The queue of the lowering thread, or `None` where no thread could be started.
static QUEUE: OnceLock<Option<Mutex<Sender<Job>>>> = OnceLock::new();

/// Run `lower` on `source` (and `keep`) on the lowering thread; here, where threads cannot be
/// made.
pub(crate) fn on_lowering_thread(
    source: &str,
    keep: bool,
    lower: fn(&str, bool) -> Result<SourceModule, FrontError>,
) -> Result<SourceModule, FrontError> {
    let queue = QUEUE.get_or_init(|| {
        let (jobs, incoming) = channel::<Job>();
        let thread = std::thread::Builder::new().name("jitdiff-front".into()).stack_size(STACK_SIZE);
        thread
            .spawn(move || {
                for (source, keep, reply) in incoming {
                    let result =
                        std::panic::catch_unwind(|| lower(&source, keep)).unwrap_or_else(|_| Err(parser_panicked()));
                    // The caller may have gone (its thread ended): nothing to tell.
                    let _ = reply.send(result);
                }
            })
            .ok()
            .map(|_| Mutex::new(jobs))
    });
    let Some(queue) = queue else { return lower(source, keep) };
    let (reply, answer) = channel();
    let sent = queue.lock().map(|jobs| jobs.send((source.to_string(), keep, reply)).is_ok()).unwrap_or(false);
    if !sent {
        return lower(source, keep);
    }
    answer.recv().unwrap_or_else(|_| Err(parser_panicked()))
}

fn parser_panicked() -> FrontError {
    FrontError {
        position: Position { line: 1, column: 1 },
        kind: FrontErrorKind::Internal { message: "the parser panicked".into() },
    }
}
