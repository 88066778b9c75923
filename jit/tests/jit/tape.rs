//! Native tapes: the programs of `tests/filetests/run_tape.ir` run on shared tapes under the JIT
//! and the interpreter (results, errors and final tapes equal), a 10,000,000-push loop that
//! grows the tape, and tape instructions behind the typed fast path.

use jitdiff_ir::{ArgValue, ExternRegistry, Interpreter, Module, RuntimeValue, Site, Tape, parse_module};
use jitdiff_jit::{Agreement, Arg, CallError, CompiledModule, Fault, JitOptions, compile};
use jitdiff_jit::{differential_call_with_tape, same_value};

const PROGRAM: &str = include_str!("../../../tests/filetests/run_tape.ir");

fn program() -> (Module, CompiledModule) {
    let m = parse_module(PROGRAM).unwrap();
    let compiled = compile(&m, &ExternRegistry::new(), &JitOptions::new()).unwrap();
    (m, compiled)
}

/// Run one call under both on `tape`; they must agree (tape included). Returns the outcome and
/// the final tape.
fn both(m: &Module, compiled: &CompiledModule, f: &str, args: &[ArgValue], tape: &Tape) -> (Agreement, Tape) {
    let interp = Interpreter::new(m);
    differential_call_with_tape(compiled, &interp, f, args, tape).unwrap_or_else(|d| panic!("{d}"))
}

/// What `@replay(n)` computes from the entries `@record(x, n)` pushed, in plain Rust.
fn expected_replay(x: &[f64], n: usize) -> Vec<RuntimeValue> {
    let (mut acc, mut isum, mut trues) = (0.0f64, 0i64, 0i64);
    for i in (0..n).rev() {
        let xi = x[i % x.len()];
        acc = acc * 0.5 + xi;
        isum = isum.wrapping_mul(3).wrapping_add(i as i64);
        trues += i64::from(xi > 0.0);
    }
    vec![RuntimeValue::F64(acc), RuntimeValue::I64(isum), RuntimeValue::I64(trues)]
}

fn returned(a: Agreement) -> Vec<RuntimeValue> {
    match a {
        Agreement::Returned(v) => v,
        other => panic!("expected values, got {other:?}"),
    }
}

#[test]
fn record_then_replay_twice_agrees_with_the_interpreter_including_the_tape() {
    let (m, compiled) = program();
    let x = vec![0.5, -1.25, 3.0, f64::NAN, 0.0, -7.5, 1e300];
    // 100,000 triples: the native tape grows from empty through many reallocations.
    for n in [0usize, 1, 5, 33, 100_000] {
        let args = [ArgValue::Slice(x.clone()), ArgValue::I64(n as i64)];
        let (out, mut tape) = both(&m, &compiled, "record", &args, &Tape::new());
        assert_eq!(returned(out), vec![RuntimeValue::I64(n as i64)]);
        assert_eq!((tape.len(), tape.cursor()), (3 * n, 3 * n));
        for round in 0..2 {
            let (out, after) = both(&m, &compiled, "replay", &[ArgValue::I64(n as i64)], &tape);
            let got = returned(out);
            let want = expected_replay(&x, n);
            assert!(
                got.iter().zip(&want).all(|(a, b)| same_value(a, b)),
                "n = {n}, round {round}: {got:?} vs {want:?}"
            );
            assert_eq!((after.len(), after.cursor()), (3 * n, 0));
            tape = after;
            tape.reset_cursor();
        }
    }
}

#[test]
fn native_underflow_names_the_tpop_and_leaves_the_tape_consistent() {
    let (m, compiled) = program();
    let (_, tape) = both(&m, &compiled, "record", &[ArgValue::Slice(vec![2.0]), ArgValue::I64(2)], &Tape::new());
    let (out, after) = both(&m, &compiled, "replay", &[ArgValue::I64(3)], &tape);
    assert_eq!(out, Agreement::Failed("TapeUnderflow"));
    assert_eq!(after.cursor(), 0);

    let replay = compiled.function("replay").unwrap();
    let mut tape = tape;
    let err = replay.call_with_tape(&mut [Arg::I64(3)], &mut tape).unwrap_err();
    let CallError::Runtime(Fault::TapeUnderflow { site }) = &err else { panic!("{err:?}") };
    assert_eq!(site, &Site { func: "replay".into(), block: "body".into(), inst: 0 });
    assert!(err.to_string().starts_with("tape underflow at @replay, block body, inst 0"), "{err}");
    // A plain call runs on a fresh tape.
    let err = replay.call(&mut [Arg::I64(1)]).unwrap_err();
    assert!(matches!(err, CallError::Runtime(Fault::TapeUnderflow { .. })), "{err}");
}

