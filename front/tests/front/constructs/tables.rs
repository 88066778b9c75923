//! Constant `f64` arrays (`const Y: [f64; N] = [...]`) become read-only data tables of the module
//! (`const @Y = [...]`, read through `table @Y`): indexing, `len`, iteration and passing them to
//! functions behave as rustc compiles them, bit for bit.

use crate::support::{Rng, lower};
use crate::{dual, same};
use jitdiff_ir::{ArgValue, Opcode, RuntimeValue};

dual! { TABLES:
    const Y: [f64; 15] = [0.14, 0.18, 0.22, 0.25, 0.29, 0.32, 0.35, 0.39, 0.37, 0.58, 0.73, 0.96, 1.34, 2.1, 4.39];
    const N: usize = 4;
    const SCALE: f64 = 2.5;
    // Constant expressions: `std` constants, other constants, `as f64`, arithmetic, negation.
    const W: [f64; N] = [std::f64::consts::PI, -SCALE, N as f64 / 3.0, 1e-3 * (2.0 + SCALE)];
    const ZEROS: [f64; 3] = [0.0; 3];
    const R: &[f64] = &[1.5, -0.25, 8.0];
    const R3: &[f64; 3] = &[0.5, 0.25, 0.125];

    fn at(i: usize) -> f64 {
        Y[i] + W[i % W.len()]
    }
    fn lengths() -> usize {
        Y.len() * 100 + W.len() * 10 + ZEROS.len() + R.len() * 1000 + R3.len() * 10_000
    }
    fn sum_iter() -> f64 {
        Y.iter().sum()
    }
    fn sum_for(scale: f64) -> f64 {
        let mut s = 0.0;
        for y in Y.iter() {
            s += scale * y;
        }
        for &w in &W {
            s -= w;
        }
        for z in ZEROS {
            s += z;
        }
        s
    }
    fn weighted(x: &[f64]) -> f64 {
        x.iter().zip(R.iter()).map(|(a, b)| a * b).sum::<f64>() + R3.iter().enumerate().map(|(k, v)| k as f64 * v).sum::<f64>()
    }
    fn dot(a: &[f64], b: &[f64]) -> f64 {
        let mut s = 0.0;
        for i in 0..a.len().min(b.len()) {
            s += a[i] * b[i];
        }
        s
    }
    fn passed(x: &[f64]) -> f64 {
        dot(&Y, x) + dot(x, &W) + dot(R, R3)
    }
    fn last_below(t: f64) -> usize {
        let mut k = 0;
        while k < Y.len() && Y[k] < t {
            k += 1;
        }
        k
    }
    fn fold_max() -> f64 {
        Y.iter().fold(f64::NEG_INFINITY, |m, &y| if y > m { y } else { m })
    }
}

#[test]
fn constant_arrays_are_indexed_measured_and_iterated_as_rustc_does() {
    let m = lower(TABLES);
    for i in 0..15usize {
        same!(m, at(i));
    }
    same!(m, lengths());
    same!(m, sum_iter());
    for scale in [1.0, -0.5, 3.25] {
        same!(m, sum_for(scale));
    }
    let mut rng = Rng::new(11);
    for n in [0usize, 2, 3, 7, 20] {
        let x: Vec<f64> = rng.normals(n);
        same!(m, weighted(&x[..]));
        same!(m, passed(&x[..]));
    }
    for t in [0.0, 0.3, 0.38, 1.0, 5.0] {
        same!(m, last_below(t));
    }
    same!(m, fold_max());
}

