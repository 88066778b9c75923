//! `tpush` and `tpop` on the call's `TapeState` (see `crate::tape` for the layout and the
//! invariant `cursor <= len <= cap`).
//!
//! A function that uses the tape keeps the state's four fields in Cranelift variables — so in
//! registers, with the length carried around loops as a block parameter — and writes `len` and
//! `cursor` back to the state only where someone else may look: before a call of a module
//! function (which uses the same tape), before returning, and on every error exit (so after a
//! failure the tape holds what was pushed before it, as with the interpreter). After such a call
//! it reloads all four, since the callee may have pushed, popped or grown the buffer. The
//! alternative, reading and writing the state in memory at every push, chains each push to the
//! previous one through a store-to-load forward (about 5 cycles each), which made a reverse
//! sweep's forward pass several times slower than the primal.

use super::func::{ColdRun, FuncLowerer};
use crate::abi;
use crate::error::JitError;
use crate::sites::{Site, SiteKind};
use crate::tape::{BASE_OFFSET, CAP_OFFSET, CURSOR_OFFSET, LEN_OFFSET};
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{self as clif, BlockArg, InstBuilder, MemFlagsData, types};
use cranelift_frontend::Variable;
use jitdiff_ir::{Function, Opcode, Type, Value};

/// Tape entries and the state's fields: 8-byte aligned, in bounds by the state's invariant.
fn tape_flags() -> MemFlagsData {
    MemFlagsData::new().with_notrap().with_aligned()
}

/// The variables holding a tape-using function's copy of the `TapeState` fields. A function
/// that only pops (a pullback) never changes `len` or `cap`: it neither loads nor writes them,
/// which keeps two registers free in its loops.
#[derive(Clone, Copy)]
pub(crate) struct TapeVars {
    base: Variable,
    len: Variable,
    cap: Variable,
    cursor: Variable,
    pushes: bool,
}

/// Whether `f` has any tape instruction (only such functions keep the state in variables).
pub(crate) fn uses_tape(f: &Function) -> bool {
    f.blocks
        .iter()
        .flat_map(|b| &b.insts)
        .any(|i| matches!(i.op, Opcode::TPush | Opcode::TPop | Opcode::TSplit | Opcode::TRejoin))
}

impl FuncLowerer<'_, '_> {
    /// At the function's entry: declare the variables and load the state into them.
    pub(super) fn init_tape_vars(&mut self) {
        let pushes = self.f.blocks.iter().flat_map(|b| &b.insts).any(|i| i.op == Opcode::TPush);
        let vars = TapeVars {
            base: self.b.declare_var(abi::PTR),
            len: self.b.declare_var(types::I64),
            cap: self.b.declare_var(types::I64),
            cursor: self.b.declare_var(types::I64),
            pushes,
        };
        self.tape_vars = Some(vars);
        self.reload_tape_vars();
    }

    /// Read all four fields from the state (at entry, and after a call that may have changed it).
    pub(super) fn reload_tape_vars(&mut self) {
        let Some(vars) = self.tape_vars else { return };
        let tape = self.tape;
        let mut fields = vec![(vars.base, abi::PTR, BASE_OFFSET), (vars.cursor, types::I64, CURSOR_OFFSET)];
        if vars.pushes {
            fields.extend([(vars.len, types::I64, LEN_OFFSET), (vars.cap, types::I64, CAP_OFFSET)]);
        }
        for (var, ty, offset) in fields {
            let value = self.b.ins().load(ty, tape_flags(), tape, offset);
            self.b.def_var(var, value);
        }
    }

    /// Write `len` (if this function pushes) and `cursor` back to the state (before a call, a
    /// return or an error exit).
    /// `base` and `cap` only ever change in the grow helper, which writes them itself.
    pub(super) fn sync_tape_vars(&mut self) {
        let Some(vars) = self.tape_vars else { return };
        let tape = self.tape;
        if vars.pushes {
            let len = self.b.use_var(vars.len);
            self.b.ins().store(tape_flags(), len, tape, LEN_OFFSET);
        }
        let cursor = self.b.use_var(vars.cursor);
        self.b.ins().store(tape_flags(), cursor, tape, CURSOR_OFFSET);
    }

