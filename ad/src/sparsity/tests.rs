//! Sparsity detection on small programs with known patterns. (The comparison against dense
//! derivatives at random points is in the façade's tests, which can compile derivatives.)

use super::*;
use jitdiff_ir::parse_module;

fn rows(p: &Pattern) -> Vec<Vec<usize>> {
    (0..p.rows).map(|r| p.row(r).to_vec()).collect()
}

fn tridiagonal(n: usize) -> Vec<Vec<usize>> {
    (0..n).map(|i| (i.saturating_sub(1)..(i + 2).min(n)).collect()).collect()
}

const BROYDEN: &str = "
; r[i] = (3 - 2 x[i]) x[i] - x[i-1] - 2 x[i+1] + 1, with x[-1] = x[n] = 0
func @broyden(x: slice, r: mslice) {
entry:
    n = len x
    zero = iconst 0
    one = iconst 1
    last = isub n, one
    fzero = fconst 0.0
    fone = fconst 1.0
    two = fconst 2.0
    three = fconst 3.0
    jump head(zero)
head(i: i64):
    more = icmp lt i, n
    br more, body, done
body:
    xi = load x, i
    first = icmp eq i, zero
    br first, noprev, prev
prev:
    im = isub i, one
    xp = load x, im
    jump haveprev(xp)
noprev:
    jump haveprev(fzero)
haveprev(xm: f64):
    end = icmp eq i, last
    br end, nonext, next
next:
    ip = iadd i, one
    xn = load x, ip
    jump havenext(xn)
nonext:
    jump havenext(fzero)
havenext(xq: f64):
    t = fmul two, xi
    a = fsub three, t
    b = fmul a, xi
    c = fsub b, xm
    d = fmul two, xq
    e = fsub c, d
    v = fadd e, fone
    store r, i, v
    i2 = iadd i, one
    jump head(i2)
done:
    ret
}
";

const CHAINED_ROSENBROCK: &str = "
func @f(x: slice) -> f64 {
entry:
    n = len x
    one = iconst 1
    last = isub n, one
    zero = iconst 0
    acc0 = fconst 0.0
    hundred = fconst 100.0
    onef = fconst 1.0
    jump head(zero, acc0)
head(i: i64, acc: f64):
    more = icmp lt i, last
    br more, body, exit(acc)
body:
    xi = load x, i
    inext = iadd i, one
    xn = load x, inext
    xi2 = fmul xi, xi
    d = fsub xn, xi2
    d2 = fmul d, d
    t1 = fmul hundred, d2
    e = fsub onef, xi
    e2 = fmul e, e
    term = fadd t1, e2
    acc2 = fadd acc, term
    jump head(inext, acc2)
exit(r: f64):
    ret r
}
";

#[test]
fn broyden_residuals_are_tridiagonal() {
    let m = parse_module(BROYDEN).unwrap();
    let (x, r) = (vec![-1.0; 7], vec![0.0; 7]);
    let found =
        SparsityDetector::new(&m, "broyden", &[true, false]).run(&[ProbeArg::Slice(&x), ProbeArg::Slice(&r)]).unwrap();
    assert_eq!(rows(found.jacobian.as_ref().unwrap()), tridiagonal(7));
    assert!(!found.depends_on_data);
}

#[test]
fn chained_rosenbrock_hessian_is_tridiagonal() {
    let m = parse_module(CHAINED_ROSENBROCK).unwrap();
    let x = vec![0.5; 9];
    let found = SparsityDetector::new(&m, "f", &[true]).hessian(true).run(&[ProbeArg::Slice(&x)]).unwrap();
    assert_eq!(rows(found.hessian.as_ref().unwrap()), tridiagonal(9));
    assert_eq!(found.jacobian.as_ref().unwrap().row(0), (0..9).collect::<Vec<_>>());
}

#[test]
fn a_long_sum_is_analysed_in_linear_time() {
    let m = parse_module(CHAINED_ROSENBROCK).unwrap();
    let x = vec![0.5; 100_000];
    let start = std::time::Instant::now();
    let found = SparsityDetector::new(&m, "f", &[true]).hessian(true).run(&[ProbeArg::Slice(&x)]).unwrap();
    assert_eq!(found.hessian.unwrap().nnz(), 3 * 100_000 - 2);
    // Generous (debug builds, a shared machine): quadratic behaviour would take minutes.
    assert!(start.elapsed().as_secs() < 20, "{:?}", start.elapsed());
}

