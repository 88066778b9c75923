//! Sparse Jacobians and Hessians against the dense ones: on banded residual systems (Broyden
//! tridiagonal), chained Rosenbrock, an arrowhead, data-dependent indices, a branch on the
//! inputs and random generated programs — every structural zero is zero in the dense
//! derivative at several random points, every nonzero equals the dense entry — with the colour
//! counts asserted; plans reused and recomputed; errors in the user's terms; no allocation per
//! call.

use jitdiff::ir::arbitrary::{ArgSpec, GenConfig, generate_case, standard_extern_registry};
use jitdiff::ir::{ArgValue, ExternRegistry, Interpreter, Module, parse_module, parse_module_with_spans};
use jitdiff::jit::alloc_count::allocations_on_this_thread;
use jitdiff::sparse::CsrMatrix;
use jitdiff::{Arg, Error, HvpFn, JacobianFn, JacobianMode, SparseHessianFn, SparseJacobianFn, SplitMix64, args};
use jitdiff_problems::broyden::BROYDEN_RESIDUALS_IR as BROYDEN_RESIDUALS;
use jitdiff_problems::rosenbrock::ROSENBROCK_IR as CHAINED_ROSENBROCK;

/// `sum_{i >= 1} (x[0] - x[i]^2)^2 + exp(x[i])`: an arrowhead Hessian.
const ARROWHEAD: &str = "
func @arrow(x: slice) -> f64 {
entry:
    n = len x
    zero = iconst 0
    one = iconst 1
    acc0 = fconst 0.0
    x0 = load x, zero
    jump head(one, acc0)
head(i: i64, acc: f64):
    more = icmp lt i, n
    br more, body, exit(acc)
body:
    xi = load x, i
    sq = fmul xi, xi
    d = fsub x0, sq
    d2 = fmul d, d
    e = exp xi
    t = fadd d2, e
    acc2 = fadd acc, t
    i2 = iadd i, one
    jump head(i2, acc2)
exit(r: f64):
    ret r
}
";

/// `out[i] = x[idx[i]]^2 * x[i]`, indices from (non-differentiated) data; and a total.
const GATHER: &str = "
func @gather(x: slice, idx: slice, scale: f64, out: mslice) -> f64 {
entry:
    n = len out
    zero = iconst 0
    one = iconst 1
    acc0 = fconst 0.0
    jump head(zero, acc0)
head(i: i64, acc: f64):
    more = icmp lt i, n
    br more, body, done(acc)
body:
    fi = load idx, i
    j = ftoi fi
    a = load x, j
    b = load x, i
    a2 = fmul a, a
    p = fmul a2, b
    q = fmul p, scale
    store out, i, q
    acc2 = fadd acc, q
    i2 = iadd i, one
    jump head(i2, acc2)
done(total: f64):
    ret total
}
";

/// `out[i] = x[i] > 0 ? x[i]^2 : sin(x[i+1]) (or x[i] at the end)`: a branch on the inputs.
const PIECEWISE: &str = "
func @piecewise(x: slice, out: mslice) {
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
    t = sin b
    jump join(t)
join(v: f64):
    store out, i, v
    jump head(j)
done:
    ret
}
";

fn random_vec(rng: &mut SplitMix64, n: usize, lo: f64, hi: f64) -> Vec<f64> {
    (0..n).map(|_| rng.uniform_in(lo, hi)).collect()
}

/// Every dense entry outside the sparse pattern is exactly zero; every entry inside equals the
/// sparse value (to rounding).
fn assert_matches_dense(what: &str, sparse: &CsrMatrix, dense: &[f64]) {
    assert_matches_dense_where(what, sparse, dense, true);
}

