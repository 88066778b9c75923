//! The native calling convention: how IR types become Cranelift values, how values are laid out
//! in the `u64` slot buffers the entry trampolines and closure externs use, and the signatures of
//! the internal functions. See the crate docs for the overview.

use cranelift_codegen::ir::{self as clif, AbiParam, InstBuilder, MemFlagsData, Signature, types};
use cranelift_frontend::FunctionBuilder;
use jitdiff_ir::Type;

/// The Cranelift type of the status every internal function returns (0 = ok, else a site id).
pub(crate) const STATUS: clif::Type = types::I32;
/// Every out buffer has at least this many slots: a failing bounds check writes the index and
/// the slice length into the first two.
pub(crate) const MIN_OUT_SLOTS: usize = 2;
/// Pointers and lengths.
pub(crate) const PTR: clif::Type = types::I64;

/// The Cranelift type of one part of a value of IR type `ty`.
///
/// A value is a list of parts: `f64` → one `F64`; `i64` → one `I64`; `bool` → one `I8` (0 or 1);
/// `slice`/`mslice` → `I64` pointer then `I64` length; `f64xW` → W/2 `F64X2` chunks (x86-64
/// Cranelift only lowers 128-bit vectors).
pub(crate) fn part_type(ty: Type) -> &'static [clif::Type] {
    const F64: &[clif::Type] = &[types::F64];
    const I64: &[clif::Type] = &[types::I64];
    const BOOL: &[clif::Type] = &[types::I8];
    const SLICE: &[clif::Type] = &[PTR, types::I64];
    const V: &[clif::Type] = &[types::F64X2; 8];
    match ty {
        Type::F64 => F64,
        Type::I64 => I64,
        Type::Bool => BOOL,
        Type::Slice | Type::SliceMut => SLICE,
        Type::F64x(w) => &V[..(w as usize / 2).clamp(1, 8)],
    }
}

/// How many parts (Cranelift values) a value of type `ty` has.
pub(crate) fn part_count(ty: Type) -> usize {
    part_type(ty).len()
}

/// How many `u64` slots a value of type `ty` occupies in an argument or result buffer:
/// 1 for scalars and booleans (0/1), 2 for slices (pointer, length), W for `f64xW` (the lanes).
pub(crate) fn slot_count(ty: Type) -> usize {
    match ty {
        Type::Slice | Type::SliceMut => 2,
        Type::F64x(w) => w as usize,
        _ => 1,
    }
}

/// Total slots of a list of types.
pub(crate) fn slots_of(types: &[Type]) -> usize {
    types.iter().map(|&t| slot_count(t)).sum()
}

/// Flags for our own slot buffers and stack slots: 8-byte aligned, never trapping.
pub(crate) fn slot_flags() -> MemFlagsData {
    MemFlagsData::new().with_notrap().with_aligned()
}

/// Flags for `F64X2` accesses: only 8-byte alignment is known, so no `aligned` claim (an
/// `aligned` vector load may be folded into an SSE instruction that faults on 8-byte alignment).
pub(crate) fn vector_flags() -> MemFlagsData {
    MemFlagsData::new().with_notrap()
}

/// Store the parts of a value of type `ty` into slots starting at byte `offset` from `base`.
pub(crate) fn store_parts(b: &mut FunctionBuilder, ty: Type, parts: &[clif::Value], base: clif::Value, offset: i32) {
    let mut off = offset;
    for (&part, &pt) in parts.iter().zip(part_type(ty)) {
        if pt == types::I8 {
            let wide = b.ins().uextend(types::I64, part);
            b.ins().store(slot_flags(), wide, base, off);
        } else if pt == types::F64X2 {
            b.ins().store(vector_flags(), part, base, off);
        } else {
            b.ins().store(slot_flags(), part, base, off);
        }
        off += if pt == types::F64X2 { 16 } else { 8 };
    }
}

/// Load the parts of a value of type `ty` from slots starting at byte `offset` from `base`.
pub(crate) fn load_parts(
    b: &mut FunctionBuilder,
    ty: Type,
    base: clif::Value,
    offset: i32,
    out: &mut Vec<clif::Value>,
) {
    let mut off = offset;
    for &pt in part_type(ty) {
        let v = if pt == types::I8 {
            let wide = b.ins().load(types::I64, slot_flags(), base, off);
            b.ins().ireduce(types::I8, wide)
        } else if pt == types::F64X2 {
            b.ins().load(pt, vector_flags(), base, off)
        } else {
            b.ins().load(pt, slot_flags(), base, off)
        };
        out.push(v);
        off += if pt == types::F64X2 { 16 } else { 8 };
    }
}

/// The signature of the internal native function for an IR function with these parameters:
/// `(depth: i64, out: ptr, tape: ptr, parts of every parameter...) -> i32 status`. Results are
/// written to `out` in slot layout; `depth` is the number of frames on the IR call stack
/// including this one; `tape` points to the call's `TapeState` (shared with every callee).
pub(crate) fn internal_signature(template: &Signature, params: &[Type]) -> Signature {
    let mut sig = template.clone();
    sig.params.push(AbiParam::new(types::I64));
    sig.params.push(AbiParam::new(PTR));
    sig.params.push(AbiParam::new(PTR));
    for &ty in params {
        sig.params.extend(part_type(ty).iter().map(|&t| AbiParam::new(t)));
    }
    sig.returns.push(AbiParam::new(STATUS));
    sig
}

/// The signature of an entry trampoline:
/// `extern "C" fn(args: *const u64, results: *mut u64, tape: *mut TapeState) -> i32`.
pub(crate) fn entry_signature(template: &Signature) -> Signature {
    let mut sig = template.clone();
    sig.params.push(AbiParam::new(PTR));
    sig.params.push(AbiParam::new(PTR));
    sig.params.push(AbiParam::new(PTR));
    sig.returns.push(AbiParam::new(STATUS));
    sig
}

/// Spell a signature the way the text format does: `(f64, slice) -> f64`.
pub(crate) fn format_signature(params: &[Type], returns: &[Type]) -> String {
    let join = |ts: &[Type]| ts.iter().map(|t| t.spelling()).collect::<Vec<_>>().join(", ");
    if returns.is_empty() { format!("({})", join(params)) } else { format!("({}) -> {}", join(params), join(returns)) }
}

/// The Rust type of an entry trampoline.
pub(crate) type EntryFn =
    unsafe extern "C" fn(args: *const u64, results: *mut u64, tape: *mut crate::tape::TapeState) -> i32;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_and_parts_agree_in_bytes() {
        for ty in [Type::F64, Type::I64, Type::Bool, Type::Slice, Type::SliceMut, Type::F64x(2), Type::F64x(16)] {
            let bytes: usize = part_type(ty).iter().map(|t| if *t == types::F64X2 { 16 } else { 8 }).sum();
            assert_eq!(bytes, 8 * slot_count(ty), "{ty}");
        }
        assert_eq!(part_count(Type::F64x(8)), 4);
    }
}
