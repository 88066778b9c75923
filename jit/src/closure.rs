//! Calling extern closures from native code.
//!
//! Native code cannot call a Rust closure directly, so a closure extern is lowered to a call of
//! [`closure_trampoline`] with a pointer to the closure's [`ClosureCtx`] (owned by the compiled
//! module, so it lives as long as the code) and two `u64` slot buffers in the caller's frame:
//! the packed arguments and room for the results. The trampoline rebuilds the arguments —
//! slices from pointer and length — calls the closure, checks what it returned and writes the
//! results back. A closure error, a panic, or results of the wrong kinds make the trampoline
//! return non-zero, which native code turns into the call site's `ExternFailed` status; the
//! message is recorded as the thread's last [`ExternFailure`](crate::extern_failure::ExternFailure).
//!
//! Slices are lent exactly as the interpreter lends them: an `mslice` passed twice is an error
//! (two `&mut` to the same memory), and a read-only use of memory that is also passed mutably
//! gets a snapshot taken before the call.

use crate::abi::{slot_count, slots_of};
use crate::extern_failure::{self, ExternFailure};
use jitdiff_ir::{ExternArg, ExternClosure, RuntimeValue, Type};

/// Everything the trampoline needs to call one closure extern.
pub(crate) struct ClosureCtx {
    pub name: String,
    pub params: Vec<Type>,
    pub returns: Vec<Type>,
    pub f: ExternClosure,
}

/// The symbol name of [`closure_trampoline`] in every JIT module.
pub(crate) const TRAMPOLINE_SYMBOL: &str = "jitdiff_closure_trampoline";

/// Called by native code for a closure extern; returns 0 on success, 1 on failure.
///
/// `args` holds `slots_of(ctx.params)` slots in the calling-convention layout; `results` has room
/// for `slots_of(ctx.returns)` slots.
pub(crate) extern "C" fn closure_trampoline(ctx: *const ClosureCtx, args: *const u64, results: *mut u64) -> i32 {
    // SAFETY: native code passes the address of a `ClosureCtx` boxed in the `CompiledModule`
    // whose code is running; the module (and so the box) outlives every call of its code.
    let ctx = unsafe { &*ctx };
    // SAFETY: native code passes a buffer of exactly `slots_of(params)` initialised slots in its
    // own stack frame, alive for the duration of this call.
    let arg_slots = unsafe { std::slice::from_raw_parts(args, slots_of(&ctx.params)) };
    // SAFETY: `results` is a separate region of the same frame with room for
    // `slots_of(returns)` slots, written only here.
    let result_slots = unsafe { std::slice::from_raw_parts_mut(results, slots_of(&ctx.returns)) };
    let outcome = match jitdiff_ir::contain_panics(|| call_closure(ctx, arg_slots, result_slots)) {
        Ok(outcome) => outcome,
        Err(what) => Err(format!("panicked: {what}")),
    };
    match outcome {
        Ok(()) => 0,
        Err(message) => {
            extern_failure::record(ExternFailure { name: ctx.name.clone(), message });
            1
        }
    }
}

/// A slice argument as native code passed it.
#[derive(Clone, Copy)]
struct RawSlice {
    ptr: u64,
    len: u64,
    mutable: bool,
}

impl RawSlice {
    /// Do the two share memory, or are they (as far as native code can tell) the same slice?
    ///
    /// Identical pointer and length count even when empty, so that one empty `mslice` passed
    /// twice is refused exactly as the interpreter refuses it. (Two *different* empty slices
    /// that happen to share a dangling pointer are refused too — the one case where the
    /// interpreter, which tracks slice identity, would accept.)
    fn overlaps(&self, other: &RawSlice) -> bool {
        let end = |s: &RawSlice| s.ptr.saturating_add(s.len.saturating_mul(8));
        (self.ptr == other.ptr && self.len == other.len)
            || (self.len > 0 && other.len > 0 && self.ptr < end(other) && other.ptr < end(self))
    }
}

