//! Entities and data of the IR: values, blocks, instructions, terminators, functions, modules.

use crate::opcode::{CondCode, Opcode};
use crate::types::Type;
use rustc_hash::FxHashMap as HashMap;
use smallvec::{SmallVec, smallvec};
use std::sync::Arc;

// The entities below are indices, created only by the functions and modules that own what they
// index (so no code outside this crate fabricates one from a raw integer); with the `testing`
// feature, `from_index` makes any, for tests that build malformed IR on purpose.

/// An SSA value: an index into [`Function::values`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Value(pub(crate) u32);

/// A basic block: an index into [`Function::blocks`]. Block 0 is the entry block.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Block(pub(crate) u32);

/// A function of a module: an index into [`Module::functions`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FuncId(pub(crate) u32);

/// A declared extern: an index into [`Module::externs`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ExternId(pub(crate) u32);

/// A read-only data table of a module: an index into [`Module::tables`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TableId(pub(crate) u32);

macro_rules! entity {
    ($($entity:ident),*) => {$(
        impl $entity {
            /// The index as `usize`.
            pub fn index(self) -> usize {
                self.0 as usize
            }
            /// The entity with index `index`: for tests that build malformed IR on purpose
            /// (feature `testing`). Everything else gets entities from what owns them.
            #[cfg(feature = "testing")]
            pub const fn from_index(index: usize) -> $entity {
                $entity(index as u32)
            }
        }
    )*};
}
entity!(Value, Block, FuncId, ExternId, TableId);

impl Block {
    /// The entry block of every function.
    pub const ENTRY: Block = Block(0);
}

/// What a call instruction calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Callee {
    /// A function of the same module.
    Func(FuncId),
    /// A declared extern of the same module.
    Extern(ExternId),
}

/// An instruction's immediate operand.
#[derive(Clone, Copy, Debug)]
pub enum Imm {
    /// No immediate.
    None,
    /// `fconst`'s value. Compared by bit pattern, so NaN constants round-trip.
    F64(f64),
    /// `iconst`'s value.
    I64(i64),
    /// `bconst`'s value.
    Bool(bool),
    /// The condition of `fcmp`/`icmp`.
    Cond(CondCode),
    /// The lane of `extract`/`insert`.
    Lane(u8),
    /// The result type of `splat`/`vload`.
    Type(Type),
    /// The callee of `call`.
    Callee(Callee),
    /// The data table of `table`.
    Table(TableId),
}

impl PartialEq for Imm {
    fn eq(&self, other: &Imm) -> bool {
        match (self, other) {
            (Imm::None, Imm::None) => true,
            (Imm::F64(a), Imm::F64(b)) => a.to_bits() == b.to_bits(),
            (Imm::I64(a), Imm::I64(b)) => a == b,
            (Imm::Bool(a), Imm::Bool(b)) => a == b,
            (Imm::Cond(a), Imm::Cond(b)) => a == b,
            (Imm::Lane(a), Imm::Lane(b)) => a == b,
            (Imm::Type(a), Imm::Type(b)) => a == b,
            (Imm::Callee(a), Imm::Callee(b)) => a == b,
            (Imm::Table(a), Imm::Table(b)) => a == b,
            _ => false,
        }
    }
}

impl Eq for Imm {}

// Consistent with `PartialEq`: floats by bit pattern.
impl std::hash::Hash for Imm {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        std::mem::discriminant(self).hash(state);
        match *self {
            Imm::None => {}
            Imm::F64(x) => x.to_bits().hash(state),
            Imm::I64(x) => x.hash(state),
            Imm::Bool(x) => x.hash(state),
            Imm::Cond(c) => c.hash(state),
            Imm::Lane(k) => k.hash(state),
            Imm::Type(t) => t.hash(state),
            Imm::Callee(c) => c.hash(state),
            Imm::Table(t) => t.hash(state),
        }
    }
}

/// The operands or results of an instruction, or a jump's arguments: up to four inline.
///
/// Almost every instruction has at most three operands and one result; kept inline, a
/// function's instructions are not two heap allocations each, which is what made cloning and
/// rewriting large functions slow (the allocator, not the passes, dominated).
///
/// ```
/// use jitdiff_ir::ValueList;
/// let list: ValueList = ValueList::new();
/// assert!(!list.spilled() && list.is_empty());
/// ```
pub type ValueList = SmallVec<[Value; 4]>;

