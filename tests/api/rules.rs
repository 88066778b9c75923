//! Rules: every built-in primitive rule passes `test_rule`; a wrong rule fails it with a message
//! that says which check broke and by how much; custom, retroactive and overriding rules are
//! used; duplicates and missing rules are errors naming what they must.

use jitdiff::ir::{ExternRegistry, Opcode, parse_module, print_module};
use jitdiff::jit::{Arg, JitOptions};
use jitdiff::{GradientFn, GradientMode, RuleError, RuleSet, RuleTestConfig, RuleTestError, ScalarRule, test_rule};

/// A one-instruction function `@f` applying `op` to its parameters.
fn primitive(op: &str, arity: usize) -> jitdiff::ir::Module {
    let params = ["a", "b"][..arity].iter().map(|p| format!("{p}: f64")).collect::<Vec<_>>().join(", ");
    let operands = ["a", "b"][..arity].join(", ");
    parse_module(&format!("func @f({params}) -> f64 {{\nentry:\n    r = {op} {operands}\n    ret r\n}}")).unwrap()
}

/// The smooth domain chosen for each float primitive (per operand).
fn domain(op: Opcode) -> Vec<(f64, f64)> {
    use Opcode::*;
    let wide = (-3.0, 3.0);
    let positive = (0.2, 4.0);
    match op {
        FAdd | FSub | FMul => vec![wide, wide],
        FDiv => vec![wide, (0.5, 3.0)],
        // Away from b == 0, where the strong zero cuts the product off.
        FMulSz => vec![wide, (0.2, 3.0)],
        FNeg | Sin | Cos | Tanh | Atan | Sinh | Cosh | Exp | Expm1 => vec![wide],
        Tan => vec![(-1.2, 1.2)],
        Sqrt | Ln => vec![positive],
        Log1p => vec![(-0.8, 3.0)],
        Asin | Acos | Atanh => vec![(-0.9, 0.9)],
        Asinh => vec![wide],
        Acosh => vec![(1.1, 4.0)],
        // Away from the kink at 0 and the tie a == b, where the conventions apply (tested below).
        Abs => vec![(0.1, 3.0)],
        Min | Max => vec![(-3.0, -0.1), (0.1, 3.0)],
        Pow => vec![positive, (-2.0, 2.0)],
        Atan2 | Hypot => vec![(0.2, 3.0), (-3.0, 3.0)],
        // Between the jumps: x / y in (1.05, 1.95).
        FRem => vec![(2.1, 3.9), (2.0, 2.0)],
        _ => vec![],
    }
}

#[test]
fn every_builtin_float_rule_passes_test_rule_at_100_points() {
    let mut tested = vec![];
    for info in jitdiff::ir::OP_TABLE {
        let d = domain(info.opcode);
        if d.is_empty() {
            continue;
        }
        let module = primitive(info.spelling, d.len());
        let report = test_rule(&module, "f", &RuleSet::new(), &ExternRegistry::new(), &RuleTestConfig::new(d))
            .unwrap_or_else(|e| panic!("{}: {e}", info.spelling));
        assert_eq!(report.points, 100);
        tested.push(info.spelling);
    }
    // powi (integer exponent) and the piecewise-constant ops (zero derivative everywhere).
    for (text, dom) in [
        ("func @f(x: f64) -> f64 {\nentry:\n    n = iconst 3\n    r = powi x, n\n    ret r\n}", vec![(-2.0, 2.0)]),
        ("func @f(x: f64) -> f64 {\nentry:\n    n = iconst -2\n    r = powi x, n\n    ret r\n}", vec![(0.5, 2.0)]),
        ("func @f(x: f64) -> f64 {\nentry:\n    r = floor x\n    s = fadd r, x\n    ret s\n}", vec![(0.1, 0.9)]),
        ("func @f(x: f64) -> f64 {\nentry:\n    r = ceil x\n    s = fmul r, x\n    ret s\n}", vec![(0.1, 0.9)]),
        ("func @f(x: f64) -> f64 {\nentry:\n    r = sign x\n    s = fmul r, x\n    ret s\n}", vec![(0.1, 2.0)]),
        (
            "func @f(x: f64, y: f64) -> f64 {\nentry:\n    c = fcmp lt x, y\n    r = select c, x, y\n    ret r\n}",
            vec![(-2.0, -0.1), (0.1, 2.0)],
        ),
    ] {
        let module = parse_module(text).unwrap();
        test_rule(&module, "f", &RuleSet::new(), &ExternRegistry::new(), &RuleTestConfig::new(dom))
            .unwrap_or_else(|e| panic!("{text}: {e}"));
    }
    assert!(tested.len() >= 25, "tested only {tested:?}");
}

