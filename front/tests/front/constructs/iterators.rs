//! `for` loops over ranges and slices, iterator adapters, and the consumers `sum`, `product`,
//! `fold`, `count`.

use crate::support::{Rng, lower};
use crate::{dual, same};
use jitdiff_ir::{ArgValue, RuntimeValue};

dual! { RANGES:
    fn ranges(a: i64, b: i64) -> i64 {
        let mut h = 0;
        for i in a..b {
            h = (h * 3 + i) % 10_007;
        }
        for i in a..=b {
            h = (h * 5 - i) % 10_007;
        }
        for i in (a..b).rev() {
            h = (h * 7 + i) % 10_007;
        }
        for i in (a..=b).rev() {
            h = (h * 11 + i) % 10_007;
        }
        for i in (a..b).step_by(3) {
            h = (h * 13 + i) % 10_007;
        }
        for i in (a..=b).step_by(2) {
            h = (h * 17 - i) % 10_007;
        }
        for i in (a..b).rev().step_by(4) {
            h = (h * 19 + i) % 10_007;
        }
        for i in (a..b).skip(2).take(3) {
            h = (h * 29 + i) % 10_007;
        }
        h
    }
    fn stepped(n: usize, k: usize) -> usize {
        let mut s = 0;
        for i in (0..n).step_by(k) {
            s = (s * 31 + i) % 10_007;
        }
        for i in (0..n).step_by(k + 1).rev() {
            s = (s * 7 + i) % 10_007;
        }
        s
    }
}

#[test]
fn ranges_in_every_direction_and_step() {
    let m = lower(RANGES);
    for (a, b) in [(0i64, 0i64), (0, 1), (0, 10), (-4, 7), (5, 2), (3, 3), (-10, -9)] {
        same!(m, ranges(a, b));
    }
    for (n, k) in [(0usize, 1usize), (10, 1), (10, 3), (11, 5), (4, 9)] {
        same!(m, stepped(n, k));
    }
}

dual! { SLICES:
    fn dot(x: &[f64], y: &[f64]) -> f64 {
        let mut s = 0.0;
        for (a, b) in x.iter().zip(y.iter()) {
            s += a * b;
        }
        s
    }
    fn weighted(x: &[f64]) -> f64 {
        let mut s = 0.0;
        for (i, &v) in x.iter().enumerate() {
            s += v * (i as f64 + 1.0);
        }
        for v in x {
            s -= *v * 0.5;
        }
        for &v in x.iter().rev() {
            s = s * 0.9 + v;
        }
        for (i, v) in x.iter().enumerate().rev().skip(1) {
            s += v / (i as f64 + 2.0);
        }
        for (a, b) in x.iter().zip(x.iter().skip(1)) {
            s += a * b;
        }
        s
    }
    fn scale_in_place(x: &mut [f64], k: f64) {
        for v in x.iter_mut() {
            *v *= k;
        }
        for (i, v) in x.iter_mut().enumerate() {
            *v = *v + i as f64;
        }
    }
    fn array_param(a: [f64; 3], b: &[f64; 3]) -> f64 {
        let mut s = 0.0;
        for i in 0..3 {
            s += a[i] * b[i];
        }
        s + a.len() as f64
    }
}

#[test]
fn slices_iterated_with_adapters() {
    let m = lower(SLICES);
    let mut rng = Rng::new(5);
    for n in [0usize, 1, 2, 7] {
        let x = rng.normals(n);
        let y = rng.normals(n + 2);
        same!(m, dot(&x[..], &y[..]));
        same!(m, dot(&y[..], &x[..]));
        same!(m, weighted(&x[..]));
        let mut native = x.clone();
        scale_in_place(&mut native, 1.5);
        let mut args = [ArgValue::SliceMut(x.clone()), ArgValue::F64(1.5)];
        crate::support::run(&m, "scale_in_place", &mut args);
        assert_eq!(args[0], ArgValue::SliceMut(native));
    }
    let (a, b) = ([1.0, 2.0, 3.0], [0.5, -1.0, 4.0]);
    same!(m, array_param(a, &b));
}

