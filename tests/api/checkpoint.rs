//! Checkpointed loops (`Builder::checkpoint`): gradients bit-identical to the unbounded ones,
//! through the JIT and the interpreter, on the pendulum and small loop programs.

use jitdiff::ad::{Checkpoint, derive_reverse, derive_reverse_checkpointed};
use jitdiff::ir::{ArgValue, Interpreter, Module, RuntimeValue, Tape, parse_module};
use jitdiff::{Arg, GradientFn, GradientMode};
use jitdiff_problems::pendulum::{ENTRY, PENDULUM_IR};

const RULES: [Checkpoint; 14] = [
    Checkpoint::Segments,
    Checkpoint::SegmentLength(1),
    Checkpoint::SegmentLength(2),
    Checkpoint::SegmentLength(3),
    Checkpoint::SegmentLength(1000),
    Checkpoint::Snapshots(1),
    Checkpoint::Snapshots(7),
    Checkpoint::Snapshots(1000),
    Checkpoint::Binomial(1),
    Checkpoint::Binomial(2),
    Checkpoint::Binomial(5),
    Checkpoint::Bytes(1),
    Checkpoint::Bytes(4096),
    Checkpoint::Bytes(1 << 20),
];

fn handle(m: &Module, f: &str, wrt: &[&str], checkpoint: Checkpoint) -> GradientFn {
    GradientFn::builder(m, f)
        .wrt(wrt.iter().copied())
        .gradient_mode(GradientMode::Reverse)
        .checkpoint(checkpoint)
        .build()
        .unwrap()
}

fn bits(v: &[f64]) -> Vec<u64> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// Bits, with an exact zero's sign dropped: where a derivative is exactly zero because an
/// adjoint never reaches it, the unbounded pullback may add nothing where the segments add
/// `+0.0` (see docs/reverse.md, "Checkpointing").
fn bits_up_to_zero_sign(v: &[f64]) -> Vec<u64> {
    v.iter().map(|x| if *x == 0.0 { 0 } else { x.to_bits() }).collect()
}

/// Value and gradient of `f` by both handles, bit for bit, for each rule.
fn same_gradient(m: &Module, f: &str, wrt: &[&str], inputs: usize, args: &mut dyn FnMut() -> Vec<Arg<'static>>) {
    same_gradient_as(m, f, wrt, inputs, args, bits);
}

fn same_gradient_as(
    m: &Module,
    f: &str,
    wrt: &[&str],
    inputs: usize,
    args: &mut dyn FnMut() -> Vec<Arg<'static>>,
    bits: fn(&[f64]) -> Vec<u64>,
) {
    let plain = handle(m, f, wrt, Checkpoint::Off);
    let mut expected = vec![0.0; inputs];
    let value = plain.value_and_grad(&mut args(), &mut expected).unwrap();
    for rule in RULES {
        let bounded = handle(m, f, wrt, rule);
        assert!(!bounded.checkpoints().is_empty(), "{f}: no loop checkpointed with {rule}");
        let mut got = vec![0.0; inputs];
        let v = bounded.value_and_grad(&mut args(), &mut got).unwrap();
        assert_eq!(v.to_bits(), value.to_bits(), "{f} value, {rule}");
        assert_eq!(bits(&got), bits(&expected), "{f} gradient, {rule}: {got:?} vs {expected:?}");
    }
}

static PARAMS: [f64; 3] = [9.81, 0.25, 0.5];

#[test]
fn pendulum_gradients_are_bit_identical() {
    let m = parse_module(PENDULUM_IR).unwrap();
    for steps in [0i64, 1, 2, 3, 97, 1000] {
        same_gradient(&m, ENTRY, &["params", "theta0", "omega0", "dt"], 6, &mut || {
            vec![Arg::Slice(&PARAMS), Arg::F64(1.0), Arg::F64(0.0), Arg::F64(0.01), Arg::I64(steps)]
        });
    }
}

/// A loop that branches inside, with a float and an integer carried besides the counter and an
/// invariant read in the body.
const BRANCHY: &str = "func @f(x: f64, a: f64, start: i64, n: i64) -> f64 {
entry:
    one = iconst 1
    two = iconst 2
    zero = iconst 0
    half = fconst 0.5
    jump head(start, x, zero)
