//! Local arrays: `[x; N]`, `[a, b]` and `vec![...]` (a run-time length at the top of the
//! function), filled, written and passed to calls.

use crate::dual;
use crate::support::{Rng, lower};
use jitdiff_ir::{ArgValue, RuntimeValue};

dual! { VECTORS:
    fn scale_into(factor: f64, x: &[f64], out: &mut [f64]) {
        for i in 0..x.len() {
            out[i] = factor * x[i];
        }
    }
    fn with_vectors(x: &[f64], k: usize) -> f64 {
        let n = x.len();
        let mut work = vec![0.0; n * k + 1];
        let scratch = vec![0.0; k];
        // A fill other than `0.0` is a loop: the last run-time length must come before it.
        let signs = vec![-0.0; n];
        let filled = vec![2.5; 10];
        let pair = vec![x[0], 3.0];
        let fixed = vec![1.5; 3];
        scale_into(pair[1], x, &mut work);
        let mut total = pair[0] + work.len() as f64 + fixed[2] + scratch[k - 1];
        for i in 0..n {
            // `1 / -0.0` is `-inf`: the fill wrote negative zeros over `alloc`'s positive ones.
            total += work[i] + filled[i] + (1.0f64 / signs[i]).max(-1.0);
            let again = vec![0.5; 2];
            total += again[1];
        }
        total + work[n * k] + filled[n]
    }
}

#[test]
fn vectors_of_run_time_length_are_local_arrays() {
    let m = lower(VECTORS);
    let text = jitdiff_ir::print_module(&m);
    assert!(text.contains("alloc"), "{text}");
    let mut rng = Rng::new(17);
    for (n, k) in [(1usize, 1usize), (3, 2), (9, 1), (5, 4)] {
        let x = rng.normals(n);
        let want = with_vectors(&x, k);
        let mut args = [ArgValue::Slice(x), ArgValue::I64(k as i64)];
        let got = crate::support::run(&m, "with_vectors", &mut args);
        assert_eq!(got, vec![RuntimeValue::F64(want)], "n = {n}, k = {k}");
    }
}

dual! { SLICE_UPDATES:
    // `swap`, `fill` and `copy_from_slice` on parameters, local arrays, sub-slices and views.
    fn updates(x: &[f64], out: &mut [f64]) -> f64 {
        let n = out.len();
        let mut state = [0.0; 3];
        let mut next = [0.0; 3];
        state.copy_from_slice(&x[..3]);
        for _ in 0..4 {
            for k in 0..3 {
                next[k] = state[(k + 1) % 3] * 0.5 + state[k].sin();
            }
            state.copy_from_slice(&next);
            state.swap(0, 2);
        }
        out.fill(-1.5);
        out[1..4].copy_from_slice(&state);
        out.swap(0, n - 1);
        let row = &mut out[2..];
        row.swap(0, 1);
        row[1..].fill(x[3]);
        out.reverse();
        state.reverse();
        state[0] + state[1] * state[2]
    }
    // `sort_by` / `sort_unstable_by`: a median, a deviation, an order by distance (ties kept
    // in order, as the stable sort does), descending.
    fn sorted_stats(x: &[f64], t: f64, out: &mut [f64]) -> f64 {
        let mut v = x.to_vec();
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        let n = v.len();
        let median = if n % 2 == 1 { v[n / 2] } else { 0.5 * (v[n / 2 - 1] + v[n / 2]) };
        let mut dev: Vec<f64> = v.iter().map(|a| (a - median).abs()).collect();
        dev.sort_unstable_by(f64::total_cmp);
        out.copy_from_slice(x);
        out.sort_by(|a, b| (*a - t).abs().partial_cmp(&(*b - t).abs()).unwrap_or(std::cmp::Ordering::Equal));
        let mut down = x.to_vec();
        down.sort_by(|a, b| b.total_cmp(a));
        median + dev[n / 2] * 2.0 + down[0] * 0.5
    }
    // `split_at` / `split_at_mut`: two views.
    fn halves(x: &[f64], out: &mut [f64], k: usize) -> f64 {
        let (left, right) = x.split_at(k);
        let (a, b) = out.split_at_mut(k);
        for (i, v) in left.iter().enumerate() {
            a[i] = v * 2.0;
        }
        for v in b.iter_mut() {
            *v = 1.5;
        }
        left.iter().sum::<f64>() - right.iter().map(|v| v * v).sum::<f64>() + right.len() as f64
    }
    // `first()` / `last()` with their `Option` taken apart at once.
    fn ends(x: &[f64], y: &[f64]) -> f64 {
        let a = *x.first().unwrap();
        let b = *x.last().expect("non-empty");
        let c = y.last().copied().unwrap_or(-1.0);
        let d = y.first().cloned().unwrap_or(2.0);
        let e = if y.first().is_some() { 1.0 } else { 0.0 } + if x.last().is_none() { 10.0 } else { 0.0 };
        let row = &x[1..];
        a * b + c + d + e + row.last().copied().unwrap_or(0.5)
    }
    // Array patterns: names, `_`, `mut`, and `..` with elements after it counted from the end.
    fn patterns(x: &[f64]) -> f64 {
        let [a, _, mut c] = [x[0], x[1], x[2]];
        c *= 2.0;
        let [first, .., last] = [x[3], x[2], x[1], x[0]];
        let [p, q, ..] = [a * c, first - last, 1.0];
        a + c + first * last + p * q
    }
}

