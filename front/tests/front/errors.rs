//! What is outside the subset, or wrong: each case asserts the whole message, line:column
//! included.

/// (case name, source, the error exactly as displayed).
pub(crate) const CASES: &[(&str, &str, &str)] = &[
    (
        "generic",
        r#"fn f<T>(x: T) -> T {
    x
}"#,
        r#"1:5: generic functions are not supported; write the function for `f64` (and the integer types it needs) without type parameters"#,
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
        "struct",
        r#"struct P {
    x: f64,
}"#,
        r#"1:1: structs, enums and unions are not supported; pass each field as its own parameter (`f64`, integers, `bool`, slices)"#,
    ),
    (
        "impl",
        r#"fn f() {}
impl Foo {
    fn g(&self) {}
}"#,
        r#"2:1: `impl` blocks are not supported; write free functions that take the fields as parameters"#,
    ),
    (
        "trait",
        r#"trait T {
    fn f(&self);
}"#,
        r#"1:1: traits are not supported; write one free function per implementation"#,
    ),
    (
        "vec_ty",
        r#"fn f(x: Vec<f64>) -> f64 {
    x[0]
}"#,
        r#"1:9: `Vec` values are not supported; take `&[f64]` or `&mut [f64]` parameters, or use a fixed-size local array `[0.0; N]` with a constant `N`"#,
    ),
    (
        "vec_macro",
        r#"fn f(n: usize) -> f64 {
    let v = vec![0.0; n];
    v[0]
}"#,
        r#"2:13: macros such as `vec!` are not supported; use a fixed-size local array `[0.0; N]` with a constant `N`, or a `&mut [f64]` parameter"#,
    ),
    (
        "println",
        r#"fn f(x: f64) -> f64 {
    println!("{}", x);
    x
}"#,
        r#"2:5: macros such as `println!` are not supported; remove the `println!` call (the IR has no I/O or text)"#,
    ),
    (
        "closure_elsewhere",
        r#"fn f(x: f64) -> f64 {
    let g = |y: f64| y * 2.0;
    g(x)
}"#,
        r#"2:13: closures are supported only as the argument of `map`, `filter` or `fold` on an iterator; write a `fn` item and call it"#,
    ),
    (
        "closure_mut",
        r#"fn f(x: &[f64]) -> f64 {
    let mut count = 0.0;
    let s: f64 = x.iter().map(|v| {
        count += 1.0;
        v * 2.0
    }).sum();
    s + count
}"#,
        r#"4:9: closures that capture a mutable variable are not supported; use a `for` loop"#,
    ),
    (
        "unknown_method",
        r#"fn f(x: f64) -> f64 {
    x.frobnicate()
}"#,
        r#"2:7: no method `frobnicate` on `f64`; the `f64` methods supported are sin cos tan asin acos atan atan2 sinh cosh tanh exp exp2 exp_m1 ln ln_1p log log2 log10 sqrt cbrt abs powi powf hypot min max signum floor ceil round trunc fract recip clamp mul_add to_degrees to_radians sin_cos is_nan is_finite is_infinite"#,
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
        "ref_local",
        r#"fn f(x: f64) -> f64 {
    let r = &x;
    *r
}"#,
        r#"2:13: references to `f64` values are not supported; pass the value itself, and return new values instead of writing through references"#,
    ),
    (
        "match",
        r#"fn f(n: i64) -> f64 {
    match n {
        0 => 1.0,
        _ => 2.0,
    }
}"#,
        r#"2:5: `match` expressions are not supported; use `if` / `else if` / `else`"#,
    ),
    (
        "f32",
        r#"fn f(x: f32) -> f32 {
    x
}"#,
        r#"1:9: `f32` values are not supported; use `f64`"#,
    ),
    (
        "float_rem",
        r#"fn f(x: f64) -> f64 {
    x % 2.0
}"#,
        r#"2:7: remainders (`%`) of `f64` values are not supported; the IR has no float remainder; use `x - (x / y).floor() * y` where that approximation is fine, or integers"#,
    ),
    (
        "shift",
        r#"fn f(n: i64) -> i64 {
    n << 2
}"#,
        r#"2:7: shift operators are not supported; multiply or divide by a power of two"#,
    ),
    (
        "subslice",
        r#"fn f(x: &[f64]) -> f64 {
    g(&x[1..])
}
fn g(x: &[f64]) -> f64 {
    x[0]
}"#,
        r#"2:10: sub-slices (`x[a..b]`) are not supported; pass the whole slice and an offset, and index `x[offset + i]`"#,
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
        "bool_arith",
        r#"fn f(a: bool, b: bool) -> bool {
    a + b
}"#,
        r#"2:7: arithmetic operators on `bool` values are not supported; convert with `if b { 1.0 } else { 0.0 }` first"#,
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
        "return_in_closure",
        r#"fn f(x: &[f64]) -> f64 {
    x.iter().map(|v| {
        return *v;
    }).sum()
}"#,
        r#"3:9: `return` expressions inside closures are not supported; use a `for` loop"#,
    ),
    (
        "self",
        r#"fn f(&self) -> f64 {
    1.0
}"#,
        r#"1:6: methods (`self` parameters) are not supported; write a free `fn` and pass the fields"#,
    ),
    ("static", r#"static K: f64 = 1.0;"#, r#"1:1: `static` items are not supported; use a `const`"#),
    (
        "const_array",
        r#"const Y: [f64; 3] = [1.0, 2.0, 3.0];
fn f(i: usize) -> f64 {
    Y[i]
}"#,
        r#"3:5: a constant array is not supported yet: the IR has no read-only data tables yet; pass the table as a `&[f64]` parameter"#,
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
    ("async", r#"async fn f() {}"#, r#"1:1: `async` functions are not supported; write an ordinary `fn`"#),
    (
        "slice_ret",
        r#"fn f(x: &[f64]) -> &[f64] {
    x
}"#,
        r#"1:20: slice results are not supported; take a `&mut [f64]` parameter and write the result into it"#,
    ),
    (
        "tuple_var",
        r#"fn g() -> (f64, f64) {
    (1.0, 2.0)
}
fn f() -> f64 {
    let t = g();
    t.0
}"#,
        r#"5:9: tuple-typed variables are not supported; destructure the tuple: `let (a, b) = ...;`"#,
    ),
    (
        "mod",
        r#"mod m {
    fn f() {}
}"#,
        r#"1:1: modules are not supported; put every item at the top level of the source"#,
    ),
    (
        "question",
        r#"fn f(x: f64) -> f64 {
    x?
}"#,
        r#"2:5: `?` operators are not supported; return plain values and test them with `if`"#,
    ),
    (
        "range_var",
        r#"fn f() -> f64 {
    let r = 0..3;
    0.0
}"#,
        r#"2:13: ranges outside `for` loops are not supported; iterate over the range directly: `for i in a..b { ... }`"#,
    ),
    (
        "for_float",
        r#"fn f() -> f64 {
    let mut s = 0.0;
    for x in 0.0..1.0 {
        s += x;
    }
    s
}"#,
        r#"3:14: ranges of `f64` are not supported; iterate over an integer range and compute the float from it: `for i in 0..n { let x = i as f64 * h; }`"#,
    ),
    (
        "not_int",
        r#"fn f(n: i64) -> i64 {
    !n
}"#,
        r#"2:5: bitwise negations (`!`) of integers are not supported; the IR has no bit operations; use arithmetic (`-x - 1` is `!x` for signed integers)"#,
    ),
    (
        "cast_bool",
        r#"fn f(b: bool) -> f64 {
    b as f64
}"#,
        r#"2:5: Rust cannot cast `bool` as `f64`; write `if b { 1.0 } else { 0.0 }`"#,
    ),
    (
        "iter_unconsumed",
        r#"fn f(x: &[f64]) -> f64 {
    let it = x.iter();
    0.0
}"#,
        r#"2:14: iterators that are not consumed in place are not supported; consume the chain where it is built, with `sum()`, `product()`, `fold(...)`, `count()` or a `for` loop"#,
    ),
    (
        "let_else",
        r#"fn f(x: f64) -> f64 {
    let y = x else { return 0.0; };
    y
}"#,
        r#"2:15: `let ... else` statements are not supported; use `if`/`else` and `return`"#,
    ),
    (
        "usize_max",
        r#"fn f() -> usize {
    usize::MAX
}"#,
        r#"2:5: `usize::MAX` does not fit the IR's 64-bit signed integers; use `i64::MAX as usize`"#,
    ),
    (
        "string",
        r#"fn f() -> f64 {
    let s = "hi";
    0.0
}"#,
        r#"2:13: string, character and byte literals are not supported; compute with numbers only"#,
    ),
    (
        "fn_value",
        r#"fn g(x: f64) -> f64 {
    x
}
fn f() -> f64 {
    let h = g;
    0.0
}"#,
        r#"5:13: functions as values are not supported; call it: `g(...)`"#,
    ),
    (
        "use_other",
        r#"use std::collections::HashMap;
fn f() {}"#,
        r#"1:23: `use` items other than `use std::f64::consts::...` are not supported; refer to `std::f64::consts::PI` (or `use std::f64::consts::PI;`) and define everything else in the source"#,
    ),
    (
        "inner_fn",
        r#"fn f() -> f64 {
    fn g() -> f64 { 1.0 }
    g()
}"#,
        r#"2:5: items inside function bodies (`fn`, `const`, `use`, ...) are not supported; move them to the top level of the source"#,
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
        "nested_deep",
        r#"fn f(x: f64) -> f64 {
    ((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((x))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))
}"#,
        r#"2:100: brackets nested more than 96 deep are not supported; split the expression with `let` bindings or helper functions"#,
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
        "array_len",
        r#"fn f(n: usize) -> f64 {
    let a = [0.0; n];
    a[0]
}"#,
        r#"2:19: the length of a local array must be a constant: an integer literal, a `const` or arithmetic on those"#,
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
        "assign_slice",
        r#"fn f(x: &[f64], y: &[f64]) -> f64 {
    let mut z = x;
    z = y;
    z[0]
}"#,
        r#"3:5: assignments to slice variables are not supported; bind each slice to its own name, or assign its elements (`x[i] = ...`)"#,
    ),
    (
        "zip_after_map",
        r#"fn f(x: &[f64], y: &[f64]) -> f64 {
    x.iter().map(|v| v * 2.0).zip(y.iter()).map(|(a, b)| a * b).sum()
}"#,
        r#"2:14: `map` adapters before `enumerate`, `zip`, `rev`, `step_by`, `skip` or `take` are not supported; put `map` and `filter` last in the chain, or use a `for` loop"#,
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
    (
        "non_ascii_function",
        r#"fn café(x: f64) -> f64 {
    let é = x;
    é
}"#,
        r#"1:4: non-ASCII function names are not supported; rename `café` with ASCII letters, digits and `_` (it becomes the IR function's name)"#,
    ),
];

#[test]
fn every_case_reports_its_message_at_its_position() {
    let mut failures = vec![];
    for (name, source, expected) in CASES {
        match jitdiff_front::lower_source(source) {
            Ok(_) => failures.push(format!("{name}: lowered without error")),
            Err(e) if e.to_string() != *expected => {
                failures.push(format!("{name}:\n  got      {e}\n  expected {expected}"))
            }
            Err(_) => {}
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(CASES.len() >= 40);
}

#[test]
fn positions_are_one_based_lines_and_columns() {
    let err = jitdiff_front::lower_source("fn f(x: f64) -> f64 {\n    x + y\n}").unwrap_err();
    assert_eq!(err.position, jitdiff_front::Position { line: 2, column: 9 });
    assert_eq!(
        err.message(),
        "cannot find value `y`; declare it with `let`, make it a parameter, or define a module-level `const`"
    );
    assert!(matches!(err.kind, jitdiff_front::FrontErrorKind::Unknown { .. }));
}