const SOFTPLUS: &str = "
; softplus(x) = ln(1 + e^x): the derived derivative e^x / (1 + e^x) is inf / inf = NaN for large x.
func @softplus(x: f64) -> f64 {
entry:
    e = exp x
    r = log1p e
    ret r
}
func @loss(x: f64) -> f64 {
entry:
    s = call @softplus(x)
    two = fconst 2.0
    r = fmul two, s
    ret r
}";

/// The stable rule: d/dx softplus(x) = 1 / (1 + e^-x).
fn stable_softplus_rule(origin: &str) -> ScalarRule {
    ScalarRule::from_ir(
        "func @softplus_partials(x: f64, y: f64) -> f64 {
entry:
    m = fneg x
    e = exp m
    one = fconst 1.0
    d = fadd one, e
    s = fdiv one, d
    ret s
}",
        "softplus_partials",
        origin,
    )
    .unwrap()
}

#[test]
fn a_wrong_rule_fails_test_rule_naming_the_check_and_the_error() {
    let module = parse_module(SOFTPLUS).unwrap();
    // Deliberately wrong: the derivative of softplus is not e^x.
    let wrong = ScalarRule::from_ir(
        "func @bad(x: f64, y: f64) -> f64 {\nentry:\n    e = exp x\n    ret e\n}",
        "bad",
        "a deliberate mistake",
    )
    .unwrap();
    let mut rules = RuleSet::new();
    rules.register("softplus", wrong).unwrap();
    let err = test_rule(&module, "softplus", &rules, &ExternRegistry::new(), &RuleTestConfig::new(vec![(-3.0, 3.0)]))
        .unwrap_err();
    let message = err.to_string();
    assert!(
        matches!(&err, jitdiff::Error::RuleTest(e) if matches!(**e, RuleTestError::Jvp { error, .. } if error > 1e-3)),
        "{message}"
    );
    assert!(message.contains("frule check failed") && message.contains("relative error"), "{message}");

    // The right rule passes, and so does derivation.
    let mut good = RuleSet::new();
    good.register("softplus", stable_softplus_rule("tests")).unwrap();
    let config = RuleTestConfig::new(vec![(-5.0, 5.0)]);
    test_rule(&module, "softplus", &good, &ExternRegistry::new(), &config).unwrap();
    test_rule(&module, "softplus", &RuleSet::new(), &ExternRegistry::new(), &config).unwrap();
}

#[test]
fn a_custom_rule_replaces_derivation_in_the_printed_derivative() {
    let module = parse_module(SOFTPLUS).unwrap();
    let mut rules = RuleSet::new();
    rules.register("softplus", stable_softplus_rule("tests")).unwrap();
    let derived = jitdiff::ad::derive_reverse_with_rules(&module, "loss", &[true], &rules).unwrap();
    let printed = print_module(&derived.module);
    assert!(printed.contains("call @softplus_partials("), "{printed}");
    assert!(!printed.contains("func @softplus_fwd"), "softplus was derived anyway:\n{printed}");
    let forward = jitdiff::ad::derive_forward_with_rules(&module, "loss", &[true], 1, &rules).unwrap();
    let printed = print_module(&forward.module);
    assert!(printed.contains("call @softplus_partials(") && !printed.contains("func @softplus_jvp"), "{printed}");
}

