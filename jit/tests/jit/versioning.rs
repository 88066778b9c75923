//! Loop versioning (`lower/versioning.rs`): counted loops with affine indices get a fast copy
//! without bounds checks, entered only when a pre-check proves every access in bounds. Whatever
//! the arguments — empty loops, out-of-bounds accesses at the first or last iteration, negative
//! offsets, offsets and strides near `i64::MAX` where indices wrap — the native code must
//! behave exactly as the interpreter: same results, same error at the same site, same final
//! contents of every `mslice`.

use jitdiff_ir::{ArgValue, ExternRegistry, Interpreter, parse_module};
use jitdiff_jit::{Agreement, Disagreement, JitOptions, compile, differential_call};

/// One function per loop shape. Each takes a data slice `s`, an output `out`, a start, a bound
/// and an offset (and sometimes a stride).
const LOOPS: &str = "\
; i from start up while i < bound: s[i + off] summed, out[i] written
func @up_lt(s: slice, out: mslice, start: i64, bound: i64, off: i64) -> f64 {
entry:
    one = iconst 1
    zero = fconst 0.0
    jump head(start, zero)
head(i: i64, acc: f64):
    more = icmp lt i, bound
    br more, body, exit(acc)
body:
    k = iadd i, off
    x = load s, k
    store out, i, x
    acc2 = fadd acc, x
    next = iadd i, one
    jump head(next, acc2)
exit(total: f64):
    ret total
}

; i up while i <= bound, the test written bound >= i; index off - 2 i (negative stride)
func @up_le(s: slice, out: mslice, start: i64, bound: i64, off: i64) -> f64 {
entry:
    one = iconst 1
    two = iconst 2
    zero = fconst 0.0
    jump head(start, zero)
head(i: i64, acc: f64):
    more = icmp ge bound, i
    br more, body, exit
body:
    twice = imul two, i
    k = isub off, twice
    x = load s, k
    acc2 = fadd acc, x
    next = iadd one, i
    jump head(next, acc2)
exit:
    ret acc
}

; trip counts down to 0 (exit when trip == 0), as reversed loops do; the count escapes the loop
func @down_ne(s: slice, out: mslice, start: i64, bound: i64, off: i64) -> f64, i64 {
entry:
    one = iconst 1
    zero = iconst 0
    fzero = fconst 0.0
    jump head(start, fzero)
head(trip: i64, acc: f64):
    done = icmp eq trip, zero
    prev = isub trip, one
    br done, exit, body
body:
    k = iadd prev, off
    x = load s, k
    y = load out, k
    z = fadd x, y
    store out, k, z
    acc2 = fadd acc, z
    jump head(prev, acc2)
exit:
    ret acc, trip
}

; i down while i > bound, stride 3 plus a vector load of width 2
func @down_gt(s: slice, out: mslice, start: i64, bound: i64, off: i64) -> f64 {
entry:
    one = iconst 1
    three = iconst 3
    zero = fconst 0.0
    jump head(start, zero)
head(i: i64, acc: f64):
    more = icmp gt i, bound
    br more, body, exit(acc)
body:
    scaled = imul i, three
    k = iadd scaled, off
    x = load s, k
    v = vload.f64x2 s, i
    lane = extract v, 1
    y = fadd x, lane
    acc2 = fadd acc, y
    next = isub i, one
    jump head(next, acc2)
exit(total: f64):
    ret total
}

; i up while i != bound, with a recurrence index r += i (checked in both copies), a branch in the
; body, and a value from the body used after the loop
func @up_ne_recurrence(s: slice, out: mslice, start: i64, bound: i64, off: i64) -> f64 {
entry:
    one = iconst 1
    zero = fconst 0.0
    jump head(start, off, zero, zero)
head(i: i64, r: i64, acc: f64, last: f64):
    more = icmp ne i, bound
    br more, body, exit
body:
    x = load s, r
    neg = fcmp lt x, zero
    br neg, flip, keep
flip:
    y = fneg x
    jump join(y)
keep:
    jump join(x)
join(v: f64):
    w = load s, i
    u = fmul v, w
    store out, i, u
    acc2 = fadd acc, u
    r2 = iadd r, i
    next = iadd i, one
    jump head(next, r2, acc2, u)
exit:
    both = fadd acc, last
    ret both
}

