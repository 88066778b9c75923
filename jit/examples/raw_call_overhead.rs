//! Time 10 million calls of a 2-argument scalar function through each handle path:
//! `cargo run --release -p jitdiff-jit --example raw_call_overhead`.

use jitdiff_ir::{ExternRegistry, RuntimeValue, parse_module};
use jitdiff_jit::{Arg, JitOptions, compile};
use std::hint::black_box;
use std::time::Instant;

fn main() {
    let module =
        parse_module("func @f(a: f64, b: f64) -> f64 {\nentry:\n    s = fadd a, b\n    p = fmul s, a\n    ret p\n}\n")
            .expect("parses");
    let f = compile(&module, &ExternRegistry::new(), &JitOptions::new()).expect("compiles").function("f").expect("@f");
    let typed = f.typed::<(f64, f64), f64>().expect("typed");
    let mut out = [RuntimeValue::F64(0.0)];
    const N: u32 = 10_000_000;
    let which = std::env::args().nth(1).unwrap_or_default();
    let start = Instant::now();
    for k in 0..N {
        let a = black_box(k as f64);
        match which.as_str() {
            "typed" => {
                black_box(typed.call((a, 2.0)).ok());
            }
            "call" => {
                black_box(f.call(&mut [Arg::F64(a), Arg::F64(2.0)]).ok());
            }
            _ => {
                black_box(f.call_into(&mut [Arg::F64(a), Arg::F64(2.0)], &mut out).ok());
            }
        }
    }
    println!("{which}: {:.1} ns per call", start.elapsed().as_secs_f64() * 1e9 / N as f64);
}
