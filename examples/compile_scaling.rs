//! Compile time against program size, stage by stage (see `jitdiff_problems::scaling`).
use jitdiff::ad::{derive_forward, derive_reverse};
use jitdiff::ir::{ExternRegistry, parse_module, verify_module};
use jitdiff::jit::{JitOptions, compile};
use jitdiff::{GradientFn, HvpFn};
use jitdiff_problems::scaling;
use std::time::Instant;

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let family = args.get(1).map(String::as_str).unwrap_or("straight");
    let sizes: Vec<usize> =
        args.get(2).map(|s| s.split(',').map(|v| v.parse().unwrap()).collect()).unwrap_or(vec![1000, 5000]);
    let kinds = args.get(3).cloned().unwrap_or("primal,derive_rev,grad,jvp,hvp".into());
    for n in sizes {
        let text = match family {
            "straight" => scaling::straight_line(n, 1),
            "chain" => scaling::block_chain(n),
            "nested" => scaling::nested_loops(n),
            "wide" => scaling::wide_call(n),
            "loops" => scaling::loop_chain(n),
            _ => panic!("family"),
        };
        let t = Instant::now();
        let m = parse_module(&text).unwrap();
        verify_module(&m).unwrap();
        let insts: usize = m.functions.iter().flat_map(|f| &f.blocks).map(|b| b.insts.len() + 1).sum();
        let mut line = format!("{family} n={n} insts={insts} parse+verify={:.1}ms", ms(t));
        let wrt: Vec<bool> = m
            .func_by_name("f")
            .unwrap()
            .params
            .iter()
            .map(|&p| m.func_by_name("f").unwrap().ty(p).is_slice())
            .collect();
        for kind in kinds.split(',') {
            let t = Instant::now();
            match kind {
                "primal" => {
                    compile(&m, &ExternRegistry::new(), &JitOptions::new()).unwrap();
                }
                "derive_rev" => {
                    derive_reverse(&m, "f", &wrt).unwrap();
                }
                "derive_fwd" => {
                    derive_forward(&m, "f", &wrt, 1).unwrap();
                }
                "grad" => {
                    GradientFn::builder(&m, "f").wrt_mask(&wrt).build().unwrap().prepare().unwrap();
                }
                "jvp" => {
                    jitdiff::ForwardFn::builder(&m, "f").wrt_mask(&wrt).width(1).build().unwrap();
                }
                "jvp8" => {
                    jitdiff::ForwardFn::builder(&m, "f").wrt_mask(&wrt).width(8).build().unwrap();
                }
                "hvp" => {
                    HvpFn::builder(&m, "f").wrt_mask(&wrt).width(1).build().unwrap();
                }
                _ => panic!("kind"),
            }
            line += &format!(" {kind}={:.1}ms", ms(t));
        }
        println!("{line}");
    }
}
