//! The run loop: an explicit frame stack over one flat register file and one lane file, so that
//! recursion costs heap, never Rust stack.
//!
//! Slices are handles: a slice-typed register holds an index into the list of the module's data
//! tables, then the entry call's slice arguments, then the local arrays (`alloc`) of the live
//! frames, so a callee given a slice reads and writes the caller's very memory. A frame's local
//! arrays are dropped when it returns (they are the last entries of the list, since frames form
//! a stack).

use super::compile::{CBlock, CInst, CTerm, CompiledFunc, Edge, Operand, Span};
use super::eval::{self, EvalError};
use super::{ArgValue, ExternBinding, Fault, InterpError, Interpreter, MAX_CALL_DEPTH, RuntimeValue, Site};
use crate::externs::{ExternArg, ExternImpl};
use crate::tape::{Tape, TapeError};
use crate::types::Type;

/// One slice argument of the entry call, or one local array.
struct SliceRef<'s> {
    data: SliceData<'s>,
    mutable: bool,
}

/// The memory of a [`SliceRef`]: the caller's, a local array the machine owns, or a data table
/// of the module (never written: tables are read-only slices).
enum SliceData<'s> {
    Borrowed(&'s mut [f64]),
    Local(Vec<f64>),
    Table(&'s [f64]),
}

impl std::ops::Deref for SliceData<'_> {
    type Target = [f64];
    fn deref(&self) -> &[f64] {
        match self {
            SliceData::Borrowed(data) => data,
            SliceData::Local(data) => data,
            SliceData::Table(data) => data,
        }
    }
}

impl SliceData<'_> {
    /// The memory to write, if it may be written (not a table).
    fn writable(&mut self) -> Option<&mut [f64]> {
        match self {
            SliceData::Borrowed(data) => Some(data),
            SliceData::Local(data) => Some(data),
            SliceData::Table(_) => None,
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Frame {
    func: usize,
    block: usize,
    /// The instruction to run next; while a callee runs, the call instruction.
    pc: usize,
    /// Base of this frame's registers in [`Machine::regs`].
    rb: usize,
    /// Base of this frame's lanes in [`Machine::lanes`].
    lb: usize,
    /// Number of entries of [`Machine::slices`] when the frame started: its local arrays are
    /// the entries from here on.
    sb: usize,
}

/// Why [`Machine::run_frame`] stopped running the current frame.
enum Exit {
    Call { func: u32, args: Span },
    Return(Span),
}

struct Machine<'i, 'm, 's> {
    interp: &'i Interpreter<'m>,
    tape: &'s mut Tape,
    regs: Vec<u64>,
    lanes: Vec<f64>,
    slices: Vec<SliceRef<'s>>,
    frames: Vec<Frame>,
    scratch_regs: Vec<u64>,
    scratch_lanes: Vec<f64>,
    steps: u64,
    limit: u64,
}

fn site(cf: &CompiledFunc, block: &CBlock, inst: usize) -> Site {
    Site { func: cf.name.clone(), block: block.name.clone(), inst }
}

fn malformed(site: Site, message: &str) -> InterpError {
    InterpError::Malformed { site, message: message.to_string() }
}

/// Copy one value between frames (or within one) of the register and lane files.
#[inline]
fn copy_operand(
    regs: &mut [u64],
    lanes: &mut [f64],
    src: Operand,
    (srb, slb): (usize, usize),
    dst: Operand,
    (drb, dlb): (usize, usize),
) {
    match (src, dst) {
        (Operand::Scalar(s), Operand::Scalar(d)) => regs[drb + d as usize] = regs[srb + s as usize],
        (Operand::Lanes(s, w), Operand::Lanes(d, _)) => {
            let s = slb + s as usize;
            lanes.copy_within(s..s + w as usize, dlb + d as usize);
        }
        // Kinds always agree: the compiler checked the types.
        _ => {}
    }
}

/// Run function `entry` of `interp` on `args` (already checked against its parameters).
pub(super) fn run<'m: 's, 's>(
    interp: &'s Interpreter<'m>,
    entry: usize,
    args: &'s mut [ArgValue],
    tape: &'s mut Tape,
) -> Result<Vec<RuntimeValue>, InterpError> {
    let mut m = Machine {
        interp,
        tape,
        regs: Vec::with_capacity(1024),
        lanes: vec![],
        slices: vec![],
        frames: Vec::with_capacity(16),
        scratch_regs: vec![],
        scratch_lanes: vec![],
        steps: 0,
        limit: interp.step_limit.unwrap_or(u64::MAX),
    };
    let module: &'s crate::function::Module = interp.module;
    for table in &module.tables {
        m.slices.push(SliceRef { data: SliceData::Table(&table.data), mutable: false });
    }
    let cf = m.func(entry)?;
    m.regs.resize(cf.nregs, 0);
    m.lanes.resize(cf.nlanes, 0.0);
    for (arg, &param) in args.iter_mut().zip(&cf.params) {
        match (arg, param) {
            (ArgValue::F64(x), Operand::Scalar(r)) => m.regs[r as usize] = x.to_bits(),
            (ArgValue::I64(x), Operand::Scalar(r)) => m.regs[r as usize] = *x as u64,
            (ArgValue::Bool(x), Operand::Scalar(r)) => m.regs[r as usize] = *x as u64,
            (ArgValue::Vector(v), Operand::Lanes(off, w)) if v.len() == w as usize => {
                m.lanes[off as usize..off as usize + v.len()].copy_from_slice(v);
            }
            (ArgValue::Slice(data), Operand::Scalar(r)) => {
                m.regs[r as usize] = m.slices.len() as u64;
                m.slices.push(SliceRef { data: SliceData::Borrowed(data), mutable: false });
            }
            (ArgValue::SliceMut(data), Operand::Scalar(r)) => {
                m.regs[r as usize] = m.slices.len() as u64;
                m.slices.push(SliceRef { data: SliceData::Borrowed(data), mutable: true });
            }
            _ => return Err(malformed(site(cf, &cf.blocks[0], 0), "argument kinds changed after checking")),
        }
    }
    let sb = m.slices.len();
    m.frames.push(Frame { func: entry, block: 0, pc: 0, rb: 0, lb: 0, sb });
    m.drive()
}