; a trip count down to 0 with two indices in lockstep: j from off by +2, k from bound by -1
; (their ranges follow from the trip count's, through the values the loop was entered with)
func @lockstep(s: slice, out: mslice, start: i64, bound: i64, off: i64) -> f64 {
entry:
    one = iconst 1
    two = iconst 2
    zero = iconst 0
    fzero = fconst 0.0
    jump head(start, off, bound, fzero)
head(trip: i64, j: i64, k: i64, acc: f64):
    done = icmp eq trip, zero
    br done, exit, body
body:
    x = load s, j
    y = load out, k
    z = fadd x, y
    store out, k, z
    acc2 = fadd acc, z
    trip2 = isub trip, one
    j2 = iadd j, two
    k2 = isub k, one
    jump head(trip2, j2, k2, acc2)
exit:
    ret acc
}

; a stride from a parameter (not a constant: that index keeps its check) and a constant index
func @up_param_stride(s: slice, out: mslice, start: i64, bound: i64, off: i64) -> f64 {
entry:
    one = iconst 1
    seven = iconst 7
    zero = fconst 0.0
    jump head(start, zero)
head(i: i64, acc: f64):
    more = icmp lt i, bound
    br more, body, exit
body:
    k = imul i, off
    x = load s, k
    c = load s, seven
    store out, seven, c
    y = fadd x, c
    acc2 = fadd acc, y
    next = iadd i, one
    jump head(next, acc2)
exit:
    ret acc
}
";

const FUNCTIONS: [&str; 7] =
    ["up_lt", "up_le", "down_ne", "down_gt", "up_ne_recurrence", "up_param_stride", "lockstep"];

#[test]
fn every_loop_shape_is_versioned() {
    let module = parse_module(LOOPS).unwrap();
    let compiled = compile(&module, &ExternRegistry::new(), &JitOptions::new()).unwrap();
    for name in FUNCTIONS {
        let stats = compiled.function(name).unwrap().bounds_check_stats();
        assert_eq!(stats.versioned_loops, 1, "@{name}: {stats:?}");
        assert!(stats.unchecked_in_fast_copies >= 1, "@{name}: {stats:?}");
    }
    // The recurrence index and the parameter stride are not affine with a constant coefficient:
    // their checks stay in the fast copy too, so the fast copy of each drops fewer checks than
    // its accesses.
    let recurrence = compiled.function("up_ne_recurrence").unwrap().bounds_check_stats();
    assert_eq!(recurrence.unchecked_in_fast_copies, 2, "{recurrence:?}");
    let stride = compiled.function("up_param_stride").unwrap().bounds_check_stats();
    assert_eq!(stride.unchecked_in_fast_copies, 2, "{stride:?}");
    // Indices stepping beside the tested counter are affine in it: none of the three accesses
    // is checked in the fast copy.
    let lockstep = compiled.function("lockstep").unwrap().bounds_check_stats();
    assert_eq!(lockstep.unchecked_in_fast_copies, 3, "{lockstep:?}");
}

#[test]
fn versioned_loops_agree_with_the_interpreter_on_every_edge() {
    let module = parse_module(LOOPS).unwrap();
    let compiled = compile(&module, &ExternRegistry::new(), &JitOptions::new()).unwrap();
    let interp = Interpreter::new(&module).with_step_limit(20_000);
    let big = i64::MAX;
    let starts = [0, 1, 3, 9, 10, 11, -1, -5, big, big - 1, i64::MIN, i64::MIN + 1];
    let bounds = [0, 1, 2, 5, 9, 10, 12, -3, big, i64::MIN];
    let offsets = [0, 1, -1, 2, 5, 9, 20, -20, big, big - 3, i64::MIN, i64::MIN + 2, 1 << 62, -(1 << 62)];
    let (mut returned, mut failed, mut skipped) = (0, 0, 0);
    for name in FUNCTIONS {
        for len in [0usize, 1, 10, 24] {
            let s: Vec<f64> = (0..len).map(|k| (k as f64 * 0.7).sin()).collect();
            let out: Vec<f64> = (0..10).map(|k| k as f64).collect();
            for &start in &starts {
                for &bound in &bounds {
                    for &off in &offsets {
                        let args = [
                            ArgValue::Slice(s.clone()),
                            ArgValue::SliceMut(out.clone()),
                            ArgValue::I64(start),
                            ArgValue::I64(bound),
                            ArgValue::I64(off),
                        ];
                        match differential_call(&compiled, &interp, name, &args) {
                            Ok(Agreement::Returned(_)) => returned += 1,
                            Ok(Agreement::Failed(_)) => failed += 1,
                            Ok(Agreement::Skipped) => skipped += 1,
                            Err(e) => panic!("{e}"),
                        }
                    }
                }
            }
        }
    }
    // Both outcomes are exercised many times (loops that would run ~2^63 times are skipped by
    // the interpreter's step limit).
    assert!(returned > 500 && failed > 500, "returned {returned}, failed {failed}, skipped {skipped}");
}

/// Values computed in a versioned loop and used after it reach the exit through variables that
/// merge the two copies. Two lowering shortcuts used to read the loop's *operands* there
/// instead: a branch on a compare from the loop (re-emitted inverted) and `C * (a + a)` lowered
/// as `2C * a`. Both made the exit block use a value of one copy only, which Cranelift's
/// mid-end rejected with a panic (found by the random-program test).
const EXIT_USES: &str = "\
func @compare_used_after_the_loop(x: f64, s: slice) -> f64 {
entry:
    zero = iconst 0
    jump head(zero)
head(i: i64):
    more = icmp lt i, zero
    br more, body, done
body:
    unused = load s, i
    n = len s
    hit = icmp eq n, i
    br hit, found, next
found:
    br hit, first, second
first:
    ret x
second:
    ret x
next:
    one = iconst 1
    i2 = iadd i, one
    jump head(i2)
done:
    ret x
}

