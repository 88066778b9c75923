//! Program families for compile-time scaling: IR text whose size is one number, so the time of
//! each stage (parse, derive, compile) can be plotted against it. Each family is a shape that
//! once made some stage super-linear: long straight-line code (many values live at once in a
//! pullback), long chains of blocks (loop and dominator analyses), deep loop nests (reverse
//! mode's per-loop state) and calls with very many arguments.

use jitdiff::SplitMix64;
use std::fmt::Write;

/// A straight-line least-squares objective of about `n` instructions over `x: slice` of 16
/// entries: a chain of arithmetic (`fadd`, `fsub`, `fmul`, `sin`, `exp` of small values) whose
/// operands are mostly recent values and sometimes any earlier one (so some live ranges are
/// long), every 8th value squared into the sum. Deterministic in `seed`.
///
/// ```
/// let text = jitdiff_problems::scaling::straight_line(100, 1);
/// let m = jitdiff::ir::parse_module(&text).unwrap();
/// jitdiff::ir::verify_module(&m).unwrap();
/// ```
pub fn straight_line(n: usize, seed: u64) -> String {
    let mut rng = SplitMix64::new(seed);
    let mut text = String::from("func @f(x: slice) -> f64 {\nentry:\n    small = fconst 0.001\n");
    let inputs = 16;
    for i in 0..inputs {
        let _ = writeln!(text, "    k{i} = iconst {i}\n    v{i} = load x, k{i}");
    }
    let _ = writeln!(text, "    s0 = fconst 0.0");
    let (mut values, mut sums) = (inputs, 0);
    let mut emitted = 2 * inputs + 2;
    while emitted < n {
        let pick = |rng: &mut SplitMix64, values: usize| {
            if rng.next_u64().is_multiple_of(5) {
                rng.next_u64() as usize % values
            } else {
                values - 1 - rng.next_u64() as usize % 8.min(values)
            }
        };
        let (a, b) = (pick(&mut rng, values), pick(&mut rng, values));
        let v = values;
        match rng.next_u64() % 6 {
            0 => writeln!(text, "    v{v} = fadd v{a}, v{b}"),
            1 => writeln!(text, "    v{v} = fsub v{a}, v{b}"),
            2 | 3 => writeln!(text, "    p{v} = fmul v{a}, small\n    v{v} = fadd p{v}, v{b}").map(|_| emitted += 1),
            4 => writeln!(text, "    v{v} = sin v{a}"),
            _ => writeln!(text, "    p{v} = fmul v{a}, small\n    v{v} = exp p{v}").map(|_| emitted += 1),
        }
        .ok();
        values += 1;
        emitted += 1;
        if values.is_multiple_of(8) {
            let _ = writeln!(text, "    q{v} = fmul v{v}, v{v}\n    s{} = fadd s{sums}, q{v}", sums + 1);
            sums += 1;
            emitted += 2;
        }
    }
    let _ = writeln!(text, "    ret s{sums}\n}}");
    text
}

/// A chain of `n` blocks, each adding one term to a carried sum (`b_k(acc) → b_{k+1}(acc + x[k mod 4] * c)`),
/// with a branch every 4th block so that control merges too.
///
/// ```
/// let m = jitdiff::ir::parse_module(&jitdiff_problems::scaling::block_chain(50)).unwrap();
/// jitdiff::ir::verify_module(&m).unwrap();
/// ```
pub fn block_chain(n: usize) -> String {
    let mut text = String::from("func @f(x: slice) -> f64 {\nentry:\n    zero = fconst 0.0\n    half = fconst 0.5\n");
    for i in 0..4 {
        let _ = writeln!(text, "    k{i} = iconst {i}\n    x{i} = load x, k{i}");
    }
    let _ = writeln!(text, "    jump b0(zero)");
    for k in 0..n {
        let _ = writeln!(text, "b{k}(a{k}: f64):\n    t{k} = fmul x{}, half\n    s{k} = fadd a{k}, t{k}", k % 4);
        if k % 4 == 3 && k + 1 < n {
            let _ = writeln!(
                text,
                "    c{k} = fcmp gt s{k}, zero\n    br c{k}, l{k}, r{k}\nl{k}:\n    u{k} = fmul s{k}, half\n    jump b{}(u{k})\nr{k}:\n    jump b{}(s{k})",
                k + 1,
                k + 1
            );
        } else if k + 1 < n {
            let _ = writeln!(text, "    jump b{}(s{k})", k + 1);
        } else {
            let _ = writeln!(text, "    ret s{k}");
        }
    }
    text.push_str("}\n");
    text
}