impl<'i, 'm, 's> Machine<'i, 'm, 's> {
    fn func(&self, index: usize) -> Result<&'i CompiledFunc, InterpError> {
        let interp: &'i Interpreter<'m> = self.interp;
        match interp.funcs.get(index) {
            Some(Ok(f)) => Ok(f),
            Some(Err(e)) => Err(e.clone()),
            None => Err(InterpError::UnknownFunction(format!("#{index}"))),
        }
    }

    /// Run frames until the entry frame returns.
    fn drive(&mut self) -> Result<Vec<RuntimeValue>, InterpError> {
        loop {
            let Some(&top) = self.frames.last() else { return Ok(vec![]) };
            let cf = self.func(top.func)?;
            let mut frame = top;
            let exit = self.run_frame(cf, &mut frame)?;
            if let Some(f) = self.frames.last_mut() {
                *f = frame;
            }
            match exit {
                Exit::Call { func, args } => {
                    if self.frames.len() >= MAX_CALL_DEPTH {
                        return Err(InterpError::Fault(Fault::CallDepthExceeded {
                            site: site(cf, &cf.blocks[frame.block], frame.pc),
                        }));
                    }
                    let callee = self.func(func as usize)?;
                    let (rb, lb) = (self.regs.len(), self.lanes.len());
                    self.regs.resize(rb + callee.nregs, 0);
                    self.lanes.resize(lb + callee.nlanes, 0.0);
                    for (&src, &dst) in cf.operands[args.range()].iter().zip(&callee.params) {
                        copy_operand(&mut self.regs, &mut self.lanes, src, (frame.rb, frame.lb), dst, (rb, lb));
                    }
                    let sb = self.slices.len();
                    self.frames.push(Frame { func: func as usize, block: 0, pc: 0, rb, lb, sb });
                }
                Exit::Return(span) => {
                    let values = &cf.operands[span.range()];
                    self.frames.pop();
                    let Some(caller) = self.frames.last_mut() else {
                        return Ok(self.collect_results(cf, values, frame));
                    };
                    let ccf = self.interp.funcs[caller.func].as_ref().map_err(Clone::clone)?;
                    let Some(CInst::Call { results, .. }) = ccf.blocks[caller.block].insts.get(caller.pc) else {
                        return Err(malformed(
                            site(ccf, &ccf.blocks[caller.block], caller.pc),
                            "returned to a non-call",
                        ));
                    };
                    let (crb, clb) = (caller.rb, caller.lb);
                    caller.pc += 1;
                    for (&src, &dst) in values.iter().zip(&ccf.operands[results.range()]) {
                        copy_operand(&mut self.regs, &mut self.lanes, src, (frame.rb, frame.lb), dst, (crb, clb));
                    }
                    self.regs.truncate(frame.rb);
                    self.lanes.truncate(frame.lb);
                    self.slices.truncate(frame.sb);
                }
            }
        }
    }

    fn collect_results(&self, cf: &CompiledFunc, values: &[Operand], frame: Frame) -> Vec<RuntimeValue> {
        values
            .iter()
            .zip(&cf.returns)
            .map(|(&op, &ty)| match (op, ty) {
                (Operand::Lanes(off, w), _) => {
                    let s = frame.lb + off as usize;
                    RuntimeValue::Vector(self.lanes[s..s + w as usize].to_vec())
                }
                (Operand::Scalar(r), Type::I64) => RuntimeValue::I64(self.regs[frame.rb + r as usize] as i64),
                (Operand::Scalar(r), Type::Bool) => RuntimeValue::Bool(self.regs[frame.rb + r as usize] != 0),
                (Operand::Scalar(r), _) => RuntimeValue::F64(f64::from_bits(self.regs[frame.rb + r as usize])),
            })
            .collect()
    }

    /// Run `frame` (the top frame, of function `cf`) until it calls a module function or returns.
    fn run_frame(&mut self, cf: &'i CompiledFunc, frame: &mut Frame) -> Result<Exit, InterpError> {
        let interp = self.interp;
        let Machine { regs, lanes, slices, scratch_regs, scratch_lanes, steps, limit, tape, .. } = self;
        let regs = &mut regs[frame.rb..frame.rb + cf.nregs];
        let lanes = &mut lanes[frame.lb..frame.lb + cf.nlanes];
        loop {
            let b = &cf.blocks[frame.block];
            while let Some(inst) = b.insts.get(frame.pc) {
                *steps += 1;
                if *steps > *limit {
                    return Err(InterpError::StepLimitExceeded { limit: *limit });
                }
                let here = |pc| site(cf, b, pc);
                macro_rules! f {
                    ($r:expr) => {
                        f64::from_bits(regs[$r as usize])
                    };
                }
                macro_rules! i {
                    ($r:expr) => {
                        regs[$r as usize] as i64
                    };
                }
                macro_rules! b {
                    ($r:expr) => {
                        regs[$r as usize] != 0
                    };
                }
                let wrong_op = |_: EvalError| malformed(here(frame.pc), "opcode of the wrong kind");
                match *inst {
                    CInst::Const { dst, bits } => regs[dst as usize] = bits,
                    CInst::FUnary { op, dst, a } => {
                        regs[dst as usize] = eval::float_unary(op, f!(a)).map_err(wrong_op)?.to_bits()
                    }
                    CInst::FBinary { op, dst, a, b } => {
                        regs[dst as usize] = eval::float_binary(op, f!(a), f!(b)).map_err(wrong_op)?.to_bits()
                    }
                    CInst::Powi { dst, a, b } => regs[dst as usize] = eval::powi(f!(a), i!(b)).to_bits(),
                    CInst::Fma { dst, a, b, c } => regs[dst as usize] = eval::fma(f!(a), f!(b), f!(c)).to_bits(),
                    CInst::IUnary { op, dst, a } => {
                        regs[dst as usize] = eval::int_unary(op, i!(a)).map_err(wrong_op)? as u64
                    }
                    CInst::IBinary { op, dst, a, b } => {
                        regs[dst as usize] = match eval::int_binary(op, i!(a), i!(b)) {
                            Ok(x) => x as u64,
                            Err(EvalError::DivisionByZero) => {
                                return Err(InterpError::Fault(Fault::DivisionByZero { site: here(frame.pc) }));
                            }
                            Err(e) => return Err(wrong_op(e)),
                        }
                    }
                    CInst::BUnary { op, dst, a } => {
                        regs[dst as usize] = eval::bool_unary(op, b!(a)).map_err(wrong_op)? as u64
                    }
                    CInst::BBinary { op, dst, a, b } => {
                        regs[dst as usize] = eval::bool_binary(op, b!(a), b!(b)).map_err(wrong_op)? as u64
                    }
                    CInst::FCmp { cc, dst, a, b } => regs[dst as usize] = cc.eval_f64(f!(a), f!(b)) as u64,
                    CInst::IsZero { dst, a } => regs[dst as usize] = (f!(a) == 0.0) as u64,
                    CInst::VIsZero { dst, a, w } => {
                        let a = a as usize;
                        regs[dst as usize] = lanes[a..a + w as usize].iter().all(|&x| x == 0.0) as u64
                    }
                    CInst::ICmp { cc, dst, a, b } => regs[dst as usize] = cc.eval_i64(i!(a), i!(b)) as u64,
                    CInst::Select { dst, c, a, b } => {
                        regs[dst as usize] = if b!(c) { regs[a as usize] } else { regs[b as usize] }
                    }
                    CInst::VSelect { dst, c, a, b, w } => {
                        let src = (if b!(c) { a } else { b }) as usize;
                        lanes.copy_within(src..src + w as usize, dst as usize);
                    }
                    CInst::IToF { dst, a } => regs[dst as usize] = eval::int_to_float(i!(a)).to_bits(),
                    CInst::FToI { dst, a } => regs[dst as usize] = eval::float_to_int(f!(a)) as u64,
                    CInst::Len { dst, s } => {
                        let sl = slices.get(regs[s as usize] as usize).ok_or_else(|| bad_handle(here(frame.pc)))?;
                        regs[dst as usize] = sl.data.len() as u64;
                    }
                    CInst::Load { dst, s, i } => {
                        let sl = slices.get(regs[s as usize] as usize).ok_or_else(|| bad_handle(here(frame.pc)))?;
                        let (index, len) = (i!(i), sl.data.len());
                        let x = usize::try_from(index).ok().and_then(|k| sl.data.get(k));
                        let x = x.ok_or_else(|| {
                            InterpError::Fault(Fault::OutOfBounds { site: here(frame.pc), index, len })
                        })?;
                        regs[dst as usize] = x.to_bits();
                    }
                    CInst::Store { s, i, x } => {
                        let sl = slices.get_mut(regs[s as usize] as usize).ok_or_else(|| bad_handle(here(frame.pc)))?;
                        let len = sl.data.len();
                        let data = sl.data.writable().filter(|_| sl.mutable);
                        let data = data.ok_or_else(|| malformed(here(frame.pc), "store to a read-only slice"))?;
                        let index = i!(i);
                        let slot = usize::try_from(index).ok().and_then(|k| data.get_mut(k));
                        *slot.ok_or_else(|| {
                            InterpError::Fault(Fault::OutOfBounds { site: here(frame.pc), index, len })
                        })? = f!(x);
                    }
                    CInst::VUnary { op, dst, a, w } => {
                        for k in 0..w as usize {
                            lanes[dst as usize + k] = eval::float_unary(op, lanes[a as usize + k]).map_err(wrong_op)?;
                        }
                    }
                    CInst::VBinary { op, dst, a, b, w } => {
                        for k in 0..w as usize {
                            let (x, y) = (lanes[a as usize + k], lanes[b as usize + k]);
                            lanes[dst as usize + k] = eval::float_binary(op, x, y).map_err(wrong_op)?;
                        }
                    }
                    CInst::VFma { dst, a, b, c, w } => {
                        for k in 0..w as usize {
                            let (x, y, z) = (lanes[a as usize + k], lanes[b as usize + k], lanes[c as usize + k]);
                            lanes[dst as usize + k] = eval::fma(x, y, z);
                        }
                    }
                    CInst::VLoad { dst, s, i, w } => {
                        let sl = slices.get(regs[s as usize] as usize).ok_or_else(|| bad_handle(here(frame.pc)))?;
                        let (index, len) = (i!(i), sl.data.len());
                        let range = vector_range(index, w, len).ok_or_else(|| {
                            InterpError::Fault(Fault::OutOfBounds { site: here(frame.pc), index, len })
                        })?;
                        lanes[dst as usize..dst as usize + w as usize].copy_from_slice(&sl.data[range]);
                    }
                    CInst::VStore { s, i, x, w } => {
                        let sl = slices.get_mut(regs[s as usize] as usize).ok_or_else(|| bad_handle(here(frame.pc)))?;
                        let len = sl.data.len();
                        let data = sl.data.writable().filter(|_| sl.mutable);
                        let data = data.ok_or_else(|| malformed(here(frame.pc), "store to a read-only slice"))?;
                        let index = i!(i);
                        let range = vector_range(index, w, len).ok_or_else(|| {
                            InterpError::Fault(Fault::OutOfBounds { site: here(frame.pc), index, len })
                        })?;
                        data[range].copy_from_slice(&lanes[x as usize..x as usize + w as usize]);
                    }
                    CInst::Splat { dst, a, w } => lanes[dst as usize..dst as usize + w as usize].fill(f!(a)),
                    CInst::Extract { dst, a, lane } => regs[dst as usize] = lanes[a as usize + lane as usize].to_bits(),
                    CInst::Insert { dst, a, x, lane, w } => {
                        lanes.copy_within(a as usize..a as usize + w as usize, dst as usize);
                        lanes[dst as usize + lane as usize] = f!(x);
                    }
                    CInst::TPush { a } => {
                        tape.push_bits(regs[a as usize]).map_err(|e| tape_error(e, here(frame.pc)))?
                    }
                    CInst::TPop { dst, ty } => {
                        let bits = tape.pop_bits().map_err(|e| tape_error(e, here(frame.pc)))?;
                        regs[dst as usize] = if ty == Type::Bool { (bits != 0) as u64 } else { bits };
                    }
                    CInst::TSplit { dst } => regs[dst as usize] = tape.split() as u64,
                    CInst::TRejoin { a } => tape.rejoin(regs[a as usize]).map_err(|e| tape_error(e, here(frame.pc)))?,
                    CInst::Trap => return Err(InterpError::Fault(Fault::Panic { site: here(frame.pc) })),
                    CInst::Alloc { dst, n } => {
                        let len = i!(n);
                        let mut data = Vec::new();
                        let size = usize::try_from(len).ok().filter(|&k| data.try_reserve_exact(k).is_ok());
                        let size =
                            size.ok_or_else(|| InterpError::Fault(Fault::AllocFailed { site: here(frame.pc), len }))?;
                        data.resize(size, 0.0);
                        regs[dst as usize] = slices.len() as u64;
                        slices.push(SliceRef { data: SliceData::Local(data), mutable: true });
                    }
                    CInst::Table { dst, table } => regs[dst as usize] = u64::from(table),
                    CInst::Call { func, args, .. } => return Ok(Exit::Call { func, args }),
                    CInst::CallExtern { ext, args, results } => {
                        let call = ExternCall { interp, cf, ext: ext as usize, args, results };
                        call.run(regs, lanes, slices)
                            .map_err(|e| e.into_error(interp, ext as usize, here(frame.pc)))?;
                    }
                }
                frame.pc += 1;
            }
            *steps += 1;
            if *steps > *limit {
                return Err(InterpError::StepLimitExceeded { limit: *limit });
            }
            let edge = match &b.term {
                CTerm::Jump(edge) => edge,
                CTerm::Branch { cond, then_dest, else_dest } => {
                    if regs[*cond as usize] != 0 {
                        then_dest
                    } else {
                        else_dest
                    }
                }
                CTerm::Return(span) => return Ok(Exit::Return(*span)),
            };
            take_edge(cf, edge, regs, lanes, scratch_regs, scratch_lanes);
            frame.block = edge.block as usize;
            frame.pc = 0;
        }
    }
}