func @double_used_after_the_loop(s: slice, bound: i64) -> f64 {
entry:
    zero = iconst 0
    z = fconst 0.0
    c = fconst 3.0
    jump head(zero, z)
head(i: i64, last: f64):
    more = icmp lt i, bound
    br more, body, done
body:
    a = load s, i
    d = fadd a, a
    one = iconst 1
    i2 = iadd i, one
    jump head(i2, d)
done:
    r = fmul c, last
    ret r
}

func @double_of_a_loop_value_after_it(s: slice, bound: i64) -> f64 {
entry:
    zero = iconst 0
    z = fconst 0.0
    c = fconst 3.0
    jump head(zero, z)
head(i: i64, last: f64):
    more = icmp lt i, bound
    br more, body, exit
body:
    a = load s, i
    d = fadd a, a
    big = fcmp gt a, z
    br big, out, next
next:
    one = iconst 1
    i2 = iadd i, one
    jump head(i2, d)
out:
    r = fmul c, d
    ret r
exit:
    ret last
}
";

#[test]
fn values_from_a_versioned_loop_are_read_correctly_after_it() {
    let module = parse_module(EXIT_USES).unwrap();
    let compiled = compile(&module, &ExternRegistry::new(), &JitOptions::new()).unwrap();
    let interp = Interpreter::new(&module).with_step_limit(20_000);
    let mut returned = 0;
    for len in [0usize, 1, 3, 8] {
        let s: Vec<f64> = (0..len).map(|k| k as f64 - 1.5).collect();
        let mut calls = vec![("compare_used_after_the_loop", vec![ArgValue::F64(2.0), ArgValue::Slice(s.clone())])];
        for bound in [-1, 0, 1, 2, 3, 8, 9] {
            for name in ["double_used_after_the_loop", "double_of_a_loop_value_after_it"] {
                calls.push((name, vec![ArgValue::Slice(s.clone()), ArgValue::I64(bound)]));
            }
        }
        for (name, args) in calls {
            match differential_call(&compiled, &interp, name, &args) {
                Ok(Agreement::Returned(_)) => returned += 1,
                Ok(_) => {}
                Err(e) => panic!("@{name}: {e}"),
            }
        }
    }
    assert!(returned > 30, "only {returned} calls returned");
    for name in ["double_used_after_the_loop", "double_of_a_loop_value_after_it"] {
        assert_eq!(compiled.function(name).unwrap().bounds_check_stats().versioned_loops, 1, "@{name}");
    }
}

