//! Leaf calls are inlined before lowering (`src/inline.rs`) only where no report can change:
//! results, and every failure's kind and site (function, block, instruction), stay the
//! interpreter's.

use jitdiff_ir::{ArgValue, ExternRegistry, Interpreter, RuntimeValue, parse_module};
use jitdiff_jit::{Agreement, Arg, CallError, Fault, JitOptions, compile, differential_call};

const MODULE: &str = "\
func @leaf(a: f64, b: f64) -> f64 {
entry:
    z = fconst 0.0
    p = fcmp gt a, z
    br p, pos, neg
pos:
    s = sin a
    r = fmul s, b
    ret r
neg:
    c = cos a
    ret c
}

func @access_after(x: slice, i: i64) -> f64 {
entry:
    zero = iconst 0
    a = load x, zero
    y = call @leaf(a, a)
    v = load x, i
    w = fadd y, v
    ret w
}

func @access_before(x: slice, i: i64) -> f64 {
entry:
    v = load x, i
    y = call @leaf(v, v)
    y2 = call @leaf(y, v)
    ret y2
}

func @deep(n: i64, x: f64) -> f64 {
entry:
    zero = iconst 0
    one = iconst 1
    done = icmp le n, zero
    br done, base, more
base:
    y = call @leaf(x, x)
    ret y
more:
    m = isub n, one
    r = call @deep(m, x)
    ret r
}
";

#[test]
fn inlined_leaves_keep_results_and_failure_sites() {
    let m = parse_module(MODULE).unwrap();
    let compiled = compile(&m, &ExternRegistry::new(), &JitOptions::new()).unwrap();
    let interp = Interpreter::new(&m);
    let xs = ArgValue::Slice(vec![0.5, -1.5, 2.0]);
    for func in ["access_after", "access_before"] {
        for i in [0, 1, 2, 3, -1] {
            let got = differential_call(&compiled, &interp, func, &[xs.clone(), ArgValue::I64(i)]);
            let want_ok = (0..3).contains(&i);
            match got {
                Ok(Agreement::Returned(_)) if want_ok => {}
                Ok(Agreement::Failed("OutOfBounds")) if !want_ok => {}
                other => panic!("@{func} at {i}: {other:?}"),
            }
        }
    }
    // The failing access keeps its block and position: after the (kept) call, and before the
    // (inlined) ones.
    let site = |func: &str| {
        let f = compiled.function(func).unwrap();
        match f.call(&mut [Arg::Slice(&[1.0]), Arg::I64(5)]) {
            Err(CallError::Runtime(Fault::OutOfBounds { site, .. })) => (site.func, site.block, site.inst),
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(site("access_after"), ("access_after".into(), "entry".into(), 3));
    assert_eq!(site("access_before"), ("access_before".into(), "entry".into(), 0));
    // @deep(n) runs in frames 1 ..= n + 1 and calls the leaf in frame n + 2: with n = 255
    // that call is past the depth limit (256) and fails, as in the interpreter — the caller is
    // recursive, so its leaf call is not inlined. One frame less, it works.
    for (n, fails) in [(3, false), (254, false), (255, true)] {
        let got = differential_call(&compiled, &interp, "deep", &[ArgValue::I64(n), ArgValue::F64(0.7)]);
        match got {
            Ok(Agreement::Returned(_)) if !fails => {}
            Ok(Agreement::Failed("CallDepthExceeded")) if fails => {}
            other => panic!("n = {n}: {other:?}"),
        }
    }
    let leaf = compiled.function("access_before").unwrap();
    let out = leaf.call(&mut [Arg::Slice(&[0.25]), Arg::I64(0)]).unwrap();
    let y = 0.25f64.sin() * 0.25;
    assert_eq!(out, [RuntimeValue::F64(y.sin() * 0.25)]);
}