fn tape_error(e: TapeError, site: Site) -> InterpError {
    match e {
        TapeError::Underflow => InterpError::Fault(Fault::TapeUnderflow { site }),
        TapeError::Allocation => InterpError::Fault(Fault::TapeAllocation { site }),
    }
}

fn bad_handle(site: Site) -> InterpError {
    malformed(site, "slice operand is not a slice argument")
}

/// The slice range of vector `index` of width `w`, if in bounds.
fn vector_range(index: i64, w: u8, len: usize) -> Option<std::ops::Range<usize>> {
    let start = usize::try_from(index).ok()?.checked_mul(w as usize)?;
    let end = start.checked_add(w as usize)?;
    (end <= len).then_some(start..end)
}

/// Bind a jump's arguments to its target's parameters (a parallel copy).
fn take_edge(
    cf: &CompiledFunc,
    edge: &Edge,
    regs: &mut [u64],
    lanes: &mut [f64],
    sr: &mut Vec<u64>,
    sl: &mut Vec<f64>,
) {
    let moves = &cf.moves[edge.moves.range()];
    if !edge.needs_temp {
        for &(src, dst) in moves {
            copy_operand(regs, lanes, src, (0, 0), dst, (0, 0));
        }
        return;
    }
    sr.clear();
    sl.clear();
    for &(src, _) in moves {
        match src {
            Operand::Scalar(s) => sr.push(regs[s as usize]),
            Operand::Lanes(s, w) => sl.extend_from_slice(&lanes[s as usize..s as usize + w as usize]),
        }
    }
    let (mut ri, mut li) = (0, 0);
    for &(_, dst) in moves {
        match dst {
            Operand::Scalar(d) => {
                regs[d as usize] = sr[ri];
                ri += 1;
            }
            Operand::Lanes(d, w) => {
                lanes[d as usize..d as usize + w as usize].copy_from_slice(&sl[li..li + w as usize]);
                li += w as usize;
            }
        }
    }
}

