//! The Rust builder: write IR functions as ordinary Rust, without wiring block parameters by hand.
//!
//! A [`ModuleBuilder`] declares externs and functions; each function body is a closure that gets a
//! [`FunctionBuilder`]. Values are [`Var`] handles: `Copy`, typed, and usable with Rust operators
//! (`+ - * / %`, unary `-`, `!`, `&`, `|`), with `f64` and integer literals on either side, and
//! with methods for every math primitive (`x.sin()`, `x.powi(2)`, `a.lt(b)` ...). Structured
//! control flow ([`FunctionBuilder::for_range`], [`FunctionBuilder::if_else`]) creates the blocks
//! and their parameters: loop-carried values and branch results are plain Rust values.
//!
//! Misuse (mixing `f64` and `i64`, a wrong argument count, code after `ret` ...) never panics:
//! the first error is recorded, building goes on with placeholder values, and
//! [`ModuleBuilder::finish`] (or [`ModuleBuilder::define`]) returns it as a [`BuildError`].
//!
//! Extended Rosenbrock, `sum_{i<n-1} 100 (x[i+1]-x[i]^2)^2 + (1-x[i])^2`:
//!
//! ```
//! use jitdiff_ir::{Type, builder::ModuleBuilder};
//!
//! let mut mb = ModuleBuilder::new();
//! mb.function("rosenbrock", &[("x", Type::Slice)], &[Type::F64], |f| {
//!     let x = f.param(0);
//!     let n = f.len(x);
//!     let [sum] = f.for_range(0, n - 1, [f.float(0.0)], |f, i, [acc]| {
//!         let (xi, xn) = (f.load(x, i), f.load(x, i + 1));
//!         [acc + 100.0 * (xn - xi * xi).powi(2) + (1.0 - xi).powi(2)]
//!     });
//!     f.ret(&[sum.named("sum")]);
//! })?;
//! let module = mb.finish()?;
//!
//! let rosenbrock = module.func_by_name("rosenbrock").unwrap();
//! assert_eq!(rosenbrock.param_types(), vec![Type::Slice]);
//! assert_eq!(rosenbrock.returns, vec![Type::F64]);
//! # Ok::<(), jitdiff_ir::builder::BuildError>(())
//! ```

mod control;
mod function;
mod ops;
mod var;

pub use function::{FunctionBuilder, IntoCallee};
pub use var::{Operand, Var, VarList};

use crate::function::{ExternDecl, ExternId, FuncId, Function, Module, Table, TableId};
use crate::types::Type;
use function::{CalleeSig, Signatures};

/// Why a module could not be built. Each message names the function (and block) and says what to
/// change.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum BuildError {
    /// Two functions, externs or tables share a name (they share the `@` namespace).
    #[error("@{name} is declared twice; functions, externs and tables need unique names")]
    DuplicateName {
        /// The clashing name.
        name: String,
    },
    /// A function, extern or table name is not of the form `[A-Za-z_][A-Za-z0-9_]*`.
    #[error(
        "`{name}` is not a valid function, extern or table name: use letters, digits and '_', not starting with a digit"
    )]
    InvalidName {
        /// The offending name.
        name: String,
    },
    /// A signature uses a type where it is not allowed (e.g. a slice result).
    #[error("@{name}: {message}")]
    BadSignature {
        /// The function or extern.
        name: String,
        /// What is wrong.
        message: String,
    },
    /// `declare_function` without a matching `define`.
    #[error("function @{name} was declared but never defined; call define() with its body")]
    NotDefined {
        /// The function.
        name: String,
    },
    /// `define` called twice for one function.
    #[error("function @{name} is defined twice; define each declared function once")]
    AlreadyDefined {
        /// The function.
        name: String,
    },
    /// A `FuncId` or `ExternId` that this builder did not hand out.
    #[error("{what} id {index} does not belong to this module builder")]
    UnknownId {
        /// `"function"` or `"extern"`.
        what: &'static str,
        /// The index.
        index: u32,
    },
    /// Operand types that do not fit an instruction, a call, a loop or a branch.
    #[error("in @{func}, block {block}: {message}")]
    TypeMismatch {
        /// The function being built.
        func: String,
        /// The label of the block being built.
        block: String,
        /// What was expected and what was given.
        message: String,
    },
    /// An instruction after the current block was closed by `ret`.
    #[error("in @{func}: `{what}` comes after `ret` closed the block; nothing may follow a return in the same branch")]
    AfterReturn {
        /// The function being built.
        func: String,
        /// The instruction or construct.
        what: String,
    },
    /// The body closure finished without returning.
    #[error("in @{func}: block {block} does not end in a return; call f.ret(&[...]) with {expected} value(s)")]
    MissingReturn {
        /// The function being built.
        func: String,
        /// The open block.
        block: String,
        /// How many results the function declares.
        expected: usize,
    },
    /// A [`Var`] of one function used while building another.
    #[error(
        "in @{func}: a value of a different function builder was used; values belong to the function that made them"
    )]
    ForeignValue {
        /// The function being built.
        func: String,
    },
}

