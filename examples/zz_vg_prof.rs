use jitdiff::ir::parse_module;
use std::time::Instant;
fn main() {
    let which = std::env::args().nth(1).unwrap_or("gmm".into());
    let (text, entry, wrt): (&str, &str, Vec<bool>) = match which.as_str() {
        "gmm" => (jitdiff_problems::gmm::GMM_IR, "gmm", vec![]),
        _ => (jitdiff_problems::pendulum::PENDULUM_IR, jitdiff_problems::pendulum::ENTRY, vec![]),
    };
    let m = parse_module(text).unwrap();
    let f = m.func_by_name(entry).unwrap();
    let wrt: Vec<bool> = if wrt.is_empty() {
        f.params.iter().map(|&p| matches!(f.ty(p), jitdiff::ir::Type::F64 | jitdiff::ir::Type::Slice)).collect()
    } else {
        wrt
    };
    for _ in 0..3 {
        let t = Instant::now();
        let r = jitdiff::ad::derive_reverse(&m, entry, &wrt).unwrap();
        let t_d = t.elapsed();
        let insts: usize =
            r.module.functions.iter().map(|f| f.blocks.iter().map(|b| b.insts.len()).sum::<usize>()).sum();
        let t = Instant::now();
        let c = jitdiff::jit::compile(&r.module, &Default::default(), &jitdiff::jit::JitOptions::new()).unwrap();
        println!("derive {t_d:?} compile {:?} ({} functions, {insts} insts)", t.elapsed(), r.module.functions.len());
        drop(c);
    }
}