#[test]
fn swap_fill_and_copy_from_slice_write_as_rustc_does() {
    let m = lower(SLICE_UPDATES);
    let mut rng = Rng::new(23);
    for n in [5usize, 6, 9] {
        let x = rng.normals(4);
        let mut want_out = vec![0.0; n];
        let want = updates(&x, &mut want_out);
        let mut args = [ArgValue::Slice(x), ArgValue::SliceMut(vec![0.0; n])];
        let got = crate::support::run(&m, "updates", &mut args);
        assert_eq!(got, vec![RuntimeValue::F64(want)], "n = {n}");
        assert_eq!(args[1], ArgValue::SliceMut(want_out), "n = {n}");
        let x = rng.normals(4);
        let got = crate::support::run(&m, "patterns", &mut [ArgValue::Slice(x.clone())]);
        assert_eq!(got, vec![RuntimeValue::F64(patterns(&x))]);
        for y_len in [0, 1, 3] {
            let y = rng.normals(y_len);
            let got = crate::support::run(&m, "ends", &mut [ArgValue::Slice(x.clone()), ArgValue::Slice(y.clone())]);
            assert_eq!(got, vec![RuntimeValue::F64(ends(&x, &y))], "y = {y:?}");
        }
    }
    for n in [1usize, 2, 5, 8] {
        for _ in 0..3 {
            // Halves, so that ties occur (and the order among them shows in `out`).
            let x: Vec<f64> = rng.normals(n).iter().map(|v| (v * 2.0).round() / 2.0).collect();
            let t = 0.25;
            let mut want_out = vec![0.0; n];
            let want = sorted_stats(&x, t, &mut want_out);
            let mut args = [ArgValue::Slice(x.clone()), ArgValue::F64(t), ArgValue::SliceMut(vec![0.0; n])];
            let got = crate::support::run(&m, "sorted_stats", &mut args);
            assert_eq!(got, vec![RuntimeValue::F64(want)], "x = {x:?}");
            assert_eq!(args[2], ArgValue::SliceMut(want_out), "x = {x:?}");
        }
    }
    for (n, k) in [(4usize, 0usize), (4, 2), (4, 4), (1, 1)] {
        let x = rng.normals(n);
        let mut want_out = vec![0.0; n];
        let want = halves(&x, &mut want_out, k);
        let mut args = [ArgValue::Slice(x.clone()), ArgValue::SliceMut(vec![0.0; n]), ArgValue::I64(k as i64)];
        assert_eq!(crate::support::run(&m, "halves", &mut args), vec![RuntimeValue::F64(want)], "n = {n}, k = {k}");
        assert_eq!(args[1], ArgValue::SliceMut(want_out));
    }
    // `k` past the end: Rust panics in `split_at`.
    let mut args = [ArgValue::Slice(vec![1.0; 2]), ArgValue::SliceMut(vec![0.0; 2]), ArgValue::I64(3)];
    assert_eq!(jitdiff_ir::Interpreter::new(&m).call("halves", &mut args).unwrap_err().kind_name(), "Panic");
    // A NaN meets `partial_cmp(..).unwrap()`: Rust panics, so does the IR.
    let mut args = [ArgValue::Slice(vec![1.0, f64::NAN, 0.5]), ArgValue::F64(0.0), ArgValue::SliceMut(vec![0.0; 3])];
    let err = jitdiff_ir::Interpreter::new(&m).call("sorted_stats", &mut args).unwrap_err();
    assert_eq!(err.kind_name(), "Panic");
    // Different lengths: Rust panics in `copy_from_slice`, the IR stops with a `Panic` fault.
    let m = lower("fn f(a: &mut [f64], b: &[f64]) {\n    a.copy_from_slice(b);\n}");
    let mut args = [ArgValue::SliceMut(vec![0.0; 2]), ArgValue::Slice(vec![1.0; 3])];
    let err = jitdiff_ir::Interpreter::new(&m).call("f", &mut args).unwrap_err();
    assert_eq!(err.kind_name(), "Panic");
    // `first().unwrap()` of an empty slice: a `Panic` fault, where Rust panics.
    let mut args = [ArgValue::Slice(vec![]), ArgValue::Slice(vec![1.0])];
    assert_eq!(
        jitdiff_ir::Interpreter::new(&lower(SLICE_UPDATES)).call("ends", &mut args).unwrap_err().kind_name(),
        "Panic"
    );
    // `swap` out of bounds: where Rust panics.
    let m = lower("fn f(a: &mut [f64], i: usize) {\n    a.swap(0, i);\n}");
    let mut args = [ArgValue::SliceMut(vec![0.0; 2]), ArgValue::I64(2)];
    let err = jitdiff_ir::Interpreter::new(&m).call("f", &mut args).unwrap_err();
    assert_eq!(err.kind_name(), "OutOfBounds");
}