#[test]
fn constant_arrays_are_tables_in_the_ir() {
    let m = lower(TABLES);
    let names: Vec<&str> = m.tables.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["Y", "W", "ZEROS", "R", "R3"]);
    let y = &m.tables[0];
    assert_eq!(y.data.len(), 15);
    assert_eq!(y.data[13].to_bits(), 2.1f64.to_bits());
    let w = &m.tables[1];
    let expected = [std::f64::consts::PI, -2.5, 4.0 / 3.0, 1e-3 * (2.0 + 2.5)];
    assert!(w.data.iter().zip(&expected).all(|(a, b)| a.to_bits() == b.to_bits()), "{:?}", w.data);
    // `Y[i]` is a load from the table, not 15 constants; a constant index folds.
    let at = m.func_by_name("at").unwrap();
    let ops: Vec<Opcode> = at.blocks.iter().flat_map(|b| &b.insts).map(|i| i.op).collect();
    assert!(ops.contains(&Opcode::Table) && ops.contains(&Opcode::Load), "{m}");
    assert!(ops.iter().filter(|&&op| op == Opcode::FConst).count() <= 2, "{m}");
    let lengths = m.func_by_name("lengths").unwrap();
    assert!(lengths.blocks.iter().flat_map(|b| &b.insts).all(|i| i.op == Opcode::IConst), "{m}");
    let text = jitdiff_ir::print_module(&m);
    assert!(text.starts_with("const @Y = [0.14, 0.18, 0.22"), "{text}");
}

#[test]
fn reading_outside_a_constant_array_is_a_fault() {
    let m = lower("const Y: [f64; 2] = [1.0, 2.0];\nfn f(i: usize) -> f64 { Y[i] }\n");
    let interp = jitdiff_ir::Interpreter::new(&m);
    assert_eq!(interp.call("f", &mut [ArgValue::I64(1)]).unwrap(), vec![RuntimeValue::F64(2.0)]);
    let err = interp.call("f", &mut [ArgValue::I64(2)]).unwrap_err();
    assert_eq!(err.kind_name(), "OutOfBounds");
}

dual! { BARD:
    const BARD_Y: [f64; 15] = [0.14, 0.18, 0.22, 0.25, 0.29, 0.32, 0.35, 0.39, 0.37, 0.58, 0.73, 0.96, 1.34, 2.1, 4.39];
    /// MGH 8, Bard: sum of (y_i - (x1 + u_i / (v_i x2 + w_i x3)))^2.
    fn bard(x: &[f64]) -> f64 {
        let mut s = 0.0;
        for (i, y) in BARD_Y.iter().enumerate() {
            let u = (i + 1) as f64;
            let v = 16.0 - u;
            let w = if u < v { u } else { v };
            let r = y - (x[0] + u / (v * x[1] + w * x[2]));
            s += r * r;
        }
        s
    }
}

#[test]
fn a_least_squares_fit_over_a_constant_table_lowers_to_a_loop() {
    let m = lower(BARD);
    for x in [[1.0, 1.0, 1.0], [0.08241057657583339, 1.133036653471504, 2.343694638941154], [0.3, -2.0, 5.0]] {
        same!(m, bard(&x));
    }
    let f = m.func_by_name("bard").unwrap();
    let insts: usize = f.blocks.iter().map(|b| b.insts.len()).sum();
    assert!(insts < 40, "{insts} instructions:\n{m}");
    assert!(f.blocks.iter().flat_map(|b| &b.insts).all(|i| i.op != Opcode::FConst || i.results.len() == 1));
}

#[test]
fn constant_arrays_inside_a_module_of_items_lower_the_same() {
    // What a `#[jitdiff::module] mod m { ... }` attribute hands the front end: the items of the
    // module's body, through `lower_items`.
    let file: syn::File = syn::parse_str(
        "mod fit { const Y: [f64; 3] = [1.0, 2.0, 4.0]; pub fn total(s: f64) -> f64 { s * Y.iter().sum::<f64>() } }",
    )
    .unwrap();
    let syn::Item::Mod(module) = &file.items[0] else { panic!("a module") };
    let items = &module.content.as_ref().unwrap().1;
    let m = jitdiff_front::lower_items(items).unwrap();
    assert_eq!(m.tables.len(), 1);
    let out = crate::support::run(&m, "total", &mut [ArgValue::F64(0.5)]);
    assert_eq!(out, vec![RuntimeValue::F64(3.5)]);
}