    /// The tape fields an error exit writes back, read where it branches from: `len` when the
    /// function pushes, then `cursor` (none without tape variables).
    pub(super) fn exit_tape_values(&mut self) -> Vec<clif::Value> {
        let Some(vars) = self.tape_vars else { return vec![] };
        let mut values = vec![];
        if vars.pushes {
            values.push(self.b.use_var(vars.len));
        }
        values.push(self.b.use_var(vars.cursor));
        values
    }

    /// In an error exit, write back the tape fields passed to it first among `params` (see
    /// [`exit_tape_values`](Self::exit_tape_values)), the cursor replaced by `cursor` if given;
    /// returns how many parameters they were.
    pub(super) fn store_exit_tape_values(&mut self, params: &[clif::Value], cursor: Option<clif::Value>) -> usize {
        let Some(vars) = self.tape_vars else { return 0 };
        let tape = self.tape;
        let mut taken = 0;
        if vars.pushes {
            self.b.ins().store(tape_flags(), params[0], tape, LEN_OFFSET);
            taken = 1;
        }
        let cursor = cursor.unwrap_or(params[taken]);
        self.b.ins().store(tape_flags(), cursor, tape, CURSOR_OFFSET);
        taken + 1
    }

    /// Before lowering the first of `insts`: when it starts a run of two or more `tpop`s in a
    /// row (or `tpush`es up to the next instruction with an effect or that can fail, with pure
    /// arithmetic in between), check the whole run at once — `cursor >= run` (or room for `run`
    /// entries, growing the buffer as often as needed) — and let the run's operations skip
    /// their own checks. A reversed block pops its frame in one run and a forward block pushes
    /// it in one: one branch per block instead of one per entry, which keeps Cranelift's block
    /// count (and the register allocator's work at block boundaries) independent of the frame
    /// size. Errors stay exact: the run's sites are registered consecutively and the failing
    /// one is `first + index` (for pops, `index` is the cursor: the pops before it succeed).
    pub(super) fn check_tape_run(&mut self, insts: &[jitdiff_ir::InstData]) -> Result<(), JitError> {
        let Some(op) = insts.first().map(|i| i.op).filter(|op| matches!(op, Opcode::TPop | Opcode::TPush)) else {
            return Ok(());
        };
        if self.tape_checked_for_copy() {
            return Ok(());
        }
        let pending = if op == Opcode::TPop { self.unchecked_pops } else { self.reserved_pushes };
        if pending > 0 || self.tape_vars.is_none() {
            return Ok(());
        }
        // The run: consecutive pops; for pushes, every push up to the next instruction with an
        // effect or that can fail (so no store, call or failing load is skipped over by an early
        // error, and nothing else moves the tape in between). Pushes interleaved with tangent
        // arithmetic are what forward mode over a `_fwd` makes; pops spanning arithmetic made
        // the MLP's pullback 15 % slower (measured), and reversed blocks pop in one run anyway.
        let spans = |i: &&jitdiff_ir::InstData| {
            i.op == op || (op == Opcode::TPush && !(i.op.has_side_effects() || i.op.can_fail()))
        };
        let window = insts.iter().take_while(spans);
        let offsets: Vec<u32> = window.enumerate().filter(|(_, i)| i.op == op).map(|(k, _)| k as u32).collect();
        let run = offsets.len();
        if run < 2 {
            return Ok(());
        }
        let vars = self.vars()?;
        let kind = if op == Opcode::TPop { SiteKind::TapeUnderflow } else { SiteKind::TapeAllocation };
        let first = self.m.sites.add(Site { kind, func: self.fid, block: self.at_block, inst: self.at_inst });
        for (k, &offset) in offsets.iter().enumerate().skip(1) {
            let status =
                self.m.sites.add(Site { kind, func: self.fid, block: self.at_block, inst: self.at_inst + offset });
            if status != first + k as i32 {
                return Err(self.internal("tape run sites are not consecutive".into()));
            }
        }
        let cont = self.b.create_block();
        if op == Opcode::TPop {
            let err = self.b.create_block();
            self.b.set_cold_block(err);
            let cursor = self.b.use_var(vars.cursor);
            let args = self.exit_args(err, &[cursor]);
            if self.m.exits_follow_checks {
                let enough = self.b.ins().icmp_imm_u(IntCC::UnsignedGreaterThanOrEqual, cursor, run as i64);
                self.b.ins().brif(enough, cont, &[], err, &args);
            } else {
                let short = self.b.ins().icmp_imm_u(IntCC::UnsignedLessThan, cursor, run as i64);
                self.b.ins().brif(short, err, &args, cont, &[]);
            }
            self.b.seal_block(err);
            self.cold_runs.push(ColdRun { block: err, first, pops: true });
            self.unchecked_pops = run;
        } else {
            let len = self.b.use_var(vars.len);
            self.reserve(vars, len, run, first, cont)?;
            self.reserved_pushes = run;
        }
        self.b.seal_block(cont);
        self.b.switch_to_block(cont);
        Ok(())
    }

