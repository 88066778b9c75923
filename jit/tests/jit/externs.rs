//! Extern calls from native code: `extern "C"` functions called directly, closures through the
//! trampoline — results, errors, slice lending and signature checks agree with the interpreter.

use jitdiff_ir::{ArgValue, ExternArg, ExternError, ExternRegistry, Interpreter, RuntimeValue, Type, parse_module};
use jitdiff_jit::{Agreement, Arg, CallError, Fault, JitError, JitOptions, compile, differential_call};

extern "C" fn scale(x: f64) -> f64 {
    1.5 * x + 0.25
}
extern "C" fn mix(a: f64, b: f64) -> f64 {
    a * 0.5 + b * b * 0.25
}
extern "C" fn fma3(a: f64, b: f64, c: f64) -> f64 {
    a * b + c
}
extern "C" fn poly4(a: f64, b: f64, c: f64, d: f64) -> f64 {
    ((a * 2.0 + b) * 3.0 + c) * 5.0 + d
}

const MODULE: &str = "extern @scale(f64) -> f64
extern @mix(f64, f64) -> f64
extern @fma3(f64, f64, f64) -> f64
extern @poly4(f64, f64, f64, f64) -> f64
extern @sum_into(slice, mslice, f64) -> f64, i64
extern @fails(f64) -> f64
extern @wrong_count(f64) -> f64
extern @wrong_kind(f64) -> f64
extern @pair() -> f64x2, bool
extern @two_mut(mslice, mslice) -> f64

func @direct(x: f64, y: f64) -> f64 {
entry:
    a = call @scale(x)
    b = call @mix(a, y)
    c = call @fma3(a, b, x)
    d = call @poly4(a, b, c, y)
    ret d
}

func @slices(x: slice, y: mslice, k: f64) -> f64, i64 {
entry:
    s, n = call @sum_into(x, y, k)
    ret s, n
}

func @aliased(y: mslice, k: f64) -> f64, i64 {
entry:
    s, n = call @sum_into(y, y, k)
    ret s, n
}

func @twice_mut(y: mslice) -> f64 {
entry:
    s = call @two_mut(y, y)
    ret s
}

func @failing(x: f64) -> f64 {
entry:
    a = call @scale(x)
    b = call @fails(a)
    ret b
}

func @bad_count(x: f64) -> f64 {
entry:
    y = call @wrong_count(x)
    ret y
}

func @bad_kind(x: f64) -> f64 {
entry:
    y = call @wrong_kind(x)
    ret y
}

func @vector_result() -> f64x2, bool {
entry:
    v, b = call @pair()
    ret v, b
}
";

fn registry() -> ExternRegistry {
    let mut r = ExternRegistry::new();
    r.register_f1("scale", scale).register_f2("mix", mix).register_f3("fma3", fma3).register_f4("poly4", poly4);
    // Adds k to every y[i] (after summing x), returns sum(x) and len(y).
    r.register_closure("sum_into", vec![Type::Slice, Type::SliceMut, Type::F64], vec![Type::F64, Type::I64], |args| {
        let k = args[2].as_f64().ok_or("k")?;
        let total: f64 = args[0].as_slice().ok_or("x")?.iter().sum();
        let y = args[1].as_slice_mut().ok_or("y")?;
        y.iter_mut().for_each(|v| *v += k);
        Ok(vec![RuntimeValue::F64(total), RuntimeValue::I64(y.len() as i64)])
    });
    r.register_closure("fails", vec![Type::F64], vec![Type::F64], |args: &mut [ExternArg<'_>]| {
        Err(format!("refusing {}", args[0].as_f64().unwrap_or(0.0)))
    });
    r.register_closure("wrong_count", vec![Type::F64], vec![Type::F64], |_| Ok(vec![]));
    r.register_closure("wrong_kind", vec![Type::F64], vec![Type::F64], |_| Ok(vec![RuntimeValue::I64(3)]));
    r.register_closure("two_mut", vec![Type::SliceMut, Type::SliceMut], vec![Type::F64], |args| {
        Ok(vec![RuntimeValue::F64(args[0].as_slice().ok_or("a")?.len() as f64)])
    });
    r.register_closure("pair", vec![], vec![Type::F64x(2), Type::Bool], |_| {
        Ok(vec![RuntimeValue::Vector(vec![0.5, -1.0]), RuntimeValue::Bool(true)])
    });
    r
}

fn agree(func: &str, args: Vec<ArgValue>) -> Agreement {
    let module = parse_module(MODULE).unwrap();
    let externs = registry();
    let compiled = compile(&module, &externs, &JitOptions::new()).unwrap();
    let interp = Interpreter::new(&module).with_externs(&externs);
    differential_call(&compiled, &interp, func, &args).unwrap_or_else(|d| panic!("{d}"))
}

