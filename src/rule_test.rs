//! `test_rule`: check a differentiation rule at random points — the idea of Mooncake's
//! `test_rule` and ChainRulesTestUtils. For a scalar function `@f(x1, …, xn) -> f64` (an IR
//! function or an extern), called through a wrapper so that a custom rule registered for it
//! applies exactly as in user code, each point checks:
//!
//! 1. **primal**: the derived forward function's value equals the function's;
//! 2. **frule**: the JVP in a random direction matches a central finite difference;
//! 3. **rrule**: the reverse-mode gradient satisfies the dot-product identity
//!    `ȳ · (J ẋ) = (Jᵀ ȳ) · ẋ` against the JVP.
//!
//! Without a custom rule the built-in primitive rules of the function's body are what is tested
//! (the suite does this for every primitive).

use crate::ad::{derive_forward_with_rules, derive_reverse_with_rules};
use crate::error::Error;
use crate::gradient::with_rule_externs;
use crate::rng::SplitMix64;
use jitdiff_ir::{ArgValue, ExternRegistry, Interpreter, Module, Tape, Type, parse_module, print_module};
use jitdiff_rules::RuleSet;

/// Where and how hard [`test_rule`] looks.
#[derive(Clone, Debug)]
pub struct RuleTestConfig {
    /// Random points to check.
    pub points: usize,
    /// Seed of the point generator.
    pub seed: u64,
    /// Per argument, the interval points are drawn from (the function's smooth domain).
    pub domain: Vec<(f64, f64)>,
    /// Largest accepted relative difference between the JVP and the central difference.
    pub fd_tolerance: f64,
    /// Largest accepted relative violation of the dot-product identity.
    pub identity_tolerance: f64,
}

impl RuleTestConfig {
    /// 100 points from `domain`, tolerances 1e-6 (finite differences) and 1e-10 (identity).
    pub fn new(domain: Vec<(f64, f64)>) -> RuleTestConfig {
        RuleTestConfig { points: 100, seed: 1, domain, fd_tolerance: 1e-6, identity_tolerance: 1e-10 }
    }
}

/// What [`test_rule`] measured over all points.
#[derive(Clone, Debug, PartialEq)]
pub struct RuleTestReport {
    /// Points checked.
    pub points: usize,
    /// The worst relative JVP vs finite-difference error.
    pub worst_fd_error: f64,
    /// The worst relative violation of the dot-product identity.
    pub worst_identity_error: f64,
}

/// Which check of [`test_rule`] failed, where, and by how much.
#[derive(Debug, thiserror::Error)]
pub enum RuleTestError {
    /// The function cannot be tested: wrong signature, derivation or evaluation failed.
    #[error("cannot test @{function}: {message}")]
    Setup {
        /// The function under test.
        function: String,
        /// What went wrong.
        message: String,
    },
    /// Check 1 failed.
    #[error(
        "primal check failed for @{function} at x = {point:?}: the derivative computes {derived}, the function {expected}"
    )]
    Primal {
        /// The function under test.
        function: String,
        /// The point.
        point: Vec<f64>,
        /// The value the derived function computed.
        derived: f64,
        /// The function's value.
        expected: f64,
    },
    /// Check 2 failed.
    #[error(
        "frule check failed for @{function} at x = {point:?}, direction {direction:?}: JVP {jvp} vs central difference {fd}, relative error {error:e} > {tolerance:e}"
    )]
    Jvp {
        /// The function under test.
        function: String,
        /// The point.
        point: Vec<f64>,
        /// The direction.
        direction: Vec<f64>,
        /// Forward mode's directional derivative.
        jvp: f64,
        /// The central finite difference.
        fd: f64,
        /// Their relative difference.
        error: f64,
        /// The tolerance it exceeded.
        tolerance: f64,
    },
    /// Check 3 failed.
    #[error(
        "rrule check failed for @{function} at x = {point:?}: dot-product identity <ybar, J xdot> = {forward} but <J^T ybar, xdot> = {reverse}, relative error {error:e} > {tolerance:e}"
    )]
    DotProduct {
        /// The function under test.
        function: String,
        /// The point.
        point: Vec<f64>,
        /// `ȳ · (J ẋ)` from forward mode.
        forward: f64,
        /// `(Jᵀ ȳ) · ẋ` from reverse mode.
        reverse: f64,
        /// Their relative difference.
        error: f64,
        /// The tolerance it exceeded.
        tolerance: f64,
    },
}

const WRAPPER: &str = "rule_test_wrapper";

/// Check the rule that differentiates calls of `@function` (a function or extern of `module`,
/// `f64` parameters, one `f64` result): the custom rule in `rules` if there is one, else its
/// derivation from the body. `externs` implements the module's externs.
///
/// ```
/// use jitdiff::{test_rule, RuleTestConfig, RuleSet};
/// use jitdiff::ir::{parse_module, ExternRegistry};
/// let m = parse_module("func @f(x: f64) -> f64 {\nentry:\n    y = sin x\n    ret y\n}").unwrap();
/// let report = test_rule(&m, "f", &RuleSet::new(), &ExternRegistry::new(), &RuleTestConfig::new(vec![(-3.0, 3.0)]))
///     .unwrap();
/// assert!(report.worst_fd_error < 1e-8);
/// ```
pub fn test_rule(
    module: &Module,
    function: &str,
    rules: &RuleSet,
    externs: &ExternRegistry,
    config: &RuleTestConfig,
) -> Result<RuleTestReport, Error> {
    check_rule(module, function, rules, externs, config).map_err(Error::from)
}

