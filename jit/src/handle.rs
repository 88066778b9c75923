//! Safe handles to compiled code: [`CompiledModule`], [`CompiledFn`] and the [`Arg`]s they take.

use crate::abi::{EntryFn, MIN_OUT_SLOTS, slot_count, slots_of};
use crate::arg::Arg;
use crate::closure::ClosureCtx;
use crate::direct::FramePlan;
use crate::error::{CallError, JitError, ShadowMismatch};
use crate::extern_failure::{self, ExternFailure};
use crate::lower::{ConstantPool, OwnedJit};
use crate::shadow::BoundsCheckStats;
use crate::sites::{SiteKind, SiteTable};
use crate::tape::{NativeTape, TapeState};
use crate::typed::{NativeArgs, NativeResults, TypedFn};
use jitdiff_ir::Fault;
use jitdiff_ir::{RuntimeValue, Site, Tape, Type};
use rustc_hash::FxHashMap as HashMap;
use std::sync::{Arc, Mutex};

/// What the handles know about one compiled function.
pub(crate) struct FnInfo {
    pub name: String,
    /// Parameter names as the IR prints them, for errors.
    pub param_names: Vec<String>,
    pub checks: BoundsCheckStats,
    pub params: Vec<Type>,
    pub returns: Vec<Type>,
    pub arg_slots: usize,
    pub result_slots: usize,
    pub entry: EntryFn,
    /// The address of its internal native function,
    /// `extern "C" fn(depth: i64, out: *mut u64, tape: *mut TapeState, parameters...) -> i32`
    /// (`abi::internal_signature`), which the typed fast path calls directly.
    pub internal: usize,
    /// Can its native code touch the call's tape ([`crate::callgraph::needs_tape`])? If not,
    /// a call without a tape of the caller's lends it none.
    pub needs_tape: bool,
    /// How calls through an argument frame pass its arguments.
    pub plan: FramePlan,
}

/// The shared state of a compiled module; its native code is freed when the last handle drops.
pub(crate) struct ModuleInner {
    pub functions: Vec<FnInfo>,
    pub by_name: HashMap<String, usize>,
    /// Block labels per function, for error sites.
    pub block_labels: Vec<Vec<String>>,
    pub sites: SiteTable,
    pub bounds_checks: bool,
    /// The most bytes of tape a call may grow to ([`JitOptions::tape_limit`](crate::JitOptions::tape_limit)).
    pub tape_limit: usize,
    /// Closure contexts whose addresses are baked into the code (boxed: the addresses must not
    /// move while the vector grows).
    #[allow(clippy::vec_box)]
    pub _closures: Vec<Box<ClosureCtx>>,
    /// Float constants the code loads.
    pub _constants: ConstantPool,
    /// The JIT module, only touched again when dropped (which frees its code). The mutex makes
    /// the (`Send` but not `Sync`) module shareable between threads.
    pub _jit: Mutex<OwnedJit>,
}

/// A compiled module: native code for every function of an IR module.
///
/// Cheap to clone (an `Arc`); `Send + Sync`. The native code is freed when the module and every
/// [`CompiledFn`] taken from it have been dropped.
///
/// ```
/// use jitdiff_ir::{parse_module, ExternRegistry, RuntimeValue};
/// use jitdiff_jit::{compile, Arg, JitOptions};
/// let ir = parse_module("func @mul(a: f64, b: f64) -> f64 {\nentry:\n    c = fmul a, b\n    ret c\n}\n").unwrap();
/// let compiled = compile(&ir, &ExternRegistry::new(), &JitOptions::new()).unwrap();
/// let mul = compiled.function("mul").unwrap();
/// assert_eq!(mul.call(&mut [Arg::F64(1.5), Arg::F64(4.0)]).unwrap(), vec![RuntimeValue::F64(6.0)]);
/// ```
#[derive(Clone)]
pub struct CompiledModule {
    inner: Arc<ModuleInner>,
}

impl std::fmt::Debug for CompiledModule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledModule")
            .field("functions", &self.function_names().collect::<Vec<_>>())
            .field("bounds_checks", &self.inner.bounds_checks)
            .finish()
    }
}

