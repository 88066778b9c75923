//! Reverse mode in the interpreter: gradients agree with forward mode by the dot-product
//! identity `<ybar, J xdot> = <J^T ybar, xdot>` on the benchmark problems, and a pullback applied
//! twice equals two fresh runs.

use jitdiff::ad::{derive_forward, derive_reverse};
use jitdiff::ir::{ArgValue, Interpreter, RuntimeValue, Tape, parse_module};
use jitdiff_problems::{Gmm, Mlp, Pendulum, Problem, Rosenbrock, SplitMix64};

/// The gradient of the problem's value with respect to its active parameters, flattened in
/// parameter order, from `value_and_grad` in the interpreter.
fn gradient(problem: &dyn Problem) -> (f64, Vec<f64>) {
    let module = parse_module(problem.ir()).unwrap();
    let args = problem.args();
    let wrt: Vec<bool> = (0..args.len()).map(|i| problem.active_params().contains(&i)).collect();
    let d = derive_reverse(&module, problem.entry(), &wrt).unwrap_or_else(|e| panic!("{}: {e}", problem.label()));
    let mut call_args = args.clone();
    for (a, _) in args.iter().zip(&wrt).filter(|(_, on)| **on) {
        if let Some(s) = a.as_slice() {
            call_args.push(ArgValue::SliceMut(vec![0.0; s.len()]));
        }
    }
    let out = Interpreter::new(&d.module)
        .call_with_tape(d.value_and_grad.as_ref().unwrap(), &mut call_args, &mut Tape::new())
        .unwrap_or_else(|e| panic!("{}: {e}\n{}", problem.label(), jitdiff::ir::print_module(&d.module)));
    let value = out[0].as_f64().unwrap();
    let mut scalar_grads = out[1..].iter().map(|v| v.as_f64().unwrap());
    let mut slice_grads = call_args[args.len()..].iter();
    let mut flat = vec![];
    for (a, _) in args.iter().zip(&wrt).filter(|(_, on)| **on) {
        match a {
            ArgValue::F64(_) => flat.push(scalar_grads.next().unwrap()),
            _ => flat.extend(slice_grads.next().unwrap().as_slice().unwrap()),
        }
    }
    (value, flat)
}

/// The JVP in direction `dir` (flattened like `gradient`), by forward mode.
fn jvp(problem: &dyn Problem, dir: &[f64]) -> f64 {
    let module = parse_module(problem.ir()).unwrap();
    let args = problem.args();
    let wrt: Vec<bool> = (0..args.len()).map(|i| problem.active_params().contains(&i)).collect();
    let d = derive_forward(&module, problem.entry(), &wrt, 1).unwrap();
    let mut call_args = args.clone();
    let mut at = 0;
    for (a, _) in args.iter().zip(&wrt).filter(|(_, on)| **on) {
        match a {
            ArgValue::F64(_) => {
                call_args.push(ArgValue::F64(dir[at]));
                at += 1;
            }
            other => {
                let n = other.as_slice().unwrap().len();
                call_args.push(ArgValue::Slice(dir[at..at + n].to_vec()));
                at += n;
            }
        }
    }
    let out = Interpreter::new(&d.module).call(&d.name, &mut call_args).unwrap();
    out[1].as_f64().unwrap()
}

fn check(problem: &dyn Problem, seed: u64) {
    let (value, grad) = gradient(problem);
    assert!((value - problem.reference()).abs() <= 1e-12 * problem.reference().abs().max(1.0), "{}", problem.label());
    let mut rng = SplitMix64::new(seed);
    for _ in 0..3 {
        let dir: Vec<f64> = grad.iter().map(|_| rng.uniform_in(-1.0, 1.0)).collect();
        let lhs = jvp(problem, &dir);
        let rhs: f64 = grad.iter().zip(&dir).map(|(g, d)| g * d).sum();
        let scale = lhs.abs().max(rhs.abs()).max(1e-300);
        assert!(
            (lhs - rhs).abs() / scale <= 1e-10,
            "{}: <ybar, J xdot> = {lhs} but <J^T ybar, xdot> = {rhs}",
            problem.label()
        );
    }
}

