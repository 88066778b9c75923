//! `find`, `max_by` and `min_by` with their `Option` taken apart at once, in the comparator
//! forms float code writes; ties, NaNs and empty chains as Rust has them.

use crate::dual;
use crate::support::{Rng, lower};
use jitdiff_ir::{ArgValue, RuntimeValue};

dual! { PICKS:
    use std::cmp::Ordering;
    fn picks(x: &[f64], t: f64) -> f64 {
        let max = *x.iter().max_by(|a, b| a.partial_cmp(b).unwrap()).unwrap();
        let min = x.iter().copied().min_by(|a, b| a.total_cmp(b)).unwrap();
        let closest = x
            .iter()
            .min_by(|a, b| (*a - t).abs().partial_cmp(&(*b - t).abs()).unwrap_or(Ordering::Equal))
            .copied()
            .unwrap_or(0.0);
        let big = x.iter().map(|v| v * v).max_by(f64::total_cmp).expect("non-empty");
        let first_above = x.iter().find(|&&v| v > t).copied().unwrap_or(-1.0);
        let none = x.iter().find(|v| **v > 1e9).is_none();
        let lse = max + x.iter().map(|v| (v - max).exp()).sum::<f64>().ln();
        lse + min * 0.5 + closest + big * 0.1 + first_above + if none { 1.0 } else { 0.0 }
    }
    // Ties: `max_by` keeps the later of equal items, `min_by` the earlier (told apart here by
    // the sign of zero: 1 / -0 is -inf).
    fn zero_ties(x: &[f64]) -> f64 {
        let a = x.iter().copied().max_by(|a, b| a.partial_cmp(b).unwrap()).unwrap();
        let b = x.iter().copied().min_by(|a, b| a.partial_cmp(b).unwrap()).unwrap();
        (if 1.0 / a < 0.0 { 2.0 } else { 0.0 }) + if 1.0 / b < 0.0 { 1.0 } else { 0.0 }
    }
    fn largest_or(x: &[f64], default: f64) -> f64 {
        x.iter().copied().max_by(|a, b| a.partial_cmp(b).unwrap_or(Ordering::Less)).unwrap_or(default)
    }
    fn total_max(x: &[f64]) -> f64 {
        x.iter().copied().max_by(f64::total_cmp).unwrap()
    }
    // `reduce`, and an iterator's `last()` and `nth(k)`.
    fn folds(x: &[f64], k: usize) -> f64 {
        let biggest = x.iter().copied().reduce(f64::max).unwrap();
        let sum = x.iter().map(|v| v * 2.0).reduce(|a, b| a + b).unwrap_or(-1.0);
        let last = x.iter().rev().skip(1).last().copied().unwrap_or(0.5);
        let kth = x.iter().nth(k).copied().unwrap_or(-2.0);
        let some = x.iter().filter(|v| **v > 0.0).last().is_some();
        biggest + sum * 0.5 + last + kth * 3.0 + if some { 1.0 } else { 0.0 }
    }
    // `chain` of slices, sub-slices and ranges, under other adapters.
    fn chained(x: &[f64], y: &[f64], n: usize) -> f64 {
        let a: f64 = x.iter().chain(y.iter()).map(|v| v * v).sum();
        let b = x.iter().rev().chain(y.iter().skip(1)).enumerate().map(|(i, v)| v * i as f64).sum::<f64>();
        let c: usize = (0..n).chain(5..7).sum();
        let m = x.iter().chain(&y[..1]).copied().max_by(f64::total_cmp).unwrap_or(0.0);
        let mut d = 0.0;
        for (k, v) in y.iter().chain(x.iter()).rev().enumerate() {
            d += v * (k as f64 + 0.5);
        }
        a + b + c as f64 + m + d
    }
    // `if let Some(v) = ...` of the same, and of a slice's ends.
    fn if_lets(x: &[f64], t: f64) -> f64 {
        let mut s = 0.0;
        if let Some(m) = x.iter().copied().max_by(|a, b| a.total_cmp(b)) {
            s += m * 2.0;
        }
        if let Some(&first) = x.first() {
            s += first;
        } else {
            s -= 100.0;
        }
        let above = if let Some(v) = x.iter().find(|v| **v > t) {
            *v
        } else if let Some(l) = x.last() {
            l * 0.5
        } else {
            -1.0
        };
        if let Some(mut k) = x.iter().position(|v| *v < 0.0) {
            k += 1;
            s += k as f64;
        }
        let matched = match x.iter().copied().reduce(|a, b| a * 0.5 + b) {
            Some(r) => r * 3.0,
            None => 0.25,
        };
        let reversed = match x.last() {
            None => -0.5,
            Some(&l) => {
                s += 1.0;
                l
            }
        };
        s + above + matched + reversed
    }
    // Pairs from `enumerate` / `zip`: argmax and argmin, `map` of the `Option`, `if let`.
    fn arg_picks(x: &[f64], y: &[f64]) -> f64 {
        let i = x.iter().enumerate().max_by(|a, b| a.1.partial_cmp(b.1).unwrap()).map(|(i, _)| i).unwrap_or(9);
        let (j, low) = x.iter().enumerate().min_by(|a, b| a.1.total_cmp(b.1)).unwrap_or((8, &0.25));
        let pair = x
            .iter()
            .zip(y.iter())
            .max_by(|a, b| (a.0 * a.1).total_cmp(&(b.0 * b.1)))
            .map(|(a, b)| a - b)
            .unwrap_or(0.0);
        let first_big = x.iter().enumerate().find(|(_, v)| **v > 1.0).map(|(k, _)| k as f64).unwrap_or(-1.0);
        let mut s = 0.0;
        if let Some((k, &v)) = x.iter().enumerate().max_by(|a, b| a.1.total_cmp(b.1)) {
            s += v * k as f64;
        }
        let last = x.iter().enumerate().last().map(|(k, v)| k as f64 + v).unwrap_or(0.0);
        let d = x.iter().enumerate().max_by(|a, b| a.1.total_cmp(b.1)).unwrap_or((7, &0.5)).0;
        i as f64 + j as f64 * 10.0 + low + pair + first_big + s + last + d as f64
    }
    fn strict_max(x: &[f64]) -> f64 {
        x.iter().copied().max_by(|a, b| a.partial_cmp(b).expect("no NaN")).unwrap()
    }
}

