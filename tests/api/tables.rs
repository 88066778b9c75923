//! Data tables end to end: MGH problem 8 (Bard) with its 15 measurements as a table
//! (`examples/ir/bard_table.ir`, a loop reading `table @y`) against the catalogue's version with
//! the rows written out as `fconst`s (`problems/ir/mgh/08_bard.ir`): the same value, gradient,
//! JVPs (scalar and W lanes) and Hessian-vector products, in the interpreter and compiled; and
//! the compile times of the two, printed.

use jitdiff::ir::{ArgValue, ExternRegistry, Interpreter, Module, RuntimeValue, parse_module};
use jitdiff::jit::{Arg, JitOptions, compile};
use jitdiff::{ForwardFn, GradientFn, HvpFn};
use std::time::{Duration, Instant};

const TABLE: &str = include_str!("../../examples/ir/bard_table.ir");

fn unrolled() -> Module {
    let bard = jitdiff_problems::mgh::problems().into_iter().find(|p| p.number == 8).expect("MGH 8 is Bard");
    parse_module(bard.ir).unwrap()
}

fn table() -> Module {
    parse_module(TABLE).unwrap()
}

/// Points around the standard start (1, 1, 1), the minimiser, and a few others.
fn points() -> Vec<[f64; 3]> {
    vec![
        [1.0, 1.0, 1.0],
        [0.0824105765758334, 1.133036653471504, 2.343694638941154],
        [-0.3, 2.5, 0.7],
        [2.0, -1.5, 4.0],
        [0.5, 0.25, -3.0],
    ]
}

/// Same within `rel` relative to the larger magnitude (or both exactly equal).
fn close(a: f64, b: f64, rel: f64) -> bool {
    a.to_bits() == b.to_bits() || (a - b).abs() <= rel * a.abs().max(b.abs())
}

#[test]
fn the_table_version_has_the_catalogues_value_bit_for_bit() {
    let (u, t) = (unrolled(), table());
    let bard = jitdiff_problems::mgh::problems().into_iter().find(|p| p.number == 8).unwrap();
    let (cu, ct) = (
        compile(&u, &ExternRegistry::new(), &JitOptions::new()).unwrap(),
        compile(&t, &ExternRegistry::new(), &JitOptions::new()).unwrap(),
    );
    for x in points() {
        let interp = |m: &Module| Interpreter::new(m).call("f", &mut [ArgValue::Slice(x.to_vec())]).unwrap();
        let (a, b) = (interp(&u), interp(&t));
        assert_eq!(a, b, "interpreter at {x:?}");
        let native = |c: &jitdiff::jit::CompiledModule| c.function("f").unwrap().call(&mut [Arg::Slice(&x)]).unwrap();
        assert_eq!(native(&cu), a, "unrolled, native at {x:?}");
        assert_eq!(native(&ct), a, "table, native at {x:?}");
        assert_eq!(a, vec![RuntimeValue::F64((bard.value)(&x))], "plain Rust at {x:?}");
    }
}

#[test]
fn gradients_agree_with_the_unrolled_version() {
    let gu = GradientFn::builder(&unrolled(), "f").wrt_mask(&[true]).build().unwrap();
    let gt = GradientFn::builder(&table(), "f").wrt_mask(&[true]).build().unwrap();
    let mut identical = 0;
    for x in points() {
        let (mut du, mut dt) = ([0.0; 3], [0.0; 3]);
        let vu = gu.value_and_grad(&mut [Arg::Slice(&x)], &mut du).unwrap();
        let vt = gt.value_and_grad(&mut [Arg::Slice(&x)], &mut dt).unwrap();
        assert_eq!(vu.to_bits(), vt.to_bits(), "value at {x:?}");
        for k in 0..3 {
            assert!(close(du[k], dt[k], 1e-15), "d/dx{k} at {x:?}: {} vs {}", du[k], dt[k]);
            identical += usize::from(du[k].to_bits() == dt[k].to_bits());
        }
    }
    println!("Bard gradients: {identical} of {} components bit-identical", 3 * points().len());
    // The table's values are constants: nothing of them is on the tape, and the table version
    // records no more than the unrolled one (a trip count, where that records its 15 calls).
    let x = [1.0, 1.0, 1.0];
    let mut d = [0.0; 3];
    gt.value_and_grad(&mut [Arg::Slice(&x)], &mut d).unwrap();
    let table_tape = gt.tape_bytes();
    gu.value_and_grad(&mut [Arg::Slice(&x)], &mut d).unwrap();
    assert!(table_tape <= gu.tape_bytes() + 16, "tape: table {table_tape} B, unrolled {} B", gu.tape_bytes());
}

