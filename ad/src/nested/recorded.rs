//! Reverse mode over a reverse-mode gradient that keeps its state on the tape (a loop in the
//! inner function): the outer derivative cannot differentiate the inner one's tape traffic, so
//! the gradient's partials get custom rules instead, whose partials are rows of the Hessian,
//! each one forward-mode sweep over the inner value_and_grad (as `HvpFn` computes them).
//!
//! `@g = grad reverse @f wrt ...` with k partials becomes
//!
//! - `@g__recorded(args) -> k × f64`: the fenced gradient (`tsplit` ... `trejoin`);
//! - `@g__partial_j(args) -> f64`, one per partial, calling it — each with a [`ScalarRule`]
//!   whose partials function `@g__hessian_row_j(args, y)` returns ∂²f / ∂a_i ∂y_j for every
//!   argument `a_i`;
//! - `@g(args)`: the k partials, from those functions.
//!
//! The rules give partials of `@f`'s `f64` parameters; its other parameters (integers,
//! booleans, read-only slices: data the gradient depends on) are passed along undifferentiated.
//! A `mslice` parameter (which the gradient would write to, once per partial) keeps `@g` as it
//! was, and an outer reverse derivative then says why it cannot differentiate it.

use super::fence_tape;
use crate::error::AdError;
use crate::{derive_forward_with_rules, derive_reverse_with_rules};
use jitdiff_ir::{Callee, DerivativeOf, FuncId, Function, Imm, Module, Opcode, Terminator, Type, Value, passes};
use jitdiff_rules::{BlockEmitter, Emit, RuleSet, ScalarRule};
use rayon::prelude::*;

/// The forward sweeps over `@f`'s full value_and_grad, one per partial of the declaration,
/// each seeded at its parameter: what the rules of [`give_rules`] evaluate. `None` when the
/// differentiated function has a `mslice` parameter (the declaration then keeps no rules).
pub(super) struct Rows(Option<Vec<(Module, String)>>);

/// Derive the [`Rows`] of the declaration `@name` (independent of the module it joins, so that
/// several declarations derive theirs at once).
pub(super) fn derive_rows(
    name: &str,
    derivative: &DerivativeOf,
    source: &Module,
    rules: &RuleSet,
) -> Result<Rows, AdError> {
    let of = source.func_by_name(&derivative.of).expect("the source holds the differentiated function");
    let params = of.param_types();
    if params.iter().any(|&t| !matches!(t, Type::F64 | Type::I64 | Type::Bool | Type::Slice)) {
        return Ok(Rows(None));
    }
    // The Hessian of `@f` in every f64 parameter, by forward mode over its full value_and_grad.
    let all: Vec<bool> = params.iter().map(|&t| t == Type::F64).collect();
    let full = derive_reverse_with_rules(source, &derivative.of, &all, rules)?;
    let vg = full.value_and_grad.clone().ok_or_else(|| AdError::NestedDerivative {
        name: name.to_string(),
        reason: "no value_and_grad was derived".into(),
    })?;
    // ∂(∂f/∂y_j)/∂a_i = (H e_j)_i, one forward sweep seeded at y_j.
    let sweeps = derivative
        .wrt
        .par_iter()
        .map(|&p| {
            let mut seed = vec![false; params.len()];
            seed[p] = true;
            let sweep = derive_forward_with_rules(&full.module, &vg, &seed, 1, rules)?;
            Ok((passes::retain_reachable(&sweep.module, &[&sweep.name]), sweep.name))
        })
        .collect::<Result<_, AdError>>()?;
    Ok(Rows(Some(sweeps)))
}