#[test]
fn callees_and_recursion_share_the_native_tape() {
    let (m, compiled) = program();
    let (out, tape) = both(&m, &compiled, "outer", &[ArgValue::F64(3.0)], &Tape::new());
    assert_eq!(returned(out), vec![RuntimeValue::F64(6.0)]);
    assert_eq!((tape.entries(), tape.cursor()), (&[3.0f64.to_bits(), 6.0f64.to_bits()][..], 1));
    let (out, tape) = both(&m, &compiled, "down", &[ArgValue::I64(200)], &Tape::new());
    assert_eq!(returned(out), vec![RuntimeValue::I64(20_100)]);
    assert_eq!((tape.len(), tape.cursor()), (201, 0));
    // Past the call-depth limit: the error comes after 256 pushes, on both.
    let (out, tape) = both(&m, &compiled, "down", &[ArgValue::I64(1000)], &Tape::new());
    assert_eq!(out, Agreement::Failed("CallDepthExceeded"));
    assert_eq!(tape.len(), 256);
}

#[test]
fn calls_continue_on_a_tape_that_already_holds_entries() {
    let (m, compiled) = program();
    let mut start = Tape::new();
    for k in 0..5u64 {
        start.push_bits(k).unwrap();
    }
    // A cursor in the middle: @outer's push moves it to the end again.
    start.pop_bits().unwrap();
    start.pop_bits().unwrap();
    let (out, tape) = both(&m, &compiled, "outer", &[ArgValue::F64(-1.0)], &start);
    assert_eq!(returned(out), vec![RuntimeValue::F64(-2.0)]);
    assert_eq!(tape.len(), 7);
    assert_eq!(tape.cursor(), 6);
    assert_eq!(tape.entries()[..5], [0, 1, 2, 3, 4]);
}

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
    x = itof i
    tpush x
    i2 = iadd i, one
    jump head(i2)
exit:
    ret
}

func @drain(n: i64) -> f64 {
entry:
    zero = iconst 0
    one = iconst 1
    acc0 = fconst 0.0
    jump head(zero, acc0)
head(i: i64, acc: f64):
    more = icmp lt i, n
    br more, body, exit(acc)
body:
    x = tpop.f64
    acc2 = fadd acc, x
    i2 = iadd i, one
    jump head(i2, acc2)
exit(r: f64):
    ret r
}

func @push_pop(x: f64) -> f64 {
entry:
    tpush x
    y = tpop.f64
    ret y
}
";

#[test]
fn ten_million_native_pushes_grow_the_tape_and_pop_back_exactly() {
    let m = parse_module(FILL).unwrap();
    let compiled = compile(&m, &ExternRegistry::new(), &JitOptions::new()).unwrap();
    let (fill, drain) = (compiled.function("fill").unwrap(), compiled.function("drain").unwrap());
    const N: usize = 10_000_000;
    let mut tape = Tape::new();
    fill.call_with_tape(&mut [Arg::I64(N as i64)], &mut tape).unwrap();
    assert_eq!((tape.len(), tape.cursor()), (N, N));
    assert!(tape.bytes() >= 8 * N);
    for k in [0, 1, 4095, 4096, 1 << 20, N / 2, N - 1] {
        assert_eq!(tape.entries()[k], (k as f64).to_bits(), "entry {k}");
    }
    // Sums of integers below 2^53 are exact in any order.
    let want = (N as f64 - 1.0) * N as f64 / 2.0;
    for _ in 0..2 {
        let out = drain.call_with_tape(&mut [Arg::I64(N as i64)], &mut tape).unwrap();
        assert_eq!(out, vec![RuntimeValue::F64(want)]);
        assert_eq!(tape.cursor(), 0);
        tape.reset_cursor();
    }
    let err = drain.call_with_tape(&mut [Arg::I64(N as i64 + 1)], &mut tape).unwrap_err();
    assert!(matches!(err, CallError::Runtime(Fault::TapeUnderflow { .. })), "{err}");
    tape.release();
    assert_eq!((tape.len(), tape.bytes()), (0, 0));
}