#[test]
fn jvps_agree_with_the_unrolled_version_at_every_width() {
    let (u, t) = (unrolled(), table());
    for width in [1u8, 2, 4] {
        let fu = ForwardFn::builder(&u, "f").wrt_mask(&[true]).width(width).build().unwrap();
        let ft = ForwardFn::builder(&t, "f").wrt_mask(&[true]).width(width).build().unwrap();
        for x in points() {
            let ju = fu.jacobian(&mut [Arg::Slice(&x)]).unwrap();
            let jt = ft.jacobian(&mut [Arg::Slice(&x)]).unwrap();
            assert_eq!((jt.rows, jt.cols), (1, 3));
            for (a, b) in ju.data.iter().zip(&jt.data) {
                assert!(close(*a, *b, 1e-15), "width {width} at {x:?}: {a} vs {b}");
            }
            // And the reverse-mode gradient.
            let g = GradientFn::builder(&t, "f").wrt_mask(&[true]).build().unwrap();
            let mut d = [0.0; 3];
            g.value_and_grad(&mut [Arg::Slice(&x)], &mut d).unwrap();
            // Near the minimiser the gradient cancels to ~1e-9: compared on the scale of 1.
            for (a, b) in d.iter().zip(&jt.data) {
                assert!((a - b).abs() <= 1e-13 * a.abs().max(1.0), "forward vs reverse at {x:?}: {a} vs {b}");
            }
        }
    }
}

#[test]
fn hessian_vector_products_agree_with_the_unrolled_version() {
    let (u, t) = (unrolled(), table());
    for width in [1u8, 2] {
        let hu = HvpFn::builder(&u, "f").wrt_mask(&[true]).width(width).build().unwrap();
        let ht = HvpFn::builder(&t, "f").wrt_mask(&[true]).width(width).build().unwrap();
        for x in points() {
            let (a, b) = (hu.hessian(&mut [Arg::Slice(&x)]).unwrap(), ht.hessian(&mut [Arg::Slice(&x)]).unwrap());
            assert_eq!(a.len(), 9);
            for (p, q) in a.iter().zip(&b) {
                assert!(close(*p, *q, 1e-15), "width {width} at {x:?}: {p} vs {q}");
            }
            // Symmetric, as a Hessian is.
            for (i, j) in [(0, 1), (0, 2), (1, 2)] {
                assert!(close(b[3 * i + j], b[3 * j + i], 1e-12), "H[{i}][{j}] at {x:?}");
            }
        }
    }
}

/// The median of `runs` timings of `build`.
fn median_time(runs: usize, mut build: impl FnMut()) -> Duration {
    let mut times: Vec<Duration> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            build();
            start.elapsed()
        })
        .collect();
    times.sort();
    times[runs / 2]
}

#[test]
fn compile_times_of_the_table_and_the_unrolled_version() {
    // Printed, not asserted: timings depend on the machine and its load. Run with
    // `cargo test --test api tables -- --nocapture` to see them.
    let (u, t) = (unrolled(), table());
    let lines = |m: &Module| jitdiff::ir::print_module(m).lines().count();
    println!("Bard (MGH 8): IR lines: unrolled {}, table {}", lines(&u), lines(&t));
    let runs = 5;
    type Build = dyn Fn(&Module);
    let cases: [(&str, &Build); 4] = [
        ("primal", &|m| drop(compile(m, &ExternRegistry::new(), &JitOptions::new()).unwrap())),
        ("gradient", &|m| drop(GradientFn::builder(m, "f").wrt_mask(&[true]).build().unwrap())),
        ("jvp, W = 4", &|m| drop(ForwardFn::builder(m, "f").wrt_mask(&[true]).width(4).build().unwrap())),
        ("hvp", &|m| drop(HvpFn::builder(m, "f").wrt_mask(&[true]).width(1).build().unwrap())),
    ];
    for (what, build) in cases {
        let tu = median_time(runs, || build(&u));
        let tt = median_time(runs, || build(&t));
        println!(
            "Bard {what:>10}: unrolled {:>8.2} ms, table {:>8.2} ms ({:.1}x)",
            tu.as_secs_f64() * 1e3,
            tt.as_secs_f64() * 1e3,
            tu.as_secs_f64() / tt.as_secs_f64()
        );
    }
}

/// A constant array inside `#[jitdiff::module]` is a data table of the generated IR, and the
/// typed gradient reads it.
#[jitdiff::module]
mod weighted {
    const W: [f64; 4] = [0.5, -1.0, 2.0, 0.25];

    pub fn weighted_squares(x: &[f64]) -> f64 {
        let mut s = 0.0;
        for i in 0..W.len() {
            s += W[i] * x[i] * x[i];
        }
        s
    }
}

#[test]
fn a_const_array_in_an_attributed_module_is_a_table() {
    assert!(weighted::IR.contains("const @"), "{}", weighted::IR);
    let x = [1.0, 2.0, 3.0, 4.0];
    let (f, g) = weighted::weighted_squares::gradient().unwrap().value_and_grad(&x).unwrap();
    assert_eq!(f, weighted::weighted_squares(&x));
    assert_eq!(g, vec![1.0, -4.0, 12.0, 2.0]);
}
