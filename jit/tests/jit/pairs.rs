//! Loops run two iterations at a time (`lower/pairs.rs`): the shared arithmetic of iterations
//! `i` and `i + 1` in `f64x2` lanes, the carried chain per iteration in order, for loops of at
//! least 8 iterations (16 for a loop that stores). Whatever the trip count (odd counts end in the fast copy, short loops
//! run there entirely), the values (NaN and infinities included) and the
//! accesses (out of bounds: the dispatch sends the call to the checked copy), the native code
//! must return exactly what the interpreter does, bit for bit.

use jitdiff_ir::{ArgValue, ExternRegistry, parse_module};
use jitdiff_jit::{JitOptions, compile};

const LOOPS: &str = "\
; sum over i in [start, bound) of (a[i] - b[i + off])^2: a squared distance
func @dist(a: slice, b: slice, start: i64, bound: i64, off: i64) -> f64 {
entry:
    one = iconst 1
    zero = fconst 0.0
    jump head(start, zero)
head(i: i64, acc: f64):
    more = icmp lt i, bound
    br more, body, exit(acc)
body:
    k = iadd i, off
    x = load a, i
    y = load b, k
    e = fsub x, y
    sq = fmul e, e
    acc2 = fadd acc, sq
    next = iadd i, one
    jump head(next, acc2)
exit(total: f64):
    ret total
}

; two carried values, one feeding the other, with an element read at a fixed index, a
; constant, a negation, a division and a square root among the shared work
func @mixed(x: slice, n: i64, c: f64) -> f64, f64 {
entry:
    zero = iconst 0
    one = iconst 1
    start = fconst 1.0
    jump head(zero, start, start)
head(i: i64, p: f64, q: f64):
    more = icmp lt i, n
    br more, body, exit
body:
    first = load x, zero
    xi = load x, i
    j = iadd i, one
    xj = load x, j
    half = fconst 0.5
    neg = fneg xi
    ratio = fdiv neg, xj
    scaled = fmul ratio, half
    root = sqrt xj
    shifted = fsub root, first
    term = fmul scaled, c
    p2 = fsub p, term
    pq = fmul p2, q
    q2 = fadd pq, shifted
    q3 = fdiv q2, c
    next = iadd i, one
    jump head(next, p2, q3)
exit:
    ret p, q
}

; shared work carried to the next iteration: sum of (x[i]^2 - x[i-1]^2)^2, the previous square
; passed along the back edge (and a carried value passed on unchanged)
func @steps(x: slice, n: i64, keep: f64) -> f64, f64 {
entry:
    zero = iconst 0
    one = iconst 1
    acc0 = fconst 0.0
    prev0 = load x, zero
    jump head(one, prev0, acc0, keep)
head(i: i64, prev: f64, acc: f64, same: f64):
    more = icmp lt i, n
    br more, body, exit
body:
    xi = load x, i
    sq = fmul xi, xi
    d = fsub sq, prev
    d2 = fmul d, d
    acc2 = fadd acc, d2
    next = iadd i, one
    jump head(next, sq, acc2, same)
exit:
    r = fadd acc, same
    ret r, prev
}

; stores each square and accumulates them
func @writes(x: slice, out: mslice, n: i64) -> f64 {
entry:
    zero = iconst 0
    one = iconst 1
    acc0 = fconst 0.0
    jump head(zero, acc0)
head(i: i64, acc: f64):
    more = icmp lt i, n
    br more, body, exit
body:
    xi = load x, i
    sq = fmul xi, xi
    store out, i, sq
    acc2 = fadd acc, sq
    next = iadd i, one
    jump head(next, acc2)
exit:
    ret acc
}

