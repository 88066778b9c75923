//! Simple wall-clock timing (median of a few samples, or the best of rounds interleaved across
//! rows; each sample long enough to swamp `Instant`'s
//! resolution) and the machine line of reports. Criterion does the careful measurements in
//! `benches/`; these are for the command's quick tables, where ratios measured in one run matter.

use std::time::{Duration, Instant};

/// Seconds per call of `f`: the median of up to `samples` samples, each of enough calls to take
/// about `budget / samples`. A call longer than that is timed alone (fewer samples, at least
/// one after a warm-up call).
pub fn seconds_per_call<E>(budget: Duration, samples: usize, mut f: impl FnMut() -> Result<(), E>) -> Result<f64, E> {
    let start = Instant::now();
    f()?; // warm-up: first-call costs (buffers, caches) are not what is measured
    let first = start.elapsed().as_secs_f64().max(1e-9);
    let per_sample = budget.as_secs_f64() / samples as f64;
    let (samples, iterations) = if first >= per_sample {
        ((budget.as_secs_f64() / first).floor().clamp(1.0, samples as f64) as usize, 1)
    } else {
        (samples, (per_sample / first).ceil() as usize)
    };
    let mut times = Vec::with_capacity(samples);
    for _ in 0..samples {
        let start = Instant::now();
        for _ in 0..iterations {
            f()?;
        }
        times.push(start.elapsed().as_secs_f64() / iterations as f64);
    }
    times.sort_by(f64::total_cmp);
    Ok(times[times.len() / 2])
}

/// Seconds per call of each row: the best of `rounds` blocks of `calls` calls, the blocks of the
/// rows interleaved, so that load on a shared machine (which preempts long blocks) hits every
/// row alike and the best block of each shows what a call costs undisturbed.
pub fn best_interleaved(rounds: usize, calls: usize, rows: &mut [&mut dyn FnMut()]) -> Vec<f64> {
    let mut best = vec![f64::INFINITY; rows.len()];
    for _ in 0..rounds {
        for (row, b) in rows.iter_mut().zip(&mut best) {
            let start = Instant::now();
            for _ in 0..calls {
                row();
            }
            *b = b.min(start.elapsed().as_secs_f64() / calls as f64);
        }
    }
    best
}

/// A timed row of [`best_interleaved_calibrated`]: one call, which may fail.
pub type TimedRow<'a, E> = &'a mut dyn FnMut() -> Result<(), E>;

/// Seconds per call of each row, about `budget` of calls each: every row is called once (a
/// failure is returned; the time sizes its blocks), then the best of 5 to 10 rounds, each
/// round one block of every row in turn. Interleaving puts a shared machine's load on every
/// row alike, so the ratios of the rows stay true where medians taken one row after another
/// do not (on a host with steal time they differed by up to 2×).
pub fn best_interleaved_calibrated<E>(budget: Duration, rows: &mut [TimedRow<'_, E>]) -> Result<Vec<f64>, E> {
    let mut first = Vec::with_capacity(rows.len());
    for row in rows.iter_mut() {
        let start = Instant::now();
        row()?;
        first.push(start.elapsed().as_secs_f64().max(1e-9));
    }
    let slowest = first.iter().copied().fold(0.0, f64::max);
    let rounds = (budget.as_secs_f64() / slowest).floor().clamp(5.0, 10.0) as usize;
    let calls: Vec<usize> =
        first.iter().map(|&t| (budget.as_secs_f64() / rounds as f64 / t).floor().max(1.0) as usize).collect();
    let mut best = vec![f64::INFINITY; rows.len()];
    for _ in 0..rounds {
        for ((row, b), &n) in rows.iter_mut().zip(&mut best).zip(&calls) {
            let start = Instant::now();
            for _ in 0..n {
                row()?;
            }
            *b = b.min(start.elapsed().as_secs_f64() / n as f64);
        }
    }
    Ok(best)
}

/// `CPU model, N cores, rustc version, load average` of this machine.
pub fn machine_line() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|s| s.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let rustc = std::process::Command::new("rustc")
        .arg("--version")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "rustc version unknown".into());
    // The machine may be shared: the load when the measurement started says how much.
    let load = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(|s| format!(", load average {s} at the start")))
        .unwrap_or_default();
    format!("{cpu}, {cores} core(s) available, {rustc}{load}")
}

/// A duration in seconds as `12.3 us`.
pub fn human(seconds: f64) -> String {
    if !seconds.is_finite() {
        return "n/a".into();
    }
    let (value, unit) = match seconds {
        s if s < 1e-6 => (s * 1e9, "ns"),
        s if s < 1e-3 => (s * 1e6, "us"),
        s if s < 1.0 => (s * 1e3, "ms"),
        s => (s, "s"),
    };
    format!("{value:.3} {unit}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slow_call_is_timed_with_few_samples_and_a_fast_one_with_many_calls() {
        let mut calls = 0;
        let t = seconds_per_call::<()>(Duration::from_millis(20), 5, || {
            calls += 1;
            std::thread::sleep(Duration::from_millis(8));
            Ok(())
        })
        .unwrap();
        assert!(t >= 0.008 && calls <= 4, "{t} {calls}");
        let mut calls = 0u64;
        let t = seconds_per_call::<()>(Duration::from_millis(5), 5, || {
            calls += 1;
            std::hint::black_box(calls);
            Ok(())
        })
        .unwrap();
        assert!(t < 1e-5 && calls > 100, "{t} {calls}");
    }

    #[test]
    fn interleaved_rows_are_sized_by_their_first_call_and_fail_on_a_failing_call() {
        let (mut slow_calls, mut fast_calls) = (0, 0u64);
        let mut slow = || -> Result<(), ()> {
            slow_calls += 1;
            std::thread::sleep(Duration::from_millis(4));
            Ok(())
        };
        let mut fast = || -> Result<(), ()> {
            fast_calls += 1;
            std::hint::black_box(fast_calls);
            Ok(())
        };
        let times = best_interleaved_calibrated(Duration::from_millis(20), &mut [&mut slow, &mut fast]).unwrap();
        assert!(times[0] >= 0.004 && times[1] < 1e-4, "{times:?}");
        // The first call, then 5 rounds (the fewest) of one call each; many calls of the fast row.
        assert!(slow_calls == 6 && fast_calls > 100, "{slow_calls} {fast_calls}");
        let mut failing = || -> Result<(), &str> { Err("no") };
        assert_eq!(best_interleaved_calibrated(Duration::from_millis(5), &mut [&mut failing]), Err("no"));
    }

    #[test]
    fn human_units() {
        assert_eq!(human(2.5e-8), "25.000 ns");
        assert_eq!(human(0.0125), "12.500 ms");
        assert_eq!(human(f64::NAN), "n/a");
    }
}