/// [`assert_matches_dense`], except that where the function's outputs are not all finite a
/// structural zero may be NaN in the dense matrix: forward mode multiplies a zero tangent by the
/// NaN or infinite partial of a non-finite value with a plain product (docs/rules.md, "past a
/// value that is already infinite or NaN"), while the pattern knows the entry is zero.
fn assert_matches_dense_where(what: &str, sparse: &CsrMatrix, dense: &[f64], outputs_finite: bool) {
    let (rows, cols) = (sparse.rows(), sparse.cols());
    assert_eq!(dense.len(), rows * cols, "{what}: shape");
    for r in 0..rows {
        for c in 0..cols {
            let (s, d) = (sparse.get(r, c), dense[r * cols + c]);
            if !sparse.pattern().contains(r, c) {
                if d.is_nan() && !outputs_finite {
                    continue;
                }
                assert_eq!(d, 0.0, "{what}: ({r}, {c}) is a structural zero but the dense entry is {d}");
            } else if !(s.is_nan() && d.is_nan()) {
                assert!((s - d).abs() <= 1e-12 * d.abs().max(1.0), "{what}: ({r}, {c}) sparse {s} vs dense {d}");
            }
        }
    }
}

#[test]
fn broyden_tridiagonal_residuals() {
    let m = parse_module(BROYDEN_RESIDUALS).unwrap();
    let sparse = SparseJacobianFn::builder(&m, "broyden").wrt(["x"]).build().unwrap();
    let dense = JacobianFn::builder(&m, "broyden").wrt(["x"]).build().unwrap();
    let mut rng = SplitMix64::new(30);
    for n in [1, 2, 3, 50] {
        for _ in 0..3 {
            let x = random_vec(&mut rng, n, -2.0, 2.0);
            let (mut r1, mut r2) = (vec![0.0; n], vec![0.0; n]);
            let j = sparse.jacobian(&mut args![&x, &mut r1]).unwrap();
            let d = dense.jacobian(&mut args![&x, &mut r2]).unwrap();
            assert_eq!(r1, r2, "the residuals as one call leaves them");
            assert_matches_dense("broyden", &j, &d.data);
            assert_eq!(j.nnz(), 3 * n - 2);
        }
        let info = sparse.info(&args![&vec![0.0; n], &mut vec![0.0; n]]).unwrap();
        assert_eq!(info.colors, n.min(3), "n = {n}");
        // The narrowest sweep that holds the colours.
        assert_eq!((info.lanes, info.sweeps), (n.min(3).next_power_of_two(), 1));
        assert!(!info.depends_on_data);
    }
    // Narrow lanes: 3 colours over W = 2 is two sweeps, same values.
    let narrow = SparseJacobianFn::builder(&m, "broyden").wrt(["x"]).width(2).build().unwrap();
    let x = random_vec(&mut rng, 20, -2.0, 2.0);
    let (mut r1, mut r2) = (vec![0.0; 20], vec![0.0; 20]);
    let a = narrow.jacobian(&mut args![&x, &mut r1]).unwrap();
    let b = sparse.jacobian(&mut args![&x, &mut r2]).unwrap();
    assert_eq!(a, b);
    assert_eq!(narrow.info(&args![&x, &mut r1]).unwrap().sweeps, 2);
}

#[test]
fn chained_rosenbrock_hessian() {
    let m = parse_module(CHAINED_ROSENBROCK).unwrap();
    let sparse = SparseHessianFn::builder(&m, "rosenbrock").wrt(["x"]).build().unwrap();
    let dense = HvpFn::builder(&m, "rosenbrock").wrt(["x"]).width(8).build().unwrap();
    let mut rng = SplitMix64::new(21);
    for n in [2, 3, 40] {
        for _ in 0..3 {
            let x = random_vec(&mut rng, n, -2.0, 2.0);
            let mut gradient = vec![0.0; n];
            let mut h = CsrMatrix::default();
            let value = sparse.hessian_with_gradient(&mut args![&x], &mut gradient, &mut h).unwrap();
            let d = dense.hessian(&mut args![&x]).unwrap();
            assert_matches_dense("rosenbrock", &h, &d);
            assert_eq!(h.nnz(), 3 * n - 2);
            let mut reference = vec![0.0; n];
            let reference_value =
                dense.hvp_with_gradient(&mut args![&x], &vec![0.0; 8 * n], &mut reference, &mut vec![0.0; 8 * n]);
            assert_eq!((value, &gradient), (reference_value.unwrap(), &reference));
        }
        assert_eq!(sparse.info(&args![&vec![0.0; n]]).unwrap().colors, if n <= 3 { 2 } else { 3 });
    }
}

