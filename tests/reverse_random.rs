//! Reverse mode on random programs (branches, loops, slices, stores, calls): derived IR
//! verifies, and the gradient satisfies the dot-product identity against forward mode,
//! `<ybar, J xdot> = <J^T ybar, xdot>`, to 1e-10 relative.

use jitdiff::ad::{derive_forward, derive_reverse};
use jitdiff::ir::arbitrary::{ArgSpec, GenConfig, arb_case};
use jitdiff::ir::{ArgValue, Interpreter, RuntimeValue, Tape, Type};
use proptest::prelude::*;

const STEP_LIMIT: u64 = 20_000_000;

proptest! {
    #![proptest_config(ProptestConfig { cases: 500, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn gradient_satisfies_the_dot_product_identity(
        (module, entry, args) in arb_case(GenConfig { allow_externs: false, allow_vectors: false, ..GenConfig::default() }),
        seed in any::<u64>(),
    ) {
        let func = module.func_by_name(&entry).unwrap();
        let types = func.param_types();
        let wrt: Vec<bool> = types.iter().map(|t| *t == Type::F64 || t.is_slice()).collect();
        let reverse = derive_reverse(&module, &entry, &wrt)
            .unwrap_or_else(|e| panic!("reverse derivation failed: {e}\n{}", jitdiff::ir::print_module(&module)));
        let forward = derive_forward(&module, &entry, &wrt, 1).expect("forward derivation");
        let primal: Vec<ArgValue> = args.iter().map(ArgSpec::to_arg_value).collect();
        let n_results = func.returns.len();
        let float_results: Vec<usize> = (0..n_results).filter(|&k| func.returns[k] == Type::F64).collect();
        let mut rng = jitdiff::problems::SplitMix64::new(seed);

        // Forward: a random tangent direction.
        let mut fwd_args = primal.clone();
        let mut dirs: Vec<Vec<f64>> = vec![];
        for (i, a) in primal.iter().enumerate() {
            if !wrt[i] { continue; }
            let n = a.as_slice().map_or(1, <[f64]>::len);
            let d: Vec<f64> = (0..n).map(|_| rng.uniform_in(-1.0, 1.0)).collect();
            fwd_args.push(match types[i] { Type::F64 => ArgValue::F64(d[0]), Type::SliceMut => ArgValue::SliceMut(d.clone()), _ => ArgValue::Slice(d.clone()) });
            dirs.push(d);
        }
        let interp_fwd = Interpreter::new(&forward.module).with_step_limit(STEP_LIMIT);
        let Ok(jvp_out) = interp_fwd.call(&forward.name, &mut fwd_args) else { return Ok(()) };
        // Output tangents of mutable slices (their final contents) count as outputs too.
        let ybar_results: Vec<f64> = float_results.iter().map(|_| rng.uniform_in(-1.0, 1.0)).collect();
        let mut lhs = 0.0;
        for (k, &y) in ybar_results.iter().enumerate() {
            lhs += y * jvp_out[n_results + k].as_f64().unwrap();
        }
        let mut slice_ybar: Vec<Vec<f64>> = vec![];
        let mut di = 0;
        for (i, a) in primal.iter().enumerate() {
            if !wrt[i] { continue; }
            if types[i] == Type::SliceMut {
                let tangent_out = fwd_args[primal.len() + di].as_slice().unwrap().to_vec();
                let ybar: Vec<f64> = tangent_out.iter().map(|_| rng.uniform_in(-1.0, 1.0)).collect();
                lhs += ybar.iter().zip(&tangent_out).map(|(a, b)| a * b).sum::<f64>();
                slice_ybar.push(ybar);
            } else if a.as_slice().is_some() {
                slice_ybar.push(vec![0.0; a.as_slice().unwrap().len()]);
            }
            di += 1;
        }

        // Reverse: forward pass, then the pullback with those cotangents.
        let interp = Interpreter::new(&reverse.module).with_step_limit(STEP_LIMIT);
        let mut tape = Tape::new();
        let Ok(values) = interp.call_with_tape(&reverse.forward, &mut primal.clone(), &mut tape) else { return Ok(()) };
        prop_assert_eq!(values.len(), n_results);
        let mut pb_args: Vec<ArgValue> = slice_ybar.iter().map(|s| ArgValue::SliceMut(s.clone())).collect();
        pb_args.extend(ybar_results.iter().map(|&y| ArgValue::F64(y)));
        let grads = interp.call_with_tape(&reverse.pullback, &mut pb_args, &mut tape)
            .unwrap_or_else(|e| panic!("pullback failed: {e}\n{}", jitdiff::ir::print_module(&reverse.module)));
        let mut rhs = 0.0;
        let (mut gi, mut si) = (0, 0);
        for (i, a) in primal.iter().enumerate() {
            if !wrt[i] { continue; }
            let dir = &dirs[gi + si];
            if a.as_slice().is_some() {
                let g = pb_args[si].as_slice().unwrap();
                rhs += g.iter().zip(dir).map(|(a, b)| a * b).sum::<f64>();
                si += 1;
            } else {
                let RuntimeValue::F64(g) = grads[gi] else { panic!("f64 cotangent") };
                rhs += g * dir[0];
                gi += 1;
            }
        }
        prop_assume!(lhs.is_finite() && rhs.is_finite());
        // Relative 1e-10, with an absolute floor for derivatives that are zero up to rounding
        // (e.g. atan2(hypot(x, x), x), whose forward tangent is 4e-20 from cancellation and
        // whose reverse gradient is exactly 0): 1e-14 times the norms of the cotangents and the
        // direction, far below any error a wrong rule makes.
        let ybar_norm: f64 = ybar_results.iter().map(|y| y.abs()).sum::<f64>()
            + slice_ybar.iter().flatten().map(|y| y.abs()).sum::<f64>();
        let dir_norm: f64 = dirs.iter().flatten().map(|d| d.abs()).sum();
        let scale = lhs.abs().max(rhs.abs());
        prop_assert!((lhs - rhs).abs() <= 1e-10 * scale + 1e-14 * ybar_norm * dir_norm,
            "<ybar, J xdot> = {lhs} but <J^T ybar, xdot> = {rhs}\n{}", jitdiff::ir::print_module(&module));
        prop_assert_eq!(tape.cursor(), 0, "the pullback consumed exactly what the forward pass recorded");
    }
}