    /// Branch to `cont` when `run` more entries fit above `len`; else, in a cold block, have the
    /// helper grow the buffer until they do and continue at `cont`, or return the status of the
    /// first push that does not fit (`first` for the first of the run, then one more per push;
    /// the tape's length and cursor written back, as at every exit). The helper does the
    /// doubling: a loop here would be one more natural loop per push site for Cranelift to
    /// analyse and allocate around, and the site's blocks are the part of a reverse sweep's
    /// forward function that costs the most compile time.
    fn reserve(
        &mut self,
        vars: TapeVars,
        len: clif::Value,
        run: usize,
        first: i32,
        cont: clif::Block,
    ) -> Result<(), JitError> {
        let cap = self.b.use_var(vars.cap);
        let need = self.b.ins().iadd_imm_s(len, run as i64);
        let grow = self.b.create_block();
        self.b.set_cold_block(grow);
        self.branch_unless_short(need, cap, cont, grow);
        self.b.seal_block(grow);
        self.b.switch_to_block(grow);
        let cap = self.grow_to(vars, need)?;
        let failed = self.b.create_block();
        self.b.set_cold_block(failed);
        self.branch_unless_short(need, cap, cont, failed);
        self.b.seal_block(failed);
        self.b.switch_to_block(failed);
        // Entries up to `cap` fit: the push that does not is number `cap - len` of the run.
        let room = self.b.ins().isub(cap, len);
        let status = self.b.ins().iadd_imm_s(room, i64::from(first));
        let status = self.b.ins().ireduce(abi::STATUS, status);
        self.b.ins().return_(&[status]);
        Ok(())
    }

    /// The dispatch of a versioned loop (see `versioning.rs`): branch to `room` (with `args`)
    /// when `entries` more fit on the tape, growing it in a cold block if need be, else (the
    /// limit or the allocator stopped the growth) to `short`.
    pub(super) fn reserve_or(
        &mut self,
        entries: clif::Value,
        room: clif::Block,
        short: clif::Block,
        args: &[BlockArg],
    ) -> Result<(), JitError> {
        let vars = self.vars()?;
        let len = self.b.use_var(vars.len);
        let cap = self.b.use_var(vars.cap);
        let need = self.b.ins().iadd(len, entries);
        let fits = self.b.ins().icmp(IntCC::UnsignedLessThanOrEqual, need, cap);
        let grow = self.b.create_block();
        self.b.set_cold_block(grow);
        self.b.ins().brif(fits, room, args, grow, &[]);
        self.b.seal_block(grow);
        self.b.switch_to_block(grow);
        let cap = self.grow_to(vars, need)?;
        let fits = self.b.ins().icmp(IntCC::UnsignedLessThanOrEqual, need, cap);
        self.b.ins().brif(fits, room, args, short, args);
        Ok(())
    }

