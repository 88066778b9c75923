//! [`FunctionBuilder`]: the state of one function body under construction and the generic
//! instruction emitter every named helper goes through.

use super::BuildError;
use super::var::Var;
use crate::function::{Block, BlockCall, Callee, Function, Imm, InstData, Terminator, Value};
use crate::opcode::{Opcode, Shape};
use crate::types::Type;
use std::cell::RefCell;

/// The signature of a callee, snapshotted when a body's definition starts.
#[derive(Clone, Debug)]
pub(crate) struct CalleeSig {
    pub name: String,
    pub params: Vec<Type>,
    pub returns: Vec<Type>,
}

/// Signatures of every function and extern declared so far, and the number of tables.
#[derive(Clone, Debug, Default)]
pub(crate) struct Signatures {
    pub funcs: Vec<CalleeSig>,
    pub externs: Vec<CalleeSig>,
    pub tables: usize,
}

#[derive(Debug)]
struct State {
    func: Function,
    /// The block instructions go to; `None` after `ret` closed it.
    current: Option<Block>,
    error: Option<BuildError>,
    signatures: Signatures,
}

/// Builds one function body. Handed to the closure of
/// [`ModuleBuilder::define`](crate::builder::ModuleBuilder::define); every method takes `&self`,
/// so [`Var`] handles can borrow the builder while more code is emitted.
///
/// Methods fall in four groups: parameters and constants ([`param`](Self::param),
/// [`c`](Self::c), [`int`](Self::int), [`bool`](Self::bool)); one method per opcode
/// (`fadd`, `sin`, `load`, `vload` ..., plus the generic [`op`](Self::op) and
/// [`inst`](Self::inst)); calls ([`call`](Self::call)); and structured control flow
/// ([`for_range`](Self::for_range), [`if_else`](Self::if_else), [`when`](Self::when),
/// [`ret`](Self::ret)).
#[derive(Debug)]
pub struct FunctionBuilder {
    st: RefCell<State>,
}

/// Something that names a callee: a [`FuncId`](crate::FuncId), an [`ExternId`](crate::ExternId)
/// or a [`Callee`].
pub trait IntoCallee {
    /// The callee.
    fn into_callee(self) -> Callee;
}
impl IntoCallee for Callee {
    fn into_callee(self) -> Callee {
        self
    }
}
impl IntoCallee for crate::function::FuncId {
    fn into_callee(self) -> Callee {
        Callee::Func(self)
    }
}
impl IntoCallee for crate::function::ExternId {
    fn into_callee(self) -> Callee {
        Callee::Extern(self)
    }
}

impl FunctionBuilder {
    pub(crate) fn new(mut func: Function, signatures: Signatures) -> FunctionBuilder {
        let entry = func.add_block("entry");
        FunctionBuilder { st: RefCell::new(State { func, current: Some(entry), error: None, signatures }) }
    }

    /// Close the body: an open block returns implicitly if the function has no results,
    /// otherwise it is an error. Gives the function back, with the first error if any.
    pub(crate) fn finish(self) -> (Function, Option<BuildError>) {
        let mut st = self.st.into_inner();
        if let Some(b) = st.current {
            if st.func.returns.is_empty() {
                st.func.block_mut(b).term = Some(Terminator::Return(vec![]));
            } else if st.error.is_none() {
                st.error = Some(BuildError::MissingReturn {
                    func: st.func.name.clone(),
                    block: st.func.block(b).name.clone(),
                    expected: st.func.returns.len(),
                });
            }
        }
        (st.func, st.error)
    }

    /// The name of the function being built.
    pub fn func_name(&self) -> String {
        self.st.borrow().func.name.clone()
    }

