//! The IR verifier: module, function, block and instruction checks, typing from the op table, and
//! SSA dominance. Every error names the function, and the block and instruction when there is one,
//! and carries a line:column when a [`SourceMap`] from the parser is given.
//!
//! Errors are reported in textual order (module-level name checks first, then each function from
//! its header down), so the first error is the one a reader meets first.
//!
//! Unreachable blocks are checked like any other block for structure and types, and for ordering
//! of uses within the block; dominance *across* blocks is vacuous for them (as in
//! [`ControlFlow::dominates`]): nothing there ever runs, and removing them is a pass's job.

use crate::analysis::ControlFlow;
use crate::function::is_anonymous_value_name;
use crate::function::{Block, BlockCall, Callee, ExternDecl, Function, Imm, InstData, Module, Terminator, Value};
use crate::opcode::{Opcode, Shape};
use crate::spans::{Pos, SourceMap};
use crate::types::{Type, VECTOR_WIDTHS};
use rustc_hash::FxHashSet as HashSet;
use std::fmt::Write as _;

/// Which part of a block an error is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InstRef {
    /// Instruction `n` of the block (0-based).
    Inst(usize),
    /// The block's terminator.
    Terminator,
}

/// A verification error: what is wrong ([`VerifyErrorKind`]) and where.
///
/// Displays as `3:5: in @f, block body, inst 2 (fadd): <what is wrong — how to fix>`; the
/// position prefix appears only when known, block and instruction only when applicable.
/// Instruction indices are 0-based.
///
/// ```
/// use jitdiff_ir::{verify_module, Function, Module};
/// let mut m = Module::new();
/// m.functions.push(Function::new("f", vec![]));
/// let err = verify_module(&m).unwrap_err();
/// assert_eq!(err.kind.kind_name(), "EmptyFunction");
/// assert!(err.to_string().starts_with("in @f: "));
/// ```
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}", render(self))]
pub struct VerifyError {
    /// The function (or extern) the error is in.
    pub func: String,
    /// The block label, for errors inside a block.
    pub block: Option<String>,
    /// The instruction or terminator, for errors about one.
    pub inst: Option<InstRef>,
    /// The spelling of the instruction's opcode (or `jump`/`br`/`ret`), when `inst` is set.
    pub op: Option<&'static str>,
    /// The source position, when the module came from text and its [`SourceMap`] was given.
    pub pos: Option<Pos>,
    /// What is wrong.
    pub kind: VerifyErrorKind,
}

impl VerifyError {
    /// The stable name of the error's kind (see [`VerifyErrorKind::kind_name`]).
    pub fn kind_name(&self) -> &'static str {
        self.kind.kind_name()
    }
}

fn render(e: &VerifyError) -> String {
    let mut s = String::new();
    if let Some(p) = e.pos {
        let _ = write!(s, "{p}: ");
    }
    let _ = write!(s, "in @{}", e.func);
    if let Some(b) = &e.block {
        let _ = write!(s, ", block {b}");
    }
    match e.inst {
        Some(InstRef::Inst(i)) => {
            let _ = write!(s, ", inst {i}");
        }
        Some(InstRef::Terminator) => s.push_str(", terminator"),
        None => {}
    }
    if let Some(op) = e.op {
        let _ = write!(s, " ({op})");
    }
    let _ = write!(s, ": {}", e.kind);
    s
}