/// One instruction: an opcode, SSA operands, an immediate and result values.
#[derive(Clone, Debug, PartialEq)]
pub struct InstData {
    /// The primitive.
    pub op: Opcode,
    /// SSA operands.
    pub args: ValueList,
    /// The immediate operand, if the opcode has one.
    pub imm: Imm,
    /// The values this instruction defines (zero or one, or a callee's result count).
    pub results: ValueList,
}

/// A jump target with the arguments bound to its block parameters.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct BlockCall {
    /// The destination.
    pub block: Block,
    /// One argument per block parameter.
    pub args: ValueList,
}

/// How a block ends.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Terminator {
    /// `jump dest(args)`.
    Jump(BlockCall),
    /// `br cond, then_dest(args), else_dest(args)`.
    Branch {
        /// A `bool` value.
        cond: Value,
        /// Taken when `cond` is true.
        then_dest: BlockCall,
        /// Taken when `cond` is false.
        else_dest: BlockCall,
    },
    /// `ret values`.
    Return(Vec<Value>),
}

impl Terminator {
    /// The jump targets (none for `ret`).
    pub fn successors(&self) -> SmallVec<[&BlockCall; 2]> {
        match self {
            Terminator::Jump(c) => smallvec![c],
            Terminator::Branch { then_dest, else_dest, .. } => smallvec![then_dest, else_dest],
            Terminator::Return(_) => SmallVec::new(),
        }
    }
    /// Mutable jump targets.
    pub fn successors_mut(&mut self) -> SmallVec<[&mut BlockCall; 2]> {
        match self {
            Terminator::Jump(c) => smallvec![c],
            Terminator::Branch { then_dest, else_dest, .. } => smallvec![then_dest, else_dest],
            Terminator::Return(_) => SmallVec::new(),
        }
    }
    /// Every value the terminator reads.
    pub fn uses(&self) -> ValueList {
        match self {
            Terminator::Jump(c) => c.args.clone(),
            Terminator::Branch { cond, then_dest, else_dest } => {
                let mut v: ValueList = smallvec![*cond];
                v.extend_from_slice(&then_dest.args);
                v.extend_from_slice(&else_dest.args);
                v
            }
            Terminator::Return(vals) => vals.iter().copied().collect(),
        }
    }
    /// Apply `f` to every value the terminator reads.
    pub fn map_uses(&mut self, mut f: impl FnMut(Value) -> Value) {
        match self {
            Terminator::Jump(c) => c.args.iter_mut().for_each(|v| *v = f(*v)),
            Terminator::Branch { cond, then_dest, else_dest } => {
                *cond = f(*cond);
                then_dest.args.iter_mut().for_each(|v| *v = f(*v));
                else_dest.args.iter_mut().for_each(|v| *v = f(*v));
            }
            Terminator::Return(vals) => vals.iter_mut().for_each(|v| *v = f(*v)),
        }
    }
}

/// A basic block: a label, parameters, straight-line instructions and one terminator.
#[derive(Clone, Debug, PartialEq)]
pub struct BlockData {
    /// The label, unique within the function.
    pub name: String,
    /// Block parameters (the entry block has none: function parameters play that role).
    pub params: Vec<Value>,
    /// Instructions in order.
    pub insts: Vec<InstData>,
    /// The terminator; `None` only while a block is being built (the verifier rejects it).
    pub term: Option<Terminator>,
}

/// Per-value data: its type and optional name.
#[derive(Clone, Debug, PartialEq)]
pub struct ValueData {
    /// The value's type.
    pub ty: Type,
    /// A name unique within the function, or `None` (printed as `v<index>`).
    pub name: Option<String>,
}

/// A function: a signature and a body of blocks. Block 0 is the entry block.
#[derive(Clone, Debug, PartialEq)]
pub struct Function {
    /// The function's name (without the `@`).
    pub name: String,
    /// Parameter values, in order.
    pub params: Vec<Value>,
    /// Result types, in order.
    pub returns: Vec<Type>,
    /// Blocks; `blocks[0]` is the entry.
    pub blocks: Vec<BlockData>,
    /// Every value's data, indexed by [`Value`].
    pub values: Vec<ValueData>,
    /// Which value names are taken, so that naming a value is not a scan of every value.
    names: NameIndex,
    /// The same for block labels.
    block_names: NameIndex,
}

/// The taken names of a function's values (or blocks), kept up to date incrementally:
/// entries appended since the last question (named or not, by any means) are scanned on the
/// next one, and a hit is checked against the entry it points to, so a name changed behind the
/// index's back is found again by a full rescan. Naming is then not a scan of every value —
/// which made deriving long straight-line code quadratic.
#[derive(Clone, Default)]
struct NameIndex {
    taken: HashMap<String, usize>,
    scanned: usize,
    /// Per base name, the suffix to try first (the last one given, plus one).
    next_suffix: HashMap<String, usize>,
}