head(i: i64, y: f64, k: i64):
    c = icmp lt i, n
    br c, body, done(y, k)
body:
    r = irem i, two
    even = icmp eq r, zero
    br even, up, down
up:
    s = sin y
    t = fmul s, a
    u = fadd t, y
    jump join(u)
down:
    p = fmul y, half
    q = cos p
    w = fmul q, a
    jump join(w)
join(z: f64):
    k2 = iadd k, one
    i2 = iadd i, one
    jump head(i2, z, k2)
done(yf: f64, kf: i64):
    kf_f = itof kf
    out = fmul yf, kf_f
    ret out
}";

#[test]
fn branching_loops_are_bit_identical_at_small_trip_counts() {
    let m = parse_module(BRANCHY).unwrap();
    for (start, n) in [(0i64, 0i64), (0, 1), (0, 2), (0, 13), (5, 4), (3, 41), (-7, 10)] {
        same_gradient(&m, "f", &["x", "a"], 2, &mut || {
            vec![Arg::F64(0.7), Arg::F64(1.3), Arg::I64(start), Arg::I64(n)]
        });
    }
}

#[test]
fn the_interpreter_agrees_bit_for_bit() {
    let m = parse_module(BRANCHY).unwrap();
    let plain = derive_reverse(&m, "f", &[true, true, false, false]).unwrap();
    for n in [0i64, 1, 2, 17] {
        let run = |module: &Module, vg: &str| {
            let mut args = [ArgValue::F64(0.7), ArgValue::F64(1.3), ArgValue::I64(0), ArgValue::I64(n)];
            Interpreter::new(module).call_with_tape(vg, &mut args, &mut Tape::new()).unwrap()
        };
        let expected = run(&plain.module, plain.value_and_grad.as_deref().unwrap());
        for rule in RULES {
            let (d, schedule) =
                derive_reverse_checkpointed(&m, "f", &[true, true, false, false], &Default::default(), rule).unwrap();
            assert_eq!(schedule.len(), 1);
            let got = run(&d.module, d.value_and_grad.as_deref().unwrap());
            let as_bits = |v: &[RuntimeValue]| format!("{v:?}");
            assert_eq!(as_bits(&got), as_bits(&expected), "n = {n}, {rule}");
        }
    }
}

/// A loop checkpointing cannot take is an error that names it and says why, for each reason.
#[test]
fn loops_that_cannot_be_checkpointed_are_refused_with_the_reason() {
    let program = |body: &str, step: &str| {
        format!(
            "func @f(x: slice, out: mslice, n: i64) {{
entry:
    zero = iconst 0
    one = iconst 1
    two = iconst 2
    jump head(zero)
head(i: i64):
    c = icmp lt i, n
    br c, body, done
body:
    v = load x, i
    s = sin v
{body}    j = iadd i, {step}
    jump head(j)
done:
    ret
}}"
        )
    };
    for (text, reason) in [
        (program("    store out, i, s\n", "one"), "it stores into a slice"),
        (program("    w = load out, i\n", "one"), "it reads a mutable slice"),
        (program("", "two"), "its counter does not step by 1"),
    ] {
        let m = parse_module(&text).unwrap();
        for rule in [Checkpoint::Segments, Checkpoint::Bytes(1 << 20)] {
            let error = GradientFn::builder(&m, "f")
                .wrt(["x"])
                .gradient_mode(GradientMode::Reverse)
                .checkpoint(rule)
                .build()
                .err()
                .unwrap_or_else(|| panic!("{text} was checkpointed"))
                .to_string();
            assert!(error.contains("cannot checkpoint the loop at block `head` of @f"), "{error}");
            assert!(error.contains(reason), "{error}");
            assert!(error.contains("Checkpoint::Off"), "{error}");
        }
        // Without checkpointing the same function differentiates.
        let plain = GradientFn::builder(&m, "f").wrt(["x"]).gradient_mode(GradientMode::Reverse).build();
        assert!(plain.is_ok(), "{text}");
    }
}