; an integer carried beside the counter, converted to a float, and the reverse-mode pattern
; `d[i] += pending + term` with `pending` computed in one iteration and added in the next
func @accumulate(x: slice, d: mslice, n: i64) -> f64, i64 {
entry:
    zero = iconst 0
    one = iconst 1
    two = iconst 2
    nothing = fconst -0.0
    jump head(zero, nothing, two)
head(i: i64, pending: f64, c: i64):
    more = icmp lt i, n
    br more, body, exit
body:
    xi = load x, i
    cf = itof c
    term = fmul xi, xi
    scaled = fmul term, cf
    di = load d, i
    sum = fadd di, pending
    total = fadd sum, scaled
    store d, i, total
    c2 = iadd c, i
    half = fconst 0.5
    next_pending = fmul term, half
    next = iadd i, one
    jump head(next, next_pending, c2)
exit:
    ret pending, c
}

; not paired: the loop reads the element before the one it stores (iteration i + 1 reads what
; iteration i wrote)
func @behind(x: mslice, n: i64) -> f64 {
entry:
    one = iconst 1
    acc0 = fconst 0.0
    jump head(one, acc0)
head(i: i64, acc: f64):
    more = icmp lt i, n
    br more, body, exit
body:
    j = isub i, one
    xj = load x, j
    xi = load x, i
    sq = fmul xj, xi
    store x, i, sq
    acc2 = fadd acc, sq
    next = iadd i, one
    jump head(next, acc2)
exit:
    ret acc
}

; paired, but with its source and destination the same memory when called by @in_place: the
; entry's overlap check must send that call to the unpaired copy
func @shift(src: slice, dst: mslice, n: i64) -> f64 {
entry:
    one = iconst 1
    zero = iconst 0
    acc0 = fconst 0.0
    jump head(one, acc0)
head(i: i64, acc: f64):
    more = icmp lt i, n
    br more, body, exit
body:
    j = isub i, one
    v = load src, j
    w = fmul v, v
    store dst, i, w
    acc2 = fadd acc, w
    next = iadd i, one
    jump head(next, acc2)
exit:
    ret acc
}

; an inner loop storing over the same range at every entry of the outer loop: paired
func @nested(x: slice, out: mslice, n: i64, m: i64) -> f64 {
entry:
    zero = iconst 0
    one = iconst 1
    acc0 = fconst 0.0
    jump outer(zero, acc0)
outer(k: i64, acc: f64):
    more = icmp lt k, m
    br more, start, exit
start:
    jump inner(zero, acc)
inner(i: i64, a: f64):
    go = icmp lt i, n
    br go, body, next_outer
body:
    xi = load x, i
    sq = fmul xi, xi
    oi = load out, i
    s = fadd oi, sq
    store out, i, s
    a2 = fadd a, s
    i2 = iadd i, one
    jump inner(i2, a2)
next_outer:
    k2 = iadd k, one
    jump outer(k2, a)
exit:
    ret acc
}

; a reversed loop as a pullback has it: a trip count down to 0, the index computed in the
; header, `d[j] += x[j] c` and the sum of the terms, last element first
func @down(x: slice, d: mslice, n: i64, c: f64) -> f64 {
entry:
    zero = iconst 0
    one = iconst 1
    acc0 = fconst 0.0
    jump head(n, acc0)
head(trip: i64, acc: f64):
    j = isub trip, one
    done = icmp eq trip, zero
    br done, exit, body
body:
    xj = load x, j
    w = fmul xj, c
    dj = load d, j
    s = fadd dj, w
    store d, j, s
    acc2 = fadd acc, w
    jump head(j, acc2)
exit:
    ret acc
}

; counting up, reading and writing from the end: index n - 1 - i
func @mirror(x: slice, d: mslice, n: i64) -> f64 {
entry:
    zero = iconst 0
    one = iconst 1
    acc0 = fconst 0.0
    last = isub n, one
    jump head(zero, acc0)
head(i: i64, acc: f64):
    more = icmp lt i, n
    br more, body, exit
body:
    k = isub last, i
    xk = load x, k
    sq = fmul xk, xk
    dk = load d, k
    s = fsub dk, sq
    store d, k, s
    acc2 = fsub acc, s
    next = iadd i, one
    jump head(next, acc2)
exit:
    ret acc
}