#[test]
fn arrowhead_hessian() {
    let m = parse_module(ARROWHEAD).unwrap();
    let sparse = SparseHessianFn::builder(&m, "arrow").wrt(["x"]).build().unwrap();
    let dense = HvpFn::builder(&m, "arrow").wrt(["x"]).width(4).build().unwrap();
    let mut rng = SplitMix64::new(3);
    let x = random_vec(&mut rng, 30, -1.0, 1.0);
    let h = sparse.hessian(&mut args![&x]).unwrap();
    assert_matches_dense("arrowhead", &h, &dense.hessian(&mut args![&x]).unwrap());
    assert_eq!(h.nnz(), 1 + 3 * 29);
    let info = sparse.info(&args![&x]).unwrap();
    assert!(info.colors <= 3, "{info:?}");
    assert_eq!(info.colors, 2);
}

#[test]
fn data_dependent_indices_are_exact_and_key_the_plan() {
    let m = parse_module(GATHER).unwrap();
    let sparse = SparseJacobianFn::builder(&m, "gather").wrt(["x", "scale"]).build().unwrap();
    let dense = JacobianFn::builder(&m, "gather").wrt(["x", "scale"]).build().unwrap();
    let mut rng = SplitMix64::new(5);
    let n = 12;
    for idx in [vec![3.0; n], (0..n).rev().map(|i| i as f64).collect(), (0..n).map(|i| ((i * 5) % n) as f64).collect()]
    {
        let x = random_vec(&mut rng, n, -1.0, 1.0);
        let (mut o1, mut o2) = (vec![0.0; n], vec![0.0; n]);
        let j = sparse.jacobian(&mut args![&x, &idx, 0.5, &mut o1]).unwrap();
        let d = dense.jacobian(&mut args![&x, &idx, 0.5, &mut o2]).unwrap();
        assert_eq!(o1, o2);
        assert_matches_dense("gather", &j, &d.data);
        // Inputs: x[0..n], then scale; outputs: the total, then out[0..n].
        assert_eq!((j.rows(), j.cols()), (n + 1, n + 1));
        for i in 0..n {
            let (cols, _) = j.row(1 + i);
            let mut expected = vec![idx[i] as usize, i, n];
            expected.sort();
            expected.dedup();
            assert_eq!(cols, expected, "row of out[{i}] with idx {idx:?}");
        }
        assert!(sparse.info(&args![&x, &idx, 0.5, &mut o1]).unwrap().depends_on_data);
    }
    // The output buffer's contents are not part of the key (the function only writes it): a
    // call after the one that filled it reuses the plan rather than detecting again.
    let (x, idx) = (random_vec(&mut rng, n, -1.0, 1.0), vec![1.0; n]);
    let mut out = vec![0.0; n];
    let first = sparse.info(&args![&x, &idx, 0.5, &mut out]).unwrap();
    sparse.jacobian(&mut args![&x, &idx, 0.5, &mut out]).unwrap();
    assert!(out.iter().any(|&o| o != 0.0));
    let second = sparse.info(&args![&x, &idx, 0.5, &mut out]).unwrap();
    assert_eq!(first.detect_time, second.detect_time, "the plan was detected again");
}