/// A loop that stores into a slice beside one that qualifies: the second is checkpointed, the
/// first recorded as usual, and the gradient is the unbounded one.
#[test]
fn a_loop_that_does_not_qualify_beside_one_that_does_is_recorded() {
    let m = parse_module(
        "func @f(x: f64, out: mslice, n: i64) -> f64 {
entry:
    zero = iconst 0
    one = iconst 1
    m = len out
    jump fill(zero)
fill(k: i64):
    more = icmp lt k, m
    br more, fill_body, run(zero, x)
fill_body:
    kf = itof k
    store out, k, kf
    k2 = iadd k, one
    jump fill(k2)
run(i: i64, y: f64):
    c = icmp lt i, n
    br c, body, done(y)
body:
    s = sin y
    t = fmul s, x
    j = iadd i, one
    jump run(j, t)
done(r: f64):
    ret r
}",
    )
    .unwrap();
    let plain = handle(&m, "f", &["x"], Checkpoint::Off);
    for rule in [Checkpoint::Segments, Checkpoint::Bytes(4096)] {
        let bounded = handle(&m, "f", &["x"], rule);
        let loops: Vec<&str> = bounded.checkpoints().iter().map(|l| l.header.as_str()).collect();
        assert_eq!(loops, ["run"], "{rule}");
        let (mut a, mut b) = ([0.0; 4], [0.0; 4]);
        let (mut g1, mut g2) = ([0.0], [0.0]);
        let v1 = plain.value_and_grad(&mut [Arg::F64(0.3), Arg::SliceMut(&mut a), Arg::I64(50)], &mut g1).unwrap();
        let v2 = bounded.value_and_grad(&mut [Arg::F64(0.3), Arg::SliceMut(&mut b), Arg::I64(50)], &mut g2).unwrap();
        assert_eq!((v1.to_bits(), g1[0].to_bits(), a), (v2.to_bits(), g2[0].to_bits(), b), "{rule}");
    }
}

#[test]
fn vjp_and_pullback_agree_with_the_unbounded_handle() {
    let m = parse_module(PENDULUM_IR).unwrap();
    let wrt = ["params", "theta0", "omega0", "dt"];
    let (plain, bounded) = (handle(&m, ENTRY, &wrt, Checkpoint::Off), handle(&m, ENTRY, &wrt, Checkpoint::Segments));
    let args = || vec![Arg::Slice(&PARAMS), Arg::F64(0.4), Arg::F64(-0.2), Arg::F64(0.01), Arg::I64(321)];
    let (mut expected, mut got) = ([0.0; 6], [0.0; 6]);
    let v1 = plain.vjp(&mut args(), &[1.5], &mut expected).unwrap();
    let v2 = bounded.vjp(&mut args(), &[1.5], &mut got).unwrap();
    assert_eq!(format!("{v1:?}"), format!("{v2:?}"));
    assert_eq!(bits(&got), bits(&expected));
    // A pullback applied twice recomputes its segments each time, on the tape it left as it was.
    let (_, mut pb) = bounded.pullback(&mut args()).unwrap();
    for _ in 0..2 {
        assert_eq!(bits(&pb.apply(&[1.5]).unwrap()), bits(&expected));
    }
}

#[test]
fn the_pendulum_written_in_rust_is_checkpointed_too() {
    let m = jitdiff::front::lower_source(jitdiff_problems::rust::PENDULUM).unwrap();
    for steps in [0i64, 1, 2, 37] {
        same_gradient(&m, "pendulum", &["params", "theta0", "omega0", "dt"], 6, &mut || {
            vec![Arg::Slice(&PARAMS), Arg::F64(1.0), Arg::F64(0.0), Arg::F64(0.01), Arg::I64(steps)]
        });
    }
}

