//! The interpreter's tape: pushes in one call popped back in reverse by a later call on the same
//! tape, replays after `reset_cursor`, underflow errors with their site, callees (and recursion)
//! sharing the caller's tape, and plain calls running on a fresh tape.

use jitdiff_ir::{ArgValue, Interpreter, Module, RuntimeValue, Site, Tape, Type, builder::ModuleBuilder, parse_module};

const PROGRAM: &str = include_str!("../../../tests/filetests/run_tape.ir");

fn program() -> Module {
    let m = parse_module(PROGRAM).unwrap();
    jitdiff_ir::verify_module(&m).unwrap();
    m
}

/// What `@replay(n)` computes from the entries `@record(x, n)` pushed, in plain Rust.
fn expected_replay(x: &[f64], n: usize) -> (f64, i64, i64) {
    let (mut acc, mut isum, mut trues) = (0.0f64, 0i64, 0i64);
    for i in (0..n).rev() {
        let xi = x[i % x.len()];
        acc = acc * 0.5 + xi;
        isum = isum.wrapping_mul(3).wrapping_add(i as i64);
        trues += i64::from(xi > 0.0);
    }
    (acc, isum, trues)
}

fn triple(values: &[RuntimeValue]) -> (f64, i64, i64) {
    match values {
        [RuntimeValue::F64(a), RuntimeValue::I64(s), RuntimeValue::I64(c)] => (*a, *s, *c),
        other => panic!("expected (f64, i64, i64), got {other:?}"),
    }
}

#[test]
fn a_later_call_pops_what_an_earlier_call_pushed_and_can_replay() {
    let m = program();
    let interp = Interpreter::new(&m);
    let x = vec![0.5, -1.25, 3.0, 0.0, 7.5];
    for n in [0usize, 1, 4, 37] {
        let mut tape = Tape::new();
        let out =
            interp.call_with_tape("record", &mut [ArgValue::Slice(x.clone()), ArgValue::I64(n as i64)], &mut tape);
        assert_eq!(out.unwrap(), vec![RuntimeValue::I64(n as i64)]);
        assert_eq!((tape.len(), tape.cursor()), (3 * n, 3 * n));
        if n > 0 {
            let last = &tape.entries()[3 * n - 3..];
            let xl = x[(n - 1) % x.len()];
            assert_eq!(last, [xl.to_bits(), (n - 1) as u64, u64::from(xl > 0.0)]);
        }
        let want = expected_replay(&x, n);
        for round in 0..2 {
            let got = triple(&interp.call_with_tape("replay", &mut [ArgValue::I64(n as i64)], &mut tape).unwrap());
            assert_eq!(got, want, "n = {n}, round {round}");
            assert_eq!((tape.len(), tape.cursor()), (3 * n, 0), "pops keep the entries");
            tape.reset_cursor();
        }
    }
}

#[test]
fn popping_past_the_start_is_an_error_at_the_tpop() {
    let m = program();
    let interp = Interpreter::new(&m);
    let mut tape = Tape::new();
    interp.call_with_tape("record", &mut [ArgValue::Slice(vec![1.0]), ArgValue::I64(2)], &mut tape).unwrap();
    // Two triples pushed, three asked for: the third round's first pop fails.
    let err = interp.call_with_tape("replay", &mut [ArgValue::I64(3)], &mut tape).unwrap_err();
    assert_eq!(err.kind_name(), "TapeUnderflow");
    assert_eq!(err.site(), Some(&Site { func: "replay".into(), block: "body".into(), inst: 0 }));
    assert!(err.to_string().starts_with("tape underflow at @replay, block body, inst 0"), "{err}");
    assert_eq!(tape.cursor(), 0);
    // A plain call has a fresh, empty tape.
    let err = interp.call("replay", &mut [ArgValue::I64(1)]).unwrap_err();
    assert_eq!(err.kind_name(), "TapeUnderflow");
}

#[test]
fn callees_and_recursive_frames_share_the_tape() {
    let m = program();
    let interp = Interpreter::new(&m);
    let mut tape = Tape::new();
    let out = interp.call_with_tape("outer", &mut [ArgValue::F64(3.0)], &mut tape).unwrap();
    assert_eq!(out, vec![RuntimeValue::F64(6.0)]);
    assert_eq!(tape.entries(), [3.0f64.to_bits(), 6.0f64.to_bits()]);
    assert_eq!(tape.cursor(), 1, "@outer popped @inner's push; its own push is still before the cursor");

    let mut tape = Tape::new();
    let out = interp.call_with_tape("down", &mut [ArgValue::I64(100)], &mut tape).unwrap();
    assert_eq!(out, vec![RuntimeValue::I64(5050)]);
    assert_eq!(tape.len(), 101);
    assert_eq!(tape.cursor(), 0);
    assert_eq!(tape.entries()[..3], [100, 99, 98]);
}

#[test]
fn the_builder_emits_tape_instructions() {
    let mut mb = ModuleBuilder::new();
    mb.function("swap", &[("a", Type::F64), ("b", Type::Bool)], &[Type::Bool, Type::F64], |f| {
        f.tpush(f.param(0));
        f.tpush(f.param(1));
        let b = f.tpop(Type::Bool);
        let a = f.tpop(Type::F64);
        f.ret(&[b, a]);
    })
    .unwrap();
    let m = mb.finish().unwrap();
    jitdiff_ir::verify_module(&m).unwrap();
    assert!(m.to_string().contains("tpop.bool"));
    let out = Interpreter::new(&m).call("swap", &mut [ArgValue::F64(-0.0), ArgValue::Bool(true)]).unwrap();
    assert_eq!(out, vec![RuntimeValue::Bool(true), RuntimeValue::F64(-0.0)]);

    let mut mb = ModuleBuilder::new();
    let err = mb.function("bad", &[], &[], |f| {
        f.tpop(Type::Slice);
    });
    assert!(err.unwrap_err().to_string().contains("f64, i64 or bool"));
}

#[test]
fn passes_keep_tape_instructions() {
    // Unused pops still move the cursor, and two pops are never one: DCE and CSE keep both.
    let text = "func @f() -> f64 {\nentry:\n    a = tpop.f64\n    b = tpop.f64\n    ret b\n}\n";
    let mut m = parse_module(text).unwrap();
    jitdiff_ir::passes::optimize(&mut m);
    assert_eq!(m.functions[0].blocks[0].insts.len(), 2, "{m}");
    let mut tape = Tape::new();
    tape.push_bits(1.0f64.to_bits()).unwrap();
    tape.push_bits(2.0f64.to_bits()).unwrap();
    let out = Interpreter::new(&m).call_with_tape("f", &mut [], &mut tape).unwrap();
    assert_eq!(out, vec![RuntimeValue::F64(1.0)]);
}