impl NameIndex {
    /// Bring the index up to date with the `len` entries whose names `name_of` gives, and say
    /// whether `name` is taken by an entry other than `except`.
    fn is_taken<'a>(
        &mut self,
        len: usize,
        name_of: impl Fn(usize) -> Option<&'a str>,
        name: &str,
        except: usize,
    ) -> bool {
        if self.scanned > len {
            *self = NameIndex::default();
        }
        for i in self.scanned..len {
            if let Some(n) = name_of(i) {
                self.taken.insert(n.to_string(), i);
            }
        }
        self.scanned = len;
        match self.taken.get(name) {
            Some(&owner) if owner < len && name_of(owner) == Some(name) => owner != except,
            Some(_) => {
                // Stale: rebuild from scratch and ask again.
                *self = NameIndex::default();
                self.is_taken(len, name_of, name, except)
            }
            None => false,
        }
    }

    /// `base`, or `base` with the first free suffix `sep k`, for entry `except`; recorded as
    /// taken.
    fn unique<'a>(
        &mut self,
        len: usize,
        name_of: impl Fn(usize) -> Option<&'a str> + Copy,
        base: String,
        sep: &str,
        except: usize,
    ) -> String {
        let mut candidate = base.clone();
        if self.is_taken(len, name_of, &candidate, except) {
            let mut k = self.next_suffix.get(&base).copied().unwrap_or(1);
            loop {
                candidate = format!("{base}{sep}{k}");
                if !self.is_taken(len, name_of, &candidate, except) {
                    break;
                }
                k += 1;
            }
            self.next_suffix.insert(base, k + 1);
        }
        self.taken.insert(candidate.clone(), except);
        candidate
    }
}

// The index is a cache: it takes no part in equality, and prints as nothing.
impl PartialEq for NameIndex {
    fn eq(&self, _: &NameIndex) -> bool {
        true
    }
}

impl std::fmt::Debug for NameIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("..")
    }
}

/// Is `name` of the reserved form `v<digits>`, which the printer uses for unnamed values?
pub fn is_anonymous_value_name(name: &str) -> bool {
    name.len() > 1 && name.starts_with('v') && name[1..].bytes().all(|b| b.is_ascii_digit())
}

impl Function {
    /// An empty function with the given name and result types.
    pub fn new(name: impl Into<String>, returns: Vec<Type>) -> Function {
        Function {
            name: name.into(),
            params: vec![],
            returns,
            blocks: vec![],
            values: vec![],
            names: NameIndex::default(),
            block_names: NameIndex::default(),
        }
    }
    /// A value's type.
    pub fn ty(&self, v: Value) -> Type {
        self.values[v.index()].ty
    }
    /// Does the function allocate local arrays (`alloc`)?
    pub fn allocates(&self) -> bool {
        self.blocks.iter().flat_map(|b| &b.insts).any(|i| i.op == crate::opcode::Opcode::Alloc)
    }
    /// Parameter types, in order.
    pub fn param_types(&self) -> Vec<Type> {
        self.params.iter().map(|&p| self.ty(p)).collect()
    }
    /// Create a new value of type `ty` (not yet defined anywhere).
    pub fn new_value(&mut self, ty: Type) -> Value {
        self.values.push(ValueData { ty, name: None });
        Value(self.values.len() as u32 - 1)
    }
    /// Append a function parameter.
    pub fn add_param(&mut self, ty: Type, name: Option<&str>) -> Value {
        let v = self.new_value(ty);
        if let Some(n) = name {
            self.set_value_name(v, n);
        }
        self.params.push(v);
        v
    }
    /// Append a block with a unique label derived from `name`.
    pub fn add_block(&mut self, name: &str) -> Block {
        let label = self.unique_block_name(name);
        self.blocks.push(BlockData { name: label, params: vec![], insts: vec![], term: None });
        Block(self.blocks.len() as u32 - 1)
    }
    /// Append a block parameter.
    pub fn add_block_param(&mut self, block: Block, ty: Type, name: Option<&str>) -> Value {
        let v = self.new_value(ty);
        if let Some(n) = name {
            self.set_value_name(v, n);
        }
        self.blocks[block.index()].params.push(v);
        v
    }
    /// The id of every block, in order (block 0 is the entry).
    pub fn block_ids(&self) -> impl ExactSizeIterator<Item = Block> + use<> {
        (0..self.blocks.len() as u32).map(Block)
    }
    /// A block's data.
    pub fn block(&self, b: Block) -> &BlockData {
        &self.blocks[b.index()]
    }
    /// A block's data, mutably.
    pub fn block_mut(&mut self, b: Block) -> &mut BlockData {
        &mut self.blocks[b.index()]
    }
    /// Look a block up by label.
    pub fn block_by_name(&self, name: &str) -> Option<Block> {
        self.blocks.iter().position(|b| b.name == name).map(|i| Block(i as u32))
    }
    /// Name a value. Names are made unique within the function (a numeric suffix is added on a
    /// clash) and the reserved form `v<digits>` is avoided, so printing never needs to invent
    /// names and the text round-trips. Returns the name actually given.
    pub fn set_value_name(&mut self, v: Value, name: &str) -> String {
        let base = sanitize_name(name);
        let base = if is_anonymous_value_name(&base) { format!("{base}_") } else { base };
        let values = &self.values;
        let name = self.names.unique(values.len(), |i| values[i].name.as_deref(), base, "_", v.index());
        self.values[v.index()].name = Some(name.clone());
        name
    }
    /// The printed name of a value: its name, or `v<index>`.
    pub fn value_label(&self, v: Value) -> String {
        match self.values.get(v.index()).and_then(|d| d.name.as_deref()) {
            Some(n) => n.to_string(),
            None => format!("v{}", v.0),
        }
    }
    fn unique_block_name(&mut self, name: &str) -> String {
        let base = sanitize_name(name);
        let blocks = &self.blocks;
        // The new block is not pushed yet: its index is `blocks.len()`.
        self.block_names.unique(blocks.len(), |i| Some(blocks[i].name.as_str()), base, "", blocks.len())
    }

