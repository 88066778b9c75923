//! Shadow-slice declarations: the entry length check, which bounds checks a dominating check
//! makes redundant (and which it must not), results unchanged, and no input that makes native
//! code touch memory it was not given.

use jitdiff_ir::{ArgValue, ExternRegistry, Interpreter, Module, parse_module};
use jitdiff_jit::{
    Agreement, Arg, BoundsCheckStats, CallError, CompiledModule, JitError, JitOptions, compile, differential_call,
};

/// The scalar JVP of Extended Rosenbrock, as forward mode derives it (tests/filetests/jvp_rosenbrock.ir).
const ROSENBROCK_JVP: &str = "\
func @rosenbrock_jvp(x: slice, d_x: slice) -> f64, f64 {
entry:
    n = len x
    zero = iconst 0
    one = iconst 1
    last = isub n, one
    hundred = fconst 100.0
    fone = fconst 1.0
    acc0 = fconst 0.0
    jump head(zero, acc0, acc0)
head(i: i64, acc: f64, d_acc: f64):
    more = icmp lt i, last
    br more, body, exit(acc, d_acc)
body:
    xi = load x, i
    v14 = load d_x, i
    inext = iadd i, one
    xnext = load x, inext
    v17 = load d_x, inext
    xi_sq = fmul xi, xi
    v19 = fmul xi, v14
    d_xi_sq = fadd v19, v19
    valley = fsub xnext, xi_sq
    d_valley = fsub v17, d_xi_sq
    valley_sq = fmul valley, valley
    v24 = fmul valley, d_valley
    d_valley_sq = fadd v24, v24
    valley_term = fmul hundred, valley_sq
    d_valley_term = fmul hundred, d_valley_sq
    offset = fsub fone, xi
    offset_sq = fmul offset, offset
    v30 = fmul offset, v14
    minus_d_offset_sq = fadd v30, v30
    term = fadd valley_term, offset_sq
    d_term = fsub d_valley_term, minus_d_offset_sq
    acc2 = fadd acc, term
    d_acc2 = fadd d_acc, d_term
    jump head(inext, acc2, d_acc2)
exit(total: f64, d_total: f64):
    ret total, d_total
}
";

fn build(text: &str, options: &JitOptions) -> (Module, CompiledModule) {
    let m = parse_module(text).unwrap();
    let compiled = compile(&m, &ExternRegistry::new(), options).unwrap();
    (m, compiled)
}

fn stats(compiled: &CompiledModule, f: &str) -> BoundsCheckStats {
    compiled.function(f).unwrap().bounds_check_stats()
}

#[test]
fn the_tangent_loads_of_the_rosenbrock_jvp_lose_their_checks() {
    let (_, plain) = build(ROSENBROCK_JVP, &JitOptions::new());
    // The loop is also versioned: its fast copy checks none of the four (affine) accesses; it
    // has a third copy running two iterations at a time (`pairs.rs`); and all three copies are
    // rotated (the header's test copied to the end of the body).
    let versioned = BoundsCheckStats {
        versioned_loops: 1,
        unchecked_in_fast_copies: 4,
        rotated_loops: 3,
        paired_loops: 1,
        ..Default::default()
    };
    assert_eq!(stats(&plain, "rosenbrock_jvp"), BoundsCheckStats { emitted: 4, elided: 0, ..versioned });
    let (m, shadowed) = build(ROSENBROCK_JVP, &JitOptions::new().shadow_slice("rosenbrock_jvp", 1, 0, 1));
    assert_eq!(stats(&shadowed, "rosenbrock_jvp"), BoundsCheckStats { emitted: 2, elided: 2, ..versioned });
    // Same results as the interpreter (and the checked build) on inputs of matching lengths.
    let interp = Interpreter::new(&m);
    for n in [0usize, 1, 2, 3, 17, 1000] {
        let x: Vec<f64> = (0..n).map(|k| (k as f64 * 0.37).sin()).collect();
        let d: Vec<f64> = (0..n).map(|k| (k as f64 * 0.11).cos()).collect();
        let args = [ArgValue::Slice(x), ArgValue::Slice(d)];
        for compiled in [&plain, &shadowed] {
            let got = differential_call(compiled, &interp, "rosenbrock_jvp", &args);
            assert!(matches!(got, Ok(Agreement::Returned(_))), "n = {n}: {got:?}");
        }
    }
}

