//! Simple wall-clock timing (median of a few samples, each long enough to swamp `Instant`'s
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
    fn human_units() {
        assert_eq!(human(2.5e-8), "25.000 ns");
        assert_eq!(human(0.0125), "12.500 ms");
        assert_eq!(human(f64::NAN), "n/a");
    }
}
