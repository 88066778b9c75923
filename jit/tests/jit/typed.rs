//! `TypedFn::call` calls the internal native function directly, with the arguments in
//! registers (no entry trampoline): for every kind of scalar and every arity it must agree with
//! the slot-buffer path (`CompiledFn::call`) bit for bit, in arguments and results.

use jitdiff_ir::{ExternRegistry, RuntimeValue, parse_module};
use jitdiff_jit::{Arg, JitOptions, compile};

/// `@mixed` takes eight scalars of all three kinds in a shuffled order, so that a part passed in
/// the wrong register or stack slot changes the result; `@flags` returns a tuple with a `bool`.
const IR: &str = "func @mixed(a: f64, n: i64, p: bool, b: f64, m: i64, c: f64, q: bool, d: f64) -> f64 {
entry:
    one = fconst 1.0
    two = fconst 2.0
    nf = itof n
    mf = itof m
    s1 = fmul a, two
    s2 = fadd s1, nf
    s3 = fmul s2, b
    s4 = fsub s3, mf
    s5 = fdiv s4, c
    s6 = fadd s5, d
    t = select p, s6, one
    u = fneg t
    r = select q, t, u
    ret r
}
func @flags(x: f64, k: i64) -> bool, f64, i64 {
entry:
    zero = fconst 0.0
    pos = fcmp gt x, zero
    one = iconst 1
    k1 = iadd k, one
    y = fmul x, x
    ret pos, y, k1
}
func @none() -> f64 {
entry:
    c = fconst 2.5
    ret c
}
func @pushpop(x: f64) -> f64 {
entry:
    tpush x
    y = tpop.f64
    z = fmul x, y
    ret z
}
";

#[test]
fn typed_calls_agree_with_slot_calls_for_every_scalar_kind() {
    let m = parse_module(IR).unwrap();
    let compiled = compile(&m, &ExternRegistry::new(), &JitOptions::new()).unwrap();
    let mixed = compiled.function("mixed").unwrap();
    let typed = mixed.typed::<(f64, i64, bool, f64, i64, f64, bool, f64), f64>().unwrap();
    let cases = [
        (1.5, 3, true, -2.0, 7, 0.25, true, 9.0),
        (-0.5, -4, true, 3.0, i64::MIN, 8.0, false, -1.0),
        (2.0, 0, false, 1.0, 1, 1.0, true, 0.0),
        (f64::MAX, i64::MAX, true, 0.5, -3, -0.0, false, 1e-300),
    ];
    for (a, n, p, b, mm, c, q, d) in cases {
        let slot = mixed
            .call(&mut [
                Arg::F64(a),
                Arg::I64(n),
                Arg::Bool(p),
                Arg::F64(b),
                Arg::I64(mm),
                Arg::F64(c),
                Arg::Bool(q),
                Arg::F64(d),
            ])
            .unwrap();
        let RuntimeValue::F64(expected) = slot[0] else { panic!("an f64 result") };
        let got = typed.call((a, n, p, b, mm, c, q, d)).unwrap();
        assert_eq!(got.to_bits(), expected.to_bits(), "{:?}", (a, n, p, b, mm, c, q, d));
    }

    let flags = compiled.function("flags").unwrap().typed::<(f64, i64), (bool, f64, i64)>().unwrap();
    assert_eq!(flags.call((3.0, 41)).unwrap(), (true, 9.0, 42));
    assert_eq!(flags.call((-2.0, i64::MAX)).unwrap(), (false, 4.0, i64::MIN));

    let none = compiled.function("none").unwrap().typed::<(), f64>().unwrap();
    assert_eq!(none.call(()).unwrap(), 2.5);

    // A function that uses the tape takes the out-of-line path, which lends the thread's tape.
    let pushpop = compiled.function("pushpop").unwrap();
    assert!(pushpop.needs_tape());
    let pushpop = pushpop.typed::<(f64,), f64>().unwrap();
    for x in [3.0, -0.5, 1e10] {
        assert_eq!(pushpop.call((x,)).unwrap(), x * x);
    }
}

/// `@seven` has seven integer-class parts (three slices and an integer: four of them passed on
/// the stack by a direct call) and two floats, interleaved; `@eight` one integer part more
/// (a `bool`), which no direct call passes. Both write an `mslice` and read two slices at
/// computed positions, so that a part in the wrong place changes the result or faults.
const SLICES: &str = "func @seven(a: slice, x: f64, n: i64, out: mslice, b: slice, y: f64) -> f64 {
entry:
    i = iconst 0
    one = iconst 1
    a0 = load a, n
    b1 = load b, one
    la = len a
    lo = len out
    lb = len b
    lab = iadd la, lb
    lall = iadd lab, lo
    lf = itof lall
    p = fmul a0, x
    q = fsub b1, y
    r = fdiv p, q
    s = fadd r, lf
    store out, i, s
    store out, n, p
    ret s
}
func @eight(a: slice, x: f64, n: i64, out: mslice, b: slice, y: f64, neg: bool) -> f64 {
entry:
    s = call @seven(a, x, n, out, b, y)
    m = fneg s
    r = select neg, m, s
    ret r
}
";

