//! The constant pool: non-zero float constants live in memory owned by the compiled module and
//! are loaded where the IR defines them.
//!
//! Cranelift rematerializes `f64const` at every use — two instructions (`movabs` + `vmovq`)
//! inside every loop iteration that uses the constant, even when the IR defines it before the
//! loop. A load is not rematerialized (nor moved: it is not marked `can_move`, which would let
//! the e-graph sink it back into the loop), so a constant defined before a loop stays in a
//! register across it, the way compiled Rust keeps it. Zero stays an `f64const` (one `xor`).

use jitdiff_ir::{Imm, Module, Opcode};
use rustc_hash::FxHashMap as HashMap;

/// Every distinct non-zero `fconst` bit pattern of a module, at a stable address.
pub(crate) struct ConstantPool {
    // Boxed so the addresses baked into code never move; owned by the compiled module.
    values: Box<[u64]>,
    index: HashMap<u64, usize>,
}

impl ConstantPool {
    /// Collect the float constants of `module`.
    pub fn of(module: &Module) -> ConstantPool {
        let mut values = vec![];
        let mut index = HashMap::default();
        for inst in module.functions.iter().flat_map(|f| &f.blocks).flat_map(|b| &b.insts) {
            let Imm::F64(x) = inst.imm else { continue };
            if inst.op != Opcode::FConst || x.to_bits() == 0 {
                continue;
            }
            // `2C` too, for the rewrite of `fmul C, (fadd a, a)` (see `doubling.rs`).
            let doubled = super::doubling::doubling_is_exact(x).then_some(2.0 * x);
            for c in std::iter::once(x).chain(doubled) {
                index.entry(c.to_bits()).or_insert_with(|| {
                    values.push(c.to_bits());
                    values.len() - 1
                });
            }
        }
        ConstantPool { values: values.into_boxed_slice(), index }
    }

    /// The address of the constant with these bits, if it is in the pool.
    pub fn address(&self, bits: u64) -> Option<u64> {
        let k = *self.index.get(&bits)?;
        Some(self.values.as_ptr() as u64 + 8 * k as u64)
    }
}
