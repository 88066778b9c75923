//! Custom and retroactive rules, and the rule sets that hold them.
//!
//! A custom rule covers a scalar function — an IR function or an extern whose one result is
//! `f64` — and replaces derivation for it. It is given as a *partials function*:
//! `(x1, …, xn, y) -> (∂y/∂x1, …, ∂y/∂xn)`, where `y` is the primal result (so a rule for `exp`
//! can return `y` itself). Partials are of the `f64` parameters only; parameters of other types
//! (integers, booleans, read-only slices) are passed to the partials function as they are, and
//! must not be differentiated. That one function is both rules: the frule is
//! `ẏ = Σ ∂i·ẋi`, the rrule's pullback is `x̄i += ∂i·ȳ`, and what the pullback captures is
//! exactly the partials of the active operands — as for the primitives (see
//! [`linearize`](crate::linearize)). The partials function is IR (text, the builder, or a call of
//! a native Rust callback), so derivatives stay IR.
//!
//! Rules are registered by *name*, after the fact, for functions declared elsewhere: a
//! [`RuleSet`] is a stack of levels. [`RuleSet::register`] adds to the closest level,
//! [`RuleSet::import`] puts another set's levels below it; lookup takes the closest level that
//! has a rule, so a closer registration overrides an imported one, and two registrations for one
//! function at the same level are an error naming both.

use jitdiff_ir::{ExternArg, ExternRegistry, Module, RuntimeValue, Type, parse_module};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A rule-set error.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RuleError {
    /// Two rules for one function at the same level.
    #[error(
        "two rules for @{function} at the same level: one from {first}, one from {second}; remove one, or register the preferred one at a closer level"
    )]
    Duplicate {
        /// The function.
        function: String,
        /// Where the first came from.
        first: String,
        /// Where the second came from.
        second: String,
    },
    /// The rule's IR text does not parse.
    #[error("rule for @{function} ({origin}): its IR does not parse: {message}")]
    BadIr {
        /// The function.
        function: String,
        /// Where the rule came from.
        origin: String,
        /// The parse error.
        message: String,
    },
    /// The rule's module has no partials function of that name.
    #[error("rule ({origin}): its module has no function or extern @{partials}")]
    MissingPartials {
        /// Where the rule came from.
        origin: String,
        /// The name looked for.
        partials: String,
    },
}

/// A native partials callback: `(x, y, partials)` writes `∂y/∂x[i]` into `partials[i]`.
pub type PartialsCallback = dyn Fn(&[f64], f64, &mut [f64]) + Send + Sync;

/// One custom rule: the partials of a scalar function, as IR.
///
/// ```
/// use jitdiff_rules::ScalarRule;
/// // softplus(x) = ln(1 + e^x), with the stable derivative 1 / (1 + e^-x).
/// let rule = ScalarRule::from_ir("func @softplus_partials(x: f64, y: f64) -> f64 {
/// entry:
///     m = fneg x
///     e = exp m
///     one = fconst 1.0
///     d = fadd one, e
///     s = fdiv one, d
///     ret s
/// }", "softplus_partials", "my crate").unwrap();
/// assert_eq!(rule.partials(), "softplus_partials");
/// ```
#[derive(Clone)]
pub struct ScalarRule {
    module: Module,
    partials: String,
    origin: String,
    /// For a native rule: the extern implementing the partials.
    native: Option<(String, Arc<PartialsCallback>, usize)>,
}

impl std::fmt::Debug for ScalarRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScalarRule").field("partials", &self.partials).field("origin", &self.origin).finish()
    }
}

impl ScalarRule {
    /// A rule whose partials function `@partials` is in the IR module `text` (which may hold
    /// helper functions and extern declarations too). `origin` names where the rule comes from,
    /// for error messages.
    pub fn from_ir(text: &str, partials: &str, origin: &str) -> Result<ScalarRule, RuleError> {
        let module = parse_module(text).map_err(|e| RuleError::BadIr {
            function: partials.into(),
            origin: origin.into(),
            message: e.to_string(),
        })?;
        ScalarRule::from_module(module, partials, origin)
    }

    /// A rule whose partials function `@partials` is in `module` (e.g. built with the builder).
    pub fn from_module(module: Module, partials: &str, origin: &str) -> Result<ScalarRule, RuleError> {
        if module.func_id(partials).is_none() && module.extern_id(partials).is_none() {
            return Err(RuleError::MissingPartials { origin: origin.into(), partials: partials.into() });
        }
        Ok(ScalarRule { module, partials: partials.into(), origin: origin.into(), native: None })
    }

