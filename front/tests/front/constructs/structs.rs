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

dual! { METHODS:
    #[derive(Clone, Copy, Debug)]
    struct V {
        x: f64,
        y: f64,
    }
    impl V {
        fn new(x: f64, y: f64) -> Self {
            Self { x, y }
        }
        fn dot(&self, o: &V) -> f64 {
            self.x * o.x + self.y * o.y
        }
        fn scaled(self, k: f64) -> V {
            V::new(self.x * k, self.y * k)
        }
        fn add(&mut self, o: V) {
            self.x += o.x;
            self.y += o.y;
        }
        fn reflect(&mut self) {
            *self = V { x: self.y, y: (*self).x };
        }
        fn normalize(&mut self) -> f64 {
            let n = self.dot(self).sqrt();
            if n == 0.0 {
                return 0.0;
            }
            self.x /= n;
            self.y /= n;
            n
        }
    }
    struct Body {
        pos: V,
        vel: V,
        mass: f64,
    }
    impl Body {
        fn kinetic(&self) -> f64 {
            0.5 * self.mass * self.vel.dot(&self.vel)
        }
        fn push(&mut self, f: V, h: f64) {
            self.vel.add(f.scaled(h / self.mass));
            let d = self.vel.scaled(h);
            self.pos.add(d);
        }
    }
    fn sim(x0: f64, v0: f64, mass: f64, n: usize) -> f64 {
        let mut b = Body { pos: V::new(x0, 0.0), vel: V::new(0.0, v0), mass };
        let mut total = 0.0;
        for _ in 0..n {
            let f = b.pos.scaled(-1.0);
            b.push(f, 0.01);
            total += b.kinetic();
        }
        let mut dir = b.pos;
        let len = dir.normalize();
        dir.reflect();
        let mut zero = V::new(0.0, 0.0);
        total + len + dir.x + zero.normalize() + Body::kinetic(&b)
    }
    // Methods of values that are no variable: a call's result, a literal, a chain of them, and
    // a `&mut self` method that changes only the temporary.
    fn chained(x: f64, y: f64) -> f64 {
        let a = V::new(x, y);
        let b = V { x: y, y: 2.0 };
        a.scaled(2.0).scaled(0.5).dot(&b) + V::new(1.0, x).dot(&a) + V { x, y: 1.0 }.scaled(y).x
            + a.scaled(3.0).normalize()
            + a.x
    }
}

#[test]
fn methods_and_associated_functions_run_as_rustc_does() {
    let m = lower(METHODS);
    for (x0, v0, mass, n) in [(0.7, 0.3, 2.0, 300usize), (0.0, 0.0, 1.0, 5), (-2.0, 1.5, 0.5, 0)] {
        same!(m, sim(x0, v0, mass, n));
        same!(m, chained(x0, v0));
    }
    // `&mut self` returns the new `self` after the method's own results.
    let normalize = m.func_by_name("V__normalize").unwrap();
    assert_eq!((normalize.params.len(), normalize.returns.len()), (2, 3));
}

dual! { ASSOCIATED_CONSTANTS:
    // Constants of an `impl` block, read as `Self::K` inside it and `Spring::K` anywhere, one
    // defined from another.
    struct Spring {
        x: f64,
    }
    impl Spring {
        const K: f64 = 3.5;
        const HALF_K: f64 = Self::K / 2.0;
        const STEPS: usize = 4;
        fn energy(&self) -> f64 {
            Self::HALF_K * self.x * self.x
        }
    }
    fn springs(x: f64) -> f64 {
        let mut s = Spring { x };
        let mut e = 0.0;
        for _ in 0..Spring::STEPS {
            e += s.energy();
            s.x -= 0.1 * Spring::K * s.x;
        }
        e
    }
}

#[test]
fn associated_constants_are_module_constants() {
    let m = lower(ASSOCIATED_CONSTANTS);
    for x in [0.0, 1.25, -3.0] {
        same!(m, springs(x));
    }
}