#[test]
fn direct_float_externs_match_the_interpreter() {
    for (x, y) in [(1.0, 2.0), (-0.5, 3.25), (f64::NAN, 1.0), (1e300, -1e300)] {
        assert!(matches!(agree("direct", vec![ArgValue::F64(x), ArgValue::F64(y)]), Agreement::Returned(_)));
    }
}

#[test]
fn closures_get_slices_and_write_mslices_in_place() {
    let got = agree(
        "slices",
        vec![ArgValue::Slice(vec![1.0, 2.5]), ArgValue::SliceMut(vec![10.0, 20.0, 30.0]), ArgValue::F64(0.5)],
    );
    assert_eq!(got, Agreement::Returned(vec![RuntimeValue::F64(3.5), RuntimeValue::I64(3)]));
    // The same check through the handle, looking at the caller's memory.
    let module = parse_module(MODULE).unwrap();
    let compiled = compile(&module, &registry(), &JitOptions::new()).unwrap();
    let mut y = [1.0, 2.0];
    let out =
        compiled.function("slices").unwrap().call(&mut [Arg::Slice(&[4.0]), Arg::SliceMut(&mut y), Arg::F64(1.0)]);
    assert_eq!(out.unwrap(), vec![RuntimeValue::F64(4.0), RuntimeValue::I64(2)]);
    assert_eq!(y, [2.0, 3.0]);
}

#[test]
fn an_mslice_also_passed_read_only_is_snapshotted_like_in_the_interpreter() {
    let got = agree("aliased", vec![ArgValue::SliceMut(vec![1.0, 2.0, 4.0]), ArgValue::F64(1.0)]);
    // The read-only view is taken before the closure adds 1 to every element.
    assert_eq!(got, Agreement::Returned(vec![RuntimeValue::F64(7.0), RuntimeValue::I64(3)]));
}

#[test]
fn closure_failures_are_extern_failed_errors_with_the_interpreters_message_and_site() {
    assert_eq!(agree("failing", vec![ArgValue::F64(2.0)]), Agreement::Failed("ExternFailed"));
    assert_eq!(agree("bad_count", vec![ArgValue::F64(2.0)]), Agreement::Failed("ExternFailed"));
    assert_eq!(agree("bad_kind", vec![ArgValue::F64(2.0)]), Agreement::Failed("ExternFailed"));
    // Two `&mut` to one memory would be undefined behaviour in the closure: refused.
    assert_eq!(agree("twice_mut", vec![ArgValue::SliceMut(vec![1.0])]), Agreement::Failed("ExternFailed"));
    assert_eq!(agree("twice_mut", vec![ArgValue::SliceMut(vec![])]), Agreement::Failed("ExternFailed"));
    let module = parse_module(MODULE).unwrap();
    let compiled = compile(&module, &registry(), &JitOptions::new()).unwrap();
    let err = compiled.function("failing").unwrap().call(&mut [Arg::F64(2.0)]).unwrap_err();
    assert_eq!(err.to_string(), "extern @fails failed at @failing, block entry, inst 1: refusing 3.25");
}

#[test]
fn closures_may_return_vectors_and_booleans() {
    let got = agree("vector_result", vec![]);
    assert_eq!(got, Agreement::Returned(vec![RuntimeValue::Vector(vec![0.5, -1.0]), RuntimeValue::Bool(true)]));
}

#[test]
fn a_panicking_closure_is_an_error_not_an_abort() {
    let module = parse_module(
        "extern @boom(f64) -> f64\n\nfunc @f(x: f64) -> f64 {\nentry:\n    y = call @boom(x)\n    ret y\n}\n",
    )
    .unwrap();
    let mut externs = ExternRegistry::new();
    externs.register_closure("boom", vec![Type::F64], vec![Type::F64], |_| panic!("kaboom"));
    let f = compile(&module, &externs, &JitOptions::new()).unwrap().function("f").unwrap();
    match f.call(&mut [Arg::F64(1.0)]) {
        Err(CallError::Runtime(Fault::ExternFailed { name, message, site })) => {
            assert_eq!(name, "boom");
            assert!(message.contains("kaboom"), "{message}");
            assert_eq!((site.func.as_str(), site.block.as_str(), site.inst), ("f", "entry", 0));
        }
        other => panic!("expected ExternFailed, got {other:?}"),
    }
}

#[test]
fn missing_or_mismatched_externs_are_compile_errors_naming_the_symbol() {
    let module = parse_module(MODULE).unwrap();
    let mut partial = registry();
    partial.register_f1("poly4", scale);
    match compile(&module, &partial, &JitOptions::new()) {
        Err(JitError::Extern(ExternError::SignatureMismatch { name, .. })) => assert_eq!(name, "poly4"),
        other => panic!("expected a signature mismatch, got {other:?}"),
    }
    let err = compile(&module, &ExternRegistry::new(), &JitOptions::new()).unwrap_err();
    assert!(matches!(&err, JitError::Extern(ExternError::NotRegistered { name, .. }) if name == "scale"), "{err}");
    assert!(err.to_string().contains("@scale"), "{err}");
}
