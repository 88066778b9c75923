//! The table checks itself: every IR parses, verifies and computes the plain-Rust value; the
//! independently known values at the start agree; published minimisers give the published minima.

use super::*;
use crate::relative_error;
use jitdiff_ir::{ArgValue, Interpreter, Module, RuntimeValue, parse_module, verify_module};

fn module(p: &MghProblem) -> Module {
    let module = parse_module(p.ir).unwrap_or_else(|e| panic!("MGH {} {}: parse error: {e}", p.number, p.name));
    verify_module(&module).unwrap_or_else(|e| panic!("MGH {} {}: verify error: {e}", p.number, p.name));
    module
}

fn interpret(module: &Module, x: &[f64]) -> f64 {
    let mut args = vec![ArgValue::Slice(x.to_vec())];
    let out = Interpreter::new(module).call(ENTRY, &mut args).unwrap();
    match out.as_slice() {
        [RuntimeValue::F64(v)] => *v,
        other => panic!("one f64 expected, got {other:?}"),
    }
}

/// Deterministic points near `x0`: relative and absolute perturbations of a few percent, so that
/// every branch taken at the start (and a few others) is exercised.
fn perturbed(x0: &[f64], k: usize) -> Vec<f64> {
    x0.iter()
        .enumerate()
        .map(|(j, &v)| {
            let s = ((k * 31 + j * 17) as f64 * 0.7).sin();
            v * (1.0 + 0.05 * s) + 0.03 * s
        })
        .collect()
}

#[test]
fn there_are_35_problems_in_the_papers_order() {
    let ps = problems();
    let numbers: Vec<u32> = ps.iter().map(|p| p.number).collect();
    let mut expected: Vec<u32> = (1..=35).collect();
    // Watson appears at n = 6 and n = 9.
    expected.insert(20, 20);
    assert_eq!(numbers, expected);
    for p in &ps {
        assert!(p.tolerance > 0.0 && p.tolerance.is_finite(), "{}", p.name);
        if let Some(m) = &p.minimiser {
            assert_eq!(m.len(), p.n(), "{}: minimiser length", p.name);
        }
    }
}

#[test]
fn the_ir_computes_the_reference_value() {
    for p in problems() {
        let module = module(&p);
        for k in 0..4 {
            let x = if k == 0 { p.x0.clone() } else { perturbed(&p.x0, k) };
            let got = interpret(&module, &x);
            let want = (p.value)(&x);
            assert!(got.is_finite() && want.is_finite(), "MGH {} {} at {x:?}: {got} vs {want}", p.number, p.name);
            assert!(
                relative_error(got, want) <= 1e-12,
                "MGH {} {} at {x:?}: IR {got} vs Rust {want}",
                p.number,
                p.name
            );
        }
        if let Some(m) = &p.minimiser {
            let got = interpret(&module, m);
            let want = (p.value)(m);
            assert!(
                relative_error(got, want) <= 1e-12 || (got - want).abs() <= 1e-20,
                "MGH {}: {got} vs {want}",
                p.number
            );
        }
    }
}

#[test]
fn the_value_at_the_start_matches_the_known_one() {
    for p in problems() {
        if let Some(f0) = p.f_x0 {
            let got = (p.value)(&p.x0);
            // MINPACK-1 prints norms to 10-16 digits; squaring doubles the relative error.
            assert!(relative_error(got, f0) <= 1e-9, "MGH {} {}: F(x0) = {got}, table {f0}", p.number, p.name);
        }
    }
}

#[test]
fn published_minimisers_give_the_published_minima() {
    for p in problems() {
        if let Some(m) = &p.minimiser {
            let got = (p.value)(m);
            assert!(
                p.reached(got),
                "MGH {} {}: F(minimiser) = {got:e}, f* = {:e} ± {:e}",
                p.number,
                p.name,
                p.f_star,
                p.tolerance
            );
        }
        // The reached minimum is one of those the paper lists (or the zero it names).
        assert!(p.f_star >= 0.0, "{}", p.name);
    }
}

#[test]
fn closed_form_starts() {
    let ps = problems();
    let get = |number: u32| ps.iter().find(|p| p.number == number).unwrap();
    // Powell badly scaled at (0, 1): f1 = -1, f2 = 1 + e^-1 - 1.0001.
    let p3 = get(3);
    let f2 = (-1f64).exp() - 0.0001;
    assert!(relative_error((p3.value)(&p3.x0), 1.0 + f2 * f2) <= 1e-15);
    // Beale at (1, 1): the model x1 (1 - x2^i) vanishes, so F = sum y_i^2.
    let p5 = get(5);
    assert_eq!((p5.value)(&p5.x0), 1.5f64.powi(2) + 2.25f64.powi(2) + 2.625f64.powi(2));
    // Linear rank 1 at x = 1 (n = 5, m = 10): sum_j j = 15, F = sum_i (15 i - 1)^2.
    let p33 = get(33);
    let want: f64 = (1..=10).map(|i| (15.0 * f64::from(i) - 1.0).powi(2)).sum();
    assert_eq!((p33.value)(&p33.x0), want);
    // Its zero-row variant: sum_{j=2..4} j = 9, F = 2 + sum_{i=2..9} (9 (i - 1) - 1)^2.
    let p34 = get(34);
    let want: f64 = 2.0 + (2..=9).map(|i| (9.0 * f64::from(i - 1) - 1.0).powi(2)).sum::<f64>();
    assert_eq!((p34.value)(&p34.x0), want);
}

#[test]
fn the_other_minima_are_where_the_paper_says() {
    let ps = problems();
    let get = |number: u32| ps.iter().find(|p| p.number == number).unwrap();
    // The global zeros beside the local minima that f_star names.
    assert_eq!((get(2).value)(&[5.0, 4.0]), 0.0);
    assert!((get(18).value)(&[1.0, 10.0, 1.0, 5.0, 4.0, 3.0]) <= 1e-30);
    assert_eq!((get(26).value)(&[0.0; 10]), 0.0);
    // Brown almost-linear: F = 1 at (0, ..., 0, n + 1).
    let mut x = vec![0.0; 10];
    x[9] = 11.0;
    assert_eq!((get(27).value)(&x), 1.0);
    for p in &ps {
        for &m in p.other_minima {
            assert!(!p.reached(m), "MGH {}: other minimum {m} is f_star", p.number);
            assert_eq!(p.reached_other(m), Some(m));
        }
        assert_eq!(p.reached_other(p.f_star), None, "MGH {}", p.number);
    }
}

#[test]
fn zero_minima_are_exact_at_the_closed_form_minimisers() {
    for p in problems() {
        if p.f_star == 0.0
            && let Some(m) = &p.minimiser
        {
            let got = (p.value)(m);
            assert!(got <= 1e-20, "MGH {} {}: F = {got:e} at the minimiser", p.number, p.name);
        }
    }
}
