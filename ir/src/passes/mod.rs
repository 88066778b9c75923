//! IR passes: dead-code elimination, constant folding (reads of data tables included), division
//! by powers of two as multiplication, constant hoisting, common-subexpression elimination, redundant loads, negation folding, redundant block parameters,
//! reassociation of integer index arithmetic, loop-invariant code motion, redundant loop counters and merging of block chains; unused
//! parameters of internal functions; sinking.
//!
//! Every pass takes a function (or, for [`optimize`] and [`run_pass`], a module), preserves what
//! the interpreter computes — results, stores, errors and their order (sinking alone may let
//! another error come first: see [`sink`]) — and leaves the function
//! canonical (see [`Function::canonicalize`]). A function the verifier accepts is still accepted
//! afterwards. None of them rewrites floating-point algebra except where the result is the same
//! bit for bit (`x / 2.0` as `x * 0.5`, see [`divide_by_reciprocals`]): `x * 0.0` is not `0.0`
//! in IEEE.
//!
//! ```
//! use jitdiff_ir::{parse_module, passes, print_module};
//! let mut m = parse_module("func @f(x: f64) -> f64 {\nentry:\n    a = fconst 2.0\n    b = fconst 3.0\n    c = fmul a, b\n    unused = sin x\n    r = fadd x, c\n    ret r\n}\n").unwrap();
//! passes::optimize(&mut m);
//! let text = print_module(&m);
//! assert!(text.contains("fconst 6.0") && !text.contains("sin"));
//! ```

mod counters;
mod cse;
mod dce;
mod fold;
mod hoist;
mod inline;
mod licm;
mod loads;
mod merge;
mod negate;
mod params;
mod reachable;
mod reassociate;
mod reciprocal;
mod sink;
mod tables;
mod tape;
mod unused_params;
mod unused_results;

pub use counters::eliminate_counters;
pub use cse::cse;
pub use dce::{dce, dce_with_removable_calls, remove_unreachable_blocks};
pub use fold::fold_constants;
pub use hoist::hoist_constants;
pub use inline::{CallSite, has_recursion, inline_calls, inline_sites};
pub use licm::licm;
pub use loads::remove_redundant_loads;
pub use merge::{merge_blocks, thread_jumps};
pub use negate::fold_negations;
pub use params::remove_redundant_params;
pub use reachable::retain_reachable;
pub use reassociate::reassociate;
pub use reciprocal::divide_by_reciprocals;
pub use sink::sink;
pub use tables::fold_table_reads;
pub use tape::forward_tape_entries;
pub use unused_params::remove_unused_params;
pub use unused_results::{zero_results, zero_unused_results};

use crate::function::{Function, Module, Table, Value};

/// The passes [`run_pass`] knows, by name.
pub const PASS_NAMES: [&str; 16] = [
    "dce",
    "fold",
    "reciprocal",
    "hoist",
    "cse",
    "loads",
    "negate",
    "params",
    "licm",
    "sink",
    "counters",
    "merge",
    "thread",
    "inline",
    "optimize",
    "tape",
];

/// The size [`run_pass`]`("inline")` lets a caller grow to, in instructions.
pub const INLINE_LIMIT: usize = 10_000;

/// [`run_pass`] was given a name it does not know.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown pass `{name}`; known passes are dce, fold, reciprocal, hoist, cse, loads, negate, params, reassociate, licm, sink, counters, merge, thread, inline, tape and optimize"
)]
pub struct UnknownPass {
    /// The name given.
    pub name: String,
}

/// The most rounds [`optimize`] runs before it stops even if something still changes.
const MAX_ROUNDS: usize = 32;

/// Fold constants, hoist them, fold negations, remove redundant block parameters, CSE, move
/// loop-invariant code out of loops, remove redundant loop counters, DCE, jump past empty blocks
/// and merge block chains in every function of `module`, repeated until nothing changes; reads
/// of the module's tables at constant indices are folded too.
pub fn optimize(module: &mut Module) {
    let Module { tables, functions, .. } = module;
    functions.iter_mut().for_each(|f| optimize_function_in(f, tables));
}

/// [`optimize_function`] for a function of a module with these `tables`: reads of them at
/// constant indices are folded too (see [`fold_table_reads`]).
pub fn optimize_function_in(function: &mut Function, tables: &[Table]) {
    optimize_function(function);
    // Folding a read may make another index constant: a few rounds at most, in practice one.
    for _ in 0..MAX_ROUNDS {
        if !fold_table_reads(function, tables) {
            break;
        }
        optimize_function(function);
    }
}

/// [`optimize`] for one function.
pub fn optimize_function(function: &mut Function) {
    for _ in 0..MAX_ROUNDS {
        let before = fingerprint(function);
        fold_constants(function);
        divide_by_reciprocals(function);
        hoist_constants(function);
        fold_negations(function);
        remove_redundant_params(function);
        cse(function);
        licm(function);
        eliminate_counters(function);
        dce(function);
        thread_jumps(function);
        merge_blocks(function);
        if fingerprint(function) == before {
            break;
        }
    }
}

