//! Direct calls: a call's arguments handed in registers straight to a function's internal native
//! code, skipping the entry trampoline and its round trip through a slot buffer.
//!
//! The System V x86-64 convention assigns integer-class arguments (pointers, lengths, integers,
//! booleans) to six general registers and float arguments to eight vector registers
//! *independently* — each class in argument order — and passes what does not fit in registers on
//! the stack, in argument order. So a function whose float parts all fit in the vector registers
//! receives its arguments exactly where one fixed Rust function type, [`Universal`], puts them:
//! every integer-class part in order (the first six in registers, the rest in the first stack
//! slots), then every float part in order. The internal function reads only the registers and
//! stack slots its own signature names; the rest are ignored, and the caller pops the stack
//! arguments. A [`FramePlan`] says whether a function's parameters qualify (its `direct`);
//! elsewhere, and on other targets, calls go through the trampoline.

use crate::abi::slot_count;
use crate::arg::Arg;
use crate::error::CallError;
use crate::frame::FrameResults;
use crate::handle::CompiledFn;
use crate::tape::TapeState;
use jitdiff_ir::Type;

/// Integer-class parts of the user's parameters a direct call can pass: three registers (the
/// other three carry depth, out and tape) and four stack slots.
pub const INT_PARTS: usize = 7;
/// Float parts a direct call can pass: the eight vector argument registers.
pub const FLOAT_PARTS: usize = 8;
/// The most parameters a [`FramePlan`] lists.
pub(crate) const PLAN_PARAMS: usize = 16;

/// What a call needs to know about a function's parameters, kept in the handle itself so that a
/// call reads it without following pointers into the module.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FramePlan {
    /// The parameter types (the first `count`).
    params: [Type; PLAN_PARAMS],
    count: u8,
    /// Do the arguments and results fit an argument frame (`FRAME_SLOTS` slots each)?
    pub framed: bool,
    /// Can a frame call the internal function directly ([`call`])?
    pub direct: bool,
}

impl FramePlan {
    /// The plan for a function with these parameters and result slots; `system_v` says whether
    /// its native code uses the System V convention on x86-64 (the one [`call`] speaks).
    pub(crate) fn new(params: &[Type], arg_slots: usize, result_slots: usize, system_v: bool) -> FramePlan {
        use crate::abi::MIN_OUT_SLOTS;
        use crate::frame::FRAME_SLOTS;
        let framed =
            params.len() <= PLAN_PARAMS && arg_slots <= FRAME_SLOTS && result_slots.max(MIN_OUT_SLOTS) <= FRAME_SLOTS;
        let mut plan = FramePlan { params: [Type::F64; PLAN_PARAMS], count: 0, framed, direct: false };
        if framed {
            plan.params[..params.len()].copy_from_slice(params);
            plan.count = params.len() as u8;
            plan.direct = cfg!(all(target_arch = "x86_64", not(target_os = "windows"))) && system_v && fits(params);
        }
        plan
    }

    /// The parameter types (empty when the function does not fit a frame).
    #[inline(always)]
    pub(crate) fn params(&self) -> &[Type] {
        &self.params[..self.count as usize]
    }
}

/// Do these parameters' parts fit a direct call?
fn fits(params: &[Type]) -> bool {
    let (mut ints, mut floats) = (0, 0);
    for &ty in params {
        match ty {
            Type::F64 => floats += 1,
            Type::I64 | Type::Bool => ints += 1,
            Type::Slice | Type::SliceMut => ints += slot_count(ty),
            Type::F64x(_) => return false,
        }
    }
    ints <= INT_PARTS && floats <= FLOAT_PARTS
}

/// The parts of one direct call's arguments, by class, each in parameter order (a `bool` as 0 or
/// 1, a slice as pointer then length). (Public only for the hidden methods of
/// [`NativeArgs`](crate::NativeArgs); not reachable from outside the crate.)
#[derive(Clone, Copy, Debug, Default)]
pub struct Registers {
    /// Integer-class parts.
    pub ints: [u64; INT_PARTS],
    /// Float parts.
    pub floats: [f64; FLOAT_PARTS],
}

impl Registers {
    /// A copy, the integer parts read one by one from memory: the compiler would copy pairs
    /// of parts written at run-time positions with one 16-byte load, which cannot be
    /// forwarded from the two 8-byte stores that wrote them — a stall of several nanoseconds
    /// per call, measured.
    #[inline(always)]
    pub(crate) fn reread(&self) -> Registers {
        // SAFETY: reads of initialised `u64`s of `self`.
        let ints = std::array::from_fn(|k| unsafe { std::ptr::read_volatile(&self.ints[k]) });
        Registers { ints, floats: self.floats }
    }

