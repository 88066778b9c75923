//! Loop rotation (`lower/rotate.rs`): loops tested at the top get their test copied to the end
//! of the body. The header's values must still reach every use — in the body, after the loop,
//! through the exit's arguments, in the two copies of a versioned loop — and a fault in the body
//! must still be reported at its own site and iteration: results, errors and final `mslice`
//! contents exactly the interpreter's.

use jitdiff_ir::{ArgValue, ExternRegistry, parse_module};
use jitdiff_jit::{JitOptions, compile};

const LOOPS: &str = "\
; the header's parameters and a value it computes, used in the body and after the loop
func @uses_after(s: slice, n: i64) -> f64, i64 {
entry:
    one = iconst 1
    zero = iconst 0
    acc0 = fconst 0.0
    jump head(zero, acc0)
head(i: i64, acc: f64):
    twice = iadd i, i
    more = icmp lt i, n
    br more, body, exit
body:
    x = load s, i
    t = itof twice
    y = fmul x, t
    acc2 = fadd acc, y
    next = iadd i, one
    jump head(next, acc2)
exit:
    last = iadd twice, one
    ret acc, last
}

; nested loops, the inner one's exit shared by nothing, a running minimum as in k-means
func @nearest(p: slice, c: slice, d: i64) -> f64 {
entry:
    zero = iconst 0
    one = iconst 1
    np = len p
    nc = len c
    n = idiv np, d
    k = idiv nc, d
    inf = fconst inf
    cost0 = fconst 0.0
    jump hi(zero, cost0)
hi(i: i64, cost: f64):
    ci = icmp lt i, n
    br ci, bi, done
bi:
    base = imul i, d
    jump hj(zero, inf)
hj(j: i64, best: f64):
    cj = icmp lt j, k
    br cj, bj, ej
bj:
    cbase = imul j, d
    jump hl(zero, cost0)
hl(l: i64, dist: f64):
    cl = icmp lt l, d
    br cl, bl, el(dist)
bl:
    a = iadd base, l
    b = iadd cbase, l
    x = load p, a
    y = load c, b
    e = fsub x, y
    e2 = fmul e, e
    dist2 = fadd dist, e2
    l2 = iadd l, one
    jump hl(l2, dist2)
el(total: f64):
    less = fcmp lt total, best
    br less, nj(total), nj(best)
nj(b2: f64):
    j2 = iadd j, one
    jump hj(j2, b2)
ej:
    cost2 = fadd cost, best
    i2 = iadd i, one
    jump hi(i2, cost2)
done:
    ret cost
}

; a loop whose body writes and may fault part-way, then reads what it wrote after the loop
func @writes(s: slice, out: mslice, n: i64, off: i64) -> f64 {
entry:
    one = iconst 1
    zero = iconst 0
    jump head(zero)
head(i: i64):
    more = icmp lt i, n
    br more, body, exit(i)
body:
    k = iadd i, off
    x = load s, k
    store out, i, x
    next = iadd i, one
    jump head(next)
exit(m: i64):
    z = iconst 0
    first = load out, z
    f = itof m
    r = fadd first, f
    ret r
}
";

fn slice(n: usize) -> ArgValue {
    ArgValue::Slice((0..n).map(|k| (k as f64 * 0.7).sin() + 0.1 * k as f64).collect())
}

fn check(name: &str, cases: &[Vec<ArgValue>]) -> (usize, usize) {
    super::agree(LOOPS, name, cases)
}

#[test]
fn every_loop_of_these_programs_is_rotated() {
    let module = parse_module(LOOPS).unwrap();
    let compiled = compile(&module, &ExternRegistry::new(), &JitOptions::new()).unwrap();
    // Each innermost loop is versioned, and both its copies rotate; @nearest's two outer loops
    // rotate too, and so does the copy of its distance loop that runs two iterations at a time
    // (`pairs.rs`: a sum of squared differences).
    for (name, rotated, paired) in [("uses_after", 2, 0), ("nearest", 5, 1), ("writes", 2, 0)] {
        let stats = compiled.function(name).unwrap().bounds_check_stats();
        assert_eq!(stats.versioned_loops, 1, "@{name}: {stats:?}");
        assert_eq!(stats.paired_loops, paired, "@{name}: {stats:?}");
        assert_eq!(stats.rotated_loops, rotated, "@{name}: {stats:?}");
    }
}

#[test]
fn header_values_reach_the_body_and_the_code_after_the_loop() {
    let cases: Vec<Vec<ArgValue>> =
        [0i64, 1, 2, 7, 100, -3].iter().map(|&n| vec![slice(100), ArgValue::I64(n)]).collect();
    assert_eq!(check("uses_after", &cases), (6, 0));
    // Past the slice: the fault at the first index out of bounds.
    assert_eq!(check("uses_after", &[vec![slice(5), ArgValue::I64(9)]]), (0, 1));
}

#[test]
fn nested_rotated_loops_with_a_running_minimum() {
    let mut cases = vec![];
    for d in [1i64, 2, 3, 8] {
        for (np, nc) in [(0usize, 0usize), (8, 8), (24, 16), (48, 40)] {
            cases.push(vec![slice(np), slice(nc), ArgValue::I64(d)]);
        }
    }
    let (returned, failed) = check("nearest", &cases);
    assert_eq!((returned, failed), (cases.len(), 0));
    // d = 0 divides by zero before any loop; NaN coordinates never win the minimum.
    let nan = ArgValue::Slice(vec![f64::NAN, 1.0, 2.0, f64::NAN]);
    assert_eq!(check("nearest", &[vec![slice(4), slice(4), ArgValue::I64(0)]]), (0, 1));
    assert_eq!(
        check("nearest", &[vec![nan.clone(), slice(6), ArgValue::I64(2)], vec![slice(6), nan, ArgValue::I64(2)]]),
        (2, 0)
    );
}

#[test]
fn a_fault_part_way_through_a_rotated_loop_keeps_its_site_and_the_writes_before_it() {
    let mut cases = vec![];
    for (n, off) in [(0i64, 0i64), (1, 0), (5, 0), (10, 0), (10, 1), (10, 5), (10, -1), (3, 7)] {
        cases.push(vec![slice(10), ArgValue::SliceMut(vec![-1.0; 10]), ArgValue::I64(n), ArgValue::I64(off)]);
    }
    let (returned, failed) = check("writes", &cases);
    assert_eq!(returned + failed, cases.len());
    assert!(returned >= 4 && failed >= 3, "returned {returned}, failed {failed}");
}