/// A hash of everything a pass can change (not names, which none changes): comparing two is
/// what comparing the function with a clone of itself would tell, without the clone.
fn fingerprint(function: &Function) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = rustc_hash::FxHasher::default();
    function.params.hash(&mut h);
    function.values.len().hash(&mut h);
    for v in &function.values {
        v.ty.hash(&mut h);
    }
    for b in &function.blocks {
        b.params.hash(&mut h);
        b.insts.len().hash(&mut h);
        for inst in &b.insts {
            inst.op.hash(&mut h);
            inst.args.hash(&mut h);
            inst.results.hash(&mut h);
            inst.imm.hash(&mut h);
        }
        b.term.hash(&mut h);
    }
    h.finish()
}

/// Run the pass called `name` (one of [`PASS_NAMES`]) on every function of
/// `module` (`"inline"` inlines every call it may, see [`inline_calls`] and [`INLINE_LIMIT`];
/// `"fold"` folds reads of the module's tables too, see [`fold_table_reads`]).
/// Used by the file tests and the command-line tool.
///
/// ```
/// use jitdiff_ir::{passes, Module};
/// let mut m = Module::new();
/// assert!(passes::run_pass("dce", &mut m).is_ok());
/// assert!(passes::run_pass("unroll", &mut m).is_err());
/// ```
pub fn run_pass(name: &str, module: &mut Module) -> Result<(), UnknownPass> {
    let per_function: fn(&mut Function) = match name {
        "dce" => dce,
        "fold" => {
            let Module { tables, functions, .. } = module;
            for f in functions {
                fold_constants(f);
                if fold_table_reads(f, tables) {
                    fold_constants(f);
                }
            }
            return Ok(());
        }
        "hoist" => hoist_constants,
        "cse" => cse,
        "negate" => fold_negations,
        "params" => remove_redundant_params,
        "licm" => licm,
        "reassociate" => |f| {
            reassociate(f);
        },
        "loads" => |f| {
            remove_redundant_loads(f);
        },
        "sink" => |f| {
            sink(f);
        },
        "counters" => eliminate_counters,
        "reciprocal" => |f| {
            divide_by_reciprocals(f);
        },
        "tape" => |f| {
            forward_tape_entries(f);
        },
        "merge" => merge_blocks,
        "thread" => thread_jumps,
        "optimize" => {
            optimize(module);
            return Ok(());
        }
        "inline" => {
            inline_calls(module, |_, _| true, INLINE_LIMIT);
            return Ok(());
        }
        _ => return Err(UnknownPass { name: name.to_string() }),
    };
    module.functions.iter_mut().for_each(per_function);
    Ok(())
}

/// Replacements of values by equal values, applied to every use at the end of a pass.
struct Aliases {
    to: Vec<Option<Value>>,
}

impl Aliases {
    fn new(func: &Function) -> Aliases {
        Aliases { to: vec![None; func.values.len()] }
    }
    /// The value `v` stands for, following chains.
    fn resolve(&self, mut v: Value) -> Value {
        // A chain can never be longer than the number of values (each alias is set once, to an
        // earlier-resolved value); the bound keeps unverified input from looping forever.
        for _ in 0..=self.to.len() {
            match self.to.get(v.index()).copied().flatten() {
                Some(next) if next != v => v = next,
                _ => break,
            }
        }
        v
    }
    /// Make `from` stand for `to`.
    fn set(&mut self, from: Value, to: Value) {
        let to = self.resolve(to);
        if let Some(slot) = self.to.get_mut(from.index())
            && from != to
        {
            *slot = Some(to);
        }
    }
    fn is_empty(&self) -> bool {
        self.to.iter().all(Option::is_none)
    }
    /// Rewrite every use in `func`.
    fn apply(&self, func: &mut Function) {
        if self.is_empty() {
            return;
        }
        for block in &mut func.blocks {
            for inst in &mut block.insts {
                inst.args.iter_mut().for_each(|a| *a = self.resolve(*a));
            }
            if let Some(term) = &mut block.term {
                term.map_uses(|v| self.resolve(v));
            }
        }
    }
}

/// Remove the instructions marked in `dead` (per block, per instruction).
fn remove_marked(func: &mut Function, dead: &[Vec<bool>]) {
    for (block, marks) in func.blocks.iter_mut().zip(dead) {
        if marks.iter().any(|&d| d) {
            let mut k = 0;
            block.insts.retain(|_| {
                let keep = !marks.get(k).copied().unwrap_or(false);
                k += 1;
                keep
            });
        }
    }
}

/// Drop the block parameters (of blocks other than the entry) that `keep` rejects, together
/// with the jump arguments bound to them.
fn drop_block_params(func: &mut Function, keep: impl Fn(Value) -> bool) {
    let masks: Vec<Vec<bool>> =
        func.blocks.iter().enumerate().map(|(i, b)| b.params.iter().map(|&p| i == 0 || keep(p)).collect()).collect();
    for block in &mut func.blocks {
        if let Some(term) = &mut block.term {
            for call in term.successors_mut() {
                if let Some(mask) = masks.get(call.block.index())
                    && mask.len() == call.args.len()
                {
                    let mut k = 0;
                    call.args.retain(|_| {
                        k += 1;
                        mask[k - 1]
                    });
                }
            }
        }
    }
    for (block, mask) in func.blocks.iter_mut().zip(&masks) {
        let mut k = 0;
        block.params.retain(|_| {
            k += 1;
            mask[k - 1]
        });
    }
}
