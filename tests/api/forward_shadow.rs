//! Tangent slices declared as shadows of their primals (`with_tangent_shadows`, used by
//! `ForwardFn`): the tangent loads of Extended Rosenbrock lose their bounds checks, results are
//! bit-identical to the fully checked build, and derived IR of random programs still runs
//! exactly as in the interpreter.

use jitdiff::ad::derive_forward;
use jitdiff::ir::RuntimeValue;
use jitdiff::ir::arbitrary::{ArgSpec, GenConfig, arb_case};
use jitdiff::ir::{ArgValue, ExternRegistry, Interpreter, Type, parse_module};
use jitdiff::jit::{Arg, JitOptions, compile, differential_call};
use jitdiff::{ForwardFn, with_tangent_shadows};
use proptest::prelude::*;

#[test]
fn rosenbrock_tangent_loads_lose_their_checks_and_results_stay_bit_identical() {
    let m = parse_module(jitdiff_problems::rosenbrock::ROSENBROCK_IR).unwrap();
    let x = jitdiff_problems::rosenbrock::standard_start(1001);
    for width in [1u8, 2, 4, 8, 16] {
        let f = ForwardFn::builder(&m, "rosenbrock").wrt_mask(&[true]).width(width).build().unwrap();
        let stats = f.bounds_check_stats();
        // Two primal loads per iteration keep their checks; the two tangent loads lose theirs.
        assert_eq!((stats.emitted, stats.elided), (2, 2), "width {width}");

        let derived = derive_forward(&m, "rosenbrock", &[true], width).unwrap();
        let checked = compile(&derived.module, &ExternRegistry::new(), &JitOptions::new()).unwrap();
        let checked = checked.function(&derived.name).unwrap();
        assert_eq!(checked.bounds_check_stats().emitted, 4);
        let t: Vec<f64> = (0..x.len() * width as usize).map(|k| ((k * 7919) % 13) as f64 / 13.0 - 0.5).collect();
        let mut out = f.output();
        f.jvp_into(&mut [Arg::Slice(&x)], &[&t], &mut out).unwrap();
        let want = checked.call(&mut [Arg::Slice(&x), Arg::Slice(&t)]).unwrap();
        assert_eq!(out.values(), &want[..1]);
        let lanes: Vec<f64> = match &want[1] {
            RuntimeValue::F64(v) => vec![*v],
            RuntimeValue::Vector(v) => v.clone(),
            other => panic!("{other:?}"),
        };
        assert_eq!(
            out.tangent(0).iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            lanes.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            "width {width}"
        );
    }
}

#[test]
fn a_short_tangent_through_the_raw_handle_is_an_error_not_a_read() {
    let m = parse_module(jitdiff_problems::rosenbrock::ROSENBROCK_IR).unwrap();
    let derived = derive_forward(&m, "rosenbrock", &[true], 4).unwrap();
    let options = with_tangent_shadows(&derived, &JitOptions::new());
    let compiled = compile(&derived.module, &ExternRegistry::new(), &options).unwrap();
    let f = compiled.function(&derived.name).unwrap();
    let x = vec![0.5; 100];
    let short = vec![1.0; 4 * 100 - 4];
    let err = f.call(&mut [Arg::Slice(&x), Arg::Slice(&short)]).unwrap_err();
    assert!(err.to_string().starts_with("shadow slice d_x must hold 4 entries per element of x"), "{err}");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn derived_ir_with_shadow_declarations_agrees_with_the_interpreter(
        (module, entry, args) in arb_case(GenConfig { allow_externs: false, allow_vectors: false, ..GenConfig::default() }),
        width in prop::sample::select(vec![1u8, 2, 4, 8]),
    ) {
        let func = module.func_by_name(&entry).unwrap();
        let wrt: Vec<bool> = func.param_types().iter().map(|t| *t == Type::F64 || t.is_slice()).collect();
        let derived = derive_forward(&module, &entry, &wrt, width).expect("random smooth programs derive");
        let mut call_args: Vec<ArgValue> = args.iter().map(ArgSpec::to_arg_value).collect();
        for (i, a) in args.iter().enumerate() {
            if !wrt[i] { continue; }
            let n = match a { ArgSpec::F64(_) => 1, other => other.to_arg_value().as_slice().map_or(0, |s| s.len()) };
            let t: Vec<f64> = (0..n * width as usize).map(|k| ((k * 37 + i) % 11) as f64 / 11.0 - 0.5).collect();
            call_args.push(match (func.param_types()[i], width) {
                (Type::F64, 1) => ArgValue::F64(t[0]),
                (Type::F64, _) => ArgValue::Vector(t),
                (Type::SliceMut, _) => ArgValue::SliceMut(t),
                _ => ArgValue::Slice(t),
            });
        }
        let externs = jitdiff::ir::arbitrary::standard_extern_registry();
        let options = with_tangent_shadows(&derived, &JitOptions::new());
        let compiled = compile(&derived.module, &externs, &options).expect("derived IR compiles");
        let interpreter = Interpreter::new(&derived.module).with_externs(&externs).with_step_limit(50_000_000);
        if let Err(d) = differential_call(&compiled, &interpreter, &derived.name, &call_args) {
            panic!("{d:?}\n{}", jitdiff::ir::print_module(&derived.module));
        }
    }
}
