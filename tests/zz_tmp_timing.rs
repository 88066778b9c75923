use jitdiff::ad::derive_forward;
use jitdiff::ir::{ExternRegistry, RuntimeValue, parse_module};
use jitdiff::jit::{Arg, JitOptions, compile};
use jitdiff::with_tangent_shadows;
use std::time::Instant;

const A: &str = r#"func @rosenbrock_jvp(x: slice, d_x: slice) -> f64, f64 {
entry:
    n = len x
    zero = iconst 0
    one = iconst 1
    last = isub n, one
    hundred = fconst 100.0
    fone = fconst 1.0
    acc0 = fconst 0.0
    jump head(zero, acc0, acc0)
head(i: i64, acc: f64, d_acc: f64):
    more = icmp lt i, last
    br more, body, exit(acc, d_acc)
body:
    xi = load x, i
    v14 = load d_x, i
    inext = iadd i, one
    xnext = load x, inext
    v17 = load d_x, inext
    xi_sq = fmul xi, xi
    v19 = fmul xi, v14
    d_xi_sq = fadd v19, v19
    valley = fsub xnext, xi_sq
    d_valley = fsub v17, d_xi_sq
    valley_sq = fmul valley, valley
    v24 = fmul valley, d_valley
    d_valley_sq = fadd v24, v24
    valley_term = fmul hundred, valley_sq
    d_valley_term = fmul hundred, d_valley_sq
    offset = fsub fone, xi
    offset_sq = fmul offset, offset
    v30 = fmul offset, v14
    minus_d_offset_sq = fadd v30, v30
    term = fadd valley_term, offset_sq
    d_term = fsub d_valley_term, minus_d_offset_sq
    acc2 = fadd acc, term
    d_acc2 = fadd d_acc, d_term
    jump head(inext, acc2, d_acc2)
exit(total: f64, d_total: f64):
    ret total, d_total
}
"#;
const B: &str = r#"func @rosenbrock_jvp(x: slice, d_x: slice) -> f64, f64 {
entry:
    n = len x
    zero = iconst 0
    one = iconst 1
    last = isub n, one
    hundred = fconst 100.0
    fone = fconst 1.0
    acc0 = fconst 0.0
    jump head(zero, acc0, acc0)
head(i: i64, acc: f64, d_acc: f64):
    more = icmp lt i, last
    br more, body, exit(acc, d_acc)
body:
    xi = load x, i
    v14 = load d_x, i
    inext = iadd i, one
    xnext = load x, inext
    v17 = load d_x, inext
    xi_sq = fmul xi, xi
    v19 = fmul xi, v14
    d_xi_sq = fadd v19, v19
    valley = fsub xnext, xi_sq
    d_valley = fsub v17, d_xi_sq
    valley_sq = fmul valley, valley
    v24 = fmul valley, d_valley
    valley_term = fmul hundred, valley_sq
    two_hundred = fconst 200.0
    d_valley_term = fmul two_hundred, v24
    offset = fsub fone, xi
    offset_sq = fmul offset, offset
    v30 = fmul offset, v14
    minus_d_offset_sq = fadd v30, v30
    term = fadd valley_term, offset_sq
    d_term = fsub d_valley_term, minus_d_offset_sq
    acc2 = fadd acc, term
    d_acc2 = fadd d_acc, d_term
    jump head(inext, acc2, d_acc2)
exit(total: f64, d_total: f64):
    ret total, d_total
}
"#;
#[test]
fn timing() {
    let m = parse_module(jitdiff::problems::rosenbrock::ROSENBROCK_IR).unwrap();
    let x = jitdiff::problems::rosenbrock::standard_start(100_000);
    let t: Vec<f64> = (0..x.len()).map(|k| ((k * 7919) % 13) as f64 / 13.0 - 0.5).collect();
    let primal = compile(&m, &ExternRegistry::new(), &JitOptions::new()).unwrap().function("rosenbrock").unwrap();
    let d = derive_forward(&m, "rosenbrock", &[true], 1).unwrap();
    let checked = compile(&d.module, &ExternRegistry::new(), &JitOptions::new()).unwrap().function(&d.name).unwrap();
    let elided = compile(&d.module, &ExternRegistry::new(), &with_tangent_shadows(&d, &JitOptions::new())).unwrap().function(&d.name).unwrap();
    let unchecked = compile(&d.module, &ExternRegistry::new(), &unsafe { JitOptions::new().without_bounds_checks() }).unwrap().function(&d.name).unwrap();
    let a = compile(&parse_module(A).unwrap(), &ExternRegistry::new(), &JitOptions::new()).unwrap().function("rosenbrock_jvp").unwrap();
    let bb = compile(&parse_module(B).unwrap(), &ExternRegistry::new(), &JitOptions::new()).unwrap().function("rosenbrock_jvp").unwrap();
    let mut o1 = [RuntimeValue::F64(0.0)];
    let mut o2 = [RuntimeValue::F64(0.0), RuntimeValue::F64(0.0)];
    let mut best = [f64::MAX; 6];
    for _ in 0..30 {
        for (k, f) in [&primal, &checked, &elided, &unchecked, &a, &bb].iter().enumerate() {
            let start = Instant::now();
            for _ in 0..50 {
                if k == 0 { f.call_into(&mut [Arg::Slice(&x)], &mut o1).unwrap(); } else { f.call_into(&mut [Arg::Slice(&x), Arg::Slice(&t)], &mut o2).unwrap(); }
            }
            best[k] = best[k].min(start.elapsed().as_secs_f64() / 50.0 * 1e6);
        }
    }
    eprintln!("primal {:.1} us, jvp checked {:.1} ({:.2}x), elided {:.1} ({:.2}x), unchecked {:.1} ({:.2}x)", best[0], best[1], best[1]/best[0], best[2], best[2]/best[0], best[3], best[3]/best[0]);
    eprintln!("hand A {:.2}x, hand B (200*v24) {:.2}x", best[4]/best[0], best[5]/best[0]);
}
