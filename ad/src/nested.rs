//! Nested AD: derivatives declared inside a module (`extern @g(...) = grad reverse @f wrt ...`,
//! see [`jitdiff_ir::DerivativeOf`]) replaced by derived functions, so that the module is
//! ordinary IR again — which any mode can then differentiate once more.
//!
//! Each declaration is derived by the same transforms as a top-level request, from the
//! functions `@f` reaches, once every declaration *they* call has been expanded (innermost
//! first). The derived code lands in the module under names that start with the declaration's
//! (`g__f_value_and_grad`), and `@g` becomes a function of the declared signature that calls it.
//! Because a derivative is new code rather than a tagged number, an outer derivative of a
//! function that calls `@g` differentiates `@g`'s body like any other: the inner and outer
//! tangents can never be confused (the "perturbation confusion" of operator-overloading AD).
//!
//! A reverse-mode declaration keeps its pullback state on the tape like any reverse
//! derivative. Where the derived code is straight-line after inlining (every push popped again
//! in the same block), the pushes and pops are forwarded and disappear: the gradient is then
//! plain arithmetic, which reverse mode can differentiate again. Otherwise the state stays on
//! the tape between `tsplit` and `trejoin` (so a call leaves the tape as it found it). Forward
//! mode over it works; reverse mode gets custom rules for its partials, rows of the Hessian
//! (`recorded.rs`), unless the differentiated function has an `mslice` parameter, where it
//! reports [`AdError::NestedDerivative`] (`request.rs` recognises the fence).

use crate::error::AdError;
use crate::{derive_forward_with_rules, derive_reverse_with_rules};
use jitdiff_ir::{
    Callee, DerivativeOf, DiffMode, ExternId, FuncId, Function, Imm, Module, Opcode, Terminator, Type, Value, passes,
};
use jitdiff_rules::RuleSet;
use jitdiff_rules::{BlockEmitter, Emit};
use rayon::prelude::*;
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::borrow::Cow;

mod recorded;

/// Instructions a caller may grow to by inlining its derived gradient: enough for the small
/// inner functions nested AD is used for, bounded so that a large one stays a call.
const INLINE_LIMIT: usize = 4000;

/// `module` with every derivative declaration replaced by a derived function of the declared
/// name and signature (a module without declarations is returned as it is). The result is for
/// evaluation and forward mode; to differentiate it in reverse mode, take
/// [`expand_derivatives_with_rules`] and its rules.
///
/// ```
/// use jitdiff_ir::{interpret, parse_module, ArgValue};
/// let m = parse_module(
///     "extern @sq_grad(f64) -> f64 = grad reverse @sq wrt 0\n\
///      func @sq(x: f64) -> f64 {\nentry:\n    y = fmul x, x\n    ret y\n}\n\
///      func @slope(x: f64) -> f64 {\nentry:\n    d = call @sq_grad(x)\n    ret d\n}\n",
/// )
/// .unwrap();
/// let expanded = jitdiff_ad::expand_derivatives(&m, &Default::default()).unwrap();
/// let out = interpret(&expanded, "slope", &mut [ArgValue::F64(3.0)]).unwrap();
/// assert_eq!(out[0].as_f64(), Some(6.0));
/// ```
pub fn expand_derivatives(module: &Module, rules: &RuleSet) -> Result<Module, AdError> {
    // No rules are returned, so none are made for the outermost declarations.
    Ok(expand(module, rules, false)?.0)
}

/// [`expand_derivatives`], and `rules` with the rules the expansion adds: a reverse-mode
/// gradient that keeps state on the tape gets its partials as functions with custom rules (rows
/// of the Hessian, `nested/recorded.rs`), which an outer reverse derivative needs. Derivations of
/// the expanded module should use the returned rules.
pub fn expand_derivatives_with_rules(module: &Module, rules: &RuleSet) -> Result<(Module, RuleSet), AdError> {
    expand(module, rules, true)
}

