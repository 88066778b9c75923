//! Random programs of the subset — nested `for`/`while`/`loop`, `if`, `break`, `continue`,
//! early `return`, mutable variables of both types, slice reads, `match` — compiled by rustc
//! into one binary and lowered by the front end; the interpreter must give the bits the binary
//! prints. This is what checks the SSA construction (joins, loop headers, exits) on shapes no one
//! wrote by hand. Skipped, with a note, where no `rustc` can be run.

use crate::support::{Rng, lower, run};
use jitdiff_ir::{ArgValue, RuntimeValue};
use std::fmt::Write as _;

/// How many functions (`FRONT_DIFF_FUNCTIONS` and `FRONT_DIFF_SEED` run other campaigns
/// locally), and the inputs each is run on.
const FUNCTIONS: usize = 60;
const INPUTS: [(f64, f64, usize); 4] = [(0.5, -1.25, 0), (2.0, 0.75, 3), (-3.5, 1.5, 5), (0.0, -0.0, 1)];
const SLICE: [f64; 5] = [0.25, -1.5, 2.0, 3.75, -0.5];
/// A helper the generated functions call with sub-slices, windows and chunks, and a struct
/// with methods every function keeps one of (`s`, its fields among the `f64` variables).
const HELPER: &str = "fn hv(v: &[f64], t: f64) -> f64 {
    let mut s = t;
    for (i, &e) in v.iter().enumerate() {
        s = s * 0.5 + e * (i as f64 + 1.0);
    }
    s + v.len() as f64
}
#[derive(Clone, Copy)]
struct Pt {
    p: f64,
    q: f64,
    k: usize,
}
impl Pt {
    fn mix(&self, t: f64) -> f64 {
        self.p * t + self.q - self.k as f64
    }
    fn bump(&mut self, t: f64) {
        self.p += t;
        self.k = (self.k + 1) % 5;
    }
    fn swapped(self) -> Pt {
        Pt { p: self.q, q: self.p, k: self.k }
    }
}
impl std::ops::Add for Pt {
    type Output = Pt;
    fn add(self, o: Pt) -> Pt {
        Pt { p: self.p + o.p, q: self.q - o.q, k: (self.k + o.k) % 5 }
    }
}
impl std::ops::Mul<f64> for Pt {
    type Output = Pt;
    fn mul(self, t: f64) -> Pt {
        Pt { p: self.p * t, q: self.q, k: self.k }
    }
}
";

/// A random function `fn gK(x: &[f64], a: f64, b: f64, n: usize) -> f64`.
struct Generator {
    rng: Rng,
    out: String,
    /// `f64` variables in scope (all mutable), `usize` ones (loop variables too), and the
    /// mutable `usize` ones.
    floats: Vec<String>,
    ints: Vec<String>,
    mutable_ints: Vec<String>,
    /// Per enclosing loop: whether it is a `loop` giving a value (so `break` needs one).
    loops: Vec<bool>,
    fresh: usize,
    /// Loop counters bound the work: every loop increments one and stops at a small limit.
    budget: usize,
}

