//! Programs several tests share (instead of each pasting its own copy).

/// `@long(x, n) = Σ_{i<n} sin(x·i)`: a counted loop whose reverse mode records one tape entry
/// per iteration (the partial `cos(x·i)`; the index is recomputed from the trip count), so its
/// tape grows with `n` by exactly 8 bytes.
pub const LONG_LOOP: &str = "func @long(x: f64, n: i64) -> f64 {
entry:
    zero = iconst 0
    one = iconst 1
    acc0 = fconst 0.0
    jump head(zero, acc0)
head(i: i64, acc: f64):
    more = icmp lt i, n
    br more, body, exit(acc)
body:
    fi = itof i
    t = fmul x, fi
    s = sin t
    acc2 = fadd acc, s
    i2 = iadd i, one
    jump head(i2, acc2)
exit(r: f64):
    ret r
}
";