dual! { SLICES:
    struct Data<'a> {
        x: &'a [f64],
        y: &'a [f64],
        lambda: f64,
    }
    #[derive(Clone, Copy)]
    struct Model {
        w: f64,
        b: f64,
    }
    struct Out<'a> {
        residuals: &'a mut [f64],
        calls: usize,
    }
    impl<'a> Data<'a> {
        fn n(&self) -> usize {
            self.x.len()
        }
        fn loss(&self, m: &Model) -> f64 {
            let mut s = 0.0;
            for i in 0..self.n() {
                let r = m.w * self.x[i] + m.b - self.y[i];
                s += r * r;
            }
            s / self.n() as f64 + self.lambda * m.w * m.w
        }
    }
    impl Out<'_> {
        fn record(&mut self, d: &Data, m: &Model) {
            for (i, (&xi, &yi)) in d.x.iter().zip(d.y.iter()).enumerate() {
                self.residuals[i] = m.w * xi + m.b - yi;
            }
            self.calls += 1;
        }
    }
    fn total(d: &Data<'_>, m: Model) -> f64 {
        d.loss(&m) + d.x.iter().sum::<f64>() * 0.5
    }
    fn fit(x: &[f64], y: &[f64], w: f64, b: f64, res: &mut [f64]) -> f64 {
        let d = Data { x, y, lambda: 0.01 };
        let m = Model { w, b };
        let mut out = Out { residuals: res, calls: 0 };
        out.record(&d, &m);
        out.record(&d, &Model { w: m.w * 0.5, b: m.b });
        total(&d, m) + out.calls as f64 + out.residuals[0]
    }
}

#[test]
fn structs_holding_slices_read_and_write_the_callers_slices() {
    use jitdiff_ir::{ArgValue, RuntimeValue};
    let m = lower(SLICES);
    let mut rng = crate::support::Rng::new(11);
    for n in [1usize, 4, 9] {
        let (x, y, res) = (rng.normals(n), rng.normals(n), rng.normals(n));
        let mut native = res.clone();
        let want = fit(&x, &y, 1.7, -0.2, &mut native);
        let mut args =
            [ArgValue::Slice(x), ArgValue::Slice(y), ArgValue::F64(1.7), ArgValue::F64(-0.2), ArgValue::SliceMut(res)];
        let got = crate::support::run(&m, "fit", &mut args);
        assert_eq!(got, vec![RuntimeValue::F64(want)], "n = {n}");
        assert_eq!(args[4], ArgValue::SliceMut(native));
    }
    // A `&mut self` method returns (and writes back) only the fields that can change.
    let record = m.func_by_name("Out__record").unwrap();
    assert_eq!(record.returns.len(), 1);
}

dual! { OPERATORS:
    use std::ops::{Add, AddAssign, Mul, Neg, Sub};
    #[derive(Clone, Copy, Debug)]
    struct V3 {
        x: f64,
        y: f64,
        z: f64,
    }
    impl V3 {
        fn dot(&self, o: &V3) -> f64 {
            self.x * o.x + self.y * o.y + self.z * o.z
        }
        fn norm(&self) -> f64 {
            self.dot(self).sqrt()
        }
    }
    impl Add for V3 {
        type Output = V3;
        fn add(self, o: V3) -> V3 {
            V3 { x: self.x + o.x, y: self.y + o.y, z: self.z + o.z }
        }
    }
    impl Sub for V3 {
        type Output = Self;
        fn sub(self, o: Self) -> Self {
            V3 { x: self.x - o.x, y: self.y - o.y, z: self.z - o.z }
        }
    }
    impl Mul<f64> for V3 {
        type Output = V3;
        fn mul(self, k: f64) -> V3 {
            V3 { x: self.x * k, y: self.y * k, z: self.z * k }
        }
    }
    impl Mul<V3> for f64 {
        type Output = V3;
        fn mul(self, v: V3) -> V3 {
            v * self
        }
    }
    impl Neg for V3 {
        type Output = V3;
        fn neg(self) -> V3 {
            V3 { x: -self.x, y: -self.y, z: -self.z }
        }
    }
    impl AddAssign for V3 {
        fn add_assign(&mut self, o: V3) {
            self.x += o.x;
            self.y += o.y;
            self.z += o.z;
        }
    }
    impl std::ops::MulAssign<f64> for V3 {
        fn mul_assign(&mut self, k: f64) {
            *self = *self * k;
        }
    }
    fn orbit(px: f64, vy: f64, gm: f64, n: usize) -> f64 {
        let mut p = V3 { x: px, y: 0.0, z: 0.1 };
        let mut v = V3 { x: 0.0, y: vy, z: 0.0 };
        let h = 0.01;
        let mut e = 0.0;
        for _ in 0..n {
            let r = p.norm();
            let a = -(gm / (r * r * r)) * p;
            v += a * h;
            p = p + h * v;
            let q = p.clone() - v * 0.0;
            e += 0.5 * v.dot(&v) - gm / q.norm();
        }
        v *= 2.0;
        e + (-v).x + p.z
    }
}

#[test]
fn struct_operators_call_their_std_ops_impls_as_rustc_does() {
    let m = lower(OPERATORS);
    for (px, vy, gm, n) in [(1.0, 0.9, 1.0, 700usize), (2.0, 0.3, 0.5, 10), (1.0, 0.0, 1.0, 0)] {
        same!(m, orbit(px, vy, gm, n));
    }
    for name in ["V3__add__V3", "V3__sub__V3", "V3__mul__f64", "f64__mul__V3", "V3__neg", "V3__add_assign__V3"] {
        assert!(m.func_by_name(name).is_some(), "{name}");
    }
}

