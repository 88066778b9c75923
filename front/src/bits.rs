//! Bit operations on integers: `&`, `|`, `^`, `<<`, `>>` and `!`, with Rust's results for each
//! integer type although every one lives in an IR `i64` (`i32` sign-extended, `u32`
//! zero-extended).
//!
//! `&`, `|` and `^` of two values so extended are extended the same way. A shift takes its
//! amount modulo the type's width, as Rust's release builds do (a debug build panics for an
//! amount of the width or more); `<<` of a 32-bit type keeps the low 32 bits (extended again),
//! `>>` is arithmetic for signed types and logical for unsigned ones. `!` of a `u64`/`usize`
//! would need bits an `i64` cannot hold for them: an error.

use crate::error::{Result, unsupported};
use crate::lower::Lowerer;
use crate::types::IntKind;
use jitdiff_ir::{Opcode, Value};

impl Lowerer<'_> {
    /// `a op b` for `op` one of `&`, `|`, `^`, `<<`, `>>` on integers of `kind`.
    pub(crate) fn int_bit_op(&mut self, op: &syn::BinOp, kind: IntKind, a: Value, b: Value) -> Value {
        use syn::BinOp as B;
        let narrow = matches!(kind, IntKind::I32 | IntKind::U32);
        match op {
            B::BitAnd(_) | B::BitAndAssign(_) => self.ssa.op(Opcode::IAnd, &[a, b]),
            B::BitOr(_) | B::BitOrAssign(_) => self.ssa.op(Opcode::IOr, &[a, b]),
            B::BitXor(_) | B::BitXorAssign(_) => self.ssa.op(Opcode::IXor, &[a, b]),
            B::Shl(_) | B::ShlAssign(_) => {
                let amount = if narrow { self.masked(b, 31) } else { b };
                let shifted = self.ssa.op(Opcode::IShl, &[a, amount]);
                if narrow { self.extend_32(shifted, kind) } else { shifted }
            }
            _ => {
                let amount = if narrow { self.masked(b, 31) } else { b };
                let shift = if kind.is_unsigned() { Opcode::UShr } else { Opcode::IShr };
                self.ssa.op(shift, &[a, amount])
            }
        }
    }

    /// `!a` on integers of `kind`.
    pub(crate) fn int_not(&mut self, kind: IntKind, a: Value, span: proc_macro2::Span) -> Result<Value> {
        let ones = match kind {
            IntKind::U32 => self.ssa.iconst(i64::from(u32::MAX)),
            IntKind::U64 | IntKind::Usize => {
                return Err(unsupported(
                    span,
                    format!(
                        "`!` on `{}` values (the result is above `i64::MAX`, which the IR cannot hold)",
                        kind.name()
                    ),
                    "use `^` with the mask you need, or a signed type",
                ));
            }
            _ => self.ssa.iconst(-1),
        };
        Ok(self.ssa.op(Opcode::IXor, &[a, ones]))
    }

    fn masked(&mut self, v: Value, mask: i64) -> Value {
        let m = self.ssa.iconst(mask);
        self.ssa.op(Opcode::IAnd, &[v, m])
    }

    /// The low 32 bits of `v`, sign-extended for `i32` and zero-extended for `u32`.
    pub(crate) fn extend_32(&mut self, v: Value, kind: IntKind) -> Value {
        let thirty_two = self.ssa.iconst(32);
        let high = self.ssa.op(Opcode::IShl, &[v, thirty_two]);
        let shift = if kind == IntKind::U32 { Opcode::UShr } else { Opcode::IShr };
        self.ssa.op(shift, &[high, thirty_two])
    }
}