    /// Renumber values in textual order — parameters, then per block its parameters and its
    /// instruction results — and drop values defined nowhere. Every module the builder, the
    /// parser and the passes produce is canonical, so structural equality is the same as
    /// equality of printed text.
    pub fn canonicalize(&mut self) {
        const UNSEEN: u32 = u32::MAX;
        let count = self.values.len();
        // The new index of each old value, in textual order of definition.
        let mut remap: Vec<u32> = vec![UNSEEN; count];
        let mut order: Vec<u32> = Vec::with_capacity(count);
        let mut define = |v: Value, remap: &mut Vec<u32>| {
            if let Some(slot) = remap.get_mut(v.index()).filter(|slot| **slot == UNSEEN) {
                *slot = order.len() as u32;
                order.push(v.0);
            }
        };
        for &p in &self.params {
            define(p, &mut remap);
        }
        for b in &self.blocks {
            for &p in &b.params {
                define(p, &mut remap);
            }
            for inst in &b.insts {
                for &r in &inst.results {
                    define(r, &mut remap);
                }
            }
        }
        // Already canonical (the common case after a pass that renumbered nothing): every value
        // is defined, in index order.
        if order.len() == count && order.iter().enumerate().all(|(i, &v)| v == i as u32) {
            return;
        }
        let mut old_values: Vec<Option<ValueData>> = std::mem::take(&mut self.values).into_iter().map(Some).collect();
        let mut values: Vec<ValueData> =
            order.iter().map(|&v| old_values[v as usize].take().expect("defined once")).collect();
        // A use of an undefined value (only in unverified IR) keeps a fresh index past the end so
        // the verifier can still report it.
        let mut beyond: HashMap<u32, u32> = HashMap::default();
        let mut map = |v: Value| -> Value {
            match remap.get(v.index()) {
                Some(&n) if n != UNSEEN => Value(n),
                Some(_) => {
                    let data = old_values[v.index()].take();
                    let n = values.len() as u32;
                    values.push(data.unwrap_or(ValueData { ty: Type::F64, name: None }));
                    remap[v.index()] = n;
                    Value(n)
                }
                None => Value(*beyond.entry(v.0).or_insert_with(|| {
                    values.push(ValueData { ty: Type::F64, name: None });
                    values.len() as u32 - 1
                })),
            }
        };
        self.params.iter_mut().for_each(|v| *v = map(*v));
        for b in &mut self.blocks {
            b.params.iter_mut().for_each(|v| *v = map(*v));
            for inst in &mut b.insts {
                inst.args.iter_mut().for_each(|v| *v = map(*v));
                inst.results.iter_mut().for_each(|v| *v = map(*v));
            }
            if let Some(t) = &mut b.term {
                t.map_uses(&mut map);
            }
        }
        self.values = values;
        // Names moved with their values; the index of taken names is rebuilt on next use.
        self.forget_name_indexes();
    }

