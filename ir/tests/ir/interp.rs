//! Reference interpreter: semantics, slices, calls, vectors, externs and every error kind.

use jitdiff_ir::{
    ArgValue, ExternArg, ExternError, ExternRegistry, Fault, Function, Imm, InstData, InterpError, Interpreter,
    MAX_CALL_DEPTH, MathFn, Module, OP_TABLE, Opcode, RuntimeValue, Shape, Site, Terminator, Type, interpret, math,
    parse_module, verify_module,
};

/// Parse and verify IR text.
fn module(src: &str) -> Module {
    let m = parse_module(src).unwrap_or_else(|e| panic!("parse error {e:?} in\n{src}"));
    verify_module(&m).unwrap_or_else(|e| panic!("verify error {e:?} in\n{src}"));
    m
}

fn f64s(values: Vec<RuntimeValue>) -> Vec<f64> {
    values.iter().map(|v| v.as_f64().expect("f64 result")).collect()
}

fn site(func: &str, block: &str, inst: usize) -> Site {
    Site { func: func.into(), block: block.into(), inst }
}

#[test]
fn float_int_and_bool_arithmetic() {
    let m = module(
        "func @f(x: f64, y: f64, i: i64, j: i64) -> f64, i64, bool, i64 {
entry:
    a = fmul x, y
    b = fsub a, x
    c = fdiv b, y
    d = fneg c
    k = imul i, j
    l = isub k, i
    big = iconst 9223372036854775807
    wrap = iadd big, j
    p = fcmp lt x, y
    q = icmp ge i, j
    r = and p, q
    s = or r, p
    t = not s
    fi = itof i
    e = fadd d, fi
    ret e, l, t, wrap
}
",
    );
    for (x, y, i, j) in [(1.5, -2.25, 3, 4), (0.1, 7.0, -5, 2), (-3.0, -3.0, 0, -1)] {
        let out = interpret(&m, "f", &mut [ArgValue::F64(x), ArgValue::F64(y), ArgValue::I64(i), ArgValue::I64(j)]);
        let d = -(((x * y) - x) / y);
        let (p, q) = (x < y, i >= j);
        let r = p && q;
        let s = r || p;
        let expected = vec![
            RuntimeValue::F64(d + i as f64),
            RuntimeValue::I64(i * j - i),
            RuntimeValue::Bool(!s),
            RuntimeValue::I64(i64::MAX.wrapping_add(j)),
        ];
        assert_eq!(out.unwrap(), expected, "inputs {x} {y} {i} {j}");
    }
}

#[test]
fn conversions_follow_rust_as() {
    let m = module("func @f(x: f64, i: i64) -> i64, f64 {\nentry:\n    a = ftoi x\n    b = itof i\n    ret a, b\n}\n");
    for (x, i) in [(2.9, -7), (-2.9, i64::MAX), (f64::NAN, i64::MIN), (1e300, 1), (f64::NEG_INFINITY, 0)] {
        let out = interpret(&m, "f", &mut [ArgValue::F64(x), ArgValue::I64(i)]).unwrap();
        assert_eq!(out, vec![RuntimeValue::I64(x as i64), RuntimeValue::F64(i as f64)]);
    }
}