dual! { COLLECTED:
    // `&Vec<f64>` as beginners write it (clippy prefers `&[f64]`; the front end takes both).
    #[allow(clippy::ptr_arg)]
    fn norm_sq(v: &Vec<f64>) -> f64 {
        v.iter().map(|a| a * a).sum()
    }
    // `collect` into a `Vec<f64>`, `to_vec`, and `vec!` with a run-time length inside loops.
    fn collected(x: &[f64], y: &Vec<f64>, rounds: usize) -> f64 {
        let n = x.len();
        let mut w = x.to_vec();
        let products: Vec<f64> = (0..n).map(|i| x[i] * y[i]).collect();
        let positive: Vec<f64> = x.iter().filter(|&&a| a > 0.0).map(|a| a.sin()).collect();
        let mut total = norm_sq(&products) + positive.iter().sum::<f64>() + positive.len() as f64;
        for r in 0..rounds {
            let shifted = w.iter().map(|a| a + r as f64).collect::<Vec<_>>();
            for i in 0..n {
                w[i] = shifted[i] * 0.5;
            }
            let evens: Vec<f64> = (0..w.len()).step_by(2).map(|i| w[i]).collect();
            let mut scratch = vec![1.5; n + 1];
            scratch[n] = evens[evens.len() - 1];
            total += evens.iter().sum::<f64>() * evens.len() as f64 + scratch[0] + scratch[n];
            if r % 2 == 1 {
                let copy = y.clone();
                total += copy[0] + norm_sq(&x.iter().map(|a| a - 1.0).collect());
            }
        }
        total + w.iter().sum::<f64>()
    }
    // A struct holding a `Vec<f64>` (a slice parameter per field).
    struct Model {
        weights: Vec<f64>,
        bias: f64,
    }
    fn predict(model: &Model, x: &[f64]) -> f64 {
        model.weights.iter().zip(x).map(|(w, v)| w * v).sum::<f64>() + model.bias * model.weights.len() as f64
    }
    // Double buffering: `u = next;` moves a new `Vec` into `u` on each step.
    fn diffuse(u0: &[f64], steps: usize, k: f64) -> f64 {
        let n = u0.len();
        let mut u = u0.to_vec();
        for _ in 0..steps {
            let mut next = vec![0.0; n];
            for i in 1..n - 1 {
                next[i] = u[i] + k * (u[i - 1] - 2.0 * u[i] + u[i + 1]);
            }
            u = next;
        }
        let mut squares: Vec<f64> = u.iter().map(|v| v * v).collect();
        squares = squares.iter().map(|s| s + 1.0).collect();
        squares.iter().sum()
    }
}

