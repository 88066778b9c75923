//! Compile-time budgets: long programs (`jitdiff_problems::scaling` — straight-line code,
//! chains of blocks, a call with very many arguments, deep loop nests, many loops in a row)
//! through every derivative kind, each within a time budget proportional to its size. A
//! derivation or compilation that turned quadratic again (naming values, dominance walks, one
//! Cranelift block per tape entry, the register allocator on long straight-line code, a pass
//! redoing its analysis per loop) blows the budget long before the machine would notice
//! otherwise; the budgets are loose enough for a slow, loaded machine.

use super::checks::{Check, Failure};
use jitdiff::ir::{ExternRegistry, parse_module};
use jitdiff::jit::JitOptions;
use jitdiff::{ForwardFn, GradientFn, HvpFn};
use jitdiff_problems::scaling;
use std::time::Instant;

/// Milliseconds allowed per 1,000 instructions of the program, per derivative kind. Measured
/// in `cargo test` (jitdiff at opt-level 1, optimised dependencies): 6-31 ms per 1,000 (release
/// builds: 2-15); the budget leaves a factor of 8 for a slow, loaded machine, and a quadratic
/// cost at these sizes exceeds it.
const BUDGET_MS_PER_1000: f64 = 250.0;

/// The programs at `scale` (1 in `cargo test`; the long command's `--scaling K` multiplies).
fn programs(scale: usize) -> Vec<(String, String, Vec<bool>)> {
    vec![
        (
            format!("straight-line, {} instructions", 10_000 * scale),
            scaling::straight_line(10_000 * scale, 7),
            vec![true],
        ),
        (format!("block chain, {} blocks", 2_500 * scale), scaling::block_chain(2_500 * scale), vec![true]),
        (format!("call with {} arguments", 5_000 * scale), scaling::wide_call(5_000 * scale), vec![true]),
        (format!("{} nested loops", 40 * scale), scaling::nested_loops(40 * scale), vec![true, false]),
        (format!("{} loops in a row", 400 * scale), scaling::loop_chain(400 * scale), vec![true, false]),
    ]
}

/// Run every program through reverse, forward (W = 1 and 8) and second-order compilation.
/// Returns how many were timed.
pub fn compile_budgets(scale: usize) -> Check<u64> {
    let externs = ExternRegistry::new();
    let options = JitOptions::new();
    let mut timed = 0;
    for (label, text, wrt) in programs(scale) {
        let module = parse_module(&text).map_err(|e| Failure { check: "compile budget", message: e.to_string() })?;
        let insts: usize = module.functions.iter().flat_map(|f| &f.blocks).map(|b| b.insts.len() + 1).sum();
        let budget_ms = BUDGET_MS_PER_1000 * insts as f64 / 1000.0;
        type Build<'a> = &'a dyn Fn() -> Result<(), String>;
        let kinds: [(&str, Build<'_>); 4] = [
            ("value_and_grad", &|| {
                GradientFn::builder(&module, "f")
                    .wrt_mask(&wrt)
                    .externs(&externs)
                    .options(&options)
                    .build()
                    .map(drop)
                    .map_err(|e| e.to_string())
            }),
            ("jvp", &|| {
                ForwardFn::builder(&module, "f")
                    .wrt_mask(&wrt)
                    .width(1)
                    .externs(&externs)
                    .options(&options)
                    .build()
                    .map(drop)
                    .map_err(|e| e.to_string())
            }),
            ("jvp W = 8", &|| {
                ForwardFn::builder(&module, "f")
                    .wrt_mask(&wrt)
                    .width(8)
                    .externs(&externs)
                    .options(&options)
                    .build()
                    .map(drop)
                    .map_err(|e| e.to_string())
            }),
            ("hvp", &|| {
                HvpFn::builder(&module, "f")
                    .wrt_mask(&wrt)
                    .width(1)
                    .externs(&externs)
                    .options(&options)
                    .build()
                    .map(drop)
                    .map_err(|e| e.to_string())
            }),
        ];
        for (kind, build) in kinds {
            let start = Instant::now();
            build().map_err(|e| Failure { check: "compile budget", message: format!("{label}: {kind}: {e}") })?;
            let ms = start.elapsed().as_secs_f64() * 1e3;
            if std::env::var_os("JITDIFF_BUDGETS").is_some() {
                println!("{label}: {kind}: {ms:.0} ms (budget {budget_ms:.0} ms)");
            }
            if ms > budget_ms {
                return Err(Failure {
                    check: "compile budget",
                    message: format!(
                        "{label} ({insts} instructions): {kind} took {ms:.0} ms, over the budget of {budget_ms:.0} ms"
                    ),
                });
            }
            timed += 1;
        }
    }
    Ok(timed)
}