fn check_rule(
    module: &Module,
    function: &str,
    rules: &RuleSet,
    externs: &ExternRegistry,
    config: &RuleTestConfig,
) -> Result<RuleTestReport, RuleTestError> {
    let setup = |message: String| RuleTestError::Setup { function: function.into(), message };
    let (params, returns) = match (module.func_id(function), module.extern_id(function)) {
        (Some(id), _) => (module.func(id).param_types(), module.func(id).returns.clone()),
        (None, Some(id)) => (module.externs[id.index()].params.clone(), module.externs[id.index()].returns.clone()),
        (None, None) => return Err(setup("the module has no such function or extern".into())),
    };
    let n = params.len();
    if n == 0 || params.iter().any(|&t| t != Type::F64) || returns != [Type::F64] {
        return Err(setup("test_rule takes functions of f64 parameters with one f64 result".into()));
    }
    if config.domain.len() != n {
        return Err(setup(format!("the domain has {} intervals for {n} parameters", config.domain.len())));
    }
    let names: Vec<String> = (0..n).map(|i| format!("x{i}")).collect();
    let wrapper_text = format!(
        "{}\nfunc @{WRAPPER}({}) -> f64 {{\nentry:\n    y = call @{function}({})\n    ret y\n}}\n",
        print_module(module),
        names.iter().map(|x| format!("{x}: f64")).collect::<Vec<_>>().join(", "),
        names.join(", ")
    );
    let wrapped = parse_module(&wrapper_text).map_err(|e| setup(e.to_string()))?;
    let wrt = vec![true; n];
    let ad = |e: crate::ad::AdError| setup(Error::from(e).to_string());
    let forward = derive_forward_with_rules(&wrapped, WRAPPER, &wrt, 1, rules).map_err(ad)?;
    let reverse = derive_reverse_with_rules(&wrapped, WRAPPER, &wrt, rules).map_err(ad)?;
    let value_and_grad = reverse.value_and_grad.clone().expect("an f64 result");
    let externs = with_rule_externs(externs, rules);

    let run = |m: &Module, name: &str, args: Vec<f64>| -> Result<Vec<f64>, RuleTestError> {
        let mut args: Vec<ArgValue> = args.into_iter().map(ArgValue::F64).collect();
        let out = Interpreter::new(m)
            .with_externs(&externs)
            .call_with_tape(name, &mut args, &mut Tape::new())
            .map_err(|e| setup(e.to_string()))?;
        Ok(out.iter().map(|v| v.as_f64().unwrap_or(f64::NAN)).collect())
    };
    let relative = |a: f64, b: f64, floor: f64| (a - b).abs() / a.abs().max(b.abs()).max(floor);

    let mut rng = SplitMix64::new(config.seed);
    let mut report = RuleTestReport { points: 0, worst_fd_error: 0.0, worst_identity_error: 0.0 };
    for _ in 0..config.points {
        let x: Vec<f64> = config.domain.iter().map(|&(lo, hi)| rng.uniform_in(lo, hi)).collect();
        let direction: Vec<f64> = (0..n).map(|_| rng.uniform_in(-1.0, 1.0)).collect();
        let cotangent = rng.uniform_in(0.5, 2.0);

        // 1. primal
        let expected = run(&wrapped, WRAPPER, x.clone())?[0];
        let mut jvp_args = x.clone();
        jvp_args.extend(&direction);
        let jvp_out = run(&forward.module, &forward.name, jvp_args)?;
        let (derived, jvp) = (jvp_out[0], jvp_out[1]);
        if derived.to_bits() != expected.to_bits() && !(derived.is_nan() && expected.is_nan()) {
            return Err(RuleTestError::Primal { function: function.into(), point: x, derived, expected });
        }

        // 2. frule vs central differences, step scaled to the point.
        let scale = x.iter().fold(1.0f64, |m, v| m.max(v.abs()));
        let h = f64::EPSILON.cbrt() * scale;
        let shifted = |sign: f64| x.iter().zip(&direction).map(|(xi, di)| xi + sign * h * di).collect::<Vec<f64>>();
        let fd = (run(&wrapped, WRAPPER, shifted(1.0))?[0] - run(&wrapped, WRAPPER, shifted(-1.0))?[0]) / (2.0 * h);
        let fd_error = relative(jvp, fd, 1e-6);
        if fd_error.is_nan() || fd_error > config.fd_tolerance {
            let tolerance = config.fd_tolerance;
            return Err(RuleTestError::Jvp {
                function: function.into(),
                point: x,
                direction,
                jvp,
                fd,
                error: fd_error,
                tolerance,
            });
        }

        // 3. rrule: dot-product identity against the frule.
        let vg = run(&reverse.module, &value_and_grad, x.clone())?;
        let forward_side = cotangent * jvp;
        let reverse_side: f64 = vg[1..].iter().zip(&direction).map(|(g, d)| cotangent * g * d).sum();
        let identity_error = relative(forward_side, reverse_side, 1e-300);
        if identity_error.is_nan() || identity_error > config.identity_tolerance {
            return Err(RuleTestError::DotProduct {
                function: function.into(),
                point: x,
                forward: forward_side,
                reverse: reverse_side,
                error: identity_error,
                tolerance: config.identity_tolerance,
            });
        }
        report.points += 1;
        report.worst_fd_error = report.worst_fd_error.max(fd_error);
        report.worst_identity_error = report.worst_identity_error.max(identity_error);
    }
    Ok(report)
}
