//! The function as the user wrote it: its name, parameter names and types, which parameters
//! are differentiated, and its module (kept to check arguments, to report faults at the
//! user's own instructions and to take finite differences). Every handle holds one.
//!
//! **Inputs and outputs.** The *inputs* of a derivative are the differentiated scalars: each
//! differentiated `f64` parameter and each element of each differentiated slice, in parameter
//! order. The *outputs* are the `f64` results, then the final contents of every `mslice`
//! parameter, in parameter order. Jacobians are outputs × inputs.

use crate::error::{Buffer, Error};
use jitdiff_ir::{ExternRegistry, Module, SourceMap, Type};
use jitdiff_jit::Arg;
use smallvec::SmallVec;
use std::sync::Arc;

/// A module as lowered from Rust source before the clean-up passes, and where each of its
/// instructions comes from (see `Builder::rust_source`).
#[derive(Clone, Debug)]
pub(crate) struct AsWritten {
    pub module: Arc<Module>,
    pub spans: Arc<SourceMap>,
}

impl AsWritten {
    pub(crate) fn new(module: &Module, spans: &SourceMap) -> AsWritten {
        AsWritten { module: Arc::new(module.clone()), spans: Arc::new(spans.clone()) }
    }
}

/// Per-parameter sizes, inline for the usual handful of parameters.
pub(crate) type Sizes = SmallVec<[usize; 8]>;

/// The user's function and the differentiated parameters.
#[derive(Clone)]
pub(crate) struct UserFunction {
    /// The user's module, as given.
    pub module: Arc<Module>,
    /// The function's name.
    pub name: String,
    /// Parameter names as the IR prints them.
    pub param_names: Vec<String>,
    /// Parameter types.
    pub params: Vec<Type>,
    /// Result types.
    pub returns: Vec<Type>,
    /// Extern implementations (for the interpreter replay of faults and for finite differences).
    pub externs: ExternRegistry,
    /// Source positions, when given.
    pub spans: Option<Arc<SourceMap>>,
    /// The functions as written in Rust source with their positions, when given: faults are
    /// replayed there to name a source line.
    pub as_written: Option<AsWritten>,
    /// The differentiated parameters.
    pub wrt: Vec<bool>,
    /// [`UserFunction::derivation_wrt`], kept so that calls need not rebuild it.
    derivation: Vec<bool>,
}

impl UserFunction {
    /// `@name` of `module`, with nothing differentiated yet.
    pub fn new(
        module: &Module,
        name: &str,
        externs: ExternRegistry,
        spans: Option<Arc<SourceMap>>,
    ) -> Result<UserFunction, Error> {
        let Some(func) = module.func_by_name(name) else {
            return Err(Error::UnknownFunction {
                name: name.into(),
                available: module.functions.iter().map(|f| f.name.clone()).collect(),
            });
        };
        // A module edited field by field may be malformed: say so here, in the module's terms
        // (with source positions when there are spans), before anything reads its signatures.
        jitdiff_ir::verify_module_with_spans(module, spans.as_deref()).map_err(|e| Error::Verify(Box::new(e)))?;
        Ok(UserFunction {
            name: name.into(),
            param_names: func.params.iter().map(|&p| func.value_label(p)).collect(),
            params: func.param_types(),
            returns: func.returns.clone(),
            wrt: vec![false; func.params.len()],
            derivation: vec![false; func.params.len()],
            module: Arc::new(module.clone()),
            externs,
            spans,
            as_written: None,
        })
    }

    /// `x: slice, n: i64`.
    pub fn signature(&self) -> String {
        let parts: Vec<String> = self.param_names.iter().zip(&self.params).map(|(n, t)| format!("{n}: {t}")).collect();
        if parts.is_empty() { "no parameters".into() } else { parts.join(", ") }
    }

    /// The mask the derivation uses: the differentiated parameters and every `mslice` (whose
    /// final contents are outputs, so they carry derivatives whether or not their initial
    /// contents are inputs).
    pub fn derivation_wrt(&self) -> &[bool] {
        &self.derivation
    }

    /// Differentiate the parameters flagged in `wrt` (one flag per parameter).
    pub fn set_wrt(&mut self, wrt: Vec<bool>) {
        self.derivation = wrt.iter().zip(&self.params).map(|(&on, &t)| on || t == Type::SliceMut).collect();
        self.wrt = wrt;
    }