/// Split the recorded gradient `@decl` (function `id` of `module`, derived from `source`) as
/// above, registering the rules, which evaluate `rows`, in `rules_out`.
pub(super) fn give_rules(
    module: &mut Module,
    id: FuncId,
    derivative: &DerivativeOf,
    source: &Module,
    rows: Rows,
    rules_out: &mut RuleSet,
) -> Result<(), AdError> {
    let Rows(Some(sweeps)) = rows else { return Ok(()) };
    let of = source.func_by_name(&derivative.of).expect("the source holds the differentiated function");
    let params = of.param_types();
    let floats = params.iter().filter(|&&t| t == Type::F64).count();
    let name = module.func(id).name.clone();
    let count = derivative.wrt.len();
    let unique = |module: &Module, base: String| {
        let mut candidate = base.clone();
        let mut k = 2;
        while module.func_id(&candidate).is_some() || module.extern_id(&candidate).is_some() {
            candidate = format!("{base}_{k}");
            k += 1;
        }
        candidate
    };
    // `@g__recorded`: what `@g` was.
    let mut recorded = module.func(id).clone();
    recorded.name = unique(module, format!("{name}__recorded"));
    let recorded_id = module.push_function(recorded);

    let mut partial_ids = vec![];
    for (j, (mut rule_module, sweep_name)) in sweeps.into_iter().enumerate() {
        // `@g__partial_j(args) = @g__recorded(args)[j]`.
        let partial_name = unique(module, format!("{name}__partial_{j}"));
        let (mut partial, args) = with_params(&partial_name, &params, vec![Type::F64]);
        let block = partial.add_block("entry");
        let mut em = BlockEmitter::new(&mut partial, block);
        let all = em.emit_multi(Opcode::Call, &args, Imm::Callee(Callee::Func(recorded_id)), &vec![Type::F64; count]);
        partial.block_mut(block).term = Some(Terminator::Return(vec![all[j]]));
        partial.canonicalize();
        partial_ids.push(module.push_function(partial));

        // Its rule: the sweep's Hessian row.
        let sweep_id = rule_module.func_id(&sweep_name).expect("the sweep was kept");
        let sweep_returns = rule_module.func(sweep_id).returns.clone();
        let row_name = format!("{partial_name}__hessian_row");
        let mut with_result = params.clone();
        with_result.push(Type::F64);
        let (mut row, mut row_args) = with_params(&row_name, &with_result, vec![Type::F64; floats]);
        row_args.pop();
        let block = row.add_block("entry");
        let mut em = BlockEmitter::new(&mut row, block);
        row_args.push(em.fconst(1.0));
        let out = em.emit_multi(Opcode::Call, &row_args, Imm::Callee(Callee::Func(sweep_id)), &sweep_returns);
        // (value, the partials, its tangent, the partials' tangents): the last ones.
        let hessian_row = out[out.len() - floats..].to_vec();
        row.block_mut(block).term = Some(Terminator::Return(hessian_row));
        row.canonicalize();
        fence_tape(&mut row);
        rule_module.push_function(row);
        let rule = ScalarRule::from_module(rule_module, &row_name, &format!("the nested derivative @{name}"))
            .map_err(|e| AdError::NestedDerivative { name: name.clone(), reason: e.to_string() })?;
        rules_out
            .register(&partial_name, rule)
            .map_err(|e| AdError::NestedDerivative { name: name.clone(), reason: e.to_string() })?;
    }

    // `@g(args)`: the partials, each from its function.
    let (mut g, args) = with_params(&name, &params, vec![Type::F64; count]);
    let block = g.add_block("entry");
    let mut em = BlockEmitter::new(&mut g, block);
    let partials: Vec<Value> = partial_ids
        .iter()
        .map(|&f| em.emit_multi(Opcode::Call, &args, Imm::Callee(Callee::Func(f)), &[Type::F64])[0])
        .collect();
    g.block_mut(block).term = Some(Terminator::Return(partials));
    g.canonicalize();
    module.functions[id.index()] = g;
    Ok(())
}

/// A function named `name` with parameters of `types`, returning `returns`, and its parameters.
fn with_params(name: &str, types: &[Type], returns: Vec<Type>) -> (Function, Vec<Value>) {
    let mut f = Function::new(name.to_string(), returns);
    let params = types.iter().map(|&t| f.add_param(t, None)).collect();
    (f, params)
}
