//! Store-to-load forwarding and dead stores within a pullback block.
//!
//! Reversing `y = load m, i; ...; store m, i, z` (a read-modify-write of a differentiated
//! array, as in `m[i] += x`) gives, in the pullback, the store's reverse — the location's
//! cotangent moves to `z`, and the location restarts at zero (`-0.0`, see `pullback.rs`) —
//! followed by the load's reverse, which adds `y`'s cotangent to the location:
//!
//! ```text
//!     a = load d, i
//!     store d, i, -0.0
//!     b = load d, i        ; reads the -0.0 just stored
//!     c = fadd b, t
//!     store d, i, c
//! ```
//!
//! The load is replaced by the value stored (a store to the same slice and index value checked
//! the same bounds), and the first store, overwritten before anything could read it or fail,
//! is removed: `a = load d, i; c = fadd -0.0, t; store d, i, c`, bit for bit the same memory
//! and values, without a store-to-load round trip on the critical path of a reversed loop.
//! Constant folding then turns `fadd -0.0, t` into `t`, exactly. When `t` is `a` (the
//! cotangent of `z` flows unchanged to `y`, as in `m[i] += x`), the last store writes back what
//! `a` loaded, and a second run of this pass removes it: a store of the value loaded from the
//! same slice and index, with no store in between, changes nothing.
//!
//! Only pullbacks are rewritten, where it is known what may alias: their `slice` parameters are
//! primal slices, which never share memory with a differential (`mslice`), while two
//! differentials may; so any other store to an `mslice`, or a call, forgets what was stored
//! and loaded.

use jitdiff_ir::{Function, Opcode, Type, Value};
use rustc_hash::FxHashMap as HashMap;

/// Forward stores to loads and drop overwritten stores in every block of `func`; true when
/// something changed.
pub(crate) fn forward_stores(func: &mut Function) -> bool {
    let mut changed = false;
    for b in 0..func.blocks.len() {
        let mut replace: HashMap<Value, Value> = HashMap::default();
        let mut remove: Vec<usize> = vec![];
        // The last store to each (slice, index) whose value is still in memory, with its position
        // and whether it may still be observed (read, or left behind by a failure) before the
        // next store to the same place.
        let mut stored: HashMap<(Value, Value), (Value, usize, bool)> = HashMap::default();
        // Values loaded from each (slice, index) with no store to any mslice since.
        let mut loaded: HashMap<(Value, Value), Value> = HashMap::default();
        for (k, inst) in func.blocks[b].insts.iter().enumerate() {
            let mutable = |v: Value| func.ty(v) == Type::SliceMut;
            match inst.op {
                Opcode::Load if mutable(inst.args[0]) => {
                    let key = (inst.args[0], inst.args[1]);
                    if let Some(&(value, _, _)) = stored.get(&key) {
                        replace.insert(inst.results[0], value);
                        remove.push(k);
                        continue;
                    }
                    loaded.insert(key, inst.results[0]);
                    // Another index may be the same location: every earlier store may be read.
                    stored.values_mut().for_each(|s| s.2 = true);
                }
                Opcode::Store => {
                    let key = (inst.args[0], inst.args[1]);
                    let value = *replace.get(&inst.args[2]).unwrap_or(&inst.args[2]);
                    if loaded.get(&key) == Some(&value) && !stored.contains_key(&key) {
                        // Writes back what is there.
                        remove.push(k);
                        continue;
                    }
                    if let Some(&(_, at, false)) = stored.get(&key) {
                        remove.push(at);
                    }
                    // Any other location of any mslice may be this one.
                    loaded.clear();
                    stored.clear();
                    stored.insert(key, (inst.args[2], k, false));
                    continue;
                }
                Opcode::VLoad | Opcode::VStore | Opcode::Call => {
                    stored.clear();
                    loaded.clear();
                }
                _ => {}
            }
            if inst.op.can_fail() {
                stored.values_mut().for_each(|s| s.2 = true);
            }
        }
        if remove.is_empty() {
            continue;
        }
        changed = true;
        remove.sort_unstable();
        let insts = std::mem::take(&mut func.blocks[b].insts);
        func.blocks[b].insts =
            insts.into_iter().enumerate().filter(|(k, _)| remove.binary_search(k).is_err()).map(|(_, i)| i).collect();
        // The replaced loads' results may be used anywhere their block dominates.
        let renamed = |v: Value| *replace.get(&v).unwrap_or(&v);
        for block in func.blocks.iter_mut() {
            for inst in &mut block.insts {
                inst.args.iter_mut().for_each(|a| *a = renamed(*a));
            }
            if let Some(term) = &mut block.term {
                term.map_uses(renamed);
            }
        }
    }
    changed
}