/// A random loop: two carried floats, an invariant, straight-line work from a small set of ops
/// and, half the time, a branch on the sign of a value that joins again.
fn random_loop(rng: &mut jitdiff::SplitMix64) -> String {
    let mut body = String::new();
    let mut pool = vec!["y".to_string(), "z".to_string(), "a".to_string()];
    let pick =
        |rng: &mut jitdiff::SplitMix64, pool: &[String]| pool[(rng.next_u64() % pool.len() as u64) as usize].clone();
    let straight = |rng: &mut jitdiff::SplitMix64, pool: &mut Vec<String>, body: &mut String, tag: &str, n: usize| {
        for k in 0..n {
            let (x, y) = (pick(rng, pool), pick(rng, pool));
            let name = format!("{tag}{k}");
            let op = match rng.next_u64() % 6 {
                0 => format!("fadd {x}, {y}"),
                1 => format!("fmul {x}, {y}"),
                2 => format!("fsub {x}, {y}"),
                3 => format!("sin {x}"),
                4 => format!("cos {x}"),
                _ => format!("fmul {x}, half"),
            };
            body.push_str(&format!("    {name} = {op}\n"));
            pool.push(name);
        }
    };
    let count = 1 + (rng.next_u64() % 6) as usize;
    straight(rng, &mut pool, &mut body, "v", count);
    let (next_y, next_z) = if rng.next_u64().is_multiple_of(2) {
        let c = pick(rng, &pool);
        body.push_str(&format!("    pos = fcmp gt {c}, zero\n    br pos, left, right\nleft:\n"));
        let mut l = pool.clone();
        straight(rng, &mut l, &mut body, "l", 2);
        let (ly, lz) = (pick(rng, &l), pick(rng, &l));
        body.push_str(&format!("    jump join({ly}, {lz})\nright:\n"));
        let mut r = pool.clone();
        straight(rng, &mut r, &mut body, "r", 2);
        let (ry, rz) = (pick(rng, &r), pick(rng, &r));
        body.push_str(&format!("    jump join({ry}, {rz})\njoin(jy: f64, jz: f64):\n"));
        ("jy".to_string(), "jz".to_string())
    } else {
        (pick(rng, &pool), pick(rng, &pool))
    };
    format!(
        "func @f(x: f64, a: f64, n: i64) -> f64 {{
entry:
    zero_i = iconst 0
    one = iconst 1
    zero = fconst 0.0
    half = fconst 0.5
    jump head(zero_i, x, a)
head(i: i64, y: f64, z: f64):
    c = icmp lt i, n
    br c, body, done(y, z)
body:
{body}    i2 = iadd i, one
    jump head(i2, {next_y}, {next_z})
done(yf: f64, zf: f64):
    s = fmul yf, zf
    t = fadd s, a
    ret t
}}"
    )
}