impl CompiledModule {
    pub(crate) fn new(inner: ModuleInner) -> CompiledModule {
        CompiledModule { inner: Arc::new(inner) }
    }
    /// A handle to the function named `name` (without the `@`).
    pub fn function(&self, name: &str) -> Result<CompiledFn, JitError> {
        let Some(&index) = self.inner.by_name.get(name) else {
            return Err(JitError::UnknownFunction {
                name: name.to_string(),
                available: self.function_names().map(|n| format!("@{n}")).collect::<Vec<_>>().join(", "),
            });
        };
        let FnInfo { entry, needs_tape, internal, plan, .. } = &self.inner.functions[index];
        Ok(CompiledFn {
            module: self.inner.clone(),
            index,
            entry: *entry,
            needs_tape: *needs_tape,
            internal: *internal,
            plan: *plan,
        })
    }
    /// The names of the compiled functions, in module order.
    pub fn function_names(&self) -> impl Iterator<Item = &str> {
        self.inner.functions.iter().map(|f| f.name.as_str())
    }
    /// Were slice accesses compiled with bounds checks? (Always, unless the options came from
    /// the `unsafe` [`JitOptions::without_bounds_checks`](crate::JitOptions::without_bounds_checks).)
    pub fn bounds_checked(&self) -> bool {
        self.inner.bounds_checks
    }
}

/// Slots kept on the stack for a call; larger signatures use a heap buffer.
// Argument and result buffers up to this many slots live on the stack (no allocation per call).
const INLINE_SLOTS: usize = 64;
/// Calls with at most this many slots (most) use buffers of this size.
const SMALL_SLOTS: usize = 16;

/// A callable compiled function. Cheap to clone, `Send + Sync`, callable from many threads at
/// once; keeps its module's native code alive.
#[derive(Clone)]
pub struct CompiledFn {
    module: Arc<ModuleInner>,
    index: usize,
    // The two facts every call reads, copied out of `module` so that a call does not chase
    // pointers to find them (a chain of dependent loads cost about 4 ns per call).
    entry: EntryFn,
    needs_tape: bool,
    /// The internal native function (`FnInfo::internal`) and the frame plan, for the same reason.
    internal: usize,
    pub(crate) plan: FramePlan,
}

impl std::fmt::Debug for CompiledFn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let info = self.info();
        write!(f, "CompiledFn(@{}{})", info.name, crate::abi::format_signature(&info.params, &info.returns))
    }
}

impl CompiledFn {
    /// The address of the internal native function (`FnInfo::internal`).
    pub(crate) fn internal_address(&self) -> usize {
        self.internal
    }
    pub(crate) fn info(&self) -> &FnInfo {
        &self.module.functions[self.index]
    }
    /// The function's name.
    pub fn name(&self) -> &str {
        &self.info().name
    }
    /// Parameter types.
    pub fn params(&self) -> &[Type] {
        &self.info().params
    }
    /// Result types.
    pub fn returns(&self) -> &[Type] {
        &self.info().returns
    }
    /// Can a call touch its tape (`tpush`, `tpop`, local arrays — its own or a callee's)? A
    /// call of a function that cannot is lent no tape: [`call_with_tape`](Self::call_with_tape)
    /// leaves the tape as it is, and [`call`](Self::call) costs no thread-local access.
    ///
    /// ```
    /// use jitdiff_ir::{parse_module, ExternRegistry};
    /// use jitdiff_jit::{compile, JitOptions};
    /// let ir = parse_module("func @sq(x: f64) -> f64 {\nentry:\n    y = fmul x, x\n    ret y\n}\n").unwrap();
    /// let f = compile(&ir, &ExternRegistry::new(), &JitOptions::new()).unwrap().function("sq").unwrap();
    /// assert!(!f.needs_tape());
    /// ```
    pub fn needs_tape(&self) -> bool {
        self.needs_tape
    }
    /// How many slice-access bounds checks this function's native code has, and how many were
    /// left out as redundant (see [`JitOptions::shadow_slice`](crate::JitOptions::shadow_slice)).
    pub fn bounds_check_stats(&self) -> BoundsCheckStats {
        self.info().checks
    }

