//! `sin x` and `cos x` of one operand in one block are one fused call (`lower/trig.rs`): the
//! results must be the interpreter's bits — in either order, with a repeated or a lone member,
//! in a loop, and at edge values.

use jitdiff_ir::{ArgValue, ExternRegistry, Interpreter, RuntimeValue, parse_module};
use jitdiff_jit::{Agreement, JitOptions, compile, differential_call};

const OPERANDS: [f64; 12] =
    [0.0, -0.0, 0.5, -2.5, 1e-310, 1e5, 1e22, -1e300, f64::MAX, f64::INFINITY, f64::NAN, std::f64::consts::PI];

#[test]
fn fused_sine_and_cosine_match_the_interpreter() {
    let text = "\
func @pairs(a: f64, b: f64) -> f64, f64, f64, f64, f64, f64 {
entry:
    c = cos a
    s = sin a
    s2 = sin a
    lone = sin b
    t = fmul s, c
    jump next(b)
next(x: f64):
    sx = sin x
    cx = cos x
    ret c, s, s2, lone, sx, cx
}

func @looped(x: slice) -> f64 {
entry:
    n = len x
    zero = iconst 0
    one = iconst 1
    acc0 = fconst 0.0
    jump head(zero, acc0)
head(i: i64, acc: f64):
    more = icmp lt i, n
    br more, body, done(acc)
body:
    v = load x, i
    c = cos v
    s = sin v
    p = fmul s, c
    acc2 = fadd acc, p
    i2 = iadd i, one
    jump head(i2, acc2)
done(total: f64):
    ret total
}
";
    let m = parse_module(text).unwrap();
    let compiled = compile(&m, &ExternRegistry::new(), &JitOptions::new()).unwrap();
    let interp = Interpreter::new(&m);
    for a in OPERANDS {
        for b in [1.25, a] {
            let got = differential_call(&compiled, &interp, "pairs", &[ArgValue::F64(a), ArgValue::F64(b)]);
            let Ok(Agreement::Returned(values)) = got else { panic!("a = {a:?}, b = {b:?}: {got:?}") };
            let want = [a.cos(), a.sin(), a.sin(), b.sin(), b.sin(), b.cos()];
            for (v, w) in values.iter().zip(want) {
                let RuntimeValue::F64(v) = v else { panic!("{v:?}") };
                assert!(v.to_bits() == w.to_bits() || (v.is_nan() && w.is_nan()), "a = {a:?}, b = {b:?}");
            }
        }
    }
    let xs: Vec<f64> = (0..200).map(|k| (k as f64 - 100.0) * 0.37).chain(OPERANDS).collect();
    let got = differential_call(&compiled, &interp, "looped", &[ArgValue::Slice(xs)]);
    assert!(matches!(got, Ok(Agreement::Returned(_))), "{got:?}");
}
