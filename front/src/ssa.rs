//! The function under construction: blocks, the current insertion point and instruction
//! helpers. Control flow between blocks (joins, loop headers) is in `join.rs`.
//!
//! Instructions are typed by the op table ([`Opcode::result_type`]); an instruction whose
//! operands do not fit would be a bug of the front end, which the verifier run on the finished
//! module reports as an internal error — nothing here panics.

use jitdiff_ir::{
    Block, BlockCall, Callee, CondCode, FuncSpans, Function, Imm, InstData, Opcode, Pos, TableId, Terminator, Type,
    Value,
};
use rustc_hash::FxHashMap as HashMap;

/// A function being built, and where instructions go.
pub(crate) struct Ssa {
    pub func: Function,
    /// The block instructions are appended to.
    pub current: Block,
    /// Whether `current` can run: after `return`, `break` or `continue` lowering goes on in a
    /// fresh block nothing jumps to (Rust type-checks dead code too), which the clean-up passes
    /// then remove.
    pub reachable: bool,
    /// Instructions at the start of the entry block that must stay there (`alloc`s of local
    /// arrays and their sizes, `table`s); later entry instructions are inserted after them.
    entry_prefix: usize,
    /// The `table` instruction of each table the function reads, in its entry block.
    tables: HashMap<TableId, Value>,
    /// Where in the Rust source the instructions being emitted come from (the lowerer moves it
    /// to each access, operator and call that can fault).
    pub pos: Pos,
    /// Where each instruction and terminator of `func` came from, indexed like `func` (its
    /// source map as written, before any pass).
    pub spans: FuncSpans,
}

impl Ssa {
    pub(crate) fn new(name: &str, returns: Vec<Type>) -> Ssa {
        let func = Function::new(name, returns);
        let mut ssa = Ssa {
            func,
            current: Block::ENTRY,
            reachable: true,
            entry_prefix: 0,
            tables: HashMap::default(),
            pos: Pos::default(),
            spans: FuncSpans::default(),
        };
        ssa.current = ssa.new_block("entry");
        ssa
    }

    pub(crate) fn new_block(&mut self, name: &str) -> Block {
        self.spans.blocks.push(self.pos);
        self.spans.insts.push(vec![]);
        self.spans.terms.push(None);
        self.func.add_block(name)
    }

    /// Record the current position for an instruction inserted at `at` in `block`.
    fn record(&mut self, block: Block, at: Option<usize>) {
        if let Some(insts) = self.spans.insts.get_mut(block.index()) {
            match at {
                Some(at) if at <= insts.len() => insts.insert(at, self.pos),
                _ => insts.push(self.pos),
            }
        }
    }

    pub(crate) fn switch_to(&mut self, block: Block, reachable: bool) {
        self.current = block;
        self.reachable = reachable;
    }

    /// Continue in a fresh block that nothing jumps to (after a diverging expression).
    pub(crate) fn continue_dead(&mut self) {
        let block = self.new_block("dead");
        self.switch_to(block, false);
    }

    /// Append an instruction to the current block; its result, if it has one.
    pub(crate) fn push(&mut self, op: Opcode, args: Vec<Value>, imm: Imm) -> Option<Value> {
        let arg_types: Vec<Type> = args.iter().map(|&a| self.func.ty(a)).collect();
        // A misfit (a front-end bug) still gets a result, and the verifier reports it.
        let result_type = op.result_type(&arg_types, &imm).unwrap_or(Some(Type::F64));
        let result = result_type.map(|ty| self.func.new_value(ty));
        let inst = InstData { op, args: args.into(), imm, results: result.into_iter().collect() };
        self.func.block_mut(self.current).insts.push(inst);
        self.record(self.current, None);
        result
    }

    /// An instruction with one result.
    pub(crate) fn op(&mut self, op: Opcode, args: &[Value]) -> Value {
        self.op_imm(op, args, Imm::None)
    }

    pub(crate) fn op_imm(&mut self, op: Opcode, args: &[Value], imm: Imm) -> Value {
        match self.push(op, args.to_vec(), imm) {
            Some(v) => v,
            // Only `store`-like opcodes have no result; asking for one is a front-end bug, which
            // the verifier reports (a use of a value defined nowhere).
            None => self.func.new_value(Type::F64),
        }
    }

