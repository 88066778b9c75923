//! Resources under load, with figures printed (`cargo test --test resources -- --nocapture`):
//! long reverse-mode loops keep resident memory flat across runs and give the tape back when the
//! handle drops; creating and dropping many derivative handles leaks nothing; one handle serves
//! many threads. (Plain compile/drop of 10,000 functions: jit/tests/memory.rs.) Memory figures
//! come from /proc/self/status; a lock keeps the tests of this binary from overlapping, so each
//! sees only its own allocations.

use jitdiff::ir::{Module, RuntimeValue, parse_module};
use jitdiff::jit::Arg;
use jitdiff::{ForwardFn, GradientFn, GradientMode};
use std::sync::Mutex;

static SERIAL: Mutex<()> = Mutex::new(());

#[path = "api/fixtures.rs"]
mod fixtures;
use fixtures::LONG_LOOP;

/// A `/proc/self/status` figure in KiB (`VmRSS`: resident now; `VmHWM`: peak resident).
fn status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let line = status.lines().find(|l| l.starts_with(field)).unwrap_or_else(|| panic!("no {field} line"));
    line.split_whitespace().nth(1).and_then(|v| v.parse().ok()).expect("a number of KiB")
}

/// Restart the peak (`VmHWM`) at the current resident size, so a later peak is this phase's.
fn reset_peak() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

fn long_loop() -> Module {
    parse_module(LONG_LOOP).unwrap()
}

#[test]
fn a_hundred_reverse_runs_of_a_million_iterations_keep_memory_flat_and_free_the_tape_on_release() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    const N: i64 = 1_000_000;
    let x = 0.3;
    // The gradient in plain Rust, same summation order.
    let (want_value, want_grad, magnitude) = (0..N).fold((0.0, 0.0, 0.0), |(v, g, m), i| {
        let fi = i as f64;
        let term = fi * (x * fi).cos();
        (v + (x * fi).sin(), g + term, m + term.abs())
    });
    let f = GradientFn::builder(&long_loop(), "long")
        .wrt_mask(&[true, false])
        .gradient_mode(GradientMode::Reverse)
        .build()
        .unwrap();
    let mut grad = [0.0];
    // `vjp` records the pullback state on the tape (`value_and_grad` of this loop needs none:
    // its reversed loop runs fused with the forward one, checked at the end).
    let value_and_grad = |n: i64, grad: &mut [f64]| {
        let results = f.vjp(&mut [Arg::F64(x), Arg::I64(n)], &[1.0], grad)?;
        Ok::<f64, jitdiff::Error>(results[0].as_f64().expect("an f64 result"))
    };
    // The baseline: the handle compiled and warmed up on a short loop (a tiny tape).
    value_and_grad(10, &mut grad).unwrap();
    let before = status_kib("VmRSS:");
    let value = value_and_grad(N, &mut grad).unwrap();
    assert!((value - want_value).abs() <= 1e-9 * N as f64, "value {value} vs {want_value}");
    // The pullback sums in reverse order: rounding differs by far less than 1e-9 of the terms.
    assert!((grad[0] - want_grad).abs() <= 1e-9 * magnitude, "gradient {} vs {want_grad}", grad[0]);
    let tape_bytes = f.tape_bytes();
    let tape_kib = (tape_bytes / 1024) as u64;
    let after_first = status_kib("VmRSS:");
    let peak_known = reset_peak();
    for _ in 1..100 {
        let v = value_and_grad(N, &mut grad).unwrap();
        assert_eq!(v.to_bits(), value.to_bits());
    }
    let after_runs = status_kib("VmRSS:");
    let peak = if peak_known { status_kib("VmHWM:") } else { after_runs };
    // The tape belongs to this thread's scratch memory (handles evaluate through `&self`).
    jitdiff::release_scratch();
    let after_drop = status_kib("VmRSS:");
    println!(
        "reverse mode, 1,000,000 iterations: tape {tape_kib} KiB; RSS {before} KiB warmed up, {after_first} after the \
         first run, {after_runs} after 100 runs (peak over runs 2-100: {peak}), {after_drop} after releasing the scratch memory"
    );
    // One f64 per iteration at least (the partial cos(x i)); the loop index is recomputed.
    assert!(tape_bytes >= 8 * N as usize, "a 1,000,000-iteration loop recorded only {tape_kib} KiB");
    // Runs 2-100 reuse the first run's tape: the peak stays within 4 MiB of it.
    assert!(peak <= after_first + 4 * 1024, "peak {peak} KiB over runs 2-100 vs {after_first} KiB after run 1");
    // Releasing the scratch memory returns (nearly all of) the tape.
    assert!(
        after_drop + tape_kib * 3 / 4 <= after_runs,
        "RSS {after_runs} -> {after_drop} KiB on release, tape {tape_kib} KiB"
    );
    assert!(after_drop <= before + 2 * 1024, "RSS {before} KiB before, {after_drop} KiB after releasing");
    // The fused `value_and_grad`: the same gradient to rounding, with no tape at all.
    let mut fused = [0.0];
    let fused_value = f.value_and_grad(&mut [Arg::F64(x), Arg::I64(N)], &mut fused).unwrap();
    assert_eq!(fused_value.to_bits(), value.to_bits());
    assert!((fused[0] - want_grad).abs() <= 1e-9 * magnitude, "gradient {} vs {want_grad}", fused[0]);
    assert_eq!(f.tape_bytes(), 0, "the fused gradient recorded a tape");
}

