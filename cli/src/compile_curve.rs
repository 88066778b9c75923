//! The compile-time section of `jitdiff report`: derive + compile time of every derivative kind
//! against program size, for the program families of `jitdiff_problems::scaling` (long
//! straight-line code, chains of blocks, a call with many arguments, deep loop nests).

use super::error::CliError;
use jitdiff::ir::{ExternRegistry, Module, parse_module};
use jitdiff::jit::{JitOptions, compile};
use jitdiff::{ForwardFn, GradientFn, GradientMode, HvpFn};
use jitdiff_problems::scaling;
use std::fmt::Write;
use std::time::Instant;

/// One program: its family, size, instruction count and the milliseconds of each kind.
struct Point {
    family: &'static str,
    size: usize,
    insts: usize,
    ms: [f64; 5],
}

const KINDS: [&str; 5] = ["primal", "value_and_grad", "JVP", "JVP×8", "HVP"];

fn time_kinds(module: &Module, wrt: &[bool]) -> Result<[f64; 5], CliError> {
    let (externs, options) = (ExternRegistry::new(), JitOptions::new());
    let ms = |start: Instant| start.elapsed().as_secs_f64() * 1e3;
    let t = Instant::now();
    compile(module, &externs, &options)?;
    let primal = ms(t);
    let t = Instant::now();
    // Reverse mode: `build()` compiles it (Auto mode may compile at the first call).
    GradientFn::builder(module, "f")
        .wrt_mask(wrt)
        .externs(&externs)
        .options(&options)
        .gradient_mode(GradientMode::Reverse)
        .build()?;
    let grad = ms(t);
    let t = Instant::now();
    ForwardFn::builder(module, "f").wrt_mask(wrt).width(1).externs(&externs).options(&options).build()?;
    let jvp = ms(t);
    let t = Instant::now();
    ForwardFn::builder(module, "f").wrt_mask(wrt).width(8).externs(&externs).options(&options).build()?;
    let jvp8 = ms(t);
    let t = Instant::now();
    HvpFn::builder(module, "f").wrt_mask(wrt).width(1).externs(&externs).options(&options).build()?;
    Ok([primal, grad, jvp, jvp8, ms(t)])
}

/// Measure every family at its sizes (smaller ones with `quick`) and render the section.
pub fn compile_curve(quick: bool) -> Result<String, CliError> {
    let scale = |sizes: [usize; 3]| if quick { sizes[..2].to_vec() } else { sizes.to_vec() };
    type Family = (&'static str, Vec<usize>, fn(usize) -> String, Vec<bool>);
    let families: [Family; 5] = [
        ("straight-line", scale([1_000, 10_000, 100_000]), |n| scaling::straight_line(n, 7), vec![true]),
        ("block chain", scale([250, 2_500, 25_000]), scaling::block_chain, vec![true]),
        ("wide call", scale([300, 3_000, 30_000]), scaling::wide_call, vec![true]),
        ("nested loops", scale([10, 50, 200]), scaling::nested_loops, vec![true, false]),
        ("loops in a row", scale([25, 250, 2_500]), scaling::loop_chain, vec![true, false]),
    ];
    let mut points = vec![];
    for (family, sizes, text, wrt) in families {
        for size in sizes {
            let module = parse_module(&text(size)).map_err(|error| CliError::Parse { path: family.into(), error })?;
            let insts = module.functions.iter().flat_map(|f| &f.blocks).map(|b| b.insts.len() + 1).sum();
            points.push(Point { family, size, insts, ms: time_kinds(&module, &wrt)? });
        }
    }
    let mut s = String::new();
    let _ = writeln!(s, "\n## Compile time against program size\n");
    let _ = writeln!(
        s,
        "Derive + compile time (ms; the primal: compile only) of each kind for programs of \
         `jitdiff_problems::scaling`, and the same per 1,000 instructions of the program \
         (instructions and terminators). Linear cost shows as a flat per-1,000 figure down a \
         family. Functions larger than 1,000 (instructions and terminators, twice the values \
         crossing calls and the function's boundary, and a sixteenth of each block's loop depth \
         squared) compile with Cranelift's single-pass \
         register allocator and no mid-end (`RegAlloc::Auto`, `OptLevel::Auto`). The target is ≤ 5 ms per \
         1,000 primal instructions for every kind.\n"
    );
    let header: Vec<String> = KINDS.iter().map(|k| format!("{k} ms (per 1,000)")).collect();
    let _ = writeln!(s, "| family | size | instructions | {} |", header.join(" | "));
    let _ = writeln!(s, "|---|---:|---:|{}", "---:|".repeat(KINDS.len()));
    for p in &points {
        let cells: Vec<String> =
            p.ms.iter().map(|ms| format!("{ms:.1} ({:.1})", ms * 1000.0 / p.insts as f64)).collect();
        let _ = writeln!(s, "| {} | {} | {} | {} |", p.family, p.size, p.insts, cells.join(" | "));
    }
    Ok(s)
}