#[test]
fn a_branch_on_the_inputs_gives_the_union_of_its_sides() {
    let m = parse_module(PIECEWISE).unwrap();
    let sparse = SparseJacobianFn::builder(&m, "piecewise").wrt(["x"]).build().unwrap();
    let dense = JacobianFn::builder(&m, "piecewise").wrt(["x"]).build().unwrap();
    let mut rng = SplitMix64::new(8);
    for _ in 0..5 {
        let x = random_vec(&mut rng, 9, -1.0, 1.0);
        let (mut o1, mut o2) = (vec![0.0; 8], vec![0.0; 8]);
        let j = sparse.jacobian(&mut args![&x, &mut o1]).unwrap();
        assert_matches_dense("piecewise", &j, &dense.jacobian(&mut args![&x, &mut o2]).unwrap().data);
        // Both sides, wherever the point is: (i, i) and (i, i + 1).
        assert_eq!(j.nnz(), 16);
    }
    // The plan of the first call serves every point.
    assert_eq!(sparse.info(&args![&vec![1.0; 9], &mut vec![0.0; 8]]).unwrap().colors, 2);
}

#[test]
fn plans_follow_the_shapes() {
    let m = parse_module(BROYDEN_RESIDUALS).unwrap();
    let sparse = SparseJacobianFn::builder(&m, "broyden").wrt(["x"]).build().unwrap();
    for n in [10, 20, 10, 1] {
        let j = sparse.jacobian(&mut args![&vec![1.0; n], &mut vec![0.0; n]]).unwrap();
        assert_eq!((j.rows(), j.nnz()), (n, (3 * n).saturating_sub(2)));
    }
}

