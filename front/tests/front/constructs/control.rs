//! `if`, `while`, `loop`, `break`, `continue`, labels and early `return`.

use crate::support::{Rng, lower};
use crate::{dual, same};
use jitdiff_ir::ArgValue;

dual! { IF_ELSE:
    fn classify(x: f64) -> i64 {
        if x < -1.0 {
            -2
        } else if x < 0.0 {
            -1
        } else if x == 0.0 {
            0
        } else {
            1
        }
    }
    fn piecewise(x: f64, y: f64) -> f64 {
        let mut out = 0.0;
        if x > y {
            out += x;
        }
        if y > 0.0 {
            out *= 2.0;
        } else {
            out -= y;
        }
        let scaled = if out > 10.0 { out / 10.0 } else { out } + 1.0;
        scaled * if x.is_nan() { 0.0 } else { 1.0 }
    }
    fn pair(x: f64) -> (f64, f64) {
        let (lo, hi) = if x < 0.0 { (x, -x) } else { (-x, x) };
        (lo, hi)
    }
}

#[test]
fn if_else_as_statement_and_expression() {
    let m = lower(IF_ELSE);
    for x in [-3.0, -1.0, -0.5, 0.0, -0.0, 0.5, 2.0, f64::NAN] {
        same!(m, classify(x));
        same!(m, pair(x));
        for y in [-1.0, 0.0, 3.0, 20.0] {
            same!(m, piecewise(x, y));
        }
    }
}

dual! { WHILE_LOOPS:
    fn collatz(n: i64) -> i64 {
        let mut n = n;
        let mut steps = 0;
        while n != 1 {
            if n % 2 == 0 {
                n /= 2;
            } else {
                n = 3 * n + 1;
            }
            steps += 1;
        }
        steps
    }
    fn newton_sqrt(a: f64) -> f64 {
        let mut x = a;
        let mut iterations = 0;
        while (x * x - a).abs() > 1e-12 * a && iterations < 100 {
            x = 0.5 * (x + a / x);
            iterations += 1;
        }
        x
    }
}

#[test]
fn while_loops_carry_state() {
    let m = lower(WHILE_LOOPS);
    for n in [1i64, 2, 7, 27, 97] {
        same!(m, collatz(n));
    }
    for a in [0.25, 2.0, 10.0, 1e6] {
        same!(m, newton_sqrt(a));
    }
}

dual! { LOOPS:
    fn first_above(x: &[f64], limit: f64) -> i64 {
        let mut i = 0;
        let found = loop {
            if i >= x.len() {
                break -1;
            }
            if x[i] > limit {
                break i as i64;
            }
            i += 1;
        };
        found
    }
    fn skip_negatives(x: &[f64]) -> f64 {
        let mut sum = 0.0;
        let mut i = 0;
        while i < x.len() {
            let v = x[i];
            i += 1;
            if v < 0.0 {
                continue;
            }
            sum += v;
        }
        sum
    }
    fn grid_search(n: usize, target: f64) -> (usize, usize) {
        let (mut bi, mut bj) = (0, 0);
        'outer: for i in 0..n {
            for j in 0..n {
                if (i * j) as f64 >= target {
                    (bi, bj) = (i, j);
                    break 'outer;
                }
                if j > i {
                    continue 'outer;
                }
            }
        }
        (bi, bj)
    }
    fn assigned_once_in_loop(x: &[f64]) -> f64 {
        let first_negative;
        let mut i = 0;
        loop {
            if i == x.len() || x[i] < 0.0 {
                first_negative = i as f64;
                break;
            }
            i += 1;
        }
        first_negative
    }
    fn bisect(lo: f64, hi: f64) -> f64 {
        let (mut lo, mut hi) = (lo, hi);
        loop {
            let mid = 0.5 * (lo + hi);
            if hi - lo < 1e-9 {
                return mid;
            }
            if mid * mid > 2.0 {
                hi = mid;
            } else {
                lo = mid;
            }
        }
    }
}

#[test]
fn loop_break_value_continue_labels_and_return_in_loops() {
    let m = lower(LOOPS);
    let x = [0.5, -1.0, 2.0, 7.0, -3.0];
    for limit in [-5.0, 1.0, 5.0, 10.0] {
        same!(m, first_above(&x[..], limit));
    }
    same!(m, skip_negatives(&x[..]));
    same!(m, assigned_once_in_loop(&x[..]));
    same!(m, assigned_once_in_loop(&x[..1]));
    for (n, target) in [(5usize, 6.0), (10, 50.0), (3, 100.0)] {
        same!(m, grid_search(n, target));
    }
    same!(m, bisect(0.0, 2.0));
}

dual! { EARLY_RETURN:
    fn safe_log(x: f64) -> f64 {
        if x <= 0.0 {
            return f64::NEG_INFINITY;
        }
        let y = x.ln();
        if y > 1.0 {
            return y * 2.0;
        }
        y
    }
    fn find(x: &[f64], v: f64) -> usize {
        for i in 0..x.len() {
            if x[i] == v {
                return i;
            }
        }
        x.len()
    }
    #[allow(dead_code)]
    fn nothing(x: &mut [f64]) {
        if x.is_empty() {
            return;
        }
        x[0] = 1.0;
    }
}

