use jitdiff_ir::{ExternRegistry, parse_module};
use jitdiff_jit::{JitOptions, compile};
fn main() {
    let file = std::env::args().nth(1).unwrap();
    let reps: usize = std::env::args().nth(2).map(|s| s.parse().unwrap()).unwrap_or(100);
    let m = parse_module(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let reg = ExternRegistry::new();
    let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    let opts = if std::env::var_os("NOCHECK").is_some() {
        unsafe { JitOptions::new().without_bounds_checks() }
    } else {
        JitOptions::new()
    };
    pool.install(|| {
        for _ in 0..5 {
            compile(&m, &reg, &opts).unwrap();
        }
        let _ = cranelift_codegen::timing::take_current();
        let mut ts = vec![];
        for _ in 0..reps {
            let t = std::time::Instant::now();
            compile(&m, &reg, &opts).unwrap();
            ts.push(t.elapsed().as_secs_f64() * 1e3);
        }
        ts.sort_by(f64::total_cmp);
        println!("min {:.3} ms median {:.3} ms", ts[0], ts[ts.len() / 2]);
        let s = cranelift_codegen::timing::take_current().to_string();
        for l in s.lines() {
            if l.contains("Register") || l.contains("Egraph") || l.contains("Compilation") || l.contains("lowering") {
                println!("{l}");
            }
        }
    });
}
