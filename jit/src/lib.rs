//! # jitdiff-jit
//!
//! Lowers jitdiff IR to Cranelift, JIT-compiles it for the host CPU, and hands out safe Rust
//! handles to the native code. Callers never write `unsafe`.
//!
//! ```
//! use jitdiff_ir::{parse_module, ExternRegistry, RuntimeValue};
//! use jitdiff_jit::{compile, Arg, JitOptions};
//! let ir = parse_module(
//!     "func @dot(x: slice, y: slice) -> f64 {
//! entry:
//!     n = len x
//!     zero = iconst 0
//!     acc0 = fconst 0.0
//!     jump head(zero, acc0)
//! head(i: i64, acc: f64):
//!     more = icmp lt i, n
//!     br more, body, exit(acc)
//! body:
//!     xi = load x, i
//!     yi = load y, i
//!     p = fmul xi, yi
//!     acc2 = fadd acc, p
//!     one = iconst 1
//!     i2 = iadd i, one
//!     jump head(i2, acc2)
//! exit(r: f64):
//!     ret r
//! }
//! ",
//! )
//! .unwrap();
//! let compiled = compile(&ir, &ExternRegistry::new(), &JitOptions::new()).unwrap();
//! let dot = compiled.function("dot").unwrap();
//! let out = dot.call(&mut [Arg::Slice(&[1.0, 2.0, 3.0]), Arg::Slice(&[4.0, 5.0, 6.0])]).unwrap();
//! assert_eq!(out, vec![RuntimeValue::F64(32.0)]);
//! // y shorter than x: reported as an error, never a read past the end.
//! let err = dot.call(&mut [Arg::Slice(&[1.0, 2.0]), Arg::Slice(&[4.0])]).unwrap_err();
//! assert_eq!(err.to_string(), "index 1 out of bounds for a slice of length 1 at @dot, block body, inst 1");
//! ```
//!
//! ## Lowering
//!
//! Every IR construct has a direct Cranelift counterpart. `f64` is `F64`, `i64` is `I64`, `bool`
//! is an `I8` holding 0 or 1, a slice is two `I64` values (pointer, length), and `f64xW` is W/2
//! `F64X2` registers (x86-64 Cranelift lowers only 128-bit vectors). IR blocks become Cranelift
//! blocks with the same parameters, lowered in reverse post-order; branches are emitted so that
//! the `then` side (a loop body) falls through. Non-zero float constants are loaded from a
//! per-module constant pool where the IR defines them, so constants defined before a loop stay
//! in registers (Cranelift would otherwise rematerialize them inside it). Library math that
//! Cranelift has no instruction for (`sin`, `exp`, `pow`, ...) calls the `extern "C"` functions of
//! `jitdiff_ir::math` — the very functions the interpreter calls — so results are bit-identical;
//! `sqrt`, `abs`, `floor`, `ceil`, `fneg` are inline, `min`/`max` are compare-and-select (the
//! `minsd` rule of `math::min`), and `powi` with a constant exponent `|n| <= 4` is expanded into
//! the same multiplications `math::powi` performs. `fmul C, (fadd a, a)` with a constant
//! `1 <= |C|` (`2C` finite) is lowered as `fmul 2C, a`, which gives the same bits (see
//! `lower/doubling.rs` for the proof) with one float operation fewer — the shape forward mode
//! produces for a constant times the derivative of a square.
//!
//! ## Native calling convention
//!
//! Each IR function `@f(params) -> results` becomes an **internal** native function
//!
//! ```text
//! fn(depth: i64, out: *mut u64, tape: *mut TapeState, <parts of each parameter>...) -> i32
//! ```
//!
//! - The `i32` is a **status**: 0 means success; any other value `k` names entry `k - 1` of the
//!   module's *site table*: the error kind (out of bounds, division by zero, call depth
//!   exceeded, tape underflow, tape allocation, extern failed) and its site (function, block, instruction index). A caller that
//!   sees a non-zero status from a callee returns it unchanged, so the innermost site is reported.
//!   A failed bounds check also writes the index and the slice length into the first two `out`
//!   slots (every out buffer has at least two; a caller passing a failure on copies them to its
//!   own `out`), from a cold block of plain stores, so error exits put no call-ABI constraints
//!   on the hot path. A failed closure extern leaves its message in a thread-local.
//! - Results are written through `out` in **slot layout**: one `u64` per `f64`/`i64`/`bool`
//!   (0/1), two per slice (pointer, length), W per `f64xW`, in order. A caller passes the
//!   address of a stack slot and loads the results after a successful call.
//! - `tape` points to the call's tape state (`base`, `len`, `cap`, `cursor` and the owning
//!   vector), built by the safe handle from a borrowed [`jitdiff_ir::Tape`] (or a fresh empty one
//!   for a plain call) and written back after the call; every callee gets the same pointer.
//!   `tpush` is inline (load `len` and `cap`, store the entry, `len = cursor = len + 1`) and calls
//!   a grow helper only when `len == cap` (amortised doubling with `try_reserve`; failure is the
//!   site's `TapeAllocation` status); `tpop` is inline (`cursor == 0` is `TapeUnderflow`).
//! - `depth` counts IR frames (the entry call is 1). Calls are direct (absolute-address) calls;
//!   functions that can be reached by a chain of `MAX_CALL_DEPTH` (256) frames — those in or
//!   reachable from a recursive cycle — compare `depth` with the limit before calling, so deep
//!   recursion is a `CallDepthExceeded` error, not a stack overflow.
//! - Every `load`/`store`/`vload`/`vstore` compares the index (unsigned, so negative indices fail
//!   too) with the length, branching to a cold error block: no input can make native code touch
//!   memory it was not given. Integer division checks for a zero divisor and defines
//!   `MIN / -1 = MIN`, `MIN % -1 = 0` instead of trapping.
//!
//! Each function also gets an **entry trampoline**,
//! `extern "C" fn(args: *const u64, results: *mut u64, tape: *mut TapeState) -> i32`, which loads
//! the arguments from a slot-layout buffer and calls the internal function at depth 1 with
//! `results` as `out`. The safe handles check the arguments against the signature, pack them
//! into a stack buffer, lend the tape, call the trampoline and decode the results
//! ([`CompiledFn::call`], [`CompiledFn::call_into`], their `_with_tape` forms, and the
//! allocation-free scalar fast path [`CompiledFn::typed`]). A [`TypedFn`] skips the trampoline:
//! its signature is known statically, so it calls the internal function directly, arguments in
//! registers (about 2 ns over a rustc call, against about 15 ns through slot buffers).
//!
//! Externs registered as `extern "C"` float functions are called directly. Closures are called
//! through a trampoline that rebuilds the arguments (slices from pointer and length, lent like
//! the interpreter lends them), runs the closure (catching panics) and writes the results back;
//! an error becomes the call site's `ExternFailed` status.
//!
//! ## Options
//!
//! [`JitOptions`] chooses Cranelift's optimisation level and register allocator (the default
//! picks the linear-time single-pass allocator only for functions of more than 20,000
//! instructions, where the backtracking one can take seconds). Bounds checks can only be turned
//! off through the `unsafe` [`JitOptions::without_bounds_checks`], meant for measuring what the
//! checks cost (about 10% on Extended Rosenbrock): the caller then promises every index is in
//! bounds. A safe way to drop redundant checks is [`JitOptions::shadow_slice`]: declaring that
//! one slice parameter holds `lanes` entries per element of another (a tangent and its primal)
//! makes the function check that length relation on entry and skip the bounds check of an
//! access whose index a dominating access to the other slice (or to the same slice) already
//! checked; [`CompiledFn::bounds_check_stats`] counts the checks emitted and elided. Counted
//! loops whose indices are affine in the induction variable (`i + base`, `3 i - k`) are compiled
//! twice: a fast copy without the checks of those accesses, entered when a check before the loop
//! proves them in bounds at both ends of the iteration range, and the checked copy otherwise, so
//! results and errors never change (`JITDIFF_NO_VERSIONING` turns this off, for comparisons).
//! Such a loop of one body block may also get a copy running two iterations at a time, their
//! shared arithmetic in `f64x2` lanes and their carried sums in order, bit for bit the scalar
//! loop's results (`JITDIFF_NO_PAIRS` turns that off; see docs/jit.md).
//! Loops tested at their top are rotated, their test copied to the end of the body
//! (`JITDIFF_NO_ROTATION` turns that off; see docs/jit.md), and values a call-free loop shares
//! with code that calls are copied at its edges (`JITDIFF_NO_LOOP_COPIES` turns that off).
//! Cranelift's own IR verifier checks every lowered function in debug builds (all tests
//! run with it) and is skipped in release builds, where it costs 10-15% of compile time. Setting
//! the environment variable `JITDIFF_DISASM` prints the Cranelift IR and machine code of every
//! function compiled (see `jit/examples/disasm.rs`; `JITDIFF_DISASM=optimized` adds the IR after
//! Cranelift's optimisations). For profiling, `JITDIFF_PERF_MAP` appends each function's address
//! range to `/tmp/perf-PID.map`, where `perf report` finds names for JIT code, and writes its
//! machine code to `/tmp/perf-PID-NAME.bin` (`objdump -D -b binary -m i386:x86-64`).
//!
//! ## Testing against the interpreter
//!
//! `differential_call` (feature `testing`) runs one call under the interpreter and the JIT and compares results
//! (bit for bit, any NaN equal to any NaN), errors (kind, site, index and length, extern
//! message) and final `mslice` contents; the crate's tests run it on every opcode at edge values
//! and on thousands of random programs.
//!
//! ## Memory and threads
//!
//! One [`compile`] call makes one Cranelift `JITModule`; its executable memory is freed when the
//! last [`CompiledModule`] / [`CompiledFn`] / [`TypedFn`] handle to it drops. Handles are `Send +
//! Sync` and can be called from many threads at once: after finalization only immutable
//! function pointers and tables are used.
//!
//! Limitation: the call-depth limit bounds recursion to 256 frames, but not frame *size*: 256
//! nested calls of a function with a very large spill area can still exhaust a small thread
//! stack (stack probes make that a clean stack-overflow abort, never a memory corruption).

#![warn(missing_docs)]

mod abi;
mod arg;
mod callgraph;
mod closure;
mod compile;
mod direct;
mod error;
mod extern_failure;
mod frame;
mod handle;
mod inline;
mod isa;
mod lower;
mod options;
#[cfg(feature = "testing")]
mod oracle;
mod shadow;
mod sites;
mod symbols;
mod tape;
mod typed;

#[cfg(feature = "testing")]
pub mod alloc_count;
pub use arg::Arg;
pub use compile::compile;
pub use error::{CallError, JitError, ShadowMismatch};
pub use frame::{ArgFrame, FRAME_SLOTS, FrameResults};
pub use handle::{CompiledFn, CompiledModule};
pub use jitdiff_ir::Fault;
pub use jitdiff_ir::contain_panics;
pub use options::{JitOptions, OptLevel, RegAlloc};
#[cfg(feature = "testing")]
pub use oracle::{Agreement, Disagreement, differential_call, differential_call_with_tape, same_f64, same_value};
pub use shadow::{BoundsCheckStats, ShadowSlice};
pub use typed::{MAX_TYPED_SLOTS, NativeArgs, NativeResults, Param, Scalar, Slice, SliceMut, TypedFn};
