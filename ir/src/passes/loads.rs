//! Redundant loads within a block.

use super::{Aliases, remove_marked};
use crate::function::{Function, Value};
use crate::opcode::Opcode;
use crate::types::Type;
use rustc_hash::FxHashMap as HashMap;

/// Replace a `load` by an identical earlier `load` of the same block (same slice, same index
/// value) when nothing in between can have written the location: for a read-only slice or a
/// table nothing can; for an `mslice`, any `store`, `vstore` or `call` in between keeps the
/// second load. The earlier load ran without failing, so the removed one could not fail
/// either: results, stores and errors are unchanged.
///
/// Source such as `y[s] * y[s]` reads one location twice; kept, reverse mode would also
/// accumulate into its adjoint twice.
///
/// ```
/// use jitdiff_ir::{parse_module, passes, print_module};
/// let src = "func @f(y: mslice, s: i64) -> f64 {\nentry:\n    a = load y, s\n    b = load y, s\n    r = fmul a, b\n    ret r\n}\n";
/// let mut m = parse_module(src).unwrap();
/// passes::remove_redundant_loads(&mut m.functions[0]);
/// assert_eq!(print_module(&m).matches("load").count(), 1);
/// ```
pub fn remove_redundant_loads(func: &mut Function) -> bool {
    let mut aliases = Aliases::new(func);
    let mut dead: Vec<Vec<bool>> = func.blocks.iter().map(|b| vec![false; b.insts.len()]).collect();
    let mut removed = false;
    let types: Vec<Type> = func.values.iter().map(|v| v.ty).collect();
    for (b, block) in func.blocks.iter_mut().enumerate() {
        let mut available: HashMap<(Value, Value), Value> = HashMap::default();
        for (i, inst) in block.insts.iter_mut().enumerate() {
            inst.args.iter_mut().for_each(|a| *a = aliases.resolve(*a));
            match inst.op {
                Opcode::Load if inst.results.len() == 1 && inst.args.len() == 2 => {
                    let key = (inst.args[0], inst.args[1]);
                    match available.get(&key) {
                        Some(&earlier) => {
                            aliases.set(inst.results[0], earlier);
                            dead[b][i] = true;
                            removed = true;
                        }
                        None => {
                            available.insert(key, inst.results[0]);
                        }
                    }
                }
                Opcode::Store | Opcode::VStore | Opcode::Call => {
                    available.retain(|&(slice, _), _| types[slice.index()] != Type::SliceMut);
                }
                _ => {}
            }
        }
        if let Some(term) = block.term.as_mut() {
            term.map_uses(|v| aliases.resolve(v));
        }
    }
    if removed {
        remove_marked(func, &dead);
        aliases.apply(func);
        func.canonicalize();
    }
    removed
}