    /// Parameter `index` of the function. An index past the end is recorded as an error.
    pub fn param(&self, index: usize) -> Var<'_> {
        let found = {
            let st = self.st.borrow();
            st.func.params.get(index).map(|&v| (v, st.func.ty(v)))
        };
        match found {
            Some((v, ty)) => Var::new(v, ty, self),
            None => {
                let count = self.st.borrow().func.params.len();
                self.fail(format!("parameter {index} does not exist: the function has {count}"));
                self.placeholder(Type::F64)
            }
        }
    }

    /// Every parameter, in order.
    pub fn params(&self) -> Vec<Var<'_>> {
        let st = self.st.borrow();
        st.func.params.iter().map(|&v| Var::new(v, st.func.ty(v), self)).collect()
    }

    /// Give `var` a name (made unique in the function; see [`Function::set_value_name`]) and
    /// return it, for readable printed IR.
    pub fn name_value<'a>(&'a self, var: Var<'a>, name: &str) -> Var<'a> {
        if self.owns(var) {
            self.st.borrow_mut().func.set_value_name(var.value(), name);
        }
        var
    }

    /// Same as [`name_value`](Self::name_value).
    pub fn name<'a>(&'a self, var: Var<'a>, name: &str) -> Var<'a> {
        self.name_value(var, name)
    }

    /// How many instructions the body has so far (for size budgets).
    pub fn inst_count(&self) -> usize {
        self.st.borrow().func.blocks.iter().map(|b| b.insts.len()).sum()
    }

    /// How many blocks the body has so far, the entry block included.
    pub fn block_count(&self) -> usize {
        self.st.borrow().func.blocks.len()
    }

    /// Is there an open block to emit into (false right after [`ret`](Self::ret))?
    pub fn is_open(&self) -> bool {
        self.st.borrow().current.is_some()
    }

    /// Emit one instruction with explicit immediate and return its results. Types are checked
    /// against the op table (or the callee's signature for [`Opcode::Call`]); a mismatch is
    /// recorded and placeholder results of a plausible type are returned.
    pub fn inst<'a>(&'a self, op: Opcode, args: &[Var<'a>], imm: Imm) -> Vec<Var<'a>> {
        let arg_types: Vec<Type> = args.iter().map(|a| a.ty()).collect();
        let (typed, fallback) = if op == Opcode::Call {
            match imm {
                Imm::Callee(c) => self.check_call(c, &arg_types),
                _ => (Err("call needs an Imm::Callee immediate; use f.call(callee, args)".to_string()), vec![]),
            }
        } else if let Imm::Table(t) = imm
            && t.index() >= self.st.borrow().signatures.tables
        {
            (Err(format!("table {t:?} was not declared by this module builder")), vec![Type::Slice])
        } else {
            let typed = op.result_type(&arg_types, &imm).map(|r| r.into_iter().collect());
            (typed.ok_or_else(|| mismatch(op, &arg_types, &imm)), fallback_types(op, &arg_types, &imm))
        };
        if !args.iter().all(|&a| self.owns(a)) || !self.require_open(op.spelling()) {
            return self.placeholders(&fallback);
        }
        let result_types = match typed {
            Ok(t) => t,
            Err(message) => {
                self.fail(message);
                return self.placeholders(&fallback);
            }
        };
        let mut st = self.st.borrow_mut();
        let results: Vec<Value> = result_types.iter().map(|&t| st.func.new_value(t)).collect();
        let block = st.current.unwrap_or(Block::ENTRY);
        let data =
            InstData { op, args: args.iter().map(|a| a.value()).collect(), imm, results: results.as_slice().into() };
        st.func.block_mut(block).insts.push(data);
        drop(st);
        results.iter().zip(&result_types).map(|(&v, &t)| Var::new(v, t, self)).collect()
    }

    /// Emit an instruction without immediate that has exactly one result (`fadd`, `sin`,
    /// `select`, `len`, `load` ...). Opcodes that need an immediate or have no result are
    /// recorded as errors; use [`inst`](Self::inst) or the named helpers for those.
    ///
    /// ```
    /// use jitdiff_ir::{Opcode, Type, builder::ModuleBuilder};
    /// let mut mb = ModuleBuilder::new();
    /// mb.function("h", &[("a", Type::F64), ("b", Type::F64)], &[Type::F64], |f| {
    ///     let h = f.op(Opcode::Hypot, &[f.param(0), f.param(1)]);
    ///     f.ret(&[h]);
    /// })?;
    /// # Ok::<(), jitdiff_ir::builder::BuildError>(())
    /// ```
    pub fn op<'a>(&'a self, op: Opcode, args: &[Var<'a>]) -> Var<'a> {
        let mut results = self.inst(op, args, Imm::None);
        if results.len() != 1 {
            self.fail(format!("{op} does not produce exactly one value without an immediate; use its named helper"));
            return results.pop().unwrap_or_else(|| self.placeholder(Type::F64));
        }
        results[0]
    }

    /// Call a module function or a declared extern; returns its results.
    pub fn call<'a>(&'a self, callee: impl IntoCallee, args: &[Var<'a>]) -> Vec<Var<'a>> {
        self.inst(Opcode::Call, args, Imm::Callee(callee.into_callee()))
    }

    /// Return `values` from the function, closing the current block.
    pub fn ret<'a>(&'a self, values: &[Var<'a>]) {
        if !values.iter().all(|&v| self.owns(v)) || !self.require_open("ret") {
            return;
        }
        let expected = self.st.borrow().func.returns.clone();
        let got: Vec<Type> = values.iter().map(|v| v.ty()).collect();
        if got.len() != expected.len() || got.iter().zip(&expected).any(|(g, e)| !g.coerces_to(*e)) {
            self.fail(format!("ret gives ({}) but the function returns ({})", type_list(&got), type_list(&expected)));
            return;
        }
        self.terminate(Terminator::Return(values.iter().map(|v| v.value()).collect()));
    }

    // ---- internals shared with control.rs, ops.rs and var.rs ----

    pub(crate) fn owns(&self, v: Var<'_>) -> bool {
        if std::ptr::eq(v.builder(), self) {
            return true;
        }
        let func = self.st.borrow().func.name.clone();
        self.record(BuildError::ForeignValue { func });
        false
    }

    /// Is a block open? If not, record that `what` came after `ret`.
    pub(crate) fn require_open(&self, what: &str) -> bool {
        if self.is_open() {
            return true;
        }
        let func = self.st.borrow().func.name.clone();
        self.record(BuildError::AfterReturn { func, what: what.to_string() });
        false
    }

    pub(crate) fn record(&self, e: BuildError) {
        self.st.borrow_mut().error.get_or_insert(e);
    }

    /// Record a type error at the current block.
    pub(crate) fn fail(&self, message: impl Into<String>) {
        let (func, block) = {
            let st = self.st.borrow();
            let block = st.current.map_or_else(|| "(closed)".to_string(), |b| st.func.block(b).name.clone());
            (st.func.name.clone(), block)
        };
        self.record(BuildError::TypeMismatch { func, block, message: message.into() });
    }

    /// A value defined nowhere, standing in after an error so building can go on.
    pub(crate) fn placeholder(&self, ty: Type) -> Var<'_> {
        let v = self.st.borrow_mut().func.new_value(ty);
        Var::new(v, ty, self)
    }

    fn placeholders(&self, types: &[Type]) -> Vec<Var<'_>> {
        types.iter().map(|&t| self.placeholder(t)).collect()
    }

    pub(crate) fn current(&self) -> Option<Block> {
        self.st.borrow().current
    }

    pub(crate) fn switch_to(&self, block: Option<Block>) {
        self.st.borrow_mut().current = block;
    }

    pub(crate) fn new_block(&self, label: &str) -> Block {
        self.st.borrow_mut().func.add_block(label)
    }

    pub(crate) fn add_block_param(&self, block: Block, ty: Type) -> Var<'_> {
        let v = self.st.borrow_mut().func.add_block_param(block, ty, None);
        Var::new(v, ty, self)
    }

    /// End the current block with `term` and close it.
    pub(crate) fn terminate(&self, term: Terminator) {
        let mut st = self.st.borrow_mut();
        if let Some(b) = st.current.take() {
            st.func.block_mut(b).term = Some(term);
        }
    }

    /// Set the terminator of a block that is not the current one.
    pub(crate) fn set_terminator(&self, block: Block, term: Terminator) {
        self.st.borrow_mut().func.block_mut(block).term = Some(term);
    }

    pub(crate) fn block_call(block: Block, args: &[Var<'_>]) -> BlockCall {
        BlockCall { block, args: args.iter().map(|a| a.value()).collect() }
    }

    /// The callee's result types, or why the call does not fit; plus the result types to use
    /// for placeholders either way (so `f.call(g, bad_args)[0]` still has something to index).
    fn check_call(&self, callee: Callee, args: &[Type]) -> (Result<Vec<Type>, String>, Vec<Type>) {
        let st = self.st.borrow();
        let sig = match callee {
            Callee::Func(id) => st.signatures.funcs.get(id.index()),
            Callee::Extern(id) => st.signatures.externs.get(id.index()),
        };
        let Some(sig) = sig else {
            return (Err(format!("call to {callee:?}, which this module builder did not declare")), vec![]);
        };
        if args.len() != sig.params.len() || args.iter().zip(&sig.params).any(|(a, p)| !a.coerces_to(*p)) {
            let message =
                format!("call @{} passes ({}) but it takes ({})", sig.name, type_list(args), type_list(&sig.params));
            return (Err(message), sig.returns.clone());
        }
        (Ok(sig.returns.clone()), sig.returns.clone())
    }
}

