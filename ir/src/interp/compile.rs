//! Turning a [`Function`] into the interpreter's compact form, checking on the way everything the
//! run loop relies on (value indices, operand types, block targets, callee signatures), so the
//! run loop needs no type checks and unverified IR is reported instead of panicking.

use super::{InterpError, Site};
use crate::function::{BlockCall, Callee, Function, Imm, Module, Terminator, Value};
use crate::opcode::{CondCode, Opcode, Shape};
use crate::types::Type;

/// Where a value lives in a frame: a register of the flat register file (scalars and slice
/// handles) or `W` consecutive lanes of the lane file (vectors).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Operand {
    /// Register index: `f64` bits, `i64`, `bool` as 0/1, or a slice handle.
    Scalar(u32),
    /// Lane offset and width.
    Lanes(u32, u8),
}

/// A run of entries in one of a function's operand tables.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Span {
    start: u32,
    len: u32,
}

impl Span {
    pub(super) fn range(self) -> std::ops::Range<usize> {
        self.start as usize..(self.start + self.len) as usize
    }
}

/// A compiled instruction. Scalar operands are register indices; `w`-carrying variants take lane
/// offsets for their vector operands.
#[derive(Clone, Debug)]
pub(super) enum CInst {
    Const {
        dst: u32,
        bits: u64,
    },
    FUnary {
        op: Opcode,
        dst: u32,
        a: u32,
    },
    FBinary {
        op: Opcode,
        dst: u32,
        a: u32,
        b: u32,
    },
    Powi {
        dst: u32,
        a: u32,
        b: u32,
    },
    Fma {
        dst: u32,
        a: u32,
        b: u32,
        c: u32,
    },
    IUnary {
        op: Opcode,
        dst: u32,
        a: u32,
    },
    IBinary {
        op: Opcode,
        dst: u32,
        a: u32,
        b: u32,
    },
    BUnary {
        op: Opcode,
        dst: u32,
        a: u32,
    },
    BBinary {
        op: Opcode,
        dst: u32,
        a: u32,
        b: u32,
    },
    FCmp {
        cc: CondCode,
        dst: u32,
        a: u32,
        b: u32,
    },
    IsZero {
        dst: u32,
        a: u32,
    },
    VIsZero {
        dst: u32,
        a: u32,
        w: u8,
    },
    ICmp {
        cc: CondCode,
        dst: u32,
        a: u32,
        b: u32,
    },
    Select {
        dst: u32,
        c: u32,
        a: u32,
        b: u32,
    },
    VSelect {
        dst: u32,
        c: u32,
        a: u32,
        b: u32,
        w: u8,
    },
    IToF {
        dst: u32,
        a: u32,
    },
    FToI {
        dst: u32,
        a: u32,
    },
    Len {
        dst: u32,
        s: u32,
    },
    Load {
        dst: u32,
        s: u32,
        i: u32,
    },
    Store {
        s: u32,
        i: u32,
        x: u32,
    },
    VUnary {
        op: Opcode,
        dst: u32,
        a: u32,
        w: u8,
    },
    VBinary {
        op: Opcode,
        dst: u32,
        a: u32,
        b: u32,
        w: u8,
    },
    VFma {
        dst: u32,
        a: u32,
        b: u32,
        c: u32,
        w: u8,
    },
    VLoad {
        dst: u32,
        s: u32,
        i: u32,
        w: u8,
    },
    VStore {
        s: u32,
        i: u32,
        x: u32,
        w: u8,
    },
    Splat {
        dst: u32,
        a: u32,
        w: u8,
    },
    Extract {
        dst: u32,
        a: u32,
        lane: u8,
    },
    Insert {
        dst: u32,
        a: u32,
        x: u32,
        lane: u8,
        w: u8,
    },
    Call {
        func: u32,
        args: Span,
        results: Span,
    },
    CallExtern {
        ext: u32,
        args: Span,
        results: Span,
    },
    TPush {
        a: u32,
    },
    TPop {
        dst: u32,
        ty: Type,
    },
    TSplit {
        dst: u32,
    },
    TRejoin {
        a: u32,
    },
    Trap,
    Alloc {
        dst: u32,
        n: u32,
    },
    /// The slice handle of table `table` (tables are the first handles of every run).
    Table {
        dst: u32,
        table: u32,
    },
}

