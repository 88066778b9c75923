//! Per-function lowering state: the Cranelift parts of every IR value, the block map, failure
//! sites with their cold error blocks, and the scratch stack slot used by calls.

use super::ModuleLowering;
use super::checks::BoundsFacts;
use super::doubling::Doubling;
use super::versioning::{self, VersionedLoop};
use crate::abi::{self, part_count, slots_of};
use crate::error::JitError;
use crate::sites::{Site, SiteKind};
use cranelift_codegen::entity::packed_option::ReservedValue;
use cranelift_codegen::ir::{
    self as clif, BlockArg, ExtFuncData, ExternalName, FuncRef, InstBuilder, StackSlot, StackSlotData, StackSlotKind,
    UserExternalName, types,
};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext, Variable};
use cranelift_module::{FuncId as ClifFuncId, Module as _};
use jitdiff_ir::analysis::ControlFlow;
use jitdiff_ir::{Block, Callee, CondCode, FuncId, Function, Imm, Opcode, Type, Value};
use rustc_hash::FxHashMap as HashMap;
use std::ops::Deref;

/// The Cranelift values making up one IR value (at most 8: `f64x16` is 8 `F64X2` chunks).
#[derive(Clone, Copy)]
pub(crate) struct Parts {
    vals: [clif::Value; 8],
    len: u8,
}

impl Parts {
    pub fn new(values: &[clif::Value]) -> Parts {
        let mut vals = [clif::Value::reserved_value(); 8];
        let len = values.len().min(8);
        vals[..len].copy_from_slice(&values[..len]);
        Parts { vals, len: len as u8 }
    }
}

impl Deref for Parts {
    type Target = [clif::Value];
    fn deref(&self) -> &[clif::Value] {
        &self.vals[..self.len as usize]
    }
}

/// An error exit: its block, the status it returns, and whether it reports an out-of-bounds
/// index and length (its last two parameters: see `exit_args`).
type ColdExit = (clif::Block, i32, bool);

/// An error exit of a run of tape operations checked at once: the status is `first + index`,
/// the site of the operation that fails (see `tape.rs`); for pops the cursor was used up.
/// Its block's last parameter is the index (see `exit_args`).
pub(super) struct ColdRun {
    pub block: clif::Block,
    pub first: i32,
    pub pops: bool,
}