#[test]
fn rosenbrock_gradient_satisfies_the_dot_product_identity() {
    for n in [2, 3, 10, 100] {
        check(&Rosenbrock::new(n), n as u64);
    }
}

#[test]
fn gmm_gradient_satisfies_the_dot_product_identity() {
    check(&Gmm::generate(2, 3, 20, 7), 1);
    check(&Gmm::generate(3, 2, 10, 8), 2);
}

#[test]
fn pendulum_gradient_satisfies_the_dot_product_identity() {
    check(&Pendulum::with_steps(100), 3);
}

#[test]
fn mlp_gradient_satisfies_the_dot_product_identity() {
    check(&Mlp::generate(4, 5, 6, 11), 4);
}

#[test]
fn a_pullback_applied_twice_equals_two_fresh_runs() {
    let m = parse_module(jitdiff_problems::pendulum::PENDULUM_IR).unwrap();
    let p = Pendulum::with_steps(30);
    let args = p.args();
    let d = derive_reverse(&m, "pendulum", &[true, true, true, false, false]).unwrap();
    let interp = Interpreter::new(&d.module);
    let mut tape = Tape::new();
    let y = interp.call_with_tape(&d.forward, &mut args.clone(), &mut tape).unwrap();
    assert_eq!(y[0].as_f64().unwrap(), p.reference());
    let pull = |cot: f64, tape: &mut Tape| {
        // The pullback reads the stable primal slice `params` again, then fills its differential.
        assert_eq!(d.pullback_slices, vec![0]);
        let mut pb_args = vec![args[0].clone(), ArgValue::SliceMut(vec![0.0; 3]), ArgValue::F64(cot)];
        let out = interp.call_with_tape(&d.pullback, &mut pb_args, tape).unwrap();
        let mut g = pb_args[1].as_slice().unwrap().to_vec();
        g.extend(out.iter().map(|v| v.as_f64().unwrap()));
        g
    };
    let first = pull(1.0, &mut tape);
    tape.reset_cursor();
    let second = pull(-2.5, &mut tape);
    for (a, b) in first.iter().zip(&second) {
        assert!((b - (-2.5 * a)).abs() <= 1e-12 * a.abs().max(1.0), "{a} vs {b}");
    }
    let mut fresh = Tape::new();
    interp.call_with_tape(&d.forward, &mut args.clone(), &mut fresh).unwrap();
    assert_eq!(pull(-2.5, &mut fresh), second);
    assert!(matches!(y[0], RuntimeValue::F64(_)));
}

/// Callee pullbacks keep only the parameters they read (`@term`'s pullback reads `data`, not
/// `meta` or `w`), and every declared differential still pairs `d_s` with `s` at their new
/// positions: the JIT elides checks on that declaration, so a stale position would be unsound.
#[test]
fn callee_pullbacks_drop_unread_parameters_and_keep_their_differential_pairs() {
    let src = "func @f(meta: slice, w: slice, data: slice) -> f64 {
entry:
    zero = iconst 0
    one = iconst 1
    acc0 = fconst 0.0
    n = len w
    jump head(zero, acc0)
head(k: i64, acc: f64):
    more = icmp lt k, n
    br more, body, exit
body:
    t = call @term(meta, w, data, k)
    acc2 = fadd acc, t
    k2 = iadd k, one
    jump head(k2, acc2)
exit:
    ret acc
}

func @term(meta: slice, w: slice, data: slice, k: i64) -> f64 {
entry:
    wk = load w, k
    dk = load data, k
    p = fmul wk, dk
    ret p
}
";
    let module = parse_module(src).unwrap();
    let mut problems = vec![(module, "f".to_string(), vec![false, true, false])];
    for p in [&Gmm::generate(3, 4, 5, 1) as &dyn Problem, &Mlp::standard(), &Pendulum::standard()] {
        let args = p.args();
        problems.push((
            parse_module(p.ir()).unwrap(),
            p.entry().to_string(),
            (0..args.len()).map(|i| p.active_params().contains(&i)).collect(),
        ));
    }
    for (module, entry, wrt) in problems {
        let d = derive_reverse(&module, &entry, &wrt).unwrap();
        for (pullback, differential, primal) in &d.differentials {
            let f = d.module.func_by_name(pullback).unwrap();
            let (d_name, name) = (f.value_label(f.params[*differential]), f.value_label(f.params[*primal]));
            assert_eq!(d_name, format!("d_{name}"), "@{pullback}");
        }
        if entry == "f" {
            let text = jitdiff::ir::print_module(&d.module);
            let header = text.lines().find(|l| l.starts_with("func @term_pullback")).unwrap();
            assert!(!header.contains("meta") && header.contains("(data: slice, d_w: mslice"), "{header}");
            assert!(d.differentials.iter().all(|(f, _, _)| !f.starts_with("term_pullback")), "{:?}", d.differentials);
        }
    }
}

