//! Derived forward-mode IR of random programs (branches, loops, slices, stores, calls, every
//! smooth primitive) verifies and runs identically under the interpreter and the JIT.

use jitdiff::ad::derive_forward;
use jitdiff::ir::arbitrary::{ArgSpec, GenConfig, arb_case};
use jitdiff::ir::{ArgValue, Interpreter, Type};
use jitdiff::jit::{JitOptions, compile, differential_call};
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig { cases: 500, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn jit_and_interpreter_agree_on_derived_ir(
        (module, entry, args) in arb_case(GenConfig { allow_externs: false, allow_vectors: false, ..GenConfig::default() }),
        width in prop::sample::select(vec![1u8, 2, 4, 8]),
    ) {
        let func = module.func_by_name(&entry).unwrap();
        let wrt: Vec<bool> = func.param_types().iter().map(|t| *t == Type::F64 || t.is_slice()).collect();
        let derived = match derive_forward(&module, &entry, &wrt, width) {
            Ok(d) => d,
            // Vector primal values and extern calls have no rules yet; everything else must derive.
            Err(jitdiff::ad::AdError::Unsupported { .. } | jitdiff::ad::AdError::NoRule { .. }) => panic!("unexpected: no vectors or externs were generated"),
            Err(e) => panic!("derivation failed: {e}\n{}", jitdiff::ir::print_module(&module)),
        };
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
        let compiled = compile(&derived.module, &externs, &JitOptions::new()).expect("derived IR compiles");
        let interpreter = Interpreter::new(&derived.module).with_externs(&externs).with_step_limit(50_000_000);
        if let Err(d) = differential_call(&compiled, &interpreter, &derived.name, &call_args) {
            panic!("{d:?}\n{}", jitdiff::ir::print_module(&derived.module));
        }
    }
}