/// Lowers one IR function into its internal native function.
pub(crate) struct FuncLowerer<'a, 'm> {
    pub m: &'a mut ModuleLowering<'m>,
    pub f: &'m Function,
    pub fid: FuncId,
    pub b: FunctionBuilder<'a>,
    /// `offsets[v]` is the index of value `v`'s first part in `parts`.
    offsets: Vec<u32>,
    parts: Vec<clif::Value>,
    pub blocks: Vec<clif::Block>,
    /// This frame's depth on the IR call stack (entry function = 1).
    pub depth: clif::Value,
    /// Where results are written (slot layout).
    pub out: clif::Value,
    /// The call's `TapeState` (see `crate::tape`), passed on to every callee.
    pub tape: clif::Value,
    /// Values defined by `iconst`, for inline `powi`.
    pub consts: HashMap<Value, i64>,
    /// The exact rewrite of `fmul C, (fadd a, a)` (see `doubling.rs`).
    pub doubling: Doubling,
    /// Values defined by `fcmp`/`icmp`: defining block, opcode, condition, operands (for
    /// inverted branches).
    pub compares: HashMap<Value, (Block, Opcode, CondCode, Value, Value)>,
    /// Room for call results and closure arguments, shared by every call site.
    pub scratch: Option<StackSlot>,
    propagate: Option<clif::Block>,
    /// Error blocks to emit at the end.
    cold: Vec<ColdExit>,
    /// Error blocks of runs of tape operations checked at once.
    pub(super) cold_runs: Vec<ColdRun>,
    /// Pops (pushes) of the current run still to lower without their own check (`tape.rs`).
    pub(super) unchecked_pops: usize,
    pub(super) reserved_pushes: usize,
    refs: HashMap<ClifFuncId, FuncRef>,
    /// The global value of each table data object this function reads (see `tables.rs`).
    pub(super) table_refs: HashMap<cranelift_module::DataId, clif::GlobalValue>,
    /// The IR control flow (dominators, for redundant bounds checks).
    pub cfg: ControlFlow,
    /// How many natural loops contain each IR block (see `lower_terminator`).
    pub loop_depth: Vec<u32>,
    /// Whether some instruction or terminator uses each IR value.
    pub used: Vec<bool>,
    /// Accesses proved in bounds so far, and the shadow declarations.
    pub facts: BoundsFacts,
    pub at_block: Block,
    pub at_inst: u32,
    /// The `TapeState` fields in variables, for a function with tape operations (`tape.rs`).
    pub tape_vars: Option<super::tape::TapeVars>,
    /// The local-array allocator's mark, taken at entry by a function that allocates
    /// (`local_arrays.rs`).
    pub local_array_mark: Option<clif::Value>,
    /// Loops lowered twice, with and without bounds checks (`versioning.rs`).
    pub versioned: Vec<VersionedLoop>,
    /// Per block, the versioned loops containing it.
    pub versioned_around: Vec<Vec<usize>>,
    /// The versioned loop whose fast copy is being lowered, if any.
    pub copy: Option<usize>,
    /// Values defined in a versioned loop and used outside it: one variable per part, and the
    /// loop. Outside the loop they are read through the variables (defined in both copies).
    escapes: HashMap<Value, (usize, Vec<Variable>)>,
    /// Per block: the escaping values it uses that another block defines.
    escaping_uses: Vec<Vec<Value>>,
    /// Each copy's parts of an escaping value (`None`: the checked copy).
    copy_parts: HashMap<(Option<usize>, Value), Parts>,
    /// In the block being lowered: the partner of each `sin`/`cos` result computed by one fused
    /// call with it (`trig.rs`).
    pub trig_partners: HashMap<Value, Value>,
    /// Partners the fused call has computed, waiting for their instruction.
    pub trig_ready: HashMap<Value, clif::Value>,
}