/// The expansion; `keep_rules`: whether the caller may differentiate the result in reverse mode
/// (otherwise only declarations another declaration's function calls get rules).
fn expand(module: &Module, rules: &RuleSet, keep_rules: bool) -> Result<(Module, RuleSet), AdError> {
    if !module.has_derivative_declarations() {
        return Ok((module.clone(), rules.clone()));
    }
    // A panic here is a bug; it reaches the caller as an error naming the declarations.
    jitdiff_ir::contain_panics(|| expand_unguarded(module, rules, keep_rules)).unwrap_or_else(|message| {
        let names: Vec<String> =
            module.externs.iter().filter(|e| e.derivative.is_some()).map(|e| format!("@{}", e.name)).collect();
        Err(AdError::Internal { func: names.join(", "), message })
    })
}

fn expand_unguarded(module: &Module, rules: &RuleSet, keep_rules: bool) -> Result<(Module, RuleSet), AdError> {
    let originals: Vec<String> = module.functions.iter().map(|f| f.name.clone()).collect();
    let mut declared: Vec<String> = vec![];
    let mut out = module.clone();
    let mut all_rules = rules.clone();
    while out.has_derivative_declarations() {
        // Every declaration whose function reaches no other one is derived now, all at once
        // on rayon's threads: their sources are disjoint from what installing the others
        // changes (a function calling a declaration is not in a ready one's source).
        let ready = out.ready_derivative_declarations();
        let reached: HashSet<ExternId> = out.declarations_reached_by_declarations().into_values().flatten().collect();
        if ready.is_empty() {
            let decl = out.externs.iter().find(|e| e.derivative.is_some()).expect("a declaration is left");
            return Err(AdError::NestedDerivative {
                name: decl.name.clone(),
                reason: "it depends on itself: the function it differentiates calls, directly or through \
                         other declared derivatives, a derivative of itself"
                    .into(),
            });
        }
        let prepared: Vec<Prepared> = ready
            .par_iter()
            .map(|&id| derive_declaration(&out, id, &all_rules, keep_rules || reached.contains(&id)))
            .collect::<Result<_, AdError>>()?;
        for piece in prepared {
            declared.push(piece.decl.clone());
            install(&mut out, piece, &mut all_rules)?;
        }
    }
    let roots: Vec<&str> = originals.iter().chain(&declared).map(String::as_str).collect();
    Ok((passes::retain_reachable(&out, &roots), all_rules))
}

/// `module` itself when it declares no derivative, else its expansion: what every derivation
/// entry point differentiates.
pub(crate) fn expanded<'m>(module: &'m Module, rules: &'m RuleSet) -> Result<Expanded<'m>, AdError> {
    Ok(if module.has_derivative_declarations() {
        let (module, rules) = expand_derivatives_with_rules(module, rules)?;
        (Cow::Owned(module), Cow::Owned(rules))
    } else {
        (Cow::Borrowed(module), Cow::Borrowed(rules))
    })
}

/// A module with its declarations expanded, and the rules to derive it with.
pub(crate) type Expanded<'m> = (Cow<'m, Module>, Cow<'m, RuleSet>);

/// A declaration derived, before it joins the module: its derived functions and the function
/// of the declared name over them (last), and what an outer reverse derivative needs.
struct Prepared {
    decl: String,
    derivative: DerivativeOf,
    source: Module,
    piece: Module,
    /// The forward sweeps giving the rows of the Hessian, when the gradient keeps state on the
    /// tape and an outer derivative may differentiate it (see `recorded.rs`).
    rows: Option<recorded::Rows>,
}