#[test]
fn the_typed_fast_path_and_call_into_run_on_tapes_too() {
    let m = parse_module(FILL).unwrap();
    let compiled = compile(&m, &ExternRegistry::new(), &JitOptions::new()).unwrap();
    let f = compiled.function("push_pop").unwrap();
    let typed = f.typed::<(f64,), f64>().unwrap();
    assert_eq!(typed.call((2.5,)).unwrap(), 2.5);
    let mut tape = Tape::new();
    let mut out = [RuntimeValue::F64(0.0)];
    for k in 0..3 {
        f.call_into_with_tape(&mut [Arg::F64(k as f64)], &mut out, &mut tape).unwrap();
        assert_eq!(out[0], RuntimeValue::F64(k as f64));
    }
    // Each call pushed one entry and popped it again.
    assert_eq!((tape.len(), tape.cursor()), (3, 2));
    // A cursor set past the end (through the low-level parts) counts as the end.
    *tape.parts_mut().1 = 99;
    let drain = compiled.function("drain").unwrap();
    assert_eq!(drain.call_with_tape(&mut [Arg::I64(3)], &mut tape).unwrap(), vec![RuntimeValue::F64(3.0)]);
}

/// Runs of `tpop`s (and `tpush`es) in a row are checked once per run; the error still names
/// the operation that fails: the pops before it succeed, exactly as the interpreter does it.
#[test]
fn a_run_of_pops_fails_at_the_pop_that_finds_the_tape_empty() {
    let m = parse_module(
        "func @three() -> f64 {
entry:
    a = tpop.f64
    b = tpop.f64
    c = tpop.f64
    s = fadd a, b
    t = fadd s, c
    ret t
}
func @push3(x: f64) {
entry:
    y = fadd x, x
    tpush x
    tpush y
    tpush x
    ret
}",
    )
    .unwrap();
    let compiled = compile(&m, &ExternRegistry::new(), &JitOptions::new()).unwrap();
    for entries in 0..=3usize {
        let mut tape = Tape::new();
        for k in 0..entries {
            tape.push_bits((k as f64 + 1.0).to_bits()).unwrap();
        }
        let (out, after) = both(&m, &compiled, "three", &[], &tape);
        if entries == 3 {
            assert_eq!(returned(out), vec![RuntimeValue::F64(6.0)]);
        } else {
            assert_eq!(out, Agreement::Failed("TapeUnderflow"), "{entries} entries");
            let err = compiled.function("three").unwrap().call_with_tape(&mut [], &mut tape.clone()).unwrap_err();
            let CallError::Runtime(Fault::TapeUnderflow { site }) = &err else { panic!("{err:?}") };
            assert_eq!(site, &Site { func: "three".into(), block: "entry".into(), inst: entries }, "{err}");
        }
        assert_eq!(after.cursor(), 0);
    }
    // Three pushes in a row on tapes with 0 to 5 free entries: the run grows the tape as
    // often as it must.
    for capacity in 0..6 {
        let tape = Tape::with_capacity(capacity).unwrap();
        let (out, after) = both(&m, &compiled, "push3", &[ArgValue::F64(1.5)], &tape);
        assert_eq!(returned(out), vec![]);
        assert_eq!(after.len(), 3);
    }
}

