//! Calls between functions (any order, recursion), tuple results, `&mut` slices, externs.

use crate::support::{Rng, lower, run_with};
use crate::{dual, same};
use jitdiff_ir::{ArgValue, ExternRegistry, RuntimeValue};

dual! { CALLS:
    fn caller(x: f64, n: i64) -> f64 {
        let (s, c) = polar(x);
        helper(s, c) + fact(n) as f64 + fib(n as usize) as f64
    }
    fn helper(a: f64, b: f64) -> f64 {
        a * a - b
    }
    fn polar(x: f64) -> (f64, f64) {
        (x.sin() * 2.0, x.cos())
    }
    fn fact(n: i64) -> i64 {
        if n <= 1 { 1 } else { n * fact(n - 1) }
    }
    fn fib(n: usize) -> usize {
        if n < 2 {
            return n;
        }
        fib(n - 1) + fib(n - 2)
    }
    fn even(n: i64) -> bool {
        if n == 0 { true } else { odd(n - 1) }
    }
    fn odd(n: i64) -> bool {
        if n == 0 { false } else { even(n - 1) }
    }
}

#[test]
fn calls_in_any_order_and_recursion() {
    let m = lower(CALLS);
    for (x, n) in [(0.5, 0i64), (1.25, 5), (-2.0, 10)] {
        same!(m, caller(x, n));
    }
    for n in [0i64, 1, 10, 31] {
        same!(m, even(n));
    }
}

dual! { MUTATION:
    fn axpy(a: f64, x: &[f64], y: &mut [f64]) {
        for i in 0..y.len() {
            y[i] += a * x[i];
        }
    }
    fn twice(x: &[f64], out: &mut [f64]) -> f64 {
        axpy(2.0, x, out);
        let mut local = [0.0; 4];
        axpy(1.0, x, &mut local);
        axpy(-0.5, &local, out);
        out[0] = out[0] - 1.0;
        out[out.len() - 1] *= 3.0;
        local.iter().sum()
    }
}

#[test]
fn mutable_slices_and_local_arrays_passed_to_calls() {
    let m = lower(MUTATION);
    let mut rng = Rng::new(4);
    let x = rng.normals(4);
    let out = rng.normals(4);
    let mut native = out.clone();
    let want = twice(&x, &mut native);
    let mut args = [ArgValue::Slice(x.clone()), ArgValue::SliceMut(out)];
    let got = crate::support::run(&m, "twice", &mut args);
    assert_eq!(got, vec![RuntimeValue::F64(want)]);
    assert_eq!(args[1], ArgValue::SliceMut(native));
}

/// The native function behind the extern of `EXTERN_SOURCE`.
fn bessel_j0(x: f64) -> f64 {
    // A stand-in with the right shape: the series' first terms.
    1.0 - x * x / 4.0 + x.powi(4) / 64.0
}

extern "C" fn bessel_j0_c(x: f64) -> f64 {
    bessel_j0(x)
}

fn uses_extern(x: f64) -> f64 {
    let j = bessel_j0(x);
    if j < 0.0 { -j } else { j }
}

const EXTERN_SOURCE: &str = r#"
unsafe extern "C" {
    fn bessel_j0(x: f64) -> f64;
}

fn uses_extern(x: f64) -> f64 {
    let j = unsafe { bessel_j0(x) };
    if j < 0.0 { -j } else { j }
}
"#;

#[test]
fn extern_blocks_become_ir_externs() {
    let m = lower(EXTERN_SOURCE);
    assert_eq!(m.externs.len(), 1);
    assert_eq!(m.externs[0].name, "bessel_j0");
    let mut registry = ExternRegistry::new();
    registry.register_f1("bessel_j0", bessel_j0_c);
    for x in [0.0, 1.0, 2.5, 4.0] {
        let got = run_with(&m, "uses_extern", &mut [ArgValue::F64(x)], Some(&registry));
        assert_eq!(got, vec![RuntimeValue::F64(uses_extern(x))]);
    }
    // The 2021 spelling, without `unsafe`, is accepted too.
    let old = lower("extern \"C\" { fn g(x: f64, n: i64) -> f64; }\nfn f(x: f64) -> f64 { unsafe { g(x, 2) } }");
    assert_eq!(m.externs[0].params.len() + 1, old.externs[0].params.len());
}