#[test]
fn collect_and_to_vec_make_local_arrays_as_rustc_does() {
    let m = lower(COLLECTED);
    let mut rng = Rng::new(29);
    for (n, rounds) in [(1usize, 0usize), (2, 1), (5, 3), (8, 4)] {
        let x: Vec<f64> = (0..n).map(|_| rng.normal()).collect();
        let y: Vec<f64> = rng.normals(n);
        let want = collected(&x, &y, rounds);
        let mut args = [ArgValue::Slice(x.clone()), ArgValue::Slice(y), ArgValue::I64(rounds as i64)];
        let got = crate::support::run(&m, "collected", &mut args);
        assert_eq!(got, vec![RuntimeValue::F64(want)], "n = {n}, rounds = {rounds}");
        if n >= 2 {
            let want = diffuse(&x, rounds, 0.2);
            let mut args = [ArgValue::Slice(x.clone()), ArgValue::I64(rounds as i64), ArgValue::F64(0.2)];
            assert_eq!(crate::support::run(&m, "diffuse", &mut args), vec![RuntimeValue::F64(want)], "n = {n}");
        }
    }
    let model = Model { weights: vec![0.5, -1.5, 2.0], bias: 0.25 };
    let x = [1.0, 2.0, 4.0];
    let mut args = [ArgValue::Slice(model.weights.clone()), ArgValue::F64(model.bias), ArgValue::Slice(x.to_vec())];
    assert_eq!(crate::support::run(&m, "predict", &mut args), vec![RuntimeValue::F64(predict(&model, &x))]);
    // `u = next;` with another length: Rust reallocates, the IR's arrays keep their length.
    let m = lower("fn f(x: &[f64]) -> f64 {\n    let mut u = x.to_vec();\n    u = x[1..].to_vec();\n    u[0]\n}");
    let err = jitdiff_ir::Interpreter::new(&m).call("f", &mut [ArgValue::Slice(vec![1.0, 2.0])]).unwrap_err();
    assert_eq!(err.kind_name(), "Panic");
    // A length only a branch that never runs asks for: the call does not fail; where the
    // branch runs, a `usize` below 0 is a `Panic` fault, as Rust panics.
    let source = "fn f(x: &[f64], k: usize) -> f64 {\n    let mut s = x[0];\n    if k > 0 {\n        let v = vec![2.0; k - 1];\n        s += v.len() as f64;\n    }\n    s\n}";
    let m = lower(source);
    for (k, want) in [(0, Ok(1.0)), (3, Ok(3.0))] {
        let got = jitdiff_ir::Interpreter::new(&m).call("f", &mut [ArgValue::Slice(vec![1.0]), ArgValue::I64(k)]);
        assert_eq!(got.map(|r| r[0].clone()).map_err(|e| e.kind_name()), want.map(RuntimeValue::F64));
    }
    let m = lower(
        "fn f(k: usize) -> f64 {\n    let mut s = 0.0;\n    for _ in 0..2 {\n        s += vec![1.0; k - 1].len() as f64;\n    }\n    s\n}",
    );
    let err = jitdiff_ir::Interpreter::new(&m).call("f", &mut [ArgValue::I64(0)]).unwrap_err();
    assert_eq!(err.kind_name(), "Panic");
}

dual! { GROWING:
    fn total(v: &[f64]) -> f64 {
        v.iter().sum()
    }
    // `Vec::with_capacity` and `push` (under a branch, in loops), `clear`, `truncate`.
    fn pushes(x: &[f64], y: &[f64], a: f64, b: f64) -> f64 {
        let n = x.len();
        let mut r: Vec<f64> = Vec::with_capacity(n);
        for i in 0..n {
            if y[i] > -10.0 {
                r.push(a * x[i] + b - y[i]);
            }
        }
        let mut big = Vec::with_capacity(n + 1);
        for v in r.iter() {
            if v.abs() > 0.5 {
                big.push(*v);
            }
        }
        big.push(1.0);
        let m = big.len() as f64;
        let mut s = r.iter().map(|e| e * e).sum::<f64>() + total(&big) * m;
        if !r.is_empty() {
            s += r[0] + r[r.len() - 1];
        }
        big.clear();
        s += big.len() as f64;
        r.truncate(2);
        for k in 0..3 {
            let mut fresh = Vec::with_capacity(4);
            fresh.push(k as f64);
            fresh.push(s * 0.001);
            s += fresh.iter().product::<f64>();
        }
        s + r.iter().sum::<f64>() + r.len() as f64
    }
    fn overfull(k: usize) -> f64 {
        let mut v = Vec::with_capacity(2);
        for i in 0..k {
            v.push(i as f64);
        }
        v.iter().sum()
    }
}

