//! Copies at the edges of call-free loops (`lower/loop_copies.rs`): which loops get them, and
//! that values pass through them bit for bit — NaN payloads, signed zeros and infinities of a
//! running maximum, slice bases and lengths — with results and faults exactly the interpreter's.

use jitdiff_ir::{ArgValue, ExternRegistry, parse_module};
use jitdiff_jit::{JitOptions, compile};

const LOOPS: &str = "\
; GradBench's log-sum-exp: a running maximum, then a loop calling exp that uses it, the slice
; and its length
func @lse(x: slice) -> f64 {
entry:
    zero = iconst 0
    one = iconst 1
    n = len x
    a0 = load x, zero
    s0 = fconst 0.0
    jump mh(one, a0)
mh(i: i64, a: f64):
    c = icmp lt i, n
    br c, mb, sum(zero, s0)
mb:
    xi = load x, i
    g = fcmp gt xi, a
    br g, mt, mj(a)
mt:
    jump mj(xi)
mj(a2: f64):
    i2 = iadd i, one
    jump mh(i2, a2)
sum(j: i64, s: f64):
    d = icmp lt j, n
    br d, sb, done
sb:
    xj = load x, j
    t = fsub xj, a
    e = exp t
    s2 = fadd s, e
    j2 = iadd j, one
    jump sum(j2, s2)
done:
    l = ln s
    r = fadd l, a
    ret r
}

; the same loops without a call: nothing to copy for
func @no_calls(x: slice) -> f64 {
entry:
    zero = iconst 0
    one = iconst 1
    n = len x
    a0 = load x, zero
    jump mh(one, a0)
mh(i: i64, a: f64):
    c = icmp lt i, n
    br c, mb, sum(zero, a)
mb:
    xi = load x, i
    g = fcmp gt xi, a
    a2 = select g, xi, a
    i2 = iadd i, one
    jump mh(i2, a2)
sum(j: i64, s: f64):
    d = icmp lt j, n
    br d, sb, done
sb:
    xj = load x, j
    t = fsub xj, a
    s2 = fadd s, t
    j2 = iadd j, one
    jump sum(j2, s2)
done:
    ret s
}

; a flag (not 64 bits: not copied) and a float computed before the loop, used in it and after a
; call
func @flag(x: slice, t: f64) -> f64 {
entry:
    zero = iconst 0
    one = iconst 1
    n = len x
    z = fconst 0.0
    pos = fcmp gt t, z
    half = fmul t, t
    jump h(zero, z)
h(i: i64, s: f64):
    c = icmp lt i, n
    br c, b, done
b:
    xi = load x, i
    y = select pos, xi, half
    s2 = fadd s, y
    i2 = iadd i, one
    jump h(i2, s2)
done:
    e = exp s
    f = select pos, e, half
    g = fadd f, s
    ret g
}

; a call-free loop inside a loop that calls: left alone (its copies would run per entry)
func @inner(x: slice, k: i64) -> f64 {
entry:
    zero = iconst 0
    one = iconst 1
    n = len x
    s0 = fconst 0.0
    jump oh(zero, s0)
oh(i: i64, s: f64):
    c = icmp lt i, k
    br c, ob, done
ob:
    jump ih(zero, s0)
ih(j: i64, m: f64):
    d = icmp lt j, n
    br d, ib, oe
ib:
    xj = load x, j
    m2 = fadd m, xj
    j2 = iadd j, one
    jump ih(j2, m2)
oe:
    e = exp m
    s2 = fadd s, e
    i2 = iadd i, one
    jump oh(i2, s2)
done:
    ret s
}
";

fn check(name: &str, cases: &[Vec<ArgValue>]) -> (usize, usize) {
    super::agree(LOOPS, name, cases)
}

#[test]
fn only_call_free_loops_at_the_top_level_of_calling_code_get_copies() {
    let module = parse_module(LOOPS).unwrap();
    let compiled = compile(&module, &ExternRegistry::new(), &JitOptions::new()).unwrap();
    let copied = |name: &str| compiled.function(name).unwrap().bounds_check_stats().copied_loop_values;
    // The maximum (after the loop; both copies of the versioned loop share its exit) and the
    // slice's base and length (before the loop).
    assert!(copied("lse") >= 2, "{:?}", compiled.function("lse").unwrap().bounds_check_stats());
    assert_eq!(copied("no_calls"), 0);
    // `half`, the slice's base and length; not the flag.
    assert!(copied("flag") >= 1, "{:?}", compiled.function("flag").unwrap().bounds_check_stats());
    assert_eq!(copied("inner"), 0);
}

#[test]
fn values_pass_the_copies_bit_for_bit() {
    let wave = |n: usize| (0..n).map(|k| (k as f64 * 0.37).sin() * 3.0).collect::<Vec<f64>>();
    let mut cases: Vec<Vec<ArgValue>> =
        [1usize, 2, 3, 17, 1000].iter().map(|&n| vec![ArgValue::Slice(wave(n))]).collect();
    let specials = [
        vec![-0.0, 0.0, -0.0],
        vec![0.0, -0.0],
        vec![f64::NAN, 1.0, 2.0],
        vec![1.0, f64::from_bits(0x7ff8_0000_dead_beef), 2.0],
        vec![f64::NEG_INFINITY, f64::NEG_INFINITY],
        vec![1.0, f64::INFINITY, 3.0],
        vec![-745.0, 0.0, 709.0],
        vec![f64::MIN_POSITIVE, 5e-324, -5e-324],
    ];
    cases.extend(specials.iter().map(|s| vec![ArgValue::Slice(s.clone())]));
    let total = cases.len();
    assert_eq!(check("lse", &cases), (total, 0));
    assert_eq!(check("no_calls", &cases), (total, 0));
    // An empty slice: the fault at `load x, 0`, as in the interpreter.
    assert_eq!(check("lse", &[vec![ArgValue::Slice(vec![])]]), (0, 1));
    let flag: Vec<Vec<ArgValue>> = [-1.5, 0.0, -0.0, 2.0, f64::NAN]
        .iter()
        .flat_map(|&t| [0usize, 1, 40].map(|n| vec![ArgValue::Slice(wave(n)), ArgValue::F64(t)]))
        .collect();
    assert_eq!(check("flag", &flag), (15, 0));
    let inner: Vec<Vec<ArgValue>> =
        [0i64, 1, 4].iter().map(|&k| vec![ArgValue::Slice(wave(9)), ArgValue::I64(k)]).collect();
    assert_eq!(check("inner", &inner), (3, 0));
}