/// Derive the declaration `extern_id` of `module`; `rules_wanted` says whether an outer
/// derivative may differentiate it.
fn derive_declaration(
    module: &Module,
    extern_id: ExternId,
    rules: &RuleSet,
    rules_wanted: bool,
) -> Result<Prepared, AdError> {
    let decl = &module.externs[extern_id.index()];
    let derivative = decl.derivative.clone().expect("a declaration");
    let bad = |reason: String| AdError::NestedDerivative { name: decl.name.clone(), reason };
    let of = module
        .func_by_name(&derivative.of)
        .ok_or_else(|| bad(format!("the module has no function @{}", derivative.of)))?;
    let (params, returns) = derivative.signature(of).map_err(&bad)?;
    if params != decl.params || returns != decl.returns {
        return Err(bad("its signature does not match the function it differentiates (see the verifier)".into()));
    }
    let mut wrt = vec![false; params.len()];
    for &p in &derivative.wrt {
        wrt[p] = true;
    }
    let source = passes::retain_reachable(module, &[&derivative.of]);
    // What `@decl` calls: the fused value_and_grad, or one tangent sweep per partial — width 1,
    // so that the inlined result is plain `f64` arithmetic any mode can differentiate again
    // (lanes would make an outer tangent a vector of vectors), and each sweep differentiating
    // its own parameter only: seeded (1, 0), the sweep of `x * y` at x = inf would give
    // ∂/∂x = y·1 + x·0 = NaN, where differentiating x alone gives y, as reverse mode does.
    // CSE shares the primal work of the sweeps once they are inlined.
    let derived: Vec<(Module, String)> = match derivative.mode {
        DiffMode::Reverse => {
            let d = derive_reverse_with_rules(&source, &derivative.of, &wrt, rules)?;
            let entry = d.value_and_grad.clone().ok_or_else(|| bad("no value_and_grad was derived".into()))?;
            vec![(d.module, entry)]
        }
        DiffMode::Forward => derivative
            .wrt
            .par_iter()
            .map(|&p| {
                let mut one = vec![false; params.len()];
                one[p] = true;
                let d = derive_forward_with_rules(&source, &derivative.of, &one, 1, rules)?;
                Ok((d.module, d.name))
            })
            .collect::<Result<_, AdError>>()?,
    };
    // The derived code, under names that say which declaration it implements.
    let mut piece = Module::default();
    let mut entries = vec![];
    for (derived, entry) in &derived {
        let mut part = passes::retain_reachable(derived, &[entry]);
        let mut entry_index = 0;
        for (k, f) in part.functions.iter_mut().enumerate() {
            if f.name == *entry {
                entry_index = k;
            }
            f.name = format!("{}__{}", decl.name, f.name);
        }
        let ids = piece.append(&part);
        entries.push(ids[entry_index]);
    }

    // `@decl`: the declared signature over the derived functions.
    let mut wrapper = Function::new(decl.name.clone(), returns.clone());
    let args: Vec<Value> =
        of.params.iter().map(|&p| wrapper.add_param(of.ty(p), of.values[p.index()].name.as_deref())).collect();
    let block = wrapper.add_block("entry");
    let mut em = BlockEmitter::new(&mut wrapper, block);
    let call = |em: &mut BlockEmitter<'_>, id: FuncId, args: &[Value]| {
        em.emit_multi(Opcode::Call, args, Imm::Callee(Callee::Func(id)), &piece.func(id).returns)
    };
    let partials = match derivative.mode {
        DiffMode::Reverse => call(&mut em, entries[0], &args)[1..].to_vec(),
        DiffMode::Forward => {
            let one = em.fconst(1.0);
            let seeded: Vec<Value> = args.iter().copied().chain([one]).collect();
            entries.iter().map(|&id| call(&mut em, id, &seeded)[1]).collect()
        }
    };
    wrapper.block_mut(block).term = Some(Terminator::Return(partials));
    wrapper.canonicalize();
    let wrapper_id = piece.push_function(wrapper);

    // The derived code inlined into `@decl`, its tape traffic forwarded where it is
    // straight-line; where it is not, the state stays on the tape between tsplit and trejoin.
    // Inlining runs on a copy, of which only `@decl` is taken back: the derived functions stay
    // as derived, since `@decl` may still call them (past the inlining limit).
    let mut copy = piece.clone();
    passes::inline_calls(&mut copy, |id, _| id != wrapper_id, INLINE_LIMIT);
    let wrapper = &mut piece.functions[wrapper_id.index()];
    *wrapper = copy.functions.swap_remove(wrapper_id.index());
    passes::optimize_function(wrapper);
    let mut rows = None;
    if !forward_tape(wrapper) && uses_tape(wrapper) {
        fence_tape(wrapper);
        passes::optimize_function(wrapper);
        if rules_wanted {
            rows = Some(recorded::derive_rows(&decl.name, &derivative, &source, rules)?);
        }
    } else {
        passes::optimize_function(wrapper);
    }
    Ok(Prepared { decl: decl.name.clone(), derivative, source, piece, rows })
}