    pub(crate) fn fconst(&mut self, x: f64) -> Value {
        self.op_imm(Opcode::FConst, &[], Imm::F64(x))
    }
    pub(crate) fn iconst(&mut self, k: i64) -> Value {
        self.op_imm(Opcode::IConst, &[], Imm::I64(k))
    }
    pub(crate) fn bconst(&mut self, b: bool) -> Value {
        self.op_imm(Opcode::BConst, &[], Imm::Bool(b))
    }
    /// A constant of `ty` (any value: placeholders on paths that never run).
    pub(crate) fn zero(&mut self, ty: Type) -> Value {
        match ty {
            Type::I64 => self.iconst(0),
            Type::Bool => self.bconst(false),
            _ => self.fconst(0.0),
        }
    }
    pub(crate) fn fcmp(&mut self, cond: CondCode, a: Value, b: Value) -> Value {
        self.op_imm(Opcode::FCmp, &[a, b], Imm::Cond(cond))
    }
    pub(crate) fn icmp(&mut self, cond: CondCode, a: Value, b: Value) -> Value {
        self.op_imm(Opcode::ICmp, &[a, b], Imm::Cond(cond))
    }
    pub(crate) fn select(&mut self, cond: Value, a: Value, b: Value) -> Value {
        self.op(Opcode::Select, &[cond, a, b])
    }
    pub(crate) fn store(&mut self, slice: Value, index: Value, x: Value) {
        self.push(Opcode::Store, vec![slice, index, x], Imm::None);
    }
    /// A call; one value per result type.
    pub(crate) fn call(&mut self, callee: Callee, args: Vec<Value>, results: &[Type]) -> Vec<Value> {
        let values: Vec<Value> = results.iter().map(|&t| self.func.new_value(t)).collect();
        let inst = InstData {
            op: Opcode::Call,
            args: args.into(),
            imm: Imm::Callee(callee),
            results: values.as_slice().into(),
        };
        self.func.block_mut(self.current).insts.push(inst);
        self.record(self.current, None);
        values
    }

    /// A local array of `len` zeros, allocated in the entry block (where `alloc` must be).
    pub(crate) fn alloc_in_entry(&mut self, len: i64) -> Value {
        let size = self.func.new_value(Type::I64);
        let array = self.func.new_value(Type::SliceMut);
        let entry = self.func.block_mut(Block::ENTRY);
        let at = self.entry_prefix.min(entry.insts.len());
        entry.insts.insert(
            at,
            InstData {
                op: Opcode::IConst,
                args: smallvec::smallvec![],
                imm: Imm::I64(len),
                results: smallvec::smallvec![size],
            },
        );
        entry.insts.insert(
            at + 1,
            InstData {
                op: Opcode::Alloc,
                args: smallvec::smallvec![size],
                imm: Imm::None,
                results: smallvec::smallvec![array],
            },
        );
        self.entry_prefix = at + 2;
        self.record(Block::ENTRY, Some(at));
        self.record(Block::ENTRY, Some(at + 1));
        array
    }

    /// `value` as the entry block has it: itself where the entry block defines it (or it is a
    /// parameter), else a copy of its computation appended to the entry block, when that
    /// computation uses only operations that cannot fail or have effects (integer arithmetic,
    /// `len`, comparisons, `select`; a division only by a constant other than 0 and -1) on
    /// values the entry block has. `None` where it depends on anything else (a loop counter, a
    /// load). Used to allocate a local array the IR wants in the entry block, with the length
    /// an expression inside a loop or branch would give it: being pure, that expression has the
    /// same value there.
    pub(crate) fn value_in_entry(&mut self, value: Value) -> Option<Value> {
        let mut defs: HashMap<Value, (Block, usize)> = HashMap::default();
        for block in self.func.block_ids() {
            for (k, inst) in self.func.block(block).insts.iter().enumerate() {
                for &r in &inst.results {
                    defs.insert(r, (block, k));
                }
            }
        }
        let mut copies = HashMap::default();
        self.copy_into_entry(value, &defs, &mut copies, 0)
    }