/// Lower IR function `fid` into `func` (whose signature is already set).
pub(crate) fn lower_function(
    m: &mut ModuleLowering,
    func: &mut clif::Function,
    fctx: &mut FunctionBuilderContext,
    fid: FuncId,
) -> Result<(), JitError> {
    let f = m.ir.func(fid);
    let mut offsets = Vec::with_capacity(f.values.len());
    let mut total = 0u32;
    for v in &f.values {
        offsets.push(total);
        total += part_count(v.ty) as u32;
    }
    let consts = f
        .blocks
        .iter()
        .flat_map(|b| &b.insts)
        .filter_map(|i| match (i.op, i.imm, i.results.first()) {
            (Opcode::IConst, Imm::I64(k), Some(&r)) => Some((r, k)),
            _ => None,
        })
        .collect();
    let compares = f
        .block_ids()
        .flat_map(|block| f.block(block).insts.iter().map(move |i| (block, i)))
        .filter_map(|(block, i)| match (i.op, i.imm, &i.args[..], i.results.first()) {
            (Opcode::FCmp | Opcode::ICmp, Imm::Cond(cc), &[a, b], Some(&r)) => Some((r, (block, i.op, cc, a, b))),
            _ => None,
        })
        .collect();
    let b = FunctionBuilder::new(func, fctx);
    let depth = clif::Value::reserved_value();
    let facts = BoundsFacts::new(m.shadows.get(fid.index()).cloned().unwrap_or_default());
    let mut l = FuncLowerer {
        m,
        f,
        fid,
        b,
        offsets,
        parts: vec![clif::Value::reserved_value(); total as usize],
        blocks: vec![],
        depth,
        out: depth,
        tape: depth,
        consts,
        doubling: Doubling::of(f),
        compares,
        scratch: None,
        propagate: None,
        cold: vec![],
        cold_runs: vec![],
        unchecked_pops: 0,
        reserved_pushes: 0,
        refs: HashMap::default(),
        table_refs: HashMap::default(),
        cfg: ControlFlow::new(f),
        loop_depth: vec![],
        used: used_values(f),
        facts,
        at_block: Block::ENTRY,
        at_inst: 0,
        tape_vars: None,
        local_array_mark: None,
        versioned: vec![],
        versioned_around: vec![],
        copy: None,
        escapes: HashMap::default(),
        escaping_uses: vec![],
        copy_parts: HashMap::default(),
        trig_partners: HashMap::default(),
        trig_ready: HashMap::default(),
    };
    l.loop_depth = l.cfg.loop_depths(&l.cfg.natural_loops());
    if l.m.bounds_checks && std::env::var_os("JITDIFF_NO_VERSIONING").is_none() {
        l.versioned = versioning::plan(f, &l.cfg, &l.consts);
        l.facts.stats.versioned_loops = l.versioned.len();
        // Where Cranelift optimises, loops of shared arithmetic also run two iterations at a
        // time (`pairs.rs`), the first few of a function (each paired loop is a third copy to
        // compile); `JITDIFF_NO_PAIRS=1` turns it off, for comparisons.
        if !l.m.exits_follow_checks && std::env::var_os("JITDIFF_NO_PAIRS").is_none() {
            let mut left = super::pairs::MAX_PAIRED_LOOPS;
            for v in &mut l.versioned {
                if left > 0 {
                    v.pairs = super::pairs::plan(f, v, &l.loop_depth, &l.used);
                    left -= usize::from(v.pairs.is_some());
                }
            }
            l.facts.stats.paired_loops = l.versioned.iter().filter(|v| v.pairs.is_some()).count();
        }
    }
    l.versioned_around = versioning::loops_around(f.blocks.len(), &l.versioned);
    l.lower_body()?;
    l.finish();
    // Loops are rotated where Cranelift optimises (not in the large functions compiled for
    // compile time: rotation's analyses and edge blocks cost a many-loop function 40-70% more
    // compile time). `JITDIFF_NO_ROTATION=1` leaves loops top-tested, for comparisons.
    if !m.exits_follow_checks && std::env::var_os("JITDIFF_NO_ROTATION").is_none() {
        let rotated = super::rotate::rotate_loops(func);
        if let Some(stats) = m.check_stats.get_mut(fid.index()) {
            stats.rotated_loops = rotated;
        }
    }
    // Likewise where Cranelift optimises; `JITDIFF_NO_LOOP_COPIES=1` turns it off.
    if !m.exits_follow_checks && std::env::var_os("JITDIFF_NO_LOOP_COPIES").is_none() {
        let copied = super::loop_copies::copy_loop_values(func);
        if let Some(stats) = m.check_stats.get_mut(fid.index()) {
            stats.copied_loop_values = copied;
        }
    }
    Ok(())
}

/// Which values of `f` an instruction or a terminator uses.
fn used_values(f: &Function) -> Vec<bool> {
    let mut used = vec![false; f.values.len()];
    for block in &f.blocks {
        for &a in block.insts.iter().flat_map(|i| &i.args) {
            if let Some(u) = used.get_mut(a.index()) {
                *u = true;
            }
        }
        for a in block.term.iter().flat_map(|t| t.uses()) {
            if let Some(u) = used.get_mut(a.index()) {
                *u = true;
            }
        }
    }
    used
}