#[test]
fn vectors_grow_by_push_within_their_capacity() {
    let m = lower(GROWING);
    let mut rng = Rng::new(47);
    for n in [0usize, 1, 4, 9] {
        let x = rng.normals(n);
        let y: Vec<f64> = rng.normals(n).iter().map(|v| if *v > 1.0 { -20.0 } else { *v }).collect();
        let want = pushes(&x, &y, 1.5, 0.25);
        let mut args = [ArgValue::Slice(x), ArgValue::Slice(y), ArgValue::F64(1.5), ArgValue::F64(0.25)];
        assert_eq!(crate::support::run(&m, "pushes", &mut args), vec![RuntimeValue::F64(want)], "n = {n}");
    }
    assert_eq!(crate::support::run(&m, "overfull", &mut [ArgValue::I64(2)]), vec![RuntimeValue::F64(overfull(2))]);
    // Past the capacity Rust grows the vector; here it is a `Panic` fault at the `push`.
    let err = jitdiff_ir::Interpreter::new(&m).call("overfull", &mut [ArgValue::I64(3)]).unwrap_err();
    assert_eq!(err.kind_name(), "Panic");
}

dual! { ARRAY_RESULTS:
    // Functions returning `[f64; N]`: from array literals, a repeat, a local array, through
    // `if`, `match` and an early `return`; called, indexed, iterated, destructured, passed on.
    const D: usize = 3;
    fn cross(a: &[f64], b: &[f64]) -> [f64; 3] {
        [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]
    }
    fn norm(v: &[f64]) -> f64 {
        v.iter().map(|x| x * x).sum::<f64>().sqrt()
    }
    fn unit(x: f64) -> [f64; D] {
        if x > 0.0 {
            return [x, 0.0, 1.0];
        }
        let mut v = [0.0; D];
        v[1] = x;
        v
    }
    fn rotate(s: [f64; 2], h: f64) -> [f64; 2] {
        match s[0] > 0.0 {
            true => [s[0] + h * s[1], s[1] - h * s[0]],
            false => [s[1]; 2],
        }
    }
    fn arrays(a: &[f64], b: &[f64], x: f64) -> f64 {
        let [p, q, r] = unit(x);
        let mut s = [a[0], b[0]];
        for _ in 0..5 {
            s = rotate(s, 0.1);
        }
        norm(&cross(a, b)) + p + 10.0 * q + 100.0 * r + unit(-x)[1] + s[0] * s[1] + cross(b, a).iter().sum::<f64>()
    }
    // `std::array::from_fn` and `[f64; N]::map`.
    fn made(a: &[f64], x: f64) -> f64 {
        let doubled: [f64; D] = std::array::from_fn(|i| a[i] * 2.0 + i as f64);
        let squares = doubled.map(|v| v * v - x);
        let rotated = rotate([squares[0], squares[2]], x).map(f64::sin);
        squares.iter().sum::<f64>() + rotated[0] * rotated[1]
    }
}

#[test]
fn array_results_are_returned_and_used_as_rustc_does() {
    let m = lower(ARRAY_RESULTS);
    let mut rng = Rng::new(31);
    for _ in 0..8 {
        let (a, b) = (rng.normals(3), rng.normals(3));
        let x = rng.normal();
        let mut args = [ArgValue::Slice(a.clone()), ArgValue::Slice(b.clone()), ArgValue::F64(x)];
        let got = crate::support::run(&m, "arrays", &mut args);
        assert_eq!(got, vec![RuntimeValue::F64(arrays(&a, &b, x))], "a = {a:?}, b = {b:?}, x = {x}");
        let got = crate::support::run(&m, "made", &mut [ArgValue::Slice(a.clone()), ArgValue::F64(x)]);
        assert_eq!(got, vec![RuntimeValue::F64(made(&a, x))], "a = {a:?}, x = {x}");
    }
}
