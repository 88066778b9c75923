//! One builder for every handle: name the function and the parameters to differentiate, add
//! rules, externs and options, then `build()`.
//!
//! ```
//! use jitdiff::{GradientFn, ir::parse_module};
//! let m = parse_module("func @f(x: f64, y: f64, n: i64) -> f64 {\nentry:\n    p = fmul x, y\n    ret p\n}").unwrap();
//! let by_name = GradientFn::builder(&m, "f").wrt(["x", "y"]).build().unwrap();
//! let by_index = GradientFn::builder(&m, "f").wrt([0, 1]).build().unwrap();
//! let all = GradientFn::builder(&m, "f").wrt_all().build().unwrap();
//! assert_eq!(by_name.wrt(), by_index.wrt());
//! assert_eq!(by_name.wrt(), all.wrt());
//! // Nothing to differentiate is an error that says what to do.
//! let err = GradientFn::builder(&m, "f").build().unwrap_err().to_string();
//! assert!(err.contains("name the parameters with .wrt"), "{err}");
//! ```

use crate::error::Error;
use crate::fd::FdOptions;
use crate::gradient::GradientMode;
use crate::user::{AsWritten, UserFunction};
use jitdiff_ad::Checkpoint;
use jitdiff_ir::{ExternRegistry, Module, SourceMap, Type};
use jitdiff_jit::JitOptions;
use jitdiff_rules::RuleSet;
use std::marker::PhantomData;
use std::sync::Arc;

/// A parameter, by name or by position.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParamRef {
    /// By name, as the IR (or the Rust source) spells it.
    Name(String),
    /// By 0-based position.
    Index(i64),
}

impl From<&str> for ParamRef {
    fn from(name: &str) -> ParamRef {
        ParamRef::Name(name.into())
    }
}
impl From<String> for ParamRef {
    fn from(name: String) -> ParamRef {
        ParamRef::Name(name)
    }
}
impl From<&String> for ParamRef {
    fn from(name: &String) -> ParamRef {
        ParamRef::Name(name.clone())
    }
}
impl From<usize> for ParamRef {
    fn from(index: usize) -> ParamRef {
        ParamRef::Index(index as i64)
    }
}
/// Integer literals are `i32` by default: `.wrt([0, 2])` works.
impl From<i32> for ParamRef {
    fn from(index: i32) -> ParamRef {
        ParamRef::Index(i64::from(index))
    }
}

enum Wrt {
    Unset,
    Params(Vec<ParamRef>),
    Mask(Vec<bool>),
    All,
}

/// Builds a handle of kind `K` ([`GradientFn`](crate::GradientFn), [`ForwardFn`](crate::ForwardFn),
/// [`HvpFn`](crate::HvpFn), [`JacobianFn`](crate::JacobianFn),
/// [`SparseJacobianFn`](crate::SparseJacobianFn), [`SparseHessianFn`](crate::SparseHessianFn),
/// [`FiniteDiff`](crate::fd::FiniteDiff)). Get one from `K::builder(&module, "name")`.
#[must_use = "a builder does nothing until .build()"]
pub struct Builder<'m, K> {
    module: &'m Module,
    function: String,
    wrt: Wrt,
    rules: RuleSet,
    externs: ExternRegistry,
    options: JitOptions,
    spans: Option<Arc<SourceMap>>,
    as_written: Option<AsWritten>,
    width: Option<u8>,
    fd: FdOptions,
    gradient_mode: GradientMode,
    checkpoint: Checkpoint,
    kind: PhantomData<fn() -> K>,
}

/// What a handle is built from: the resolved user function and the settings.
pub(crate) struct Spec {
    pub user: UserFunction,
    pub rules: RuleSet,
    pub options: JitOptions,
    pub width: Option<u8>,
    pub fd: FdOptions,
    pub gradient_mode: GradientMode,
    /// How reverse mode bounds the tape of loops (`GradientFn` only).
    pub checkpoint: Checkpoint,
}

impl Spec {
    /// The spec of a handle a handle builds for itself (forward lanes, a sweep of another
    /// width): the same function, rules and options, `width` lanes, no checkpointing.
    pub(crate) fn inner(user: &UserFunction, rules: &RuleSet, options: &JitOptions, width: u8) -> Spec {
        Spec {
            user: user.clone(),
            rules: rules.clone(),
            options: options.clone(),
            width: Some(width),
            fd: FdOptions::central(),
            gradient_mode: GradientMode::Auto,
            checkpoint: Checkpoint::Off,
        }
    }
}

/// Handles that a [`Builder`] builds.
pub trait Build: Sized + sealed::Sealed {
    /// Whether the handle differentiates something, so that `.wrt` must name a parameter.
    #[doc(hidden)]
    const NEEDS_WRT: bool = true;

    #[doc(hidden)]
    #[allow(private_interfaces)]
    fn build_from(spec: Spec) -> Result<Self, Error>;
}

