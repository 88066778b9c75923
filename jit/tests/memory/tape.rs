//! Tape memory: `Tape::release` gives a large tape's memory back to the system, a refused
//! allocation is a `TapeAllocation` error (interpreter and JIT alike, never an abort), and a call
//! on a tape with room allocates nothing.

use jitdiff_ir::{ArgValue, ExternRegistry, Interpreter, RuntimeValue, Site, Tape, parse_module};
use jitdiff_jit::alloc_count::{allocations_on_this_thread, fail_allocations_over};
use jitdiff_jit::{Agreement, Arg, CallError, Fault, JitOptions, compile, differential_call_with_tape};

use super::{SERIAL, rss_kib};

const FILL: &str = "\
func @fill(n: i64) {
entry:
    zero = iconst 0
    one = iconst 1
    jump head(zero)
head(i: i64):
    more = icmp lt i, n
    br more, body, exit
body:
    tpush i
    i2 = iadd i, one
    jump head(i2)
exit:
    ret
}

func @push_pop(x: f64) -> f64 {
entry:
    tpush x
    y = tpop.f64
    ret y
}
";

#[test]
fn release_returns_a_large_tapes_memory() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let m = parse_module(FILL).unwrap();
    let fill = compile(&m, &ExternRegistry::new(), &JitOptions::new()).unwrap().function("fill").unwrap();
    let mut tape = Tape::new();
    let before = rss_kib();
    fill.call_with_tape(&mut [Arg::I64(10_000_000)], &mut tape).unwrap();
    let full = rss_kib();
    assert_eq!(tape.len(), 10_000_000);
    // 80 MB of entries were written.
    assert!(full >= before + 70_000, "RSS {before} -> {full} KiB after 10,000,000 pushes");
    tape.clear();
    assert!(tape.bytes() >= 80_000_000, "clear keeps the memory");
    tape.release();
    let released = rss_kib();
    assert_eq!(tape.bytes(), 0);
    assert!(released + 60_000 <= full, "RSS {full} -> {released} KiB after release");
}

#[test]
fn a_refused_allocation_is_a_tape_allocation_error_on_both() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let m = parse_module(FILL).unwrap();
    let compiled = compile(&m, &ExternRegistry::new(), &JitOptions::new()).unwrap();
    let interp = Interpreter::new(&m);
    let fill = compiled.function("fill").unwrap();
    let mut native_tape = Tape::new();
    let (outcome, native) = {
        // 8 MiB holds 2^20 entries; the next doubling (16 MiB) is refused.
        let _limit = fail_allocations_over(8 << 20);
        let outcome =
            differential_call_with_tape(&compiled, &interp, "fill", &[ArgValue::I64(3_000_000)], &Tape::new());
        (outcome, fill.call_with_tape(&mut [Arg::I64(3_000_000)], &mut native_tape))
    };
    let (agreement, agreed_tape) = outcome.unwrap_or_else(|d| panic!("{d}"));
    let (len, native_len) = (agreed_tape.len(), native_tape.len());
    assert_eq!(agreement, Agreement::Failed("TapeAllocation"));
    assert_eq!((len, native_len), (1 << 20, 1 << 20), "the tape keeps what was pushed before the failure");
    let err = native.unwrap_err();
    let CallError::Runtime(Fault::TapeAllocation { site }) = &err else { panic!("{err:?}") };
    assert_eq!(site, &Site { func: "fill".into(), block: "body".into(), inst: 0 });
    assert!(err.to_string().starts_with("could not grow the tape at @fill, block body, inst 0"), "{err}");
}

#[test]
fn calls_on_a_tape_with_room_allocate_nothing() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let m = parse_module(FILL).unwrap();
    let compiled = compile(&m, &ExternRegistry::new(), &JitOptions::new()).unwrap();
    let (fill, push_pop) = (compiled.function("fill").unwrap(), compiled.function("push_pop").unwrap());
    let typed = push_pop.typed::<(f64,), f64>().unwrap();
    let mut tape = Tape::with_capacity(1000).unwrap();
    let mut out = [RuntimeValue::F64(0.0)];
    let before = allocations_on_this_thread();
    for k in 0..100 {
        push_pop.call_into_with_tape(&mut [Arg::F64(k as f64)], &mut out, &mut tape).unwrap();
        // A fresh tape that is pushed to grows; one that is not costs nothing.
        push_pop.call_into(&mut [Arg::F64(k as f64)], &mut out).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(typed.call((k as f64,)).unwrap(), k as f64);
    }
    let with_room = allocations_on_this_thread() - before;
    fill.call_into_with_tape(&mut [Arg::I64(800)], &mut [], &mut tape).unwrap();
    let after_fill = allocations_on_this_thread() - before;
    assert_eq!(tape.len(), 900);
    // Plain calls (call_into and typed: 200 calls) share the thread's scratch tape, which grows
    // once, at the first push.
    assert_eq!(with_room, 1, "only the scratch tape of the plain calls allocates, once");
    assert_eq!(after_fill, with_room, "900 entries fit in the reserved 1000");
}

/// A function that cannot touch the tape is lent none: a tape passed to it keeps its entries
/// and cursor, and one that pushes through a callee is still lent its tape.
#[test]
fn only_functions_that_touch_the_tape_are_lent_one() {
    let m = parse_module(
        "func @pure(x: f64) -> f64 {\nentry:\n    y = fmul x, x\n    ret y\n}\n\
         func @push(x: f64) {\nentry:\n    tpush x\n    ret\n}\n\
         func @via_callee(x: f64) -> f64 {\nentry:\n    call @push(x)\n    y = fadd x, x\n    ret y\n}\n\
         func @local(n: i64) -> f64 {\nentry:\n    a = alloc n\n    i = iconst 0\n    v = load a, i\n    ret v\n}\n",
    )
    .unwrap();
    let compiled = compile(&m, &ExternRegistry::new(), &JitOptions::new()).unwrap();
    let (pure, via, local) = (
        compiled.function("pure").unwrap(),
        compiled.function("via_callee").unwrap(),
        compiled.function("local").unwrap(),
    );
    assert!(!pure.needs_tape());
    assert!(via.needs_tape());
    assert!(local.needs_tape());
    let mut tape = Tape::new();
    tape.push_bits(7).unwrap();
    assert_eq!(pure.call_with_tape(&mut [Arg::F64(3.0)], &mut tape).unwrap(), [RuntimeValue::F64(9.0)]);
    assert_eq!((tape.entries(), tape.cursor()), (&[7u64][..], 1));
    assert_eq!(via.call_with_tape(&mut [Arg::F64(2.5)], &mut tape).unwrap(), [RuntimeValue::F64(5.0)]);
    assert_eq!(tape.entries(), &[7, 2.5f64.to_bits()]);
    // Without a tape of the caller's, both kinds work.
    assert_eq!(via.call(&mut [Arg::F64(1.0)]).unwrap(), [RuntimeValue::F64(2.0)]);
    assert_eq!(local.call(&mut [Arg::I64(4)]).unwrap(), [RuntimeValue::F64(0.0)]);
    assert_eq!(pure.typed::<(f64,), f64>().unwrap().call((4.0,)).unwrap(), 16.0);
}