impl FuncLowerer<'_, '_> {
    fn lower_body(&mut self) -> Result<(), JitError> {
        let f = self.f;
        let entry = self.b.create_block();
        self.b.append_block_params_for_function_params(entry);
        self.blocks.push(entry);
        for block in f.blocks.iter().skip(1) {
            let blk = self.block_with_params(&block.params);
            self.blocks.push(blk);
        }
        self.create_versioned_blocks();
        self.b.switch_to_block(entry);
        let params = self.b.block_params(entry).to_vec();
        self.depth = params[0];
        self.out = params[1];
        self.tape = params[2];
        self.bind_all(&f.params, &params[3..]);
        self.test_pair_overlaps();
        if super::tape::uses_tape(f) {
            self.init_tape_vars();
        }
        if f.allocates() {
            self.take_local_array_mark()?;
        }
        let scratch_bytes = 8 * self.scratch_slots();
        if scratch_bytes > 0 {
            let data = StackSlotData::new(StackSlotKind::ExplicitSlot, scratch_bytes as u32, 4);
            self.scratch = Some(self.b.create_sized_stack_slot(data));
        }
        // Reverse post-order: every definition is lowered before its uses (dominators come
        // first), and unreachable blocks, which may use values defined nowhere reachable, are
        // left out. (Cranelift chooses the code layout itself: see `lower_terminator`.)
        self.check_shadow_lengths();
        let rpo = self.cfg.reverse_post_order().to_vec();
        // Seal each block as soon as its last predecessor is lowered (the entry at once): the
        // SSA construction behind the tape variables then resolves them locally instead of
        // giving every block placeholder parameters to clean up at the end.
        let mut unlowered_preds = vec![0usize; f.blocks.len()];
        for &block in &rpo {
            for &succ in self.cfg.successors(block) {
                unlowered_preds[succ.index()] += 1;
            }
        }
        let entry_block = self.blocks[0];
        self.b.seal_block(entry_block);
        // Blocks of versioned loops, and the blocks they exit to, gain predecessors when the fast
        // copies are lowered (after everything else): they are sealed at the end.
        let mut seal_late = vec![false; f.blocks.len()];
        for l in &self.versioned {
            for &b in &l.blocks {
                seal_late[b.index()] = true;
                for &succ in self.cfg.successors(b) {
                    seal_late[succ.index()] = true;
                }
            }
        }
        // Each versioned loop's blocks in reverse post-order, for its fast copy.
        let mut copy_order: Vec<Vec<Block>> = vec![vec![]; self.versioned.len()];
        for &block in &rpo {
            for &k in &self.versioned_around[block.index()] {
                copy_order[k].push(block);
            }
        }
        for &block in &rpo {
            let headed =
                self.versioned_around[block.index()].iter().copied().find(|&k| self.versioned[k].header == block);
            if let Some(k) = headed {
                self.emit_dispatch(k)?;
            }
            self.lower_block(block, self.blocks[block.index()])?;
            for &succ in self.cfg.successors(block) {
                let left = &mut unlowered_preds[succ.index()];
                *left -= 1;
                if *left == 0 && succ != Block::ENTRY && !seal_late[succ.index()] {
                    let blk = self.blocks[succ.index()];
                    self.b.seal_block(blk);
                }
            }
        }
        for (k, body) in copy_order.into_iter().enumerate() {
            self.copy = Some(k);
            for block in body {
                let blk = self.versioned[k].fast[&block];
                self.lower_block(block, blk)?;
            }
            self.copy = None;
        }
        for k in 0..self.versioned.len() {
            self.emit_pair_copy(k)?;
        }
        Ok(())
    }

    /// Lower IR block `block` into the (empty) Cranelift block `blk`.
    fn lower_block(&mut self, block: Block, blk: clif::Block) -> Result<(), JitError> {
        let data = self.f.block(block);
        if block != Block::ENTRY {
            self.b.switch_to_block(blk);
            let params = self.b.block_params(blk).to_vec();
            self.bind_all(&data.params, &params);
        }
        self.at_block = block;
        self.bind_escaping(block);
        self.trig_partners = super::trig::partners(&data.insts);
        self.trig_ready.clear();
        for (k, inst) in data.insts.iter().enumerate() {
            self.at_inst = k as u32;
            self.check_tape_run(&data.insts[k..])?;
            self.lower_inst(inst)?;
        }
        let Some(term) = &data.term else {
            return Err(self.internal(format!("block {} has no terminator", data.name)));
        };
        self.lower_terminator(term)
    }

    /// A new Cranelift block with the parts of IR block parameters `params` as its parameters.
    fn block_with_params(&mut self, params: &[Value]) -> clif::Block {
        let blk = self.b.create_block();
        for &p in params {
            for &t in abi::part_type(self.f.ty(p)) {
                self.b.append_block_param(blk, t);
            }
        }
        blk
    }