/// `depth` counted loops nested in each other, each running twice (so the innermost body runs
/// 2^depth times: keep `depth` small when running it), the innermost adding `x[0]²`-like terms.
///
/// ```
/// let m = jitdiff::ir::parse_module(&jitdiff_problems::scaling::nested_loops(5)).unwrap();
/// jitdiff::ir::verify_module(&m).unwrap();
/// ```
pub fn nested_loops(depth: usize) -> String {
    let mut text = String::from(
        "func @f(x: slice, trips: i64) -> f64 {\nentry:\n    zero = iconst 0\n    one = iconst 1\n    x0 = load x, zero\n    acc0 = fconst 0.0\n    jump h0(zero, acc0)\n",
    );
    for d in 0..depth {
        let _ = writeln!(
            text,
            "h{d}(i{d}: i64, a{d}: f64):\n    m{d} = icmp lt i{d}, trips\n    br m{d}, e{d}, x{d}(a{d})"
        );
        let _ = writeln!(text, "e{d}:");
        if d + 1 < depth {
            let _ = writeln!(text, "    jump h{}(zero, a{d})", d + 1);
        } else {
            let _ = writeln!(text, "    sq = fmul x0, x0\n    inner = fadd a{d}, sq\n    jump n{d}(inner)");
        }
    }
    for d in (0..depth).rev() {
        // x{d}: leaving loop d continues loop d-1 (or returns).
        let _ = writeln!(text, "x{d}(r{d}: f64):");
        if d == 0 {
            let _ = writeln!(text, "    ret r{d}");
        } else {
            let _ = writeln!(text, "    jump n{}(r{d})", d - 1);
        }
        let _ = writeln!(text, "n{d}(b{d}: f64):\n    j{d} = iadd i{d}, one\n    jump h{d}(j{d}, b{d})");
    }
    text.push_str("}\n");
    text
}

/// `count` counted loops one after another, each summing `x[i]²` over `i < n` into the running
/// total (six instructions and terminators per loop): many loops of one nest level, as a
/// program of many stages is.
///
/// ```
/// let m = jitdiff::ir::parse_module(&jitdiff_problems::scaling::loop_chain(5)).unwrap();
/// jitdiff::ir::verify_module(&m).unwrap();
/// ```
pub fn loop_chain(count: usize) -> String {
    let mut text = String::from(
        "func @f(x: slice, n: i64) -> f64 {\nentry:\n    zero = iconst 0\n    one = iconst 1\n    acc0 = fconst 0.0\n    jump h0(zero, acc0)\n",
    );
    for k in 0..count {
        let next = if k + 1 < count { format!("h{}(zero, a{k})", k + 1) } else { format!("done(a{k})") };
        let _ = writeln!(text, "h{k}(i{k}: i64, a{k}: f64):\n    c{k} = icmp lt i{k}, n\n    br c{k}, b{k}, {next}");
        let _ = writeln!(
            text,
            "b{k}:\n    v{k} = load x, i{k}\n    s{k} = fmul v{k}, v{k}\n    t{k} = fadd a{k}, s{k}\n    j{k} = iadd i{k}, one\n    jump h{k}(j{k}, t{k})"
        );
    }
    text.push_str("done(r: f64):\n    ret r\n}\n");
    text
}

/// `@f(x: slice)` calls `@g` with `n` `f64` arguments (`x[k mod 4] * k`) and `@g` sums them.
///
/// ```
/// let m = jitdiff::ir::parse_module(&jitdiff_problems::scaling::wide_call(20)).unwrap();
/// jitdiff::ir::verify_module(&m).unwrap();
/// ```
pub fn wide_call(n: usize) -> String {
    let params: Vec<String> = (0..n).map(|k| format!("p{k}: f64")).collect();
    let mut text = format!("func @g({}) -> f64 {{\nentry:\n    s0 = fconst 0.0\n", params.join(", "));
    for k in 0..n {
        let _ = writeln!(text, "    s{} = fadd s{k}, p{k}", k + 1);
    }
    let _ = writeln!(text, "    ret s{n}\n}}\nfunc @f(x: slice) -> f64 {{\nentry:");
    for i in 0..4 {
        let _ = writeln!(text, "    k{i} = iconst {i}\n    x{i} = load x, k{i}");
    }
    for k in 0..n {
        let _ = writeln!(text, "    c{k} = fconst {}.0\n    a{k} = fmul x{}, c{k}", k + 1, k % 4);
    }
    let args: Vec<String> = (0..n).map(|k| format!("a{k}")).collect();
    let _ = writeln!(text, "    r = call @g({})\n    ret r\n}}", args.join(", "));
    text
}