dual! { SUB_SLICES:
    fn neighbours(x: &[f64]) -> f64 {
        let n = x.len();
        x[..n - 1].iter().zip(&x[1..]).map(|(a, b)| 100.0 * (b - a * a) * (b - a * a) + (1.0 - a) * (1.0 - a)).sum()
    }
    fn parts(x: &[f64], k: usize) -> f64 {
        let mut s = 0.0;
        for (i, v) in x[k..].iter().enumerate() {
            s += v * (i as f64 + 1.0);
        }
        for &v in &x[..k] {
            s = s * 0.5 + v;
        }
        for v in x[1..=k].iter().rev().step_by(2) {
            s -= v;
        }
        s + x[(k - 1)..(k + 1)].iter().product::<f64>() + x[..].iter().sum::<f64>()
    }
    fn shift_tail(x: &mut [f64], k: usize) {
        for v in x[k..].iter_mut() {
            *v *= 2.0;
        }
        for v in &mut x[..k] {
            *v += 1.0;
        }
    }
}

dual! { LET_SUB_SLICES:
    fn rows(w: &[f64], x: &[f64]) -> f64 {
        let n = x.len();
        let mut s = 0.0;
        for i in 0..w.len() / n {
            let row = &w[i * n..(i + 1) * n];
            let mut dot = 0.0;
            for j in 0..row.len() {
                dot += row[j] * x[j];
            }
            let tail: &[f64] = &row[1..];
            s += dot.tanh() + tail.iter().sum::<f64>() + tail.len() as f64;
        }
        s + x[1..].len() as f64 + x[..0].is_empty() as i64 as f64 + w[n..].len() as f64
    }
    fn scale_rows(w: &mut [f64], n: usize) {
        for i in 0..w.len() / n {
            let row = &mut w[i * n..(i + 1) * n];
            row[0] *= 2.0;
            for v in row.iter_mut() {
                *v += 1.0;
            }
            let last = &mut row[n - 1..];
            last[0] = -last[0];
        }
    }
}

#[test]
fn sub_slices_bound_with_let() {
    let m = lower(LET_SUB_SLICES);
    let mut rng = Rng::new(12);
    for (count, n) in [(1usize, 1usize), (2, 3), (4, 2), (3, 5)] {
        let w = rng.normals(count * n);
        let x = rng.normals(n);
        same!(m, rows(&w[..], &x[..]));
        let mut native = w.clone();
        scale_rows(&mut native, n);
        let mut args = [ArgValue::SliceMut(w.clone()), ArgValue::I64(n as i64)];
        crate::support::run(&m, "scale_rows", &mut args);
        assert_eq!(args[0], ArgValue::SliceMut(native));
    }
}

#[test]
fn sub_slices_iterated() {
    let m = lower(SUB_SLICES);
    let mut rng = Rng::new(8);
    for n in [2usize, 3, 6, 11] {
        let x = rng.normals(n);
        same!(m, neighbours(&x[..]));
        for k in 1..n {
            same!(m, parts(&x[..], k));
            let mut native = x.clone();
            shift_tail(&mut native, k);
            let mut args = [ArgValue::SliceMut(x.clone()), ArgValue::I64(k as i64)];
            crate::support::run(&m, "shift_tail", &mut args);
            assert_eq!(args[0], ArgValue::SliceMut(native));
        }
    }
}