#[test]
fn every_math_op_matches_the_math_module_bit_for_bit() {
    let inputs = [0.3, -0.7, 2.5, -0.0, 0.0, 1e-9, 100.0, f64::INFINITY, f64::NAN];
    let mut checked = 0;
    for info in OP_TABLE {
        let (text, mathfn) = match (info.shape, info.math) {
            (Shape::FloatUnary { .. }, MathFn::Unary(f)) => (
                format!("func @f(x: f64, y: f64) -> f64 {{\nentry:\n    r = {} x\n    ret r\n}}\n", info.spelling),
                Some(f),
            ),
            (Shape::FloatBinary { .. }, MathFn::Binary(_)) => (
                format!("func @f(x: f64, y: f64) -> f64 {{\nentry:\n    r = {} x, y\n    ret r\n}}\n", info.spelling),
                None,
            ),
            // fma x, y, x: a * b + c with c = a (two inputs cover the rounding cases too).
            (Shape::FloatTernary, MathFn::Ternary(_)) => (
                format!(
                    "func @f(x: f64, y: f64) -> f64 {{\nentry:\n    r = {} x, y, x\n    ret r\n}}\n",
                    info.spelling
                ),
                None,
            ),
            _ => continue,
        };
        let m = module(&text);
        let interp = Interpreter::new(&m);
        for &x in &inputs {
            for &y in &inputs {
                let got = interp.call("f", &mut [ArgValue::F64(x), ArgValue::F64(y)]).unwrap()[0].as_f64().unwrap();
                let want = match (mathfn, info.math) {
                    (Some(f), _) => f(x),
                    (None, MathFn::Binary(f)) => f(x, y),
                    (None, MathFn::Ternary(f)) => f(x, y, x),
                    _ => unreachable!(),
                };
                assert_eq!(got.to_bits(), want.to_bits(), "{} {x} {y}", info.spelling);
            }
        }
        checked += 1;
    }
    assert_eq!(checked, 27 + 6 + 1, "every library-math op of the table was checked");
    let m = module("func @f(x: f64, n: i64) -> f64 {\nentry:\n    r = powi x, n\n    ret r\n}\n");
    for x in [1.1, -2.0, 0.0, 3.7] {
        for n in [-3, -1, 0, 1, 2, 5, 17] {
            let got = interpret(&m, "f", &mut [ArgValue::F64(x), ArgValue::I64(n)]).unwrap();
            assert_eq!(got, vec![RuntimeValue::F64(math::powi(x, n))]);
        }
    }
    // fadd/fsub/fmul/fdiv/sqrt are IEEE: spot-check against Rust operators.
    let m = module(
        "func @f(x: f64, y: f64) -> f64, f64, f64, f64, f64 {\nentry:\n    a = fadd x, y\n    b = fsub x, y\n    c = fmul x, y\n    d = fdiv x, y\n    e = sqrt x\n    ret a, b, c, d, e\n}\n",
    );
    let out = f64s(interpret(&m, "f", &mut [ArgValue::F64(0.1), ArgValue::F64(0.2)]).unwrap());
    assert_eq!(out, vec![0.1 + 0.2, 0.1 - 0.2, 0.1 * 0.2, 0.1 / 0.2, 0.1f64.sqrt()]);
}

#[test]
fn branches_and_select() {
    let m = module(
        "func @clamp(x: f64, lo: f64, hi: f64) -> f64 {
entry:
    below = fcmp lt x, lo
    br below, low, check
check:
    above = fcmp gt x, hi
    r = select above, hi, x
    jump done(r)
low:
    jump done(lo)
done(v: f64):
    ret v
}
",
    );
    for (x, want) in [(-5.0, -1.0), (0.5, 0.5), (7.0, 2.0), (-1.0, -1.0)] {
        let out = interpret(&m, "clamp", &mut [ArgValue::F64(x), ArgValue::F64(-1.0), ArgValue::F64(2.0)]);
        assert_eq!(f64s(out.unwrap()), vec![want], "clamp({x})");
    }
}

const ROSENBROCK: &str = "func @rosenbrock(x: slice) -> f64 {
entry:
    n = len x
    one = iconst 1
    last = isub n, one
    zero = iconst 0
    acc0 = fconst 0.0
    jump head(zero, acc0)
head(i: i64, acc: f64):
    more = icmp lt i, last
    br more, body, exit(acc)
body:
    xi = load x, i
    inext = iadd i, one
    xn = load x, inext
    sq = fmul xi, xi
    d = fsub xn, sq
    hundred = fconst 100.0
    d2 = fmul d, d
    t1 = fmul hundred, d2
    onef = fconst 1.0
    e = fsub onef, xi
    e2 = fmul e, e
    term = fadd t1, e2
    acc2 = fadd acc, term
    jump head(inext, acc2)
exit(r: f64):
    ret r
}
";