; not paired: one element read going up and one going down
func @both_ways(x: slice, n: i64) -> f64 {
entry:
    zero = iconst 0
    one = iconst 1
    acc0 = fconst 0.0
    last = isub n, one
    jump head(zero, acc0)
head(i: i64, acc: f64):
    more = icmp lt i, n
    br more, body, exit
body:
    k = isub last, i
    xi = load x, i
    xk = load x, k
    p = fmul xi, xk
    acc2 = fadd acc, p
    next = iadd i, one
    jump head(next, acc2)
exit:
    ret acc
}

; fused multiply-adds as forward mode's tangent sums have them, and strong-zero products as
; reverse mode's: one of each on lanes, one carried
func @tangent(x: slice, dx: slice, n: i64) -> f64, f64 {
entry:
    zero = iconst 0
    one = iconst 1
    acc0 = fconst 0.0
    jump head(zero, acc0, acc0)
head(i: i64, v: f64, dv: f64):
    more = icmp lt i, n
    br more, body, exit
body:
    xi = load x, i
    dxi = load dx, i
    sq = fmul xi, xi
    dsq = fma xi, dxi, dxi
    strong = fmulsz dsq, xi
    v2 = fadd v, sq
    v3 = fmulsz v2, strong
    v4 = fadd v3, sq
    dv2 = fma dsq, xi, dv
    next = iadd i, one
    jump head(next, v4, dv2)
exit:
    ret v, dv
}

func @in_place(x: mslice, n: i64) -> f64 {
entry:
    r = call @shift(x, x, n)
    ret r
}
";

/// `n` values of mixed sign and size (some NaN or infinite when `special`).
fn values(n: usize, seed: u64, special: bool) -> Vec<f64> {
    (0..n)
        .map(|k| {
            let t = (k as f64 * 0.731 + seed as f64 * 1.37).sin();
            match (special, k % 11) {
                (true, 3) => f64::NAN,
                (true, 7) => f64::INFINITY,
                (true, 9) => -0.0,
                _ => t * 10f64.powi((k % 5) as i32 - 2),
            }
        })
        .collect()
}

fn slice(n: usize, seed: u64, special: bool) -> ArgValue {
    ArgValue::Slice(values(n, seed, special))
}

/// `LOOPS` and `@triangle`: `@nested` with its inner loop starting at the outer counter (a
/// range changing from entry to entry), which is not paired.
fn loops() -> String {
    let start = LOOPS.find("func @nested").expect("@nested");
    let end = start + LOOPS[start..].find("\n}\n").expect("end of @nested") + 3;
    let triangle =
        LOOPS[start..end].replace("@nested", "@triangle").replace("jump inner(zero, acc)", "jump inner(k, acc)");
    format!("{LOOPS}\n{triangle}")
}

fn check(name: &str, cases: &[Vec<ArgValue>]) -> (usize, usize) {
    super::agree(&loops(), name, cases)
}

#[test]
fn the_loops_of_shared_arithmetic_are_paired_and_the_others_not() {
    let module = parse_module(&loops()).unwrap();
    let compiled = compile(&module, &ExternRegistry::new(), &JitOptions::new()).unwrap();
    for (name, paired) in [
        ("dist", 1),
        ("mixed", 1),
        ("steps", 1),
        ("writes", 1),
        ("accumulate", 1),
        ("behind", 0),
        ("shift", 1),
        ("nested", 1),
        ("triangle", 0),
    ] {
        let stats = compiled.function(name).unwrap().bounds_check_stats();
        assert_eq!(stats.versioned_loops, 1, "@{name}: {stats:?}");
        assert_eq!(stats.paired_loops, paired, "@{name}: {stats:?}");
    }
}

