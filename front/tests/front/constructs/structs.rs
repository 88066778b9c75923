//! Structs with named fields: literals (fields in any order, shorthand), field reads and
//! writes (nested too), whole-struct assignment, structs passed by value and by `&`, returned,
//! chosen by `if`, carried around loops.

use crate::support::lower;
use crate::{dual, same};

dual! { STRUCTS:
    #[derive(Clone, Copy, Debug)]
    struct State {
        x: f64,
        v: f64,
    }
    #[derive(Clone, Copy)]
    struct Params {
        k: f64,
        damping: f64,
        h: f64,
    }
    #[derive(Clone, Copy)]
    struct Pair {
        a: State,
        b: State,
        n: usize,
        flag: bool,
    }
    fn accel(s: &State, p: &Params) -> f64 {
        -p.k * s.x - p.damping * (*s).v
    }
    fn step(s: State, p: &Params) -> State {
        let a = accel(&s, p);
        State { v: s.v + p.h * a, x: s.x + p.h * s.v }
    }
    fn energy(s: State, k: f64) -> f64 {
        0.5 * s.v * s.v + 0.5 * k * s.x * s.x
    }
    fn swap(p: Pair) -> Pair {
        Pair { a: p.b, b: p.a, n: p.n + 1, flag: !p.flag }
    }
    fn simulate(x0: f64, k: f64, damping: f64, n: usize) -> f64 {
        let params = Params { k, damping, h: 0.01 };
        let mut s = State { x: x0, v: 0.0 };
        let mut peak = 0.0;
        for i in 0..n {
            s = step(s, &params);
            if s.x > peak {
                peak = s.x;
            }
            if i % 7 == 0 {
                s.v *= 0.999;
            }
        }
        let mut pair = Pair { a: s, b: State { x: 1.0, v: x0 }, n: 0, flag: false };
        pair = swap(pair);
        pair.a.x += 0.5;
        pair.b = State { x: pair.b.x - 1.0, v: pair.b.v };
        let e = if pair.flag { energy(pair.a, k) } else { 0.0 };
        e + energy(pair.b, k) + peak + pair.n as f64
    }
    fn chosen(c: bool, x: f64) -> f64 {
        let a = State { x, v: 1.0 };
        let b = State { x: -x, v: 2.0 };
        let mut s = if c { a } else { b };
        let mut i = 0;
        while i < 3 {
            s = State { x: s.x + s.v, v: s.v * 0.5 };
            i += 1;
        }
        let t = s;
        s.x = 0.0;
        t.x + t.v + s.x
    }
}

#[test]
fn structs_lower_to_their_fields_and_run_as_rustc_does() {
    let m = lower(STRUCTS);
    for (x0, k, damping, n) in [(0.7, 2.0, 0.1, 500usize), (-1.5, 0.5, 0.0, 3), (0.0, 1.0, 1.0, 0)] {
        same!(m, simulate(x0, k, damping, n));
    }
    for (c, x) in [(true, 0.25), (false, 3.5), (true, -1e300)] {
        same!(m, chosen(c, x));
    }
    // Parameters and results are one IR value per scalar field.
    let step = m.func_by_name("step").unwrap();
    assert_eq!((step.params.len(), step.returns.len()), (5, 2));
    let swap = m.func_by_name("swap").unwrap();
    assert_eq!((swap.params.len(), swap.returns.len()), (6, 6));
}