    /// In a cold block: have the helper grow the buffer until `need` entries fit (or it cannot)
    /// and take the new `base` and `cap`; returns `cap`. The helper reads `len` from the state
    /// (the entries it must keep) and writes `base` and `cap`.
    fn grow_to(&mut self, vars: TapeVars, need: clif::Value) -> Result<clif::Value, JitError> {
        self.sync_tape_vars();
        let helper = self.m.tape_grow_preserving_id()?;
        let helper = self.func_ref(helper);
        let tape = self.tape;
        self.b.ins().call(helper, &[tape, need]);
        let base = self.b.ins().load(abi::PTR, tape_flags(), tape, BASE_OFFSET);
        let cap = self.b.ins().load(types::I64, tape_flags(), tape, CAP_OFFSET);
        self.b.def_var(vars.base, base);
        self.b.def_var(vars.cap, cap);
        Ok(cap)
    }

    /// The dispatch of a versioned loop that pops: does the tape hold `entries` below the
    /// cursor?
    pub(super) fn tape_holds(&mut self, entries: clif::Value) -> Result<clif::Value, JitError> {
        let vars = self.vars()?;
        let cursor = self.b.use_var(vars.cursor);
        Ok(self.b.ins().icmp(IntCC::UnsignedLessThanOrEqual, entries, cursor))
    }

    /// Are the tape operations of the fast copy being lowered checked by its dispatch?
    fn tape_checked_for_copy(&self) -> bool {
        self.copy.is_some_and(|k| self.versioned[k].tape.is_some())
    }

    /// Branch to `cont` when `need <= cap`, else to `cold`, the successors in the order the
    /// function's exits take (see `ModuleLowering::exits_follow_checks`).
    fn branch_unless_short(&mut self, need: clif::Value, cap: clif::Value, cont: clif::Block, cold: clif::Block) {
        if self.m.exits_follow_checks {
            let fits = self.b.ins().icmp(IntCC::UnsignedLessThanOrEqual, need, cap);
            self.b.ins().brif(fits, cont, &[], cold, &[]);
        } else {
            let short = self.b.ins().icmp(IntCC::UnsignedGreaterThan, need, cap);
            self.b.ins().brif(short, cold, &[], cont, &[]);
        }
    }

    fn vars(&self) -> Result<TapeVars, JitError> {
        self.tape_vars.ok_or_else(|| self.internal("tape operation without tape variables".into()))
    }

    /// `tpush x`: grow if `len == cap`, store `x`'s 64 bits at `base + 8 * len`, then
    /// `len = cursor = len + 1`.
    pub(super) fn lower_tpush(&mut self, x: Value) -> Result<(), JitError> {
        let vars = self.vars()?;
        let value = self.scalar(x);
        // An f64 is stored as is (its bits); a bool widened to 0 or 1.
        let bits = match self.ty(x) {
            Type::F64 | Type::I64 => value,
            Type::Bool => self.b.ins().uextend(types::I64, value),
            other => return Err(self.internal(format!("tpush of a {other}"))),
        };
        let len = self.b.use_var(vars.len);
        if self.tape_checked_for_copy() {
            // The dispatch of this fast copy made room for all of the loop's pushes.
            return self.store_entry(vars, len, bits);
        }
        if self.reserved_pushes > 0 {
            // A run checked at once (`check_tape_run`): there is room.
            self.reserved_pushes -= 1;
            return self.store_entry(vars, len, bits);
        }
        let status = self.m.sites.add(Site {
            kind: SiteKind::TapeAllocation,
            func: self.fid,
            block: self.at_block,
            inst: self.at_inst,
        });
        let store = self.b.create_block();
        self.reserve(vars, len, 1, status, store)?;
        self.b.seal_block(store);
        self.b.switch_to_block(store);
        self.store_entry(vars, len, bits)
    }

    /// Store `bits` at entry `len` (there is room) and step `len` and `cursor` past it.
    fn store_entry(&mut self, vars: TapeVars, len: clif::Value, bits: clif::Value) -> Result<(), JitError> {
        let base = self.b.use_var(vars.base);
        let offset = self.b.ins().ishl_imm_u(len, 3);
        let addr = self.b.ins().iadd(base, offset);
        self.b.ins().store(tape_flags(), bits, addr, 0);
        let next = self.b.ins().iadd_imm_s(len, 1);
        self.b.def_var(vars.len, next);
        self.b.def_var(vars.cursor, next);
        Ok(())
    }