/// Builds a [`Module`]: declares externs and functions, defines function bodies, and checks that
/// everything declared is defined.
///
/// ```
/// use jitdiff_ir::{Type, builder::ModuleBuilder};
/// let mut mb = ModuleBuilder::new();
/// let scale = mb.declare_extern("scale", &[Type::F64], &[Type::F64]);
/// mb.function("twice_scaled", &[("x", Type::F64)], &[Type::F64], |f| {
///     let y = f.call(scale, &[f.param(0)]);
///     f.ret(&[2.0 * y[0]]);
/// })?;
/// let module = mb.finish()?;
/// assert_eq!(module.externs.len(), 1);
/// # Ok::<(), jitdiff_ir::builder::BuildError>(())
/// ```
#[derive(Debug, Default)]
pub struct ModuleBuilder {
    module: Module,
    defined: Vec<bool>,
    error: Option<BuildError>,
}

impl ModuleBuilder {
    /// An empty module builder.
    pub fn new() -> ModuleBuilder {
        ModuleBuilder::default()
    }

    /// Declare an extern: a native function registered by name when the module is run.
    /// Problems (duplicate or invalid name, slice result) are returned by [`finish`](Self::finish).
    pub fn declare_extern(&mut self, name: &str, params: &[Type], returns: &[Type]) -> ExternId {
        self.check_new_name(name);
        self.check_returns(name, returns);
        self.module.externs.push(ExternDecl {
            name: name.to_string(),
            params: params.to_vec(),
            returns: returns.to_vec(),
            derivative: None,
        });
        ExternId(self.module.externs.len() as u32 - 1)
    }

    /// Declare a read-only data table: `f64` constants that function bodies read as a `slice`
    /// with [`FunctionBuilder::table`]. Problems (duplicate or invalid name) are returned by
    /// [`finish`](Self::finish).
    pub fn table(&mut self, name: &str, data: &[f64]) -> TableId {
        self.check_new_name(name);
        self.module.push_table(Table::new(name, data.to_vec()))
    }

    /// Declare a function so that it can be called (also by itself or by functions defined
    /// before it); give its body later with [`define`](Self::define). A parameter name `""`
    /// leaves the parameter unnamed. Problems are returned by [`finish`](Self::finish).
    pub fn declare_function(&mut self, name: &str, params: &[(&str, Type)], returns: &[Type]) -> FuncId {
        self.check_new_name(name);
        self.check_returns(name, returns);
        let mut func = Function::new(name, returns.to_vec());
        for &(pname, ty) in params {
            func.add_param(ty, (!pname.is_empty()).then_some(pname));
        }
        self.module.functions.push(func);
        self.defined.push(false);
        FuncId(self.module.functions.len() as u32 - 1)
    }