/// Add a derived declaration to `module`: its functions (renamed where a name is taken), and
/// calls of the extern calling the function of its name, which replaces the extern.
fn install(module: &mut Module, prepared: Prepared, all_rules: &mut RuleSet) -> Result<(), AdError> {
    let Prepared { decl, derivative, source, mut piece, rows } = prepared;
    let extern_id = module.extern_id(&decl).expect("the declaration is still in the module");
    let wrapper_index = piece.functions.len() - 1;
    let mut taken: HashSet<String> = module
        .functions
        .iter()
        .map(|f| f.name.clone())
        .chain(module.externs.iter().map(|e| e.name.clone()))
        .chain(module.tables.iter().map(|t| t.name.clone()))
        .collect();
    for f in &mut piece.functions[..wrapper_index] {
        let base = f.name.clone();
        let mut suffix = 2;
        while !taken.insert(f.name.clone()) {
            f.name = format!("{base}_{suffix}");
            suffix += 1;
        }
    }
    let ids = module.append(&piece);
    let wrapper_id = ids[wrapper_index];
    // Calls of the extern call the function; the extern goes.
    module.replace_extern(extern_id, wrapper_id);
    if let Some(rows) = rows {
        recorded::give_rules(module, wrapper_id, &derivative, &source, rows, all_rules)?;
    }
    Ok(())
}

fn uses_tape(func: &Function) -> bool {
    func.blocks.iter().flat_map(|b| &b.insts).any(|i| is_tape_op(i.op))
}

fn is_tape_op(op: Opcode) -> bool {
    matches!(op, Opcode::TPush | Opcode::TPop | Opcode::TSplit | Opcode::TRejoin)
}

/// In a function whose tape traffic lies in one block — every `tpop` reading a `tpush` of the
/// same block, of the same type, and no `tsplit`/`trejoin` — replace each popped value by the
/// pushed one and drop the traffic. Returns whether the function is now free of tape
/// operations (false: it was left as it was).
fn forward_tape(func: &mut Function) -> bool {
    let mut replace: HashMap<Value, Value> = HashMap::default();
    for block in &func.blocks {
        let mut stack: Vec<Value> = vec![];
        for inst in &block.insts {
            match inst.op {
                Opcode::TPush => stack.push(inst.args[0]),
                Opcode::TPop => match stack.pop() {
                    Some(pushed) if func.ty(pushed) == func.ty(inst.results[0]) => {
                        replace.insert(inst.results[0], pushed);
                    }
                    _ => return false,
                },
                Opcode::TSplit | Opcode::TRejoin => return false,
                _ => {}
            }
        }
        if !stack.is_empty() {
            return false;
        }
    }
    let resolve = |mut v: Value| {
        while let Some(&to) = replace.get(&v) {
            v = to;
        }
        v
    };
    for block in &mut func.blocks {
        block.insts.retain(|i| !is_tape_op(i.op));
        for inst in &mut block.insts {
            inst.args.iter_mut().for_each(|a| *a = resolve(*a));
        }
        if let Some(term) = &mut block.term {
            term.map_uses(resolve);
        }
    }
    true
}

/// The name of the cursor a fence saves (see [`fence_tape`]).
pub(crate) const FENCE: &str = "nested_fence";

/// Bracket the function's tape traffic with `tsplit` at entry and `trejoin` before every
/// return, so that a call leaves the tape as it found it (its pops read its own pushes).
pub(super) fn fence_tape(func: &mut Function) {
    let cursor = func.new_value(Type::I64);
    // The name marks the fence for `request.rs`, which then reports a nested derivative.
    func.set_value_name(cursor, FENCE);
    func.blocks[0].insts.insert(
        0,
        jitdiff_ir::InstData {
            op: Opcode::TSplit,
            args: smallvec::smallvec![],
            imm: Imm::None,
            results: smallvec::smallvec![cursor],
        },
    );
    for block in &mut func.blocks {
        if matches!(block.term, Some(Terminator::Return(_))) {
            block.insts.push(jitdiff_ir::InstData {
                op: Opcode::TRejoin,
                args: smallvec::smallvec![cursor],
                imm: Imm::None,
                results: smallvec::smallvec![],
            });
        }
    }
}