fn rosenbrock_rust(x: &[f64]) -> f64 {
    let mut acc = 0.0;
    for i in 0..x.len().saturating_sub(1) {
        let d = x[i + 1] - x[i] * x[i];
        let e = 1.0 - x[i];
        acc += 100.0 * (d * d) + e * e;
    }
    acc
}

#[test]
fn loops_over_slices_match_rust() {
    let m = module(ROSENBROCK);
    let interp = Interpreter::new(&m);
    for n in [0usize, 1, 2, 10, 10_000] {
        let x: Vec<f64> = (0..n).map(|i| (i as f64 * 0.37).sin()).collect();
        let out = interp.call("rosenbrock", &mut [ArgValue::Slice(x.clone())]).unwrap();
        assert_eq!(out, vec![RuntimeValue::F64(rosenbrock_rust(&x))], "n = {n}");
        // A mutable slice is accepted where a read-only one is expected.
        let out = interp.call("rosenbrock", &mut [ArgValue::SliceMut(x.clone())]).unwrap();
        assert_eq!(out, vec![RuntimeValue::F64(rosenbrock_rust(&x))]);
    }
}

#[test]
fn loop_edges_bind_block_params_in_parallel() {
    // Fibonacci by swapping: jump head(b, s) reads the old b; a sequential copy would be wrong.
    let m = module(
        "func @fib(n: i64) -> i64 {
entry:
    zero = iconst 0
    one = iconst 1
    jump head(zero, zero, one)
head(i: i64, a: i64, b: i64):
    more = icmp lt i, n
    br more, body, exit
body:
    s = iadd a, b
    inext = iadd i, one
    jump head(inext, b, s)
exit:
    ret a
}
",
    );
    let (mut a, mut b) = (0i64, 1i64);
    for n in 0..20 {
        assert_eq!(interpret(&m, "fib", &mut [ArgValue::I64(n)]).unwrap(), vec![RuntimeValue::I64(a)]);
        (a, b) = (b, a + b);
    }
    let swap = module(
        "func @swap(n: i64, x: f64, y: f64) -> f64, f64 {
entry:
    zero = iconst 0
    one = iconst 1
    jump head(zero, x, y)
head(i: i64, p: f64, q: f64):
    more = icmp lt i, n
    inext = iadd i, one
    br more, head(inext, q, p), exit(p, q)
exit(r: f64, s: f64):
    ret r, s
}
",
    );
    for n in 0..5 {
        let out =
            f64s(interpret(&swap, "swap", &mut [ArgValue::I64(n), ArgValue::F64(1.0), ArgValue::F64(2.0)]).unwrap());
        assert_eq!(out, if n % 2 == 0 { vec![1.0, 2.0] } else { vec![2.0, 1.0] }, "n = {n}");
    }
}

#[test]
fn calls_share_slice_memory_and_return_several_values() {
    let m = module(
        "func @scale_into(src: slice, dst: mslice, k: f64) {
entry:
    n = len src
    zero = iconst 0
    jump head(zero)
head(i: i64):
    more = icmp lt i, n
    br more, body, exit
body:
    v = load src, i
    w = fmul v, k
    store dst, i, w
    one = iconst 1
    inext = iadd i, one
    jump head(inext)
exit:
    ret
}

func @divmod(a: i64, b: i64) -> i64, i64 {
entry:
    q = idiv a, b
    r = irem a, b
    ret q, r
}

func @outer(x: slice, y: mslice, k: f64) -> f64, i64, i64 {
entry:
    call @scale_into(x, y, k)
    zero = iconst 0
    first = load y, zero
    seven = iconst 7
    two = iconst 2
    q, r = call @divmod(seven, two)
    ret first, q, r
}

func @in_place(y: mslice) {
entry:
    two = fconst 2.0
    call @scale_into(y, y, two)
    ret
}
",
    );
    let mut args = [ArgValue::Slice(vec![1.0, 2.0, 3.0]), ArgValue::SliceMut(vec![0.0; 3]), ArgValue::F64(1.5)];
    let out = interpret(&m, "outer", &mut args).unwrap();
    assert_eq!(out, vec![RuntimeValue::F64(1.5), RuntimeValue::I64(3), RuntimeValue::I64(1)]);
    assert_eq!(args[1], ArgValue::SliceMut(vec![1.5, 3.0, 4.5]), "callee's stores reach the caller's memory");
    assert_eq!(args[0], ArgValue::Slice(vec![1.0, 2.0, 3.0]));
    // The same memory passed as both slice and mslice: reads see earlier writes.
    let mut args = [ArgValue::SliceMut(vec![1.0, -4.0])];
    interpret(&m, "in_place", &mut args).unwrap();
    assert_eq!(args[0], ArgValue::SliceMut(vec![2.0, -8.0]));
    let q = interpret(&m, "divmod", &mut [ArgValue::I64(-7), ArgValue::I64(2)]).unwrap();
    assert_eq!(q, vec![RuntimeValue::I64(-3), RuntimeValue::I64(-1)]);
    let q = interpret(&m, "divmod", &mut [ArgValue::I64(i64::MIN), ArgValue::I64(-1)]).unwrap();
    assert_eq!(q, vec![RuntimeValue::I64(i64::MIN), RuntimeValue::I64(0)]);
}

