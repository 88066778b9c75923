//! The compiled forward-mode API: JVPs, batched JVPs, Jacobians, shape errors, and no heap
//! allocation per call after the first.

use jitdiff::ir::{RuntimeValue, parse_module};
use jitdiff::jit::Arg;
use jitdiff::jit::alloc_count::{CountingAllocator, allocations_on_this_thread};
use jitdiff::{Error, ForwardFn};

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

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
        let f = ForwardFn::new(&m, "f", &[true], width).unwrap();
        let j = f.jacobian(&mut [Arg::Slice(&x)]).unwrap();
        assert_eq!((j.rows, j.cols), (3, 3));
        assert_eq!(j.data, expected, "width {width}");
    }
}

#[test]
fn batched_lanes_equal_scalar_sweeps() {
    let m = parse_module(VECTOR_FN).unwrap();
    let x = [0.3, -1.2, 2.0];
    let scalar = ForwardFn::new(&m, "f", &[true], 1).unwrap();
    let batched = ForwardFn::new(&m, "f", &[true], 4).unwrap();
    let dirs = [[1.0, 0.5, -2.0], [0.0, 1.0, 0.0], [0.25, 0.0, 3.0], [-1.0, -1.0, 1.0]];
    // Lane-major per element: element e holds the 4 directions' e-th entries.
    let mut interleaved: Vec<f64> = (0..3).flat_map(|e| dirs.iter().map(move |d| d[e])).collect();
    let (_, lanes) = batched.jvp(&mut [Arg::Slice(&x)], &mut [&mut interleaved]).unwrap();
    for (lane, d) in dirs.iter().enumerate() {
        let (values, t) = scalar.jvp(&mut [Arg::Slice(&x)], &mut [&mut d.clone()]).unwrap();
        assert_eq!(values[0], RuntimeValue::F64(x[0] * x[1]));
        for k in 0..3 {
            assert_eq!(lanes[k * 4 + lane].to_bits(), t[k].to_bits(), "result {k} lane {lane}");
        }
    }
}

#[test]
fn wrong_tangent_shapes_are_errors() {
    let m = parse_module(VECTOR_FN).unwrap();
    let f = ForwardFn::new(&m, "f", &[true], 2).unwrap();
    let x = [1.0, 2.0, 3.0];
    let err = f.jvp(&mut [Arg::Slice(&x)], &mut [&mut [1.0, 2.0]]).unwrap_err();
    assert!(matches!(err, Error::Shape { expected: 6, got: 2, .. }), "{err}");
    let err = f.jvp(&mut [Arg::Slice(&x)], &mut []).unwrap_err();
    assert!(err.to_string().contains("one per differentiated parameter"), "{err}");
    let err = ForwardFn::new(&m, "f", &[true], 3).err().expect("width 3 is rejected");
    assert!(err.to_string().contains("width 3"), "{err}");
}

#[test]
fn jvp_into_allocates_nothing_after_the_first_call() {
    let m = parse_module(jitdiff::problems::rosenbrock::ROSENBROCK_IR).unwrap();
    let x = jitdiff::problems::rosenbrock::standard_start(100);
    let mut t: Vec<f64> = (0..x.len() * 8).map(|i| (i % 7) as f64).collect();
    let f = ForwardFn::new(&m, "rosenbrock", &[true], 8).unwrap();
    let mut out = f.output();
    f.jvp_into(&mut [Arg::Slice(&x)], &mut [&mut t], &mut out).unwrap();
    let before = allocations_on_this_thread();
    for _ in 0..10_000 {
        f.jvp_into(&mut [Arg::Slice(&x)], &mut [&mut t], &mut out).unwrap();
    }
    let after = allocations_on_this_thread();
    assert_eq!(after - before, 0, "jvp_into allocated {} times in 10,000 calls", after - before);
}