/// Pops with arithmetic and a store between them: every error names the pop that finds the
/// tape empty, and the store runs exactly when the pops before it succeeded, as in the
/// interpreter.
#[test]
fn pops_between_arithmetic_and_stores_fail_where_the_interpreter_does() {
    let m = parse_module(
        "func @mixed(out: mslice) -> f64 {
entry:
    zero = iconst 0
    a = tpop.f64
    a2 = fmul a, a
    b = tpop.f64
    s = fadd a2, b
    store out, zero, s
    c = tpop.f64
    d = tpop.f64
    t = fadd c, d
    u = fadd s, t
    ret u
}",
    )
    .unwrap();
    let compiled = compile(&m, &ExternRegistry::new(), &JitOptions::new()).unwrap();
    // Pops at instructions 1, 3 (before the store at 5) and 6, 7 (after it).
    let pops = [1usize, 3, 6, 7];
    for (entries, &failing_pop) in pops.iter().chain(&[0]).enumerate() {
        let mut tape = Tape::new();
        for k in 0..entries {
            tape.push_bits((k as f64 + 1.0).to_bits()).unwrap();
        }
        let (out, after) = both(&m, &compiled, "mixed", &[ArgValue::SliceMut(vec![0.0])], &tape);
        let mut native_out = [9.0];
        let result = compiled
            .function("mixed")
            .unwrap()
            .call_with_tape(&mut [jitdiff_jit::Arg::SliceMut(&mut native_out)], &mut tape.clone());
        if entries == 4 {
            // Popped 4, 3 then 2, 1: s = 16 + 3, u = 19 + 3.
            assert_eq!(returned(out), vec![RuntimeValue::F64(22.0)]);
            assert_eq!(native_out, [19.0]);
        } else {
            assert_eq!(out, Agreement::Failed("TapeUnderflow"), "{entries} entries");
            let err = result.unwrap_err();
            let CallError::Runtime(Fault::TapeUnderflow { site }) = &err else { panic!("{err:?}") };
            assert_eq!(site.inst, failing_pop, "{entries} entries: {err}");
            // The store ran exactly when both pops before it succeeded.
            assert_eq!(native_out[0] != 9.0, entries >= 2, "{entries} entries");
        }
        assert_eq!(after.cursor(), 0);
    }
}

/// A run of pushes spans pure arithmetic (checked once) and ends at a store: with room for
/// 0 to 3 entries, the error names the push that does not fit, as the interpreter's does, and
/// the store ran exactly when the pushes before it fitted. (The native tape keeps none of the
/// failing run's entries where the interpreter keeps those that fitted: the run is checked
/// before its values exist. A failed call's tape is not used again.)
#[test]
fn push_runs_span_arithmetic_and_stop_at_effects() {
    let m = parse_module(
        "func @pushes(x: f64, out: mslice) {
entry:
    zero = iconst 0
    tpush x
    a = fmul x, x
    tpush a
    b = fadd a, x
    store out, zero, b
    tpush b
    c = fmul b, b
    tpush c
    ret
}",
    )
    .unwrap();
    let compiled = compile(&m, &ExternRegistry::new(), &JitOptions::new()).unwrap();
    // Pushes at instructions 1, 3 (before the store at 5) and 6, 8 (after it).
    let pushes = [1usize, 3, 6, 8];
    for (room, &failing_push) in pushes.iter().chain(&[0]).enumerate() {
        let mut tape = Tape::new();
        tape.set_limit_bytes(8 * room);
        let mut interpreted = tape.clone();
        let mut interpreter_args = [ArgValue::F64(2.0), ArgValue::SliceMut(vec![0.0])];
        let out = Interpreter::new(&m).call_with_tape("pushes", &mut interpreter_args, &mut interpreted);
        let mut native_out = [9.0];
        let mut native_tape = tape.clone();
        let result = compiled.function("pushes").unwrap().call_with_tape(
            &mut [jitdiff_jit::Arg::F64(2.0), jitdiff_jit::Arg::SliceMut(&mut native_out)],
            &mut native_tape,
        );
        if room == 4 {
            assert!(out.is_ok() && result.is_ok());
            assert_eq!(native_tape, interpreted);
            assert_eq!(native_out, [6.0]);
        } else {
            let err = result.unwrap_err();
            let CallError::Runtime(Fault::TapeAllocation { site }) = &err else { panic!("{err:?}") };
            assert_eq!(site.inst, failing_push, "room for {room}: {err}");
            let interpreter_err = format!("{:?}", out.unwrap_err());
            assert!(
                interpreter_err.contains("TapeAllocation") || interpreter_err.contains("Allocation"),
                "{interpreter_err}"
            );
            assert_eq!(native_out[0] != 9.0, room >= 2, "room for {room}");
            assert_eq!(interpreter_args[1], ArgValue::SliceMut(vec![if room >= 2 { 6.0 } else { 0.0 }]));
            assert!(native_tape.len() <= room);
        }
    }
}

