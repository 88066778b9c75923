//! The fused `value_and_grad` is compiled with its forward function and pullback inlined and
//! the once-per-call tape entries between them passed on directly (`src/fused.rs`): its
//! gradient must be the one `vjp` (forward function, then pullback) gives, bit for bit, on
//! every kind of program — the inlined and forwarded ones, and those it leaves as they were.

use jitdiff::ir::parse_module;
use jitdiff::jit::Arg;
use jitdiff::{GradientFn, GradientMode};
use jitdiff_problems::rosenbrock::{ROSENBROCK_IR, rosenbrock_gradient, standard_start};

/// `(value_and_grad's gradient, its tape bytes, vjp's gradient, vjp's tape bytes)` of the
/// reverse-mode gradient of `@f` of one slice.
fn fused_and_pair(src: &str, name: &str, x: &[f64]) -> (Vec<f64>, usize, Vec<f64>, usize) {
    let module = parse_module(src).unwrap_or_else(|e| panic!("{e}\n{src}"));
    let f = GradientFn::builder(&module, name).wrt_mask(&[true]).gradient_mode(GradientMode::Reverse).build().unwrap();
    let mut fused = vec![0.0; x.len()];
    f.value_and_grad(&mut [Arg::Slice(x)], &mut fused).unwrap();
    let fused_tape = f.tape_bytes();
    let mut pair = vec![0.0; x.len()];
    f.vjp(&mut [Arg::Slice(x)], &[1.0], &mut pair).unwrap();
    (fused, fused_tape, pair, f.tape_bytes())
}

fn bits(g: &[f64]) -> Vec<u64> {
    g.iter().map(|v| v.to_bits()).collect()
}

#[test]
fn rosenbrock_passes_its_trip_count_without_the_tape() {
    for n in [2, 10, 1000] {
        let x = standard_start(n);
        let (fused, fused_tape, pair, pair_tape) = fused_and_pair(ROSENBROCK_IR, "rosenbrock", &x);
        assert_eq!(bits(&fused), bits(&pair), "n = {n}");
        let mut hand = vec![0.0; n];
        rosenbrock_gradient(&x, &mut hand);
        assert_eq!(bits(&fused), bits(&hand), "n = {n}");
        assert_eq!((fused_tape, pair_tape), (0, 8), "the trip count: forwarded, and on vjp's tape");
    }
}

/// A loop that records per iteration (an `exp` its pullback reads back), two returns (the
/// pullback pops which one ran: a branch, nothing to pair there), and a local array (never
/// inlined): the fused gradient is vjp's in each.
#[test]
fn programs_it_cannot_fully_forward_keep_their_gradients() {
    let per_iteration = "func @f(x: slice) -> f64 {
entry:
    zero = iconst 0
    one = iconst 1
    n = len x
    acc0 = fconst 0.0
    jump head(zero, acc0)
head(i: i64, acc: f64):
    more = icmp lt i, n
    br more, body, done
body:
    xi = load x, i
    e = exp xi
    p = fmul acc, e
    s = fadd p, xi
    i1 = iadd i, one
    jump head(i1, s)
done:
    ret acc
}
";
    let two_returns = "func @f(x: slice) -> f64 {
entry:
    zero = iconst 0
    x0 = load x, zero
    c0 = fconst 0.0
    pos = fcmp gt x0, c0
    br pos, left, right
left:
    a = fmul x0, x0
    ret a
right:
    b = sin x0
    ret b
}
";
    let local_array = "func @f(x: slice) -> f64 {
entry:
    zero = iconst 0
    one = iconst 1
    n = len x
    t = alloc n
    acc0 = fconst 0.0
    jump head(zero, acc0)
head(i: i64, acc: f64):
    more = icmp lt i, n
    br more, body, done
body:
    xi = load x, i
    sq = fmul xi, xi
    store t, i, sq
    v = load t, i
    s = fadd acc, v
    i1 = iadd i, one
    jump head(i1, s)
done:
    ret acc
}
";
    for (name, src) in
        [("per-iteration state", per_iteration), ("two returns", two_returns), ("local array", local_array)]
    {
        for x in [vec![0.5, -1.25, 2.0], vec![-0.75], vec![1.5, 0.25, -2.0, 3.0, 0.125]] {
            let (fused, fused_tape, pair, pair_tape) = fused_and_pair(src, "f", &x);
            assert_eq!(bits(&fused), bits(&pair), "{name}, x = {x:?}");
            assert!(fused_tape <= pair_tape, "{name}: fused {fused_tape} bytes, vjp {pair_tape}");
        }
    }
}

/// Beyond the size limit the fused function keeps its calls: same gradient.
#[test]
fn large_programs_keep_their_calls_and_their_gradients() {
    let mut src = String::from("func @f(x: slice) -> f64 {\nentry:\n    zero = iconst 0\n    a0 = load x, zero\n");
    for k in 0..800 {
        src += &format!("    b{k} = sin a{k}\n    a{} = fmul b{k}, a0\n", k + 1);
    }
    src += "    ret a800\n}\n";
    let (fused, fused_tape, pair, pair_tape) = fused_and_pair(&src, "f", &[0.7]);
    assert_eq!(bits(&fused), bits(&pair));
    assert_eq!(fused_tape, pair_tape, "not inlined: the same state on the tape");
}