fn scalar_bits(regs: &[u64], op: Operand) -> u64 {
    match op {
        Operand::Scalar(r) => regs[r as usize],
        Operand::Lanes(..) => 0,
    }
}

/// An extern call failure, before its site is attached.
enum ExternCallError {
    NotRegistered,
    Signature { declared: String, registered: String },
    Failed(String),
    Malformed(&'static str),
}

impl ExternCallError {
    fn into_error(self, interp: &Interpreter<'_>, ext: usize, site: Site) -> InterpError {
        let name = interp.module.externs.get(ext).map_or_else(|| format!("#{ext}"), |d| d.name.clone());
        match self {
            ExternCallError::NotRegistered
                if interp.module.externs.get(ext).is_some_and(|d| d.derivative.is_some()) =>
            {
                InterpError::UnexpandedDerivative { name, site }
            }
            ExternCallError::NotRegistered => InterpError::ExternNotRegistered { name, site },
            ExternCallError::Signature { declared, registered } => {
                InterpError::ExternSignature { name, declared, registered, site }
            }
            ExternCallError::Failed(message) => InterpError::Fault(Fault::ExternFailed { name, message, site }),
            ExternCallError::Malformed(message) => malformed(site, message),
        }
    }
}

/// One call of a declared extern.
struct ExternCall<'a, 'm> {
    interp: &'a Interpreter<'m>,
    cf: &'a CompiledFunc,
    ext: usize,
    args: Span,
    results: Span,
}

impl ExternCall<'_, '_> {
    fn run(&self, regs: &mut [u64], lanes: &mut [f64], slices: &mut [SliceRef<'_>]) -> Result<(), ExternCallError> {
        let decl = self.interp.module.externs.get(self.ext).ok_or(ExternCallError::Malformed("unknown extern"))?;
        let imp = match self.interp.externs.get(self.ext) {
            Some(ExternBinding::Bound(imp)) => *imp,
            Some(ExternBinding::Mismatch { declared, registered }) => {
                return Err(ExternCallError::Signature { declared: declared.clone(), registered: registered.clone() });
            }
            Some(ExternBinding::Missing) | None => return Err(ExternCallError::NotRegistered),
        };
        let args = &self.cf.operands[self.args.range()];
        let scalar = |k: usize| match args.get(k) {
            Some(Operand::Scalar(r)) => Ok(regs[*r as usize]),
            _ => Err(ExternCallError::Malformed("extern argument of the wrong kind")),
        };
        let float = |k: usize| scalar(k).map(f64::from_bits);
        let outputs = match imp {
            ExternImpl::F1(f) => vec![RuntimeValue::F64(f(float(0)?))],
            ExternImpl::F2(f) => vec![RuntimeValue::F64(f(float(0)?, float(1)?))],
            ExternImpl::F3(f) => vec![RuntimeValue::F64(f(float(0)?, float(1)?, float(2)?))],
            ExternImpl::F4(f) => vec![RuntimeValue::F64(f(float(0)?, float(1)?, float(2)?, float(3)?))],
            ExternImpl::Closure { f, .. } => {
                // Vector operands have no register; their kind is rejected by the declared type.
                let bits: Vec<u64> = args.iter().map(|op| scalar_bits(regs, *op)).collect();
                call_closure(f.as_ref(), &decl.params, &bits, slices)?
            }
        };
        let results = &self.cf.operands[self.results.range()];
        if outputs.len() != decl.returns.len() {
            let msg = format!("returned {} values, {} declared", outputs.len(), decl.returns.len());
            return Err(ExternCallError::Failed(msg));
        }
        for ((value, &ty), &dst) in outputs.iter().zip(&decl.returns).zip(results) {
            match (value, ty, dst) {
                (RuntimeValue::F64(x), Type::F64, Operand::Scalar(d)) => regs[d as usize] = x.to_bits(),
                (RuntimeValue::I64(x), Type::I64, Operand::Scalar(d)) => regs[d as usize] = *x as u64,
                (RuntimeValue::Bool(x), Type::Bool, Operand::Scalar(d)) => regs[d as usize] = *x as u64,
                (RuntimeValue::Vector(v), Type::F64x(w), Operand::Lanes(d, _)) if v.len() == w as usize => {
                    lanes[d as usize..d as usize + v.len()].copy_from_slice(v);
                }
                _ => return Err(ExternCallError::Failed(format!("returned {} where {ty} is declared", value.kind()))),
            }
        }
        Ok(())
    }
}

/// A slice as lent to an extern closure: a table's memory (shared), or memory lent mutably once.
enum Lent<'a> {
    Shared(&'a [f64]),
    Mutable(Option<&'a mut [f64]>),
}

/// The closure type behind [`crate::ExternClosure`].
type ExternFn = dyn Fn(&mut [ExternArg<'_>]) -> Result<Vec<RuntimeValue>, String> + Send + Sync;

/// Call an extern closure, lending it the slice arguments. A slice passed twice is lent once;
/// its other read-only uses get a snapshot (Rust forbids aliasing a `&mut`).
fn call_closure(
    f: &ExternFn,
    params: &[Type],
    registers: &[u64],
    slices: &mut [SliceRef<'_>],
) -> Result<Vec<RuntimeValue>, ExternCallError> {
    let mut uses = vec![0usize; slices.len()];
    for (&ty, &h) in params.iter().zip(registers) {
        let h = h as usize;
        if ty.is_slice() {
            let n = uses.get_mut(h).ok_or(ExternCallError::Malformed("slice operand is not a slice argument"))?;
            *n += 1;
            if ty == Type::SliceMut && !slices[h].mutable {
                return Err(ExternCallError::Malformed("read-only slice passed as mslice"));
            }
        }
    }
    let snapshots: Vec<Option<Vec<f64>>> = params
        .iter()
        .zip(registers)
        .map(|(&ty, &h)| (ty == Type::Slice && uses[h as usize] > 1).then(|| slices[h as usize].data.to_vec()))
        .collect();
    // Tables are shared, never lent mutably (a table is never passed as an `mslice`: checked above).
    let mut lent: Vec<Lent<'_>> = slices
        .iter_mut()
        .map(|s| match &mut s.data {
            SliceData::Table(data) => Lent::Shared(data),
            other => Lent::Mutable(other.writable()),
        })
        .collect();
    let mut args = Vec::with_capacity(params.len());
    for ((&ty, &bits), snapshot) in params.iter().zip(registers).zip(&snapshots) {
        args.push(match ty {
            Type::F64 => ExternArg::F64(f64::from_bits(bits)),
            Type::I64 => ExternArg::I64(bits as i64),
            Type::Bool => ExternArg::Bool(bits != 0),
            Type::Slice | Type::SliceMut => match snapshot {
                Some(copy) => ExternArg::Slice(copy),
                None => match &mut lent[bits as usize] {
                    Lent::Shared(data) => ExternArg::Slice(data),
                    Lent::Mutable(data) => {
                        let data = data.take().ok_or_else(|| {
                            ExternCallError::Failed(
                                "the same mslice is passed twice; externs cannot alias mutable slices".into(),
                            )
                        })?;
                        if ty == Type::SliceMut { ExternArg::SliceMut(data) } else { ExternArg::Slice(data) }
                    }
                },
            },
            Type::F64x(_) => {
                return Err(ExternCallError::Failed("vector arguments are not supported for externs".into()));
            }
        });
    }
    f(&mut args).map_err(ExternCallError::Failed)
}