    /// Drop the indexes of taken value and block names (rebuilt on next use): after blocks or
    /// values were removed or reordered, which an index updated by appending cannot follow.
    pub(crate) fn forget_name_indexes(&mut self) {
        self.names = NameIndex::default();
        self.block_names = NameIndex::default();
    }
}

fn sanitize_name(name: &str) -> String {
    let mut s: String = name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).collect();
    if s.is_empty() || s.as_bytes()[0].is_ascii_digit() {
        s.insert(0, '_');
    }
    s
}

/// An extern declaration: a native function the user registers by name.
#[derive(Clone, Debug, PartialEq)]
pub struct ExternDecl {
    /// The symbol name (without the `@`).
    pub name: String,
    /// Parameter types.
    pub params: Vec<Type>,
    /// Result types.
    pub returns: Vec<Type>,
    /// Set when the extern is a derivative jitdiff derives from a function of the module
    /// (`extern @g(...) -> ... = grad reverse @f wrt 1`) rather than one the user registers.
    pub derivative: Option<crate::DerivativeOf>,
}

/// A read-only data table: `f64` constants a function reads as a `slice` (`t = table @name`),
/// the way compiled code reads a Rust `const Y: [f64; N]`. The data is shared between clones of
/// a module (derived modules carry every table of their source along).
///
/// Equality compares the values by bit pattern, as `fconst` does, so tables holding NaNs or
/// `-0.0` round-trip through the text format.
///
/// ```
/// use jitdiff_ir::Table;
/// let y = Table::new("y", vec![0.14, 0.18, f64::NAN]);
/// assert_eq!(y.data.len(), 3);
/// assert_eq!(y, Table::new("y", vec![0.14, 0.18, f64::NAN]));
/// assert_ne!(y, Table::new("y", vec![0.14, 0.18, 0.0]));
/// ```
#[derive(Clone, Debug)]
pub struct Table {
    /// The table's name (without the `@`); functions, externs and tables share one namespace.
    pub name: String,
    /// The values.
    pub data: Arc<[f64]>,
}

impl Table {
    /// A table named `name` holding `data`.
    pub fn new(name: impl Into<String>, data: impl Into<Arc<[f64]>>) -> Table {
        Table { name: name.into(), data: data.into() }
    }
    /// Same values, bit for bit?
    pub fn same_data(&self, other: &[f64]) -> bool {
        self.data.len() == other.len() && self.data.iter().zip(other).all(|(a, b)| a.to_bits() == b.to_bits())
    }
}

impl PartialEq for Table {
    fn eq(&self, other: &Table) -> bool {
        self.name == other.name && self.same_data(&other.data)
    }
}

/// A module: extern declarations, read-only data tables and functions. Calls and `table`
/// instructions refer to them by index.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Module {
    /// Declared externs.
    pub externs: Vec<ExternDecl>,
    /// Read-only data tables.
    pub tables: Vec<Table>,
    /// Functions.
    pub functions: Vec<Function>,
}