#[test]
fn a_sub_slice_past_the_end_faults_where_rust_panics() {
    let m = lower("fn f(x: &[f64], a: usize, b: usize) -> f64 { x[a..b].iter().sum() }\n");
    let interp = jitdiff_ir::Interpreter::new(&m);
    let call = |a: i64, b: i64| {
        interp.call("f", &mut [ArgValue::Slice(vec![1.0, 2.0, 4.0]), ArgValue::I64(a), ArgValue::I64(b)])
    };
    assert_eq!(call(1, 3).unwrap(), vec![RuntimeValue::F64(6.0)]);
    assert_eq!(call(3, 3).unwrap(), vec![RuntimeValue::F64(-0.0)]);
    assert_eq!(call(2, 4).unwrap_err().kind_name(), "OutOfBounds");
    // A sub-slice of a sub-slice: past the inner one's end faults, though `x` has the element.
    let m = lower(
        "fn g(x: &[f64], b: usize) -> f64 {\n    let head = &x[..2];\n    let t = &head[1..b];\n    t.iter().sum()\n}\n",
    );
    let interp = jitdiff_ir::Interpreter::new(&m);
    let call = |b: i64| interp.call("g", &mut [ArgValue::Slice(vec![1.0, 2.0, 4.0]), ArgValue::I64(b)]);
    assert_eq!(call(2).unwrap(), vec![RuntimeValue::F64(2.0)]);
    assert_eq!(call(3).unwrap_err().kind_name(), "OutOfBounds");
}

dual! { CHUNKS:
    fn pairs(x: &[f64]) -> f64 {
        x.windows(2).map(|w| 100.0 * (w[1] - w[0] * w[0]).powi(2) + (1.0 - w[0]).powi(2)).sum()
    }
    fn blocks(x: &[f64], d: usize) -> f64 {
        let mut s = 0.0;
        for (i, c) in x.chunks(d).enumerate() {
            let mut norm = 0.0;
            for &v in c {
                norm += v * v;
            }
            s += (i as f64 + 1.0) * norm + c.len() as f64;
        }
        for c in x.chunks_exact(d).rev() {
            s = 0.5 * s + c[d - 1] - c.iter().sum::<f64>();
        }
        s + x[1..].windows(3).filter(|w| w[1] > w[0]).count() as f64
            + x.windows(d).fold(0.0, |acc, w| acc + w[0] * w[w.len() - 1])
            + x.chunks(d).map(|c| c.iter().map(|v| v * v).sum::<f64>()).sum::<f64>()
    }
    fn empty_windows(x: &[f64]) -> f64 {
        let mut s = 1.0;
        for w in x.windows(4) {
            if !w.is_empty() {
                s *= w[3] - w[0];
            }
        }
        s
    }
}

#[test]
fn windows_and_chunks() {
    let m = lower(CHUNKS);
    let mut rng = Rng::new(9);
    for n in [0usize, 1, 2, 3, 5, 8] {
        let x = rng.normals(n);
        same!(m, pairs(&x[..]));
        same!(m, empty_windows(&x[..]));
        for d in 1..4 {
            if n >= 1 {
                same!(m, blocks(&x[..], d));
            }
        }
    }
}

dual! { CHUNKS_MUT:
    fn fill_blocks(x: &[f64], out: &mut [f64], k: usize) -> f64 {
        for (i, c) in out.chunks_mut(k).enumerate() {
            for j in 0..c.len() {
                c[j] = x[i * k + j] * (j as f64 + 1.0);
            }
            c[0] += 1.0;
        }
        for (c, src) in out.chunks_exact_mut(2).zip(x.chunks_exact(2)) {
            c[1] = c[1] * 0.5 + src[0];
        }
        let mut s = 0.0;
        for c in out.chunks(3) {
            s += c[c.len() - 1];
        }
        s
    }
}

#[test]
fn chunks_mut_write_the_slice_in_place() {
    let m = lower(CHUNKS_MUT);
    let mut rng = Rng::new(19);
    for (n, k) in [(7usize, 3usize), (4, 2), (1, 1), (6, 4)] {
        let x = rng.normals(n);
        let mut native = vec![0.0; n];
        let want = fill_blocks(&x, &mut native, k);
        let mut args = [ArgValue::Slice(x), ArgValue::SliceMut(vec![0.0; n]), ArgValue::I64(k as i64)];
        let got = crate::support::run(&m, "fill_blocks", &mut args);
        assert_eq!(got, vec![RuntimeValue::F64(want)], "n = {n}, k = {k}");
        assert_eq!(args[1], ArgValue::SliceMut(native));
    }
}

