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
