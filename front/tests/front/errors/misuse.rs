//! Misuse within the subset — types, initialisation, mutability, aliasing, literals, argument
//! counts, missing bodies and results: (case, source, the error exactly as displayed).

pub(crate) const CASES: &[(&str, &str, &str)] = &[
    (
        "struct_field_twice",
        r#"struct S { x: f64, v: f64, x: f64 }
fn f(s: S) -> f64 {
    s.x
}"#,
        r#"1:28: field `x` is declared twice in `S`; rename one"#,
    ),
    (
        "struct_pattern_incomplete",
        r#"struct P { x: f64, y: f64 }
fn f(p: P) -> f64 {
    let P { x } = p;
    x
}"#,
        r#"3:9: field `y` of `P` is not in the pattern; name it, or end the pattern with `..`"#,
    ),
    (
        "operator_without_impl",
        r#"#[derive(Clone, Copy)]
struct P { x: f64 }
fn f(a: P, b: P) -> P {
    a + b
}"#,
        r#"4:7: no `impl Add<P> for P` in the source; write one (`fn add(self, rhs: P) -> ...`) or operate on the fields"#,
    ),
    (
        "neg_without_impl",
        r#"#[derive(Clone, Copy)]
struct P { x: f64 }
fn f(a: P) -> P {
    -a
}"#,
        r#"4:5: no `impl Neg for P` in the source; write one (`fn neg(self) -> P`) or negate the fields"#,
    ),
    (
        "compound_without_impl",
        r#"#[derive(Clone, Copy)]
struct P { x: f64 }
fn f(a: P) -> f64 {
    let mut b = a;
    b += a;
    b.x
}"#,
        r#"5:7: no `impl AddAssign<P> for P` in the source; write one (`fn add_assign(&mut self, rhs: P)`) or update the fields"#,
    ),
    (
        "operator_impl_extra_fn",
        r#"struct P { x: f64 }
impl std::ops::Add for P {
    type Output = P;
    fn add(self, o: P) -> P { P { x: self.x + o.x } }
    fn other(&self) -> f64 { 1.0 }
}"#,
        r#"5:8: this `impl` implements `add`; no other function belongs in it"#,
    ),
    (
        "operator_assign_by_value",
        r#"#[derive(Clone, Copy)]
struct P { x: f64 }
impl std::ops::MulAssign<f64> for P {
    fn mul_assign(mut self, k: f64) { self.x *= k; }
}
fn f(a: P) -> f64 {
    let mut b = a;
    b *= 2.0;
    b.x
}"#,
        r#"4:19: `mul_assign` must have the signature its `std::ops` trait declares: `fn mul_assign(&mut self, rhs: f64)`"#,
    ),
    (
        "operator_by_reference",
        r#"struct P { x: f64 }
impl std::ops::Add for P {
    type Output = P;
    fn add(&self, o: P) -> P { P { x: self.x + o.x } }
}"#,
        r#"4:12: `add` must have the signature its `std::ops` trait declares: `fn add(self, rhs: P) -> Self::Output`"#,
    ),
    (
        "operator_missing_operand",
        r#"struct P { x: f64 }
impl std::ops::Sub for P {
    type Output = P;
    fn sub(self) -> P { self }
}"#,
        r#"4:12: `sub` must have the signature its `std::ops` trait declares: `fn sub(self, rhs: P) -> Self::Output`"#,
    ),
    (
        "operator_unary_with_operand",
        r#"struct P { x: f64 }
impl std::ops::Neg for P {
    type Output = P;
    fn neg(self, o: P) -> P { o }
}"#,
        r#"4:12: `neg` must have the signature its `std::ops` trait declares: `fn neg(self) -> Self::Output`"#,
    ),
    (
        "method_unknown",
        r#"struct P { x: f64 }
fn f(p: P) -> f64 {
    p.norm()
}"#,
        r#"3:7: `P` has no method `norm`; define it in an `impl P` block of the source"#,
    ),
    (
        "method_without_self",
        r#"struct P { x: f64 }
impl P {
    fn new(x: f64) -> P { P { x } }
}
fn f(p: P) -> P {
    p.new(1.0)
}"#,
        r#"6:7: `P::new` has no `self` parameter; call it as `P::new(...)`"#,
    ),
    (
        "method_mut_self_immutable",
        r#"struct P { x: f64 }
impl P {
    fn bump(&mut self) { self.x += 1.0; }
}
fn f(p: P) -> f64 {
    p.bump();
    p.x
}"#,
        r#"6:5: cannot assign to `p`, which is not declared `mut`; declare it with `let mut p`"#,
    ),
    (
        "method_arg_count",
        r#"struct P { x: f64 }
impl P {
    fn two(&self, k: f64) -> f64 { self.x * k }
}
fn f(p: P) -> f64 {
    p.two()
}"#,
        r#"6:5: `P::two` takes 1 argument but 0 were given; pass 1"#,
    ),
    (
        "struct_missing_field",
        r#"struct P { x: f64, y: f64 }
fn f() -> P {
    P { x: 1.0 }
}"#,
        r#"3:5: field `y` of `P` is missing; give every field"#,
    ),
    (
        "struct_unknown_field",
        r#"struct P { x: f64 }
fn f(p: P) -> f64 {
    p.y
}"#,
        r#"3:7: `P` has no field `y`; its fields are `x`"#,
    ),
    (
        "struct_recursive",
        r#"struct A { b: B }
struct B { a: A }"#,
        r#"1:8: the struct `A` contains itself; it would be infinitely large"#,
    ),
    (
        "struct_as_number",
        r#"struct P { x: f64 }
fn f(p: P) -> f64 {
    p + 1.0
}"#,
        r#"3:7: no `impl Add<f64> for P` in the source; write one (`fn add(self, rhs: f64) -> ...`) or operate on the fields"#,
    ),
    (
        "struct_field_immutable",
        r#"struct P { x: f64 }
fn f(p: P) {
    p.x = 1.0;
}"#,
        r#"3:5: cannot assign to `p`, which is not declared `mut`; declare it with `let mut p`"#,
    ),
    (
        "struct_wrong_type",
        r#"struct P { x: f64 }
struct Q { x: f64 }
fn f(p: P) -> Q {
    let mut q = Q { x: 1.0 };
    q = p;
    q
}"#,
        r#"5:9: mismatched types: expected `Q`, found `P`; build a `Q` from the fields it needs: `Q { ... }`"#,
    ),
    (
        "match_not_exhaustive",
        r#"fn f(n: i64) -> f64 {
    match n {
        0 => 1.0,
        1..=9 => 2.0,
    }
}"#,
        r#"2:5: this `match` may not cover every value; end it with a catch-all arm `_ => ...`"#,
    ),
    (
        "match_arm_types",
        r#"fn f(n: i64) -> f64 {
    match n {
        0 => 1.0,
        _ => 2,
    }
}"#,
        r#"4:14: mismatched types: expected `f64`, found `{integer}`; write the literal as a float: `2.0`"#,
    ),
    (
        "mixed",
        r#"fn f(x: f64, n: i64) -> f64 {
    x + n
}"#,
        r#"2:9: mismatched types: expected `f64`, found `i64`; add `as f64`"#,
    ),
    (
        "mixed_lit",
        r#"fn f(x: f64) -> f64 {
    x * 2
}"#,
        r#"2:9: mismatched types: expected `f64`, found `{integer}`; write the literal as a float: `2.0`"#,
    ),
    (
        "int_kinds",
        r#"fn f(n: usize, k: i64) -> usize {
    n + k
}"#,
        r#"2:9: mismatched types: expected `usize`, found `i64`; add `as usize`"#,
    ),
    (
        "index_i64",
        r#"fn f(x: &[f64], i: i64) -> f64 {
    x[i]
}"#,
        r#"2:7: mismatched types: expected `usize`, found `i64`; slices are indexed by `usize`: add `as usize`"#,
    ),
    (
        "uninit",
        r#"fn f(c: bool) -> f64 {
    let y: f64;
    if c {
        y = 1.0;
    }
    y
}"#,
        r#"6:5: `y` is used before it is initialised on every path; assign it in every branch before, or initialise it in its `let`"#,
    ),
    (
        "immutable",
        r#"fn f(x: f64) -> f64 {
    let y = x;
    y = 2.0;
    y
}"#,
        r#"3:5: cannot assign to `y`, which is not declared `mut`; declare it with `let mut y`"#,
    ),
    (
        "immutable_param",
        r#"fn f(x: f64) -> f64 {
    x += 1.0;
    x
}"#,
        r#"2:5: cannot assign to `x`, which is not declared `mut`; declare it with `let mut x`"#,
    ),
    (
        "immutable_loop",
        r#"fn f(n: usize) -> f64 {
    let y: f64;
    for i in 0..n {
        y = i as f64;
    }
    0.0
}"#,
        r#"4:9: cannot assign to `y`, which is not declared `mut`; declare it with `let mut y`"#,
    ),
    (
        "alias",
        r#"fn g(a: &mut [f64], b: &mut [f64]) {
    a[0] = b[0];
}
fn f(x: &mut [f64]) {
    g(x, x);
}"#,
        r#"5:10: `x` is borrowed mutably by this call and passed to it again; pass it once"#,
    ),
    (
        "alias_shared",
        r#"fn g(a: &[f64], b: &mut [f64]) {
    b[0] = a[0];
}
fn f(x: &mut [f64]) {
    g(x, x);
}"#,
        r#"5:10: `x` is borrowed mutably by this call and passed to it again; pass it once"#,
    ),
    (
        "overflow_i32",
        r#"fn f() -> i32 {
    3_000_000_000i32
}"#,
        r#"2:5: literal `3000000000` does not fit in `i32`; use a smaller value or a wider type"#,
    ),
    (
        "overflow_i64",
        r#"fn f() -> i64 {
    let k = 9_223_372_036_854_775_808;
    k
}"#,
        r#"2:13: literal `9223372036854775808` does not fit in `i64`; use a smaller value or a wider type"#,
    ),
    (
        "overflow_annot",
        r#"fn f() -> u32 {
    let k: u32 = 5_000_000_000;
    k
}"#,
        r#"2:18: literal `5000000000` does not fit in `u32`; use a smaller value or a wider type"#,
    ),
    (
        "overflow_float",
        r#"fn f() -> f64 {
    1e400
}"#,
        r#"2:5: literal `1e400` does not fit in `f64`; use a smaller value or a wider type"#,
    ),
    (
        "argcount",
        r#"fn g(a: f64, b: f64) -> f64 {
    a + b
}
fn f(x: f64) -> f64 {
    g(x)
}"#,
        r#"5:5: `g` takes 2 arguments but 1 was given; pass 2"#,
    ),
    (
        "method_args",
        r#"fn f(x: f64) -> f64 {
    x.powf()
}"#,
        r#"2:5: `powf` takes 1 argument but 0 were given; pass 1"#,
    ),
    (
        "nobody",
        r#"fn f(x: f64) -> f64;"#,
        r#"1:4: function `f` has no body; give it one, or declare it inside `extern "C" { ... }` to call a native function"#,
    ),
    (
        "dup",
        r#"fn f(x: f64) -> f64 {
    x
}
fn f(y: f64) -> f64 {
    y
}"#,
        r#"4:4: `f` is defined more than once; rename one of them"#,
    ),
    (
        "missing_ret",
        r#"fn f(x: f64) -> f64 {
    let y = x * 2.0;
}"#,
        r#"2:5: `f` must return `f64` but its body ends without a value; end it with an expression (no `;`) or a `return`"#,
    ),
    (
        "missing_ret2",
        r#"fn f(x: f64) -> f64 {
    x * 2.0;
}"#,
        r#"2:5: `f` must return `f64` but its body ends without a value; end it with an expression (no `;`) or a `return`"#,
    ),
    (
        "unknown_method",
        r#"fn f(x: f64) -> f64 {
    x.frobnicate()
}"#,
        r#"2:7: no method `frobnicate` on `f64`; the `f64` methods supported are sin cos tan asin acos atan atan2 sinh cosh tanh asinh acosh atanh exp exp2 exp_m1 ln ln_1p log log2 log10 sqrt cbrt abs powi powf hypot min max signum floor ceil round trunc fract recip clamp mul_add to_degrees to_radians sin_cos is_nan is_finite is_infinite is_sign_negative is_sign_positive copysign rem_euclid div_euclid"#,
    ),
    (
        "unknown_fn",
        r#"fn f(x: f64) -> f64 {
    gamma(x)
}"#,
        r#"2:5: cannot find function `gamma`; define it with `fn` in the same source, or declare it in `extern "C" { ... }`"#,
    ),
    (
        "unknown_var",
        r#"fn f(x: f64) -> f64 {
    x + y
}"#,
        r#"2:9: cannot find value `y`; declare it with `let`, make it a parameter, or define a module-level `const`"#,
    ),
    (
        "write_ro",
        r#"fn f(x: &[f64]) {
    x[0] = 1.0;
}"#,
        r#"2:5: cannot write to an element of a read-only slice; take the parameter as `&mut [f64]` (or declare the local array `let mut`)"#,
    ),
    (
        "if_no_else",
        r#"fn f(c: bool) -> f64 {
    let y = if c { 1.0 };
    y
}"#,
        r#"2:18: an `if` without `else` has type `()`, but this branch gives `f64`; add an `else` branch or end the branch with `;`"#,
    ),
    (
        "if_types",
        r#"fn f(c: bool) -> f64 {
    if c { 1.0 } else { 2 }
}"#,
        r#"2:23: mismatched types: expected `f64`, found `{integer}`; write the literal as a float: `2.0`"#,
    ),
    (
        "cond_not_bool",
        r#"fn f(x: f64) -> f64 {
    if x { 1.0 } else { 0.0 }
}"#,
        r#"2:8: mismatched types: expected `bool`, found `f64`; compare instead, e.g. `x != 0.0`"#,
    ),
    (
        "break_outside",
        r#"fn f() {
    break;
}"#,
        r#"2:5: `break` outside of a loop; use it inside `loop`, `while` or `for`"#,
    ),
    (
        "break_value_while",
        r#"fn f() -> f64 {
    while true {
        break 1.0;
    }
    0.0
}"#,
        r#"3:15: `break` with a value is only allowed in `loop`; assign the value to a variable declared before the loop"#,
    ),
    (
        "syntax",
        r#"fn f(x: f64) -> f64 {
    x +
}"#,
        r#"3:1: this is not valid Rust: unexpected end of input, expected an expression"#,
    ),
    (
        "neg_unsigned",
        r#"fn f(n: usize) -> usize {
    -n
}"#,
        r#"2:5: cannot negate a `usize`, which is unsigned; subtract from zero in a signed type (`-(x as i64)`)"#,
    ),
    (
        "powi_type",
        r#"fn f(x: f64, n: i64) -> f64 {
    x.powi(n)
}"#,
        r#"2:12: mismatched types: expected `i32`, found `i64`; `powi` takes an `i32`: add `as i32`"#,
    ),
    (
        "cast_bool",
        r#"fn f(b: bool) -> f64 {
    b as f64
}"#,
        r#"2:5: Rust cannot cast `bool` as `f64`; write `if b { 1.0 } else { 0.0 }`"#,
    ),
    (
        "arg_type",
        r#"fn g(n: usize) -> f64 {
    n as f64
}
fn f(x: f64) -> f64 {
    g(x)
}"#,
        r#"5:7: mismatched types: expected `usize`, found `f64`; add `as usize`"#,
    ),
    (
        "step0",
        r#"fn f() -> usize {
    let mut s = 0;
    for i in (0..10).step_by(0) {
        s += i;
    }
    s
}"#,
        r#"3:30: `step_by(0)` panics in Rust; step by at least 1"#,
    ),
    (
        "const_array_length",
        r#"const Y: [f64; 3] = [1.0, 2.0];
fn f() -> f64 {
    Y[0]
}"#,
        r#"1:21: mismatched types: expected an array of 3 values, found one of 2"#,
    ),
    (
        "const_array_int_literal",
        r#"const Y: [f64; 2] = [1.0, 2];
fn f() -> f64 {
    Y[0]
}"#,
        r#"1:27: mismatched types: expected `f64`, found an integer; write `2.0`"#,
    ),
    (
        "const_array_int_const",
        r#"const N: usize = 2;
const Y: [f64; 2] = [1.0, N];
fn f() -> f64 {
    Y[0]
}"#,
        r#"2:27: mismatched types: expected `f64`, found `usize`; convert with `as f64`"#,
    ),
    (
        "const_array_write",
        r#"const Y: [f64; 2] = [1.0, 2.0];
fn f() {
    Y[0] = 3.0;
}"#,
        r#"3:5: cannot write to the constant array `Y`; to change a copy, make a local array and fill it: `let mut a = [0.0; N]; for i in 0..N { a[i] = Y[i]; }`"#,
    ),
    (
        "const_array_mut_ref",
        r#"const Y: [f64; 2] = [1.0, 2.0];
fn g(a: &mut [f64]) {
    a[0] = 1.0;
}
fn f() {
    g(&mut Y);
}"#,
        r#"6:12: cannot write to the constant array `Y`; to change a copy, make a local array and fill it: `let mut a = [0.0; N]; for i in 0..N { a[i] = Y[i]; }`"#,
    ),
    (
        "const_array_copy_mut",
        r#"const Y: [f64; 2] = [1.0, 2.0];
fn f() -> f64 {
    let mut a: [f64; 2] = Y;
    a[0] = 3.0;
    a[0] + a[1]
}"#,
        r#"3:27: cannot write to the constant array `Y`; to change a copy, make a local array and fill it: `let mut a = [0.0; N]; for i in 0..N { a[i] = Y[i]; }`"#,
    ),
    (
        "const_array_iter_mut",
        r#"const Y: [f64; 2] = [1.0, 2.0];
fn f() {
    for y in Y.iter_mut() {
        *y = 0.0;
    }
}"#,
        r#"3:14: cannot write to the constant array `Y`; to change a copy, make a local array and fill it: `let mut a = [0.0; N]; for i in 0..N { a[i] = Y[i]; }`"#,
    ),
    (
        "self_const",
        r#"const A: f64 = A + 1.0;
fn f() -> f64 {
    A
}"#,
        r#"1:16: constant `A` is defined in terms of itself; give it a value"#,
    ),
    (
        "mut_ref_ro",
        r#"fn g(a: &mut [f64]) {
    a[0] = 1.0;
}
fn f(x: &[f64]) {
    g(x);
}"#,
        r#"5:7: mismatched types: expected `&mut [f64]`, found `&[f64]`; pass a mutable slice: a `&mut [f64]` parameter or `&mut local_array`"#,
    ),
    (
        "tuple_arity",
        r#"fn g() -> (f64, f64) {
    (1.0, 2.0)
}
fn f() -> f64 {
    let (a, b, c) = g();
    a
}"#,
        r#"5:9: this pattern has 3 elements but the value has 2; write one name (or `_`) per element"#,
    ),
];