#[test]
fn a_tangent_of_the_wrong_length_is_an_error_before_any_access() {
    let (_, compiled) = build(ROSENBROCK_JVP, &JitOptions::new().shadow_slice("rosenbrock_jvp", 1, 0, 1));
    let f = compiled.function("rosenbrock_jvp").unwrap();
    let x = vec![1.0; 10];
    for d_len in [0usize, 1, 9, 11, 20] {
        let d = vec![0.5; d_len];
        let err = f.call(&mut [Arg::Slice(&x), Arg::Slice(&d)]).unwrap_err();
        let CallError::ShadowLength { site, mismatch } = &err else { panic!("d_x of length {d_len}: {err:?}") };
        assert_eq!((mismatch.shadow.as_str(), mismatch.primal.as_str(), mismatch.lanes), ("d_x", "x", 1));
        assert_eq!((mismatch.shadow_len, mismatch.primal_len), (d_len, 10));
        assert_eq!((site.func.as_str(), site.block.as_str(), site.inst), ("rosenbrock_jvp", "entry", 0));
        assert_eq!(err.kind_name(), "ShadowLength");
    }
    let d = vec![0.5; 10];
    assert!(f.call(&mut [Arg::Slice(&x), Arg::Slice(&d)]).is_ok());
}

/// A function loading `x[i]` and lanes `W*i .. W*i+W` of `d` in several arrangements; `i` and
/// `j` come from the caller, so every index can be out of bounds.
const ARRANGEMENTS: &str = "\
func @same_block(x: slice, d: slice, i: i64) -> f64 {
entry:
    a = load x, i
    v = vload.f64x4 d, i
    b = extract v, 3
    c = fadd a, b
    ret c
}

func @shadow_first(x: slice, d: slice, i: i64) -> f64 {
entry:
    v = vload.f64x4 d, i
    a = load x, i
    b = extract v, 0
    c = fadd a, b
    ret c
}

func @dominated(x: slice, d: slice, i: i64, c: bool) -> f64 {
entry:
    a = load x, i
    br c, yes, no
yes:
    v = vload.f64x4 d, i
    b = extract v, 1
    jump done(b)
no:
    jump done(a)
done(r: f64):
    ret r
}

func @not_dominated(x: slice, d: slice, i: i64, c: bool) -> f64 {
entry:
    br c, yes, join
yes:
    a = load x, i
    jump join
join:
    v = vload.f64x4 d, i
    b = extract v, 2
    ret b
}

func @other_index(x: slice, d: slice, i: i64, j: i64) -> f64 {
entry:
    a = load x, i
    v = vload.f64x4 d, j
    b = extract v, 0
    c = fadd a, b
    ret c
}

func @too_wide(x: slice, d: slice, i: i64) -> f64 {
entry:
    a = load x, i
    v = vload.f64x8 d, i
    b = extract v, 7
    c = fadd a, b
    ret c
}

func @twice(x: slice, d: slice, i: i64) -> f64 {
entry:
    a = load x, i
    b = load x, i
    c = fadd a, b
    ret c
}
";

fn shadow_options() -> JitOptions {
    let mut options = JitOptions::new();
    for f in ["same_block", "shadow_first", "dominated", "not_dominated", "other_index", "too_wide", "twice"] {
        options = options.shadow_slice(f, 1, 0, 4);
    }
    options
}

#[test]
fn only_accesses_proved_by_a_dominating_check_lose_theirs() {
    let (_, compiled) = build(ARRANGEMENTS, &shadow_options());
    let s = |f| stats(&compiled, f);
    assert_eq!(s("same_block"), BoundsCheckStats { emitted: 1, elided: 1, ..Default::default() });
    // The shadow's check proves the primal access: (i + 1) * 4 <= 4 * len(x).
    assert_eq!(s("shadow_first"), BoundsCheckStats { emitted: 1, elided: 1, ..Default::default() });
    assert_eq!(s("dominated"), BoundsCheckStats { emitted: 1, elided: 1, ..Default::default() });
    assert_eq!(s("not_dominated"), BoundsCheckStats { emitted: 2, elided: 0, ..Default::default() });
    assert_eq!(s("other_index"), BoundsCheckStats { emitted: 2, elided: 0, ..Default::default() });
    // 8 lanes of a shadow with 4 per element are not covered by one primal element.
    assert_eq!(s("too_wide"), BoundsCheckStats { emitted: 2, elided: 0, ..Default::default() });
    assert_eq!(s("twice"), BoundsCheckStats { emitted: 1, elided: 1, ..Default::default() });
}

