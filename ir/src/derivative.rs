//! Derivatives declared inside a module, so that a function can call the derivative of another
//! (nested AD): an extern whose implementation jitdiff derives from a function of the same
//! module, instead of one the user registers.
//!
//! ```text
//! extern @f_grad(f64, f64, f64) -> f64, f64 = grad reverse @f wrt 1, 2
//! ```
//!
//! declares `@f_grad(a, x, y) = (∂f/∂x, ∂f/∂y)` at `(a, x, y)`, by reverse mode. The declaration
//! stays an extern until `jitdiff_ad::expand_derivatives` replaces it by a derived function;
//! until then the IR passes treat its calls as calls of any extern (opaque), which is what keeps
//! them from inlining or pruning through it.

use crate::function::{Callee, ExternId, FuncId, Function, Imm, Module};
use crate::types::Type;
use rustc_hash::FxHashMap as HashMap;

/// Which mode computes a declared derivative.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DiffMode {
    /// Forward mode: one tangent sweep per differentiated parameter.
    Forward,
    /// Reverse mode: one forward run and one pullback.
    Reverse,
}

impl DiffMode {
    /// The spelling in IR text (`forward`, `reverse`).
    pub fn spelling(self) -> &'static str {
        match self {
            DiffMode::Forward => "forward",
            DiffMode::Reverse => "reverse",
        }
    }
    /// The mode of a spelling.
    ///
    /// ```
    /// use jitdiff_ir::DiffMode;
    /// assert_eq!(DiffMode::from_spelling("reverse"), Some(DiffMode::Reverse));
    /// ```
    pub fn from_spelling(text: &str) -> Option<DiffMode> {
        match text {
            "forward" => Some(DiffMode::Forward),
            "reverse" => Some(DiffMode::Reverse),
            _ => None,
        }
    }
}

/// The derivative an extern stands for: the gradient of `@of`'s `f64` result with respect to
/// some of its `f64` parameters. The extern takes every parameter of `@of` and returns one
/// partial per differentiated parameter, in parameter order.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DerivativeOf {
    /// The differentiated function (without the `@`).
    pub of: String,
    /// The mode that computes it.
    pub mode: DiffMode,
    /// The differentiated parameters of `@of`, by position, increasing.
    pub wrt: Vec<usize>,
}

impl DerivativeOf {
    /// The extern signature this derivative has, given the differentiated function: `@of`'s
    /// parameters, one `f64` per differentiated parameter. `Err` says what makes `@of` or `wrt`
    /// unfit (for the verifier and the front end).
    pub fn signature(&self, of: &Function) -> Result<(Vec<Type>, Vec<Type>), String> {
        let params = of.param_types();
        if of.returns != [Type::F64] {
            return Err(format!(
                "@{} returns {}; a gradient needs a function of one f64 result",
                of.name,
                if of.returns.is_empty() {
                    "nothing".to_string()
                } else {
                    of.returns.iter().map(|t| t.spelling()).collect::<Vec<_>>().join(", ")
                }
            ));
        }
        if self.wrt.is_empty() {
            return Err("no parameter is differentiated: name at least one after `wrt`".into());
        }
        for (k, &p) in self.wrt.iter().enumerate() {
            if p >= params.len() {
                return Err(format!("@{} has {} parameter(s); there is no parameter {p}", of.name, params.len()));
            }
            if k > 0 && self.wrt[k - 1] >= p {
                return Err("the differentiated parameters must be listed once each, in increasing order".into());
            }
            if params[p] != Type::F64 {
                return Err(format!(
                    "parameter {p} of @{} has type {}; nested gradients differentiate f64 parameters",
                    of.name, params[p]
                ));
            }
        }
        Ok((params, vec![Type::F64; self.wrt.len()]))
    }

    /// `grad reverse @f wrt 1, 2`.
    pub fn spelling(&self) -> String {
        let wrt: Vec<String> = self.wrt.iter().map(|p| p.to_string()).collect();
        format!("grad {} @{} wrt {}", self.mode.spelling(), self.of, wrt.join(", "))
    }
}

impl Module {
    /// Whether any extern of the module is a derivative declaration (see [`DerivativeOf`]).
    pub fn has_derivative_declarations(&self) -> bool {
        self.externs.iter().any(|e| e.derivative.is_some())
    }

    /// The derivative declarations whose function reaches no other declaration (directly or
    /// through the functions it calls): the ones to expand next, innermost first, in extern
    /// order. Empty when there is no declaration, or when every one depends on another (a
    /// cycle).
    ///
    /// ```
    /// let m = jitdiff_ir::parse_module(
    ///     "extern @sq_grad(f64) -> f64 = grad reverse @sq wrt 0\n\
    ///      extern @slope_grad(f64) -> f64 = grad forward @slope wrt 0\n\
    ///      func @sq(x: f64) -> f64 {\nentry:\n    y = fmul x, x\n    ret y\n}\n\
    ///      func @slope(x: f64) -> f64 {\nentry:\n    d = call @sq_grad(x)\n    ret d\n}\n",
    /// )
    /// .unwrap();
    /// assert_eq!(m.ready_derivative_declarations(), vec![m.extern_id("sq_grad").unwrap()]);
    /// ```
    pub fn ready_derivative_declarations(&self) -> Vec<ExternId> {
        let reached = self.declarations_reached_by_declarations();
        (0..self.externs.len())
            .map(|e| ExternId(e as u32))
            .filter(|&e| self.externs[e.index()].derivative.as_ref().is_some_and(|d| reached[&d.of].is_empty()))
            .collect()
    }

    /// For each derivative declaration's function (by name), the declarations it reaches
    /// (directly or through the functions it calls): what an outer derivative will
    /// differentiate. An unknown name reaches nothing.
    pub fn declarations_reached_by_declarations(&self) -> HashMap<String, Vec<ExternId>> {
        let mut by_function = HashMap::default();
        for decl in self.externs.iter().filter_map(|e| e.derivative.as_ref()) {
            if !by_function.contains_key(&decl.of) {
                by_function.insert(decl.of.clone(), self.declarations_reached(&decl.of));
            }
        }
        by_function
    }

    /// The declarations `@of` reaches.
    fn declarations_reached(&self, of: &str) -> Vec<ExternId> {
        let mut reached = vec![];
        let Some(start) = self.func_id(of) else { return reached };
        let mut seen = vec![false; self.functions.len()];
        let mut stack = vec![start];
        while let Some(f) = stack.pop() {
            if std::mem::replace(&mut seen[f.index()], true) {
                continue;
            }
            for inst in self.func(f).blocks.iter().flat_map(|b| &b.insts) {
                match inst.imm {
                    Imm::Callee(Callee::Func(g)) => stack.push(g),
                    Imm::Callee(Callee::Extern(e))
                        if self.externs[e.index()].derivative.is_some() && !reached.contains(&e) =>
                    {
                        reached.push(e)
                    }
                    _ => {}
                }
            }
        }
        reached
    }

    /// Calls of the extern `id` call `by` instead, and the extern is removed (the later ones
    /// renumbered): how a derivative declaration becomes the function derived for it.
    pub fn replace_extern(&mut self, id: ExternId, by: FuncId) {
        self.externs.remove(id.index());
        for inst in self.functions.iter_mut().flat_map(|f| f.blocks.iter_mut().flat_map(|b| b.insts.iter_mut())) {
            if let Imm::Callee(Callee::Extern(e)) = &mut inst.imm {
                if *e == id {
                    inst.imm = Imm::Callee(Callee::Func(by));
                } else if e.0 > id.0 {
                    *e = ExternId(e.0 - 1);
                }
            }
        }
    }
}