    /// Write a slice's pointer and length as integer parts `at` and `at + 1` and advance `at`;
    /// `None` past the last part.
    #[inline(always)]
    fn push_slice(&mut self, at: &mut usize, pointer: *const f64, len: usize) -> Option<()> {
        let [p, l] = self.ints.get_mut(*at..*at + 2)? else { return None };
        // Two 8-byte writes, which make two 8-byte reads of the caller's `Arg`: the compiler
        // would copy the pair with one 16-byte load, which cannot be forwarded from the two
        // stores with which callers build their arguments just before the call (a stall of
        // several nanoseconds per call, measured).
        // SAFETY: writes to `u64`s of `self`.
        unsafe {
            std::ptr::write_volatile(p, pointer as u64);
            std::ptr::write_volatile(l, len as u64);
        }
        *at += 2;
        Some(())
    }
}

/// Six integer registers, eight float registers, then four stack slots: see the module docs.
type Universal = unsafe extern "C" fn(
    u64,
    u64,
    u64,
    u64,
    u64,
    u64,
    f64,
    f64,
    f64,
    f64,
    f64,
    f64,
    f64,
    f64,
    u64,
    u64,
    u64,
    u64,
) -> i32;
/// [`Universal`] without the stack slots, for functions whose integer parts fit in registers.
type InRegisters = unsafe extern "C" fn(u64, u64, u64, u64, u64, u64, f64, f64, f64, f64, f64, f64, f64, f64) -> i32;

/// Call the internal native function at `code` at depth 1 with the arguments in `registers`
/// (`on_stack`: are there more than three integer parts?).
///
/// # Safety
///
/// `code` must be the finalized internal function (`abi::internal_signature`, System V) of a live
/// compiled function whose [`FramePlan`] has `direct` set, and `registers` must hold exactly its
/// parameters' parts by class, in order, every slice pointer and length taken from a live Rust
/// slice that stays borrowed (mutably, for an `mslice`) until this returns; `out` must have room
/// for its result slots and at least two; `tape` must be lent as for `CompiledFn::raw_call`.
#[inline(always)]
pub(crate) unsafe fn call(
    code: usize,
    out: *mut u64,
    tape: *mut TapeState,
    registers: Registers,
    on_stack: bool,
) -> i32 {
    let [a, b, c, d, e, f, g] = registers.ints;
    let [x0, x1, x2, x3, x4, x5, x6, x7] = registers.floats;
    let (out, tape) = (out as u64, tape as u64);
    // SAFETY: (both calls) by the caller's guarantee, the function's integer-class parameters
    // are depth, out, tape and then at most seven parts, and its float parameters at most
    // eight: both types put their first six integer arguments in the six integer argument
    // registers and their eight floats in the eight vector argument registers, and `Universal`
    // its last four integers in the first stack slots — where System V has the internal
    // function read its own parameters of each class, in order (see the module docs). Parts
    // past its own are never read; without parts on the stack, it reads none there.
    unsafe {
        if on_stack {
            std::mem::transmute::<usize, Universal>(code)(
                1, out, tape, a, b, c, x0, x1, x2, x3, x4, x5, x6, x7, d, e, f, g,
            )
        } else {
            std::mem::transmute::<usize, InRegisters>(code)(1, out, tape, a, b, c, x0, x1, x2, x3, x4, x5, x6, x7)
        }
    }
}

