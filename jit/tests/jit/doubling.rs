//! The JIT lowers `fmul C, (fadd a, a)` as `fmul 2C, a` when that is exact (`1 <= |C|`, `2C`
//! finite). Both forms must give the interpreter's bits at every edge value — overflow of
//! `a + a`, infinities, zeros, subnormals, NaN — for constants that qualify and constants that
//! do not (which keep the plain lowering).

use jitdiff_ir::{ArgValue, ExternRegistry, Interpreter, RuntimeValue, parse_module};
use jitdiff_jit::{Agreement, JitOptions, compile, differential_call};

const CONSTANTS: [f64; 12] = [
    100.0,
    -3.0,
    1.0,
    -1.0,
    1.5,
    8.98846567431158e307, // 2^1023: 2C overflows, not rewritten
    4.49423283715579e307, // 2^1022: 2C = 2^1023, rewritten
    0.25,                 // |C| < 1: not rewritten
    0.0,
    -0.0,
    5e-324,
    f64::INFINITY,
];

const OPERANDS: [f64; 16] = [
    0.0,
    -0.0,
    1.0,
    -2.5,
    0.1,
    5e-324,
    -2.2250738585072014e-308,
    8.98846567431158e307, // 2^1023: a + a overflows
    -8.98846567431158e307,
    1.7976931348623157e308, // MAX
    4.49423283715579e307,   // 2^1022
    1e300,
    -1e-300,
    f64::INFINITY,
    f64::NEG_INFINITY,
    f64::NAN,
];

#[test]
fn constant_times_doubled_value_matches_the_interpreter_at_edge_values() {
    for c in CONSTANTS {
        // Both operand orders; `d` is also returned, so its `fadd` has another use.
        let text = format!(
            "func @p(a: f64) -> f64, f64, f64 {{
entry:
    c = fconst {c:?}
    d = fadd a, a
    r1 = fmul c, d
    r2 = fmul d, c
    ret r1, r2, d
}}
"
        );
        let m = parse_module(&text).unwrap();
        let compiled = compile(&m, &ExternRegistry::new(), &JitOptions::new()).unwrap();
        let interp = Interpreter::new(&m);
        for a in OPERANDS {
            let got = differential_call(&compiled, &interp, "p", &[ArgValue::F64(a)]);
            let Ok(Agreement::Returned(values)) = got else { panic!("C = {c:?}, a = {a:?}: {got:?}") };
            // The interpreter evaluates the IR as written: C * (a + a).
            let want = c * (a + a);
            for v in &values[..2] {
                let RuntimeValue::F64(v) = v else { panic!("{v:?}") };
                assert!(v.to_bits() == want.to_bits() || (v.is_nan() && want.is_nan()), "C = {c:?}, a = {a:?}");
            }
        }
    }
}

#[test]
fn a_constant_defined_before_a_loop_scales_inside_it() {
    // sum over i < n of 100 * (x_i + x_i), with x_i = i * 0.37 - 5: the shape forward mode gives.
    let text = "func @s(n: i64) -> f64 {
entry:
    zero = iconst 0
    one = iconst 1
    hundred = fconst 100.0
    step = fconst 0.37
    shift = fconst 5.0
    acc0 = fconst 0.0
    jump head(zero, acc0)
head(i: i64, acc: f64):
    more = icmp lt i, n
    br more, body, exit(acc)
body:
    fi = itof i
    p = fmul fi, step
    x = fsub p, shift
    d = fadd x, x
    t = fmul hundred, d
    acc2 = fadd acc, t
    i2 = iadd i, one
    jump head(i2, acc2)
exit(r: f64):
    ret r
}
";
    let m = parse_module(text).unwrap();
    let compiled = compile(&m, &ExternRegistry::new(), &JitOptions::new()).unwrap();
    let interp = Interpreter::new(&m);
    for n in [0i64, 1, 7, 1000] {
        let got = differential_call(&compiled, &interp, "s", &[ArgValue::I64(n)]);
        let mut want = 0.0f64;
        for i in 0..n {
            let x = i as f64 * 0.37 - 5.0;
            want += 100.0 * (x + x);
        }
        assert_eq!(got, Ok(Agreement::Returned(vec![RuntimeValue::F64(want)])), "n = {n}");
    }
}