#[test]
fn vectors_are_lane_wise() {
    let m = module(
        "func @v(x: f64, s: slice, out: mslice, c: bool, p: f64x2) -> f64x4, f64, f64x2 {
entry:
    a = splat.f64x4 x
    one = iconst 1
    b = vload.f64x4 s, one
    sum = fadd a, b
    prod = fmul sum, b
    diff = fsub prod, a
    quot = fdiv diff, b
    neg = fneg quot
    y = fconst 9.5
    ins = insert neg, 2, y
    e = extract ins, 3
    zero = iconst 0
    vstore out, zero, ins
    q = splat.f64x2 e
    sel = select c, p, q
    ret ins, e, sel
}
",
    );
    let s: Vec<f64> = (0..8).map(|i| i as f64 + 0.5).collect();
    for c in [true, false] {
        let mut args = [
            ArgValue::F64(2.0),
            ArgValue::Slice(s.clone()),
            ArgValue::SliceMut(vec![0.0; 5]),
            ArgValue::Bool(c),
            ArgValue::Vector(vec![-1.0, -2.0]),
        ];
        let out = interpret(&m, "v", &mut args).unwrap();
        let mut lanes: Vec<f64> = s[4..8].iter().map(|&b| -((((2.0 + b) * b) - 2.0) / b)).collect();
        lanes[2] = 9.5;
        let sel = if c { vec![-1.0, -2.0] } else { vec![lanes[3]; 2] };
        assert_eq!(
            out,
            vec![RuntimeValue::Vector(lanes.clone()), RuntimeValue::F64(lanes[3]), RuntimeValue::Vector(sel)]
        );
        let mut stored = lanes.clone();
        stored.push(0.0);
        assert_eq!(args[2], ArgValue::SliceMut(stored));
    }
    // vload of vector index 2 of width 4 needs 12 elements.
    let mut args = [
        ArgValue::F64(2.0),
        ArgValue::Slice(vec![0.0; 7]),
        ArgValue::SliceMut(vec![0.0; 4]),
        ArgValue::Bool(true),
        ArgValue::Vector(vec![0.0, 0.0]),
    ];
    let err = interpret(&m, "v", &mut args).unwrap_err();
    assert_eq!(err, InterpError::Fault(Fault::OutOfBounds { site: site("v", "entry", 2), index: 1, len: 7 }));
}

extern "C" fn weighted(a: f64, b: f64) -> f64 {
    2.0 * a + b
}

const EXTERN_MODULE: &str = "extern @weighted(f64, f64) -> f64
extern @dot(slice, slice) -> f64
extern @fill(mslice, f64)

func @use_externs(x: slice, y: mslice, a: f64) -> f64 {
entry:
    w = call @weighted(a, a)
    call @fill(y, w)
    d = call @dot(x, y)
    ret d
}
";

