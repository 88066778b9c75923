use jitdiff::GradientFn;
use jitdiff::ir::{ExternRegistry, RuntimeValue, parse_module};
use jitdiff::jit::{Arg, JitOptions, compile};
use jitdiff::problems::{Gmm, Problem, gmm};
use std::time::Instant;

fn best<F: FnMut()>(mut f: F) -> f64 {
    let mut b = f64::MAX;
    for _ in 0..7 {
        let t = Instant::now();
        for _ in 0..20 {
            f();
        }
        b = b.min(t.elapsed().as_secs_f64() / 20.0);
    }
    b * 1e3
}
fn main() {
    let p = Gmm::generate(10, 25, 1000, gmm::DEFAULT_SEED);
    let text = std::fs::read_to_string(std::env::args().nth(1).unwrap()).unwrap();
    let module = parse_module(&text).unwrap();
    let (d, k) = (p.d, p.k);
    let wrt = [true, true, true, false, false, true, true, true];
    let t = Instant::now();
    let opts = JitOptions::new();
    let mut f = GradientFn::with_externs(&module, "gmm", &wrt, &ExternRegistry::new(), &opts).unwrap();
    let compile_ms = t.elapsed().as_secs_f64() * 1e3;
    let size = k + k * d + p.icf.len() + k * d + d + d;
    let mut grad = vec![0.0; size];
    let mut hg = vec![0.0; k + k * d + p.icf.len()];
    let compiled = compile(&module, &ExternRegistry::new(), &opts).unwrap();
    let primal = compiled.function("gmm").unwrap();
    let mut out = [RuntimeValue::F64(0.0)];
    let (mut qd, mut xc, mut y) = (vec![0.0; k * d], vec![0.0; d], vec![0.0; d]);
    macro_rules! args {
        () => {
            [
                Arg::Slice(&p.alphas),
                Arg::Slice(&p.means),
                Arg::Slice(&p.icf),
                Arg::Slice(&p.x),
                Arg::I64(d as i64),
                Arg::SliceMut(&mut qd),
                Arg::SliceMut(&mut xc),
                Arg::SliceMut(&mut y),
            ]
        };
    }
    let v = f.value_and_grad(&mut args!(), &mut grad).unwrap();
    println!("value {v} tape {} compile {compile_ms:.1} ms", f.tape_bytes());
    let tp = best(|| {
        primal.call_into(&mut args!(), &mut out).unwrap();
    });
    let tv = best(|| {
        f.value_and_grad(&mut args!(), &mut grad).unwrap();
    });
    let th = best(|| {
        p.hand_value_and_grad(&mut hg);
    });
    let hp = best(|| {
        std::hint::black_box(p.objective());
    });
    println!(
        "primal {tp:.3} ms  vg {tv:.3} ms  hand {th:.3} ms hand-primal {hp:.3}  vg/p {:.2} vg/hand {:.2}",
        tv / tp,
        tv / th
    );
}
