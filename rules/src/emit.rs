//! The small interface through which rules write IR: a rule never sees the function it is
//! emitted into, only this.

use jitdiff_ir::{Block, Function, Imm, InstData, Opcode, Type, Value};

/// Somewhere IR instructions can be appended.
///
/// ```
/// use jitdiff_ir::{Function, Opcode, Imm, Type};
/// use jitdiff_rules::{Emit, BlockEmitter};
/// let mut f = Function::new("f", vec![Type::F64]);
/// let entry = f.add_block("entry");
/// let mut em = BlockEmitter::new(&mut f, entry);
/// let two = em.fconst(2.0);
/// let four = em.emit(Opcode::FMul, &[two, two], Imm::None);
/// assert_eq!(f.ty(four), Type::F64);
/// ```
pub trait Emit {
    /// Append an instruction with one result and return that result.
    fn emit(&mut self, op: Opcode, args: &[Value], imm: Imm) -> Value;
    /// The type of a value.
    fn ty(&self, v: Value) -> Type;

    /// A float constant.
    fn fconst(&mut self, x: f64) -> Value {
        self.emit(Opcode::FConst, &[], Imm::F64(x))
    }
    /// `a op b` for a float binary opcode.
    fn bin(&mut self, op: Opcode, a: Value, b: Value) -> Value {
        self.emit(op, &[a, b], Imm::None)
    }
    /// `op a` for a float unary opcode.
    fn un(&mut self, op: Opcode, a: Value) -> Value {
        self.emit(op, &[a], Imm::None)
    }
}

/// An [`Emit`] that appends to the end of one block of a function.
pub struct BlockEmitter<'f> {
    func: &'f mut Function,
    block: Block,
}

impl<'f> BlockEmitter<'f> {
    /// Emit into `block` of `func`.
    pub fn new(func: &'f mut Function, block: Block) -> BlockEmitter<'f> {
        BlockEmitter { func, block }
    }
    /// The block instructions go to.
    pub fn block(&self) -> Block {
        self.block
    }
    /// Move to another block.
    pub fn switch_to(&mut self, block: Block) {
        self.block = block;
    }
    /// The function being emitted into.
    pub fn func(&mut self) -> &mut Function {
        self.func
    }
    /// Append a ready-made instruction (its result values must already exist in the function).
    pub fn push(&mut self, inst: InstData) {
        self.func.block_mut(self.block).insts.push(inst);
    }
    /// Append an instruction with any number of results of the given types.
    pub fn emit_multi(&mut self, op: Opcode, args: &[Value], imm: Imm, result_types: &[Type]) -> Vec<Value> {
        let results: Vec<Value> = result_types.iter().map(|&t| self.func.new_value(t)).collect();
        self.func.block_mut(self.block).insts.push(InstData {
            op,
            args: jitdiff_ir::ValueList::from_slice(args),
            imm,
            results: results.as_slice().into(),
        });
        results
    }
}

impl Emit for BlockEmitter<'_> {
    fn emit(&mut self, op: Opcode, args: &[Value], imm: Imm) -> Value {
        let types: Vec<Type> = args.iter().map(|&a| self.func.ty(a)).collect();
        // Rules only emit well-typed instructions; an ill-typed one would be caught by the verifier
        // run on every derived function, so fall back to f64 rather than panic here.
        let ty = op.result_type(&types, &imm).flatten().unwrap_or(Type::F64);
        self.emit_multi(op, args, imm, &[ty])[0]
    }
    fn ty(&self, v: Value) -> Type {
        self.func.ty(v)
    }
}