    /// Positions of the `mslice` parameters.
    pub fn mslices(&self) -> impl Iterator<Item = usize> + '_ {
        self.params.iter().enumerate().filter(|(_, t)| **t == Type::SliceMut).map(|(i, _)| i)
    }

    /// Number of `f64` results.
    pub fn float_results(&self) -> usize {
        self.returns.iter().filter(|t| **t == Type::F64).count()
    }

    /// An error unless the function has an `f64` result.
    pub fn require_float_result(&self, what: &'static str) -> Result<(), Error> {
        if self.float_results() == 0 {
            return Err(Error::NoFloatResult { function: self.name.clone(), what });
        }
        Ok(())
    }

    /// Check `args` against the signature: count and kinds, naming the user's parameters.
    pub fn check_args(&self, args: &[Arg<'_>]) -> Result<(), Error> {
        if args.len() != self.params.len() {
            return Err(Error::ArgumentCount {
                function: self.name.clone(),
                signature: self.signature(),
                expected: self.params.len(),
                got: args.len(),
            });
        }
        for (index, (a, &ty)) in args.iter().zip(&self.params).enumerate() {
            if !a.fits(ty) {
                return Err(Error::ArgumentType {
                    function: self.name.clone(),
                    index,
                    param: self.param_names[index].clone(),
                    expected: ty,
                    got: a.kind_name(),
                });
            }
        }
        Ok(())
    }

    /// Scalars per parameter: 1 for an `f64`, the length for a slice (0 for other kinds).
    pub fn scalar_sizes(&self, args: &[Arg<'_>]) -> Sizes {
        args.iter()
            .map(|a| match a {
                Arg::F64(_) => 1,
                Arg::Slice(v) => v.len(),
                Arg::SliceMut(v) => v.len(),
                _ => 0,
            })
            .collect()
    }

    /// Inputs per parameter (0 for a parameter that is not differentiated).
    pub fn input_sizes(&self, args: &[Arg<'_>]) -> Sizes {
        self.scalar_sizes(args).iter().zip(&self.wrt).map(|(&n, &on)| if on { n } else { 0 }).collect()
    }

    /// The number of inputs (differentiated scalars).
    pub fn inputs(&self, args: &[Arg<'_>]) -> usize {
        self.input_sizes(args).iter().sum()
    }

    /// The number of outputs: `f64` results and the elements of every `mslice` (one missing
    /// from a short argument list counts as empty; the calls themselves report the mismatch).
    pub fn outputs(&self, args: &[Arg<'_>]) -> usize {
        let sizes = self.scalar_sizes(args);
        self.float_results() + self.mslices().map(|p| sizes.get(p).copied().unwrap_or(0)).sum::<usize>()
    }

    /// `rows × cols` zeros for a dense `what` (`"Jacobian"`, `"Hessian"`), or
    /// [`Error::TooLarge`] when that cannot be allocated (instead of aborting the process).
    pub fn dense_zeros(&self, what: &'static str, rows: usize, cols: usize) -> Result<Vec<f64>, Error> {
        let mut data = Vec::new();
        let too_large = || Error::TooLarge { function: self.name.clone(), what, rows, cols };
        let len = rows.checked_mul(cols).ok_or_else(too_large)?;
        data.try_reserve_exact(len).map_err(|_| too_large())?;
        data.resize(len, 0.0);
        Ok(data)
    }

    /// A length error for `buffer`.
    pub fn length_error(&self, buffer: Buffer, expected: usize, got: usize, reason: impl Into<String>) -> Error {
        Error::BufferLength { function: self.name.clone(), buffer, expected, got, reason: reason.into() }
    }

    /// How the number of inputs comes about, for messages.
    pub fn inputs_reason(&self) -> String {
        let parts: Vec<String> = (0..self.params.len())
            .filter(|&p| self.wrt[p])
            .map(|p| match self.params[p] {
                Type::F64 => format!("1 for `{}`", self.param_names[p]),
                _ => format!("len({})", self.param_names[p]),
            })
            .collect();
        format!("one per differentiated scalar: {}", parts.join(" + "))
    }

    /// How the number of outputs comes about, for messages.
    pub fn outputs_reason(&self) -> String {
        let mut parts = vec![format!("{} f64 result(s)", self.float_results())];
        parts.extend(self.mslices().map(|p| format!("len({})", self.param_names[p])));
        format!("one per output: {}", parts.join(" + "))
    }

    /// Names of the inputs: `x[3]` for element 3 of slice `x`, `y` for an `f64` parameter.
    pub fn input_labels(&self, args: &[Arg<'_>]) -> Vec<String> {
        let mut labels = vec![];
        for (p, &n) in self.input_sizes(args).iter().enumerate().filter(|(p, _)| self.wrt[*p]) {
            let name = &self.param_names[p];
            match self.params[p] {
                Type::F64 => labels.push(name.clone()),
                _ => labels.extend((0..n).map(|e| format!("{name}[{e}]"))),
            }
        }
        labels
    }

    /// Names of the outputs: `result 0`, `result 1`, then `out[3]` for element 3 of `mslice`
    /// `out`.
    pub fn output_labels(&self, args: &[Arg<'_>]) -> Vec<String> {
        let sizes = self.scalar_sizes(args);
        let mut labels: Vec<String> = (0..self.float_results()).map(|k| format!("result {k}")).collect();
        for p in self.mslices() {
            let size = sizes.get(p).copied().unwrap_or(0);
            labels.extend((0..size).map(|e| format!("{}[{e}]", self.param_names[p])));
        }
        labels
    }

    /// The inputs' current values, in the flat order.
    pub fn input_values(&self, args: &[Arg<'_>]) -> Vec<f64> {
        let mut out = vec![];
        for (_, a) in args.iter().enumerate().filter(|(p, _)| self.wrt.get(*p) == Some(&true)) {
            match a {
                Arg::F64(x) => out.push(*x),
                other => out.extend_from_slice(other.as_slice().unwrap_or(&[])),
            }
        }
        out
    }
}