#[test]
fn errors_are_in_the_users_terms() {
    // A loop whose trip count depends on x.
    let (m, spans) = parse_module_with_spans(
        "func @halve(x: f64) -> f64 {
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
    let h = SparseHessianFn::builder(&m, "halve").wrt(["x"]).source_map(&spans).build().unwrap();
    let err = h.hessian(&mut args![10.0]).unwrap_err();
    assert!(matches!(err, Error::Sparsity { .. }), "{err}");
    let text = err.to_string();
    assert!(text.starts_with("@halve: sparsity detection failed: a loop whose exit depends"), "{text}");
    assert!(text.contains("line 8, column 5"), "{text}");

    // A fault at the arguments is the function's own fault.
    let m = parse_module(BROYDEN_RESIDUALS).unwrap();
    let f = SparseJacobianFn::builder(&m, "broyden").wrt(["x"]).build().unwrap();
    let err = f.jacobian(&mut args![&[1.0; 4], &mut [0.0; 3]]).unwrap_err();
    assert!(matches!(err, Error::Fault { in_derivative: false, .. }), "{err}");
    assert!(err.to_string().starts_with("@broyden: index 3 out of bounds"), "{err}");

    // No f64 result: no Hessian.
    let err = SparseHessianFn::builder(&m, "broyden").wrt(["x"]).build().unwrap_err();
    assert!(matches!(err, Error::NoFloatResult { .. }), "{err}");
    // Buffers are checked.
    let m = parse_module(CHAINED_ROSENBROCK).unwrap();
    let h = SparseHessianFn::builder(&m, "rosenbrock").wrt(["x"]).build().unwrap();
    let err = h.hessian_with_gradient(&mut args![&[1.0; 3]], &mut [0.0; 2], &mut CsrMatrix::default()).unwrap_err();
    assert!(matches!(err, Error::BufferLength { .. }), "{err}");
}

#[test]
fn no_allocation_per_call_after_the_first() {
    let m = parse_module(BROYDEN_RESIDUALS).unwrap();
    let jac = SparseJacobianFn::builder(&m, "broyden").wrt(["x"]).width(2).build().unwrap();
    let (x, mut r) = (vec![0.5; 100], vec![0.0; 100]);
    let mut j = CsrMatrix::default();
    jac.jacobian_into(&mut args![&x, &mut r], &mut j).unwrap();
    let before = allocations_on_this_thread();
    for _ in 0..100 {
        jac.jacobian_into(&mut args![&x, &mut r], &mut j).unwrap();
    }
    assert_eq!(allocations_on_this_thread() - before, 0, "sparse Jacobian (2 sweeps)");
    let by_rows = SparseJacobianFn::builder(&parse_module(BROYDEN_RESIDUALS).unwrap(), "broyden")
        .wrt(["x"])
        .width(2)
        .build()
        .unwrap()
        .with_mode(JacobianMode::Reverse);
    by_rows.jacobian_into(&mut args![&x, &mut r], &mut j).unwrap();
    let before = allocations_on_this_thread();
    for _ in 0..100 {
        by_rows.jacobian_into(&mut args![&x, &mut r], &mut j).unwrap();
    }
    assert_eq!(allocations_on_this_thread() - before, 0, "sparse Jacobian by rows (2 pullback sweeps)");

    let m = parse_module(CHAINED_ROSENBROCK).unwrap();
    let hess = SparseHessianFn::builder(&m, "rosenbrock").wrt(["x"]).width(2).build().unwrap();
    let mut g = vec![0.0; 100];
    let mut h = CsrMatrix::default();
    hess.hessian_with_gradient(&mut args![&x], &mut g, &mut h).unwrap();
    let before = allocations_on_this_thread();
    for _ in 0..100 {
        hess.hessian_with_gradient(&mut args![&x], &mut g, &mut h).unwrap();
    }
    assert_eq!(allocations_on_this_thread() - before, 0, "sparse Hessian (2 sweeps)");
}

#[test]
fn handles_are_shared_between_threads() {
    let m = parse_module(CHAINED_ROSENBROCK).unwrap();
    let h = std::sync::Arc::new(SparseHessianFn::builder(&m, "rosenbrock").wrt(["x"]).build().unwrap());
    let reference = h.hessian(&mut args![&vec![0.3; 64]]).unwrap();
    std::thread::scope(|scope| {
        for t in 0..4 {
            let h = h.clone();
            let reference = &reference;
            scope.spawn(move || {
                // Different shapes on different threads: each gets its own plan, results agree.
                let n = if t % 2 == 0 { 64 } else { 32 };
                let hessian = h.hessian(&mut args![&vec![0.3; n]]).unwrap();
                if n == 64 {
                    assert_eq!(&hessian, reference);
                }
                assert_eq!(hessian.nnz(), 3 * n - 2);
            });
        }
    });
}

/// Random generated programs (smooth, with kinks and branches on floats, general): the
/// detected pattern covers every nonzero of the dense derivative at the generated point and at
/// perturbed points, and the compressed evaluation gives the dense values.
/// `JITDIFF_SPARSE_CASES=n` for a longer run.
fn random_cases(
    salt: u64,
    default_cases: usize,
    mut check: impl FnMut(&str, &Module, &str, &[bool], &[ArgSpec], &mut SplitMix64) -> Option<bool>,
) {
    let mut rng = SplitMix64::new(0x5eed ^ salt);
    let cases = std::env::var("JITDIFF_SPARSE_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(default_cases);
    let (mut checked, mut refused) = (0, 0);
    for case in 0..cases {
        let cfg = match case % 3 {
            0 => GenConfig::smooth(),
            1 => GenConfig::piecewise(),
            _ => GenConfig { allow_externs: false, allow_vectors: false, ..GenConfig::default() },
        };
        let streams: Vec<Vec<u32>> =
            (0..3).map(|_| (0..256).map(|_| (rng.next_u64() >> 32) as u32).collect()).collect();
        let (module, entry, specs) = generate_case(&cfg, &streams);
        let wrt: Vec<bool> = specs.iter().map(|s| matches!(s, ArgSpec::F64(_) | ArgSpec::Slice(_))).collect();
        if !wrt.iter().any(|&w| w) {
            continue;
        }
        for point in 0..3 {
            let mut values: Vec<ArgSpec> = specs.clone();
            if point > 0 {
                for v in values.iter_mut() {
                    match v {
                        ArgSpec::F64(x) => *x += rng.uniform_in(-0.5, 0.5),
                        ArgSpec::Slice(s) => s.iter_mut().for_each(|x| *x += rng.uniform_in(-0.5, 0.5)),
                        _ => {}
                    }
                }
            }
            match check(&format!("case {case}, point {point}"), &module, &entry, &wrt, &values, &mut rng) {
                Some(true) => checked += 1,
                Some(false) => refused += 1,
                None => {}
            }
        }
    }
    eprintln!("random programs: {checked} points checked, {refused} refused");
    assert!(checked >= cases / 2, "only {checked} points checked ({refused} refused)");
}

#[test]
fn random_programs_jacobian_structural_zeros_are_zero() {
    let externs = standard_extern_registry();
    random_cases(0, 150, |what, module, entry, wrt, values, _| {
        let sparse = SparseJacobianFn::builder(module, entry).wrt_mask(wrt).externs(&externs).build().ok()?;
        let dense = JacobianFn::builder(module, entry).wrt_mask(wrt).externs(&externs).build().ok()?;
        let (mut a, mut b) = (values.to_vec(), values.to_vec());
        let d = dense.jacobian(&mut as_args(&mut b)).ok()?;
        let finite = outputs_finite(module, entry, values, &externs);
        match sparse.jacobian(&mut as_args(&mut a)) {
            Ok(j) => {
                assert_matches_dense_where(&format!("{what}:\n{module}"), &j, &d.data, finite);
                // Row compression: the same pattern, the same values to rounding.
                let by_rows = SparseJacobianFn::builder(module, entry)
                    .wrt_mask(wrt)
                    .externs(&externs)
                    .build()
                    .unwrap()
                    .with_mode(JacobianMode::Reverse);
                let mut c = values.to_vec();
                let r = by_rows.jacobian(&mut as_args(&mut c)).unwrap_or_else(|e| panic!("{what}: {e}\n{module}"));
                assert_eq!(r.pattern(), j.pattern(), "{what}");
                assert_matches_dense_where(&format!("{what}, by rows:\n{module}"), &r, &d.data, finite);
                Some(true)
            }
            Err(Error::Sparsity { .. }) => Some(false),
            Err(e) => panic!("{what}: {e}\n{module}"),
        }
    });
}

#[test]
fn random_programs_hessian_structural_zeros_are_zero() {
    random_cases(1, 60, |what, module, entry, wrt, values, _| {
        let sparse = SparseHessianFn::builder(module, entry).wrt_mask(wrt).build().ok()?;
        let dense = HvpFn::builder(module, entry).wrt_mask(wrt).width(4).build().ok()?;
        let (mut a, mut b) = (values.to_vec(), values.to_vec());
        let d = dense.hessian(&mut as_args(&mut b)).ok()?;
        match sparse.hessian(&mut as_args(&mut a)) {
            Ok(h) => {
                assert_matches_dense(&format!("{what}:\n{module}"), &h, &d);
                Some(true)
            }
            Err(Error::Sparsity { .. }) => Some(false),
            Err(e) => panic!("{what}: {e}\n{module}"),
        }
    });
}

/// Whether every output of `entry` at `values` — its results and the final contents of its
/// `mslice` parameters — is finite (by the interpreter).
fn outputs_finite(module: &Module, entry: &str, values: &[ArgSpec], externs: &ExternRegistry) -> bool {
    let mut args: Vec<ArgValue> = values
        .iter()
        .map(|v| match v {
            ArgSpec::F64(x) => ArgValue::F64(*x),
            ArgSpec::I64(x) => ArgValue::I64(*x),
            ArgSpec::Bool(x) => ArgValue::Bool(*x),
            ArgSpec::Slice(s) => ArgValue::Slice(s.clone()),
            ArgSpec::SliceMut(s) => ArgValue::SliceMut(s.clone()),
        })
        .collect();
    let Ok(results) = Interpreter::new(module).with_externs(externs).call(entry, &mut args) else {
        return false;
    };
    results.iter().all(|r| r.as_f64().is_none_or(f64::is_finite))
        && args.iter().all(|a| !matches!(a, ArgValue::SliceMut(s) if s.iter().any(|x| !x.is_finite())))
}

fn as_args(values: &mut [ArgSpec]) -> Vec<Arg<'_>> {
    values
        .iter_mut()
        .map(|v| match v {
            ArgSpec::F64(x) => Arg::F64(*x),
            ArgSpec::I64(x) => Arg::I64(*x),
            ArgSpec::Bool(x) => Arg::Bool(*x),
            ArgSpec::Slice(s) => Arg::Slice(s),
            ArgSpec::SliceMut(s) => Arg::SliceMut(s),
        })
        .collect()
}

#[test]
fn wrt_orders_inputs_and_outputs_as_documented() {
    // f(a, s, b, out): out[0] = a * s[1], result = b * s[0]. Inputs a, s[0], s[1], b; outputs
    // the result, then out[0], out[1] (out is not differentiated: out[1] is a constant).
    let m = parse_module(
        "func @f(a: f64, s: slice, b: f64, out: mslice) -> f64 {
entry:
    zero = iconst 0
    one = iconst 1
    s0 = load s, zero
    s1 = load s, one
    p = fmul a, s1
    store out, zero, p
    r = fmul b, s0
    ret r
}",
    )
    .unwrap();
    let f = SparseJacobianFn::builder(&m, "f").wrt(["a", "s", "b"]).build().unwrap();
    let mut out = [0.0; 2];
    let j = f.jacobian(&mut args![2.0, &[3.0, 5.0], 7.0, &mut out]).unwrap();
    assert_eq!((j.rows(), j.cols()), (3, 4));
    assert_eq!(j.to_dense(), [0.0, 7.0, 0.0, 3.0, 5.0, 0.0, 2.0, 0.0, 0.0, 0.0, 0.0, 0.0]);
    assert_eq!(j.nnz(), 4);
}