#[test]
fn find_max_by_and_min_by_pick_as_rustc_does() {
    let m = lower(PICKS);
    let mut rng = Rng::new(41);
    let call = |name: &str, args: &mut [ArgValue]| jitdiff_ir::Interpreter::new(&m).call(name, args);
    for n in [1usize, 2, 5, 9] {
        for _ in 0..4 {
            // Rounded values, so that ties and repeated extremes occur.
            let x: Vec<f64> = rng.normals(n).iter().map(|v| (v * 2.0).round() / 2.0).collect();
            let t = rng.normal();
            let got = call("picks", &mut [ArgValue::Slice(x.clone()), ArgValue::F64(t)]).unwrap();
            assert_eq!(got, vec![RuntimeValue::F64(picks(&x, t))], "x = {x:?}, t = {t}");
            let y = rng.normals(1 + n % 3);
            let got =
                call("chained", &mut [ArgValue::Slice(x.clone()), ArgValue::Slice(y.clone()), ArgValue::I64(n as i64)]);
            assert_eq!(got.unwrap(), vec![RuntimeValue::F64(chained(&x, &y, n))], "x = {x:?}, y = {y:?}");
            let got = call("arg_picks", &mut [ArgValue::Slice(x.clone()), ArgValue::Slice(y.clone())]).unwrap();
            assert_eq!(got, vec![RuntimeValue::F64(arg_picks(&x, &y))], "x = {x:?}, y = {y:?}");
            let got = call("if_lets", &mut [ArgValue::Slice(x.clone()), ArgValue::F64(t)]).unwrap();
            assert_eq!(got, vec![RuntimeValue::F64(if_lets(&x, t))], "x = {x:?}, t = {t}");
            for k in [0, 1, n - 1, n, n + 3] {
                let got = call("folds", &mut [ArgValue::Slice(x.clone()), ArgValue::I64(k as i64)]).unwrap();
                assert_eq!(got, vec![RuntimeValue::F64(folds(&x, k))], "x = {x:?}, k = {k}");
            }
        }
    }
    // Signed zeros and NaNs: `total_cmp` puts -0 below +0 and a (positive) NaN above all;
    // `unwrap_or(Ordering::Less)` makes an unordered pair take the later item.
    for x in [vec![0.0, -0.0], vec![-0.0, 0.0], vec![0.0, -0.0, 0.0], vec![-0.0, -0.0]] {
        let got = call("zero_ties", &mut [ArgValue::Slice(x.clone())]).unwrap();
        assert_eq!(got, vec![RuntimeValue::F64(zero_ties(&x))], "{x:?}");
    }
    for x in [vec![0.0, -0.0], vec![-0.0, 0.0], vec![1.0, f64::NAN, 3.0], vec![f64::NAN, 2.0], vec![f64::INFINITY, 1.0]]
    {
        for (name, want) in [("total_max", total_max(&x)), ("largest_or", largest_or(&x, 7.0))] {
            let got = call(
                name,
                &mut [ArgValue::Slice(x.clone()), ArgValue::F64(7.0)][..if name == "total_max" { 1 } else { 2 }],
            );
            let RuntimeValue::F64(got) = got.unwrap()[0] else { panic!("{name}: not an f64") };
            assert_eq!(got.to_bits(), want.to_bits(), "{name}({x:?}): got {got}, want {want}");
        }
    }
    assert_eq!(
        call("largest_or", &mut [ArgValue::Slice(vec![]), ArgValue::F64(7.0)]).unwrap(),
        vec![RuntimeValue::F64(7.0)]
    );
    let got = call("if_lets", &mut [ArgValue::Slice(vec![]), ArgValue::F64(0.0)]).unwrap();
    assert_eq!(got, vec![RuntimeValue::F64(if_lets(&[], 0.0))]);
    let x = vec![1.0, 3.0, -2.0, 3.0];
    assert_eq!(call("strict_max", &mut [ArgValue::Slice(x.clone())]).unwrap(), vec![RuntimeValue::F64(strict_max(&x))]);
    // Where Rust panics: `partial_cmp(..).expect(..)` meeting a NaN, `unwrap` of an empty chain.
    assert_eq!(call("folds", &mut [ArgValue::Slice(vec![]), ArgValue::I64(0)]).unwrap_err().kind_name(), "Panic");
    for x in [vec![1.0, f64::NAN], vec![]] {
        let err = call("strict_max", &mut [ArgValue::Slice(x.clone())]).unwrap_err();
        assert_eq!(err.kind_name(), "Panic", "{x:?}");
    }
    // One item: the comparator never runs, so a lone NaN is the answer.
    let got = call("strict_max", &mut [ArgValue::Slice(vec![f64::NAN])]).unwrap();
    assert!(matches!(got[..], [RuntimeValue::F64(v)] if v.is_nan()), "{got:?}");
}