dual! { RAW_IDENTIFIERS:
    fn r#match(r#in: f64, é: f64) -> f64 {
        let r#loop = r#in * 2.0;
        loop_twice(r#loop) + é
    }
    fn loop_twice(x: f64) -> f64 {
        r#match_helper(x) * 2.0
    }
    fn r#match_helper(x: f64) -> f64 {
        x + 1.0
    }
}

#[test]
fn raw_identifiers_and_non_ascii_locals() {
    let m = lower(RAW_IDENTIFIERS);
    assert!(m.func_by_name("match").is_some());
    same!(m, r#match(1.5, 0.25));
}

dual! { LOCAL_CLOSURES:
    fn closures(x: f64, y: f64) -> f64 {
        let sq = |v: f64| v * v;
        let scale = 2.0;
        let affine = |v: f64, w: f64| scale * v + w;
        // Shadowing after the definition does not change what `affine` reads.
        let scale = 10.0;
        let mut s = sq(x) + affine(x, y) + scale;
        for i in 0..3 {
            let t = i as f64;
            s += affine(sq(t), s) * 0.5;
        }
        let mut acc = x;
        // A `move` closure copies `acc` here; the later assignment does not reach it.
        let add = move |v: f64| v + acc;
        acc += 1.0;
        s + add(y) + acc
    }
    fn with_slices(x: &[f64], k: usize) -> f64 {
        let at = |i: usize| x[i % x.len()];
        let norm = |v: &[f64]| v.iter().map(|a| a * a).sum::<f64>();
        at(k) + at(k + 1) * norm(x)
    }
    fn nested(x: f64) -> f64 {
        let f = |v: f64| {
            let g = |w: f64| w.sin() + v;
            g(v) * g(2.0 * v)
        };
        if x > 0.0 { f(x) } else { f(-x) + 1.0 }
    }
    fn shadows_a_fn(x: f64) -> f64 {
        let helper2 = |v: f64| helper2(v, 1.0) * 2.0;
        helper2(x)
    }
    fn helper2(a: f64, b: f64) -> f64 {
        a - b
    }
}

#[test]
fn closures_bound_with_let_are_called_inline() {
    let m = lower(LOCAL_CLOSURES);
    let mut rng = Rng::new(31);
    for _ in 0..20 {
        let (x, y) = (rng.range(-3.0, 3.0), rng.range(-3.0, 3.0));
        same!(m, closures(x, y));
        same!(m, nested(x));
        same!(m, shadows_a_fn(x));
        let v = rng.normals(5);
        for k in 0..7 {
            same!(m, with_slices(&v[..], k));
        }
    }
}

dual! { VIEW_ARGUMENTS:
    fn dot_v(a: &[f64], b: &[f64]) -> f64 {
        let mut s = 0.0;
        for i in 0..a.len() {
            s += a[i] * b[i];
        }
        s
    }
    fn scale_v(v: &mut [f64], k: f64) {
        for x in v.iter_mut() {
            *x *= k;
        }
    }
    fn first_or(v: &[f64], d: f64) -> f64 {
        if v.is_empty() { d } else { v[0] + first_or(&v[1..], d) * 0.5 }
    }
    fn layer(w: &[f64], x: &[f64], out: &mut [f64]) -> f64 {
        let n = x.len();
        for i in 0..out.len() {
            out[i] = dot_v(&w[i * n..(i + 1) * n], x).tanh();
        }
        scale_v(&mut out[1..], 2.0);
        let row = &w[n..];
        x.chunks(2).map(|c| dot_v(c, c)).sum::<f64>()
            + x.windows(2).map(|v| dot_v(v, &x[..2])).sum::<f64>()
            + first_or(row, 1.5)
            + first_or(x, -1.0)
    }
}

#[test]
fn sub_slices_windows_and_chunks_passed_to_functions() {
    let m = lower(VIEW_ARGUMENTS);
    let names: Vec<&str> = m.functions.iter().map(|f| f.name.as_str()).collect();
    assert!(names.contains(&"dot_v__views_10") && names.contains(&"dot_v__views_11"), "{names:?}");
    let mut rng = Rng::new(41);
    for (rows, n) in [(2usize, 2usize), (3, 3), (2, 5)] {
        let w = rng.normals(rows * n);
        let x = rng.normals(n);
        let out = vec![0.0; rows];
        let mut native_out = out.clone();
        let native = layer(&w, &x, &mut native_out);
        let mut args = [ArgValue::Slice(w.clone()), ArgValue::Slice(x.clone()), ArgValue::SliceMut(out)];
        let got = crate::support::run(&m, "layer", &mut args);
        assert_eq!(got, vec![RuntimeValue::F64(native)]);
        assert_eq!(args[2], ArgValue::SliceMut(native_out));
    }
}

/// `v[i]` of a view inside `for i in 0..v.len()` needs no range check (the loop's own test is
/// it); against another bound it keeps one comparison, and the read past the view still faults.
#[test]
fn view_reads_at_a_loop_counter_skip_the_range_check_the_loop_makes() {
    let m = lower(
        "fn dot(a: &[f64], b: &[f64]) -> f64 {\n    let mut s = 0.0;\n    for i in 0..a.len() {\n        s += a[i] * b[i];\n    }\n    s\n}\n\
         fn over_b(a: &[f64], b: &[f64]) -> f64 {\n    let mut s = 0.0;\n    for i in 0..b.len() {\n        s += a[i];\n    }\n    s\n}\n\
         fn f(w: &[f64], x: &[f64], y: &[f64]) -> f64 {\n    dot(&w[1..], x) + over_b(&w[..2], y)\n}\n",
    );
    let count = |name: &str, op: jitdiff_ir::Opcode| {
        let f = m.func_by_name(name).unwrap();
        f.blocks.iter().flat_map(|b| &b.insts).filter(|i| i.op == op).count()
    };
    assert_eq!(count("dot__views_10", jitdiff_ir::Opcode::Select), 0, "{m}");
    assert_eq!(count("over_b__views_10", jitdiff_ir::Opcode::Select), 1, "{m}");
    let interp = jitdiff_ir::Interpreter::new(&m);
    let args = |y: Vec<f64>| {
        [ArgValue::Slice(vec![1.0, 2.0, 4.0, 8.0]), ArgValue::Slice(vec![0.5, 0.25, 1.0]), ArgValue::Slice(y)]
    };
    assert_eq!(interp.call("f", &mut args(vec![0.0, 0.0])).unwrap(), vec![RuntimeValue::F64(1.0 + 1.0 + 8.0 + 3.0)]);
    // over_b reads a[2] of the two-element view: a fault, though w has the element.
    assert_eq!(interp.call("f", &mut args(vec![0.0; 3])).unwrap_err().kind_name(), "OutOfBounds");
}

dual! { FNMUT:
    fn fnmut(x: &[f64], k: usize) -> f64 {
        let mut total = 0.0;
        let mut count = 0usize;
        let mut add = |v: f64| {
            total += v * v;
            count += 1;
            if count > k {
                total *= 0.5;
            }
        };
        for &v in x {
            if v > 0.0 {
                add(v);
            }
        }
        add(1.0);
        let s: f64 = x
            .iter()
            .map(|v| {
                total += 0.5;
                v * 2.0
            })
            .sum();
        let mut last = 0.0;
        let mut keep = |v: f64| last = v;
        for &v in x {
            keep(v);
        }
        total + count as f64 + s + last
    }
    fn each(x: &[f64], out: &mut [f64]) -> f64 {
        let mut last = 0.0;
        let mut n = 0usize;
        x.iter().for_each(|v| last = *v);
        x.iter().enumerate().filter(|(_, v)| **v > 0.0).for_each(|(i, v)| {
            n += i;
            last += v;
        });
        out.iter_mut().zip(x.iter()).for_each(|(o, v)| *o = v * 2.0);
        (0..3).for_each(|k| last *= 1.0 + k as f64);
        last + n as f64
    }
}

#[test]
fn closures_that_assign_captured_variables_update_them() {
    let m = lower(FNMUT);
    let mut rng = Rng::new(23);
    for (n, k) in [(5usize, 2usize), (0, 0), (8, 3)] {
        let x = rng.normals(n);
        same!(m, fnmut(&x[..], k));
        let mut native = vec![0.0; n];
        let want = each(&x, &mut native);
        let mut args = [ArgValue::Slice(x), ArgValue::SliceMut(vec![0.0; n])];
        assert_eq!(crate::support::run(&m, "each", &mut args), vec![RuntimeValue::F64(want)]);
        assert_eq!(args[1], ArgValue::SliceMut(native));
    }
}