impl Generator {
    fn pick(&mut self, n: usize) -> usize {
        self.rng.below(n as u64) as usize
    }
    fn any_float(&mut self) -> String {
        let k = self.pick(self.floats.len());
        self.floats[k].clone()
    }
    fn any_int(&mut self) -> String {
        let k = self.pick(self.ints.len());
        self.ints[k].clone()
    }
    fn any_mutable_int(&mut self) -> String {
        let k = self.pick(self.mutable_ints.len());
        self.mutable_ints[k].clone()
    }
    fn name(&mut self, prefix: &str) -> String {
        self.fresh += 1;
        format!("{prefix}{}", self.fresh)
    }
    fn float_expr(&mut self, depth: usize) -> String {
        let leaf = depth == 0 || self.pick(3) == 0;
        if leaf {
            return match self.pick(5) {
                0 => format!("{:.2}_f64", self.rng.range(-4.0, 4.0)),
                1 => format!("x[{} % x.len()]", self.int_expr(0)),
                2 => format!("({} as f64)", self.int_expr(0)),
                _ => self.any_float(),
            };
        }
        let (l, r) = (self.float_expr(depth - 1), self.float_expr(depth - 1));
        match self.pick(13) {
            9 => format!("({l} % ({r}).abs().max(0.5))"),
            10 => format!("({l}).rem_euclid(({r}).abs().max(0.5))"),
            11 => format!("({l}).copysign({r})"),
            12 => format!("({l}).asinh()"),
            0 => format!("({l} + {r})"),
            1 => format!("({l} - {r})"),
            2 => format!("({l} * {r})"),
            3 => format!("({l} / ({r}).abs().max(0.5))"),
            4 => format!("-({l})"),
            5 => format!("({l}).sin()"),
            // `+ 0.0` makes a zero result +0.0: Rust leaves min(0.0, -0.0) unspecified.
            6 => format!("(({l}).min({r}) + 0.0)"),
            7 => format!("(if {} {{ {l} }} else {{ {r} }})", self.condition(depth - 1)),
            _ => format!("({l}).mul_add(0.5, {r})"),
        }
    }
    fn int_expr(&mut self, depth: usize) -> String {
        match self.pick(if depth == 0 { 3 } else { 5 }) {
            0 => format!("{}", self.pick(4)),
            1 | 2 => self.any_int(),
            3 => format!("({} + {})", self.int_expr(depth - 1), self.int_expr(depth - 1)),
            _ => format!("({} % 3)", self.int_expr(depth - 1)),
        }
    }
    fn condition(&mut self, depth: usize) -> String {
        let (l, r) = (self.float_expr(depth.min(1)), self.float_expr(depth.min(1)));
        match self.pick(6) {
            0 => format!("{l} < {r}"),
            1 => format!("{l} >= {r}"),
            2 => format!("{} == {}", self.int_expr(0), self.int_expr(0)),
            3 => format!("({l} < {r} && {} < 2)", self.int_expr(0)),
            4 => format!("({l} > {r} || {} != 1)", self.int_expr(0)),
            _ => format!("!({l} <= {r})"),
        }
    }
    fn line(&mut self, indent: usize, text: &str) {
        let _ = writeln!(self.out, "{}{text}", "    ".repeat(indent));
    }
    fn statements(&mut self, indent: usize, count: usize) {
        let scope = (self.floats.len(), self.ints.len());
        for _ in 0..count {
            self.statement(indent);
        }
        self.floats.truncate(scope.0);
        self.ints.truncate(scope.1);
    }
    fn statement(&mut self, indent: usize) {
        match self.pick(8) {
            0 => return self.slice_statement(indent),
            1 => return self.struct_statement(indent),
            _ => {}
        }
        let nested = indent < 4 && self.budget > 0;
        match self.pick(if nested { 12 } else { 5 }) {
            0 | 1 => {
                let v = self.any_float();
                let e = self.float_expr(2);
                let op = ["=", "+=", "-=", "*="][self.pick(4)];
                self.line(indent, &format!("{v} {op} {e};"));
            }
            2 => {
                let v = self.name("f");
                let e = self.float_expr(2);
                self.line(indent, &format!("let mut {v} = {e};"));
                self.floats.push(v);
            }
            3 => {
                let k = self.any_mutable_int();
                let e = self.int_expr(1);
                self.line(indent, &format!("{k} = ({k} + {e}) % 7;"));
            }
            4 if !self.loops.is_empty() => {
                let c = self.condition(1);
                let jump = match (self.pick(2), self.loops.last()) {
                    (0, _) => "continue".to_string(),
                    (_, Some(true)) => format!("break {}", self.float_expr(1)),
                    _ => "break".to_string(),
                };
                self.line(indent, &format!("if {c} {{ {jump}; }}"));
            }
            4 => {
                let (c, e) = (self.condition(1), self.float_expr(1));
                self.line(indent, &format!("if {c} {{ return {e}; }}"));
            }
            5 | 6 => {
                let c = self.condition(2);
                self.line(indent, &format!("if {c} {{"));
                {
                    let count = 1 + self.pick(3);
                    self.statements(indent + 1, count);
                }
                self.line(indent, "} else {");
                {
                    let count = self.pick(3);
                    self.statements(indent + 1, count);
                }
                self.line(indent, "}");
            }
            7 | 8 => {
                self.budget -= 1;
                let i = self.name("i");
                let bound = 1 + self.pick(4);
                let range = match self.pick(3) {
                    0 => format!("0..{bound}"),
                    1 => format!("(0..=n.min({bound})).rev()"),
                    _ => format!("(1..{}).step_by(2)", bound + 2),
                };
                self.line(indent, &format!("for {i} in {range} {{"));
                self.ints.push(i);
                self.loop_body(indent, false);
                self.ints.pop();
                self.line(indent, "}");
            }
            9 => {
                self.budget -= 1;
                let k = self.name("w");
                self.line(indent, &format!("let mut {k} = 0;"));
                let limit = 1 + self.pick(4);
                self.line(indent, &format!("while {k} < {limit} {{"));
                self.line(indent + 1, &format!("{k} += 1;"));
                self.loop_body(indent, false);
                self.line(indent, "}");
            }
            10 => {
                self.budget -= 1;
                let (k, v) = (self.name("l"), self.name("r"));
                let limit = 1 + self.pick(4);
                let e = self.float_expr(1);
                self.line(indent, &format!("let mut {k} = 0;"));
                self.line(indent, &format!("let mut {v} = loop {{"));
                self.line(indent + 1, &format!("{k} += 1;"));
                self.line(indent + 1, &format!("if {k} > {limit} {{ break {e}; }}"));
                self.loop_body(indent, true);
                self.line(indent, "};");
                self.floats.push(v);
            }
            _ => {
                let v = self.any_float();
                let scrutinee = self.int_expr(1);
                let (e1, e2, e3) = (self.float_expr(1), self.float_expr(1), self.float_expr(1));
                self.line(indent, &format!("{v} = match {scrutinee} {{ 0 => {e1}, 1 | 2 => {e2}, _ => {e3} }};"));
            }
        }
    }
    /// Windows, chunks, sub-slices and a `move` closure bound with `let`.
    fn slice_statement(&mut self, indent: usize) {
        let v = self.any_float();
        match self.pick(7) {
            5 => {
                let (k, e) = (self.int_expr(1), self.float_expr(1));
                let call = match self.pick(3) {
                    0 => format!("hv(&x[({k}) % 3..], {e})"),
                    1 => format!("x.windows(2).map(|w| hv(w, {e})).sum::<f64>()"),
                    _ => format!("x.chunks(({k}) % 3 + 1).map(|c| hv(c, 0.5)).fold({e}, |m, h| m * 0.25 + h)"),
                };
                self.line(indent, &format!("{v} += {call};"));
            }
            4 => {
                let (k, r, e) = (self.int_expr(1), self.name("r"), self.float_expr(1));
                self.line(indent, &format!("let {r} = &x[({k}) % 3..];"));
                self.line(
                    indent,
                    &format!("{v} += {r}[{r}.len() - 1] * {e} + {r}.len() as f64 - {r}[1..].iter().sum::<f64>();"),
                );
            }
            0 => {
                let (size, e) = (1 + self.pick(3), self.float_expr(1));
                self.line(
                    indent,
                    &format!("{v} += x.windows({size}).map(|w| w[0] * {e} - w[w.len() - 1]).sum::<f64>();"),
                );
            }
            1 => {
                let size = 1 + self.pick(3);
                self.line(
                    indent,
                    &format!("for c in x.chunks({size}) {{ {v} = {v} * 0.5 + c[0] - c.iter().sum::<f64>(); }}"),
                );
            }
            2 => {
                let (k, m) = (self.int_expr(1), self.pick(6));
                self.line(
                    indent,
                    &format!("{v} += x[({k}) % 3..].iter().zip(&x[..{m}]).map(|(p, q)| p * q).sum::<f64>();"),
                );
            }
            6 => {
                // An `FnMut` closure updating `v` (its arguments literals: `v` is borrowed).
                let c = self.name("c");
                let (a, b) = (self.rng.range(-2.0, 2.0), self.rng.range(-2.0, 2.0));
                self.line(indent, &format!("let mut {c} = |t: f64| {{ {v} = {v} * 0.5 + t; }};"));
                self.line(indent, &format!("{c}({a:.2}_f64); {c}({b:.2}_f64);"));
            }
            _ => {
                let c = self.name("c");
                let (e, captured) = (self.float_expr(1), self.any_float());
                self.line(indent, &format!("let {c} = move |t: f64| t * {e} + {captured};"));
                let arg = self.float_expr(1);
                self.line(indent, &format!("{v} += {c}({arg}) - {c}(0.5);"));
            }
        }
    }
    /// Methods of `s` (`&self`, `&mut self`, by value), whole-struct assignment, a struct
    /// chosen by `if`.
    fn struct_statement(&mut self, indent: usize) {
        let e = self.float_expr(1);
        match self.pick(6) {
            5 => self.line(indent, &format!("s = s + s.swapped() * ({e});")),
            0 => self.line(indent, &format!("s.bump({e});")),
            1 => self.line(indent, "s = s.swapped();"),
            2 => {
                let v = self.any_float();
                self.line(indent, &format!("{v} += s.mix({e});"));
            }
            3 => {
                let c = self.condition(1);
                self.line(indent, &format!("s = if {c} {{ s.swapped() }} else {{ Pt {{ q: {e}, p: s.p, k: s.k }} }};"));
            }
            _ => {
                let k = self.any_int();
                self.line(indent, &format!("s.k = ({k} + s.k) % 4;"));
            }
        }
    }
    fn loop_body(&mut self, indent: usize, gives_value: bool) {
        self.loops.push(gives_value);
        {
            let count = 1 + self.pick(3);
            self.statements(indent + 1, count);
        }
        self.loops.pop();
    }
    fn function(&mut self, name: &str) -> String {
        self.out.clear();
        self.floats = vec!["a".into(), "b".into()];
        self.ints = vec!["n".into()];
        self.mutable_ints = vec!["n".into()];
        self.budget = 3;
        self.line(0, &format!("fn {name}(x: &[f64], a: f64, b: f64, n: usize) -> f64 {{"));
        self.line(1, "let mut a = a;");
        self.line(1, "let mut b = b;");
        self.line(1, "let mut n = n;");
        self.line(1, "let mut s = Pt { p: a * 0.5, q: b, k: n % 3 };");
        self.floats.extend(["s.p".to_string(), "s.q".to_string()]);
        {
            let count = 2 + self.pick(4);
            self.statements(1, count);
        }
        let result = self.floats.join(" + ");
        self.line(1, &format!("{result} + n as f64"));
        self.line(0, "}");
        self.out.clone()
    }
}

