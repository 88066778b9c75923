//! The fuzzing pipeline, shared by the libFuzzer target (`fuzz/fuzz_targets/pipeline.rs`) and
//! the corpus test (`tests/api/fuzz_corpus.rs`): text → parse → verify → print/parse round trip →
//! for each function: run in the interpreter and the JIT on bounded inputs (a step limit; the
//! JIT runs only what the interpreter finished) and compare → derive forward (W = 1, 2) and
//! reverse → the derived IR verifies, compiles and runs alike in the interpreter and the JIT.
//!
//! Rejected input must be rejected with an error; anything else that goes wrong panics (the
//! fuzzer's "crash"): a panic anywhere, interpreter and JIT disagreeing, derived IR that does
//! not verify or compile, a round trip that changes the module.

use jitdiff::ad::{AdError, derive_forward, derive_reverse};
use jitdiff::ir::{
    ArgValue, ExternRegistry, Interpreter, Module, RuntimeValue, Tape, Type, parse_module, parse_module_with_spans,
    print_module, verify_module, verify_module_with_spans,
};
use jitdiff::jit::{Agreement, JitError, JitOptions, compile, differential_call, differential_call_with_tape};

/// Interpreter steps per call; the JIT runs a call only if the interpreter finished it.
const STEP_LIMIT: u64 = 200_000;
/// Functions tried per module (each costs compilations).
const MAX_FUNCTIONS: usize = 4;

/// What one input reached, for the corpus test's sanity checks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reached {
    pub parsed: bool,
    pub verified: bool,
    pub calls: usize,
    pub derived: usize,
}

/// Run the pipeline on one input; panics on a bug.
pub fn run(data: &[u8]) -> Reached {
    let mut reached = Reached::default();
    let Ok(text) = std::str::from_utf8(data) else { return reached };
    let (module, spans) = match parse_module_with_spans(text) {
        Ok(m) => m,
        Err(e) => {
            assert!(!e.to_string().is_empty(), "a parse error with an empty message");
            return reached;
        }
    };
    reached.parsed = true;
    if let Err(e) = verify_module_with_spans(&module, Some(&spans)) {
        assert!(!e.to_string().is_empty(), "a verify error with an empty message");
        return reached;
    }
    reached.verified = true;
    let printed = print_module(&module);
    match parse_module(&printed) {
        Ok(again) => assert!(again == module, "print then parse changed the module:\n{printed}"),
        Err(e) => panic!("the printed module does not parse: {e}\n{printed}"),
    }
    let externs = externs_for(&module);
    let compiled = match compile(&module, &externs, &JitOptions::new()) {
        Ok(c) => c,
        Err(e) => return bug_or_refusal(e, &printed),
    };
    let interp = Interpreter::new(&module).with_externs(&externs).with_step_limit(STEP_LIMIT);
    let mut rng = Rng(data.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3)));
    for func in module.functions.iter().take(MAX_FUNCTIONS) {
        let types = func.param_types();
        let args: Vec<ArgValue> = types.iter().map(|&t| rng.arg(t)).collect();
        let agreement = differential_call(&compiled, &interp, &func.name, &args)
            .unwrap_or_else(|d| panic!("interpreter and JIT disagree: {d}\n{printed}"));
        reached.calls += 1;
        if agreement == Agreement::Skipped || types.iter().any(|t| matches!(t, Type::F64x(_))) {
            continue;
        }
        let wrt: Vec<bool> = types.iter().map(|t| *t == Type::F64 || t.is_slice()).collect();
        reached.derived += derivatives(&module, &externs, &func.name, &wrt, &args, &mut rng);
    }
    reached
}