    /// The tape's base address and cursor (for a paired loop's pops).
    pub(super) fn tape_base_and_cursor(&mut self) -> Result<(clif::Value, clif::Value), JitError> {
        let vars = self.vars()?;
        Ok((self.b.use_var(vars.base), self.b.use_var(vars.cursor)))
    }

    /// The tape's base address and length, where the next push goes (for a paired loop's
    /// pushes).
    pub(super) fn tape_base_and_len(&mut self) -> Result<(clif::Value, clif::Value), JitError> {
        let vars = self.vars()?;
        Ok((self.b.use_var(vars.base), self.b.use_var(vars.len)))
    }

    /// Move the cursor to `to`, and the length with it after pushes (`pushed`).
    pub(super) fn set_tape_cursor(&mut self, to: clif::Value, pushed: bool) -> Result<(), JitError> {
        let vars = self.vars()?;
        if pushed {
            self.b.def_var(vars.len, to);
        }
        self.b.def_var(vars.cursor, to);
        Ok(())
    }

    /// `tpop.T`: fail if `cursor == 0`, else `cursor -= 1` and read the entry there as `ty`.
    pub(super) fn lower_tpop(&mut self, ty: Type) -> Result<clif::Value, JitError> {
        let vars = self.vars()?;
        let cursor = self.b.use_var(vars.cursor);
        if self.tape_checked_for_copy() {
            // The dispatch of this fast copy checked all of the loop's pops.
        } else if self.unchecked_pops > 0 {
            // A run checked at once (`check_tape_run`): the entry is there.
            self.unchecked_pops -= 1;
        } else {
            let nonempty = self.b.ins().icmp_imm_s(IntCC::NotEqual, cursor, 0);
            self.fail_unless(nonempty, SiteKind::TapeUnderflow);
        }
        let below = self.b.ins().iadd_imm_s(cursor, -1);
        self.b.def_var(vars.cursor, below);
        let base = self.b.use_var(vars.base);
        let offset = self.b.ins().ishl_imm_u(below, 3);
        let addr = self.b.ins().iadd(base, offset);
        Ok(match ty {
            Type::F64 => self.b.ins().load(types::F64, tape_flags(), addr, 0),
            Type::I64 => self.b.ins().load(types::I64, tape_flags(), addr, 0),
            Type::Bool => {
                let entry = self.b.ins().load(types::I64, tape_flags(), addr, 0);
                self.b.ins().icmp_imm_s(IntCC::NotEqual, entry, 0)
            }
            other => return Err(self.internal(format!("tpop of a {other}"))),
        })
    }

    /// `tsplit`: the cursor, which moves to `len` (read from the state when this function does
    /// not push: then nothing here changed it since the last call wrote it back).
    pub(super) fn lower_tsplit(&mut self) -> Result<clif::Value, JitError> {
        let vars = self.vars()?;
        let cursor = self.b.use_var(vars.cursor);
        let len = if vars.pushes {
            self.b.use_var(vars.len)
        } else {
            let tape = self.tape;
            self.b.ins().load(types::I64, tape_flags(), tape, LEN_OFFSET)
        };
        self.b.def_var(vars.cursor, len);
        Ok(cursor)
    }

    /// `trejoin c`: fail unless `c <= cursor`, then `len = cursor` (the segment above is
    /// dropped) and `cursor = c`.
    pub(super) fn lower_trejoin(&mut self, c: Value) -> Result<(), JitError> {
        let vars = self.vars()?;
        let c = self.scalar(c);
        let cursor = self.b.use_var(vars.cursor);
        let ok = self.b.ins().icmp(IntCC::UnsignedLessThanOrEqual, c, cursor);
        self.fail_unless(ok, SiteKind::TapeUnderflow);
        let cursor = self.b.use_var(vars.cursor);
        if vars.pushes {
            self.b.def_var(vars.len, cursor);
        } else {
            let tape = self.tape;
            self.b.ins().store(tape_flags(), cursor, tape, LEN_OFFSET);
        }
        self.b.def_var(vars.cursor, c);
        Ok(())
    }
}