    /// Create the dispatch and fast-copy blocks of the versioned loops, and the variables of the
    /// values escaping them.
    fn create_versioned_blocks(&mut self) {
        let f = self.f;
        for k in 0..self.versioned.len() {
            let header = self.versioned[k].header;
            let dispatch = self.block_with_params(&f.block(header).params);
            self.versioned[k].dispatch = Some(dispatch);
            for b in self.versioned[k].blocks.clone() {
                let blk = self.block_with_params(&f.block(b).params);
                self.versioned[k].fast.insert(b, blk);
            }
            if self.versioned[k].pairs.is_some() {
                let pair_entry = Some(self.block_with_params(&f.block(header).params));
                let pair_header = self.block_with_params(&f.block(header).params);
                let pair_body = self.b.create_block();
                if let Some(p) = self.versioned[k].pairs.as_mut() {
                    p.entry_block = pair_entry;
                    p.header_block = Some(pair_header);
                    p.body_block = Some(pair_body);
                }
            }
        }
        self.escaping_uses = vec![vec![]; f.blocks.len()];
        for (v, k) in versioning::escaping_values(f, &self.versioned, &self.versioned_around) {
            let vars = abi::part_type(f.ty(v)).iter().map(|&t| self.b.declare_var(t)).collect();
            self.escapes.insert(v, (k, vars));
        }
        if self.escapes.is_empty() {
            return;
        }
        for (bi, block) in f.blocks.iter().enumerate() {
            let defined: Vec<Value> =
                block.params.iter().chain(block.insts.iter().flat_map(|i| &i.results)).copied().collect();
            let uses =
                block.insts.iter().flat_map(|i| i.args.iter().copied()).chain(block.term.iter().flat_map(|t| t.uses()));
            let mut list: Vec<Value> = uses.filter(|v| self.escapes.contains_key(v) && !defined.contains(v)).collect();
            list.sort_unstable_by_key(|v| v.index());
            list.dedup();
            self.escaping_uses[bi] = list;
        }
    }

    /// At the start of `block`: bind the escaping values it uses — the current copy's parts
    /// inside the value's loop, the variables' values outside it.
    fn bind_escaping(&mut self, block: Block) {
        let Some(list) = self.escaping_uses.get(block.index()) else { return };
        for v in list.clone() {
            let (k, vars) = self.escapes[&v].clone();
            let parts = if self.versioned[k].body[block.index()] {
                let copy = if self.copy == Some(k) { Some(k) } else { None };
                self.copy_parts.get(&(copy, v)).copied()
            } else {
                let values: Vec<clif::Value> = vars.iter().map(|&var| self.b.use_var(var)).collect();
                Some(Parts::new(&values))
            };
            if let Some(parts) = parts {
                let start = self.offsets[v.index()] as usize;
                self.parts[start..start + parts.len()].copy_from_slice(&parts);
            }
        }
    }

    /// A scalar defined outside the current loop, read where the current block is (through its
    /// variable if it escapes a versioned loop).
    pub fn scalar_outside(&mut self, v: Value) -> clif::Value {
        match self.escapes.get(&v) {
            Some((_, vars)) => {
                let var = vars[0];
                self.b.use_var(var)
            }
            None => self.scalar(v),
        }
    }

    /// Emit the cold error blocks and the status-propagation block, then finish the function.
    fn finish(mut self) {
        if let Some(stats) = self.m.check_stats.get_mut(self.fid.index()) {
            *stats = self.facts.stats;
        }
        for run in std::mem::take(&mut self.cold_runs) {
            self.b.switch_to_block(run.block);
            let params = self.b.block_params(run.block).to_vec();
            // Pops before the failing one succeeded: the cursor is at the bottom.
            let bottom = run.pops.then(|| self.b.ins().iconst(types::I64, 0));
            let taken = self.store_exit_tape_values(&params, bottom);
            let index = params[taken];
            let status = self.b.ins().iadd_imm_s(index, i64::from(run.first));
            let status = self.b.ins().ireduce(abi::STATUS, status);
            self.b.ins().return_(&[status]);
        }
        for (blk, status, detail) in std::mem::take(&mut self.cold) {
            self.b.switch_to_block(blk);
            let params = self.b.block_params(blk).to_vec();
            let taken = self.store_exit_tape_values(&params, None);
            if detail {
                // The failing index and the length go to the first two result slots (every out
                // buffer has at least two): plain stores, so the hot path gets no call-ABI
                // register constraints from its error exits.
                let out = self.out;
                self.b.ins().store(abi::slot_flags(), params[taken], out, 0);
                self.b.ins().store(abi::slot_flags(), params[taken + 1], out, 8);
            }
            let s = self.b.ins().iconst(abi::STATUS, i64::from(status));
            self.b.ins().return_(&[s]);
        }
        if let Some(blk) = self.propagate {
            // A callee failed: pass its status on, with the detail slots it wrote into our
            // scratch space (meaningful for out-of-bounds failures, ignored otherwise).
            self.b.switch_to_block(blk);
            let s = self.b.block_params(blk)[0];
            if let Some(slot) = self.scratch {
                let out = self.out;
                let scratch = self.b.ins().stack_addr(abi::PTR, slot, 0);
                for offset in [0, 8] {
                    let detail = self.b.ins().load(types::I64, abi::slot_flags(), scratch, offset);
                    self.b.ins().store(abi::slot_flags(), detail, out, offset);
                }
            }
            self.b.ins().return_(&[s]);
        }
        self.b.seal_all_blocks();
        self.b.finalize(self.m.frontend_config);
    }