pub(crate) fn type_list(types: &[Type]) -> String {
    types.iter().map(|t| t.spelling()).collect::<Vec<_>>().join(", ")
}

/// The message for operands that do not fit `op`'s shape.
fn mismatch(op: Opcode, args: &[Type], imm: &Imm) -> String {
    let expected = match op.shape() {
        Shape::Const => "no operands and an immediate of its kind",
        Shape::FloatUnary { lanes: true } => "one f64 or f64xW operand",
        Shape::FloatUnary { lanes: false } => "one f64 operand",
        Shape::FloatBinary { lanes: true } => "two operands of one type, f64 or f64xW",
        Shape::FloatBinary { lanes: false } => "two f64 operands",
        Shape::Powi => "(f64, i64)",
        Shape::FloatTernary => "(f64, f64, f64) or (f64xW, f64xW, f64xW)",
        Shape::IntUnary => "(i64)",
        Shape::IntBinary => "(i64, i64)",
        Shape::BoolUnary => "(bool)",
        Shape::BoolBinary => "(bool, bool)",
        Shape::FloatCompare => "(f64, f64) and a condition code",
        Shape::FloatTest => "one f64 or f64xW operand",
        Shape::IntCompare => "(i64, i64) and a condition code",
        Shape::Select => "(bool, T, T) with T not a slice",
        Shape::IntToFloat => "(i64)",
        Shape::FloatToInt => "(f64)",
        Shape::Len => "(slice) or (mslice)",
        Shape::Load => "(slice, i64)",
        Shape::Store => "(mslice, i64, f64)",
        Shape::VectorLoad => "(slice, i64) and a vector result type",
        Shape::VectorStore => "(mslice, i64, f64xW)",
        Shape::Splat => "(f64) and a vector result type",
        Shape::Extract => "(f64xW) and a lane below W",
        Shape::Insert => "(f64xW, f64) and a lane below W",
        Shape::Call => "a callee",
        Shape::TapePush => "(f64), (i64) or (bool)",
        Shape::TapePop => "no operands and a result type f64, i64 or bool",
        Shape::TapeSplit => "no operands",
        Shape::TapeRejoin => "(i64)",
        Shape::Alloc => "(i64)",
        Shape::Table => "no operands and a table (use f.table(id))",
        Shape::Trap => "no operands",
    };
    let hint = if args.contains(&Type::F64) && args.contains(&Type::I64) {
        "; convert between f64 and i64 with itof / ftoi"
    } else {
        ""
    };
    let imm = match imm {
        Imm::None => String::new(),
        other => format!(" with immediate {other:?}"),
    };
    format!("{op} expects {expected}, got ({}){imm}{hint}", type_list(args))
}