pub(crate) mod sealed {
    pub trait Sealed {}
}

impl<'m, K: Build> Builder<'m, K> {
    pub(crate) fn new(module: &'m Module, function: &str) -> Builder<'m, K> {
        Builder {
            module,
            function: function.into(),
            wrt: Wrt::Unset,
            rules: RuleSet::new(),
            externs: ExternRegistry::new(),
            options: JitOptions::new(),
            spans: None,
            as_written: None,
            width: None,
            fd: FdOptions::central(),
            gradient_mode: GradientMode::Auto,
            checkpoint: Checkpoint::Off,
            kind: PhantomData,
        }
    }

    /// The parameters to differentiate, by name (`["theta", "x"]`) or position (`[0, 2]`):
    /// `f64`, `slice` or `mslice` parameters.
    pub fn wrt<P: Into<ParamRef>>(mut self, params: impl IntoIterator<Item = P>) -> Self {
        self.wrt = Wrt::Params(params.into_iter().map(Into::into).collect());
        self
    }

    /// The parameters to differentiate as one flag per parameter.
    pub fn wrt_mask(mut self, mask: &[bool]) -> Self {
        self.wrt = Wrt::Mask(mask.to_vec());
        self
    }

    /// Differentiate every `f64`, `slice` and `mslice` parameter.
    pub fn wrt_all(mut self) -> Self {
        self.wrt = Wrt::All;
        self
    }

    /// Custom rules (see [`RuleSet`]).
    pub fn rules(mut self, rules: &RuleSet) -> Self {
        self.rules = rules.clone();
        self
    }

    /// Implementations of the module's externs.
    pub fn externs(mut self, externs: &ExternRegistry) -> Self {
        self.externs = externs.clone();
        self
    }

    /// JIT options (bounds checks, optimisation level, tape limit ...).
    pub fn options(mut self, options: &JitOptions) -> Self {
        self.options = options.clone();
        self
    }

    /// Source positions of the module (from
    /// [`parse_module_with_spans`](crate::ir::parse_module_with_spans) or the Rust front end):
    /// run-time faults then name the line and column of the faulting instruction.
    pub fn source_map(mut self, spans: &SourceMap) -> Self {
        self.spans = Some(Arc::new(spans.clone()));
        self
    }

    /// Name run-time faults by their line and column in the Rust source the module was lowered
    /// from: `lowered` is what [`front::lower_source_as_written`](crate::front::lower_source_as_written)
    /// returned, and the module given to `builder` its `module`. A fault is replayed on the
    /// functions as written, whose instructions know their source position.
    ///
    /// ```
    /// use jitdiff::{PrimalFn, args, front::lower_source_as_written};
    /// let lowered = lower_source_as_written("fn f(x: &[f64]) -> f64 {\n    x[0] + x[3]\n}").unwrap();
    /// let f = PrimalFn::builder(&lowered.module, "f").rust_source(&lowered).build().unwrap();
    /// let err = f.call(&mut args![&[1.0, 2.0][..]]).unwrap_err();
    /// assert!(err.to_string().contains("line 2, column 12"), "{err}");
    /// ```
    pub fn rust_source(mut self, lowered: &crate::front::SourceModule) -> Self {
        self.as_written = lowered.as_written.as_ref().map(|(m, s)| AsWritten::new(m, s));
        self
    }

    /// Derive, compile and return the handle.
    pub fn build(self) -> Result<K, Error> {
        let (width, fd, gradient_mode, checkpoint) = (self.width, self.fd, self.gradient_mode, self.checkpoint);
        let (rules, options) = (self.rules.clone(), self.options.clone());
        let mut user = self.resolve()?;
        let mut rules = rules;
        if user.module.has_derivative_declarations() {
            // Nested AD: the derivatives the module declares become derived functions first
            // (and the rules some of them need to be differentiated again, which a handle that
            // differentiates nothing does not).
            if K::NEEDS_WRT {
                let (module, expanded_rules) = crate::ad::expand_derivatives_with_rules(&user.module, &rules)?;
                user.module = Arc::new(module);
                rules = expanded_rules;
            } else {
                user.module = Arc::new(crate::ad::expand_derivatives(&user.module, &rules)?);
            }
        }
        K::build_from(Spec { user, rules, options, width, fd, gradient_mode, checkpoint })
    }

    fn resolve(self) -> Result<UserFunction, Error> {
        let mut user = UserFunction::new(self.module, &self.function, self.externs, self.spans)?;
        user.as_written = self.as_written;
        let count = user.params.len();
        let mut wrt = vec![false; count];
        match self.wrt {
            Wrt::Unset => {}
            Wrt::All => {
                for (on, t) in wrt.iter_mut().zip(&user.params) {
                    *on = *t == Type::F64 || t.is_slice();
                }
            }
            Wrt::Mask(mask) => {
                if mask.len() != count {
                    return Err(Error::Setting(format!(
                        "the wrt mask for @{} has {} flag(s), but the function has {count} parameter(s) ({})",
                        user.name,
                        mask.len(),
                        user.signature()
                    )));
                }
                wrt = mask;
            }
            Wrt::Params(params) => {
                for p in params {
                    let index = match p {
                        ParamRef::Name(name) => user.param_names.iter().position(|n| *n == name).ok_or_else(|| {
                            Error::UnknownParameter { function: user.name.clone(), name, signature: user.signature() }
                        })?,
                        ParamRef::Index(i) => {
                            usize::try_from(i).ok().filter(|&i| i < count).ok_or_else(|| Error::ParameterIndex {
                                function: user.name.clone(),
                                index: i,
                                count,
                                signature: user.signature(),
                            })?
                        }
                    };
                    wrt[index] = true;
                }
            }
        }
        for (p, (&on, &ty)) in wrt.iter().zip(&user.params).enumerate() {
            if on && !(ty == Type::F64 || ty.is_slice()) {
                return Err(Error::NotDifferentiable {
                    function: user.name.clone(),
                    param: user.param_names[p].clone(),
                    ty,
                });
            }
        }
        if K::NEEDS_WRT && !wrt.iter().any(|&on| on) {
            let candidates = (0..count)
                .filter(|&p| user.params[p] == Type::F64 || user.params[p].is_slice())
                .map(|p| format!("`{}`", user.param_names[p]))
                .collect();
            return Err(Error::NoWrt { function: user.name.clone(), candidates });
        }
        user.set_wrt(wrt);
        Ok(user)
    }
}

/// Handles with a tangent width: forward mode, Hessian-vector products, Jacobians.
pub trait HasWidth: Build {}

impl<K: HasWidth> Builder<'_, K> {
    /// Tangent lanes per sweep, 1, 2, 4, 8 or 16 (directions per sweep for an HVP, columns or
    /// rows per sweep for a Jacobian, colours per sweep for a sparse one). Default: 1 for
    /// [`ForwardFn`](crate::ForwardFn) and [`HvpFn`](crate::HvpFn), 8 for
    /// [`JacobianFn`](crate::JacobianFn) and the sparse handles.
    pub fn width(mut self, width: u8) -> Self {
        self.width = Some(width);
        self
    }
}