#[test]
fn random_loops_are_bit_identical() {
    let mut rng = jitdiff::SplitMix64::new(28);
    for _ in 0..150 {
        let text = random_loop(&mut rng);
        let m = parse_module(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        let n = [0i64, 1, 2, 3, 7, 13][(rng.next_u64() % 6) as usize];
        let (x, a) = (rng.uniform_in(-1.0, 1.0), rng.uniform_in(-1.0, 1.0));
        let mut args = || vec![Arg::F64(x), Arg::F64(a), Arg::I64(n)];
        same_gradient_as(&m, "f", &["x", "a"], 2, &mut args, bits_up_to_zero_sign);
    }
}

/// `Checkpoint::Snapshots(k)` records at most `k` segment starts: on the pendulum the forward
/// run's tape holds exactly one record per segment plus what any run records once.
#[test]
fn a_snapshot_budget_bounds_the_segment_starts() {
    let m = parse_module(PENDULUM_IR).unwrap();
    let wrt = [true, true, true, true, false];
    let tape_after_forward = |k: u32, steps: i64| {
        let (d, _) =
            derive_reverse_checkpointed(&m, ENTRY, &wrt, &Default::default(), Checkpoint::Snapshots(k)).unwrap();
        let mut args = [
            ArgValue::Slice(PARAMS.to_vec()),
            ArgValue::F64(1.0),
            ArgValue::F64(0.0),
            ArgValue::F64(0.01),
            ArgValue::I64(steps),
        ];
        let mut tape = Tape::new();
        Interpreter::new(&d.module).call_with_tape(&d.forward, &mut args, &mut tape).unwrap();
        tape.len()
    };
    // One segment and two: what a segment records, and what is recorded once.
    let (one, two) = (tape_after_forward(1, 1000), tape_after_forward(2, 1000));
    let per_segment = two - one;
    let once = one - per_segment;
    assert!(per_segment > 0);
    // 1000 steps in at most k segments; fewer steps than snapshots: one segment per step.
    for (k, steps, segments) in [(10u32, 1000i64, 10usize), (7, 1000, 7), (3, 1000, 3), (7, 5, 5), (3, 1, 1), (4, 0, 0)]
    {
        assert_eq!(tape_after_forward(k, steps), once + segments * per_segment, "k = {k}, {steps} steps");
    }
}

/// `Checkpoint::Bytes(b)` keeps the whole tape of a million pendulum steps within `b`: with the
/// JIT's tape limit set to the budget the checkpointed gradient runs (bit-identical), while the
/// unbounded one stops with the tape allocation error. Binomial schedules too.
#[test]
fn a_byte_budget_bounds_the_whole_tape() {
    let m = parse_module(PENDULUM_IR).unwrap();
    let build = |checkpoint, limit| {
        GradientFn::builder(&m, ENTRY)
            .wrt(["params", "theta0", "omega0", "dt"])
            .gradient_mode(GradientMode::Reverse)
            .checkpoint(checkpoint)
            .options(&jitdiff::jit::JitOptions::new().tape_limit(limit))
            .build()
            .unwrap()
    };
    let run = |f: &GradientFn, steps: i64| {
        let mut grad = [0.0; 6];
        let mut args = [Arg::Slice(&PARAMS), Arg::F64(1.0), Arg::F64(0.0), Arg::F64(1e-5), Arg::I64(steps)];
        f.value_and_grad(&mut args, &mut grad).map(|v| (v.to_bits(), grad.map(f64::to_bits)))
    };
    let expected = run(&build(Checkpoint::Off, usize::MAX), 1_000_000).unwrap();
    let error = run(&build(Checkpoint::Off, 1 << 20), 1_000_000).unwrap_err();
    assert!(error.to_string().contains("tape"), "{error}");
    for budget in [16 << 10, 64 << 10, 1 << 20] {
        let f = build(Checkpoint::Bytes(budget as u64), budget);
        assert_eq!(run(&f, 1_000_000).unwrap(), expected, "budget {budget}");
    }
    // Binomial schedules over single steps, at 20,000 steps: a few KiB of tape.
    let expected = run(&build(Checkpoint::Off, usize::MAX), 20_000).unwrap();
    for snapshots in [4, 16, 64] {
        let f = build(Checkpoint::Binomial(snapshots), 16 << 10);
        assert_eq!(run(&f, 20_000).unwrap(), expected, "{snapshots} snapshots");
    }
}

/// A loop that reads a differentiated `slice` parameter and a data table by a computed index.
const READS_SLICES: &str = "const @c = [0.5, -0.25, 2.0]
func @f(x: f64, w: slice, n: i64) -> f64 {
entry:
    zero = iconst 0
    one = iconst 1
    three = iconst 3
    len = len w
    jump head(zero, x)
head(i: i64, y: f64):
    more = icmp lt i, n
    br more, body, done(y)
body:
    k = irem i, len
    wk = load w, k
    j = irem i, three
    t = table @c
    cj = load t, j
    s = sin y
    u = fmul s, wk
    v = fmul y, cj
    z = fadd u, v
    i2 = iadd i, one
    jump head(i2, z)
done(r: f64):
    ret r
}";

#[test]
fn loops_that_read_slices_are_checkpointed_bit_identically() {
    let m = parse_module(READS_SLICES).unwrap();
    static W: [f64; 4] = [0.9, 1.1, -0.7, 0.3];
    for n in [0i64, 1, 2, 5, 40, 333] {
        same_gradient(&m, "f", &["x", "w"], 5, &mut || vec![Arg::F64(0.4), Arg::Slice(&W), Arg::I64(n)]);
    }
}