/// A jump target with its block-parameter moves.
#[derive(Clone, Debug)]
pub(super) struct Edge {
    pub block: u32,
    /// `(source, destination)` pairs in [`CompiledFunc::moves`].
    pub moves: Span,
    /// Some source is a destination too (a loop edge permuting parameters): copy via scratch.
    pub needs_temp: bool,
}

#[derive(Clone, Debug)]
pub(super) enum CTerm {
    Jump(Edge),
    Branch { cond: u32, then_dest: Edge, else_dest: Edge },
    Return(Span),
}

#[derive(Clone, Debug)]
pub(super) struct CBlock {
    pub name: String,
    pub insts: Vec<CInst>,
    pub term: CTerm,
}

/// A function ready to run.
#[derive(Clone, Debug)]
pub(super) struct CompiledFunc {
    pub name: String,
    pub param_types: Vec<Type>,
    pub params: Vec<Operand>,
    pub returns: Vec<Type>,
    pub nregs: usize,
    pub nlanes: usize,
    pub blocks: Vec<CBlock>,
    /// Call arguments, call results and returned values, referenced by [`Span`]s.
    pub operands: Vec<Operand>,
    /// Block-parameter moves, referenced by [`Edge::moves`].
    pub moves: Vec<(Operand, Operand)>,
}

struct Compiler<'a> {
    module: &'a Module,
    func: &'a Function,
    /// Lane offset of every vector value (unused for other values).
    lane_offset: Vec<u32>,
    operands: Vec<Operand>,
    moves: Vec<(Operand, Operand)>,
}

/// Compile function `index` of `module`, or report the first thing that makes it unrunnable.
pub(super) fn compile_function(module: &Module, index: usize) -> Result<CompiledFunc, InterpError> {
    let func = &module.functions[index];
    let malformed = |block: &str, inst: usize, message: String| InterpError::Malformed {
        site: Site { func: func.name.clone(), block: block.to_string(), inst },
        message,
    };
    let mut lane_offset = vec![0u32; func.values.len()];
    let mut nlanes = 0usize;
    for (i, v) in func.values.iter().enumerate() {
        if let Type::F64x(w) = v.ty {
            lane_offset[i] = u32::try_from(nlanes).map_err(|_| malformed("", 0, "too many vector lanes".into()))?;
            nlanes += w as usize;
        }
    }
    let mut c = Compiler { module, func, lane_offset, operands: vec![], moves: vec![] };
    let Some(entry) = func.blocks.first() else {
        return Err(malformed("<none>", 0, "the function has no blocks".into()));
    };
    if !entry.params.is_empty() {
        return Err(malformed(&entry.name, 0, "the entry block has parameters".into()));
    }
    if let Some(t) = func.returns.iter().find(|t| t.is_slice()) {
        return Err(malformed(&entry.name, 0, format!("functions cannot return a {t}")));
    }
    let params = func.params.iter().map(|&p| c.operand(p)).collect::<Result<Vec<_>, _>>();
    let params = params.map_err(|m| malformed(&entry.name, 0, m))?;
    let mut blocks = Vec::with_capacity(func.blocks.len());
    for b in &func.blocks {
        let mut insts = Vec::with_capacity(b.insts.len());
        for (i, inst) in b.insts.iter().enumerate() {
            insts.push(c.inst(inst.op, &inst.args, &inst.imm, &inst.results).map_err(|m| malformed(&b.name, i, m))?);
        }
        let term = c.term(b.term.as_ref()).map_err(|m| malformed(&b.name, b.insts.len(), m))?;
        blocks.push(CBlock { name: b.name.clone(), insts, term });
    }
    Ok(CompiledFunc {
        name: func.name.clone(),
        param_types: func.param_types(),
        params,
        returns: func.returns.clone(),
        nregs: func.values.len(),
        nlanes,
        blocks,
        operands: c.operands,
        moves: c.moves,
    })
}