/// Loops reading a data table (defined before the loop, as the passes leave it): the table's
/// accesses are versioned like a parameter's, scalar and vector.
const TABLE_LOOPS: &str = "\
const @t = [0.5, 1.5, -2.0, 3.25, 0.125, -1.0, 7.0, 2.5, -0.75, 4.0]

; i up while i < bound: t[i + off] * s[i] summed, out[i] written
func @table_up(s: slice, out: mslice, start: i64, bound: i64, off: i64) -> f64 {
entry:
    t = table @t
    one = iconst 1
    zero = fconst 0.0
    jump head(start, zero)
head(i: i64, acc: f64):
    more = icmp lt i, bound
    br more, body, exit(acc)
body:
    k = iadd i, off
    x = load t, k
    y = load s, i
    xy = fmul x, y
    store out, i, xy
    acc2 = fadd acc, xy
    next = iadd i, one
    jump head(next, acc2)
exit(total: f64):
    ret total
}

; i down while i > bound: lanes t[2 (off - i) .. 2 (off - i) + 2], summed
func @table_down_vector(s: slice, out: mslice, start: i64, bound: i64, off: i64) -> f64 {
entry:
    t = table @t
    one = iconst 1
    zero = fconst 0.0
    jump head(start, zero)
head(i: i64, acc: f64):
    more = icmp gt i, bound
    br more, body, exit
body:
    k = isub off, i
    v = vload.f64x2 t, k
    a = extract v, 0
    b = extract v, 1
    ab = fadd a, b
    acc2 = fadd acc, ab
    next = isub i, one
    jump head(next, acc2)
exit:
    ret acc
}
";