    fn copy_into_entry(
        &mut self,
        value: Value,
        defs: &HashMap<Value, (Block, usize)>,
        copies: &mut HashMap<Value, Value>,
        depth: usize,
    ) -> Option<Value> {
        if self.func.params.contains(&value) {
            return Some(value);
        }
        if let Some(&copy) = copies.get(&value) {
            return Some(copy);
        }
        let &(block, k) = defs.get(&value)?;
        if block == Block::ENTRY {
            return Some(value);
        }
        let inst = self.func.block(block).insts[k].clone();
        let by_safe_constant = |this: &Self| {
            let divisor = inst.args.get(1).and_then(|d| defs.get(d)).map(|&(b, j)| &this.func.block(b).insts[j]);
            matches!(divisor, Some(d) if d.op == Opcode::IConst && !matches!(d.imm, Imm::I64(0 | -1)))
        };
        let pure = !inst.op.can_fail() && !inst.op.has_side_effects() && inst.op != Opcode::Table;
        let division = matches!(inst.op, Opcode::IDiv | Opcode::IRem) && by_safe_constant(self);
        if depth > 64 || inst.results.len() != 1 || !(pure || division) {
            return None;
        }
        let mut args = smallvec::SmallVec::new();
        for &arg in &inst.args {
            args.push(self.copy_into_entry(arg, defs, copies, depth + 1)?);
        }
        let result = self.func.new_value(self.func.ty(value));
        let entry = self.func.block_mut(Block::ENTRY);
        entry.insts.push(InstData { op: inst.op, args, imm: inst.imm, results: smallvec::smallvec![result] });
        self.record(Block::ENTRY, None);
        copies.insert(value, result);
        Some(result)
    }

    /// An instruction with one result appended to the entry block (its operands must be
    /// available there: see [`Ssa::value_in_entry`]).
    pub(crate) fn at_entry_end(&mut self, op: Opcode, args: &[Value], imm: Imm) -> Value {
        let arg_types: Vec<Type> = args.iter().map(|&a| self.func.ty(a)).collect();
        let ty = op.result_type(&arg_types, &imm).flatten().unwrap_or(Type::F64);
        let result = self.func.new_value(ty);
        self.func.block_mut(Block::ENTRY).insts.push(InstData {
            op,
            args: args.into(),
            imm,
            results: smallvec::smallvec![result],
        });
        self.record(Block::ENTRY, None);
        result
    }

    /// The module's table `table` as a slice: one `table` instruction per function, in the entry
    /// block, so that it dominates every use.
    pub(crate) fn table(&mut self, table: TableId) -> Value {
        if let Some(&value) = self.tables.get(&table) {
            return value;
        }
        let value = self.func.new_value(Type::Slice);
        let entry = self.func.block_mut(Block::ENTRY);
        let at = self.entry_prefix.min(entry.insts.len());
        entry.insts.insert(
            at,
            InstData {
                op: Opcode::Table,
                args: smallvec::smallvec![],
                imm: Imm::Table(table),
                results: smallvec::smallvec![value],
            },
        );
        self.entry_prefix = at + 1;
        self.record(Block::ENTRY, Some(at));
        self.tables.insert(table, value);
        value
    }

    /// End the current block (unless it already ended) with `term`.
    pub(crate) fn terminate(&mut self, term: Terminator) {
        let block = self.func.block_mut(self.current);
        if block.term.is_none() {
            block.term = Some(term);
            if let Some(slot) = self.spans.terms.get_mut(self.current.index()) {
                *slot = Some(self.pos);
            }
        }
    }
    pub(crate) fn jump(&mut self, target: Block, args: Vec<Value>) {
        self.terminate(Terminator::Jump(BlockCall { block: target, args: args.into() }));
    }
    /// `br cond, then_block, else_block` to two blocks without parameters.
    pub(crate) fn branch(&mut self, cond: Value, then_block: Block, else_block: Block) {
        self.terminate(Terminator::Branch {
            cond,
            then_dest: BlockCall { block: then_block, args: smallvec::smallvec![] },
            else_dest: BlockCall { block: else_block, args: smallvec::smallvec![] },
        });
    }

    /// Give every block that has no terminator yet — blocks nothing jumps to, after a
    /// diverging expression — a `ret` of placeholder values, so the function is well formed
    /// before the clean-up passes remove them.
    pub(crate) fn close_dead_blocks(&mut self) {
        let returns = self.func.returns.clone();
        for block in self.func.block_ids() {
            if self.func.block(block).term.is_none() {
                self.switch_to(block, false);
                let values = returns.iter().map(|&t| self.zero(t)).collect();
                self.terminate(Terminator::Return(values));
            }
        }
    }

    /// Name an unnamed value after the variable it is bound to (readable IR).
    pub(crate) fn name_value(&mut self, value: Value, name: &str) {
        let unnamed = self.func.values.get(value.index()).is_some_and(|d| d.name.is_none());
        let is_param = self.func.params.contains(&value);
        if unnamed && !is_param && !name.starts_with('_') {
            self.func.set_value_name(value, name);
        }
    }
}