    /// Slots of scratch memory the calls of this function need.
    fn scratch_slots(&self) -> usize {
        let mut most = 0;
        for inst in self.f.blocks.iter().flat_map(|b| &b.insts) {
            let Imm::Callee(callee) = inst.imm else { continue };
            let Some((params, returns)) = self.m.ir.callee_signature(callee) else { continue };
            let need = match callee {
                // Room for the callee's results, and at least the two failure-detail slots.
                Callee::Func(_) => slots_of(&returns).max(abi::MIN_OUT_SLOTS),
                // At least one slot, so even a closure without arguments or results has an address.
                Callee::Extern(_) => (slots_of(&params) + slots_of(&returns)).max(1),
            };
            most = most.max(need);
        }
        most
    }

    /// Bind IR values to consecutive Cranelift values.
    fn bind_all(&mut self, values: &[Value], clif_values: &[clif::Value]) {
        let mut at = 0;
        for &v in values {
            let n = part_count(self.f.ty(v));
            self.set(v, &clif_values[at..at + n]);
            at += n;
        }
    }

    /// The parts of an IR value.
    pub fn get(&self, v: Value) -> Parts {
        let start = self.offsets[v.index()] as usize;
        let n = part_count(self.f.ty(v));
        Parts::new(&self.parts[start..start + n])
    }

    /// The single part of a scalar IR value.
    pub fn scalar(&self, v: Value) -> clif::Value {
        self.parts[self.offsets[v.index()] as usize]
    }

    /// Define an IR value.
    pub fn set(&mut self, v: Value, parts: &[clif::Value]) {
        let start = self.offsets[v.index()] as usize;
        self.parts[start..start + parts.len()].copy_from_slice(parts);
        if let Some((_, vars)) = self.escapes.get(&v) {
            for (&var, &part) in vars.iter().zip(parts) {
                self.b.def_var(var, part);
            }
            self.copy_parts.insert((self.copy, v), Parts::new(parts));
        }
    }

    /// The type of an IR value.
    pub fn ty(&self, v: Value) -> Type {
        self.f.ty(v)
    }

    /// Continue only if `ok` (an `I8` truth value) holds; otherwise return the status of a new
    /// failure site of `kind` at the current instruction, from a cold block.
    pub fn fail_unless(&mut self, ok: clif::Value, kind: SiteKind) {
        self.fail_unless_with(ok, kind, None);
    }