/// A tape limit (the module's, from `JitOptions::tape_limit`, or the tape's own) stops a
/// pushing loop with a `TapeAllocation` error at the push that would pass it — the same push
/// and the same tape as the interpreter with that limit on its tape.
#[test]
fn a_tape_limit_stops_a_runaway_loop_with_an_error() {
    let m = parse_module(
        "func @fill(n: i64) {
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
}",
    )
    .unwrap();
    let limited = compile(&m, &ExternRegistry::new(), &JitOptions::new().tape_limit(64 << 10)).unwrap();
    let fill = limited.function("fill").unwrap();
    let mut tape = Tape::new();
    let err = fill.call_with_tape(&mut [Arg::I64(1 << 40)], &mut tape).unwrap_err();
    let CallError::Runtime(Fault::TapeAllocation { site }) = &err else { panic!("{err:?}") };
    assert_eq!(site, &Site { func: "fill".into(), block: "body".into(), inst: 0 });
    assert!(err.to_string().contains("tape reached its limit (JitOptions::tape_limit"), "{err}");
    assert_eq!(tape.len(), 8192, "64 KiB of entries, no more");
    // The tape's own limit, under the default module limit: the interpreter agrees.
    let unlimited = compile(&m, &ExternRegistry::new(), &JitOptions::new()).unwrap();
    let mut small = Tape::new();
    small.set_limit_bytes(8 * 1000);
    let (out, after) = both(&m, &unlimited, "fill", &[ArgValue::I64(5000)], &small);
    assert_eq!(out, Agreement::Failed("TapeAllocation"));
    assert_eq!(after.len(), 1000);
    let (out, after) = both(&m, &unlimited, "fill", &[ArgValue::I64(1000)], &small);
    assert_eq!(returned(out), vec![]);
    assert_eq!(after.len(), 1000);
}

/// `tsplit`/`trejoin` around a callee that pushes and one that pops (a checkpointed segment, as
/// reverse mode emits it), in a function that only pops and in one that also pushes.
const SPLIT: &str = "func @seg_fwd(x: f64) {
entry:
    tpush x
    y = fmul x, x
    tpush y
    ret
}
func @seg_pb() -> f64 {
entry:
    y = tpop.f64
    x = tpop.f64
    s = fadd x, y
    ret s
}
func @pops(x: f64) -> f64, f64 {
entry:
    a = tpop.f64
    c = tsplit
    call @seg_fwd(x)
    s = call @seg_pb()
    trejoin c
    b = tpop.f64
    ret s, b
}
func @pushes(x: f64) -> f64 {
entry:
    tpush x
    tpush x
    c = tsplit
    call @seg_fwd(x)
    tpush x
    z = tpop.f64
    s = call @seg_pb()
    trejoin c
    b = tpop.f64
    t = fadd s, b
    ret t
}
func @bad(c: i64) {
entry:
    trejoin c
    ret
}";

#[test]
fn split_and_rejoin_leave_the_tape_as_it_was_on_both_executors() {
    let m = parse_module(SPLIT).unwrap();
    let compiled = compile(&m, &ExternRegistry::new(), &JitOptions::new()).unwrap();
    let mut start = Tape::new();
    for v in [1.5f64, 2.5, 3.5] {
        start.push_bits(v.to_bits()).unwrap();
    }
    let (out, tape) = both(&m, &compiled, "pops", &[ArgValue::F64(3.0)], &start);
    assert_eq!(returned(out), vec![RuntimeValue::F64(12.0), RuntimeValue::F64(2.5)]);
    assert_eq!((tape.len(), tape.cursor()), (3, 1));
    let (out, tape) = both(&m, &compiled, "pushes", &[ArgValue::F64(2.0)], &Tape::new());
    assert_eq!(returned(out), vec![RuntimeValue::F64(8.0)]);
    assert_eq!((tape.len(), tape.cursor()), (2, 1));
    let (out, _) = both(&m, &compiled, "bad", &[ArgValue::I64(5)], &start);
    assert_eq!(out, Agreement::Failed("TapeUnderflow"));
}

