//! Entities and data of the IR: values, blocks, instructions, terminators, functions, modules.

use crate::opcode::{CondCode, Opcode};
use crate::types::Type;
use std::collections::{HashMap, HashSet};

/// An SSA value: an index into [`Function::values`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Value(pub u32);

/// A basic block: an index into [`Function::blocks`]. Block 0 is the entry block.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Block(pub u32);

/// A function of a module: an index into [`Module::functions`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FuncId(pub u32);

/// A declared extern: an index into [`Module::externs`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ExternId(pub u32);

impl Value {
    /// The index as `usize`.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}
impl Block {
    /// The entry block of every function.
    pub const ENTRY: Block = Block(0);
    /// The index as `usize`.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}
impl FuncId {
    /// The index as `usize`.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}
impl ExternId {
    /// The index as `usize`.
    pub fn index(self) -> usize {
        self.0 as usize
    }
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
            _ => false,
        }
    }
}

/// One instruction: an opcode, SSA operands, an immediate and result values.
#[derive(Clone, Debug, PartialEq)]
pub struct InstData {
    /// The primitive.
    pub op: Opcode,
    /// SSA operands.
    pub args: Vec<Value>,
    /// The immediate operand, if the opcode has one.
    pub imm: Imm,
    /// The values this instruction defines (zero or one, or a callee's result count).
    pub results: Vec<Value>,
}

/// A jump target with the arguments bound to its block parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct BlockCall {
    /// The destination.
    pub block: Block,
    /// One argument per block parameter.
    pub args: Vec<Value>,
}

/// How a block ends.
#[derive(Clone, Debug, PartialEq)]
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
    pub fn successors(&self) -> Vec<&BlockCall> {
        match self {
            Terminator::Jump(c) => vec![c],
            Terminator::Branch { then_dest, else_dest, .. } => vec![then_dest, else_dest],
            Terminator::Return(_) => vec![],
        }
    }
    /// Mutable jump targets.
    pub fn successors_mut(&mut self) -> Vec<&mut BlockCall> {
        match self {
            Terminator::Jump(c) => vec![c],
            Terminator::Branch { then_dest, else_dest, .. } => vec![then_dest, else_dest],
            Terminator::Return(_) => vec![],
        }
    }
    /// Every value the terminator reads.
    pub fn uses(&self) -> Vec<Value> {
        match self {
            Terminator::Jump(c) => c.args.clone(),
            Terminator::Branch { cond, then_dest, else_dest } => {
                let mut v = vec![*cond];
                v.extend(&then_dest.args);
                v.extend(&else_dest.args);
                v
            }
            Terminator::Return(vals) => vals.clone(),
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
}

/// Is `name` of the reserved form `v<digits>`, which the printer uses for unnamed values?
pub fn is_anonymous_value_name(name: &str) -> bool {
    name.len() > 1 && name.starts_with('v') && name[1..].bytes().all(|b| b.is_ascii_digit())
}

impl Function {
    /// An empty function with the given name and result types.
    pub fn new(name: impl Into<String>, returns: Vec<Type>) -> Function {
        Function { name: name.into(), params: vec![], returns, blocks: vec![], values: vec![] }
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
        let others =
            || self.values.iter().enumerate().filter(|(i, _)| *i != v.index()).filter_map(|(_, d)| d.name.as_deref());
        // Derived functions name thousands of values: only build the set of taken names when
        // the plain name is taken.
        if !others().any(|n| n == base) {
            self.values[v.index()].name = Some(base.clone());
            return base;
        }
        let taken: HashSet<&str> = others().collect();
        let mut candidate = base.clone();
        let mut k = 1;
        while taken.contains(candidate.as_str()) {
            candidate = format!("{base}_{k}");
            k += 1;
        }
        self.values[v.index()].name = Some(candidate.clone());
        candidate
    }
    /// The printed name of a value: its name, or `v<index>`.
    pub fn value_label(&self, v: Value) -> String {
        match self.values.get(v.index()).and_then(|d| d.name.as_deref()) {
            Some(n) => n.to_string(),
            None => format!("v{}", v.0),
        }
    }
    fn unique_block_name(&self, name: &str) -> String {
        let base = sanitize_name(name);
        let taken: HashSet<&str> = self.blocks.iter().map(|b| b.name.as_str()).collect();
        let mut candidate = base.clone();
        let mut k = 1;
        while taken.contains(candidate.as_str()) {
            candidate = format!("{base}{k}");
            k += 1;
        }
        candidate
    }

    /// Renumber values in textual order — parameters, then per block its parameters and its
    /// instruction results — and drop values defined nowhere. Every module the builder, the
    /// parser and the passes produce is canonical, so structural equality is the same as
    /// equality of printed text.
    pub fn canonicalize(&mut self) {
        let mut order: Vec<Value> = self.params.clone();
        for b in &self.blocks {
            order.extend(&b.params);
            for inst in &b.insts {
                order.extend(&inst.results);
            }
        }
        let mut remap: HashMap<Value, Value> = HashMap::with_capacity(order.len());
        let mut values = Vec::with_capacity(order.len());
        for (i, &v) in order.iter().enumerate() {
            remap.insert(v, Value(i as u32));
            values.push(self.values[v.index()].clone());
        }
        // A use of an undefined value (only in unverified IR) keeps a fresh index past the end so
        // the verifier can still report it.
        let mut next = values.len() as u32;
        let mut extra: Vec<ValueData> = vec![];
        let mut map = |v: Value, values: &Vec<ValueData>| -> Value {
            if let Some(&n) = remap.get(&v) {
                return n;
            }
            let n = Value(next);
            next += 1;
            extra.push(values.get(v.index()).cloned().unwrap_or(ValueData { ty: Type::F64, name: None }));
            remap.insert(v, n);
            n
        };
        let old_values = std::mem::take(&mut self.values);
        self.params = self.params.iter().map(|&v| map(v, &old_values)).collect();
        for b in &mut self.blocks {
            b.params = b.params.iter().map(|&v| map(v, &old_values)).collect();
            for inst in &mut b.insts {
                inst.args = inst.args.iter().map(|&v| map(v, &old_values)).collect();
                inst.results = inst.results.iter().map(|&v| map(v, &old_values)).collect();
            }
            if let Some(t) = &mut b.term {
                t.map_uses(|v| map(v, &old_values));
            }
        }
        values.extend(extra);
        self.values = values;
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
}

/// A module: extern declarations and functions. Calls refer to them by index.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Module {
    /// Declared externs.
    pub externs: Vec<ExternDecl>,
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
}