#[test]
fn windows_and_chunks_fault_where_rust_panics() {
    let m = lower(
        "fn f(x: &[f64], j: usize) -> f64 { x.windows(2).map(|w| w[j]).sum() }\n\
         fn g(x: &[f64], k: usize) -> f64 { x.chunks(k).map(|c| c[0]).sum() }\n",
    );
    let interp = jitdiff_ir::Interpreter::new(&m);
    let x = || ArgValue::Slice(vec![1.0, 2.0, 4.0]);
    assert_eq!(interp.call("f", &mut [x(), ArgValue::I64(1)]).unwrap(), vec![RuntimeValue::F64(6.0)]);
    // w[2] of a window of two is past its end, though x[2] exists.
    assert_eq!(interp.call("f", &mut [x(), ArgValue::I64(2)]).unwrap_err().kind_name(), "OutOfBounds");
    assert_eq!(interp.call("g", &mut [x(), ArgValue::I64(2)]).unwrap(), vec![RuntimeValue::F64(5.0)]);
    assert_eq!(interp.call("g", &mut [x(), ArgValue::I64(0)]).unwrap_err().kind_name(), "DivisionByZero");
}

dual! { CONSUMERS:
    fn total(x: &[f64]) -> f64 {
        x.iter().sum()
    }
    fn sum_sq(x: &[f64]) -> f64 {
        x.iter().map(|v| v * v).sum::<f64>()
    }
    fn prod(x: &[f64]) -> f64 {
        x.iter().product()
    }
    fn folded(x: &[f64], y: &[f64], c: f64) -> f64 {
        let a = x.iter().fold(c, |acc, v| acc * 0.5 + v);
        let b = x.iter().zip(y.iter()).map(|(p, q)| p * q + c).sum::<f64>();
        let d: f64 = x.iter().enumerate().map(|(i, &v)| v * i as f64).sum();
        let e = (0..x.len()).fold(0.0, |acc: f64, i| acc.max(x[i]));
        a + b + d + e
    }
    fn positives(x: &[f64]) -> usize {
        x.iter().filter(|v| **v > 0.0).count()
    }
    fn int_sum(n: usize) -> usize {
        let s: usize = (0..n).sum();
        s + (1..=n).map(|i| i * i).sum::<usize>() + (0..n).filter(|&i| i % 3 == 0).count()
    }
    fn empty_sum() -> f64 {
        let e = [1.0; 4];
        e.iter().skip(4).sum()
    }
    fn square(v: f64) -> f64 {
        v * v
    }
    fn any_all(x: &[f64], y: &[f64]) -> f64 {
        let big = x.iter().any(|&v| v > 1.0);
        let same_sign = x.iter().zip(y.iter()).all(|(a, b)| a * b > 0.0);
        let rising = x.windows(2).any(|w| w[1] > w[0]);
        let finite = x.iter().copied().all(f64::is_finite);
        let mut calls = 0;
        let counted = (0..x.len()).any(|i| {
            calls += 1;
            x[i] < -0.5
        });
        (big as i64 + 2 * same_sign as i64 + 4 * rising as i64 + 8 * finite as i64 + 16 * counted as i64) as f64
            + calls as f64 * 100.0
    }
    // Pair accumulators: an argmax, a range, a sum with its count.
    fn folded_pairs(x: &[f64]) -> f64 {
        if x.is_empty() {
            return 0.0;
        }
        let (best, value) = x
            .iter()
            .enumerate()
            .fold((0, f64::NEG_INFINITY), |(bi, bv), (i, &v)| if v > bv { (i, v) } else { (bi, bv) });
        let (lo, hi) = x.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| (lo.min(v), hi.max(v)));
        let (s, c) = x.iter().copied().fold((0.0, 0usize), |(s, c), v| (s + v * v, c + 1));
        value * best as f64 + (hi - lo) + s / c.max(1) as f64
    }
    // `position`, its `Option` taken apart at once; the loop stops at the first match.
    fn positions(x: &[f64]) -> f64 {
        let i = x.iter().position(|&v| v > 0.5).unwrap_or(0);
        let j = x.iter().skip(1).position(|&v| v < 0.0).unwrap_or(x.len());
        let some = x.iter().position(|v| *v > 1.0).is_some();
        let none = x.iter().filter(|v| **v > 0.0).position(|v| *v > 2.0).is_none();
        let k = (0..x.len() + 1).position(|k| k == x.len() || x[k] < -0.5).unwrap();
        (i + 2 * j + 4 * k) as f64 + some as i64 as f64 + 8.0 * none as i64 as f64
    }
    // Rust stops at the deciding item: indices past the end are never read.
    fn stops_early(x: &[f64], n: usize) -> f64 {
        let found = (0..n).any(|i| x[i] > 0.0);
        let all = (0..n).all(|i| x[i] < 0.0);
        found as i64 as f64 + all as i64 as f64
    }
    // Functions named where a closure goes: `f64::max` as `|a, b| f64::max(a, b)`.
    fn named_functions(x: &[f64]) -> f64 {
        let top = x.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let bottom = x.iter().copied().fold(f64::INFINITY, f64::min);
        let exps: f64 = x.iter().copied().map(f64::exp).sum();
        let squares: f64 = x.iter().copied().map(square).filter(|v| *v > 0.5).sum();
        top - bottom + exps + squares + x.iter().copied().map(f64::abs).fold(0.0, f64::max)
    }
}

