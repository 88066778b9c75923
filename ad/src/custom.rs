//! Custom rules during a derivation: which calls have one, installing the rule's partials
//! function into the output module (once per rule), and the linearization of such a call — the
//! same [`Linearization::Terms`] a primitive gives, so forward and reverse mode treat a ruled
//! call exactly like a primitive.

use super::error::AdError;
use jitdiff_ir::{Callee, ExternId, FuncId, Imm, Module, Opcode, Type, Value};
use jitdiff_rules::{BlockEmitter, Coef, Linearization, RuleSet, ScalarRule, Term};
use std::collections::HashMap;

/// The rules of one derivation and the partials functions installed so far.
pub(super) struct CustomRules<'r> {
    rules: &'r RuleSet,
    installed: HashMap<String, Callee>,
}

impl<'r> CustomRules<'r> {
    pub fn new(rules: &'r RuleSet) -> CustomRules<'r> {
        CustomRules { rules, installed: HashMap::new() }
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
        if params.iter().any(|&t| t != Type::F64) || returns != [Type::F64] {
            return Err(bad("custom rules cover functions of f64 parameters with one f64 result".into()));
        }
        let partials = self.install(out, rule);
        let (rule_params, rule_returns) = out.callee_signature(partials).expect("just installed");
        let n = params.len();
        if rule_params != vec![Type::F64; n + 1] || rule_returns != vec![Type::F64; n] {
            return Err(bad(format!(
                "its partials function @{} must take the {n} arguments and the result (f64 each) and return {n} f64 partials",
                rule.partials()
            )));
        }
        let mut call_args = args.to_vec();
        call_args.push(result);
        let values = em.emit_multi(Opcode::Call, &call_args, Imm::Callee(partials), &rule_returns);
        // A user's partial may be infinite at a finite point: strong-zero products.
        let terms =
            (0..n).filter(|&i| active[i]).map(|i| Term { operand: i, coef: Coef::ScaleStrong(values[i]) }).collect();
        Ok(Linearization::Terms(terms))
    }

    /// Copy the rule's module into `out` (functions renamed if their names are taken, calls and
    /// externs remapped) and return the partials callee there.
    fn install(&mut self, out: &mut Module, rule: &ScalarRule) -> Callee {
        let key = format!("{}\u{0}{}", rule.origin(), rule.partials());
        if let Some(&callee) = self.installed.get(&key) {
            return callee;
        }
        let module = rule.module();
        let externs: Vec<ExternId> = module
            .externs
            .iter()
            .map(|decl| {
                out.extern_id(&decl.name).unwrap_or_else(|| {
                    out.externs.push(decl.clone());
                    ExternId(out.externs.len() as u32 - 1)
                })
            })
            .collect();
        let base = out.functions.len() as u32;
        for f in &module.functions {
            let mut copy = f.clone();
            let mut name = f.name.clone();
            let mut k = 2;
            while out.func_id(&name).is_some() {
                name = format!("{}_{k}", f.name);
                k += 1;
            }
            copy.name = name;
            for inst in copy.blocks.iter_mut().flat_map(|b| b.insts.iter_mut()) {
                if let Imm::Callee(c) = &mut inst.imm {
                    *c = match *c {
                        Callee::Func(id) => Callee::Func(FuncId(base + id.0)),
                        Callee::Extern(id) => Callee::Extern(externs[id.index()]),
                    };
                }
            }
            out.functions.push(copy);
        }
        let callee = match module.func_id(rule.partials()) {
            Some(id) => Callee::Func(FuncId(base + id.0)),
            None => Callee::Extern(externs[module.extern_id(rule.partials()).expect("checked at creation").index()]),
        };
        self.installed.insert(key, callee);
        callee
    }
}