#[test]
fn typed_slices_and_direct_calls_agree_with_slot_calls() {
    use jitdiff_jit::{FrameResults, Slice, SliceMut};
    let m = parse_module(SLICES).unwrap();
    let compiled = compile(&m, &ExternRegistry::new(), &JitOptions::new()).unwrap();
    let (seven, eight) = (compiled.function("seven").unwrap(), compiled.function("eight").unwrap());
    let typed_seven = seven.typed::<(Slice, f64, i64, SliceMut, Slice, f64), f64>().unwrap();
    let typed_eight = eight.typed::<(Slice, f64, i64, SliceMut, Slice, f64, bool), f64>().unwrap();
    let a = [1.5, -2.0, 4.0];
    let b = [0.5, 3.25];
    for (n, x, y) in [(0, 2.0, 0.75), (2, -1.0, 1e-3), (1, 0.5, -8.0)] {
        let mut out_slot = [0.0; 4];
        let expected = seven
            .call(&mut [
                Arg::Slice(&a),
                Arg::F64(x),
                Arg::I64(n),
                Arg::SliceMut(&mut out_slot),
                Arg::Slice(&b),
                Arg::F64(y),
            ])
            .unwrap();
        let RuntimeValue::F64(expected) = expected[0] else { panic!("an f64 result") };

        let mut out = [0.0; 4];
        let got = typed_seven.call((&a, x, n, &mut out, &b, y)).unwrap();
        assert_eq!((got.to_bits(), out), (expected.to_bits(), out_slot), "typed, n = {n}");

        let mut out = [0.0; 4];
        let mut results = FrameResults::new();
        let status =
            seven.call_direct(&mut [Arg::Slice(&a), Arg::F64(x), Arg::I64(n)], &mut [&mut out, &mut []], &mut results);
        // The tail is `out` and then `b`, which is no `mslice`: refused before any call.
        assert_eq!(status, None);
        let status = seven.call_direct(
            &mut [Arg::Slice(&a), Arg::F64(x), Arg::I64(n), Arg::SliceMut(&mut out), Arg::Slice(&b), Arg::F64(y)],
            &mut [],
            &mut results,
        );
        if cfg!(all(target_arch = "x86_64", not(target_os = "windows"))) {
            assert_eq!(status, Some(0));
            assert_eq!((results.f64(0).to_bits(), out), (expected.to_bits(), out_slot), "direct, n = {n}");
        }

        let mut out = [0.0; 4];
        let mut frame = seven.frame().unwrap();
        for arg in [Arg::Slice(&a), Arg::F64(x), Arg::I64(n), Arg::SliceMut(&mut out), Arg::Slice(&b), Arg::F64(y)] {
            frame.push(arg).unwrap();
        }
        frame.call_scratch(&mut results).unwrap();
        assert_eq!((results.f64(0).to_bits(), out), (expected.to_bits(), out_slot), "frame, n = {n}");

        // Eight integer parts: the typed handle goes through the trampoline, `call_direct` declines.
        for neg in [false, true] {
            let mut out = [0.0; 4];
            let got = typed_eight.call((&a, x, n, &mut out, &b, y, neg)).unwrap();
            let sign = if neg { -1.0 } else { 1.0 };
            assert_eq!((got.to_bits(), out), ((sign * expected).to_bits(), out_slot), "eight, n = {n}");
        }
        let mut out = [0.0; 4];
        let args = &mut [
            Arg::Slice(&a),
            Arg::F64(x),
            Arg::I64(n),
            Arg::SliceMut(&mut out),
            Arg::Slice(&b),
            Arg::F64(y),
            Arg::Bool(true),
        ];
        assert_eq!(eight.call_direct(args, &mut [], &mut results), None);
    }

    // An index out of bounds is an error through every path (the store before it has happened).
    let mut out = [0.0; 4];
    let err = typed_seven.call((&a, 1.0, 3, &mut out, &b, 2.0)).unwrap_err();
    assert!(err.to_string().contains("index 3 out of bounds for a slice of length 3"), "{err}");
    let mut short = [0.0; 1];
    let err = typed_seven.call((&a, 1.0, 2, &mut short, &b, 2.0)).unwrap_err();
    assert!(err.to_string().contains("index 2 out of bounds for a slice of length 1"), "{err}");
    let mut results = FrameResults::new();
    let status = seven.call_direct(
        &mut [Arg::Slice(&a), Arg::F64(1.0), Arg::I64(-1), Arg::SliceMut(&mut out), Arg::Slice(&b), Arg::F64(2.0)],
        &mut [],
        &mut results,
    );
    if let Some(status) = status {
        assert!(seven.status_error(status, &results).to_string().contains("index -1 out of bounds"));
    }
    // A typed signature with a slice where the function has an `mslice` is refused.
    assert!(seven.typed::<(Slice, f64, i64, Slice, Slice, f64), f64>().is_err());
}