#[test]
fn a_branch_on_the_inputs_takes_the_union_of_both_sides() {
    // out[i] = x[i] > 0 ? x[i] * x[i] : x[i + 1] (x[i + 1] only read on one side)
    let m = parse_module(
        "func @f(x: slice, out: mslice) {
entry:
    n = len out
    zero = iconst 0
    one = iconst 1
    fz = fconst 0.0
    jump head(zero)
head(i: i64):
    more = icmp lt i, n
    br more, body, done
body:
    a = load x, i
    j = iadd i, one
    pos = fcmp gt a, fz
    br pos, square, shift
square:
    s = fmul a, a
    jump join(s)
shift:
    b = load x, j
    jump join(b)
join(v: f64):
    store out, i, v
    jump head(j)
done:
    ret
}",
    )
    .unwrap();
    for x in [[1.0, -1.0, 1.0, -1.0], [-1.0; 4], [1.0; 4]] {
        let out = [0.0; 3];
        let found = SparsityDetector::new(&m, "f", &[true, false])
            .hessian(false)
            .run(&[ProbeArg::Slice(&x), ProbeArg::Slice(&out)])
            .unwrap();
        assert_eq!(rows(found.jacobian.as_ref().unwrap()), [vec![0, 1], vec![1, 2], vec![2, 3]], "at {x:?}");
    }
}

#[test]
fn a_side_that_always_faults_is_dropped_and_the_taken_side_faults_for_real() {
    // x > 0 ? s[5] : x (s has 2 elements: the first side faults whenever it is taken).
    let m = parse_module(
        "func @f(x: f64, s: slice) -> f64 {
entry:
    z = fconst 0.0
    c = fcmp gt x, z
    br c, bad, good
bad:
    k = iconst 5
    v = load s, k
    jump join(v)
good:
    jump join(x)
join(r: f64):
    ret r
}",
    )
    .unwrap();
    let s = [1.0, 2.0];
    let detect = |x: f64| SparsityDetector::new(&m, "f", &[true, true]).run(&[ProbeArg::F64(x), ProbeArg::Slice(&s)]);
    assert_eq!(rows(&detect(-1.0).unwrap().jacobian.unwrap()), [vec![0]]);
    let err = detect(1.0).unwrap_err();
    assert!(matches!(&err, SparsityError::Fault(f) if f.kind_name() == "OutOfBounds"), "{err}");
}

#[test]
fn a_loop_whose_exit_depends_on_the_inputs_is_refused() {
    // Halve x until it is below 1.
    let m = parse_module(
        "func @f(x: f64) -> f64 {
entry:
    one = fconst 1.0
    half = fconst 0.5
    jump head(x)
head(v: f64):
    big = fcmp gt v, one
    br big, body, done
body:
    w = fmul v, half
    jump head(w)
done:
    ret v
}",
    )
    .unwrap();
    let err = SparsityDetector::new(&m, "f", &[true]).run(&[ProbeArg::F64(10.0)]).unwrap_err();
    assert!(matches!(err, SparsityError::Unsupported { .. }), "{err}");
    assert!(err.to_string().contains("loop whose exit depends on the differentiated inputs"), "{err}");
    assert!(err.to_string().contains("block head"), "{err}");
}