    /// Call the function. Arguments are checked against the parameters before native code runs.
    ///
    /// ```
    /// use jitdiff_ir::{parse_module, ExternRegistry, RuntimeValue};
    /// use jitdiff_jit::{compile, Arg, CallError, JitOptions};
    /// let ir = parse_module("func @first(x: slice) -> f64 {\nentry:\n    i = iconst 0\n    v = load x, i\n    ret v\n}\n").unwrap();
    /// let f = compile(&ir, &ExternRegistry::new(), &JitOptions::new()).unwrap().function("first").unwrap();
    /// assert_eq!(f.call(&mut [Arg::Slice(&[2.5, 1.0])]).unwrap(), vec![RuntimeValue::F64(2.5)]);
    /// let err = f.call(&mut [Arg::Slice(&[])]).unwrap_err();
    /// assert!(matches!(err, CallError::Runtime(_)));
    /// assert!(err.to_string().contains("out of bounds"));
    /// ```
    pub fn call(&self, args: &mut [Arg<'_>]) -> Result<Vec<RuntimeValue>, CallError> {
        self.invoke(args, None, decode_all)
    }

    /// Call the function on `tape`: its `tpush`es append to the tape and its `tpop`s read it
    /// back from the tape's cursor (callees share it). After a failed call the tape holds what
    /// was pushed before the failure. [`call`](Self::call) is this with an empty tape (a scratch
    /// tape of the thread, reused).
    ///
    /// ```
    /// use jitdiff_ir::{parse_module, ExternRegistry, RuntimeValue, Tape};
    /// use jitdiff_jit::{compile, Arg, JitOptions};
    /// let ir = parse_module(
    ///     "func @save(x: f64) {\nentry:\n    tpush x\n    ret\n}\n\
    ///      func @load() -> f64 {\nentry:\n    x = tpop.f64\n    ret x\n}\n",
    /// )
    /// .unwrap();
    /// let compiled = compile(&ir, &ExternRegistry::new(), &JitOptions::new()).unwrap();
    /// let (save, load) = (compiled.function("save").unwrap(), compiled.function("load").unwrap());
    /// let mut tape = Tape::new();
    /// save.call_with_tape(&mut [Arg::F64(2.5)], &mut tape).unwrap();
    /// assert_eq!(load.call_with_tape(&mut [], &mut tape).unwrap(), vec![RuntimeValue::F64(2.5)]);
    /// let err = load.call_with_tape(&mut [], &mut tape).unwrap_err();
    /// assert!(err.to_string().starts_with("tape underflow at @load, block entry, inst 0"));
    /// tape.reset_cursor();
    /// assert_eq!(load.call_with_tape(&mut [], &mut tape).unwrap(), vec![RuntimeValue::F64(2.5)]);
    /// ```
    pub fn call_with_tape(&self, args: &mut [Arg<'_>], tape: &mut Tape) -> Result<Vec<RuntimeValue>, CallError> {
        self.invoke(args, Some(tape), decode_all)
    }

    /// Call the function and write its results into `results` (one per result), reusing the
    /// vectors already there: no allocation when `results` already has the right shape.
    ///
    /// ```
    /// use jitdiff_ir::{parse_module, ExternRegistry, RuntimeValue};
    /// use jitdiff_jit::{compile, Arg, JitOptions};
    /// let ir = parse_module("func @sq(x: f64) -> f64 {\nentry:\n    y = fmul x, x\n    ret y\n}\n").unwrap();
    /// let f = compile(&ir, &ExternRegistry::new(), &JitOptions::new()).unwrap().function("sq").unwrap();
    /// let mut out = [RuntimeValue::F64(0.0)];
    /// for k in 0..3 {
    ///     f.call_into(&mut [Arg::F64(k as f64)], &mut out).unwrap();
    ///     assert_eq!(out[0], RuntimeValue::F64((k * k) as f64));
    /// }
    /// ```
    pub fn call_into(&self, args: &mut [Arg<'_>], results: &mut [RuntimeValue]) -> Result<(), CallError> {
        self.call_into_on(args, results, None)
    }

    /// [`call_into`](Self::call_into) on `tape` (see [`call_with_tape`](Self::call_with_tape)):
    /// no allocation when `results` has the right shape and the tape has room for the pushes.
    pub fn call_into_with_tape(
        &self,
        args: &mut [Arg<'_>],
        results: &mut [RuntimeValue],
        tape: &mut Tape,
    ) -> Result<(), CallError> {
        self.call_into_on(args, results, Some(tape))
    }

    /// [`call_into`](Self::call_into) on `tape`, or on the scratch tape when there is none.
    #[inline]
    fn call_into_on(
        &self,
        args: &mut [Arg<'_>],
        results: &mut [RuntimeValue],
        tape: Option<&mut Tape>,
    ) -> Result<(), CallError> {
        let info = self.info();
        if results.len() != info.returns.len() {
            return Err(CallError::ResultCount {
                function: info.name.clone(),
                expected: info.returns.len(),
                got: results.len(),
            });
        }
        self.invoke(args, tape, |info, slots| {
            let mut at = 0;
            for (out, &ty) in results.iter_mut().zip(&info.returns) {
                let s = &slots[at..at + slot_count(ty)];
                at += slot_count(ty);
                match (out, ty) {
                    (RuntimeValue::Vector(v), Type::F64x(w)) if v.len() == w as usize => {
                        v.iter_mut().zip(s).for_each(|(x, &bits)| *x = f64::from_bits(bits))
                    }
                    (out, ty) => *out = decode(ty, s),
                }
            }
        })
    }

    /// A typed handle for a function of scalar parameters and results: checks the signature
    /// once, then each call packs the arguments directly (the fastest way to call).
    ///
    /// ```
    /// use jitdiff_ir::{parse_module, ExternRegistry};
    /// use jitdiff_jit::{compile, JitOptions};
    /// let ir = parse_module("func @f(a: f64, n: i64) -> f64 {\nentry:\n    y = powi a, n\n    ret y\n}\n").unwrap();
    /// let f = compile(&ir, &ExternRegistry::new(), &JitOptions::new()).unwrap().function("f").unwrap();
    /// let f = f.typed::<(f64, i64), f64>().unwrap();
    /// assert_eq!(f.call((2.0, 10)).unwrap(), 1024.0);
    /// ```
    pub fn typed<A: NativeArgs, R: NativeResults>(&self) -> Result<TypedFn<A, R>, JitError> {
        let info = self.info();
        if info.params != A::types() || info.returns != R::types() {
            return Err(JitError::TypedSignature {
                function: info.name.clone(),
                actual: crate::abi::format_signature(&info.params, &info.returns),
                requested: crate::abi::format_signature(&A::types(), &R::types()),
            });
        }
        Ok(TypedFn::new(self.clone()))
    }

    /// Call the entry trampoline on packed slot buffers and a lent tape; `0` or a failure status.
    ///
    /// # Safety
    ///
    /// `args` must hold this function's parameters in slot layout, with every slice pointer and
    /// length taken from a live Rust slice that stays borrowed (mutably, for an `mslice`
    /// parameter) until this returns; `results` must have room for its result slots, and for at
    /// least two (a failure writes its detail there).
    #[inline]
    pub(crate) unsafe fn raw_call(&self, args: *const u64, results: *mut u64, tape: *mut TapeState) -> i32 {
        // SAFETY: `entry` is the finalized entry trampoline of this function (signature
        // `extern "C" fn(*const u64, *mut u64, *mut TapeState) -> i32`); `self.module` keeps its
        // code mapped for the duration of the call. The trampoline reads exactly the parameter
        // slots, writes at most the result slots, and native code touches caller memory only
        // through the slices in `args`, within their lengths (bounds checks), as the caller
        // guarantees, and through the tape state, which the caller lends exclusively for the
        // call (a `NativeTape`'s, or an unused one for a function that needs no tape, whose
        // code never reads it) and whose invariant (`cursor <= len <= cap`, `base` valid for
        // `cap` entries) native code keeps.
        unsafe { (self.entry)(args, results, tape) }
    }

    /// Run `call` with the tape state for a call made without a tape of the caller's: this
    /// thread's scratch tape when the function needs a tape, else an unused state (no
    /// thread-local access at all).
    #[inline(always)]
    pub(crate) fn with_call_tape<T>(&self, call: impl FnOnce(*mut TapeState) -> T) -> T {
        if self.needs_tape {
            crate::tape::with_scratch_tape(|tape| {
                let mut lent = NativeTape::new(tape, self.module.tape_limit);
                call(lent.state())
            })
        } else {
            call(&mut TapeState::unused())
        }
    }

    /// Run `call` with the state of `tape` lent to it (or an unused state when the function
    /// needs no tape: `tape` is then left as it is).
    #[inline(always)]
    pub(crate) fn with_given_tape<T>(&self, tape: &mut Tape, call: impl FnOnce(*mut TapeState) -> T) -> T {
        if self.needs_tape {
            let mut lent = NativeTape::new(tape, self.module.tape_limit);
            call(lent.state())
        } else {
            call(&mut TapeState::unused())
        }
    }

    fn invoke<T>(
        &self,
        args: &mut [Arg<'_>],
        tape: Option<&mut Tape>,
        finish: impl FnOnce(&FnInfo, &[u64]) -> T,
    ) -> Result<T, CallError> {
        // Slot buffers on the stack, sized for the call: zeroing 64 slots would cost small
        // calls more than the call itself.
        let info = self.info();
        if info.arg_slots.max(info.result_slots.max(MIN_OUT_SLOTS)) <= SMALL_SLOTS {
            self.invoke_with::<SMALL_SLOTS, T>(args, tape, finish)
        } else {
            self.invoke_with::<INLINE_SLOTS, T>(args, tape, finish)
        }
    }

    #[inline(always)]
    fn invoke_with<const N: usize, T>(
        &self,
        args: &mut [Arg<'_>],
        tape: Option<&mut Tape>,
        finish: impl FnOnce(&FnInfo, &[u64]) -> T,
    ) -> Result<T, CallError> {
        let info = self.info();
        let mut arg_stack = [0u64; N];
        let mut arg_heap = Vec::new();
        let arg_slots = buffer(&mut arg_stack, &mut arg_heap, info.arg_slots);
        pack(self, args, arg_slots)?;
        let mut result_stack = [0u64; N];
        let mut result_heap = Vec::new();
        let result_slots = buffer(&mut result_stack, &mut result_heap, info.result_slots.max(MIN_OUT_SLOTS));
        // SAFETY: `pack` wrote exactly `arg_slots` slots after checking every argument against
        // its parameter type; slice pointers come from `args`, which stays mutably borrowed by
        // this function until the call returns (so `SliceMut` memory is exclusively ours), and
        // `result_slots` has `info.result_slots` slots.
        let call = |state| unsafe { self.raw_call(arg_slots.as_ptr(), result_slots.as_mut_ptr(), state) };
        let status = match tape {
            Some(tape) => self.with_given_tape(tape, call),
            None => self.with_call_tape(call),
        };
        if status != 0 {
            return Err(self.runtime_error(status, [result_slots[0], result_slots[1]]));
        }
        Ok(finish(info, result_slots))
    }

    /// Turn a non-zero status into the error it encodes; `detail` is the first two result slots
    /// (index and length of an out-of-bounds access).
    pub(crate) fn runtime_error(&self, status: i32, detail: [u64; 2]) -> CallError {
        let module = &self.module;
        let failure = extern_failure::take();
        let Some(site) = module.sites.get(status) else {
            return CallError::Runtime(Fault::ExternFailed {
                name: "<native code>".into(),
                message: format!("unknown failure status {status} (a jitdiff bug: please report it)"),
                site: Site { func: self.name().to_string(), block: String::new(), inst: 0 },
            });
        };
        let func = site.func.index();
        let ir_site = Site {
            func: module.functions.get(func).map(|f| f.name.clone()).unwrap_or_default(),
            block: module.block_labels.get(func).and_then(|b| b.get(site.block.index())).cloned().unwrap_or_default(),
            inst: site.inst as usize,
        };
        let fault = match (site.kind, failure) {
            (SiteKind::OutOfBounds, _) => {
                Fault::OutOfBounds { site: ir_site, index: detail[0] as i64, len: detail[1] as usize }
            }
            (SiteKind::DivisionByZero, _) => Fault::DivisionByZero { site: ir_site },
            (SiteKind::CallDepthExceeded, _) => Fault::CallDepthExceeded { site: ir_site },
            (SiteKind::TapeUnderflow, _) => Fault::TapeUnderflow { site: ir_site },
            (SiteKind::TapeAllocation, _) => Fault::TapeAllocation { site: ir_site },
            (SiteKind::Panic, _) => Fault::Panic { site: ir_site },
            (SiteKind::AllocFailed, _) => Fault::AllocFailed { site: ir_site, len: detail[0] as i64 },
            (SiteKind::ShadowLength { shadow, primal, lanes }, _) => {
                let names = module.functions.get(func).map(|f| &f.param_names[..]).unwrap_or_default();
                let name = |p: u32| names.get(p as usize).cloned().unwrap_or_else(|| format!("parameter {p}"));
                let mismatch = ShadowMismatch {
                    shadow: name(shadow),
                    primal: name(primal),
                    lanes,
                    shadow_len: detail[0] as usize,
                    primal_len: detail[1] as usize,
                };
                return CallError::ShadowLength { site: ir_site, mismatch: Box::new(mismatch) };
            }
            (SiteKind::ExternFailed, Some(ExternFailure { name, message })) => {
                Fault::ExternFailed { name, message, site: ir_site }
            }
            (SiteKind::ExternFailed, _) => {
                Fault::ExternFailed { name: String::new(), message: "unknown failure".into(), site: ir_site }
            }
        };
        CallError::Runtime(fault)
    }
}

fn buffer<'b, const N: usize>(stack: &'b mut [u64; N], heap: &'b mut Vec<u64>, n: usize) -> &'b mut [u64] {
    if n <= N {
        &mut stack[..n]
    } else {
        heap.resize(n, 0);
        &mut heap[..]
    }
}

/// Check `args` against the parameters and write them in slot layout.
#[inline]
fn pack(f: &CompiledFn, args: &mut [Arg<'_>], slots: &mut [u64]) -> Result<(), CallError> {
    let info = f.info();
    if args.len() != info.params.len() {
        return Err(CallError::ArgCount { function: info.name.clone(), expected: info.params.len(), got: args.len() });
    }
    let mut at = 0;
    for (index, (arg, &ty)) in args.iter_mut().zip(&info.params).enumerate() {
        let n = slot_count(ty);
        pack_one(f, index, arg, ty, &mut slots[at..at + n])?;
        at += n;
    }
    debug_assert_eq!(at, slots_of(&info.params));
    Ok(())
}

/// Check argument `index` against its parameter type `ty` and write it into its slots `s`
/// (`slot_count(ty)` of them). A mutable slice's pointer is taken from the `&mut` borrow, so
/// native code may write through it.
#[inline(always)]
pub(crate) fn pack_one(
    f: &CompiledFn,
    index: usize,
    arg: &mut Arg<'_>,
    ty: Type,
    s: &mut [u64],
) -> Result<(), CallError> {
    match (arg, ty) {
        (Arg::F64(x), Type::F64) => s[0] = x.to_bits(),
        (Arg::I64(x), Type::I64) => s[0] = *x as u64,
        (Arg::Bool(x), Type::Bool) => s[0] = u64::from(*x),
        (Arg::Vector(v), Type::F64x(w)) => {
            if v.len() != w as usize {
                return Err(CallError::VectorLength { function: f.name().into(), index, expected: ty, got: v.len() });
            }
            s.iter_mut().zip(v.iter()).for_each(|(o, x)| *o = x.to_bits());
        }
        (Arg::Slice(v), Type::Slice) => {
            s[0] = v.as_ptr() as u64;
            s[1] = v.len() as u64;
        }
        (Arg::SliceMut(v), Type::Slice | Type::SliceMut) => {
            s[0] = v.as_mut_ptr() as u64;
            s[1] = v.len() as u64;
        }
        (arg, _) => {
            return Err(CallError::ArgType { function: f.name().into(), index, expected: ty, got: arg.kind_name() });
        }
    }
    Ok(())
}

/// Every result of a call, decoded from its slots.
fn decode_all(info: &FnInfo, slots: &[u64]) -> Vec<RuntimeValue> {
    let mut at = 0;
    info.returns
        .iter()
        .map(|&ty| {
            let s = &slots[at..at + slot_count(ty)];
            at += slot_count(ty);
            decode(ty, s)
        })
        .collect()
}

#[inline]
fn decode(ty: Type, s: &[u64]) -> RuntimeValue {
    match ty {
        Type::I64 => RuntimeValue::I64(s[0] as i64),
        Type::Bool => RuntimeValue::Bool(s[0] != 0),
        Type::F64x(_) => RuntimeValue::Vector(s.iter().map(|&b| f64::from_bits(b)).collect()),
        _ => RuntimeValue::F64(f64::from_bits(s[0])),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_are_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<CompiledModule>();
        check::<CompiledFn>();
        check::<crate::TypedFn<(f64, f64), f64>>();
    }
}