impl Compiler<'_> {
    fn ty(&self, v: Value) -> Result<Type, String> {
        self.func.values.get(v.index()).map(|d| d.ty).ok_or_else(|| format!("value v{} does not exist", v.0))
    }
    fn operand(&self, v: Value) -> Result<Operand, String> {
        Ok(match self.ty(v)? {
            Type::F64x(w) => Operand::Lanes(self.lane_offset[v.index()], w),
            _ => Operand::Scalar(v.0),
        })
    }
    fn push_operands(&mut self, values: &[Value]) -> Result<Span, String> {
        let start = self.operands.len() as u32;
        for &v in values {
            let op = self.operand(v)?;
            self.operands.push(op);
        }
        Ok(Span { start, len: values.len() as u32 })
    }

    fn inst(&mut self, op: Opcode, args: &[Value], imm: &Imm, results: &[Value]) -> Result<CInst, String> {
        let arg_types = args.iter().map(|&a| self.ty(a)).collect::<Result<Vec<_>, _>>()?;
        let result_types = results.iter().map(|&r| self.ty(r)).collect::<Result<Vec<_>, _>>()?;
        if op == Opcode::Call {
            return self.call(args, &arg_types, imm, results, &result_types);
        }
        let expected = op.result_type(&arg_types, imm).ok_or_else(|| {
            let tys: Vec<&str> = arg_types.iter().map(|t| t.spelling()).collect();
            format!("`{op}` does not accept operands ({}) with immediate {imm:?}", tys.join(", "))
        })?;
        if result_types != expected.into_iter().collect::<Vec<_>>() {
            return Err(format!("`{op}` defines results of the wrong number or type"));
        }
        // Scalar register / lane offset of operand k, and of the (single) result.
        let r = |k: usize| args[k].0;
        let l = |k: usize| self.lane_offset[args[k].index()];
        let dst = results.first().map_or(0, |v| v.0);
        let dst_lanes = results.first().map_or(0, |v| self.lane_offset[v.index()]);
        let width = |t: Type| t.lanes();
        Ok(match op.shape() {
            Shape::Const => CInst::Const {
                dst,
                bits: match imm {
                    Imm::F64(x) => x.to_bits(),
                    Imm::I64(x) => *x as u64,
                    Imm::Bool(x) => *x as u64,
                    _ => return Err("constant without a value".into()),
                },
            },
            Shape::FloatUnary { .. } => match arg_types[0] {
                Type::F64x(w) => CInst::VUnary { op, dst: dst_lanes, a: l(0), w },
                _ => CInst::FUnary { op, dst, a: r(0) },
            },
            Shape::FloatBinary { .. } => match arg_types[0] {
                Type::F64x(w) => CInst::VBinary { op, dst: dst_lanes, a: l(0), b: l(1), w },
                _ => CInst::FBinary { op, dst, a: r(0), b: r(1) },
            },
            Shape::Powi => CInst::Powi { dst, a: r(0), b: r(1) },
            Shape::FloatTernary => match arg_types[0] {
                Type::F64x(w) => CInst::VFma { dst: dst_lanes, a: l(0), b: l(1), c: l(2), w },
                _ => CInst::Fma { dst, a: r(0), b: r(1), c: r(2) },
            },
            Shape::IntUnary => CInst::IUnary { op, dst, a: r(0) },
            Shape::IntBinary => CInst::IBinary { op, dst, a: r(0), b: r(1) },
            Shape::BoolUnary => CInst::BUnary { op, dst, a: r(0) },
            Shape::BoolBinary => CInst::BBinary { op, dst, a: r(0), b: r(1) },
            Shape::FloatCompare | Shape::IntCompare => {
                let Imm::Cond(cc) = *imm else { return Err("comparison without a condition".into()) };
                if op.shape() == Shape::FloatCompare {
                    CInst::FCmp { cc, dst, a: r(0), b: r(1) }
                } else {
                    CInst::ICmp { cc, dst, a: r(0), b: r(1) }
                }
            }
            Shape::FloatTest => match arg_types[0] {
                Type::F64x(w) => CInst::VIsZero { dst, a: l(0), w },
                _ => CInst::IsZero { dst, a: r(0) },
            },
            Shape::Select => match arg_types[1] {
                Type::F64x(w) => CInst::VSelect { dst: dst_lanes, c: r(0), a: l(1), b: l(2), w },
                _ => CInst::Select { dst, c: r(0), a: r(1), b: r(2) },
            },
            Shape::IntToFloat => CInst::IToF { dst, a: r(0) },
            Shape::FloatToInt => CInst::FToI { dst, a: r(0) },
            Shape::Len => CInst::Len { dst, s: r(0) },
            Shape::Load => CInst::Load { dst, s: r(0), i: r(1) },
            Shape::Store => CInst::Store { s: r(0), i: r(1), x: r(2) },
            Shape::VectorLoad => CInst::VLoad { dst: dst_lanes, s: r(0), i: r(1), w: width(result_types[0]) },
            Shape::VectorStore => CInst::VStore { s: r(0), i: r(1), x: l(2), w: width(arg_types[2]) },
            Shape::Splat => CInst::Splat { dst: dst_lanes, a: r(0), w: width(result_types[0]) },
            Shape::Extract => {
                let Imm::Lane(lane) = *imm else { return Err("extract without a lane".into()) };
                CInst::Extract { dst, a: l(0), lane }
            }
            Shape::Insert => {
                let Imm::Lane(lane) = *imm else { return Err("insert without a lane".into()) };
                CInst::Insert { dst: dst_lanes, a: l(0), x: r(1), lane, w: width(arg_types[0]) }
            }
            Shape::TapePush => CInst::TPush { a: r(0) },
            Shape::TapePop => CInst::TPop { dst, ty: result_types[0] },
            Shape::TapeSplit => CInst::TSplit { dst },
            Shape::TapeRejoin => CInst::TRejoin { a: r(0) },
            Shape::Trap => CInst::Trap,
            Shape::Alloc => CInst::Alloc { dst, n: r(0) },
            Shape::Table => match *imm {
                Imm::Table(t) if self.module.table(t).is_some() => CInst::Table { dst, table: t.index() as u32 },
                _ => return Err(format!("`table` of a table that does not exist ({imm:?})")),
            },
            Shape::Call => return Err("unreachable: calls are compiled separately".into()),
        })
    }

    fn call(
        &mut self,
        args: &[Value],
        arg_types: &[Type],
        imm: &Imm,
        results: &[Value],
        result_types: &[Type],
    ) -> Result<CInst, String> {
        let Imm::Callee(callee) = *imm else { return Err("call without a callee".into()) };
        let name = self.module.callee_name(callee).to_string();
        let (params, returns) = self
            .module
            .callee_signature(callee)
            .ok_or_else(|| format!("call to a callee that does not exist ({name})"))?;
        if params.len() != args.len() || !arg_types.iter().zip(&params).all(|(a, p)| a.coerces_to(*p)) {
            return Err(format!("arguments do not match the parameters of @{name}"));
        }
        if returns != result_types {
            return Err(format!("results do not match the return types of @{name}"));
        }
        if returns.iter().any(|t| t.is_slice()) {
            return Err(format!("@{name} returns a slice"));
        }
        let args = self.push_operands(args)?;
        let results = self.push_operands(results)?;
        Ok(match callee {
            Callee::Func(id) => CInst::Call { func: id.0, args, results },
            Callee::Extern(id) => CInst::CallExtern { ext: id.0, args, results },
        })
    }

    fn edge(&mut self, call: &BlockCall) -> Result<Edge, String> {
        let target = self
            .func
            .blocks
            .get(call.block.index())
            .ok_or_else(|| format!("jump to block #{} which does not exist", call.block.0))?;
        if call.block.index() == 0 {
            return Err("jump to the entry block".into());
        }
        if target.params.len() != call.args.len() {
            return Err(format!(
                "block {} takes {} arguments, {} given",
                target.name,
                target.params.len(),
                call.args.len()
            ));
        }
        let start = self.moves.len() as u32;
        let mut needs_temp = false;
        for (&arg, &param) in call.args.iter().zip(&target.params) {
            if !self.ty(arg)?.coerces_to(self.ty(param)?) {
                return Err(format!("argument of the wrong type for block {}", target.name));
            }
            needs_temp |= target.params.contains(&arg);
            let mv = (self.operand(arg)?, self.operand(param)?);
            self.moves.push(mv);
        }
        Ok(Edge { block: call.block.0, moves: Span { start, len: call.args.len() as u32 }, needs_temp })
    }

    fn term(&mut self, term: Option<&Terminator>) -> Result<CTerm, String> {
        Ok(match term.ok_or("the block has no terminator")? {
            Terminator::Jump(call) => CTerm::Jump(self.edge(call)?),
            Terminator::Branch { cond, then_dest, else_dest } => {
                if self.ty(*cond)? != Type::Bool {
                    return Err("branch condition is not a bool".into());
                }
                CTerm::Branch { cond: cond.0, then_dest: self.edge(then_dest)?, else_dest: self.edge(else_dest)? }
            }
            Terminator::Return(values) => {
                let types = values.iter().map(|&v| self.ty(v)).collect::<Result<Vec<_>, _>>()?;
                if types.len() != self.func.returns.len() || !types.iter().zip(&self.func.returns).all(|(a, r)| a == r)
                {
                    return Err("returned values do not match the function's result types".into());
                }
                CTerm::Return(self.push_operands(values)?)
            }
        })
    }
}