dual! { TUPLES:
    fn polar2(x: f64) -> (f64, f64) {
        (x.sin() * 2.0, x.cos())
    }
    fn minmax(v: &[f64]) -> (f64, f64, usize) {
        let mut best = (v[0], v[0], 0usize);
        for (i, &e) in v.iter().enumerate() {
            if e < best.0 {
                best.0 = e;
            }
            if e > best.1 {
                best = (best.0, e, i);
            }
        }
        best
    }
    fn tuples(x: f64, v: &[f64]) -> f64 {
        let p = polar2(x);
        let mut acc: (f64, f64) = (0.0, 1.0);
        for k in 0..4 {
            acc = (acc.0 + p.0 * k as f64, acc.1 * p.1);
            if acc.0 > 3.0 {
                acc.1 += 0.5;
            }
        }
        let m = minmax(v);
        let q = m;
        acc.0 + acc.1 + q.0 - q.1 + m.2 as f64
    }
}

#[test]
fn tuple_variables_hold_their_elements() {
    let m = lower(TUPLES);
    for (x, v) in [(0.7, vec![0.5, -1.0, 2.5, 0.3]), (-2.0, vec![1.0]), (3.5, vec![-0.5, -0.25, 4.0])] {
        same!(m, tuples(x, &v));
    }
}

dual! { PATTERNS:
    #[derive(Clone, Copy)]
    struct In {
        a: f64,
        b: f64,
    }
    #[derive(Clone, Copy)]
    struct S {
        x: f64,
        v: f64,
        inner: In,
        n: usize,
    }
    fn destructure(p: f64, q: f64) -> f64 {
        let s = S { x: p, v: q, inner: In { a: p * q, b: 2.0 }, n: 3 };
        let S { x, v: speed, inner: In { a, .. }, .. } = s;
        let S { mut n, inner, .. } = s;
        n += 1;
        let In { b, a: _ } = inner;
        x + speed * a + n as f64 + b + inner.a
    }
}

#[test]
fn struct_patterns_bind_fields() {
    let m = lower(PATTERNS);
    for (p, q) in [(0.7, -1.3), (0.0, 2.5), (-3.0, 0.125)] {
        same!(m, destructure(p, q));
    }
}

dual! { EQUALITY:
    #[derive(Clone, Copy, PartialEq)]
    struct Q {
        x: f64,
        n: usize,
        on: bool,
    }
    fn eqs(a: f64, b: f64) -> f64 {
        let p = Q { x: a, n: 2, on: true };
        let q = Q { x: b, n: 2, on: true };
        let r = Q { x: a, n: 3, on: false };
        let mut s = 0.0;
        if p == q {
            s += 1.0;
        }
        if p != r {
            s += 10.0;
        }
        if p == p {
            s += 100.0;
        }
        let nan = Q { x: a / 0.0 * 0.0, n: 0, on: false };
        if nan != nan {
            s += 1000.0;
        }
        s
    }
}

#[test]
fn struct_equality_compares_every_field() {
    let m = lower(EQUALITY);
    for (a, b) in [(1.5, 1.5), (1.5, 2.0), (0.0, -0.0), (f64::NAN, f64::NAN)] {
        same!(m, eqs(a, b));
    }
}

dual! { TUPLE_STRUCTS:
    #[derive(Clone, Copy)]
    struct W2(f64, f64);
    impl W2 {
        fn dot(&self, o: &W2) -> f64 {
            self.0 * o.0 + self.1 * o.1
        }
        fn scale(self, k: f64) -> Self {
            Self(self.0 * k, self.1 * k)
        }
    }
    impl std::ops::Add for W2 {
        type Output = W2;
        fn add(self, o: W2) -> W2 {
            W2(self.0 + o.0, self.1 + o.1)
        }
    }
    struct Duo(W2, usize);
    fn tuple_structs(a: f64, b: f64) -> f64 {
        let mut v = W2(a, b);
        v.0 += 1.0;
        let w = v.scale(2.0) + W2(b, a);
        let p = Duo(w, 3);
        let mut q = p.0;
        q.1 = q.0 - q.1;
        let W2(x, mut y) = q;
        y *= 2.0;
        let Duo(W2(_, last), ..) = p;
        v.dot(&w) + q.1 + p.1 as f64 + (p.0).0 + x + y + last
    }
}

#[test]
fn tuple_structs_are_structs_with_numbered_fields() {
    let m = lower(TUPLE_STRUCTS);
    for (a, b) in [(0.7, -1.3), (0.0, 2.5), (-3.0, 0.125)] {
        same!(m, tuple_structs(a, b));
    }
}
