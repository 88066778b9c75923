//! Functions written once in Rust: the benchmark programs of `problems/rust/` with
//! `#[jitdiff::function]` / `#[jitdiff::module]` (`rust_functions/programs.rs`), their JIT
//! primals against the rustc-compiled functions, their derivatives against the hand-written IR
//! of `jitdiff_problems` (or against analytic derivatives and the other mode where there is no
//! hand-written IR), and the typed handles with the rest of the library.

mod derivatives;
mod handles;
mod primal;
mod programs;
mod structs;
mod vectors;

/// Units in the last place between two finite floats.
fn ulps(a: f64, b: f64) -> u64 {
    let key = |x: f64| {
        let bits = x.to_bits() as i64;
        if bits < 0 { i64::MIN - bits } else { bits }
    };
    key(a).abs_diff(key(b))
}

/// Entry by entry within `tol` relative to the larger magnitude of the pair.
#[track_caller]
fn assert_close(got: &[f64], want: &[f64], tol: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    for (k, (&g, &w)) in got.iter().zip(want).enumerate() {
        let scale = g.abs().max(w.abs());
        assert!(
            (g - w).abs() <= tol * scale,
            "{what}[{k}]: got {g:e}, want {w:e} (relative error {:e})",
            (g - w).abs() / scale
        );
    }
}