fn call_closure(ctx: &ClosureCtx, arg_slots: &[u64], result_slots: &mut [u64]) -> Result<(), String> {
    // Gather slices first: which may be lent directly and which need a snapshot.
    let mut slices: Vec<Option<RawSlice>> = Vec::with_capacity(ctx.params.len());
    let mut at = 0;
    for &ty in &ctx.params {
        slices.push(ty.is_slice().then(|| RawSlice {
            ptr: arg_slots[at],
            len: arg_slots[at + 1],
            mutable: ty == Type::SliceMut,
        }));
        at += slot_count(ty);
    }
    let mut snapshot = vec![false; slices.len()];
    for (i, a) in slices.iter().enumerate() {
        let Some(a) = a else { continue };
        for (j, b) in slices.iter().enumerate() {
            let Some(b) = b else { continue };
            if i == j || !a.overlaps(b) {
                continue;
            }
            if a.mutable && b.mutable {
                return Err("the same mslice is passed twice; externs cannot alias mutable slices".into());
            }
            // A read-only view of memory also lent mutably gets a copy taken before the call.
            snapshot[i] |= !a.mutable && b.mutable;
        }
    }
    let copies: Vec<Option<Vec<f64>>> = slices
        .iter()
        .zip(&snapshot)
        .map(|(s, &copy)| {
            let s = s.as_ref().filter(|_| copy)?;
            // SAFETY: the pointer and length came from an `Arg` slice of the entry call, borrowed
            // for the whole call (see the argument loop below); this only copies it, before any
            // `&mut` to the same memory is created.
            Some(unsafe { std::slice::from_raw_parts(s.ptr as *const f64, s.len as usize) }.to_vec())
        })
        .collect();

    let mut args = Vec::with_capacity(ctx.params.len());
    let mut at = 0;
    for (k, &ty) in ctx.params.iter().enumerate() {
        let s = &arg_slots[at..at + slot_count(ty)];
        at += slot_count(ty);
        args.push(match ty {
            Type::F64 => ExternArg::F64(f64::from_bits(s[0])),
            Type::I64 => ExternArg::I64(s[0] as i64),
            Type::Bool => ExternArg::Bool(s[0] != 0),
            Type::Slice => match &copies[k] {
                Some(copy) => ExternArg::Slice(copy),
                // SAFETY: slice parts are always a pointer and length that came from an `Arg`
                // slice of the entry call (borrowed for the whole call), a local array of the call
                // (alive until its frame returns, after this call) or a table of the compiled
                // module (read-only data it owns while any of its code runs), passed along
                // unchanged: non-null and aligned even when empty. No `&mut` to overlapping memory
                // exists: overlaps with mutable slices were given snapshots above.
                None => ExternArg::Slice(unsafe { std::slice::from_raw_parts(s[0] as *const f64, s[1] as usize) }),
            },
            // SAFETY: as above; the entry call received this memory as `&mut [f64]`, and no other
            // argument overlaps it (checked above).
            Type::SliceMut => {
                ExternArg::SliceMut(unsafe { std::slice::from_raw_parts_mut(s[0] as *mut f64, s[1] as usize) })
            }
            Type::F64x(_) => return Err("vector arguments are not supported for externs".into()),
        });
    }
    let returned = (ctx.f)(&mut args)?;
    drop(args);
    if returned.len() != ctx.returns.len() {
        return Err(format!("returned {} values, {} declared", returned.len(), ctx.returns.len()));
    }
    let mut at = 0;
    for (value, &ty) in returned.iter().zip(&ctx.returns) {
        let out = &mut result_slots[at..at + slot_count(ty)];
        at += slot_count(ty);
        match (value, ty) {
            (RuntimeValue::F64(x), Type::F64) => out[0] = x.to_bits(),
            (RuntimeValue::I64(x), Type::I64) => out[0] = *x as u64,
            (RuntimeValue::Bool(x), Type::Bool) => out[0] = *x as u64,
            (RuntimeValue::Vector(v), Type::F64x(w)) if v.len() == w as usize => {
                out.iter_mut().zip(v).for_each(|(o, x)| *o = x.to_bits())
            }
            _ => return Err(format!("returned {} where {ty} is declared", value.kind())),
        }
    }
    Ok(())
}