#[test]
fn a_distance_agrees_for_every_trip_count_start_and_offset() {
    let mut cases = vec![];
    for special in [false, true] {
        for (start, bound) in [(0i64, 0i64), (0, 1), (0, 2), (0, 3), (0, 4), (3, 20), (1, 64), (5, 4), (-1, 3)] {
            for off in [0i64, 1, -1, 5] {
                cases.push(vec![
                    slice(64, 1, special),
                    slice(70, 2, special),
                    ArgValue::I64(start),
                    ArgValue::I64(bound),
                    ArgValue::I64(off),
                ]);
            }
        }
    }
    let (returned, failed) = check("dist", &cases);
    // Out of bounds: a negative start, or `b[i + off]` past either end.
    assert!(returned > 0 && failed > 0, "{returned} returned, {failed} failed");
}

#[test]
fn two_carried_values_agree() {
    let mut cases = vec![];
    for special in [false, true] {
        for n in [0i64, 1, 2, 3, 4, 5, 16, 33, 99, 100] {
            for c in [0.75, -3.0, 0.0] {
                cases.push(vec![slice(100, 3, special), ArgValue::I64(n), ArgValue::F64(c)]);
            }
        }
    }
    // n = 100 reads x[100]: out of bounds in the last iteration.
    let (returned, failed) = check("mixed", &cases);
    assert_eq!((returned, failed), (54, 6));
}

#[test]
fn an_element_carried_to_the_next_iteration_agrees() {
    let mut cases = vec![];
    for special in [false, true] {
        for n in [1i64, 2, 3, 4, 5, 6, 17, 40, 41] {
            cases.push(vec![slice(40, 4, special), ArgValue::I64(n), ArgValue::F64(2.5)]);
        }
    }
    // n = 41 reads x[40].
    assert_eq!(check("steps", &cases), (16, 2));
    let cases: Vec<Vec<ArgValue>> = [0i64, 3, 10]
        .iter()
        .flat_map(|&n| {
            [vec![slice(10, 5, false), ArgValue::F64(0.0)], vec![slice(12, 6, true), ArgValue::F64(1.0)]]
                .into_iter()
                .map(move |mut a| {
                    a.insert(1, ArgValue::I64(n));
                    a
                })
        })
        .collect();
    assert_eq!(check("steps", &cases), (6, 0));
}

#[test]
fn loops_that_store_agree() {
    // (A loop that stores is paired from 16 iterations on.)
    let mut cases = vec![];
    for n in [0i64, 1, 2, 7, 16, 17, 40, 41] {
        cases.push(vec![slice(40, 7, true), ArgValue::SliceMut(vec![0.0; 40]), ArgValue::I64(n)]);
    }
    // n = 41 stores out[40].
    assert_eq!(check("writes", &cases), (7, 1));
    let mut cases = vec![];
    for n in [0i64, 1, 2, 3, 16, 33, 40, 41] {
        cases.push(vec![slice(40, 8, false), ArgValue::SliceMut(values(40, 9, true)), ArgValue::I64(n)]);
    }
    assert_eq!(check("accumulate", &cases), (7, 1));
    let cases: Vec<Vec<ArgValue>> =
        [0i64, 1, 2, 5, 6].iter().map(|&n| vec![ArgValue::SliceMut(values(6, 10, false)), ArgValue::I64(n)]).collect();
    assert_eq!(check("behind", &cases), (5, 0));
}

#[test]
fn a_paired_loop_whose_slices_overlap_runs_unpaired() {
    // Through @in_place the loop reads x[i - 1] after iteration i - 1 stored it: squares of
    // squares. Called directly with two buffers, it reads the original values.
    // (At least 16 iterations, or the paired copy is not entered anyway.)
    let cases: Vec<Vec<ArgValue>> = [0i64, 1, 2, 5, 17, 33, 40, 41]
        .iter()
        .map(|&n| vec![ArgValue::SliceMut(values(40, 11, false)), ArgValue::I64(n)])
        .collect();
    assert_eq!(check("in_place", &cases), (7, 1));
    let cases: Vec<Vec<ArgValue>> = [2i64, 17, 40]
        .iter()
        .map(|&n| vec![slice(40, 11, false), ArgValue::SliceMut(vec![0.0; 40]), ArgValue::I64(n)])
        .collect();
    assert_eq!(check("shift", &cases), (3, 0));
}

