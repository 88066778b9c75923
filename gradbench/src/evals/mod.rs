//! The evals: each lowers its model (`models/<eval>.rs`, plain Rust in jitdiff's subset),
//! builds jitdiff's handles at `define`, and answers `evaluate` with them.

use jitdiff::ir::{Module, RuntimeValue};
use serde_json::Value;

use crate::ToolError;
use crate::input::Runs;
use crate::protocol::Evaluation;

mod ba;
mod det;
mod gmm;
mod hello;
mod ht;
mod kmeans;
mod lstm;
mod nested;
mod scalar;

/// An eval whose functions are compiled and ready.
pub trait Eval {
    /// The eval's name (`define`'s `module`).
    fn name(&self) -> &'static str;
    /// Runs `function` on `input` as often as `runs` asks.
    fn evaluate(&self, function: &str, input: &Value, runs: Runs) -> Result<Evaluation, ToolError>;
}

/// Compiles the eval `module` (lowering, derivation and JIT compilation: the `"compile"` timing).
pub fn define(module: &str) -> Result<Box<dyn Eval>, ToolError> {
    Ok(match module {
        "hello" => Box::new(hello::Hello::new()?),
        "llsq" => Box::new(scalar::Llsq::new()?),
        "lse" => Box::new(scalar::Lse::new()?),
        "ode" => Box::new(scalar::Ode::new()?),
        "gmm" => Box::new(gmm::Gmm::new()?),
        "lstm" => Box::new(lstm::Lstm::new()?),
        "kmeans" => Box::new(kmeans::Kmeans::new()?),
        "det" => Box::new(det::Det::new()?),
        "ba" => Box::new(ba::Ba::new()?),
        "ht" => Box::new(ht::Ht::new()?),
        "particle" => Box::new(nested::Particle::new()?),
        "saddle" => Box::new(nested::Saddle::new()?),
        other => return Err(ToolError::UnknownModule(other.to_string())),
    })
}

/// A model's source lowered by jitdiff's front end.
pub fn lower(source: &str) -> Result<Module, ToolError> {
    Ok(jitdiff::front::lower_source(source)?)
}

/// Process start-up, done once at `start` so that each `define` times the eval's own compile:
/// one small function lowered from Rust, differentiated in both modes and compiled on two
/// threads. It starts rayon's threads and brings the front end, the transforms and Cranelift
/// into memory — 6-9 ms the first `define` of a process otherwise paid on top of its compile
/// (ht: 28 ms first, 20 ms after). Failures are ignored: `define` reports its own.
pub fn warm_up() {
    let source = "fn warm(x: &[f64], y: &mut [f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        y[i] = x[i].sin() * x[i];
        s += y[i] * y[i];
    }
    s
}";
    let Ok(m) = jitdiff::front::lower_source(source) else { return };
    let _ = build_both(
        || Ok(jitdiff::GradientFn::builder(&m, "warm").wrt(["x"]).build()?.prepare()?),
        || Ok(jitdiff::ForwardFn::builder(&m, "warm").wrt(["x"]).width(8).build()?),
    );
}

/// Build the objective's handle and its derivative's at once, on two cores: they compile
/// independently, and `define` is timed (what any user building two handles could do).
pub fn build_both<A: Send, B: Send>(
    a: impl FnOnce() -> Result<A, ToolError> + Send,
    b: impl FnOnce() -> Result<B, ToolError> + Send,
) -> Result<(A, B), ToolError> {
    let (a, b) = rayon::join(a, b);
    Ok((a?, b?))
}

/// The first result of a call, as `f64`.
pub fn first_f64(values: &[RuntimeValue]) -> Result<f64, ToolError> {
    values
        .first()
        .and_then(RuntimeValue::as_f64)
        .ok_or_else(|| ToolError::Message("the function returned no f64 result".into()))
}

/// A number, or `null` for a non-finite one (JSON has no NaN).
pub fn json_number(v: f64) -> Value {
    serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number)
}

/// A flat vector as a JSON array.
pub fn json_vector(v: &[f64]) -> Value {
    Value::Array(v.iter().map(|&x| json_number(x)).collect())
}

/// A flat row-major matrix of `cols` columns as a JSON array of rows.
pub fn json_matrix(v: &[f64], cols: usize) -> Value {
    if cols == 0 {
        return Value::Array(Vec::new());
    }
    Value::Array(v.chunks(cols).map(json_vector).collect())
}

/// The error for a function name an eval does not have.
pub fn unknown(module: &'static str, function: &str) -> ToolError {
    ToolError::UnknownFunction { module, function: function.to_string() }
}
