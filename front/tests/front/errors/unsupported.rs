//! Constructs outside the subset: (case, source, the error exactly as displayed).

pub(crate) const CASES: &[(&str, &str, &str)] = &[
    (
        "const_generic",
        r#"fn f<const N: usize>(x: f64) -> f64 {
    x * N as f64
}"#,
        r#"1:6: const generic parameters are not supported; pass the length as a `usize` parameter, or take a slice (`&[f64]`)"#,
    ),
    (
        "enum",
        r#"enum E {
    A,
}"#,
        r#"1:1: enums and unions are not supported; use a struct with named fields, or an integer tag and a `match`"#,
    ),
    (
        "unit_struct",
        r#"struct P;"#,
        r#"1:1: unit structs (structs without fields) are not supported; give the struct fields, or use constants"#,
    ),
    (
        "generic_struct",
        r#"struct P<T> { x: T }"#,
        r#"1:9: generic structs are not supported; write the struct with `f64` fields"#,
    ),
    (
        "struct_update",
        r#"struct P { x: f64, y: f64 }
fn f(p: P) -> P {
    P { x: 1.0, ..p }
}"#,
        r#"3:19: struct updates (`..base`) are not supported; write every field"#,
    ),
    (
        "struct_mut_ref",
        r#"struct P { x: f64 }
fn f(p: &mut P) {}"#,
        r#"2:9: references to structs other than `&Struct` parameters are not supported; take the struct by value or by `&`, and return the new struct instead of writing through `&mut`"#,
    ),
    (
        "struct_uninitialised",
        r#"struct P { x: f64 }
fn f() -> f64 {
    let s: P;
    1.0
}"#,
        r#"3:9: struct variables declared without a value are not supported; initialise the struct where it is declared: `let s = Name { ... };`"#,
    ),
    (
        "struct_nested_vec_field",
        r#"struct P { s: Vec<Vec<f64>> }"#,
        r#"1:15: `Vec` values are not supported; take `&[f64]`, `&Vec<f64>` or `&mut [f64]` parameters and write results into a `&mut [f64]`; in the body, `Vec<f64>` from `vec!`, `collect` or `to_vec` is a local array"#,
    ),
    (
        "impl",
        r#"fn f() {}
impl Foo {
    fn g(&self) {}
}"#,
        r#"2:6: `impl` blocks for anything but a struct of this source are not supported; define the struct, with named fields, in the same source"#,
    ),
    (
        "struct_with_slices_result",
        r#"struct D<'a> { x: &'a [f64] }
fn f(x: &[f64]) -> D {
    D { x }
}"#,
        r#"2:20: results of structs holding slices (`D`) are not supported; return the numbers, and keep the slices where the caller has them"#,
    ),
    (
        "struct_with_slices_by_if",
        r#"struct D<'a> { x: &'a [f64] }
fn f(a: &[f64], b: &[f64], c: bool) -> f64 {
    let d = if c { D { x: a } } else { D { x: b } };
    d.x[0]
}"#,
        r#"3:18: structs holding slices chosen by `if` or `break` are not supported; branch around the code that uses the struct"#,
    ),
    (
        "struct_array_field",
        r#"struct D { x: [f64; 3] }"#,
        r#"1:15: array fields are not supported; hold a slice (`&'a [f64]`) of an array the caller owns"#,
    ),
    (
        "trait_impl",
        r#"struct P { x: f64 }
impl Clone for P {
    fn clone(&self) -> P { P { x: self.x } }
}"#,
        r#"2:6: trait implementations other than the arithmetic operators of `std::ops` are not supported; write the methods in a plain `impl Struct` block"#,
    ),
    (
        "impl_type",
        r#"struct P { x: f64 }
impl P {
    type K = f64;
}"#,
        r#"3:5: `impl` items other than functions and constants (associated types, macros, and constants of operator `impl`s) are not supported; use the type itself, or a module-level `const` or a constant of a plain `impl Struct` block"#,
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
        r#"1:9: `Vec` values are not supported; take `&[f64]`, `&Vec<f64>` or `&mut [f64]` parameters and write results into a `&mut [f64]`; in the body, `Vec<f64>` from `vec!`, `collect` or `to_vec` is a local array"#,
    ),
    (
        "row_as_number",
        r#"fn f(m: &[[f64; 2]]) -> f64 {
    m[0] * 2.0
}"#,
        r#"2:5: a row of an array of arrays is not a number: index its element (`m[i][j]`), borrow it (`&m[i]`) or copy it (`let row = m[i];`)"#,
    ),
    (
        "collect_into_other",
        r#"fn f(x: &[f64]) -> f64 {
    let n: usize = x.iter().map(|a| *a as usize).collect();
    n as f64
}"#,
        r#"2:20: `collect` calls into anything but a `Vec<f64>` are not supported; collect `f64` items: `.collect::<Vec<f64>>()`, or `let v: Vec<f64> = ....collect();`"#,
    ),
    (
        "collect_of_integers",
        r#"fn f(n: usize) -> f64 {
    let v: Vec<f64> = (0..n).collect();
    v[0]
}"#,
        r#"2:24: vectors of `usize` (a `Vec` holds `f64` here) are not supported; `map` the items to `f64`: `.map(|i| i as f64)`"#,
    ),
    (
        "vec_push",
        r#"fn f(x: &[f64]) -> f64 {
    let mut v = vec![0.0; 2];
    v.push(x[0]);
    v[2]
}"#,
        r#"3:7: calls of `push` (a `Vec` here keeps the length it was made with) are not supported; to `push`, make it with `Vec::with_capacity(n)` (`n` the most it will hold); else make it with its final length (`vec![0.0; n]`, `collect()`) and assign its elements (`v[i] = x`)"#,
    ),
    (
        "comparator_by_branches",
        r#"fn f(x: &[f64]) -> f64 {
    x.iter().copied().max_by(|a, b| if a < b { std::cmp::Ordering::Less } else { std::cmp::Ordering::Greater }).unwrap()
}"#,
        r#"2:37: comparators other than `|a, b| A.partial_cmp(B).unwrap()`, `.unwrap_or(Ordering::..)` and `A.total_cmp(B)` are not supported; compare numbers computed from `a` and `b`: `.max_by(|a, b| a.abs().partial_cmp(&b.abs()).unwrap())`"#,
    ),
    (
        "max_by_kept",
        r#"fn f(x: &[f64]) -> f64 {
    let m = x.iter().max_by(|a, b| a.total_cmp(b));
    0.0
}"#,
        r#"2:22: `max_by` whose `Option` is kept are not supported; take it apart where it is made: `.max_by(..).unwrap()`, `.expect("...")`, `.unwrap_or(default)`, `.is_some()` or `.is_none()`"#,
    ),
    (
        "max_by_of_mapped_pairs",
        r#"fn f(x: &[f64]) -> f64 {
    x.iter().map(|v| (*v, v * 2.0)).max_by(|a, b| a.1.total_cmp(&b.1)).unwrap().0
}"#,
        r#"2:5: `find`, `max_by`, `min_by`, `reduce` and `last` of windows, chunks, nested pairs or pairs made by `map` are not supported; pick numbers, or pairs straight from `enumerate` / `zip` (`.enumerate().max_by(|a, b| a.1.total_cmp(b.1))`)"#,
    ),
    (
        "rows_sub_slice",
        r#"fn f(m: &[[f64; 2]]) -> f64 {
    m[1..].iter().map(|r| r[0]).sum()
}"#,
        r#"2:5: sub-slices of arrays of arrays (`m[a..b]`) are not supported; index the rows in a loop: `for i in a..b { let row = &m[i]; ... }`"#,
    ),
    (
        "rows_swap",
        r#"fn f(m: &mut [[f64; 2]]) {
    m.swap(0, 1);
}"#,
        r#"2:7: calls of `swap` on an array of arrays are not supported; index its rows (`m[i][j]`, `&m[i]`), iterate over them, or ask its `len()`"#,
    ),
    (
        "chain_of_pairs",
        r#"fn f(x: &[f64]) -> f64 {
    x.iter().enumerate().chain(x.iter().enumerate()).map(|(i, v)| v * i as f64).sum()
}"#,
        r#"2:5: `chain` of anything but two iterators over numbers of one type (slices' elements, ranges) are not supported; chain the slices or ranges first and `map`, `zip` or `enumerate` after, or write two loops"#,
    ),
    (
        "vec_new",
        r#"fn f(x: &[f64]) -> f64 {
    let mut v = Vec::new();
    v.push(x[0]);
    v[0]
}"#,
        r#"2:17: `Vec::new()` (a vector here cannot grow past the array it is given) are not supported; allocate the most elements it will hold: `Vec::with_capacity(n)` and `push`, or build it with `collect()` or `vec![0.0; n]`"#,
    ),
    (
        "growing_vec_as_value",
        r#"fn f(x: &[f64]) -> f64 {
    let mut v = Vec::with_capacity(2);
    v.push(x[0]);
    let w = v;
    w[0]
}"#,
        r#"4:13: vectors that `push` used other than indexed, measured, iterated or passed on (here `v`) are not supported; index it, iterate over it, or pass `&v` to a function taking a slice"#,
    ),
    (
        "if_let_other",
        r#"fn f(x: &[f64]) -> f64 {
    if let [a, b] = x { a + b } else { 0.0 }
}"#,
        r#"2:8: `if let` other than `if let Some(v) = ...` of `find`, `max_by`, `min_by`, `position`, `reduce`, an iterator's `last`/`nth`, or a slice's `first()`/`last()`/`get(k)` are not supported; take the `Option` apart with `.unwrap_or(..)`, `.is_some()`, or test with a `bool` condition"#,
    ),
    (
        "vec_in_a_loop",
        r#"fn f(n: usize) -> f64 {
    let mut s = 0.0;
    for i in 0..n {
        let v = vec![1.0; i + 1];
        s += v[i];
    }
    s
}"#,
        r#"4:17: local arrays whose length depends on values computed in a loop or branch (a loop counter, an element) are not supported; compute the length from parameters, their `len()` and constants, or allocate the largest size once at the top of the function and use a part of it"#,
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
    h(|y: f64| y * 2.0, x)
}
fn h(a: f64, x: f64) -> f64 {
    a + x
}"#,
        r#"2:7: closures are supported only as the argument of `map`, `filter` or `fold` on an iterator, or bound with `let` and called; write a `fn` item and call it"#,
    ),
    (
        "closure_copied",
        r#"fn f(x: f64) -> f64 {
    let g = |y: f64| y * 2.0;
    let h = g;
    h(x)
}"#,
        r#"3:13: closures used other than by a call (here `g`) are not supported; call it where it is needed: `g(...)`, or write a `fn` item"#,
    ),
    (
        "closure_move_mut",
        r#"fn f(x: &[f64]) -> f64 {
    let mut count = 0.0;
    let s: f64 = x.iter().map(move |v| {
        count += 1.0;
        v * 2.0
    }).sum();
    s + count
}"#,
        r#"4:9: `move` closures that assign a captured variable are not supported; drop `move` (the closure then updates the variable itself), or use a `for` loop"#,
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
        "match_float",
        r#"fn f(x: f64) -> f64 {
    match x {
        _ => 2.0,
    }
}"#,
        r#"2:11: `match` on `f64` values are not supported; match on integers or `bool`, or use `if` / `else if` / `else` with comparisons"#,
    ),
    (
        "match_struct_pattern",
        r#"fn f(n: i64) -> i64 {
    match n {
        (a, b) => a,
        _ => 0,
    }
}"#,
        r#"3:9: patterns of this kind in `match` are not supported; use literals, constants, ranges (`1..=5`), `|`, a name or `_`"#,
    ),
    (
        "f32",
        r#"fn f(x: f32) -> f32 {
    x
}"#,
        r#"1:9: `f32` values are not supported; use `f64`"#,
    ),
    (
        "int_pow_variable",
        r#"fn f(n: i64, k: u32) -> i64 {
    n.pow(k)
}"#,
        r#"2:11: integer `pow` with an exponent that is not a literal are not supported; multiply in a loop, or compute in `f64` with `powi`"#,
    ),
    (
        "shift_float",
        r#"fn f(x: f64) -> f64 {
    x << 2
}"#,
        r#"2:5: mismatched types: expected `i64`, found `f64`; shift integers (of any integer type)"#,
    ),
    (
        "subslice",
        r#"fn f(x: &[f64]) -> f64 {
    let t = x[1..];
    t[0]
}"#,
        r#"2:15: sub-slices (`x[a..b]`) other than iterated, bound with `let` or passed to a function (`x[a..b].iter()`, `let v = &x[a..];`, `f(&x[a..])`) are not supported; pass the whole slice and an offset, and index `x[offset + i]`"#,
    ),
    (
        "window_as_value",
        r#"fn f(x: &[f64]) -> f64 {
    x.windows(2).map(|w| { let v = w; v[0] }).sum()
}"#,
        r#"2:36: windows, chunks and sub-slices used other than indexed, measured with `len()` or iterated (here `w`) are not supported; index its elements (`w[j]`) or pass the slice and the start index"#,
    ),
    (
        "chunk_method",
        r#"fn f(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for c in x.chunks(2) {
        s += c.first();
    }
    s
}"#,
        r#"4:16: methods of windows and chunks other than `len` and `is_empty` (here `first`) are not supported; index it (`w[j]`), take `w.len()`, or iterate over it (`w.iter()`)"#,
    ),
    (
        "bool_arith",
        r#"fn f(a: bool, b: bool) -> bool {
    a + b
}"#,
        r#"2:7: arithmetic operators on `bool` values are not supported; convert with `if b { 1.0 } else { 0.0 }` first"#,
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
    (
        "const_int_array",
        r#"const K: [usize; 3] = [1, 2, 3];
fn f(i: usize) -> usize {
    K[i]
}"#,
        r#"1:11: a constant array of integers is not supported yet: the IR's data tables hold `f64` values; make it a `[f64; N]` of the same values and convert an element with `as usize`"#,
    ),
    (
        "const_array_2d",
        r#"const M: [[f64; 2]; 2] = [[1.0, 2.0], [3.0, 4.0]];
fn f() -> f64 {
    1.0
}"#,
        r#"1:11: constant arrays of arrays are not supported; flatten it to one `[f64; R * C]` and index it `[r * C + c]`"#,
    ),
    (
        "const_array_call",
        r#"const Y: [f64; 2] = [1.0, g()];
fn g() -> f64 {
    1.0
}"#,
        r#"1:27: values of constant arrays other than constant `f64` expressions are not supported; write float literals, `const`s and arithmetic on them (`2.0 * PI`, `N as f64`)"#,
    ),
    (
        "const_array_copy",
        r#"const Y: [f64; 2] = [1.0, 2.0];
const Z: [f64; 2] = Y;
fn f() -> f64 {
    Z[0]
}"#,
        r#"2:21: constant arrays given by other expressions are not supported; write the values out, `[0.14, 0.18, ...]`, or repeat one, `[0.0; N]`"#,
    ),
    (
        "slice_ret",
        r#"fn f(x: &[f64]) -> &[f64] {
    x
}"#,
        r#"1:20: slice results are not supported; take a `&mut [f64]` parameter and write the result into it"#,
    ),
    (
        "array_ret",
        r#"fn f(x: f64) -> [f64; 1] {
    [x]
}"#,
        r#"1:17: array results other than a free function's `[f64; N]` (`N` from 2 to 64, a literal or a `const`) are not supported; return a tuple (`-> (f64, f64)`, destructured by the caller: `let (a, b) = f(x);`), or take a `&mut [f64]` parameter and write the result into it"#,
    ),
    (
        "tuple_param",
        r#"fn f(t: (f64, f64)) -> f64 {
    t.0
}"#,
        r#"1:9: tuple-typed parameters and fields are not supported; pass the components separately, and destructure tuple results with `let (a, b) = f(...)`"#,
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
        "not_usize",
        r#"fn f(n: usize) -> usize {
    !n
}"#,
        r#"2:5: `!` on `usize` values (the result is above `i64::MAX`, which the IR cannot hold) are not supported; use `^` with the mask you need, or a signed type"#,
    ),
    (
        "map_of_a_number",
        r#"fn f(x: &[f64]) -> f64 {
    x.iter().map(2.0).sum::<f64>()
}"#,
        r#"2:5: `map` calls without one closure written in place or a function's name are not supported; write the closure in the call: `.map(|v| ...)`"#,
    ),
    (
        "fold_with_a_number",
        r#"fn f(x: &[f64]) -> f64 {
    x.iter().fold(0.0, 1.0)
}"#,
        r#"2:24: `fold` calls without a closure written in place or a function's name are not supported; write the closure in the call: `.fold(0.0, |acc, v| acc + v)`"#,
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
        "nested_deep",
        r#"fn f(x: f64) -> f64 {
    ((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((x))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))
}"#,
        r#"2:100: brackets nested more than 96 deep are not supported; split the expression with `let` bindings or helper functions"#,
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
        r#"2:14: `map` adapters before `enumerate`, `zip`, `rev`, `step_by`, `skip` or `take` are not supported; put `map`, `filter`, `take_while` and `skip_while` last in the chain, or use a `for` loop"#,
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
