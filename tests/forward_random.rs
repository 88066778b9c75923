//! Forward mode on random smooth programs (branches, loops, slices, stores, calls): JVPs match
//! central finite differences, derived IR verifies, and every lane of a width-4 sweep equals the
//! scalar sweep in that direction.

use jitdiff::ad::derive_forward;
use jitdiff::ir::arbitrary::{ArgSpec, GenConfig, arb_case};
use jitdiff::ir::{ArgValue, Interpreter, Module, RuntimeValue, Type};
use proptest::prelude::*;

const STEP_LIMIT: u64 = 5_000_000;

fn run(module: &Module, name: &str, args: &mut [ArgValue]) -> Option<Vec<RuntimeValue>> {
    Interpreter::new(module).with_step_limit(STEP_LIMIT).call(name, args).ok()
}

/// Primal args moved by `h` along `dir` (one entry per scalar of every active argument).
fn shifted(args: &[ArgSpec], wrt: &[bool], dir: &[f64], h: f64) -> Vec<ArgValue> {
    let mut k = 0;
    args.iter()
        .zip(wrt)
        .map(|(a, &on)| {
            let mut v = a.to_arg_value();
            if on {
                match &mut v {
                    ArgValue::F64(x) => {
                        *x += h * dir[k];
                        k += 1;
                    }
                    ArgValue::Slice(xs) | ArgValue::SliceMut(xs) => {
                        for x in xs {
                            *x += h * dir[k];
                            k += 1;
                        }
                    }
                    _ => {}
                }
            }
            v
        })
        .collect()
}

fn float_results(values: &[RuntimeValue]) -> Vec<f64> {
    values.iter().filter_map(|v| if let RuntimeValue::F64(x) = v { Some(*x) } else { None }).collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 500, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn jvp_matches_central_differences((module, entry, args) in arb_case(GenConfig::smooth()), seed in any::<u64>()) {
        let func = module.func_by_name(&entry).unwrap();
        let wrt: Vec<bool> = func.param_types().iter().map(|t| *t == Type::F64 || t.is_slice()).collect();
        let sizes: Vec<usize> = args.iter().zip(&wrt).map(|(a, &on)| match (a, on) {
            (_, false) => 0,
            (ArgSpec::F64(_), true) => 1,
            (a, true) => a.to_arg_value().as_slice().map_or(0, |s| s.len()),
        }).collect();
        let total: usize = sizes.iter().sum();
        let mut rng = jitdiff::problems::SplitMix64::new(seed);
        let dirs: Vec<Vec<f64>> = (0..4).map(|_| (0..total).map(|_| rng.uniform_in(-1.0, 1.0)).collect()).collect();

        let Some(base) = run(&module, &entry, &mut args.iter().map(ArgSpec::to_arg_value).collect::<Vec<_>>()) else {
            return Ok(()); // the primal itself fails here (e.g. a step limit): nothing to differentiate
        };
        let n_float = float_results(&base).len();
        prop_assume!(float_results(&base).iter().all(|v| v.is_finite() && v.abs() < 1e8));

        // Scalar sweeps, and width-4 lanes.
        let tangent_args = |lanes: usize, dirs: &[Vec<f64>]| -> Vec<ArgValue> {
            let mut out: Vec<ArgValue> = args.iter().map(ArgSpec::to_arg_value).collect();
            let mut offset = 0;
            for (i, &size) in sizes.iter().enumerate() {
                if !wrt[i] { continue; }
                let inter: Vec<f64> = (0..size).flat_map(|e| dirs.iter().map(move |d| d[offset + e])).collect();
                out.push(match (func.param_types()[i], lanes) {
                    (Type::F64, 1) => ArgValue::F64(inter[0]),
                    (Type::F64, _) => ArgValue::Vector(inter),
                    (Type::SliceMut, _) => ArgValue::SliceMut(inter),
                    _ => ArgValue::Slice(inter),
                });
                offset += size;
            }
            out
        };
        let scalar = derive_forward(&module, &entry, &wrt, 1).expect("scalar derivation");
        let batched = derive_forward(&module, &entry, &wrt, 4).expect("batched derivation");
        let lanes = run(&batched.module, &batched.name, &mut tangent_args(4, &dirs)).expect("batched runs");
        for (lane, dir) in dirs.iter().enumerate() {
            let out = run(&scalar.module, &scalar.name, &mut tangent_args(1, std::slice::from_ref(dir))).expect("scalar runs");
            let tangents = &float_results(&out)[n_float..];
            // Lanes equal the scalar sweep.
            for (k, t) in tangents.iter().enumerate() {
                let RuntimeValue::Vector(v) = &lanes[base.len() + k] else { panic!("vector tangent expected") };
                prop_assert!(v[lane] == *t || (v[lane].is_nan() && t.is_nan()),
                    "lane {lane} of result {k}: {} vs scalar {t}\n{}", v[lane], jitdiff::ir::print_module(&batched.module));
            }
            // Central differences.
            let h = 1e-6;
            let (Some(plus), Some(minus)) = (
                run(&module, &entry, &mut shifted(&args, &wrt, dir, h)),
                run(&module, &entry, &mut shifted(&args, &wrt, dir, -h)),
            ) else { continue };
            // A branch or loop bound that flips within ±h makes the function non-smooth here.
            let (plus, minus) = (float_results(&plus), float_results(&minus));
            for k in 0..n_float {
                let fd = (plus[k] - minus[k]) / (2.0 * h);
                let ad = tangents[k];
                let scale = ad.abs().max(fd.abs()).max(1.0);
                let smooth_here = {
                    let h2 = 1e-5;
                    let p2 = run(&module, &entry, &mut shifted(&args, &wrt, dir, h2)).map(|v| float_results(&v)[k]);
                    let m2 = run(&module, &entry, &mut shifted(&args, &wrt, dir, -h2)).map(|v| float_results(&v)[k]);
                    match (p2, m2) { (Some(p2), Some(m2)) => ((p2 - m2) / (2.0 * h2) - fd).abs() / scale < 1e-4, _ => false }
                };
                if smooth_here {
                    prop_assert!((ad - fd).abs() / scale < 1e-6,
                        "result {k}: JVP {ad} vs central difference {fd}\n{}", jitdiff::ir::print_module(&module));
                }
            }
        }
    }
}