/// `blocks` blocks that each push (a merge behind every one) and load `x[k + n]`, and a chain
/// that pops them back, one or two entries per block: over 1,000 instructions, so that
/// `OptLevel::Auto` compiles without Cranelift's optimizer, where error exits follow their
/// checks in the block order instead of sitting at the end of the function.
fn push_chain(blocks: usize) -> String {
    use std::fmt::Write;
    let mut text =
        String::from("func @push_chain(x: slice, n: i64) -> f64 {\nentry:\n    zero = fconst 0.0\n    jump b0(zero)\n");
    for k in 0..blocks {
        let _ = write!(
            text,
            "b{k}(a{k}: f64):\n    tpush a{k}\n    i{k} = iconst {k}\n    j{k} = iadd i{k}, n\n    v{k} = load x, j{k}\n    \
             s{k} = fadd a{k}, v{k}\n    c{k} = fcmp gt s{k}, zero\n    br c{k}, l{k}, b{}(s{k})\nl{k}:\n    \
             u{k} = fmul s{k}, v{k}\n    jump b{}(u{k})\n",
            k + 1,
            k + 1
        );
    }
    let _ = write!(
        text,
        "b{blocks}(last: f64):\n    ret last\n}}\nfunc @pop_chain() -> f64 {{\nentry:\n    zero = fconst 0.0\n    jump p0(zero)\n"
    );
    for k in 0..blocks {
        let second = if k % 3 == 0 {
            format!("    w{k} = tpop.f64\n    y{k} = fadd y0_{k}, w{k}\n")
        } else {
            format!("    y{k} = fadd y0_{k}, zero\n")
        };
        let _ = write!(
            text,
            "p{k}(a{k}: f64):\n    y0_{k} = tpop.f64\n{second}    s{k} = fadd a{k}, y{k}\n    jump p{}(s{k})\n",
            k + 1
        );
    }
    let _ = write!(text, "p{blocks}(last: f64):\n    ret last\n}}\n");
    text
}

/// Every kind of error exit — a bounds check with its index and length, a tape that may not
/// grow, a pop and a run of pops that find the tape empty — fails at the same site, with the same
/// message and the same tape, whichever way the exits are laid out (optimized and not), as in
/// the interpreter.
#[test]
fn error_exits_agree_with_and_without_the_optimizer() {
    use jitdiff_jit::{OptLevel, RegAlloc};
    let m = parse_module(&push_chain(300)).unwrap();
    let x: Vec<f64> = (0..300).map(|k| 0.25 + (k % 7) as f64 * 0.125).collect();
    let modules: Vec<CompiledModule> =
        [JitOptions::new(), JitOptions::new().opt_level(OptLevel::Speed).regalloc(RegAlloc::Backtracking)]
            .iter()
            .map(|options| compile(&m, &ExternRegistry::new(), options).unwrap())
            .collect();
    let mut limited = Tape::new();
    limited.set_limit_bytes(8 * 100);
    // `@pop_chain` pops 400 entries (two in every third block).
    let filled = |entries: usize| {
        let mut tape = Tape::new();
        for k in 0..entries {
            tape.push_bits((k as f64 * 0.5).to_bits()).unwrap();
        }
        tape
    };
    let (full, short) = (filled(400), filled(250));
    let cases: Vec<(&str, Vec<ArgValue>, Tape, &str)> = vec![
        ("push_chain", vec![ArgValue::Slice(x.clone()), ArgValue::I64(0)], Tape::new(), "returns"),
        ("push_chain", vec![ArgValue::Slice(x.clone()), ArgValue::I64(120)], Tape::new(), "OutOfBounds"),
        ("push_chain", vec![ArgValue::Slice(x.clone()), ArgValue::I64(0)], limited, "TapeAllocation"),
        ("pop_chain", vec![], full, "returns"),
        ("pop_chain", vec![], short, "TapeUnderflow"),
    ];
    for (f, args, tape, want) in cases {
        let mut messages = vec![];
        for compiled in &modules {
            let (out, _) = both(&m, compiled, f, &args, &tape);
            match want {
                "returns" => assert!(matches!(out, Agreement::Returned(_)), "{f}: {out:?}"),
                kind => assert_eq!(out, Agreement::Failed(kind), "{f}"),
            }
            let mut native_args: Vec<Arg> = args
                .iter()
                .map(|a| match a {
                    ArgValue::Slice(v) => Arg::Slice(v),
                    ArgValue::I64(n) => Arg::I64(*n),
                    other => panic!("{other:?}"),
                })
                .collect();
            let outcome = compiled.function(f).unwrap().call_with_tape(&mut native_args, &mut tape.clone());
            messages.push(outcome.map_err(|e| e.to_string()).map(|v| format!("{v:?}")));
        }
        assert_eq!(messages[0], messages[1], "{f} ({want})");
        if want == "OutOfBounds" {
            let message = messages[0].clone().unwrap_err();
            assert!(message.contains("index 300") && message.contains("length 300"), "{message}");
        }
    }
}