#[test]
fn early_returns() {
    let m = lower(EARLY_RETURN);
    for x in [-1.0, 0.0, 0.5, 2.0, 100.0] {
        same!(m, safe_log(x));
    }
    let data = [3.0, 1.0, 4.0, 1.0, 5.0];
    for v in [1.0, 5.0, 9.0] {
        same!(m, find(&data[..], v));
    }
    let mut args = [jitdiff_ir::ArgValue::SliceMut(vec![0.0, 2.0])];
    crate::support::run(&m, "nothing", &mut args);
    assert_eq!(args[0], jitdiff_ir::ArgValue::SliceMut(vec![1.0, 2.0]));
}

dual! { NESTED:
    fn nested(n: usize, x: f64) -> f64 {
        let mut acc = 0.0;
        let mut k = 0;
        for i in 0..n {
            let mut j = i;
            while j > 0 {
                if (i + j) % 3 == 0 {
                    acc += x * j as f64;
                } else if j % 2 == 0 {
                    acc -= 1.0 / (j as f64);
                    k += 1;
                    if k > 50 {
                        break;
                    }
                }
                j -= 1;
            }
        }
        acc + k as f64
    }
}

#[test]
fn nested_loops_and_branches() {
    let m = lower(NESTED);
    let mut rng = Rng::new(3);
    for n in [0usize, 1, 5, 17, 40] {
        let x = rng.normal();
        same!(m, nested(n, x));
    }
}

dual! { MATCHES:
    const LIMIT: i64 = 10;
    fn classify_int(n: i64, x: f64) -> f64 {
        match n {
            0 => x,
            1 | 2 => x * 2.0,
            -3 => -x,
            3..=5 => x + n as f64,
            LIMIT => 100.0,
            m @ 6..=9 if x > 0.0 => m as f64 * x,
            ..=-10 => -1.0,
            20.. => 20.0,
            11..15 => 11.0,
            other => other as f64 - x,
        }
    }
    fn on_bool(b: bool, x: f64) -> f64 {
        let y = match b {
            true => x.sin(),
            false => x.cos(),
        };
        y + match x > 0.0 {
            true => 1.0,
            false => 0.0,
        }
    }
    fn match_statement(n: usize) -> usize {
        let mut count = 0;
        for i in 0..n {
            match i % 3 {
                0 => count += 2,
                1 => {}
                _ => count += 1,
            }
        }
        count
    }
}

#[test]
fn match_on_integers_and_bools() {
    let m = lower(MATCHES);
    for n in -12i64..25 {
        for x in [-1.5, 0.0, 2.0] {
            same!(m, classify_int(n, x));
        }
    }
    for b in [false, true] {
        for x in [-1.0, 0.5] {
            same!(m, on_bool(b, x));
        }
    }
    for n in [0usize, 1, 7, 30] {
        same!(m, match_statement(n));
    }
}

dual! { PANICS:
    fn checked_mean(x: &[f64], n: usize) -> f64 {
        assert!(n > 0 && n <= x.len(), "need 1..={} values, got {}", x.len(), n);
        assert_ne!(x[0], f64::INFINITY);
        debug_assert!(x.len() >= n, "compiled out by the front end, as in a release build");
        let mut s = 0.0;
        for i in 0..n {
            s += match i % 2 {
                0 => x[i],
                1 => -x[i],
                _ => unreachable!("i % 2 is 0 or 1"),
            };
        }
        let mean = s / n as f64;
        if mean.is_nan() {
            panic!("NaN mean");
        }
        assert_eq!(mean, mean);
        mean
    }
}

#[test]
fn panics_and_failed_assertions_are_faults_where_rust_panics() {
    let m = lower(PANICS);
    let x = [1.5, -2.0, 0.25, 4.0];
    for n in 1..=4usize {
        same!(m, checked_mean(&x[..], n));
    }
    let interp = jitdiff_ir::Interpreter::new(&m);
    let run = |x: Vec<f64>, n: i64| interp.call("checked_mean", &mut [ArgValue::Slice(x), ArgValue::I64(n)]);
    // `n = 0`, `n` past the end, an infinite first element, a NaN mean: each where Rust panics.
    for (x, n) in [(x.to_vec(), 0), (x.to_vec(), 5), (vec![f64::INFINITY, 1.0], 1), (vec![f64::NAN, 1.0], 2)] {
        assert_eq!(run(x.clone(), n).unwrap_err().kind_name(), "Panic", "x = {x:?}, n = {n}");
    }
    // The debug assertion is not in the IR: the only loads are the loop's and `x[0]`'s.
    let text = jitdiff_ir::print_module(&m);
    assert_eq!(text.matches("load").count(), 3, "{text}");
}