/// Result types to use for placeholders when an instruction is rejected.
fn fallback_types(op: Opcode, args: &[Type], imm: &Imm) -> Vec<Type> {
    let first_float = args.iter().copied().find(|t| t.is_float_like()).unwrap_or(Type::F64);
    let one = match op.shape() {
        Shape::Store | Shape::VectorStore | Shape::Call | Shape::TapePush | Shape::TapeRejoin | Shape::Trap => {
            return vec![];
        }
        Shape::TapeSplit => Type::I64,
        Shape::TapePop => match imm {
            Imm::Type(t @ (Type::F64 | Type::I64 | Type::Bool)) => *t,
            _ => Type::F64,
        },
        Shape::Const => match op {
            Opcode::IConst => Type::I64,
            Opcode::BConst => Type::Bool,
            _ => Type::F64,
        },
        Shape::IntUnary | Shape::IntBinary | Shape::FloatToInt | Shape::Len => Type::I64,
        Shape::Alloc => Type::SliceMut,
        Shape::BoolUnary | Shape::BoolBinary | Shape::FloatCompare | Shape::FloatTest | Shape::IntCompare => Type::Bool,
        Shape::Select => args.get(1).copied().filter(|t| !t.is_slice()).unwrap_or(Type::F64),
        Shape::Splat | Shape::VectorLoad => match imm {
            Imm::Type(t @ Type::F64x(_)) => *t,
            _ => Type::F64x(2),
        },
        Shape::Insert => args.first().copied().filter(|t| matches!(t, Type::F64x(_))).unwrap_or(Type::F64x(2)),
        Shape::FloatUnary { .. } | Shape::FloatBinary { .. } => first_float,
        _ => Type::F64,
    };
    vec![one]
}