#[test]
fn the_stable_rule_gives_the_right_gradient_where_the_derived_one_overflows() {
    let module = parse_module(SOFTPLUS).unwrap();
    let externs = ExternRegistry::new();
    let options = JitOptions::new();
    let derived =
        GradientFn::builder(&module, "loss").wrt_mask(&[true]).gradient_mode(GradientMode::Reverse).build().unwrap();
    let mut grad = [0.0];
    derived.value_and_grad(&mut [Arg::F64(800.0)], &mut grad).unwrap();
    // eˣ overflows and log1p's factor 1/(1 + eˣ) underflows to 0: ∞ · 0, where the answer is 2.
    assert!(!grad[0].is_finite(), "derived gradient at 800: {}", grad[0]);
    // Forward lanes (what Auto takes for one input) multiply log1p's factor with a strong zero:
    // a finite 0, as wrong (docs/rules.md: "NaN with fmul, 0 with fmulsz").
    let auto = GradientFn::builder(&module, "loss").wrt_mask(&[true]).build().unwrap();
    assert_eq!(auto.mode_for(&[Arg::F64(800.0)]), GradientMode::Forward);
    auto.value_and_grad(&mut [Arg::F64(800.0)], &mut grad).unwrap();
    assert_eq!(grad[0], 0.0, "derived gradient at 800 by forward lanes");

    let mut rules = RuleSet::new();
    rules.register("softplus", stable_softplus_rule("tests")).unwrap();
    let ruled = GradientFn::builder(&module, "loss")
        .wrt_mask(&[true])
        .rules(&rules)
        .externs(&externs)
        .options(&options)
        .build()
        .unwrap();
    ruled.value_and_grad(&mut [Arg::F64(800.0)], &mut grad).unwrap();
    assert_eq!(grad[0], 2.0, "2 * sigmoid(800)");
    assert_eq!(ruled.mode_for(&[Arg::F64(800.0)]), GradientMode::Forward);
    let ruled_reverse = GradientFn::builder(&module, "loss")
        .wrt_mask(&[true])
        .rules(&rules)
        .gradient_mode(GradientMode::Reverse)
        .build()
        .unwrap();
    ruled_reverse.value_and_grad(&mut [Arg::F64(800.0)], &mut grad).unwrap();
    assert_eq!(grad[0], 2.0, "2 * sigmoid(800) in reverse mode");
    // And agrees with the derived gradient where both are fine.
    let mut reference = [0.0];
    derived.value_and_grad(&mut [Arg::F64(0.3)], &mut reference).unwrap();
    ruled.value_and_grad(&mut [Arg::F64(0.3)], &mut grad).unwrap();
    assert!((grad[0] - reference[0]).abs() < 1e-15, "{} vs {}", grad[0], reference[0]);
}

/// Bessel J0 and J1 by their power series (accurate for |x| < 8).
fn bessel(order: i32, x: f64) -> f64 {
    let (mut term, mut sum) = (1.0, 0.0);
    let half = x / 2.0;
    for k in 0..40 {
        if k == 0 {
            term = if order == 0 { 1.0 } else { half };
        } else {
            term *= -half * half / (k as f64 * (k + order) as f64);
        }
        sum += term;
    }
    sum
}

extern "C" fn bessel_j0(x: f64) -> f64 {
    bessel(0, x)
}

const BESSEL_USER: &str = "
extern @bessel_j0(f64) -> f64
func @energy(x: f64) -> f64 {
entry:
    j = call @bessel_j0(x)
    r = fmul j, j
    ret r
}";