    /// Give the body of a declared function. The closure gets a [`FunctionBuilder`] positioned
    /// in the entry block; it must end every path with [`FunctionBuilder::ret`] (a function
    /// without results gets an implicit `ret` at the end). The first problem inside the body is
    /// returned here and again by [`finish`](Self::finish).
    pub fn define(&mut self, id: FuncId, body: impl FnOnce(&FunctionBuilder)) -> Result<(), BuildError> {
        let result = self.define_inner(id, body);
        if let Err(e) = &result {
            self.record(e.clone());
        }
        result
    }

    fn define_inner(&mut self, id: FuncId, body: impl FnOnce(&FunctionBuilder)) -> Result<(), BuildError> {
        let Some(&done) = self.defined.get(id.index()) else {
            return Err(BuildError::UnknownId { what: "function", index: id.0 });
        };
        let name = self.module.functions[id.index()].name.clone();
        if done {
            return Err(BuildError::AlreadyDefined { name });
        }
        let signatures = self.signatures();
        let mut func = std::mem::replace(&mut self.module.functions[id.index()], Function::new("", vec![]));
        func.blocks.clear();
        let fb = FunctionBuilder::new(func, signatures);
        body(&fb);
        let (func, error) = fb.finish();
        self.defined[id.index()] = true;
        self.module.functions[id.index()] = func;
        error.map_or(Ok(()), Err)
    }

    /// Declare and define a function in one step; returns its id for later calls.
    ///
    /// ```
    /// use jitdiff_ir::{Type, builder::ModuleBuilder};
    /// let mut mb = ModuleBuilder::new();
    /// mb.function("sq", &[("x", Type::F64)], &[Type::F64], |f| {
    ///     let x = f.param(0);
    ///     f.ret(&[x * x]);
    /// })?;
    /// # Ok::<(), jitdiff_ir::builder::BuildError>(())
    /// ```
    pub fn function(
        &mut self,
        name: &str,
        params: &[(&str, Type)],
        returns: &[Type],
        body: impl FnOnce(&FunctionBuilder),
    ) -> Result<FuncId, BuildError> {
        let before = self.error.is_some();
        let id = self.declare_function(name, params, returns);
        if !before && let Some(e) = &self.error {
            return Err(e.clone());
        }
        self.define(id, body).map(|()| id)
    }

    /// The module built so far (function bodies not yet defined are empty).
    pub fn module(&self) -> &Module {
        &self.module
    }

    /// Finish: the first recorded problem, or a function declared but never defined, is an
    /// error; otherwise the canonicalized module.
    pub fn finish(mut self) -> Result<Module, BuildError> {
        if let Some(e) = self.error {
            return Err(e);
        }
        if let Some(i) = self.defined.iter().position(|d| !d) {
            return Err(BuildError::NotDefined { name: self.module.functions[i].name.clone() });
        }
        self.module.canonicalize();
        Ok(self.module)
    }

    fn record(&mut self, e: BuildError) {
        self.error.get_or_insert(e);
    }

    fn check_new_name(&mut self, name: &str) {
        let valid = name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            self.record(BuildError::InvalidName { name: name.to_string() });
        } else if self.module.name_taken(name) {
            self.record(BuildError::DuplicateName { name: name.to_string() });
        }
    }

    fn check_returns(&mut self, name: &str, returns: &[Type]) {
        if let Some(t) = returns.iter().find(|t| t.is_slice()) {
            self.record(BuildError::BadSignature {
                name: name.to_string(),
                message: format!("a result may not be a {t}: slices exist only as parameters"),
            });
        }
    }

    fn signatures(&self) -> Signatures {
        let funcs = self
            .module
            .functions
            .iter()
            .map(|f| CalleeSig { name: f.name.clone(), params: f.param_types(), returns: f.returns.clone() })
            .collect();
        let externs = self
            .module
            .externs
            .iter()
            .map(|e| CalleeSig { name: e.name.clone(), params: e.params.clone(), returns: e.returns.clone() })
            .collect();
        Signatures { funcs, externs, tables: self.module.tables.len() }
    }
}