#[allow(dead_code)] // the example's `main`
#[path = "../../examples/sparse_newton.rs"]
mod sparse_newton;

#[test]
fn the_sparse_newton_example_converges() {
    let n = 2000;
    let start: Vec<f64> = (0..n).map(|i| if i % 2 == 0 { 0.5 } else { 1.0 }).collect();
    let outcome = sparse_newton::run(n, &start, false);
    assert!(outcome.gradient_norm < 1e-8, "|g| = {}", outcome.gradient_norm);
    assert!(outcome.iterations <= 20, "{} iterations", outcome.iterations);
    assert!(outcome.x.iter().all(|v| (v - 1.0).abs() < 1e-8));
}

#[test]
fn a_differentiated_mslice_is_an_input_and_an_output() {
    // s[1] = s[0] * s[1] in place; returns s[0] + s[1] (the new s[1]).
    let m = parse_module(
        "func @f(s: mslice) -> f64 {
entry:
    i = iconst 0
    j = iconst 1
    a = load s, i
    b = load s, j
    p = fmul a, b
    store s, j, p
    r = fadd a, p
    ret r
}",
    )
    .unwrap();
    let sparse = SparseJacobianFn::builder(&m, "f").wrt(["s"]).width(1).build().unwrap();
    let dense = JacobianFn::builder(&m, "f").wrt(["s"]).build().unwrap();
    let (mut s1, mut s2) = ([2.0, 5.0, 7.0], [2.0, 5.0, 7.0]);
    let j = sparse.jacobian(&mut args![&mut s1]).unwrap();
    let d = dense.jacobian(&mut args![&mut s2]).unwrap();
    assert_eq!(s1, s2, "the mslice ends as one call leaves it");
    assert_eq!(s1, [2.0, 10.0, 7.0]);
    // Rows: the result, s[0], s[1], s[2] (final); columns: s[0], s[1], s[2] (initial).
    assert_matches_dense("in place", &j, &d.data);
    assert_eq!(j.nnz(), 2 + 1 + 2 + 1);
    assert_eq!(sparse.info(&args![&mut s1]).unwrap().sweeps, 2);
}