impl CompiledFn {
    /// The leanest call: `args`, then `tail` (each an `mslice` argument), passed in registers
    /// straight to the native code, the results into `results`. Returns the call's status (0,
    /// or a failure [`status_error`](Self::status_error) turns into its error), or `None` —
    /// before any native code runs — when the arguments do not match the parameters or the
    /// function cannot be called this way (call through [`frame`](Self::frame) or
    /// [`call_into`](Self::call_into) then, which say what is wrong).
    ///
    /// ```
    /// use jitdiff_ir::{parse_module, ExternRegistry};
    /// use jitdiff_jit::{compile, Arg, FrameResults, JitOptions};
    /// let ir = parse_module("func @f(x: slice, y: f64) -> f64 {\nentry:\n    i = iconst 0\n    v = load x, i\n    p = fmul v, y\n    ret p\n}\n").unwrap();
    /// let f = compile(&ir, &ExternRegistry::new(), &JitOptions::new()).unwrap().function("f").unwrap();
    /// let mut results = FrameResults::new();
    /// if let Some(status) = f.call_direct(&mut [Arg::Slice(&[3.0]), Arg::F64(2.0)], &mut [], &mut results) {
    ///     assert_eq!(status, 0);
    ///     assert_eq!(results.f64(0), 6.0);
    /// }
    /// // The wrong kind of argument: not called.
    /// assert_eq!(f.call_direct(&mut [Arg::F64(1.0), Arg::F64(2.0)], &mut [], &mut results), None);
    /// // An index out of bounds: a failure status.
    /// let status = f.call_direct(&mut [Arg::Slice(&[]), Arg::F64(2.0)], &mut [], &mut results);
    /// if let Some(status) = status {
    ///     assert!(f.status_error(status, &results).to_string().contains("out of bounds"));
    /// }
    /// ```
    #[inline]
    pub fn call_direct(
        &self,
        args: &mut [Arg<'_>],
        tail: &mut [&mut [f64]],
        results: &mut FrameResults,
    ) -> Option<i32> {
        let params = self.plan.params();
        if !self.plan.direct || args.len() + tail.len() != params.len() {
            return None;
        }
        let mut registers = Registers::default();
        let (mut ints, mut floats) = (0, 0);
        for (arg, &ty) in args.iter_mut().zip(params) {
            match (arg, ty) {
                (Arg::F64(x), Type::F64) => {
                    *registers.floats.get_mut(floats)? = *x;
                    floats += 1;
                }
                (Arg::I64(x), Type::I64) => {
                    *registers.ints.get_mut(ints)? = *x as u64;
                    ints += 1;
                }
                (Arg::Bool(x), Type::Bool) => {
                    *registers.ints.get_mut(ints)? = u64::from(*x);
                    ints += 1;
                }
                (Arg::Slice(v), Type::Slice) => registers.push_slice(&mut ints, v.as_ptr(), v.len())?,
                (Arg::SliceMut(v), Type::Slice | Type::SliceMut) => {
                    registers.push_slice(&mut ints, v.as_mut_ptr(), v.len())?
                }
                _ => return None,
            }
        }
        for (v, &ty) in tail.iter_mut().zip(&params[args.len()..]) {
            if ty != Type::SliceMut {
                return None;
            }
            registers.push_slice(&mut ints, v.as_mut_ptr(), v.len())?;
        }
        let out = results.slots_mut().as_mut_ptr();
        // SAFETY: the plan is direct (System V, parts that fit `call`), every argument matched
        // its parameter's type and its parts were written in order by class; the slice pointers
        // and lengths come from `args` and `tail`, borrowed (mutably for an `mslice`, which only
        // `Arg::SliceMut` and `tail` can fill) for the whole call; `plan.framed` means the
        // results and the two failure-detail slots fit `results`; `with_call_tape` lends a
        // tape state as `call` requires; `internal` is this live function's internal code.
        let (registers, on_stack) = (registers.reread(), ints > 3);
        Some(self.with_call_tape(|state| unsafe { call(self.internal_address(), out, state, registers, on_stack) }))
    }

    /// Can [`call_direct`](Self::call_direct) call this function (its parameters' parts fit the
    /// registers and stack slots a direct call fills, on a System V x86-64 host)?
    ///
    /// ```
    /// use jitdiff_ir::{parse_module, ExternRegistry};
    /// use jitdiff_jit::{compile, JitOptions};
    /// let ir = parse_module("func @f(a: slice, b: slice, c: slice, d: slice) {\nentry:\n    ret\n}\n").unwrap();
    /// let f = compile(&ir, &ExternRegistry::new(), &JitOptions::new()).unwrap().function("f").unwrap();
    /// assert!(!f.calls_direct()); // eight integer parts: one too many
    /// ```
    pub fn calls_direct(&self) -> bool {
        self.plan.direct
    }

    /// The error a failure status of [`call_direct`](Self::call_direct) stands for.
    #[cold]
    pub fn status_error(&self, status: i32, results: &FrameResults) -> CallError {
        self.runtime_error(status, [results.bits(0), results.bits(1)])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_say_which_signatures_go_direct() {
        let system_v = cfg!(all(target_arch = "x86_64", not(target_os = "windows")));
        let direct = |params: &[Type]| FramePlan::new(params, crate::abi::slots_of(params), 1, true).direct;
        assert_eq!(direct(&[Type::Slice, Type::SliceMut, Type::I64, Type::Bool, Type::F64]), system_v);
        // Eight integer-class parts: one too many.
        assert!(!direct(&[Type::Slice, Type::Slice, Type::Slice, Type::Slice]));
        // Nine floats would overflow onto the stack.
        assert!(!direct(&[Type::F64; 9]));
        assert!(!direct(&[Type::F64x(2)]));
        assert!(!FramePlan::new(&[Type::F64], 1, 1, false).direct);
        // Too many slots for a frame at all.
        let wide = FramePlan::new(&[Type::F64; 17], 17, 1, true);
        assert!(!wide.framed && wide.params().is_empty());
    }
}
