//! One compiled function called from several threads at once: every result is right, errors
//! report their own thread's details, and handles outlive the module handle they came from.

use jitdiff_ir::{ExternRegistry, RuntimeValue, parse_module};
use jitdiff_jit::{Arg, CallError, Fault, JitOptions, compile};

const MODULE: &str = "func @weighted(x: slice, w: f64) -> f64 {
entry:
    n = len x
    zero = iconst 0
    one = iconst 1
    acc0 = fconst 0.0
    jump head(zero, acc0)
head(i: i64, acc: f64):
    more = icmp lt i, n
    br more, body, exit(acc)
body:
    xi = load x, i
    t = fmul xi, w
    acc2 = fadd acc, t
    i2 = iadd i, one
    jump head(i2, acc2)
exit(r: f64):
    ret r
}

func @at(x: slice, k: i64) -> f64 {
entry:
    v = load x, k
    ret v
}
";

fn weighted(x: &[f64], w: f64) -> f64 {
    x.iter().fold(0.0, |acc, &xi| acc + xi * w)
}

#[test]
fn many_threads_call_one_handle_concurrently() {
    let module = compile(&parse_module(MODULE).unwrap(), &ExternRegistry::new(), &JitOptions::new()).unwrap();
    let f = module.function("weighted").unwrap();
    let at = module.function("at").unwrap();
    drop(module); // the function handles keep the code alive
    std::thread::scope(|scope| {
        for t in 0..4u32 {
            let (f, at) = (&f, at.clone());
            scope.spawn(move || {
                for call in 0..2_000u32 {
                    let n = ((t * 31 + call) % 97) as usize;
                    let x: Vec<f64> = (0..n).map(|j| (j as f64 + 0.5) * (t as f64 + 1.0)).collect();
                    let w = 0.25 + call as f64;
                    let got = f.call(&mut [Arg::Slice(&x), Arg::F64(w)]).unwrap();
                    assert_eq!(got, vec![RuntimeValue::F64(weighted(&x, w))], "thread {t}, call {call}");
                    // An out-of-bounds index particular to this thread and call: the details
                    // reported must be this call's, not another thread's.
                    let k = n as i64 + (t as i64) * 1000 + call as i64;
                    match at.call(&mut [Arg::Slice(&x), Arg::I64(k)]) {
                        Err(CallError::Runtime(Fault::OutOfBounds { index, len, .. })) => {
                            assert_eq!((index, len), (k, n), "thread {t}, call {call}")
                        }
                        other => panic!("thread {t}: expected OutOfBounds, got {other:?}"),
                    }
                }
            });
        }
    });
}

#[test]
fn handles_move_to_other_threads() {
    let module = compile(&parse_module(MODULE).unwrap(), &ExternRegistry::new(), &JitOptions::new()).unwrap();
    let handles: Vec<_> = (0..3)
        .map(|t| {
            let module = module.clone();
            std::thread::spawn(move || {
                let f = module.function("weighted").unwrap();
                let x = vec![t as f64; 10];
                f.call(&mut [Arg::Slice(&x), Arg::F64(2.0)]).unwrap()
            })
        })
        .collect();
    drop(module);
    for (t, h) in handles.into_iter().enumerate() {
        assert_eq!(h.join().unwrap(), vec![RuntimeValue::F64(20.0 * t as f64)]);
    }
}
