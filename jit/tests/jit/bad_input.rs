//! Bad input is a clear error, never a crash: wrong arguments, short slices and wild indices,
//! unknown externs and functions, unverified modules.

use jitdiff_ir::{BlockData, ExternRegistry, Function, Imm, InstData, Module, Opcode, RuntimeValue, Terminator, Type};
use jitdiff_ir::{ExternError, parse_module};
use jitdiff_jit::{Arg, CallError, CompiledModule, Fault, JitError, JitOptions, compile};

const MODULE: &str = "func @f(x: slice, y: mslice, v: f64x4, k: i64, s: f64, b: bool) -> f64 {
entry:
    a = load x, k
    store y, k, a
    e = extract v, 3
    t = fadd a, e
    u = fadd t, s
    r = select b, u, s
    ret r
}

func @div(a: i64, b: i64) -> i64 {
entry:
    q = idiv a, b
    ret q
}
";

fn compiled() -> CompiledModule {
    compile(&parse_module(MODULE).unwrap(), &ExternRegistry::new(), &JitOptions::new()).unwrap()
}

#[test]
fn wrong_arity_and_argument_kinds_are_reported_before_native_code_runs() {
    let f = compiled().function("f").unwrap();
    let mut y = [0.0; 2];
    let err = f.call(&mut [Arg::F64(1.0)]).unwrap_err();
    assert_eq!(err, CallError::ArgCount { function: "f".into(), expected: 6, got: 1 });
    assert_eq!(err.to_string(), "@f takes 6 argument(s), but 1 were given");

    // A read-only slice where an mslice is required.
    let v = [1.0, 2.0, 3.0, 4.0];
    let mut args =
        [Arg::Slice(&[1.0]), Arg::Slice(&[2.0]), Arg::Vector(&v), Arg::I64(0), Arg::F64(0.5), Arg::Bool(true)];
    let err = f.call(&mut args).unwrap_err();
    assert!(matches!(err, CallError::ArgType { index: 1, expected: Type::SliceMut, got: "Arg::Slice", .. }), "{err}");
    assert!(err.to_string().contains("must be Arg::SliceMut"), "{err}");

    // A vector of the wrong width.
    let mut args = [
        Arg::Slice(&[1.0]),
        Arg::SliceMut(&mut y),
        Arg::Vector(&[1.0, 2.0]),
        Arg::I64(0),
        Arg::F64(0.5),
        Arg::Bool(true),
    ];
    let err = f.call(&mut args).unwrap_err();
    assert!(matches!(err, CallError::VectorLength { index: 2, got: 2, .. }), "{err}");
    assert!(err.to_string().contains("needs 4 lanes"), "{err}");

    // An i64 where an f64 is expected (no silent conversion).
    let mut args =
        [Arg::Slice(&[1.0]), Arg::SliceMut(&mut y), Arg::Vector(&v), Arg::I64(0), Arg::I64(1), Arg::Bool(true)];
    assert!(matches!(f.call(&mut args).unwrap_err(), CallError::ArgType { index: 4, expected: Type::F64, .. }));

    // Nothing was written by the failed calls.
    assert_eq!(y, [0.0; 2]);

    // The same arguments, right: y[0] = x[0], result x[0] + v[3] + s.
    let mut args =
        [Arg::Slice(&[1.0]), Arg::SliceMut(&mut y), Arg::Vector(&v), Arg::I64(0), Arg::F64(0.5), Arg::Bool(true)];
    assert_eq!(f.call(&mut args).unwrap(), vec![RuntimeValue::F64(5.5)]);
    assert_eq!(y, [1.0, 0.0]);
}

#[test]
fn short_slices_and_wild_indices_are_out_of_bounds_errors() {
    let f = compiled().function("f").unwrap();
    let v = [0.0; 4];
    for (x_len, y_len, k) in [(0, 2, 0), (1, 2, 1), (3, 1, 2), (2, 2, -1), (2, 2, i64::MIN), (2, 2, i64::MAX)] {
        let x = vec![1.0; x_len];
        let mut y = vec![7.0; y_len];
        let mut args =
            [Arg::Slice(&x), Arg::SliceMut(&mut y), Arg::Vector(&v), Arg::I64(k), Arg::F64(0.0), Arg::Bool(false)];
        match f.call(&mut args) {
            Err(CallError::Runtime(Fault::OutOfBounds { site, index, len })) => {
                assert_eq!(index, k);
                // The load of x fails first when k is outside x; otherwise the store into y.
                let (inst, want_len) = if k >= 0 && (k as usize) < x_len { (1, y_len) } else { (0, x_len) };
                assert_eq!((site.func.as_str(), site.block.as_str(), site.inst, len), ("f", "entry", inst, want_len));
            }
            other => panic!("x_len {x_len}, y_len {y_len}, k {k}: expected OutOfBounds, got {other:?}"),
        }
        assert!(y.iter().all(|&e| e == 7.0), "a failed store must not write");
    }
}

#[test]
fn division_by_zero_is_an_error_and_min_over_minus_one_wraps() {
    let div = compiled().function("div").unwrap().typed::<(i64, i64), i64>().unwrap();
    assert_eq!(div.call((i64::MIN, -1)).unwrap(), i64::MIN);
    assert_eq!(div.call((-7, 2)).unwrap(), -3);
    let err = div.call((1, 0)).unwrap_err();
    assert_eq!(err.to_string(), "integer division by zero at @div, block entry, inst 0");
}