fn extern_registry() -> ExternRegistry {
    let mut reg = ExternRegistry::new();
    reg.register_f2("weighted", weighted)
        .register_closure("dot", vec![Type::Slice, Type::Slice], vec![Type::F64], |args: &mut [ExternArg<'_>]| {
            let (a, b) = (args[0].as_slice().unwrap(), args[1].as_slice().unwrap());
            if a.len() != b.len() {
                return Err(format!("lengths differ: {} and {}", a.len(), b.len()));
            }
            Ok(vec![RuntimeValue::F64(a.iter().zip(b).map(|(x, y)| x * y).sum())])
        })
        .register_closure("fill", vec![Type::SliceMut, Type::F64], vec![], |args: &mut [ExternArg<'_>]| {
            let v = args[1].as_f64().unwrap();
            args[0].as_slice_mut().unwrap().fill(v);
            Ok(vec![])
        });
    reg
}

#[test]
fn externs_plain_functions_and_closures_with_slices() {
    let m = module(EXTERN_MODULE);
    let reg = extern_registry();
    reg.check_module(&m).unwrap();
    let interp = Interpreter::new(&m).with_externs(&reg);
    let mut args = [ArgValue::Slice(vec![1.0, 2.0, 3.0]), ArgValue::SliceMut(vec![0.0; 3]), ArgValue::F64(1.5)];
    let out = interp.call("use_externs", &mut args).unwrap();
    assert_eq!(out, vec![RuntimeValue::F64(4.5 * 6.0)]);
    assert_eq!(args[1], ArgValue::SliceMut(vec![4.5; 3]));
    // The closure's own error becomes ExternFailed at the call site.
    let mut args = [ArgValue::Slice(vec![1.0]), ArgValue::SliceMut(vec![0.0; 3]), ArgValue::F64(1.5)];
    let err = interp.call("use_externs", &mut args).unwrap_err();
    assert_eq!(
        err,
        InterpError::Fault(Fault::ExternFailed {
            name: "dot".into(),
            message: "lengths differ: 1 and 3".into(),
            site: site("use_externs", "entry", 2)
        })
    );
}

#[test]
fn extern_registration_problems_are_reported() {
    let m = module(EXTERN_MODULE);
    let err = Interpreter::new(&m)
        .call("use_externs", &mut [ArgValue::Slice(vec![]), ArgValue::SliceMut(vec![]), ArgValue::F64(0.0)])
        .unwrap_err();
    assert_eq!(
        err,
        InterpError::ExternNotRegistered { name: "weighted".into(), site: site("use_externs", "entry", 0) }
    );
    let mut reg = extern_registry();
    reg.register_f1("weighted", math::sin);
    match reg.check_module(&m) {
        Err(ExternError::SignatureMismatch { name, declared, registered }) => {
            assert_eq!(
                (name.as_str(), declared.as_str(), registered.as_str()),
                ("weighted", "(f64, f64) -> f64", "(f64) -> f64")
            );
        }
        other => panic!("expected a signature mismatch, got {other:?}"),
    }
    let err = Interpreter::new(&m)
        .with_externs(&reg)
        .call("use_externs", &mut [ArgValue::Slice(vec![]), ArgValue::SliceMut(vec![]), ArgValue::F64(0.0)])
        .unwrap_err();
    assert_eq!(err.kind_name(), "ExternSignature");
    assert_eq!(err.site(), Some(&site("use_externs", "entry", 0)));
    let empty = ExternRegistry::new();
    assert!(matches!(empty.check_module(&m), Err(ExternError::NotRegistered { name, .. }) if name == "weighted"));
    assert!(format!("{reg:?}").contains("weighted"));
}