dual! { DEFAULTS:
    // A pick's or a slice end's `Option` taken apart with a default: `map_or`,
    // `unwrap_or_default`, `map_or_else`, `unwrap_or_else`, and `map` before `unwrap_or`.
    fn defaults(x: &[f64], t: f64) -> f64 {
        let a = x.first().map_or(-1.0, |v| v * 2.0);
        let b = x.last().copied().map_or(0.5, |v| v.exp());
        let c = x.first().map(|v| v + t).unwrap_or(t);
        let d = x.iter().copied().find(|&v| v > t).unwrap_or_default();
        let e = x.iter().position(|&v| v > t).map_or(7, |i| i + 1) as f64;
        let f = x.last().copied().unwrap_or_else(|| t * 3.0);
        let g = x.iter().copied().max_by(f64::total_cmp).map_or_else(|| -t, |m| m * m);
        let h = if x.first().map(|v| *v > t).unwrap_or(false) { 1.0 } else { 0.0 };
        a + b + c + d + e + f + g + h + gets(x, t)
    }
    // `get(k)` past the end and not, and `if let` of ends through `map`.
    fn gets(x: &[f64], t: f64) -> f64 {
        let a = x.get(1).copied().unwrap_or(t);
        let b = x.get(3).map_or(0.25, |v| v * v);
        let c = if let Some(&v) = x.get(2) { v } else { -2.0 };
        let d = if let Some(v) = x.last().map(|v| v * 3.0) { v } else { 5.0 };
        a + b * 10.0 + c * 100.0 + d * 1000.0
    }
    // The default of `unwrap_or_else` runs only where there is no item: here it would read past
    // the end of `y` (an `OutOfBounds` fault) if it ran for a non-empty `x`.
    fn lazy_default(x: &[f64], y: &[f64]) -> f64 {
        x.first().copied().unwrap_or_else(|| y[5])
    }
}

#[test]
fn options_with_defaults_are_taken_apart_as_rustc_does() {
    let m = lower(DEFAULTS);
    let call = |name: &str, args: &mut [ArgValue]| jitdiff_ir::Interpreter::new(&m).call(name, args);
    let mut rng = Rng::new(7);
    for n in [0usize, 1, 2, 5] {
        for _ in 0..4 {
            let x = rng.normals(n);
            let t = rng.normal();
            let got = call("defaults", &mut [ArgValue::Slice(x.clone()), ArgValue::F64(t)]).unwrap();
            assert_eq!(got, vec![RuntimeValue::F64(defaults(&x, t))], "x = {x:?}, t = {t}");
        }
    }
    let got = call("lazy_default", &mut [ArgValue::Slice(vec![2.5]), ArgValue::Slice(vec![1.0])]).unwrap();
    assert_eq!(got, vec![RuntimeValue::F64(lazy_default(&[2.5], &[1.0]))]);
    let err = call("lazy_default", &mut [ArgValue::Slice(vec![]), ArgValue::Slice(vec![1.0])]).unwrap_err();
    assert_eq!(err.kind_name(), "OutOfBounds");
    // Kept as an `Option`, `first()` says how to take it apart.
    let err = jitdiff_front::lower_source("fn f(x: &[f64]) -> f64 {\n    let o = x.first();\n    0.0\n}").unwrap_err();
    assert!(err.to_string().contains(".map_or(d, |v| ..)"), "{err}");
    let err = jitdiff_front::lower_source("fn f(x: &[f64]) -> f64 {\n    let o = x.get(3);\n    0.0\n}").unwrap_err();
    assert!(err.to_string().contains("`get(k)` results kept as `Option`s"), "{err}");
}
