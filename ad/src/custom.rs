//! Custom rules during a derivation: which calls have one, installing the rule's partials
//! function into the output module (once per rule), and the linearization of such a call — the
//! same [`Linearization::Terms`] a primitive gives, so forward and reverse mode treat a ruled
//! call exactly like a primitive.

use super::error::AdError;
use jitdiff_ir::{Callee, Imm, Module, Opcode, Type, Value};
use jitdiff_rules::{BlockEmitter, Coef, Linearization, RuleSet, ScalarRule, Term};
use rustc_hash::FxHashMap as HashMap;

/// The rules of one derivation and the partials functions installed so far.
pub(super) struct CustomRules<'r> {
    rules: &'r RuleSet,
    installed: HashMap<String, Callee>,
}

impl<'r> CustomRules<'r> {
    pub fn new(rules: &'r RuleSet) -> CustomRules<'r> {
        CustomRules { rules, installed: HashMap::default() }
    }

    /// The rule for `callee` of `source`, if one is registered under its name.
    pub fn rule_for(&self, source: &Module, callee: Callee) -> Option<&'r ScalarRule> {
        if self.rules.is_empty() {
            return None;
        }
        self.rules.lookup(source.callee_name(callee))
    }

    /// Emit the call of `rule`'s partials for a call of `callee` (in `source`) with primal
    /// operands `args` and result `result`, and return the terms of the active operands. The
    /// partials function is copied into `out` the first time.
    #[allow(clippy::too_many_arguments)]
    pub fn linearize_call(
        &mut self,
        out: &mut Module,
        source: &Module,
        callee: Callee,
        rule: &ScalarRule,
        em: &mut BlockEmitter<'_>,
        (args, result, active): (&[Value], Value, &[bool]),
    ) -> Result<Linearization, AdError> {
        let name = source.callee_name(callee).to_string();
        let bad = |message: String| AdError::BadRule { function: name.clone(), origin: rule.origin().into(), message };
        let (params, returns) = source.callee_signature(callee).expect("a verified call");
        if returns != [Type::F64] {
            return Err(bad("custom rules cover functions with one f64 result".into()));
        }
        // Partials are of the f64 parameters; the others (integers, booleans, read-only slices)
        // are passed to the partials function as they are and must not be differentiated.
        let floats: Vec<usize> = (0..params.len()).filter(|&i| params[i] == Type::F64).collect();
        if let Some(i) = (0..params.len()).find(|&i| active[i] && params[i] != Type::F64) {
            return Err(bad(format!(
                "argument {i} is a differentiated {}; a custom rule gives partials of f64 parameters only",
                params[i]
            )));
        }
        let partials = self.install(out, rule)?;
        let (rule_params, rule_returns) = out.callee_signature(partials).expect("just installed");
        let mut expected = params.clone();
        expected.push(Type::F64);
        if rule_params != expected || rule_returns != vec![Type::F64; floats.len()] {
            let spell = |types: &[Type]| types.iter().map(|t| t.spelling()).collect::<Vec<_>>().join(", ");
            return Err(bad(format!(
                "its partials function @{} must take the arguments and the result ({}) and return one f64 partial per f64 parameter ({})",
                rule.partials(),
                spell(&expected),
                floats.len()
            )));
        }
        let mut call_args = args.to_vec();
        call_args.push(result);
        let values = em.emit_multi(Opcode::Call, &call_args, Imm::Callee(partials), &rule_returns);
        // A user's partial may be infinite at a finite point: strong-zero products.
        let terms = floats
            .iter()
            .zip(values)
            .filter(|&(&i, _)| active[i])
            .map(|(&i, partial)| Term { operand: i, coef: Coef::ScaleStrong(partial) })
            .collect();
        Ok(Linearization::Terms(terms))
    }

    /// Copy the rule's module into `out` (functions renamed if their names are taken, calls and
    /// externs remapped) and return the partials callee there.
    fn install(&mut self, out: &mut Module, rule: &ScalarRule) -> Result<Callee, AdError> {
        let key = format!("{}\u{0}{}", rule.origin(), rule.partials());
        if let Some(&callee) = self.installed.get(&key) {
            return Ok(callee);
        }
        // Rename the rule's functions where the output module has the name already (functions,
        // externs and tables share one namespace).
        let mut module = rule.module().clone();
        for f in &mut module.functions {
            let base = f.name.clone();
            let mut k = 2;
            while out.name_taken(&f.name) {
                f.name = format!("{base}_{k}");
                k += 1;
            }
        }
        let ids = out.append(&module);
        let callee = match rule.module().func_id(rule.partials()) {
            Some(id) => Callee::Func(ids[id.index()]),
            None => match out.extern_id(rule.partials()) {
                Some(id) => Callee::Extern(id),
                None => {
                    return Err(AdError::Internal {
                        func: rule.partials().into(),
                        message: "a rule's partials function went missing".into(),
                    });
                }
            },
        };
        self.installed.insert(key, callee);
        Ok(callee)
    }
}