/// Check the forward (W = 1, 2) and reverse derivatives of one function; returns how many
/// derivations succeeded.
fn derivatives(
    m: &Module,
    externs: &ExternRegistry,
    name: &str,
    wrt: &[bool],
    args: &[ArgValue],
    rng: &mut Rng,
) -> usize {
    let mut derived = 0;
    for width in [1u8, 2] {
        let d = match derive_forward(m, name, wrt, width) {
            Ok(d) => d,
            Err(e) => {
                refusal(e);
                continue;
            }
        };
        derived += 1;
        let text = print_module(&d.module);
        verify_module(&d.module).unwrap_or_else(|e| panic!("derived forward IR does not verify: {e}\n{text}"));
        let mut call_args = args.to_vec();
        for (a, &on) in args.iter().zip(wrt) {
            if !on {
                continue;
            }
            let n = a.as_slice().map_or(1, <[f64]>::len) * width as usize;
            let t: Vec<f64> = (0..n).map(|_| rng.float()).collect();
            call_args.push(match (a, width) {
                (ArgValue::F64(_), 1) => ArgValue::F64(t[0]),
                (ArgValue::F64(_), _) => ArgValue::Vector(t),
                (ArgValue::SliceMut(_), _) => ArgValue::SliceMut(t),
                _ => ArgValue::Slice(t),
            });
        }
        agree(&d.module, externs, &d.name, &call_args, &Tape::new(), &text);
    }
    match derive_reverse(m, name, wrt) {
        Err(e) => refusal(e),
        Ok(r) => {
            derived += 1;
            let text = print_module(&r.module);
            verify_module(&r.module).unwrap_or_else(|e| panic!("derived reverse IR does not verify: {e}\n{text}"));
            let (agreement, tape) = agree(&r.module, externs, &r.forward, args, &Tape::new(), &text);
            if matches!(agreement, Agreement::Returned(_)) {
                let f = m.func_by_name(name).expect("derived from it");
                let mut pb: Vec<ArgValue> = r.pullback_slices.iter().map(|&k| args[k].clone()).collect();
                pb.extend(args.iter().zip(wrt).filter(|(a, on)| **on && a.as_slice().is_some()).map(|(a, _)| {
                    ArgValue::SliceMut(a.as_slice().unwrap_or(&[]).iter().map(|_| rng.float()).collect())
                }));
                pb.extend(f.returns.iter().filter(|t| **t == Type::F64).map(|_| ArgValue::F64(rng.float())));
                agree(&r.module, externs, &r.pullback, &pb, &tape, &text);
            }
        }
    }
    derived
}

fn agree(
    m: &Module,
    externs: &ExternRegistry,
    name: &str,
    args: &[ArgValue],
    tape: &Tape,
    text: &str,
) -> (Agreement, Tape) {
    let compiled =
        compile(m, externs, &JitOptions::new()).unwrap_or_else(|e| panic!("derived IR does not compile: {e}\n{text}"));
    let interp = Interpreter::new(m).with_externs(externs).with_step_limit(STEP_LIMIT * 4);
    differential_call_with_tape(&compiled, &interp, name, args, tape)
        .unwrap_or_else(|d| panic!("interpreter and JIT disagree on derived IR: {d}\n{text}"))
}

/// A transform may refuse a request, but never produce invalid IR.
fn refusal(e: AdError) {
    if let AdError::DerivedInvalid(v) = e {
        panic!("a transform produced IR that does not verify: {v}");
    }
}

/// Verified IR must compile, except for what the host or the externs refuse.
fn bug_or_refusal(e: JitError, text: &str) -> Reached {
    match e {
        JitError::Codegen { .. } | JitError::Verify(_) => panic!("verified IR does not compile: {e}\n{text}"),
        _ => Reached { parsed: true, verified: true, ..Reached::default() },
    }
}

/// Every declared extern, implemented by a closure returning fixed values of its result types.
fn externs_for(m: &Module) -> ExternRegistry {
    let mut r = ExternRegistry::new();
    for decl in &m.externs {
        let returns = decl.returns.clone();
        let values: Vec<RuntimeValue> = returns
            .iter()
            .map(|t| match t {
                Type::I64 => RuntimeValue::I64(1),
                Type::Bool => RuntimeValue::Bool(true),
                Type::F64x(w) => RuntimeValue::Vector(vec![0.5; *w as usize]),
                _ => RuntimeValue::F64(0.5),
            })
            .collect();
        r.register_closure(decl.name.clone(), decl.params.clone(), returns, move |_| Ok(values.clone()));
    }
    r
}

/// A small deterministic generator of arguments (seeded by the input, so a crash reproduces).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn float(&mut self) -> f64 {
        const SPECIAL: [f64; 6] = [0.0, -0.0, 1.0, -1.0, 1e300, f64::NAN];
        match self.next() % 16 {
            0 => SPECIAL[(self.next() % 6) as usize],
            _ => (self.next() % 4001) as f64 / 1000.0 - 2.0,
        }
    }
    fn arg(&mut self, t: Type) -> ArgValue {
        match t {
            Type::I64 => ArgValue::I64((self.next() % 9) as i64 - 1),
            Type::Bool => ArgValue::Bool(self.next() % 2 == 1),
            Type::Slice | Type::SliceMut => {
                let xs: Vec<f64> = (0..self.next() % 6).map(|_| self.float()).collect();
                if t == Type::Slice { ArgValue::Slice(xs) } else { ArgValue::SliceMut(xs) }
            }
            Type::F64x(w) => ArgValue::Vector((0..w).map(|_| self.float()).collect()),
            Type::F64 => ArgValue::F64(self.float()),
        }
    }
}