#[test]
fn sum_map_fold_filter_count() {
    let m = lower(CONSUMERS);
    let mut rng = Rng::new(9);
    for n in [0usize, 1, 3, 10] {
        let x = rng.normals(n);
        let y = rng.normals(n);
        same!(m, total(&x[..]));
        same!(m, sum_sq(&x[..]));
        same!(m, prod(&x[..]));
        same!(m, folded(&x[..], &y[..], 0.25));
        same!(m, named_functions(&x[..]));
        same!(m, any_all(&x[..], &y[..]));
        same!(m, folded_pairs(&x[..]));
        same!(m, positions(&x[..]));
        same!(m, positives(&x[..]));
        same!(m, int_sum(n));
    }
    // `any`/`all` leave the loop at the deciding item, as Rust does, before reading past the end.
    same!(m, stops_early(&[1.0, -1.0][..], 5));
    same!(m, stops_early(&[-1.0, 2.0][..], 7));
    let past_the_end = [ArgValue::Slice(vec![-1.0, -2.0]), ArgValue::I64(3)];
    let err = jitdiff_ir::Interpreter::new(&m).call("stops_early", &mut past_the_end.clone()).unwrap_err();
    assert_eq!(err.kind_name(), "OutOfBounds");
    // `position(..).unwrap()` with no match: a `Panic` fault where Rust panics.
    let m2 = lower("fn f(x: &[f64]) -> usize {\n    x.iter().position(|&v| v > 1.0).unwrap()\n}");
    let err = jitdiff_ir::Interpreter::new(&m2).call("f", &mut [ArgValue::Slice(vec![0.5, 0.25])]).unwrap_err();
    assert_eq!(err.kind_name(), "Panic");
    // Rust's float sum starts at -0.0: an empty sum is -0.0.
    same!(m, empty_sum());
    assert_eq!(crate::support::run(&m, "empty_sum", &mut []), vec![RuntimeValue::F64(-0.0)]);
}

