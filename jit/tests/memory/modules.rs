//! Compiling and dropping many modules does not leak their code memory: every `JITModule` is
//! freed when its last handle drops.

use super::{SERIAL, rss_kib, status_kib};
use jitdiff_ir::{ExternRegistry, RuntimeValue, parse_module};
use jitdiff_jit::{Arg, JitOptions, compile};

fn compile_call_drop(k: u32) {
    let text = format!(
        "func @f(x: f64, y: f64) -> f64 {{\nentry:\n    k = fconst {k}.0\n    a = fmul x, y\n    b = fadd a, k\n    c = fmul b, x\n    d = fsub c, y\n    ret d\n}}\n"
    );
    let module = parse_module(&text).unwrap();
    let compiled = compile(&module, &ExternRegistry::new(), &JitOptions::new()).unwrap();
    let f = compiled.function("f").unwrap();
    let (x, y) = (1.5, -2.0);
    let want = ((x * y + k as f64) * x) - y;
    assert_eq!(f.call(&mut [Arg::F64(x), Arg::F64(y)]).unwrap(), vec![RuntimeValue::F64(want)]);
}

#[test]
fn compiling_and_dropping_ten_thousand_functions_keeps_memory_flat() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    for k in 0..500 {
        compile_call_drop(k);
    }
    let before = rss_kib();
    // Writing 5 to clear_refs restarts the peak (VmHWM) at the current RSS.
    let peak_known = std::fs::write("/proc/self/clear_refs", "5").is_ok();
    let start = std::time::Instant::now();
    for k in 0..10_000 {
        compile_call_drop(k);
    }
    let after = rss_kib();
    let peak = if peak_known { status_kib("VmHWM:") } else { after };
    println!(
        "10,000 compile/call/drop cycles in {:.1} s: RSS {before} -> {after} KiB, peak {peak} KiB",
        start.elapsed().as_secs_f64()
    );
    let grown = after.saturating_sub(before);
    // A leaked module costs at least a 4 KiB code page: 10,000 leaks would be 40 MiB.
    assert!(grown <= 8 * 1024, "RSS grew by {grown} KiB ({before} -> {after} KiB) over 10,000 compile/drop cycles");
    assert!(peak <= before + 8 * 1024, "peak RSS {peak} KiB vs {before} KiB before 10,000 compile/drop cycles");
}
