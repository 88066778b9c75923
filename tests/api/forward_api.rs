//! The compiled forward-mode API: JVPs, batched JVPs, Jacobians, shape errors, no heap
//! allocation per call after the first, and the in/out tangent of an `mslice`.

use jitdiff::ir::{ExternRegistry, RuntimeValue, parse_module};
use jitdiff::jit::alloc_count::allocations_on_this_thread;
use jitdiff::jit::{Arg, JitOptions, compile};
use jitdiff::{Error, ForwardFn};

/// f(x) = (x0 * x1, sin(x2), x0 + x1 + x2) for a slice x of length 3.
const VECTOR_FN: &str = "
func @f(x: slice) -> f64, f64, f64 {
entry:
    i0 = iconst 0
    i1 = iconst 1
    i2 = iconst 2
    a = load x, i0
    b = load x, i1
    c = load x, i2
    p = fmul a, b
    s = sin c
    t = fadd a, b
    u = fadd t, c
    ret p, s, u
}";

#[test]
fn jacobian_is_exact_at_every_width() {
    let m = parse_module(VECTOR_FN).unwrap();
    let x = [2.0, 3.0, 0.5];
    let expected = [3.0, 2.0, 0.0, 0.0, 0.0, 0.5f64.cos(), 1.0, 1.0, 1.0];
    for width in [1, 2, 4, 8, 16] {
        let f = ForwardFn::builder(&m, "f").wrt_mask(&[true]).width(width).build().unwrap();
        let j = f.jacobian(&mut [Arg::Slice(&x)]).unwrap();
        assert_eq!((j.rows, j.cols), (3, 3));
        assert_eq!(j.data, expected, "width {width}");
    }
}

#[test]
fn batched_lanes_equal_scalar_sweeps() {
    let m = parse_module(VECTOR_FN).unwrap();
    let x = [0.3, -1.2, 2.0];
    let scalar = ForwardFn::builder(&m, "f").wrt_mask(&[true]).width(1).build().unwrap();
    let batched = ForwardFn::builder(&m, "f").wrt_mask(&[true]).width(4).build().unwrap();
    let dirs = [[1.0, 0.5, -2.0], [0.0, 1.0, 0.0], [0.25, 0.0, 3.0], [-1.0, -1.0, 1.0]];
    // Lane-major per element: element e holds the 4 directions' e-th entries.
    let interleaved: Vec<f64> = (0..3).flat_map(|e| dirs.iter().map(move |d| d[e])).collect();
    let (_, lanes) = batched.jvp(&mut [Arg::Slice(&x)], &[&interleaved]).unwrap();
    for (lane, d) in dirs.iter().enumerate() {
        let (values, t) = scalar.jvp(&mut [Arg::Slice(&x)], &[&d.clone()]).unwrap();
        assert_eq!(values[0], RuntimeValue::F64(x[0] * x[1]));
        for k in 0..3 {
            assert_eq!(lanes[k * 4 + lane].to_bits(), t[k].to_bits(), "result {k} lane {lane}");
        }
    }
}

#[test]
fn wrong_tangent_shapes_are_errors() {
    let m = parse_module(VECTOR_FN).unwrap();
    let f = ForwardFn::builder(&m, "f").wrt_mask(&[true]).width(2).build().unwrap();
    let x = [1.0, 2.0, 3.0];
    let err = f.jvp(&mut [Arg::Slice(&x)], &[&[1.0, 2.0]]).unwrap_err();
    assert!(matches!(err, Error::BufferLength { expected: 6, got: 2, .. }), "{err}");
    assert!(err.to_string().contains("2 lane(s) per element of `x`, which has 3"), "{err}");
    let err = f.jvp(&mut [Arg::Slice(&x)], &[]).unwrap_err();
    assert!(err.to_string().contains("one per differentiated parameter"), "{err}");
    let err = ForwardFn::builder(&m, "f").wrt_mask(&[true]).width(3).build().expect_err("width 3 is rejected");
    assert!(err.to_string().contains("width 3"), "{err}");
}

#[test]
fn jvp_into_allocates_nothing_after_the_first_call() {
    let m = parse_module(jitdiff_problems::rosenbrock::ROSENBROCK_IR).unwrap();
    let x = jitdiff_problems::rosenbrock::standard_start(100);
    let t: Vec<f64> = (0..x.len() * 8).map(|i| (i % 7) as f64).collect();
    let f = ForwardFn::builder(&m, "rosenbrock").wrt_mask(&[true]).width(8).build().unwrap();
    let mut out = f.output();
    f.jvp_into(&mut [Arg::Slice(&x)], &[&t], &mut out).unwrap();
    let before = allocations_on_this_thread();
    for _ in 0..10_000 {
        f.jvp_into(&mut [Arg::Slice(&x)], &[&t], &mut out).unwrap();
    }
    let after = allocations_on_this_thread();
    assert_eq!(after - before, 0, "jvp_into allocated {} times in 10,000 calls", after - before);
}