#[test]
fn creating_and_dropping_derivative_handles_keeps_memory_flat() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let m = long_loop();
    let cycle = |k: i64| {
        let g = GradientFn::builder(&m, "long").wrt_mask(&[true, false]).build().unwrap();
        let mut grad = [0.0];
        g.value_and_grad(&mut [Arg::F64(0.5), Arg::I64(k % 7)], &mut grad).unwrap();
        let f = ForwardFn::builder(&m, "long").wrt_mask(&[true, false]).width(4).build().unwrap();
        let (_, t) = f.jvp(&mut [Arg::F64(0.5), Arg::I64(k % 7)], &[&[1.0, 0.0, 0.0, 0.0]]).unwrap();
        assert!((t[0] - grad[0]).abs() <= 1e-12 * (1.0 + grad[0].abs()), "forward {} vs reverse {}", t[0], grad[0]);
    };
    for k in 0..100 {
        cycle(k);
    }
    const CYCLES: i64 = 500;
    let before = status_kib("VmRSS:");
    let peak_known = reset_peak();
    let start = std::time::Instant::now();
    for k in 0..CYCLES {
        cycle(k);
    }
    let after = status_kib("VmRSS:");
    let peak = if peak_known { status_kib("VmHWM:") } else { after };
    println!(
        "{CYCLES} GradientFn + ForwardFn (width 4) created, called and dropped in {:.1} s: RSS {before} -> {after} KiB, \
         peak {peak} KiB",
        start.elapsed().as_secs_f64()
    );
    // Each leaked pair would hold at least two 4 KiB code pages: 500 leaks would be 4 MiB.
    assert!(peak <= before + 2 * 1024, "peak {peak} KiB vs {before} KiB over {CYCLES} cycles");
}

#[test]
fn many_threads_share_derivative_handles() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let m = long_loop();
    let g = GradientFn::builder(&m, "long").wrt_mask(&[true, false]).build().unwrap();
    let f = ForwardFn::builder(&m, "long").wrt_mask(&[true, false]).width(2).build().unwrap();
    // Single-threaded answers first, from a handle of their own: `g` compiles its forward lanes
    // (value_and_grad's choice for one input) at the first call, here in eight threads at once.
    let reference = GradientFn::builder(&m, "long").wrt_mask(&[true, false]).build().unwrap();
    let expected: Vec<(f64, f64, f64, f64)> = (0..64)
        .map(|k| {
            let (x, n) = (0.01 * k as f64, 100 + k);
            let g = reference.clone();
            let mut grad = [0.0];
            let v = g.value_and_grad(&mut [Arg::F64(x), Arg::I64(n)], &mut grad).unwrap();
            let (_, t) = f.jvp(&mut [Arg::F64(x), Arg::I64(n)], &[&[1.0, -2.0]]).unwrap();
            let (_, mut pullback) = g.pullback(&mut [Arg::F64(x), Arg::I64(n)]).unwrap();
            (v, grad[0], t[1], pullback.apply(&[1.0]).unwrap()[0])
        })
        .collect();
    std::thread::scope(|scope| {
        for thread in 0..8 {
            // A GradientFn per thread (it owns a tape); the ForwardFn shared by reference.
            let (g, f, expected) = (g.clone(), &f, &expected);
            scope.spawn(move || {
                for round in 0..100 {
                    let k = (thread * 7 + round) % 64;
                    let (x, n) = (0.01 * k as f64, 100 + k as i64);
                    let mut grad = [0.0];
                    let v = g.value_and_grad(&mut [Arg::F64(x), Arg::I64(n)], &mut grad).unwrap();
                    let (values, t) = f.jvp(&mut [Arg::F64(x), Arg::I64(n)], &[&[1.0, -2.0]]).unwrap();
                    let (ev, eg, et, ep) = expected[k];
                    assert_eq!((v.to_bits(), grad[0].to_bits()), (ev.to_bits(), eg.to_bits()), "thread {thread}");
                    assert_eq!(values, vec![RuntimeValue::F64(ev)], "thread {thread}");
                    assert_eq!(t[1].to_bits(), et.to_bits(), "thread {thread}, lane 1");
                    // A Pullback moves across threads with its state.
                    let (_, mut pullback) = g.pullback(&mut [Arg::F64(x), Arg::I64(n)]).unwrap();
                    let handle = std::thread::spawn(move || pullback.apply(&[1.0]).unwrap());
                    // (Reverse mode's: equal to the forward lanes' gradient to rounding.)
                    assert_eq!(handle.join().unwrap()[0].to_bits(), ep.to_bits(), "thread {thread}, vjp");
                    assert!((ep - eg).abs() <= 1e-13 * eg.abs(), "thread {thread}: vjp {ep} vs gradient {eg}");
                }
            });
        }
    });
}