/// Local arrays only read after a call in a loop are *frozen*: `f_fwd` records them once, and
/// the callee pullbacks read the pullback's copy again instead of recording every load (GMM's
/// `exp(q)` table). An array written after such a call — by a later store, a call taking it as
/// `mslice`, or a store before the call in the next iteration — is not.
#[test]
fn local_arrays_read_only_after_a_call_are_frozen_and_others_are_not() {
    let pushes_in = |text: &str, func: &str| -> Vec<String> {
        let body: String = text.split(&format!("func @{func}")).nth(1).unwrap().split("\n}").next().unwrap().into();
        body.lines().filter_map(|l| l.trim().strip_prefix("tpush ").map(str::to_string)).collect()
    };
    let gmm = Gmm::generate(3, 4, 5, 1);
    let wrt: Vec<bool> = (0..gmm.args().len()).map(|i| gmm.active_params().contains(&i)).collect();
    let d = derive_reverse(&parse_module(gmm.ir()).unwrap(), gmm.entry(), &wrt).unwrap();
    let text = jitdiff::ir::print_module(&d.module);
    let fwd = text.lines().find(|l| l.starts_with("func @main_term_fwd")).unwrap();
    let fwd_name = &fwd["func @".len()..fwd.find('(').unwrap()];
    // main_term's forward records no entry of the table: the pullback loads it again.
    let mt = d.module.func_by_name(fwd_name).unwrap();
    for inst in mt.blocks.iter().flat_map(|b| &b.insts) {
        if inst.op == jitdiff::ir::Opcode::TPush {
            let pushed = inst.args[0];
            let loaded_from_table = mt.blocks.iter().flat_map(|b| &b.insts).any(|i| {
                i.op == jitdiff::ir::Opcode::Load && i.results[0] == pushed && mt.value_label(i.args[0]) == "q_diags"
            });
            assert!(!loaded_from_table, "@{fwd_name} records {}", mt.value_label(pushed));
        }
    }
    let pullback = text.lines().find(|l| l.starts_with("func @main_term_pullback")).unwrap();
    assert!(pullback.contains("q_diags: slice") && pullback.contains("d_q_diags: mslice"), "{pullback}");
    assert!(text.contains("freeze_q_diags_body") && text.contains("thaw_q_diags_body"));
    assert!(!text.contains("freeze_q_centered"), "q_centered is written by every main_term call");

    let src = std::fs::read_to_string("tests/harness_programs/local_array_not_frozen.ir").unwrap();
    let d = derive_reverse(&parse_module(&src).unwrap(), "main", &[true, true, false]).unwrap();
    let text = jitdiff::ir::print_module(&d.module);
    for array in ["buf", "acc", "pre"] {
        assert!(!text.contains(&format!("freeze_{array}_")), "{array} is written after the call");
    }
    assert!(text.contains("freeze_fixed_body"), "fixed is only read after the loop starts");
    // @dot(pre, fixed): `pre` is recorded per load, `fixed` read again by the pullback.
    let dot_fwds: Vec<&str> = text.lines().filter(|l| l.starts_with("func @dot_fwd")).collect();
    assert_eq!(dot_fwds.len(), 2, "{dot_fwds:?}");
    let pushes: Vec<usize> =
        dot_fwds.iter().map(|l| pushes_in(&text, &l["func @".len()..l.find('(').unwrap()]).len()).collect();
    assert!(pushes.iter().any(|&n| n < pushes.iter().copied().max().unwrap()), "{pushes:?}");
}