#[test]
fn no_input_reads_outside_the_slices_and_matching_lengths_agree_with_the_interpreter() {
    let (m, compiled) = build(ARRANGEMENTS, &shadow_options());
    let interp = Interpreter::new(&m);
    let mut runs = 0;
    for n in [0usize, 1, 2, 5] {
        let x: Vec<f64> = (0..n).map(|k| k as f64 + 0.5).collect();
        for d_len in [0usize, 3, 4 * n, 4 * n + 1, 4 * n + 4, 8 * n] {
            let d: Vec<f64> = (0..d_len).map(|k| -(k as f64)).collect();
            for i in [-1i64, 0, 1, n as i64 - 1, n as i64, i64::MAX, i64::MIN] {
                for c in [false, true] {
                    let calls: [(&str, Vec<ArgValue>); 7] = [
                        ("same_block", vec![]),
                        ("shadow_first", vec![]),
                        ("dominated", vec![ArgValue::Bool(c)]),
                        ("not_dominated", vec![ArgValue::Bool(c)]),
                        ("other_index", vec![ArgValue::I64(i.wrapping_add(1))]),
                        ("too_wide", vec![]),
                        ("twice", vec![]),
                    ];
                    for (f, extra) in calls {
                        let mut args = vec![ArgValue::Slice(x.clone()), ArgValue::Slice(d.clone()), ArgValue::I64(i)];
                        args.extend(extra);
                        let native = compiled.function(f).unwrap();
                        let mut borrowed: Vec<Arg<'_>> = args.iter_mut().map(Arg::from).collect();
                        let got = native.call(&mut borrowed);
                        runs += 1;
                        if d_len != 4 * n {
                            let e = got.unwrap_err();
                            assert_eq!(e.kind_name(), "ShadowLength", "@{f} n={n} d_len={d_len} i={i}");
                            continue;
                        }
                        let agreement = differential_call(&compiled, &interp, f, &args);
                        assert!(agreement.is_ok(), "@{f} n={n} i={i}: {agreement:?}");
                    }
                }
            }
        }
    }
    assert!(runs > 1000);
}

#[test]
fn a_callee_checks_its_shadows_whoever_calls_it() {
    let text = format!(
        "{ARRANGEMENTS}
func @caller(x: slice, i: i64) -> f64 {{
entry:
    r = call @same_block(x, x, i)
    ret r
}}
"
    );
    let (_, compiled) = build(&text, &shadow_options());
    let caller = compiled.function("caller").unwrap();
    let x = vec![1.0; 8];
    // x is passed as its own shadow: 8 entries, not 4 * 8.
    let e = caller.call(&mut [Arg::Slice(&x), Arg::I64(1)]).unwrap_err();
    let CallError::ShadowLength { site, mismatch } = e else { panic!("{e:?}") };
    assert_eq!((site.func.as_str(), mismatch.shadow_len, mismatch.primal_len), ("same_block", 8, 8));
}

#[test]
fn declarations_that_do_not_fit_are_compile_errors_and_unchecked_builds_ignore_them() {
    let m = parse_module(ARRANGEMENTS).unwrap();
    let e = compile(&m, &ExternRegistry::new(), &JitOptions::new().shadow_slice("twice", 2, 0, 1)).unwrap_err();
    assert!(matches!(e, JitError::Shadow { .. }), "{e:?}");
    assert!(e.to_string().contains("@twice") && e.to_string().contains("not a slice"), "{e}");
    // SAFETY: the one call below uses in-bounds indices (lane 3 of element 0 of a 4-entry slice).
    let unchecked = unsafe { shadow_options().without_bounds_checks() };
    let compiled = compile(&m, &ExternRegistry::new(), &unchecked).unwrap();
    assert_eq!(stats(&compiled, "same_block"), BoundsCheckStats::default());
    let f = compiled.function("same_block").unwrap();
    let out = f.call(&mut [Arg::Slice(&[1.0]), Arg::Slice(&[0.0, 0.0, 0.0, 2.0]), Arg::I64(0)]).unwrap();
    assert_eq!(out[0].as_f64(), Some(3.0));
}
