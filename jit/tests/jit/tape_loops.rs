//! Versioned loops that push or pop: the dispatch checks the tape for the whole loop (room for
//! every push, growing the buffer once; enough entries for every pop) and the fast copy's tape
//! operations skip their own checks. Where that check fails — a limit between what the loop
//! needs and what the dispatch counts, a tape with too few entries — the checked copy runs and
//! fails (or not) exactly as the interpreter does.

use jitdiff_ir::{ArgValue, ExternRegistry, Interpreter, Module, RuntimeValue, Site, Tape, parse_module};
use jitdiff_jit::{Agreement, CompiledModule, JitOptions, compile, differential_call_with_tape};

/// `@record` pushes `x[i]` for every `i` (and `i` itself where `x[i] > 0`: the dispatch counts
/// two pushes per iteration, the loop makes one or two); `@replay` pops one entry per
/// iteration and sums them into `out`.
const LOOPS: &str = "func @record(x: slice, n: i64) -> i64 {
entry:
    zero = iconst 0
    one = iconst 1
    fzero = fconst 0.0
    jump head(zero)
head(i: i64):
    more = icmp lt i, n
    br more, body, exit
body:
    xi = load x, i
    tpush xi
    positive = fcmp gt xi, fzero
    i2 = iadd i, one
    br positive, also, head(i2)
also:
    tpush i
    jump head(i2)
exit:
    ret i
}

func @replay(out: mslice, n: i64) {
entry:
    zero = iconst 0
    one = iconst 1
    jump head(n)
head(i: i64):
    more = icmp gt i, zero
    br more, body, exit
body:
    j = isub i, one
    e = tpop.f64
    o = load out, j
    s = fadd o, e
    store out, j, s
    jump head(j)
exit:
    ret
}
";

fn compiled(options: &JitOptions) -> (Module, CompiledModule) {
    let m = parse_module(LOOPS).unwrap();
    let compiled = compile(&m, &ExternRegistry::new(), options).unwrap();
    for name in ["record", "replay"] {
        let stats = compiled.function(name).unwrap().bounds_check_stats();
        assert_eq!(stats.versioned_loops, 1, "@{name}: {stats:?}");
    }
    (m, compiled)
}

fn both(m: &Module, compiled: &CompiledModule, f: &str, args: &[ArgValue], tape: &Tape) -> (Agreement, Tape) {
    let interp = Interpreter::new(m);
    differential_call_with_tape(compiled, &interp, f, args, tape).unwrap_or_else(|d| panic!("{d}"))
}

/// `n` values, every third one positive.
fn data(n: usize) -> Vec<f64> {
    (0..n).map(|i| if i % 3 == 0 { 1.0 + i as f64 } else { -(i as f64) }).collect()
}

#[test]
fn a_pushing_loop_grows_the_tape_once_and_agrees_with_the_interpreter() {
    let (m, compiled) = compiled(&JitOptions::new());
    for n in [0usize, 1, 2, 7, 100_000] {
        let args = [ArgValue::Slice(data(n)), ArgValue::I64(n as i64)];
        let (out, tape) = both(&m, &compiled, "record", &args, &Tape::new());
        assert_eq!(out, Agreement::Returned(vec![RuntimeValue::I64(n as i64)]));
        assert_eq!(tape.len(), n + n.div_ceil(3), "n = {n}");
    }
}

#[test]
fn a_limit_the_dispatch_count_exceeds_runs_the_checked_copy_to_the_same_end() {
    // 3,000 iterations make 4,000 pushes; the dispatch asks room for 6,000.
    let n = 3000usize;
    let args = [ArgValue::Slice(data(n)), ArgValue::I64(n as i64)];
    let (m, compiled) = compiled(&JitOptions::new());
    for (limit, fits) in [(4000usize, true), (5999, true), (3999, false), (100, false)] {
        let mut tape = Tape::new();
        tape.set_limit_bytes(8 * limit);
        let (out, after) = both(&m, &compiled, "record", &args, &tape);
        if fits {
            assert_eq!(out, Agreement::Returned(vec![RuntimeValue::I64(n as i64)]), "limit {limit}");
            assert_eq!(after.len(), 4000);
        } else {
            assert_eq!(out, Agreement::Failed("TapeAllocation"), "limit {limit}");
            assert_eq!(after.len(), limit, "the entries up to the limit, as the interpreter pushed");
        }
    }
    // The same through the module's limit, with the failing push named.
    let (_, limited) = self::compiled(&JitOptions::new().tape_limit(8 * 3999));
    let mut tape = Tape::new();
    let err = limited
        .function("record")
        .unwrap()
        .call_with_tape(&mut [jitdiff_jit::Arg::Slice(&data(n)), jitdiff_jit::Arg::I64(n as i64)], &mut tape)
        .unwrap_err();
    let jitdiff_jit::CallError::Runtime(jitdiff_jit::Fault::TapeAllocation { site }) = &err else { panic!("{err:?}") };
    // Entry 3,999 is the push of `x[2999]` (iteration 2,999 begins with 3,999 entries made).
    assert_eq!(site, &Site { func: "record".into(), block: "body".into(), inst: 1 });
}

#[test]
fn a_popping_loop_checks_the_tape_once_and_fails_where_the_interpreter_does() {
    let (m, compiled) = compiled(&JitOptions::new());
    let n = 50usize;
    for held in [0usize, 1, 49, 50, 51, 80] {
        let mut tape = Tape::new();
        for k in 0..held {
            tape.push_bits((0.25 * k as f64).to_bits()).unwrap();
        }
        let args = [ArgValue::SliceMut(vec![1.0; n]), ArgValue::I64(n as i64)];
        let (out, after) = both(&m, &compiled, "replay", &args, &tape);
        if held >= n {
            assert_eq!(out, Agreement::Returned(vec![]), "held {held}");
            assert_eq!(after.cursor(), held - n);
        } else {
            assert_eq!(out, Agreement::Failed("TapeUnderflow"), "held {held}");
            assert_eq!(after.cursor(), 0);
        }
    }
}