/// An in-place update: `s[i] = h sin(s[i]) + (s[0] + ... + s[i-1])` (old values), returning the
/// sum of the old values.
const IN_PLACE: &str = "
func @step(s: mslice, h: f64) -> f64 {
entry:
    zero = iconst 0
    one = iconst 1
    n = len s
    acc0 = fconst 0.0
    jump head(zero, acc0)
head(i: i64, acc: f64):
    more = icmp lt i, n
    br more, body, exit
body:
    x = load s, i
    sx = sin x
    y = fmul sx, h
    z = fadd y, acc
    store s, i, z
    acc2 = fadd acc, x
    i2 = iadd i, one
    jump head(i2, acc2)
exit:
    ret acc
}";

/// The outputs of `@step` (its result, then the final contents of `s`) by the compiled primal.
fn step_outputs(f: &jitdiff::jit::CompiledFn, s: &[f64], h: f64) -> Vec<f64> {
    let mut s = s.to_vec();
    let r = f.call(&mut [Arg::SliceMut(&mut s), Arg::F64(h)]).unwrap()[0].as_f64().unwrap();
    std::iter::once(r).chain(s).collect()
}

#[test]
fn the_tangent_of_an_mslice_is_an_in_out_buffer_matching_central_differences() {
    let m = parse_module(IN_PLACE).unwrap();
    let compiled = compile(&m, &ExternRegistry::new(), &JitOptions::new()).unwrap();
    let primal = compiled.function("step").unwrap();
    let (s0, h) = ([0.3, -1.1, 2.0, 0.7], 0.8);
    let n = s0.len();
    let dirs: [([f64; 4], f64); 4] = [
        ([1.0, 0.0, 0.0, 0.0], 0.0),
        ([0.0, 0.0, 0.0, 0.0], 1.0),
        ([0.5, -0.25, 1.0, 2.0], -0.5),
        ([0.0, 1.0, -1.0, 0.0], 0.25),
    ];
    for width in [1usize, 4] {
        let f = ForwardFn::builder(&m, "step").wrt_mask(&[true, true]).width(width as u8).build().unwrap();
        // Lane l of element e is direction l's component e.
        let ds: Vec<f64> = (0..n).flat_map(|e| dirs[..width].iter().map(move |d| d.0[e])).collect();
        let dh: Vec<f64> = dirs[..width].iter().map(|d| d.1).collect();
        let mut s = s0;
        let (values, tangents) = f.jvp(&mut [Arg::SliceMut(&mut s), Arg::F64(h)], &[&ds, &dh]).unwrap();
        // The result's W lanes, then the tangent of the final contents of `s` (W per element).
        let (result_tangent, ds) = tangents.split_at(width);
        // The primal is updated in place as one call of @step updates it.
        let once = step_outputs(&primal, &s0, h);
        assert_eq!(values, [RuntimeValue::F64(once[0])]);
        assert_eq!(s[..], once[1..]);
        for (lane, (d, dh)) in dirs[..width].iter().enumerate() {
            // Central differences of every output along this direction.
            let eps = 1e-6;
            let moved = |t: f64| {
                let s: Vec<f64> = s0.iter().zip(d).map(|(x, dx)| x + t * dx).collect();
                step_outputs(&primal, &s, h + t * dh)
            };
            let (plus, minus) = (moved(eps), moved(-eps));
            let fd: Vec<f64> = plus.iter().zip(&minus).map(|(p, q)| (p - q) / (2.0 * eps)).collect();
            // The result's tangent, then the tangent of the mslice's final contents, element by element.
            let ad: Vec<f64> =
                std::iter::once(result_tangent[lane]).chain(ds.iter().skip(lane).step_by(width).copied()).collect();
            for (k, (a, b)) in ad.iter().zip(&fd).enumerate() {
                assert!(
                    (a - b).abs() <= 1e-7 * (1.0 + b.abs()),
                    "W = {width}, lane {lane}, output {k}: AD {a} vs FD {b}"
                );
            }
        }
    }
}

#[test]
fn jacobian_of_an_in_place_update_has_a_row_per_mslice_element_and_restores_between_sweeps() {
    let m = parse_module(IN_PLACE).unwrap();
    let compiled = compile(&m, &ExternRegistry::new(), &JitOptions::new()).unwrap();
    let primal = compiled.function("step").unwrap();
    let (s0, h) = ([0.3, -1.1, 2.0], 0.8);
    let once = step_outputs(&primal, &s0, h);
    for width in [1, 2, 4] {
        let f = ForwardFn::builder(&m, "step").wrt_mask(&[true, true]).width(width).build().unwrap();
        let mut s = s0;
        let j = f.jacobian(&mut [Arg::SliceMut(&mut s), Arg::F64(h)]).unwrap();
        // Rows: the result, then s[0..3] after the call; columns: s[0..3] before, then h.
        assert_eq!((j.rows, j.cols), (4, 4), "width {width}");
        assert_eq!(s[..], once[1..], "width {width}: the sweeps must each start from the given s");
        let (c, sn) = (s0.map(f64::cos), s0.map(f64::sin));
        let expected = [
            [1.0, 1.0, 1.0, 0.0],
            [h * c[0], 0.0, 0.0, sn[0]],
            [1.0, h * c[1], 0.0, sn[1]],
            [1.0, 1.0, h * c[2], sn[2]],
        ];
        for (r, row) in expected.iter().enumerate() {
            for (col, want) in row.iter().enumerate() {
                assert!(
                    (j.get(r, col) - want).abs() <= 1e-15,
                    "width {width}: J[{r}][{col}] = {} vs {want}",
                    j.get(r, col)
                );
            }
        }
    }
}