impl Builder<'_, crate::GradientFn> {
    /// How [`GradientFn::value_and_grad`](crate::GradientFn::value_and_grad) computes the
    /// gradient: reverse mode, forward tangent lanes, or whichever suits the number of inputs
    /// ([`GradientMode::Auto`], the default; see [`GradientMode`]).
    pub fn gradient_mode(mut self, mode: GradientMode) -> Self {
        self.gradient_mode = mode;
        self
    }

    /// Checkpoint loops in reverse mode (off by default): a counted loop with scalar state is
    /// run in segments, and the pullback recomputes one segment at a time, so the tape holds
    /// O(sqrt(N)) entries for N iterations instead of O(N), at the cost of one more forward run
    /// of the loop. The gradient is bit-identical. Loops that do not qualify (see
    /// `docs/reverse.md`) are recorded as usual; [`GradientFn::checkpoints`](crate::GradientFn::checkpoints)
    /// lists those checkpointed.
    ///
    /// ```
    /// use jitdiff::{GradientFn, GradientMode, ad::Checkpoint, args, ir::parse_module};
    /// let m = parse_module("func @f(x: f64, n: i64) -> f64 {\nentry:\n    zero = iconst 0\n    one = iconst 1\n    jump head(zero, x)\nhead(i: i64, y: f64):\n    c = icmp lt i, n\n    br c, body, done(y)\nbody:\n    s = sin y\n    j = iadd i, one\n    jump head(j, s)\ndone(r: f64):\n    ret r\n}").unwrap();
    /// let plain = GradientFn::builder(&m, "f").wrt(["x"]).gradient_mode(GradientMode::Reverse).build().unwrap();
    /// let bounded = GradientFn::builder(&m, "f").wrt(["x"]).gradient_mode(GradientMode::Reverse)
    ///     .checkpoint(Checkpoint::Segments).build().unwrap();
    /// assert_eq!(bounded.checkpoints().len(), 1);
    /// let (mut g1, mut g2) = ([0.0], [0.0]);
    /// plain.value_and_grad(&mut args![0.5, 1000i64], &mut g1).unwrap();
    /// bounded.value_and_grad(&mut args![0.5, 1000i64], &mut g2).unwrap();
    /// assert_eq!(g1[0].to_bits(), g2[0].to_bits());
    /// ```
    pub fn checkpoint(mut self, checkpoint: Checkpoint) -> Self {
        self.checkpoint = checkpoint;
        self
    }
}

impl Builder<'_, crate::fd::FiniteDiff> {
    /// The finite-difference scheme and step (default: central differences).
    pub fn fd_options(mut self, options: crate::fd::FdOptions) -> Self {
        self.fd = options;
        self
    }
}