/// Count one JIT-vs-interpreter call: returned, failed alike, or (skipped) neither.
fn tally(agreement: Result<Agreement, Disagreement>, returned: &mut usize, failed: &mut usize) {
    match agreement {
        Ok(Agreement::Returned(_)) => *returned += 1,
        Ok(Agreement::Failed(_)) => *failed += 1,
        Ok(Agreement::Skipped) => {}
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn loops_over_tables_are_versioned_and_agree_with_the_interpreter() {
    let module = parse_module(TABLE_LOOPS).unwrap();
    let compiled = compile(&module, &ExternRegistry::new(), &JitOptions::new()).unwrap();
    for (name, unchecked) in [("table_up", 3), ("table_down_vector", 1)] {
        let stats = compiled.function(name).unwrap().bounds_check_stats();
        assert_eq!(stats.versioned_loops, 1, "@{name}: {stats:?}");
        assert_eq!(stats.unchecked_in_fast_copies, unchecked, "@{name}: {stats:?}");
    }
    let interp = Interpreter::new(&module).with_step_limit(20_000);
    let big = i64::MAX;
    let (mut returned, mut failed) = (0, 0);
    for name in ["table_up", "table_down_vector"] {
        for len in [0usize, 4, 12] {
            let s: Vec<f64> = (0..len).map(|k| (k as f64 * 0.7).sin()).collect();
            for start in [0, 1, 3, 5, 9, 10, -1, big, i64::MIN] {
                for bound in [0, 1, 4, 9, 10, -3, big, i64::MIN] {
                    for off in [0, 1, -1, 4, 9, 10, -10, big, i64::MIN, 1 << 62] {
                        let args = [
                            ArgValue::Slice(s.clone()),
                            ArgValue::SliceMut(vec![0.0; 12]),
                            ArgValue::I64(start),
                            ArgValue::I64(bound),
                            ArgValue::I64(off),
                        ];
                        tally(differential_call(&compiled, &interp, name, &args), &mut returned, &mut failed);
                    }
                }
            }
        }
    }
    assert!(returned > 100 && failed > 100, "returned {returned}, failed {failed}");
}

/// A local array of `n` entries: `a[i + off] += s[i] * 2` for `i` up to `bound`, then
/// `a[i + off]` read back and summed. Its length never changes, like a parameter's: the loop is
/// versioned over it, and in the checked copy the store after the load of the same entry needs
/// no check of its own.
const LOCAL_ARRAY_LOOP: &str = "
func @local_up(s: slice, n: i64, start: i64, bound: i64, off: i64) -> f64 {
entry:
    a = alloc n
    one = iconst 1
    two = fconst 2.0
    zero = fconst 0.0
    jump head(start, zero)
head(i: i64, acc: f64):
    more = icmp lt i, bound
    br more, body, exit(acc)
body:
    k = iadd i, off
    x = load s, i
    y = fmul x, two
    old = load a, k
    new = fadd old, y
    store a, k, new
    again = load a, k
    acc2 = fadd acc, again
    next = iadd i, one
    jump head(next, acc2)
exit(total: f64):
    ret total
}
";

#[test]
fn loops_over_local_arrays_are_versioned_and_agree_with_the_interpreter() {
    let module = parse_module(LOCAL_ARRAY_LOOP).unwrap();
    let compiled = compile(&module, &ExternRegistry::new(), &JitOptions::new()).unwrap();
    let stats = compiled.function("local_up").unwrap().bounds_check_stats();
    assert_eq!(stats.versioned_loops, 1, "{stats:?}");
    assert_eq!(stats.unchecked_in_fast_copies, 4, "{stats:?}");
    // Checked copy: `s[i]` and `a[k]` once each; the store and the second load of `a[k]` follow.
    assert_eq!((stats.emitted, stats.elided), (2, 2), "{stats:?}");
    let interp = Interpreter::new(&module).with_step_limit(20_000);
    let big = i64::MAX;
    let (mut returned, mut failed) = (0, 0);
    for len in [0usize, 4, 12] {
        let s: Vec<f64> = (0..len).map(|k| (k as f64 * 0.7).sin()).collect();
        for n in [0, 3, 12, 13] {
            for start in [0, 1, 5, 10, -1, big, i64::MIN] {
                for bound in [0, 1, 4, 9, 12, -3, big, i64::MIN] {
                    for off in [0, 1, -1, 3, 10, -10, big, i64::MIN] {
                        let args = [
                            ArgValue::Slice(s.clone()),
                            ArgValue::I64(n),
                            ArgValue::I64(start),
                            ArgValue::I64(bound),
                            ArgValue::I64(off),
                        ];
                        tally(differential_call(&compiled, &interp, "local_up", &args), &mut returned, &mut failed);
                    }
                }
            }
        }
    }
    assert!(returned > 100 && failed > 100, "returned {returned}, failed {failed}");
}

/// A loop between constants a few iterations apart (`for k in 0..3`) keeps its checks: the
/// dispatch would test each access about as often as the loop does, and the copy would cost
/// compile time. Between constants further apart, or to a run-time bound, it is versioned.
#[test]
fn short_constant_loops_are_not_versioned() {
    let loop_to = |bound: &str| {
        format!(
            "func @f(s: slice, n: i64) -> f64 {{
entry:
    zero = iconst 0
    one = iconst 1
    end = {bound}
    acc0 = fconst 0.0
    jump head(zero, acc0)
head(i: i64, acc: f64):
    more = icmp lt i, end
    br more, body, exit(acc)
body:
    x = load s, i
    acc2 = fadd acc, x
    next = iadd i, one
    jump head(next, acc2)
exit(total: f64):
    ret total
}}"
        )
    };
    for (bound, versioned) in [("iconst 3", 0), ("iconst 4", 0), ("iconst 5", 1), ("iadd n, zero", 1)] {
        let module = parse_module(&loop_to(bound)).unwrap();
        let compiled = compile(&module, &ExternRegistry::new(), &JitOptions::new()).unwrap();
        let stats = compiled.function("f").unwrap().bounds_check_stats();
        assert_eq!(stats.versioned_loops, versioned, "end = {bound}: {stats:?}");
        let interp = Interpreter::new(&module);
        for len in [2, 3, 4, 5, 6] {
            let s = ArgValue::Slice((0..len).map(|k| k as f64 + 0.5).collect());
            let outcome = differential_call(&compiled, &interp, "f", &[s, ArgValue::I64(4)]);
            assert!(outcome.is_ok(), "end = {bound}, len {len}: {outcome:?}");
        }
    }
}
