use jitdiff::ir::{ExternRegistry, parse_module};
use jitdiff::jit::{JitOptions, compile};
use std::time::Instant;
fn main() {
    let file = std::env::args().nth(1).unwrap_or("examples/ir/pendulum.ir".into());
    let width: u8 = std::env::args().nth(2).map(|s| s.parse().unwrap()).unwrap_or(4);
    let text = std::fs::read_to_string(&file).unwrap();
    let m = parse_module(&text).unwrap();
    let f = &m.functions[0];
    let name = f.name.clone();
    let wrt: Vec<bool> = f.params.iter().map(|&p| f.ty(p).is_slice()).collect();
    let mut best = [f64::INFINITY; 3];
    let mut last = None;
    for _ in 0..30 {
        let t = Instant::now();
        let d = jitdiff::ad::derive_forward(&m, &name, &wrt, width).unwrap();
        best[0] = best[0].min(t.elapsed().as_secs_f64());
        let t = Instant::now();
        compile(&d.module, &ExternRegistry::new(), &JitOptions::new()).unwrap();
        best[1] = best[1].min(t.elapsed().as_secs_f64());
        let t = Instant::now();
        compile(&m, &ExternRegistry::new(), &JitOptions::new()).unwrap();
        best[2] = best[2].min(t.elapsed().as_secs_f64());
        last = Some(d);
    }
    let d = last.unwrap();
    let insts = |m: &jitdiff::ir::Module| -> Vec<(String, usize)> {
        m.functions.iter().map(|f| (f.name.clone(), f.blocks.iter().map(|b| b.insts.len() + 1).sum())).collect()
    };
    println!("primal {:?}\nderived {:?}", insts(&m), insts(&d.module));
    std::fs::write("/tmp/zz/pend_fwd.ir", d.module.to_string()).unwrap();
    println!(
        "derive {:.2} ms, compile derived {:.2} ms, compile primal {:.2} ms",
        best[0] * 1e3,
        best[1] * 1e3,
        best[2] * 1e3
    );
}