dual! { LOCAL_ARRAYS:
    fn moving(x: &[f64]) -> f64 {
        let mut window: [f64; 3] = [0.0; 3];
        let mut out = 0.0;
        for i in 0..x.len() {
            window[i % 3] = x[i];
            out += window[0] * 1.0 + window[1] * 2.0 + window[2] * 3.0;
        }
        out
    }
    fn literal_array(t: f64) -> f64 {
        let coefficients = [1.0, -t, t * t, 0.5];
        let mut big = [t; 40];
        for i in 0..40 {
            big[i] += i as f64;
        }
        let mut s = 0.0;
        for c in coefficients.iter() {
            s = s * t + c;
        }
        s + big.iter().sum::<f64>() + fill(&mut big)
    }
    fn fill(buffer: &mut [f64]) -> f64 {
        for v in buffer.iter_mut() {
            *v = 2.0;
        }
        buffer.iter().sum()
    }
    fn fresh_each_iteration(n: usize) -> f64 {
        let mut s = 0.0;
        for i in 0..n {
            let mut a = [0.0; 2];
            a[0] += i as f64;
            a[1] += a[0];
            s += a[1];
        }
        s
    }
}

#[test]
fn local_arrays_are_zeroed_at_their_let() {
    let m = lower(LOCAL_ARRAYS);
    let mut rng = Rng::new(2);
    for n in [0usize, 2, 9] {
        let x = rng.normals(n);
        same!(m, moving(&x[..]));
        same!(m, fresh_each_iteration(n));
    }
    for t in [0.0, 1.5, -2.0] {
        same!(m, literal_array(t));
    }
}

dual! { WHILE_ADAPTERS:
    // `take_while` ends the loop at the first item its closure rejects; `skip_while` drops
    // items until the first it rejects and is not called after that (the call counts show it).
    fn prefix_sums(x: &[f64], t: f64) -> f64 {
        let head: f64 = x.iter().take_while(|&&v| v < t).sum();
        let tail: f64 = x.iter().skip_while(|&&v| v < t).map(|v| v * 2.0).sum();
        let head_count = x.iter().take_while(|v| **v < t).count();
        let mut calls = 0.0;
        let tail_count = x
            .iter()
            .skip_while(|&&v| {
                calls += 1.0;
                v < t
            })
            .count();
        head + tail * 10.0 + head_count as f64 * 100.0 + tail_count as f64 * 1000.0 + calls * 10000.0
    }
    fn while_in_loops(x: &[f64], t: f64) -> f64 {
        let mut s = 0.0;
        for (i, v) in x.iter().enumerate().skip_while(|(_, v)| **v > t) {
            s += v * (i as f64 + 1.0);
        }
        for v in x.iter().map(|v| v * v).take_while(|&v| v < t * t + 1.0).filter(|&v| v > 0.1) {
            s -= v;
        }
        let kept: Vec<f64> = x.iter().skip_while(|&&v| v > t).copied().collect();
        s + kept.iter().sum::<f64>() + kept.len() as f64 * 0.5
    }
    // `len()` of chains without closures, counted without a loop.
    fn lengths(x: &[f64], a: usize, b: usize) -> f64 {
        let n = (a..b).len() + x.iter().skip(2).len() * 10 + x.windows(2).len() * 100;
        let m = (0..b).step_by(3).len() + x.iter().rev().take(4).len() * 10;
        n as f64 + m as f64 * 1000.0
    }
    // `std::iter::zip(a, b)` is `a.into_iter().zip(b)`.
    fn zipped(x: &[f64], y: &[f64]) -> f64 {
        let mut s: f64 = std::iter::zip(x, y).map(|(a, b)| a * b).sum();
        for (a, b) in std::iter::zip(x.iter().rev(), y) {
            s = s * 0.5 + a - b;
        }
        s
    }
}

#[test]
fn while_adapters_iter_zip_and_len_run_as_rustc_does() {
    let m = lower(WHILE_ADAPTERS);
    let mut rng = Rng::new(17);
    for n in [0usize, 1, 2, 7] {
        for _ in 0..4 {
            let x = rng.normals(n);
            let t = rng.normal() * 0.5;
            same!(m, prefix_sums(&x[..], t));
            same!(m, while_in_loops(&x[..], t));
            let y = rng.normals(n + 1);
            same!(m, zipped(&x[..], &y[..]));
            for (a, b) in [(0usize, 0usize), (2, 9), (9, 2)] {
                same!(m, lengths(&x[..], a, b));
            }
        }
    }
}