    /// A rule for a function of `arity` `f64` parameters whose partials a Rust callback
    /// computes. The derivative IR calls it as an extern (registered by
    /// [`RuleSet::register_externs`]).
    ///
    /// ```
    /// use jitdiff_rules::ScalarRule;
    /// // d/dx x^3 = 3 x^2
    /// let rule = ScalarRule::native(1, |x, _y, d| d[0] = 3.0 * x[0] * x[0], "tests");
    /// assert!(rule.partials().starts_with("rule_native_"));
    /// ```
    pub fn native(
        arity: usize,
        partials: impl Fn(&[f64], f64, &mut [f64]) + Send + Sync + 'static,
        origin: &str,
    ) -> ScalarRule {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let name = format!("rule_native_{}", NEXT.fetch_add(1, Ordering::Relaxed));
        let mut module = Module::new();
        module.externs.push(jitdiff_ir::ExternDecl {
            name: name.clone(),
            params: vec![Type::F64; arity + 1],
            returns: vec![Type::F64; arity],
            derivative: None,
        });
        ScalarRule {
            module,
            partials: name.clone(),
            origin: origin.into(),
            native: Some((name, Arc::new(partials), arity)),
        }
    }

    /// The name of the partials function (or extern) in [`ScalarRule::module`].
    pub fn partials(&self) -> &str {
        &self.partials
    }

    /// The module holding the partials function and what it calls.
    pub fn module(&self) -> &Module {
        &self.module
    }

    /// Where the rule came from.
    pub fn origin(&self) -> &str {
        &self.origin
    }
}

/// A stack of rule levels: index 0 is the closest (this set's own registrations).
///
/// ```
/// use jitdiff_rules::{RuleSet, ScalarRule};
/// let mut library = RuleSet::new();
/// library.register("cube", ScalarRule::native(1, |x, _, d| d[0] = 3.0 * x[0] * x[0], "library")).unwrap();
/// let mut app = RuleSet::new();
/// app.import(&library).unwrap();
/// app.register("cube", ScalarRule::native(1, |x, _, d| d[0] = 3.0 * x[0].powi(2), "app")).unwrap();
/// assert_eq!(app.lookup("cube").unwrap().origin(), "app"); // the closer one wins
/// assert!(app.register("cube", ScalarRule::native(1, |_, _, d| d[0] = 0.0, "again")).is_err());
/// ```
#[derive(Clone, Debug, Default)]
pub struct RuleSet {
    levels: Vec<BTreeMap<String, ScalarRule>>,
}

impl RuleSet {
    /// An empty set.
    pub fn new() -> RuleSet {
        RuleSet { levels: vec![BTreeMap::new()] }
    }

    /// Register `rule` for the function or extern named `function` at this set's own level.
    pub fn register(&mut self, function: &str, rule: ScalarRule) -> Result<&mut RuleSet, RuleError> {
        if self.levels.is_empty() {
            self.levels.push(BTreeMap::new());
        }
        insert(&mut self.levels[0], function, rule)?;
        Ok(self)
    }

    /// Put `other`'s levels below this set's own: its own rules become one level further away
    /// than this set's, and so on. Two imports that both bring a rule for the same function at
    /// the same level are an error.
    pub fn import(&mut self, other: &RuleSet) -> Result<&mut RuleSet, RuleError> {
        if self.levels.is_empty() {
            self.levels.push(BTreeMap::new());
        }
        for (depth, level) in other.levels.iter().enumerate() {
            while self.levels.len() < depth + 2 {
                self.levels.push(BTreeMap::new());
            }
            for (function, rule) in level {
                insert(&mut self.levels[depth + 1], function, rule.clone())?;
            }
        }
        Ok(self)
    }

    /// The closest rule for `function`.
    pub fn lookup(&self, function: &str) -> Option<&ScalarRule> {
        self.levels.iter().find_map(|level| level.get(function))
    }

    /// Whether the set has no rules.
    pub fn is_empty(&self) -> bool {
        self.levels.iter().all(BTreeMap::is_empty)
    }

    /// Register the externs of native rules (see [`ScalarRule::native`]) in `registry`, so
    /// compiled derivatives and the interpreter can call them.
    pub fn register_externs(&self, registry: &mut ExternRegistry) {
        for rule in self.levels.iter().flat_map(|l| l.values()) {
            let Some((name, callback, arity)) = &rule.native else { continue };
            let (callback, arity) = (callback.clone(), *arity);
            registry.register_closure(
                name.clone(),
                vec![Type::F64; arity + 1],
                vec![Type::F64; arity],
                move |args: &mut [ExternArg<'_>]| {
                    let values: Vec<f64> = args.iter().map(|a| a.as_f64().unwrap_or(f64::NAN)).collect();
                    let mut partials = vec![0.0; arity];
                    callback(&values[..arity], values[arity], &mut partials);
                    Ok(partials.into_iter().map(RuntimeValue::F64).collect())
                },
            );
        }
    }
}

fn insert(level: &mut BTreeMap<String, ScalarRule>, function: &str, rule: ScalarRule) -> Result<(), RuleError> {
    if let Some(existing) = level.get(function) {
        return Err(RuleError::Duplicate {
            function: function.into(),
            first: existing.origin.clone(),
            second: rule.origin.clone(),
        });
    }
    level.insert(function.into(), rule);
    Ok(())
}