#[test]
fn a_retroactive_rule_for_an_extern_is_found_and_checked() {
    let module = parse_module(BESSEL_USER).unwrap();
    let mut externs = ExternRegistry::new();
    externs.register_f1("bessel_j0", bessel_j0);
    // Without a rule: an error naming the extern and the call site.
    let err = GradientFn::builder(&module, "energy")
        .wrt_mask(&[true])
        .externs(&externs)
        .options(&JitOptions::new())
        .build()
        .err()
        .unwrap();
    let message = err.to_string();
    assert!(
        message.contains("@bessel_j0") && message.contains("@energy") && message.contains("block entry"),
        "{message}"
    );

    // Registered after the fact, by name, as a native callback: J0' = -J1.
    let mut rules = RuleSet::new();
    rules.register("bessel_j0", ScalarRule::native(1, |x, _, d| d[0] = -bessel(1, x[0]), "special functions")).unwrap();
    let f = GradientFn::builder(&module, "energy")
        .wrt_mask(&[true])
        .rules(&rules)
        .externs(&externs)
        .options(&JitOptions::new())
        .build()
        .unwrap();
    let mut grad = [0.0];
    let x = 1.3;
    f.value_and_grad(&mut [Arg::F64(x)], &mut grad).unwrap();
    let expected = -2.0 * bessel(0, x) * bessel(1, x);
    assert!((grad[0] - expected).abs() < 1e-14, "{} vs {expected}", grad[0]);
    test_rule(&module, "bessel_j0", &rules, &externs, &RuleTestConfig::new(vec![(-6.0, 6.0)])).unwrap();
}

#[test]
fn a_closer_registration_overrides_an_imported_one() {
    let module = parse_module(BESSEL_USER).unwrap();
    let mut externs = ExternRegistry::new();
    externs.register_f1("bessel_j0", bessel_j0);
    let mut library = RuleSet::new();
    library.register("bessel_j0", ScalarRule::native(1, |_, _, d| d[0] = 100.0, "an imported library")).unwrap();
    let mut app = RuleSet::new();
    app.import(&library).unwrap();
    app.register("bessel_j0", ScalarRule::native(1, |x, _, d| d[0] = -bessel(1, x[0]), "the application")).unwrap();
    assert_eq!(app.lookup("bessel_j0").unwrap().origin(), "the application");
    let f = GradientFn::builder(&module, "energy")
        .wrt_mask(&[true])
        .rules(&app)
        .externs(&externs)
        .options(&JitOptions::new())
        .build()
        .unwrap();
    let mut grad = [0.0];
    f.value_and_grad(&mut [Arg::F64(0.7)], &mut grad).unwrap();
    assert!((grad[0] + 2.0 * bessel(0, 0.7) * bessel(1, 0.7)).abs() < 1e-14, "{}", grad[0]);
    // The imported one alone is used when nothing closer exists.
    let mut only_library = RuleSet::new();
    only_library.import(&library).unwrap();
    let g = GradientFn::builder(&module, "energy")
        .wrt_mask(&[true])
        .rules(&only_library)
        .externs(&externs)
        .options(&JitOptions::new())
        .build()
        .unwrap();
    g.value_and_grad(&mut [Arg::F64(0.7)], &mut grad).unwrap();
    assert_eq!(grad[0], 2.0 * bessel(0, 0.7) * 100.0);
}

#[test]
fn two_rules_at_the_same_level_are_an_error_naming_both() {
    let mut rules = RuleSet::new();
    rules.register("softplus", stable_softplus_rule("crate a")).unwrap();
    let err = rules.register("softplus", stable_softplus_rule("crate b")).unwrap_err();
    assert!(matches!(&err, RuleError::Duplicate { first, second, .. } if first == "crate a" && second == "crate b"));
    let message = err.to_string();
    assert!(message.contains("@softplus") && message.contains("crate a") && message.contains("crate b"), "{message}");
    // Two imports bringing rules for one function to the same level, too.
    let (mut a, mut b) = (RuleSet::new(), RuleSet::new());
    a.register("softplus", stable_softplus_rule("crate a")).unwrap();
    b.register("softplus", stable_softplus_rule("crate b")).unwrap();
    let mut app = RuleSet::new();
    app.import(&a).unwrap();
    assert!(app.import(&b).is_err());
}