#[test]
fn inner_loops_that_store_agree() {
    let mut cases = vec![];
    for n in [0i64, 5, 9, 20, 21] {
        for m in [0i64, 1, 3] {
            cases.push(vec![
                slice(20, 12, true),
                ArgValue::SliceMut(values(20, 13, false)),
                ArgValue::I64(n),
                ArgValue::I64(m),
            ]);
        }
    }
    // n = 21 with m > 0 reads x[20].
    assert_eq!(check("nested", &cases), (13, 2));
    assert_eq!(check("triangle", &cases), (13, 2));
}

#[test]
fn loops_reading_downwards_agree() {
    let mut cases = vec![];
    for n in [0i64, 1, 2, 7, 8, 9, 16, 17, 18] {
        for special in [false, true] {
            cases.push(vec![
                slice(17, 14, special),
                ArgValue::SliceMut(values(17, 15, false)),
                ArgValue::I64(n),
                ArgValue::F64(-1.5),
            ]);
        }
    }
    // n = 18 reads x[17].
    assert_eq!(check("down", &cases), (16, 2));
    for case in &mut cases {
        case.pop();
    }
    assert_eq!(check("mirror", &cases), (16, 2));
    let cases: Vec<Vec<ArgValue>> =
        [0i64, 5, 9, 17, 18].iter().map(|&n| vec![slice(17, 16, true), ArgValue::I64(n)]).collect();
    assert_eq!(check("both_ways", &cases), (4, 1));
}

#[test]
fn fused_multiply_adds_agree() {
    let mut cases = vec![];
    for n in [0i64, 1, 8, 9, 30, 31, 32] {
        for special in [false, true] {
            cases.push(vec![slice(31, 17, special), slice(31, 18, false), ArgValue::I64(n)]);
        }
    }
    // n = 32 reads x[31].
    assert_eq!(check("tangent", &cases), (12, 2));
}

/// Loops that push or pop one `f64` per iteration: paired where the two iterations' entries lie
/// next to each other on the tape in the order their elements lie in memory.
const TAPE_LOOPS: &str = "\
; pushes each square (shared work) as it stores it
func @push_squares(x: slice, out: mslice, n: i64) -> f64 {
entry:
    zero = iconst 0
    one = iconst 1
    acc0 = fconst 0.0
    jump head(zero, acc0)
head(i: i64, acc: f64):
    more = icmp lt i, n
    br more, body, exit
body:
    xi = load x, i
    sq = fmul xi, xi
    store out, i, sq
    tpush sq
    acc2 = fadd acc, sq
    next = iadd i, one
    jump head(next, acc2)
exit:
    ret acc
}