    /// [`fail_unless`](Self::fail_unless), recording `(index, len)` for an out-of-bounds report.
    pub fn fail_unless_with(&mut self, ok: clif::Value, kind: SiteKind, detail: Option<(clif::Value, clif::Value)>) {
        let status = self.m.sites.add(Site { kind, func: self.fid, block: self.at_block, inst: self.at_inst });
        let err = self.b.create_block();
        self.b.set_cold_block(err);
        let cont = self.b.create_block();
        // The continuation goes first: Cranelift's block order (reverse post-order of a
        // depth-first walk that enters the first successor first) then puts the error block
        // right after this one instead of after everything this block reaches. At the end of
        // that order, which the register allocator walks, an exit keeps every value it reads
        // live up to there: with one exit per check, O(n) values live across each block
        // (quadratic; 25,000 blocks that each push to the tape took 26 s). Emission still puts
        // cold blocks last.
        let extra = detail.map(|(index, len)| [index, len]);
        let args = self.exit_args(err, extra.as_ref().map_or(&[][..], |d| &d[..]));
        if self.m.exits_follow_checks {
            self.b.ins().brif(ok, cont, &[], err, &args);
        } else {
            let failed = self.b.ins().icmp_imm_u(cranelift_codegen::ir::condcodes::IntCC::Equal, ok, 0);
            self.b.ins().brif(failed, err, &args, cont, &[]);
        }
        // Both have their one predecessor now: sealing them at once lets the SSA builder
        // resolve variables (the tape's) locally instead of through placeholder parameters.
        self.b.seal_block(err);
        self.b.seal_block(cont);
        self.b.switch_to_block(cont);
        self.cold.push((err, status, detail.is_some()));
    }

    /// The arguments of a branch to error exit `exit`, appended to it as parameters: the tape
    /// fields it writes back ([`exit_tape_values`](Self::exit_tape_values)), then `extra`.
    ///
    /// Exits are emitted after everything else and sit at the end of the block order the
    /// register allocator walks; one that named the hot path's values directly would keep each
    /// of them live from its definition to the end of the function (for `n` exits, `O(n)` values
    /// live across every block: quadratic allocation, 26 s for 25,000 blocks that each push).
    /// Passed along the edge, a value's live range ends at the branch.
    pub(super) fn exit_args(&mut self, exit: clif::Block, extra: &[clif::Value]) -> Vec<BlockArg> {
        let mut values = self.exit_tape_values();
        values.extend_from_slice(extra);
        for &v in &values {
            let ty = self.b.func.dfg.value_type(v);
            self.b.append_block_param(exit, ty);
        }
        values.into_iter().map(BlockArg::from).collect()
    }

    /// Return `status` from this function if it is non-zero (a callee failed).
    pub fn propagate_failure(&mut self, status: clif::Value) {
        let blk = match self.propagate {
            Some(blk) => blk,
            None => {
                let blk = self.b.create_block();
                self.b.append_block_param(blk, abi::STATUS);
                self.b.set_cold_block(blk);
                self.propagate = Some(blk);
                blk
            }
        };
        let cont = self.b.create_block();
        self.b.ins().brif(status, blk, &[status.into()], cont, &[]);
        self.b.switch_to_block(cont);
    }

    /// The address of the scratch slot plus `offset` bytes.
    pub fn scratch_addr(&mut self, offset: i32) -> Result<clif::Value, JitError> {
        let slot = self.scratch.ok_or_else(|| self.internal("call without scratch space".into()))?;
        Ok(self.b.ins().stack_addr(abi::PTR, slot, offset))
    }

    /// A reference to `id` usable in this function, called through an absolute address.
    ///
    /// Never "colocated": code of one module may be spread over separately mapped regions, so a
    /// 32-bit PC-relative call could be out of range; an absolute call always reaches.
    pub fn func_ref(&mut self, id: ClifFuncId) -> FuncRef {
        if let Some(&r) = self.refs.get(&id) {
            return r;
        }
        let signature = self.m.jit.get().declarations().get_function_decl(id).signature.clone();
        let signature = self.b.import_signature(signature);
        let name = self.b.func.declare_imported_user_function(UserExternalName { namespace: 0, index: id.as_u32() });
        let r = self.b.import_function(ExtFuncData {
            name: ExternalName::user(name),
            signature,
            colocated: false,
            patchable: false,
        });
        self.refs.insert(id, r);
        r
    }

    /// An `I64` constant.
    pub fn iconst(&mut self, k: i64) -> clif::Value {
        self.b.ins().iconst(types::I64, k)
    }

    /// An internal-error `JitError` about this function.
    pub fn internal(&self, message: String) -> JitError {
        JitError::Codegen { function: self.f.name.clone(), message }
    }
}