macro_rules! error_kinds {
    ($($(#[doc = $doc:literal])* #[error($($msg:tt)*)] $variant:ident $({ $($field:ident : $fty:ty),* $(,)? })?,)*) => {
        /// What a [`VerifyError`] is about. Each message says what is wrong and how to fix it.
        #[derive(Debug, Clone, PartialEq, thiserror::Error)]
        pub enum VerifyErrorKind {
            $($(#[doc = $doc])* #[error($($msg)*)] $variant $({ $(#[allow(missing_docs)] $field: $fty),* })?,)*
        }
        impl VerifyErrorKind {
            /// The variant's name, stable across releases (`"TypeMismatch"`, ...): test corpora
            /// refer to kinds by it.
            pub fn kind_name(&self) -> &'static str {
                match self { $(VerifyErrorKind::$variant { .. } => stringify!($variant),)* }
            }
        }
    };
}

error_kinds! {
    /// Two functions share a name.
    #[error("function @{name} is defined more than once — rename one of them")]
    DuplicateFunction { name: String },
    /// Two externs share a name.
    #[error("extern @{name} is declared more than once — remove the extra declaration")]
    DuplicateExtern { name: String },
    /// A function and an extern share a name.
    #[error("@{name} is both a function and an extern — rename one of them")]
    NameClash { name: String },
    /// A derivative declaration (`extern @g(...) = grad ... @f wrt ...`) that does not fit `@f`.
    #[error("extern @{name} declares a derivative of @{of}: {reason}")]
    BadDerivative { name: String, of: String, reason: String },
    /// Two tables share a name, or a table shares its name with a function or an extern.
    #[error("table @{name} clashes with another table, function or extern of that name — functions, externs and tables share one namespace; rename one")]
    DuplicateTable { name: String },
    /// A `table` instruction's table index is out of range.
    #[error("the table {table} does not exist in the module — add it to Module::tables (in text, `const @name = [...]`)")]
    InvalidTable { table: String },
    /// A function, extern, table, block or value name outside the grammar's charset (or a value
    /// name of the reserved form `v<digits>`).
    #[error("{what} name `{name}` is invalid — use [A-Za-z_][A-Za-z0-9_]* (value names v<digits> are reserved)")]
    InvalidName { what: &'static str, name: String },
    /// A call's callee index is out of range.
    #[error("the callee {callee} does not exist in the module")]
    InvalidCallee { callee: String },
    /// A value index is past the end of the function's value table.
    #[error("value index {index} is out of range (the function has {count} values) — create values with Function::new_value")]
    InvalidValue { index: usize, count: usize },
    /// A function without blocks.
    #[error("the function has no blocks — add an entry block ending in a terminator")]
    EmptyFunction,
    /// The entry block has parameters.
    #[error("the entry block has {count} parameter(s) — it takes none; use function parameters instead")]
    EntryBlockParams { count: usize },
    /// A jump or branch targets the entry block.
    #[error("jump to the entry block {label} — the entry cannot be a jump target; add a separate loop header block")]
    JumpToEntry { label: String },
    /// A block without a terminator.
    #[error("the block has no terminator — end it with jump, br or ret")]
    MissingTerminator,
    /// A jump target index is out of range.
    #[error("jump to block index {index}, which does not exist")]
    UnknownBlock { index: usize },
    /// A block parameter of slice type.
    #[error("block parameter {param} has type {ty} — slices are function parameters or entry-block allocs, never block parameters")]
    SliceBlockParam { param: String, ty: Type },
    /// A function or extern that returns a slice.
    #[error("{what} has type {ty} — slices are function parameters or entry-block allocs, never results")]
    SliceResult { what: String, ty: Type },
    /// An `alloc` outside the entry block.
    #[error("alloc outside the entry block — local arrays are allocated once per call: move it to the entry block (and zero it with stores where it must start over)")]
    AllocOutsideEntry,
    /// Two values of a function share a name.
    #[error("value name {name} is used more than once — value names must be unique within a function")]
    DuplicateValueName { name: String },
    /// Two blocks of a function share a label.
    #[error("block label {label} is used more than once — labels must be unique within a function")]
    DuplicateBlockLabel { label: String },
    /// A value has more than one definition.
    #[error("value {value} is defined more than once — an SSA value has exactly one definition")]
    ValueDefinedTwice { value: String },
    /// A value is used but defined nowhere.
    #[error("value {value} is used but never defined")]
    UndefinedValue { value: String },
    /// A value is used in its own block before (or by) its defining instruction.
    #[error("value {value} is used before its definition in this block — move the definition above the use")]
    UseBeforeDefinition { value: String },
    /// A value is used in a block its definition does not dominate.
    #[error("value {value}, defined in block {def_block}, does not dominate this use — pass it along as a block argument")]
    NotDominated { value: String, def_block: String },
    /// A wrong number of arguments, operands, results or returned values.
    #[error("{what}: expected {expected}, found {found}")]
    ArityMismatch { what: String, expected: usize, found: usize },
    /// Operand, argument, result or returned-value types do not fit.
    #[error("{detail}")]
    TypeMismatch { detail: String },
    /// The immediate is of the wrong kind for the opcode.
    #[error("{op} needs {expected} as its immediate, found {found}")]
    BadImmediate { op: &'static str, expected: &'static str, found: String },
    /// `extract`/`insert` with a lane past the vector's width.
    #[error("lane {lane} is out of range — f64x{lanes} has {lanes} lanes, numbered from 0")]
    LaneOutOfRange { lane: u8, lanes: u8 },
    /// A vector type whose lane count is not in [`VECTOR_WIDTHS`].
    #[error("vector type f64x{lanes} is not supported — use f64x2, f64x4, f64x8 or f64x16")]
    InvalidVectorWidth { lanes: u8 },
    /// `store`/`vstore` into a read-only `slice`.
    #[error("store into read-only slice {slice} — declare it `mslice` to write to it")]
    StoreToReadOnlySlice { slice: String },
}

/// Verify a module; the first error, in textual order.
///
/// ```
/// use jitdiff_ir::{verify_module, Function, Module, Terminator};
/// let mut f = Function::new("f", vec![]);
/// let entry = f.add_block("entry");
/// f.block_mut(entry).term = Some(Terminator::Return(vec![]));
/// let mut m = Module::new();
/// m.functions.push(f);
/// assert!(verify_module(&m).is_ok());
/// ```
// Verification errors are rare and reported once; their size does not matter.
#[allow(clippy::result_large_err)]
pub fn verify_module(module: &Module) -> Result<(), VerifyError> {
    verify_module_with_spans(module, None)
}

/// Verify a module, filling each error's position from `spans` (the parser's [`SourceMap`]).
#[allow(clippy::result_large_err)]
pub fn verify_module_with_spans(module: &Module, spans: Option<&SourceMap>) -> Result<(), VerifyError> {
    match verify_all(module, spans).into_iter().next() {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Verify the functions of `module` from index `first` on, with the module-wide checks (names,
/// externs), trusting the functions before `first`: for a transform that appends functions to
/// a module it verified, so that a module is not re-verified whole each time it grows.
///
/// ```
/// use jitdiff_ir::{parse_module, verify_module_from};
/// let mut m = parse_module("func @f(x: f64) -> f64 {\nentry:\n    ret x\n}\n").unwrap();
/// m.functions[0].blocks[0].term = None; // breaks @f
/// assert!(verify_module_from(&m, 0).is_err());
/// assert!(verify_module_from(&m, 1).is_ok()); // @f is trusted
/// ```
#[allow(clippy::result_large_err)]
pub fn verify_module_from(module: &Module, first: usize) -> Result<(), VerifyError> {
    let mut errors = vec![];
    check_module_names(module, None, &mut errors);
    for fi in first..module.functions.len() {
        if !errors.is_empty() {
            break;
        }
        FuncChecker::new(module, None, fi, &mut errors).check();
    }
    errors.into_iter().next().map_or(Ok(()), Err)
}

/// Every error of a module, in textual order (empty when the module is valid). An instruction
/// whose operands are already in error is not type-checked, to avoid cascades.
pub fn verify_all(module: &Module, spans: Option<&SourceMap>) -> Vec<VerifyError> {
    let mut errors = vec![];
    check_module_names(module, spans, &mut errors);
    for fi in 0..module.functions.len() {
        FuncChecker::new(module, spans, fi, &mut errors).check();
    }
    errors
}

fn is_valid_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    matches!(bytes.next(), Some(b) if b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

fn width_error(ty: Type) -> Option<VerifyErrorKind> {
    match ty {
        Type::F64x(lanes) if !VECTOR_WIDTHS.contains(&lanes) => Some(VerifyErrorKind::InvalidVectorWidth { lanes }),
        _ => None,
    }
}

/// What makes a derivative declaration unfit for its function, if anything.
fn derivative_mismatch(module: &Module, decl: &ExternDecl, derivative: &crate::DerivativeOf) -> Option<String> {
    let Some(of) = module.func_by_name(&derivative.of) else {
        return Some(format!("the module has no function @{}", derivative.of));
    };
    let (params, returns) = match derivative.signature(of) {
        Ok(signature) => signature,
        Err(reason) => return Some(reason),
    };
    let spell = |types: &[Type]| types.iter().map(|t| t.spelling()).collect::<Vec<_>>().join(", ");
    (params != decl.params || returns != decl.returns).then(|| {
        format!(
            "its signature must be ({}) -> {} (@{}'s parameters; one partial per differentiated parameter), not ({}) -> {}",
            spell(&params),
            spell(&returns),
            of.name,
            spell(&decl.params),
            spell(&decl.returns)
        )
    })
}

/// Checks of names and extern signatures across the module.
fn check_module_names(module: &Module, spans: Option<&SourceMap>, errors: &mut Vec<VerifyError>) {
    let at = |name: &str, pos: Option<Pos>, kind| VerifyError {
        func: name.to_string(),
        block: None,
        inst: None,
        op: None,
        pos,
        kind,
    };
    let mut extern_names = HashSet::default();
    for (i, e) in module.externs.iter().enumerate() {
        let pos = spans.and_then(|s| s.externs.get(i).copied());
        if !is_valid_name(&e.name) {
            errors.push(at(&e.name, pos, VerifyErrorKind::InvalidName { what: "extern", name: e.name.clone() }));
        }
        if !extern_names.insert(e.name.as_str()) {
            errors.push(at(&e.name, pos, VerifyErrorKind::DuplicateExtern { name: e.name.clone() }));
        }
        for &ty in e.params.iter().chain(&e.returns) {
            if let Some(kind) = width_error(ty) {
                errors.push(at(&e.name, pos, kind));
            }
        }
        if let Some(derivative) = &e.derivative
            && let Some(reason) = derivative_mismatch(module, e, derivative)
        {
            let kind = VerifyErrorKind::BadDerivative { name: e.name.clone(), of: derivative.of.clone(), reason };
            errors.push(at(&e.name, pos, kind));
        }
        for (k, &ty) in e.returns.iter().enumerate() {
            if ty.is_slice() {
                let what = format!("result {k} of extern @{}", e.name);
                errors.push(at(&e.name, pos, VerifyErrorKind::SliceResult { what, ty }));
            }
        }
    }
    let mut func_names = HashSet::default();
    for (i, f) in module.functions.iter().enumerate() {
        let pos = spans.and_then(|s| s.func(i));
        if !is_valid_name(&f.name) {
            errors.push(at(&f.name, pos, VerifyErrorKind::InvalidName { what: "function", name: f.name.clone() }));
        }
        if !func_names.insert(f.name.as_str()) {
            errors.push(at(&f.name, pos, VerifyErrorKind::DuplicateFunction { name: f.name.clone() }));
        } else if extern_names.contains(f.name.as_str()) {
            errors.push(at(&f.name, pos, VerifyErrorKind::NameClash { name: f.name.clone() }));
        }
    }
    let mut table_names = HashSet::default();
    for (i, t) in module.tables.iter().enumerate() {
        let pos = spans.and_then(|s| s.tables.get(i).copied());
        if !is_valid_name(&t.name) {
            errors.push(at(&t.name, pos, VerifyErrorKind::InvalidName { what: "table", name: t.name.clone() }));
        }
        let name = t.name.as_str();
        if !table_names.insert(name) || func_names.contains(name) || extern_names.contains(name) {
            errors.push(at(&t.name, pos, VerifyErrorKind::DuplicateTable { name: t.name.clone() }));
        }
    }
}

/// Where a value is (first) defined.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Site {
    Param,
    BlockParam(usize),
    Inst(usize, usize),
}

/// Where inside a function an error is: block index, instruction, opcode spelling.
#[derive(Clone, Copy)]
struct Loc {
    block: Option<usize>,
    inst: Option<InstRef>,
    op: Option<&'static str>,
}

const FUNC_LOC: Loc = Loc { block: None, inst: None, op: None };

fn block_loc(b: usize) -> Loc {
    Loc { block: Some(b), inst: None, op: None }
}

struct FuncChecker<'a> {
    module: &'a Module,
    spans: Option<&'a SourceMap>,
    fi: usize,
    f: &'a Function,
    cfg: ControlFlow,
    /// The first definition site of each value, from a pre-pass (dominance needs all of them).
    defs: Vec<Option<Site>>,
    /// Values whose definition the textual walk has passed.
    defined: Vec<bool>,
    names: HashSet<&'a str>,
    errors: &'a mut Vec<VerifyError>,
}

impl<'a> FuncChecker<'a> {
    fn new(module: &'a Module, spans: Option<&'a SourceMap>, fi: usize, errors: &'a mut Vec<VerifyError>) -> Self {
        let f = &module.functions[fi];
        let n = f.values.len();
        let mut defs = vec![None; n];
        let mut record = |v: Value, site: Site| {
            if let Some(d) = defs.get_mut(v.index()) {
                d.get_or_insert(site);
            }
        };
        f.params.iter().for_each(|&p| record(p, Site::Param));
        for (bi, b) in f.blocks.iter().enumerate() {
            b.params.iter().for_each(|&p| record(p, Site::BlockParam(bi)));
            for (ii, inst) in b.insts.iter().enumerate() {
                inst.results.iter().for_each(|&r| record(r, Site::Inst(bi, ii)));
            }
        }
        let cfg = ControlFlow::new(f);
        FuncChecker { module, spans, fi, f, cfg, defs, defined: vec![false; n], names: HashSet::default(), errors }
    }

    fn error(&mut self, loc: Loc, kind: VerifyErrorKind) {
        let pos = self.spans.and_then(|s| {
            let (fi, precise) = (
                self.fi,
                match (loc.block, loc.inst) {
                    (Some(b), Some(InstRef::Inst(i))) => s.inst(self.fi, b, i),
                    (Some(b), Some(InstRef::Terminator)) => s.term(self.fi, b),
                    _ => None,
                },
            );
            precise.or_else(|| loc.block.and_then(|b| s.block(fi, b))).or_else(|| s.func(fi))
        });
        self.errors.push(VerifyError {
            func: self.f.name.clone(),
            block: loc.block.and_then(|b| self.f.blocks.get(b)).map(|b| b.name.clone()),
            inst: loc.inst,
            op: loc.op,
            pos,
            kind,
        });
    }

    fn label(&self, v: Value) -> String {
        self.f.value_label(v)
    }

    fn block_label(&self, b: usize) -> String {
        self.f.blocks.get(b).map_or_else(|| format!("#{b}"), |d| d.name.clone())
    }

    fn check(mut self) {
        let f = self.f;
        if f.blocks.is_empty() {
            self.error(FUNC_LOC, VerifyErrorKind::EmptyFunction);
            return;
        }
        for &p in &f.params {
            self.define(p, FUNC_LOC);
        }
        for (k, &ty) in f.returns.iter().enumerate() {
            if let Some(kind) = width_error(ty) {
                self.error(FUNC_LOC, kind);
            } else if ty.is_slice() {
                self.error(FUNC_LOC, VerifyErrorKind::SliceResult { what: format!("result {k} of @{}", f.name), ty });
            }
        }
        let mut labels = HashSet::default();
        for (bi, b) in f.blocks.iter().enumerate() {
            let loc = block_loc(bi);
            if !is_valid_name(&b.name) {
                self.error(loc, VerifyErrorKind::InvalidName { what: "block", name: b.name.clone() });
            } else if !labels.insert(b.name.as_str()) {
                self.error(loc, VerifyErrorKind::DuplicateBlockLabel { label: b.name.clone() });
            }
            if bi == 0 && !b.params.is_empty() {
                self.error(loc, VerifyErrorKind::EntryBlockParams { count: b.params.len() });
            }
            for &p in &b.params {
                if let Some(ty) = self.define(p, loc)
                    && ty.is_slice()
                {
                    self.error(loc, VerifyErrorKind::SliceBlockParam { param: self.label(p), ty });
                }
            }
            for (ii, inst) in b.insts.iter().enumerate() {
                self.check_inst(bi, ii, inst);
            }
            match &b.term {
                None => self.error(loc, VerifyErrorKind::MissingTerminator),
                Some(t) => self.check_terminator(bi, t),
            }
        }
    }

    /// Record the definition of `v` met by the textual walk; its type if the value is valid.
    fn define(&mut self, v: Value, loc: Loc) -> Option<Type> {
        let count = self.f.values.len();
        let Some(data) = self.f.values.get(v.index()) else {
            self.error(loc, VerifyErrorKind::InvalidValue { index: v.index(), count });
            return None;
        };
        if std::mem::replace(&mut self.defined[v.index()], true) {
            self.error(loc, VerifyErrorKind::ValueDefinedTwice { value: self.label(v) });
            return None;
        }
        if let Some(name) = data.name.as_deref() {
            if !is_valid_name(name) || is_anonymous_value_name(name) {
                self.error(loc, VerifyErrorKind::InvalidName { what: "value", name: name.to_string() });
            } else if !self.names.insert(name) {
                self.error(loc, VerifyErrorKind::DuplicateValueName { name: name.to_string() });
            }
        }
        if let Some(kind) = width_error(data.ty) {
            self.error(loc, kind);
            return None;
        }
        Some(data.ty)
    }

    /// Check a use of `v` at instruction `at` of block `b` (`at == insts.len()` for the
    /// terminator); its type if it is defined and its definition dominates the use.
    fn use_value(&mut self, v: Value, b: usize, at: usize, loc: Loc) -> Option<Type> {
        let count = self.f.values.len();
        let Some(data) = self.f.values.get(v.index()) else {
            self.error(loc, VerifyErrorKind::InvalidValue { index: v.index(), count });
            return None;
        };
        let (def_block, ok) = match self.defs[v.index()] {
            None => {
                self.error(loc, VerifyErrorKind::UndefinedValue { value: self.label(v) });
                return None;
            }
            Some(Site::Param) => (0, true),
            Some(Site::BlockParam(db)) => (db, db == b || self.cfg.dominates(Block(db as u32), Block(b as u32))),
            Some(Site::Inst(db, di)) if db == b => {
                if di >= at {
                    self.error(loc, VerifyErrorKind::UseBeforeDefinition { value: self.label(v) });
                    return None;
                }
                (db, true)
            }
            Some(Site::Inst(db, _)) => (db, self.cfg.dominates(Block(db as u32), Block(b as u32))),
        };
        if !ok {
            let kind = VerifyErrorKind::NotDominated { value: self.label(v), def_block: self.block_label(def_block) };
            self.error(loc, kind);
            return None;
        }
        Some(data.ty)
    }

    fn check_inst(&mut self, bi: usize, ii: usize, inst: &InstData) {
        let op = inst.op;
        let loc = Loc { block: Some(bi), inst: Some(InstRef::Inst(ii)), op: Some(op.spelling()) };
        let arg_types: Vec<Option<Type>> = inst.args.iter().map(|&a| self.use_value(a, bi, ii, loc)).collect();
        let result_types: Vec<Option<Type>> = inst.results.iter().map(|&r| self.define(r, loc)).collect();
        let (Some(args), Some(results)) = (
            arg_types.into_iter().collect::<Option<Vec<Type>>>(),
            result_types.into_iter().collect::<Option<Vec<Type>>>(),
        ) else {
            return;
        };
        if let Err(kind) = check_immediate(op, &inst.imm) {
            return self.error(loc, kind);
        }
        if op == Opcode::Alloc && bi != 0 {
            return self.error(loc, VerifyErrorKind::AllocOutsideEntry);
        }
        let expected = match self.op_results(op, inst, &args) {
            Ok(e) => e,
            Err(kind) => return self.error(loc, kind),
        };
        if expected.len() != results.len() {
            let what = format!("results of {}", self.describe_op(inst));
            let kind = VerifyErrorKind::ArityMismatch { what, expected: expected.len(), found: results.len() };
            return self.error(loc, kind);
        }
        for (k, (&want, &got)) in expected.iter().zip(&results).enumerate() {
            if want != got {
                let detail = format!(
                    "result {} has type {got}, but {} yields {want} — give the result type {want}",
                    self.label(inst.results[k]),
                    self.describe_op(inst)
                );
                return self.error(loc, VerifyErrorKind::TypeMismatch { detail });
            }
        }
    }

    fn describe_op(&self, inst: &InstData) -> String {
        match inst.imm {
            Imm::Callee(c) if inst.op == Opcode::Call => format!("call @{}", self.module.callee_name(c)),
            _ => inst.op.spelling().to_string(),
        }
    }

    /// The result types an instruction yields given its (valid) operand types.
    fn op_results(&self, op: Opcode, inst: &InstData, args: &[Type]) -> Result<Vec<Type>, VerifyErrorKind> {
        if let Imm::Callee(callee) = inst.imm {
            let Some((params, returns)) = callee_signature(self.module, callee) else {
                let callee = match callee {
                    Callee::Func(id) => format!("function #{}", id.0),
                    Callee::Extern(id) => format!("extern #{}", id.0),
                };
                return Err(VerifyErrorKind::InvalidCallee { callee });
            };
            let name = self.module.callee_name(callee);
            if params.len() != args.len() {
                let what = format!("arguments of call @{name}");
                return Err(VerifyErrorKind::ArityMismatch { what, expected: params.len(), found: args.len() });
            }
            for (k, (&want, &got)) in params.iter().zip(args).enumerate() {
                // A callee parameter with no type is reported in the callee itself.
                let Some(want) = want else { continue };
                if !got.coerces_to(want) {
                    let arg = self.label(inst.args[k]);
                    let detail =
                        format!("argument {k} ({arg}) of call @{name} has type {got}, but @{name} takes {want}");
                    return Err(VerifyErrorKind::TypeMismatch { detail });
                }
            }
            return Ok(returns);
        }
        if let Imm::Table(id) = inst.imm
            && self.module.table(id).is_none()
        {
            return Err(VerifyErrorKind::InvalidTable { table: format!("#{}", id.index()) });
        }
        if matches!(op, Opcode::Store | Opcode::VStore) && args.first() == Some(&Type::Slice) {
            return Err(VerifyErrorKind::StoreToReadOnlySlice { slice: self.label(inst.args[0]) });
        }
        if let (Opcode::Extract | Opcode::Insert, Some(&Type::F64x(lanes)), Imm::Lane(lane)) =
            (op, args.first(), inst.imm)
            && lane >= lanes
        {
            return Err(VerifyErrorKind::LaneOutOfRange { lane, lanes });
        }
        match op.result_type(args, &inst.imm) {
            Some(t) => Ok(t.into_iter().collect()),
            None => Err(VerifyErrorKind::TypeMismatch { detail: operand_mismatch(op, args) }),
        }
    }

    fn check_terminator(&mut self, bi: usize, term: &Terminator) {
        let op = match term {
            Terminator::Jump(_) => "jump",
            Terminator::Branch { .. } => "br",
            Terminator::Return(_) => "ret",
        };
        let loc = Loc { block: Some(bi), inst: Some(InstRef::Terminator), op: Some(op) };
        let at = self.f.blocks[bi].insts.len();
        match term {
            Terminator::Jump(call) => self.check_block_call(bi, at, call, loc),
            Terminator::Branch { cond, then_dest, else_dest } => {
                if let Some(ty) = self.use_value(*cond, bi, at, loc)
                    && ty != Type::Bool
                {
                    let detail = format!("branch condition {} has type {ty} — br needs a bool", self.label(*cond));
                    self.error(loc, VerifyErrorKind::TypeMismatch { detail });
                }
                self.check_block_call(bi, at, then_dest, loc);
                self.check_block_call(bi, at, else_dest, loc);
            }
            Terminator::Return(values) => {
                let types: Vec<Option<Type>> = values.iter().map(|&v| self.use_value(v, bi, at, loc)).collect();
                let Some(types) = types.into_iter().collect::<Option<Vec<Type>>>() else { return };
                let returns = &self.f.returns;
                if types.len() != returns.len() {
                    let what = format!("values returned by @{}", self.f.name);
                    let kind = VerifyErrorKind::ArityMismatch { what, expected: returns.len(), found: types.len() };
                    return self.error(loc, kind);
                }
                for (k, (&got, &want)) in types.iter().zip(returns).enumerate() {
                    if got != want {
                        let v = self.label(values[k]);
                        let detail = format!(
                            "returned value {k} ({v}) has type {got}, but @{} returns {want} there",
                            self.f.name
                        );
                        return self.error(loc, VerifyErrorKind::TypeMismatch { detail });
                    }
                }
            }
        }
    }

    fn check_block_call(&mut self, bi: usize, at: usize, call: &BlockCall, loc: Loc) {
        let target = call.block.index();
        let types: Vec<Option<Type>> = call.args.iter().map(|&v| self.use_value(v, bi, at, loc)).collect();
        let Some(target_data) = self.f.blocks.get(target) else {
            return self.error(loc, VerifyErrorKind::UnknownBlock { index: target });
        };
        if target == 0 {
            return self.error(loc, VerifyErrorKind::JumpToEntry { label: target_data.name.clone() });
        }
        let params = &target_data.params;
        if params.len() != call.args.len() {
            let what = format!("arguments of jump to block {}", target_data.name);
            let kind = VerifyErrorKind::ArityMismatch { what, expected: params.len(), found: call.args.len() };
            return self.error(loc, kind);
        }
        for (k, (&p, got)) in params.iter().zip(types).enumerate() {
            let (Some(got), Some(want)) = (got, self.f.values.get(p.index()).map(|d| d.ty)) else { continue };
            if got != want {
                let detail = format!(
                    "argument {k} ({}) to block {} has type {got}, but parameter {} has type {want}",
                    self.label(call.args[k]),
                    target_data.name,
                    self.label(p)
                );
                return self.error(loc, VerifyErrorKind::TypeMismatch { detail });
            }
        }
    }
}

/// A callee's parameter types (`None` for a parameter whose value does not exist) and result
/// types. Unlike [`Module::callee_signature`], never panics on a malformed callee.
fn callee_signature(module: &Module, callee: Callee) -> Option<(Vec<Option<Type>>, Vec<Type>)> {
    match callee {
        Callee::Func(id) => module.functions.get(id.index()).map(|f| {
            let params = f.params.iter().map(|p| f.values.get(p.index()).map(|d| d.ty)).collect();
            (params, f.returns.clone())
        }),
        Callee::Extern(id) => {
            module.externs.get(id.index()).map(|e| (e.params.iter().copied().map(Some).collect(), e.returns.clone()))
        }
    }
}

/// Is `imm` the kind of immediate `op` takes?
fn check_immediate(op: Opcode, imm: &Imm) -> Result<(), VerifyErrorKind> {
    let (expected, ok) = match op {
        Opcode::FConst => ("a float", matches!(imm, Imm::F64(_))),
        Opcode::IConst => ("an integer", matches!(imm, Imm::I64(_))),
        Opcode::BConst => ("a boolean", matches!(imm, Imm::Bool(_))),
        Opcode::FCmp | Opcode::ICmp => ("a condition", matches!(imm, Imm::Cond(_))),
        Opcode::Extract | Opcode::Insert => ("a lane", matches!(imm, Imm::Lane(_))),
        Opcode::Call => ("a callee", matches!(imm, Imm::Callee(_))),
        Opcode::Table => ("a table", matches!(imm, Imm::Table(_))),
        Opcode::Splat | Opcode::VLoad => match imm {
            Imm::Type(t @ Type::F64x(_)) => return width_error(*t).map_or(Ok(()), Err),
            _ => ("a vector type f64xW", false),
        },
        Opcode::TPop => {
            ("a result type f64, i64 or bool", matches!(imm, Imm::Type(Type::F64 | Type::I64 | Type::Bool)))
        }
        _ => ("no immediate", matches!(imm, Imm::None)),
    };
    if ok {
        Ok(())
    } else {
        Err(VerifyErrorKind::BadImmediate { op: op.spelling(), expected, found: format!("{imm:?}") })
    }
}

/// The message for operands that do not fit `op`'s shape.
fn operand_mismatch(op: Opcode, args: &[Type]) -> String {
    let shape = op.shape();
    match (shape, args) {
        (Shape::FloatBinary { lanes }, [a, b]) if a != b && (a.is_float_like() || b.is_float_like()) => {
            let which = if lanes { "float type (f64 or f64xW)" } else { "type f64" };
            format!("operand types {a} and {b} differ — both operands of {op} must have the same {which}")
        }
        (Shape::Select, [Type::Bool, a, b]) if a != b => {
            format!("select arms have types {a} and {b} — both arms must have the same type")
        }
        _ => {
            let found: Vec<&str> = args.iter().map(|t| t.spelling()).collect();
            format!("{op} cannot take operands ({}) — it expects {}", found.join(", "), shape_description(shape))
        }
    }
}

/// What an opcode of shape `shape` expects, in words.
fn shape_description(shape: Shape) -> &'static str {
    match shape {
        Shape::Const => "no operands",
        Shape::FloatUnary { lanes: true } => "one operand of type f64 or f64xW",
        Shape::FloatUnary { lanes: false } => "one f64 operand",
        Shape::FloatBinary { lanes: true } => "two operands of the same type, f64 or f64xW",
        Shape::FloatBinary { lanes: false } => "two f64 operands",
        Shape::Powi => "operands (f64, i64)",
        Shape::FloatTernary => "three operands of the same type, f64 or f64xW",
        Shape::IntUnary => "one i64 operand",
        Shape::IntBinary => "two i64 operands",
        Shape::BoolUnary => "one bool operand",
        Shape::BoolBinary => "two bool operands",
        Shape::FloatCompare => "two f64 operands",
        Shape::FloatTest => "one operand of type f64 or f64xW",
        Shape::IntCompare => "two i64 operands",
        Shape::Select => "a bool condition and two operands of the same non-slice type",
        Shape::IntToFloat => "one i64 operand",
        Shape::FloatToInt => "one f64 operand",
        Shape::Len => "one slice or mslice operand",
        Shape::Load => "operands (slice or mslice, i64)",
        Shape::Store => "operands (mslice, i64, f64)",
        Shape::VectorLoad => "operands (slice or mslice, i64)",
        Shape::VectorStore => "operands (mslice, i64, f64xW)",
        Shape::Splat => "one f64 operand",
        Shape::Extract => "one f64xW operand",
        Shape::Insert => "operands (f64xW, f64)",
        Shape::Call => "the callee's parameter types",
        Shape::TapePush => "one f64, i64 or bool operand",
        Shape::TapePop | Shape::TapeSplit => "no operands",
        Shape::TapeRejoin => "one i64 operand (the cursor `tsplit` returned)",
        Shape::Alloc => "one i64 operand (the length)",
        Shape::Table | Shape::Trap => "no operands",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::function::{ExternDecl, ExternId, FuncId};
    use crate::opcode::CondCode;
    use crate::spans::FuncSpans;

    fn inst(op: Opcode, args: &[Value], imm: Imm, results: &[Value]) -> InstData {
        InstData {
            op,
            args: crate::function::ValueList::from_slice(args),
            imm,
            results: crate::function::ValueList::from_slice(results),
        }
    }
    fn to(block: Block, args: &[Value]) -> BlockCall {
        BlockCall { block, args: crate::function::ValueList::from_slice(args) }
    }
    fn ret(values: &[Value]) -> Option<Terminator> {
        Some(Terminator::Return(values.to_vec()))
    }
    fn module_of(functions: Vec<Function>) -> Module {
        Module { externs: vec![], tables: vec![], functions }
    }
    fn first_kind(functions: Vec<Function>) -> &'static str {
        verify_module(&module_of(functions)).expect_err("the module should be rejected").kind_name()
    }
    fn kinds(m: &Module) -> Vec<&'static str> {
        verify_all(m, None).iter().map(VerifyError::kind_name).collect()
    }

    /// `f(x: slice, out: mslice) -> f64`: a counted loop summing `x` into `out[0]`, with a call.
    fn valid_loop() -> Function {
        let mut f = Function::new("sum", vec![Type::F64]);
        let x = f.add_param(Type::Slice, Some("x"));
        let out = f.add_param(Type::SliceMut, Some("out"));
        let [entry, head, body, exit] = ["entry", "head", "body", "exit"].map(|n| f.add_block(n));
        let i = f.add_block_param(head, Type::I64, Some("i"));
        let acc = f.add_block_param(head, Type::F64, Some("acc"));
        let r = f.add_block_param(exit, Type::F64, Some("r"));
        let [n, zero, one, acc0] = [Type::I64, Type::I64, Type::I64, Type::F64].map(|t| f.new_value(t));
        f.block_mut(entry).insts = vec![
            inst(Opcode::Len, &[x], Imm::None, &[n]),
            inst(Opcode::IConst, &[], Imm::I64(0), &[zero]),
            inst(Opcode::IConst, &[], Imm::I64(1), &[one]),
            inst(Opcode::FConst, &[], Imm::F64(0.0), &[acc0]),
        ];
        f.block_mut(entry).term = Some(Terminator::Jump(to(head, &[zero, acc0])));
        let more = f.new_value(Type::Bool);
        f.block_mut(head).insts = vec![inst(Opcode::ICmp, &[i, n], Imm::Cond(CondCode::Lt), &[more])];
        f.block_mut(head).term =
            Some(Terminator::Branch { cond: more, then_dest: to(body, &[]), else_dest: to(exit, &[acc]) });
        let [xi, acc2, inext] = [Type::F64, Type::F64, Type::I64].map(|t| f.new_value(t));
        f.block_mut(body).insts = vec![
            inst(Opcode::Load, &[x], Imm::None, &[xi]).with_arg(i),
            inst(Opcode::FAdd, &[acc, xi], Imm::None, &[acc2]),
            inst(Opcode::IAdd, &[i, one], Imm::None, &[inext]),
        ];
        f.block_mut(body).term = Some(Terminator::Jump(to(head, &[inext, acc2])));
        let [v, w, s] = [Type::F64x(4), Type::F64, Type::F64].map(|t| f.new_value(t));
        f.block_mut(exit).insts = vec![
            inst(Opcode::Splat, &[r], Imm::Type(Type::F64x(4)), &[v]),
            inst(Opcode::Extract, &[v], Imm::Lane(3), &[w]),
            inst(Opcode::Store, &[out, zero, w], Imm::None, &[]),
            inst(Opcode::Call, &[out], Imm::Callee(Callee::Func(FuncId(1))), &[s]),
        ];
        f.block_mut(exit).term = ret(&[s]);
        f
    }

    trait WithArg {
        fn with_arg(self, v: Value) -> Self;
    }
    impl WithArg for InstData {
        fn with_arg(mut self, v: Value) -> Self {
            self.args.push(v);
            self
        }
    }

    /// `first(s: slice) -> f64`, the callee of [`valid_loop`] (takes a slice; gets an mslice).
    fn callee() -> Function {
        let mut f = Function::new("first", vec![Type::F64]);
        let s = f.add_param(Type::Slice, Some("s"));
        let entry = f.add_block("entry");
        let [k, y] = [Type::I64, Type::F64].map(|t| f.new_value(t));
        f.block_mut(entry).insts =
            vec![inst(Opcode::IConst, &[], Imm::I64(0), &[k]), inst(Opcode::Load, &[s, k], Imm::None, &[y])];
        f.block_mut(entry).term = ret(&[y]);
        f
    }

    fn valid_module() -> Module {
        module_of(vec![valid_loop(), callee()])
    }

    /// Apply `edit` to the loop function of [`valid_module`] and return the first error's kind.
    fn kind_after(edit: impl FnOnce(&mut Function)) -> &'static str {
        let mut m = valid_module();
        edit(&mut m.functions[0]);
        verify_module(&m).expect_err("the edit should make the module invalid").kind_name()
    }

    fn block(f: &Function, name: &str) -> Block {
        f.block_by_name(name).unwrap()
    }

    #[test]
    fn valid_module_passes() {
        assert_eq!(verify_all(&valid_module(), None), vec![]);
        let mut canonical = valid_module();
        canonical.canonicalize();
        assert!(verify_module(&canonical).is_ok());
    }

    #[test]
    fn module_level_names() {
        let mut m = valid_module();
        m.functions.push(callee());
        assert_eq!(kinds(&m), vec!["DuplicateFunction"]);
        let mut m = valid_module();
        let decl =
            ExternDecl { name: "first".into(), params: vec![Type::F64], returns: vec![Type::F64], derivative: None };
        m.externs.push(decl.clone());
        assert_eq!(kinds(&m), vec!["NameClash"]);
        m.externs[0].name = "g".into();
        m.externs.push(ExternDecl { name: "g".into(), ..decl });
        assert_eq!(kinds(&m), vec!["DuplicateExtern"]);
        m.externs.truncate(1);
        m.externs[0].returns = vec![Type::Slice];
        assert_eq!(kinds(&m), vec!["SliceResult"]);
        m.externs[0].returns = vec![Type::F64x(3)];
        assert_eq!(kinds(&m), vec!["InvalidVectorWidth"]);
        m.externs[0].returns = vec![];
        m.functions[1].name = "bad name".into();
        assert_eq!(kinds(&m)[0], "InvalidName");
    }

    #[test]
    fn callee_index_must_exist() {
        let mut m = valid_module();
        m.functions.truncate(1);
        assert_eq!(kinds(&m), vec!["InvalidCallee"]);
        m.externs.push(ExternDecl {
            name: "e".into(),
            params: vec![Type::Slice],
            returns: vec![Type::F64],
            derivative: None,
        });
        let exit = block(&m.functions[0], "exit");
        m.functions[0].block_mut(exit).insts[3].imm = Imm::Callee(Callee::Extern(ExternId(0)));
        assert!(verify_module(&m).is_ok(), "an extern callee with a matching signature is fine");
        m.functions[0].block_mut(exit).insts[3].imm = Imm::Callee(Callee::Extern(ExternId(5)));
        assert_eq!(kinds(&m), vec!["InvalidCallee"]);
    }

    #[test]
    fn function_structure() {
        assert_eq!(first_kind(vec![Function::new("f", vec![])]), "EmptyFunction");
        assert_eq!(kind_after(|f| f.blocks[0].params.push(Value(0))), "EntryBlockParams");
        assert_eq!(
            kind_after(|f| {
                let p = f.add_block_param(Block::ENTRY, Type::F64, None);
                f.values[p.index()].ty = Type::F64;
            }),
            "EntryBlockParams"
        );
        assert_eq!(kind_after(|f| f.blocks[2].term = Some(Terminator::Jump(to(Block::ENTRY, &[])))), "JumpToEntry");
        assert_eq!(kind_after(|f| f.blocks[3].term = None), "MissingTerminator");
        assert_eq!(kind_after(|f| f.blocks[2].term = Some(Terminator::Jump(to(Block(9), &[])))), "UnknownBlock");
        assert_eq!(kind_after(|f| f.blocks[2].name = "head".into()), "DuplicateBlockLabel");
        assert_eq!(kind_after(|f| f.blocks[2].name = "9lives".into()), "InvalidName");
        assert_eq!(kind_after(|f| f.returns = vec![Type::Slice]), "SliceResult");
    }

    #[test]
    fn slice_block_param_is_rejected() {
        let kind = kind_after(|f| {
            let head = block(f, "head");
            let x = f.params[0];
            f.add_block_param(head, Type::Slice, Some("s"));
            // Keep every jump's arity and types right, so the slice param is the only problem.
            for b in [Block::ENTRY, block(f, "body")] {
                if let Some(Terminator::Jump(c)) = &mut f.block_mut(b).term {
                    c.args.push(x);
                }
            }
        });
        assert_eq!(kind, "SliceBlockParam");
    }

    #[test]
    fn value_definitions_and_names() {
        assert_eq!(kind_after(|f| f.values[5].name = Some("x".into())), "DuplicateValueName");
        assert_eq!(kind_after(|f| f.values[5].name = Some("v5".into())), "InvalidName");
        assert_eq!(kind_after(|f| f.blocks[2].insts[2].results = smallvec::smallvec![Value(6)]), "ValueDefinedTwice");
        assert_eq!(kind_after(|f| f.params.push(Value(2))), "ValueDefinedTwice");
        assert_eq!(kind_after(|f| f.blocks[2].insts[1].args[0] = Value(999)), "InvalidValue");
        assert_eq!(
            kind_after(|f| {
                let orphan = f.new_value(Type::F64);
                f.blocks[2].insts[1].args[0] = orphan;
            }),
            "UndefinedValue"
        );
        assert_eq!(
            kind_after(|f| f.values[f.blocks[3].insts[0].results[0].index()].ty = Type::F64x(5)),
            "InvalidVectorWidth"
        );
    }

    #[test]
    fn dominance() {
        // acc2 used in body before its definition.
        assert_eq!(
            kind_after(|f| {
                let acc2 = f.blocks[2].insts[1].results[0];
                f.blocks[2].insts[0].args[1] = acc2;
                f.values[acc2.index()].ty = Type::I64;
            }),
            "UseBeforeDefinition"
        );
        // an instruction using its own result
        assert_eq!(
            kind_after(|f| {
                let r = f.blocks[2].insts[1].results[0];
                f.blocks[2].insts[1].args[1] = r;
            }),
            "UseBeforeDefinition"
        );
        // xi (defined in body) used in exit, which body does not dominate.
        assert_eq!(
            kind_after(|f| {
                let xi = f.blocks[2].insts[0].results[0];
                f.blocks[3].term = ret(&[xi]);
            }),
            "NotDominated"
        );
        // a block param of body... exit's param r used in body.
        assert_eq!(
            kind_after(|f| {
                let r = f.blocks[3].params[0];
                f.blocks[2].insts[1].args[1] = r;
            }),
            "NotDominated"
        );
        // values of the entry block dominate everything; head's params dominate body and exit.
        let mut m = valid_module();
        let n = m.functions[0].blocks[0].insts[0].results[0];
        let i = m.functions[0].blocks[1].params[0];
        m.functions[0].blocks[3].insts.push(inst(Opcode::IAdd, &[n, i], Imm::None, &[]));
        let k = m.functions[0].new_value(Type::I64);
        m.functions[0].blocks[3].insts.last_mut().unwrap().results.push(k);
        assert_eq!(verify_all(&m, None), vec![]);
    }

    #[test]
    fn unreachable_blocks_skip_cross_block_dominance_only() {
        let mut m = valid_module();
        let f = &mut m.functions[0];
        let dead = f.add_block("dead");
        let xi = f.blocks[2].insts[0].results[0];
        f.block_mut(dead).term = ret(&[xi]);
        assert_eq!(verify_all(&m, None), vec![], "a use in dead code is not a dominance error");
        let f = &mut m.functions[0];
        let y = f.new_value(Type::F64);
        f.block_mut(dead).insts = vec![inst(Opcode::FNeg, &[y], Imm::None, &[y])];
        assert_eq!(kinds(&m), vec!["UseBeforeDefinition"]);
    }

    #[test]
    fn terminator_typing() {
        // jump arity and type
        assert_eq!(
            kind_after(|f| f.blocks[0].term = Some(Terminator::Jump(to(Block(1), &[Value(6)])))),
            "ArityMismatch"
        );
        assert_eq!(
            kind_after(|f| f.blocks[0].term = Some(Terminator::Jump(to(Block(1), &[Value(7), Value(7)])))),
            "TypeMismatch"
        );
        // br on a non-bool
        assert_eq!(
            kind_after(|f| {
                let acc = f.blocks[1].params[1];
                if let Some(Terminator::Branch { cond, .. }) = &mut f.blocks[1].term {
                    *cond = acc;
                }
            }),
            "TypeMismatch"
        );
        // ret count and type
        assert_eq!(kind_after(|f| f.blocks[3].term = ret(&[])), "ArityMismatch");
        assert_eq!(kind_after(|f| f.blocks[3].term = ret(&[Value(6)])), "TypeMismatch");
        assert_eq!(kind_after(|f| f.returns = vec![Type::I64]), "TypeMismatch");
    }

    #[test]
    fn instruction_typing() {
        // fadd f64 + i64
        assert_eq!(kind_after(|f| f.blocks[2].insts[1].args[1] = f.blocks[1].params[0]), "TypeMismatch");
        // wrong operand count
        assert_eq!(kind_after(|f| f.blocks[2].insts[1].args.pop().map(|_| ()).unwrap()), "TypeMismatch");
        // result type differs from what the op yields
        assert_eq!(kind_after(|f| f.values[f.blocks[2].insts[1].results[0].index()].ty = Type::I64), "TypeMismatch");
        // result count
        assert_eq!(kind_after(|f| f.blocks[2].insts[1].results.clear()), "ArityMismatch");
        // bad immediate kind
        assert_eq!(kind_after(|f| f.blocks[0].insts[1].imm = Imm::F64(0.0)), "BadImmediate");
        assert_eq!(kind_after(|f| f.blocks[2].insts[1].imm = Imm::Lane(0)), "BadImmediate");
        assert_eq!(kind_after(|f| f.blocks[3].insts[0].imm = Imm::Type(Type::F64)), "BadImmediate");
        assert_eq!(kind_after(|f| f.blocks[3].insts[0].imm = Imm::Type(Type::F64x(6))), "InvalidVectorWidth");
        // lane out of range
        assert_eq!(kind_after(|f| f.blocks[3].insts[1].imm = Imm::Lane(4)), "LaneOutOfRange");
        // load with an f64 index
        assert_eq!(kind_after(|f| f.blocks[2].insts[0].args[1] = f.blocks[1].params[1]), "TypeMismatch");
        // store into a read-only slice
        assert_eq!(kind_after(|f| f.blocks[3].insts[2].args[0] = f.params[0]), "StoreToReadOnlySlice");
    }

    #[test]
    fn call_typing() {
        assert_eq!(kind_after(|f| f.blocks[3].insts[3].args.push(Value(0))), "ArityMismatch");
        assert_eq!(kind_after(|f| f.blocks[3].insts[3].args[0] = f.blocks[3].params[0]), "TypeMismatch");
        assert_eq!(kind_after(|f| f.blocks[3].insts[3].results.clear()), "ArityMismatch");
        assert_eq!(kind_after(|f| f.values[f.blocks[3].insts[3].results[0].index()].ty = Type::I64), "TypeMismatch");
        // a read-only slice cannot go where an mslice is expected
        let mut m = valid_module();
        m.functions[1].values[0].ty = Type::SliceMut;
        let exit = block(&m.functions[0], "exit");
        m.functions[0].block_mut(exit).insts[3].args[0] = m.functions[0].params[0];
        assert_eq!(kinds(&m), vec!["TypeMismatch"]);
    }

    #[test]
    fn select_and_vector_mismatches_have_helpful_messages() {
        let mut m = valid_module();
        let f = &mut m.functions[0];
        let [c, a, b, r] = [Type::Bool, Type::F64, Type::I64, Type::F64].map(|t| f.new_value(t));
        let entry = &mut f.blocks[0].insts;
        entry.push(inst(Opcode::BConst, &[], Imm::Bool(true), &[c]));
        entry.push(inst(Opcode::FConst, &[], Imm::F64(1.0), &[a]));
        entry.push(inst(Opcode::IConst, &[], Imm::I64(1), &[b]));
        entry.push(inst(Opcode::Select, &[c, a, b], Imm::None, &[r]));
        let err = verify_module(&m).unwrap_err();
        assert_eq!(err.kind_name(), "TypeMismatch");
        assert!(err.to_string().contains("select arms have types f64 and i64"), "{err}");
        let mut m = valid_module();
        let f = &mut m.functions[0];
        let [p, q, r] = [Type::F64x(4), Type::F64x(2), Type::F64x(4)].map(|t| f.new_value(t));
        let x = f.params[0];
        let zero = f.blocks[0].insts[1].results[0];
        let entry = &mut f.blocks[0].insts;
        entry.push(inst(Opcode::VLoad, &[x, zero], Imm::Type(Type::F64x(4)), &[p]));
        entry.push(inst(Opcode::VLoad, &[x, zero], Imm::Type(Type::F64x(2)), &[q]));
        entry.push(inst(Opcode::FMul, &[p, q], Imm::None, &[r]));
        let err = verify_module(&m).unwrap_err();
        assert!(err.to_string().contains("operand types f64x4 and f64x2 differ"), "{err}");
        let mut m = valid_module();
        m.functions[0].blocks[2].insts[1].args[1] = m.functions[0].blocks[1].params[0];
        let err = verify_module(&m).unwrap_err();
        assert_eq!(
            err.to_string(),
            "in @sum, block body, inst 1 (fadd): operand types f64 and i64 differ — both operands of fadd must have \
             the same float type (f64 or f64xW)"
        );
        assert_eq!((err.block.as_deref(), err.inst, err.op), (Some("body"), Some(InstRef::Inst(1)), Some("fadd")));
    }

    fn spans_for(m: &Module) -> SourceMap {
        let p = |line, col| Pos { line, col };
        let funcs = m
            .functions
            .iter()
            .enumerate()
            .map(|(fi, f)| FuncSpans {
                func: p(100 * fi as u32 + 1, 1),
                blocks: (0..f.blocks.len()).map(|b| p(100 * fi as u32 + 10 * b as u32 + 2, 1)).collect(),
                insts: f
                    .blocks
                    .iter()
                    .enumerate()
                    .map(|(b, d)| {
                        (0..d.insts.len()).map(|i| p(100 * fi as u32 + 10 * b as u32 + 3 + i as u32, 5)).collect()
                    })
                    .collect(),
                terms: (0..f.blocks.len()).map(|b| Some(p(100 * fi as u32 + 10 * b as u32 + 9, 5))).collect(),
            })
            .collect();
        SourceMap { externs: vec![], tables: vec![], funcs }
    }

    #[test]
    fn positions_come_from_the_source_map() {
        let check = |edit: &dyn Fn(&mut Module), want: Pos, inst: Option<InstRef>| {
            let mut m = valid_module();
            edit(&mut m);
            let spans = spans_for(&m);
            let err = verify_module_with_spans(&m, Some(&spans)).unwrap_err();
            assert_eq!((err.pos, err.inst), (Some(want), inst), "{err}");
            assert!(err.to_string().starts_with(&format!("{want}: in @")), "{err}");
        };
        let p = |line, col| Pos { line, col };
        // instruction
        check(&|m| m.functions[0].blocks[2].insts[1].args[1] = Value(6), p(24, 5), Some(InstRef::Inst(1)));
        // terminator
        check(&|m| m.functions[0].blocks[3].term = ret(&[]), p(39, 5), Some(InstRef::Terminator));
        // block label
        check(&|m| m.functions[0].blocks[3].term = None, p(32, 1), None);
        // function header (second function)
        check(&|m| m.functions[1].blocks.clear(), p(101, 1), None);
        // without spans: no position and no prefix
        let mut m = valid_module();
        m.functions[0].blocks[3].term = None;
        let err = verify_module(&m).unwrap_err();
        assert_eq!(err.pos, None);
        assert_eq!(err.to_string(), "in @sum, block exit: the block has no terminator — end it with jump, br or ret");
    }

    #[test]
    fn verify_all_reports_every_error_in_textual_order() {
        let mut m = valid_module();
        m.functions[0].blocks[3].term = None;
        m.functions[0].blocks[2].insts[1].args[1] = Value(6);
        m.functions[1].returns = vec![Type::I64];
        let errors = verify_all(&m, None);
        let found: Vec<(&str, &str)> = errors.iter().map(|e| (e.func.as_str(), e.kind_name())).collect();
        // The callee's new return type also breaks the call's result type in exit (inst 3), which
        // comes before exit's missing terminator.
        let expected =
            [("sum", "TypeMismatch"), ("sum", "TypeMismatch"), ("sum", "MissingTerminator"), ("first", "TypeMismatch")];
        assert_eq!(found, expected);
        assert_eq!(errors[1].inst, Some(InstRef::Inst(3)));
        assert_eq!(verify_module(&m).unwrap_err(), errors[0]);
    }

    #[test]
    fn kind_names_are_the_variant_names() {
        let kind = VerifyErrorKind::ArityMismatch { what: "x".into(), expected: 1, found: 2 };
        assert_eq!(kind.kind_name(), "ArityMismatch");
        assert_eq!(format!("{kind:?}").split(' ').next(), Some("ArityMismatch"));
        assert_eq!(VerifyErrorKind::EmptyFunction.kind_name(), "EmptyFunction");
    }
}