/// Peak resident growth (KiB) over one gradient of the pendulum at `steps` steps, with the
/// thread's scratch memory released first (so the tape starts empty).
fn pendulum_peak_kib(f: &GradientFn, steps: i64, grad: &mut [f64]) -> Option<(u64, f64)> {
    static PARAMS: [f64; 3] = [9.81, 0.25, 0.5];
    jitdiff::release_scratch();
    let before = status_kib("VmRSS:");
    if !reset_peak() {
        return None;
    }
    let args = &mut [Arg::Slice(&PARAMS), Arg::F64(1.0), Arg::F64(0.0), Arg::F64(1e-5), Arg::I64(steps)];
    let value = f.value_and_grad(args, grad).unwrap();
    let peak = status_kib("VmHWM:");
    jitdiff::release_scratch();
    Some((peak.saturating_sub(before), value))
}

#[test]
fn a_checkpointed_pendulum_of_a_million_steps_keeps_its_tape_under_a_megabyte() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    use jitdiff::ad::Checkpoint;
    use jitdiff_problems::pendulum::{ENTRY, PENDULUM_IR};
    const N: i64 = 1_000_000;
    let m = parse_module(PENDULUM_IR).unwrap();
    let build = |checkpoint| {
        GradientFn::builder(&m, ENTRY)
            .wrt(["params", "theta0", "omega0", "dt"])
            .gradient_mode(GradientMode::Reverse)
            .checkpoint(checkpoint)
            .build()
            .unwrap()
    };
    let plain = build(Checkpoint::Off);
    let bounded = [build(Checkpoint::Segments), build(Checkpoint::Bytes(1 << 20))];
    let mut g_plain = [0.0; 6];
    let mut g_bounded = [[0.0; 6]; 2];
    // Warm up all (compiled code, result buffers) on a short run.
    let short = || [Arg::Slice(&[1.0, 0.0, 0.0]), Arg::F64(1.0), Arg::F64(0.0), Arg::F64(0.1), Arg::I64(3)];
    plain.value_and_grad(&mut short(), &mut g_plain).unwrap();
    for (f, g) in bounded.iter().zip(&mut g_bounded) {
        f.value_and_grad(&mut short(), g).unwrap();
    }
    let mut peaks = vec![];
    for (f, g) in bounded.iter().zip(&mut g_bounded) {
        let Some(peak) = pendulum_peak_kib(f, N, g) else {
            println!("no /proc/self/clear_refs: peak not measurable here");
            return;
        };
        peaks.push(peak);
    }
    let (plain_kib, v_plain) = pendulum_peak_kib(&plain, N, &mut g_plain).unwrap();
    println!(
        "pendulum, 1,000,000 steps: peak RSS growth {plain_kib} KiB unbounded (tape {} KiB), {} KiB with \
         segments, {} KiB with a 1 MiB budget",
        plain.tape_bytes() / 1024,
        peaks[0].0,
        peaks[1].0
    );
    for ((kib, value), g) in peaks.iter().zip(&g_bounded) {
        assert_eq!(v_plain.to_bits(), value.to_bits());
        assert_eq!(g_plain.map(f64::to_bits), g.map(f64::to_bits));
        assert!(*kib <= 1024, "checkpointed peak {kib} KiB");
    }
    assert!(plain_kib >= 10 * 1024, "unbounded peak only {plain_kib} KiB");
}