#[test]
fn out_of_bounds_accesses_name_index_length_and_site() {
    let m = module(
        "func @get(x: slice, i: i64) -> f64 {
entry:
    jump body
body:
    v = fconst 1.0
    r = load x, i
    ret r
}

func @put(x: mslice, i: i64) {
entry:
    v = fconst 1.0
    store x, i, v
    ret
}
",
    );
    for i in [-1i64, 3, i64::MAX, i64::MIN] {
        let err = interpret(&m, "get", &mut [ArgValue::Slice(vec![0.0; 3]), ArgValue::I64(i)]).unwrap_err();
        assert_eq!(err, InterpError::Fault(Fault::OutOfBounds { site: site("get", "body", 1), index: i, len: 3 }));
        let mut args = [ArgValue::SliceMut(vec![0.0; 3]), ArgValue::I64(i)];
        let err = interpret(&m, "put", &mut args).unwrap_err();
        assert_eq!(err, InterpError::Fault(Fault::OutOfBounds { site: site("put", "entry", 1), index: i, len: 3 }));
        assert_eq!(args[0], ArgValue::SliceMut(vec![0.0; 3]));
    }
    assert!(err_text(&m, "get").contains("@get, block body, inst 1"));
}

fn err_text(m: &Module, f: &str) -> String {
    interpret(m, f, &mut [ArgValue::Slice(vec![]), ArgValue::I64(0)]).unwrap_err().to_string()
}

#[test]
fn division_by_zero_is_an_error_and_min_by_minus_one_wraps() {
    let m = module(
        "func @d(a: i64, b: i64) -> i64 {\nentry:\n    q = idiv a, b\n    r = irem a, b\n    s = iadd q, r\n    ret s\n}\n",
    );
    let err = interpret(&m, "d", &mut [ArgValue::I64(5), ArgValue::I64(0)]).unwrap_err();
    assert_eq!(err, InterpError::Fault(Fault::DivisionByZero { site: site("d", "entry", 0) }));
    assert_eq!(err.kind_name(), "DivisionByZero");
    let out = interpret(&m, "d", &mut [ArgValue::I64(i64::MIN), ArgValue::I64(-1)]).unwrap();
    assert_eq!(out, vec![RuntimeValue::I64(i64::MIN)]);
}

const RECURSIVE: &str = "func @depth(n: i64) -> i64 {
entry:
    zero = iconst 0
    done = icmp le n, zero
    br done, base, step
base:
    ret zero
step:
    one = iconst 1
    m = isub n, one
    r = call @depth(m)
    s = iadd r, one
    ret s
}
";

#[test]
fn call_depth_limit_is_exact_and_safe_on_a_small_stack() {
    let m = module(RECURSIVE);
    // Runs on a 2 MiB thread: frames must live on the heap.
    let result = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || {
            let interp = Interpreter::new(&m);
            let limit = MAX_CALL_DEPTH as i64;
            // depth(n) opens n + 1 frames.
            let ok = interp.call("depth", &mut [ArgValue::I64(limit - 1)]);
            let too_deep = interp.call("depth", &mut [ArgValue::I64(limit)]);
            let far_too_deep = interp.call("depth", &mut [ArgValue::I64(1 << 40)]);
            (ok, too_deep, far_too_deep)
        })
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(result.0.unwrap(), vec![RuntimeValue::I64(MAX_CALL_DEPTH as i64 - 1)]);
    assert_eq!(result.1.unwrap_err(), InterpError::Fault(Fault::CallDepthExceeded { site: site("depth", "step", 2) }));
    assert_eq!(result.2.unwrap_err().kind_name(), "CallDepthExceeded");
}

#[test]
fn step_limit_stops_infinite_loops() {
    let m = module("func @spin() {\nentry:\n    jump l\nl:\n    x = fconst 1.0\n    jump l\n}\n");
    let err = Interpreter::new(&m).with_step_limit(1000).call("spin", &mut []).unwrap_err();
    assert_eq!(err, InterpError::StepLimitExceeded { limit: 1000 });
    // A terminating function under the limit is unaffected; over it, it is stopped.
    let r = module(ROSENBROCK);
    let x = vec![0.5; 10];
    assert!(Interpreter::new(&r).with_step_limit(1000).call("rosenbrock", &mut [ArgValue::Slice(x.clone())]).is_ok());
    let err = Interpreter::new(&r).with_step_limit(50).call("rosenbrock", &mut [ArgValue::Slice(x)]).unwrap_err();
    assert_eq!(err.kind_name(), "StepLimitExceeded");
}