; pushes the running sum, a carried value (each iteration's own)
func @push_sums(x: slice, n: i64) -> f64 {
entry:
    zero = iconst 0
    one = iconst 1
    acc0 = fconst 0.0
    half = fconst 0.5
    jump head(zero, acc0)
head(i: i64, acc: f64):
    more = icmp lt i, n
    br more, body, exit
body:
    xi = load x, i
    h = fmul xi, half
    acc2 = fadd acc, h
    tpush acc2
    next = iadd i, one
    jump head(next, acc2)
exit:
    ret acc
}

; pops one entry per iteration, last element first, as a pullback does
func @pop_down(d: mslice, n: i64, c: f64) -> f64 {
entry:
    zero = iconst 0
    one = iconst 1
    acc0 = fconst 0.0
    jump head(n, acc0)
head(trip: i64, acc: f64):
    j = isub trip, one
    done = icmp eq trip, zero
    br done, exit, body
body:
    e = tpop.f64
    w = fmul e, c
    dj = load d, j
    s = fadd dj, w
    store d, j, s
    acc2 = fadd acc, e
    jump head(j, acc2)
exit:
    ret acc
}

; not paired: pops going up through memory (the second iteration's entry lies below the
; first's, its element above)
func @pop_up(d: mslice, n: i64) {
entry:
    zero = iconst 0
    one = iconst 1
    jump head(zero)
head(i: i64):
    more = icmp lt i, n
    br more, body, exit
body:
    e = tpop.f64
    sq = fmul e, e
    di = load d, i
    s = fadd di, sq
    store d, i, s
    next = iadd i, one
    jump head(next)
exit:
    ret
}
";

/// Run `name` natively and in the interpreter on `tape`; both must agree (values, failures and
/// the final tape, bit for bit). Returns the agreed tape.
fn on_tape(name: &str, args: &[ArgValue], tape: &jitdiff_ir::Tape) -> (jitdiff_jit::Agreement, jitdiff_ir::Tape) {
    let module = parse_module(TAPE_LOOPS).unwrap();
    let compiled = compile(&module, &ExternRegistry::new(), &JitOptions::new()).unwrap();
    let interp = jitdiff_ir::Interpreter::new(&module);
    jitdiff_jit::differential_call_with_tape(&compiled, &interp, name, args, tape).unwrap_or_else(|d| panic!("{d}"))
}

#[test]
fn loops_pushing_or_popping_one_entry_per_iteration_are_paired() {
    let module = parse_module(TAPE_LOOPS).unwrap();
    let compiled = compile(&module, &ExternRegistry::new(), &JitOptions::new()).unwrap();
    for (name, paired) in [("push_squares", 1), ("push_sums", 1), ("pop_down", 1), ("pop_up", 0)] {
        let stats = compiled.function(name).unwrap().bounds_check_stats();
        assert_eq!(stats.versioned_loops, 1, "@{name}: {stats:?}");
        assert_eq!(stats.paired_loops, paired, "@{name}: {stats:?}");
    }
}

#[test]
fn paired_pushes_and_pops_agree_for_every_trip_count() {
    use jitdiff_ir::Tape;
    for n in (0..40).chain([101, 1000]) {
        let x = values(n, n as u64, n % 3 == 0);
        // Pushed onto an empty tape and onto one holding a few entries (an odd count, so the
        // pairs are not 16-byte aligned there).
        for held in [0usize, 3] {
            let mut tape = Tape::new();
            for k in 0..held {
                tape.push_bits((k as f64).to_bits()).unwrap();
            }
            let args = [ArgValue::Slice(x.clone()), ArgValue::SliceMut(vec![0.0; n]), ArgValue::I64(n as i64)];
            let (_, pushed) = on_tape("push_squares", &args, &tape);
            assert_eq!(pushed.len(), held + n);
            let (_, pushed) = on_tape("push_sums", &[ArgValue::Slice(x.clone()), ArgValue::I64(n as i64)], &pushed);
            assert_eq!(pushed.len(), held + 2 * n);
            // Popped back: the sums, then the squares; then one loop too many fails at the
            // pop the interpreter fails at.
            let pop = |tape: &Tape, c: f64| {
                let args = [ArgValue::SliceMut(values(n, 7, false)), ArgValue::I64(n as i64), ArgValue::F64(c)];
                on_tape("pop_down", &args, tape)
            };
            let (_, popped) = pop(&pushed, 1.5);
            let (_, popped) = pop(&popped, -0.25);
            assert_eq!(popped.cursor(), held);
            let (last, after) = pop(&popped, 2.0);
            if n > held {
                assert_eq!(last, jitdiff_jit::Agreement::Failed("TapeUnderflow"), "n = {n}, held {held}");
            }
            assert_eq!(after.cursor(), held.saturating_sub(n));
            let (_, up) = on_tape("pop_up", &[ArgValue::SliceMut(vec![1.0; n]), ArgValue::I64(n as i64)], &pushed);
            assert_eq!(up.cursor(), held + n);
        }
    }
}