#[test]
fn indices_from_data_are_exact_and_from_inputs_conservative() {
    // out[i] = x[idx[i]] * x[k] where k = ftoi(x[0]) (an index that depends on the inputs).
    let m = parse_module(
        "func @f(x: slice, idx: slice, out: mslice) {
entry:
    n = len out
    zero = iconst 0
    one = iconst 1
    x0 = load x, zero
    k = ftoi x0
    jump head(zero)
head(i: i64):
    more = icmp lt i, n
    br more, body, done
body:
    fi = load idx, i
    j = ftoi fi
    a = load x, j
    b = load x, k
    p = fmul a, b
    store out, i, p
    i2 = iadd i, one
    jump head(i2)
done:
    ret
}",
    )
    .unwrap();
    let (x, idx, out) = ([1.0, 0.0, 0.0, 0.0], [3.0, 1.0], [0.0; 2]);
    let found = SparsityDetector::new(&m, "f", &[true, false, false])
        .run(&[ProbeArg::Slice(&x), ProbeArg::Slice(&idx), ProbeArg::Slice(&out)])
        .unwrap();
    // x[k] may be any element.
    assert_eq!(rows(found.jacobian.as_ref().unwrap()), [vec![0, 1, 2, 3], vec![0, 1, 2, 3]]);
    assert!(found.depends_on_data);

    // Without the x[k] factor: exact.
    let m = parse_module(
        "func @g(x: slice, idx: slice, out: mslice) {
entry:
    n = len out
    zero = iconst 0
    one = iconst 1
    jump head(zero)
head(i: i64):
    more = icmp lt i, n
    br more, body, done
body:
    fi = load idx, i
    j = ftoi fi
    a = load x, j
    p = fmul a, a
    store out, i, p
    i2 = iadd i, one
    jump head(i2)
done:
    ret
}",
    )
    .unwrap();
    let found = SparsityDetector::new(&m, "g", &[true, false, false])
        .hessian(false)
        .run(&[ProbeArg::Slice(&x), ProbeArg::Slice(&idx), ProbeArg::Slice(&out)])
        .unwrap();
    assert_eq!(rows(found.jacobian.as_ref().unwrap()), [vec![3], vec![1]]);
    assert!(found.depends_on_data);
    // The indices came from a read-only slice; the output buffer was only written.
    assert!(!found.depends_on_mutable_data);

    // Indices read from the buffer's initial contents: the pattern depends on them too.
    let found = SparsityDetector::new(&m, "g", &[true, false, false])
        .hessian(false)
        .run(&[ProbeArg::Slice(&x), ProbeArg::Slice(&idx), ProbeArg::Slice(&idx)])
        .unwrap();
    assert!(!found.depends_on_mutable_data, "`out` is written, never read");
    let m = parse_module(
        "func @h(x: slice, state: mslice) -> f64 {
entry:
    zero = iconst 0
    fk = load state, zero
    k = ftoi fk
    a = load x, k
    store state, zero, a
    ret a
}",
    )
    .unwrap();
    let found = SparsityDetector::new(&m, "h", &[true, false])
        .hessian(false)
        .run(&[ProbeArg::Slice(&x), ProbeArg::Slice(&[2.0])])
        .unwrap();
    assert!(found.depends_on_data && found.depends_on_mutable_data);
}

#[test]
fn calls_local_arrays_and_nonlinear_interactions() {
    // y = sq(a) with a local copy; f = y * x[2] + x[3] / x[4] + floor(x[0])
    let m = parse_module(
        "func @sq(s: slice, i: i64) -> f64 {
entry:
    v = load s, i
    w = fmul v, v
    ret w
}

func @f(x: slice) -> f64 {
entry:
    two = iconst 2
    tmp = alloc two
    z = iconst 0
    one = iconst 1
    three = iconst 3
    four = iconst 4
    a = load x, one
    store tmp, z, a
    y = call @sq(tmp, z)
    c = load x, two
    p = fmul y, c
    d = load x, three
    e = load x, four
    q = fdiv d, e
    r = fadd p, q
    x0 = load x, z
    fl = floor x0
    s = fadd r, fl
    ret s
}",
    )
    .unwrap();
    let x = [0.5, 1.0, 2.0, 3.0, 4.0];
    let found = SparsityDetector::new(&m, "f", &[true]).hessian(true).run(&[ProbeArg::Slice(&x)]).unwrap();
    assert_eq!(found.jacobian.as_ref().unwrap().row(0), &[1, 2, 3, 4]);
    let h = found.hessian.unwrap();
    assert_eq!(rows(&h), [vec![], vec![1, 2], vec![1], vec![4], vec![3, 4]]);
}

#[test]
fn errors_name_the_problem() {
    let m = parse_module(CHAINED_ROSENBROCK).unwrap();
    let x = [1.0; 3];
    let e = SparsityDetector::new(&m, "g", &[true]).run(&[ProbeArg::Slice(&x)]).unwrap_err();
    assert!(matches!(e, SparsityError::UnknownFunction(_)));
    let e = SparsityDetector::new(&m, "f", &[true]).run(&[ProbeArg::F64(1.0)]).unwrap_err();
    assert!(e.to_string().contains("argument 0"), "{e}");
    let e = SparsityDetector::new(&m, "f", &[true]).max_nonzeros(2).run(&[ProbeArg::Slice(&x)]).unwrap_err();
    assert!(matches!(e, SparsityError::TooDense { .. }), "{e}");
}