/// A data table is constant: `out[i] = w[i] x[i]^2` with `w` a table has a diagonal pattern,
/// and the sparse Jacobian equals the dense one.
#[test]
fn data_tables_are_constants_in_the_pattern() {
    let m = jitdiff::front::lower_source(
        "const W: [f64; 4] = [0.5, -1.0, 2.0, 0.25];
         fn weighted(x: &[f64], out: &mut [f64]) {
             for i in 0..W.len() {
                 out[i] = W[i] * x[i] * x[i];
             }
         }",
    )
    .unwrap();
    let sparse = SparseJacobianFn::builder(&m, "weighted").wrt(["x"]).build().unwrap();
    let dense = JacobianFn::builder(&m, "weighted").wrt(["x"]).build().unwrap();
    let x = [1.0, 2.0, 3.0, 4.0];
    let (mut r1, mut r2) = (vec![0.0; 4], vec![0.0; 4]);
    let s = sparse.jacobian(&mut args![&x, &mut r1]).unwrap();
    let d = dense.jacobian(&mut args![&x, &mut r2]).unwrap();
    assert_eq!(s.nnz(), 4);
    assert_eq!(s.to_dense(), d.data);
}

/// A CSR matrix built from the wrong number of values, or multiplied with vectors of the wrong
/// lengths, is an error that names the list and the shape, never a panic; an empty row gives
/// +0.0.
#[test]
fn csr_shape_errors_name_the_list() {
    use jitdiff::ad::sparsity::Pattern;
    use std::sync::Arc;
    let pattern = Arc::new(Pattern::from_rows(3, [vec![0, 2], vec![]]));
    let err = CsrMatrix::new(pattern.clone(), vec![1.0]).unwrap_err();
    assert!(matches!(err, Error::MatrixShape { expected: 2, got: 1, rows: 2, cols: 3, .. }), "{err}");
    assert!(err.to_string().contains("2×3"), "{err}");
    let m = CsrMatrix::new(pattern, vec![1.0, 2.0]).unwrap();
    let mut y = [f64::NAN; 2];
    let err = m.mul_vec(&[1.0; 2], &mut y).unwrap_err();
    assert!(err.to_string().starts_with("x (one value per column) must hold 3"), "{err}");
    let err = m.mul_vec(&[1.0; 3], &mut [0.0; 3]).unwrap_err();
    assert!(err.to_string().starts_with("y (one value per row) must hold 2"), "{err}");
    assert!(y.iter().all(|v| v.is_nan()), "nothing written on an error");
    m.mul_vec(&[1.0, 5.0, -1.0], &mut y).unwrap();
    assert_eq!(y, [-1.0, 0.0]);
    assert!(y[1].is_sign_positive(), "an empty row is +0.0, not the -0.0 of an empty sum");
    // A pattern with a column beyond its width, or offsets that do not fit, is refused.
    let wide = Arc::new(Pattern::from_rows(2, [vec![5]]));
    let err = CsrMatrix::new(wide, vec![1.0]).unwrap_err();
    assert!(matches!(err, Error::Pattern(_)) && err.to_string().contains("column 5"), "{err}");
    let short = Arc::new(Pattern { rows: 3, cols: 3, row_ptr: vec![0], col_idx: vec![] });
    assert!(matches!(CsrMatrix::new(short, vec![]), Err(Error::Pattern(_))));
}