#[test]
fn an_inactive_call_needs_no_rule() {
    let module = parse_module(
        "extern @bessel_j0(f64) -> f64
func @f(x: f64, c: f64) -> f64 {
entry:
    j = call @bessel_j0(c)
    r = fmul j, x
    ret r
}",
    )
    .unwrap();
    let mut externs = ExternRegistry::new();
    externs.register_f1("bessel_j0", bessel_j0);
    let f = GradientFn::builder(&module, "f")
        .wrt_mask(&[true, false])
        .externs(&externs)
        .options(&JitOptions::new())
        .build()
        .unwrap();
    let mut grad = [0.0];
    f.value_and_grad(&mut [Arg::F64(2.0), Arg::F64(0.5)], &mut grad).unwrap();
    assert_eq!(grad[0], bessel(0, 0.5));
}

#[test]
fn a_rule_with_the_wrong_signature_is_an_error() {
    let module = parse_module(SOFTPLUS).unwrap();
    let mut rules = RuleSet::new();
    let two_partials =
        ScalarRule::from_ir("func @p(x: f64, y: f64) -> f64, f64 {\nentry:\n    ret x, y\n}", "p", "a mismatched rule")
            .unwrap();
    rules.register("softplus", two_partials).unwrap();
    let err = jitdiff::ad::derive_reverse_with_rules(&module, "loss", &[true], &rules).unwrap_err();
    let message = err.to_string();
    assert!(message.contains("@softplus") && message.contains("a mismatched rule"), "{message}");
}

/// A rule for a function with an integer and a slice parameter: partials of its `f64`
/// parameters only, the others passed along; a differentiated slice argument is an error.
const SCALED_POWER: &str = "func @scaled_power(x: f64, n: i64, w: slice) -> f64 {
entry:
    zero = iconst 0
    k = load w, zero
    p = powi x, n
    r = fmul k, p
    ret r
}
func @loss(x: f64, w: slice) -> f64 {
entry:
    three = iconst 3
    r = call @scaled_power(x, three, w)
    ret r
}
";

#[test]
fn a_rule_covers_a_function_with_integer_and_slice_parameters() {
    let module = parse_module(SCALED_POWER).unwrap();
    // ∂/∂x (k xⁿ) = n y / x, written with the integer and the result the partials function gets.
    let rule = ScalarRule::from_ir(
        "func @scaled_power_partials(x: f64, n: i64, w: slice, y: f64) -> f64 {
entry:
    nf = itof n
    a = fmul nf, y
    d = fdiv a, x
    ret d
}",
        "scaled_power_partials",
        "a test",
    )
    .unwrap();
    let mut rules = RuleSet::new();
    rules.register("scaled_power", rule).unwrap();
    let derived = jitdiff::ad::derive_reverse_with_rules(&module, "loss", &[true, false], &rules).unwrap();
    assert!(print_module(&derived.module).contains("call @scaled_power_partials"), "the rule is used");
    for mode in [GradientMode::Reverse, GradientMode::Forward] {
        let f = GradientFn::builder(&module, "loss").wrt(["x"]).rules(&rules).gradient_mode(mode).build().unwrap();
        let mut grad = [0.0];
        let value = f.value_and_grad(&mut [Arg::F64(2.0), Arg::Slice(&[1.5])], &mut grad).unwrap();
        assert_eq!((value, grad[0]), (12.0, 18.0), "{mode:?}: 1.5·2³ and 3·12/2");
    }
    let err = jitdiff::ad::derive_reverse_with_rules(&module, "loss", &[true, true], &rules).unwrap_err();
    let message = err.to_string();
    assert!(message.contains("@scaled_power") && message.contains("differentiated slice"), "{message}");
}