#[test]
fn bad_arguments_are_rejected_before_running() {
    let m = module("func @f(x: f64, s: mslice, v: f64x2) {\nentry:\n    ret\n}\n");
    let err = interpret(&m, "f", &mut [ArgValue::F64(1.0)]).unwrap_err();
    assert_eq!(err, InterpError::ArgCount { func: "f".into(), expected: 3, found: 1 });
    let err = interpret(&m, "f", &mut [ArgValue::I64(1), ArgValue::SliceMut(vec![]), ArgValue::Vector(vec![0.0; 2])])
        .unwrap_err();
    assert_eq!(err, InterpError::ArgType { func: "f".into(), index: 0, expected: Type::F64, found: "i64".into() });
    let err = interpret(&m, "f", &mut [ArgValue::F64(1.0), ArgValue::Slice(vec![]), ArgValue::Vector(vec![0.0; 2])])
        .unwrap_err();
    assert_eq!(
        err,
        InterpError::ArgType { func: "f".into(), index: 1, expected: Type::SliceMut, found: "slice".into() }
    );
    let err = interpret(&m, "f", &mut [ArgValue::F64(1.0), ArgValue::SliceMut(vec![]), ArgValue::Vector(vec![0.0; 3])])
        .unwrap_err();
    assert_eq!(err.kind_name(), "ArgType");
    assert_eq!(interpret(&m, "g", &mut []).unwrap_err(), InterpError::UnknownFunction("g".into()));
    assert!(
        interpret(&m, "f", &mut [ArgValue::F64(1.0), ArgValue::SliceMut(vec![]), ArgValue::Vector(vec![0.0; 2])])
            .is_ok()
    );
}

/// Unverified IR is reported, never a panic.
#[test]
fn malformed_functions_are_errors_not_panics() {
    let inst = |op, args: Vec<u32>, imm, results: Vec<u32>| InstData {
        op,
        args: args.into_iter().map(|v| jitdiff_ir::Value::from_index(v as usize)).collect(),
        imm,
        results: results.into_iter().map(|v| jitdiff_ir::Value::from_index(v as usize)).collect(),
    };
    let mut cases: Vec<Function> = vec![];
    // No terminator.
    let mut f = Function::new("f", vec![]);
    f.add_block("entry");
    cases.push(f);
    // Operand of the wrong type.
    let mut f = Function::new("f", vec![Type::F64]);
    let x = f.add_param(Type::I64, None);
    let e = f.add_block("entry");
    let y = f.new_value(Type::F64);
    f.block_mut(e).insts.push(inst(Opcode::Sin, vec![x.index() as u32], Imm::None, vec![y.index() as u32]));
    f.block_mut(e).term = Some(Terminator::Return(vec![y]));
    cases.push(f);
    // A value that does not exist, and a return of the wrong arity.
    let mut f = Function::new("f", vec![Type::F64]);
    let e = f.add_block("entry");
    f.block_mut(e).insts.push(inst(Opcode::FNeg, vec![99], Imm::None, vec![0]));
    f.block_mut(e).term = Some(Terminator::Return(vec![]));
    cases.push(f);
    // No blocks at all.
    cases.push(Function::new("f", vec![]));
    // A call to a function that does not exist.
    let mut f = Function::new("f", vec![]);
    let e = f.add_block("entry");
    f.block_mut(e).insts.push(inst(
        Opcode::Call,
        vec![],
        Imm::Callee(jitdiff_ir::Callee::Func(jitdiff_ir::FuncId::from_index(7))),
        vec![],
    ));
    f.block_mut(e).term = Some(Terminator::Return(vec![]));
    cases.push(f);
    for (k, f) in cases.into_iter().enumerate() {
        let nparams = f.params.len();
        let m = Module { externs: vec![], tables: vec![], functions: vec![f] };
        let mut args: Vec<ArgValue> = (0..nparams).map(|_| ArgValue::I64(1)).collect();
        let err = interpret(&m, "f", &mut args).unwrap_err();
        assert_eq!(err.kind_name(), "Malformed", "case {k}: {err}");
        assert_eq!(err.site().map(|s| s.func.as_str()), Some("f"));
    }
}