fn rustc_available() -> bool {
    std::process::Command::new("rustc").arg("--version").output().is_ok_and(|o| o.status.success())
}

#[test]
fn random_programs_agree_with_rustc() {
    if !rustc_available() {
        eprintln!("skipped: no rustc to compile the reference binary");
        return;
    }
    let env = |name: &str, default: u64| std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default);
    let count = env("FRONT_DIFF_FUNCTIONS", FUNCTIONS as u64) as usize;
    let mut generator = Generator {
        rng: Rng::new(env("FRONT_DIFF_SEED", 0xd1ff)),
        out: String::new(),
        floats: vec![],
        ints: vec![],
        mutable_ints: vec![],
        loops: vec![],
        fresh: 0,
        budget: 0,
    };
    let functions: Vec<String> = (0..count).map(|k| generator.function(&format!("g{k}"))).collect();
    // The reference: every function on every input, printed as bits.
    let mut program = String::from("#![allow(unused, unreachable_code, clippy::all)]\n");
    program.push_str(&functions.join("\n"));
    program.push_str(HELPER);
    let _ = writeln!(program, "fn main() {{\n    let x = {SLICE:?};");
    for k in 0..count {
        for (a, b, n) in INPUTS {
            let _ = writeln!(program, "    println!(\"{{:016x}}\", g{k}(&x, {a:?}, {b:?}, {n}).to_bits());");
        }
    }
    program.push_str("}\n");
    let dir = std::env::temp_dir().join(format!("jitdiff-front-differential-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let (source, binary) = (dir.join("reference.rs"), dir.join("reference"));
    std::fs::write(&source, &program).expect("the reference source is written");
    let compiled = std::process::Command::new("rustc")
        .args(["--edition", "2024", "-C", "overflow-checks=off", "-o"])
        .arg(&binary)
        .arg(&source)
        .output()
        .expect("rustc runs");
    assert!(
        compiled.status.success(),
        "rustc rejected a generated program:\n{}",
        String::from_utf8_lossy(&compiled.stderr)
    );
    let output = std::process::Command::new(&binary).output().expect("the reference runs");
    let _ = std::fs::remove_dir_all(&dir);
    let expected: Vec<u64> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|l| u64::from_str_radix(l, 16).expect("a hexadecimal line"))
        .collect();
    assert_eq!(expected.len(), count * INPUTS.len());

    let module = lower(&(functions.join("\n") + HELPER));
    let mut expected = expected.into_iter();
    for (k, function) in functions.iter().enumerate() {
        for (a, b, n) in INPUTS {
            let want = f64::from_bits(expected.next().unwrap_or_default());
            let mut args =
                [ArgValue::Slice(SLICE.to_vec()), ArgValue::F64(a), ArgValue::F64(b), ArgValue::I64(n as i64)];
            let got = match run(&module, &format!("g{k}"), &mut args).as_slice() {
                [RuntimeValue::F64(v)] => *v,
                other => panic!("g{k}: {other:?}"),
            };
            let same = got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan());
            assert!(same, "g{k}({a}, {b}, {n}): interpreter {got:e}, rustc {want:e}\n{function}");
        }
    }
}