#[test]
fn unknown_functions_and_wrong_typed_signatures_are_jit_errors() {
    let m = compiled();
    let err = m.function("nope").unwrap_err();
    assert!(matches!(&err, JitError::UnknownFunction { name, .. } if name == "nope"));
    assert!(err.to_string().contains("@f, @div"), "{err}");
    let err = m.function("div").unwrap().typed::<(f64, f64), f64>().unwrap_err();
    assert_eq!(
        err.to_string(),
        "@div has signature (i64, i64) -> i64, but the typed handle asked for (f64, f64) -> f64"
    );
    let err = m.function("div").unwrap().call_into(&mut [Arg::I64(1), Arg::I64(1)], &mut []).unwrap_err();
    assert!(matches!(err, CallError::ResultCount { expected: 1, got: 0, .. }));
}

#[test]
fn an_undeclared_or_unregistered_extern_fails_compilation_by_name() {
    let text =
        "extern @bessel_j0(f64) -> f64\n\nfunc @g(x: f64) -> f64 {\nentry:\n    y = call @bessel_j0(x)\n    ret y\n}\n";
    let err = compile(&parse_module(text).unwrap(), &ExternRegistry::new(), &JitOptions::new()).unwrap_err();
    assert!(matches!(&err, JitError::Extern(ExternError::NotRegistered { name, .. }) if name == "bessel_j0"));
    assert!(err.to_string().contains("@bessel_j0"), "{err}");
}

fn single_block(insts: Vec<InstData>, term: Option<Terminator>, f: &mut Function) {
    f.blocks.push(BlockData { name: "entry".into(), params: vec![], insts, term });
}

#[test]
fn unverified_modules_are_rejected_with_the_verifier_error() {
    // fadd on i64 operands.
    let mut f = Function::new("bad", vec![Type::I64]);
    let a = f.add_param(Type::I64, Some("a"));
    let r = f.new_value(Type::I64);
    single_block(
        vec![InstData {
            op: Opcode::FAdd,
            args: smallvec::smallvec![a, a],
            imm: Imm::None,
            results: smallvec::smallvec![r],
        }],
        Some(Terminator::Return(vec![r])),
        &mut f,
    );
    let module = Module { externs: vec![], tables: vec![], functions: vec![f] };
    let err = compile(&module, &ExternRegistry::new(), &JitOptions::new()).unwrap_err();
    assert!(matches!(err, JitError::Verify(_)), "{err}");
    assert!(err.to_string().contains("@bad"), "{err}");

    // A block without a terminator, and a function without blocks.
    let mut g = Function::new("open", vec![]);
    single_block(vec![], None, &mut g);
    let empty = Function::new("empty", vec![]);
    for func in [g, empty] {
        let name = func.name.clone();
        let module = Module { externs: vec![], tables: vec![], functions: vec![func] };
        let err = compile(&module, &ExternRegistry::new(), &JitOptions::new()).unwrap_err();
        assert!(matches!(err, JitError::Verify(_)), "{name}: {err}");
    }
}

/// An argument frame checks each push against the next parameter and the count at the call;
/// a well-formed frame gives the results of `call`.
#[test]
fn an_argument_frame_refuses_wrong_kinds_and_counts_before_native_code_runs() {
    let f = compiled().function("f").unwrap();
    let (x, mut y, v) = ([1.5, 2.0], [0.0; 2], [1.0, 2.0, 3.0, 4.0]);
    let mut tape = jitdiff_ir::Tape::new();
    let mut results = jitdiff_jit::FrameResults::new();

    let mut frame = f.frame().unwrap();
    let err = frame.push(Arg::F64(1.0)).unwrap_err();
    assert!(matches!(err, CallError::ArgType { index: 0, expected: Type::Slice, got: "Arg::F64", .. }), "{err}");
    frame.push(Arg::Slice(&x)).unwrap();
    let err = frame.push(Arg::Slice(&x)).unwrap_err();
    assert!(matches!(err, CallError::ArgType { index: 1, expected: Type::SliceMut, .. }), "{err}");
    let err = frame.call(&mut tape, &mut results).unwrap_err();
    assert_eq!(err, CallError::ArgCount { function: "f".into(), expected: 6, got: 1 });

    let mut frame = f.frame().unwrap();
    frame.push(Arg::Slice(&x)).unwrap();
    frame.push(Arg::SliceMut(&mut y)).unwrap();
    assert!(matches!(frame.push(Arg::Vector(&v[..2])).unwrap_err(), CallError::VectorLength { index: 2, .. }));
    for arg in [Arg::Vector(&v), Arg::I64(1), Arg::F64(0.5), Arg::Bool(true)] {
        frame.push(arg).unwrap();
    }
    let err = frame.push(Arg::F64(0.0)).unwrap_err();
    assert_eq!(err, CallError::ArgCount { function: "f".into(), expected: 6, got: 7 });
    frame.call(&mut tape, &mut results).unwrap();
    assert_eq!(results.f64(f.result_slot(0)), 2.0 + 4.0 + 0.5);
    assert_eq!(y, [0.0, 2.0]);

    // A fault in native code is the same error as through `call`.
    let mut frame = f.frame().unwrap();
    for arg in [Arg::Slice(&x), Arg::SliceMut(&mut y), Arg::Vector(&v), Arg::I64(5), Arg::F64(0.5), Arg::Bool(true)] {
        frame.push(arg).unwrap();
    }
    let err = frame.call(&mut tape, &mut results).unwrap_err();
    assert!(matches!(err, CallError::Runtime(Fault::OutOfBounds { index: 5, len: 2, .. })), "{err}");

    // A signature of more slots than a frame holds has none.
    let wide = (0..9).map(|k| format!("s{k}: slice")).collect::<Vec<_>>().join(", ");
    let m = parse_module(&format!("func @wide({wide}) {{\nentry:\n    ret\n}}\n")).unwrap();
    let compiled = compile(&m, &ExternRegistry::new(), &JitOptions::new()).unwrap();
    assert!(compiled.function("wide").unwrap().frame().is_none());
}