#[test]
fn runtime_values_compare_floats_by_bits() {
    assert_eq!(RuntimeValue::F64(f64::NAN), RuntimeValue::F64(f64::NAN));
    assert_ne!(RuntimeValue::F64(0.0), RuntimeValue::F64(-0.0));
    assert_ne!(RuntimeValue::F64(1.0), RuntimeValue::I64(1));
    assert_eq!(RuntimeValue::Vector(vec![f64::NAN, 1.0]), RuntimeValue::Vector(vec![f64::NAN, 1.0]));
    assert_eq!(RuntimeValue::Vector(vec![1.0; 4]).ty(), Type::vector(4));
    assert_eq!(RuntimeValue::I64(3).as_i64(), Some(3));
    assert_eq!(RuntimeValue::Bool(true).as_f64(), None);
}

#[test]
fn eval_pure_and_the_interpreter_agree() {
    // Constant folding relies on this: the interpreter's result for an op equals eval_pure's.
    let cases: [(Opcode, &str, RuntimeValue, RuntimeValue); 4] = [
        (Opcode::Atan2, "f64", RuntimeValue::F64(-0.5), RuntimeValue::F64(-2.0)),
        (Opcode::Min, "f64", RuntimeValue::F64(f64::NAN), RuntimeValue::F64(1.0)),
        (Opcode::IRem, "i64", RuntimeValue::I64(-17), RuntimeValue::I64(5)),
        (Opcode::IMul, "i64", RuntimeValue::I64(i64::MAX), RuntimeValue::I64(3)),
    ];
    for (op, ty, a, b) in cases {
        let src = format!("func @f(a: {ty}, b: {ty}) -> {ty} {{\nentry:\n    r = {op} a, b\n    ret r\n}}\n");
        let m = module(&src);
        let to_arg = |v: &RuntimeValue| match v {
            RuntimeValue::F64(x) => ArgValue::F64(*x),
            RuntimeValue::I64(x) => ArgValue::I64(*x),
            _ => unreachable!(),
        };
        let got = interpret(&m, "f", &mut [to_arg(&a), to_arg(&b)]).unwrap();
        assert_eq!(Some(got[0].clone()), jitdiff_ir::interp::eval_pure(op, &Imm::None, &[a, b]), "{op}");
    }
}

/// Random well-formed programs (run with `--features arbitrary`): the interpreter is
/// deterministic and a printed-and-parsed copy of the module computes the same thing.
#[cfg(feature = "arbitrary")]
mod random_programs {
    use super::*;
    use jitdiff_ir::arbitrary::{GenConfig, arb_case, standard_extern_registry};
    use jitdiff_ir::print_module;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]
        #[test]
        fn interpretation_is_deterministic_and_survives_a_text_round_trip((m, entry, args) in arb_case(GenConfig::full())) {
            let registry = standard_extern_registry();
            let reparsed = parse_module(&print_module(&m)).unwrap();
            let run = |m: &Module| {
                let mut args: Vec<ArgValue> = args.iter().map(|a| a.to_arg_value()).collect();
                let r = Interpreter::new(m).with_externs(&registry).with_step_limit(1_000_000).call(&entry, &mut args);
                (r, args)
            };
            let (first, mem1) = run(&m);
            let (second, mem2) = run(&reparsed);
            prop_assert_eq!(&first, &second);
            let bits = |args: &[ArgValue]| -> Vec<Vec<u64>> {
                args.iter().filter_map(|a| a.as_slice()).map(|s| s.iter().map(|x| x.to_bits()).collect()).collect()
            };
            prop_assert_eq!(bits(&mem1), bits(&mem2));
            if let Err(e) = &first {
                prop_assert!(e.kind_name() != "Malformed", "verified module reported malformed: {}", e);
            }
        }
    }
}