impl Module {
    /// An empty module.
    pub fn new() -> Module {
        Module::default()
    }
    /// Find a function by name.
    pub fn func_id(&self, name: &str) -> Option<FuncId> {
        self.functions.iter().position(|f| f.name == name).map(|i| FuncId(i as u32))
    }
    /// Find an extern by name.
    pub fn extern_id(&self, name: &str) -> Option<ExternId> {
        self.externs.iter().position(|e| e.name == name).map(|i| ExternId(i as u32))
    }
    /// Find a table by name.
    pub fn table_id(&self, name: &str) -> Option<TableId> {
        self.tables.iter().position(|t| t.name == name).map(|i| TableId(i as u32))
    }
    /// A table by id, if it exists.
    pub fn table(&self, id: TableId) -> Option<&Table> {
        self.tables.get(id.index())
    }
    /// Is `name` taken by a function, an extern or a table (they share one namespace)?
    pub fn name_taken(&self, name: &str) -> bool {
        self.func_id(name).is_some() || self.extern_id(name).is_some() || self.table_id(name).is_some()
    }
    /// Append a table; its id.
    ///
    /// ```
    /// use jitdiff_ir::{Module, Table};
    /// let mut m = Module::new();
    /// let id = m.push_table(Table::new("y", vec![1.0, 2.0]));
    /// assert_eq!(m.table_id("y"), Some(id));
    /// ```
    pub fn push_table(&mut self, table: Table) -> TableId {
        self.tables.push(table);
        TableId(self.tables.len() as u32 - 1)
    }
    /// A function by id.
    pub fn func(&self, id: FuncId) -> &Function {
        &self.functions[id.index()]
    }
    /// A function by name.
    pub fn func_by_name(&self, name: &str) -> Option<&Function> {
        self.func_id(name).map(|id| self.func(id))
    }
    /// The parameter and result types of a callee.
    pub fn callee_signature(&self, callee: Callee) -> Option<(Vec<Type>, Vec<Type>)> {
        match callee {
            Callee::Func(id) => self.functions.get(id.index()).map(|f| (f.param_types(), f.returns.clone())),
            Callee::Extern(id) => self.externs.get(id.index()).map(|e| (e.params.clone(), e.returns.clone())),
        }
    }
    /// The name of a callee.
    pub fn callee_name(&self, callee: Callee) -> &str {
        match callee {
            Callee::Func(id) => self.functions.get(id.index()).map_or("<bad function>", |f| &f.name),
            Callee::Extern(id) => self.externs.get(id.index()).map_or("<bad extern>", |e| &e.name),
        }
    }
    /// Canonicalize every function (see [`Function::canonicalize`]).
    pub fn canonicalize(&mut self) {
        self.functions.iter_mut().for_each(Function::canonicalize);
    }
    /// The id of every function, in order.
    pub fn func_ids(&self) -> impl ExactSizeIterator<Item = FuncId> + use<> {
        (0..self.functions.len() as u32).map(FuncId)
    }
    /// Append a function; its id.
    ///
    /// ```
    /// use jitdiff_ir::{Function, Module};
    /// let mut m = Module::new();
    /// let id = m.push_function(Function::new("f", vec![]));
    /// assert_eq!(m.func_id("f"), Some(id));
    /// ```
    pub fn push_function(&mut self, function: Function) -> FuncId {
        self.functions.push(function);
        FuncId(self.functions.len() as u32 - 1)
    }
    /// The id the next [`push_function`](Self::push_function) will return.
    pub fn next_func_id(&self) -> FuncId {
        FuncId(self.functions.len() as u32)
    }
    /// Append an extern declaration; its id.
    pub fn push_extern(&mut self, decl: ExternDecl) -> ExternId {
        self.externs.push(decl);
        ExternId(self.externs.len() as u32 - 1)
    }
    /// Append every function of `other` (calls among them renumbered, their externs declared
    /// here by name, reusing a declaration of the same name; their tables added, reusing a table
    /// of the same name and values, renamed where the name is taken); the ids they get, in
    /// order.
    pub fn append(&mut self, other: &Module) -> Vec<FuncId> {
        let base = self.functions.len() as u32;
        let externs: Vec<ExternId> = other
            .externs
            .iter()
            .map(|decl| self.extern_id(&decl.name).unwrap_or_else(|| self.push_extern(decl.clone())))
            .collect();
        let tables: Vec<TableId> = other.tables.iter().map(|t| self.add_table(t)).collect();
        for f in &other.functions {
            let mut copy = f.clone();
            for inst in copy.blocks.iter_mut().flat_map(|b| b.insts.iter_mut()) {
                match &mut inst.imm {
                    Imm::Callee(callee) => {
                        *callee = match *callee {
                            Callee::Func(id) => Callee::Func(FuncId(base + id.0)),
                            Callee::Extern(id) => Callee::Extern(externs[id.index()]),
                        };
                    }
                    Imm::Table(id) => {
                        if let Some(&new) = tables.get(id.index()) {
                            *id = new;
                        }
                    }
                    _ => {}
                }
            }
            self.functions.push(copy);
        }
        (0..other.functions.len() as u32).map(|k| FuncId(base + k)).collect()
    }

    /// The id of a table with `table`'s name and values: an existing one, or `table` added (under
    /// a fresh name, `name_2` ..., when its name is taken).
    fn add_table(&mut self, table: &Table) -> TableId {
        if let Some(id) = self.table_id(&table.name)
            && self.tables[id.index()].same_data(&table.data)
        {
            return id;
        }
        let mut name = table.name.clone();
        let mut k = 2;
        while self.name_taken(&name) {
            name = format!("{}_{k}", table.name);
            k += 1;
        }
        self.push_table(Table { name, data: table.data.clone() })
    }
}
