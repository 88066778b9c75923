//! GradBench's protocol: one JSON message per line in, one response per line out.

use std::io::{BufRead, Write};
use std::time::Instant;

use serde_json::{Map, Value, json};

use crate::ToolError;
use crate::evals::{self, Eval};
use crate::input::Runs;

/// One named duration of a response's `timings`.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Timing {
    /// `"evaluate"` for a timed run, `"compile"` for `define`'s derivation and compilation.
    pub name: &'static str,
    /// The duration.
    pub nanoseconds: u64,
}

/// An evaluation's output and one timing per run.
#[derive(Debug)]
pub struct Evaluation {
    /// The output, shaped as the eval's validator expects.
    pub output: Value,
    /// One `"evaluate"` timing per run.
    pub timings: Vec<Timing>,
}

fn nanos(start: Instant) -> u64 {
    u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

/// Runs `compute` as often as `runs` asks, timing each call, and returns the last result.
/// `compute` should do only the computation; preparing inputs and shaping outputs belong
/// outside it.
pub fn repeat<T>(runs: Runs, mut compute: impl FnMut() -> Result<T, ToolError>) -> Result<(T, Vec<Timing>), ToolError> {
    let mut timings = Vec::new();
    let mut elapsed = 0.0;
    loop {
        let start = Instant::now();
        let result = compute()?;
        let ns = nanos(start);
        timings.push(Timing { name: "evaluate", nanoseconds: ns });
        elapsed += ns as f64 * 1e-9;
        if timings.len() >= runs.min_runs && elapsed >= runs.min_seconds {
            return Ok((result, timings));
        }
    }
}

/// The tool's state: the module defined last, if any.
#[derive(Default)]
pub struct Tool {
    defined: Option<Box<dyn Eval>>,
}

impl Tool {
    /// A tool with nothing defined.
    pub fn new() -> Tool {
        Tool::default()
    }

    /// The response to one line (a JSON object without a trailing newline).
    pub fn respond(&mut self, line: &str) -> Value {
        let message: Value = match serde_json::from_str(line) {
            Ok(v @ Value::Object(_)) => v,
            Ok(other) => {
                return failure(Value::Null, &ToolError::Message(format!("expected an object, found {other}")));
            }
            Err(e) => return failure(Value::Null, &ToolError::Message(e.to_string())),
        };
        let id = message.get("id").cloned().unwrap_or(Value::Null);
        match message.get("kind").and_then(Value::as_str) {
            Some("start") => {
                evals::warm_up();
                json!({ "id": id, "tool": "jitdiff" })
            }
            Some("define") => self.define(id, &message),
            Some("evaluate") => match self.evaluate(&message) {
                Ok(e) => json!({ "id": id, "success": true, "output": e.output, "timings": e.timings }),
                Err(e) => failure(id, &e),
            },
            _ => json!({ "id": id }),
        }
    }

    fn define(&mut self, id: Value, message: &Value) -> Value {
        let Some(module) = message.get("module").and_then(Value::as_str) else {
            return failure(id, &ToolError::Message("`define` without a `module` string".into()));
        };
        self.defined = None;
        let start = Instant::now();
        match evals::define(module) {
            Ok(eval) => {
                let compile = Timing { name: "compile", nanoseconds: nanos(start) };
                self.defined = Some(eval);
                json!({ "id": id, "success": true, "timings": [compile] })
            }
            Err(e) => failure(id, &e),
        }
    }

    fn evaluate(&mut self, message: &Value) -> Result<Evaluation, ToolError> {
        let module = message.get("module").and_then(Value::as_str).unwrap_or_default();
        let function = message
            .get("function")
            .and_then(Value::as_str)
            .ok_or_else(|| ToolError::Message("`evaluate` without a `function` string".into()))?;
        let input = message.get("input").ok_or_else(|| ToolError::Message("`evaluate` without an `input`".into()))?;
        let eval = match &self.defined {
            Some(eval) if eval.name() == module => eval,
            _ => return Err(ToolError::NotDefined(module.to_string())),
        };
        let runs = Runs::of(input)?;
        eval.evaluate(function, input, runs)
    }

    /// Answers every line of `input` on `output` (flushed per response) until end of input.
    /// A line that is not UTF-8 is answered as malformed, like any other unparsable line.
    pub fn serve(&mut self, mut input: impl BufRead, mut output: impl Write) -> std::io::Result<()> {
        let mut bytes = Vec::new();
        loop {
            bytes.clear();
            if input.read_until(b'\n', &mut bytes)? == 0 {
                return Ok(());
            }
            let line = String::from_utf8_lossy(&bytes);
            if line.trim().is_empty() {
                continue;
            }
            let response = self.respond(&line);
            writeln!(output, "{response}")?;
            output.flush()?;
        }
    }
}

fn failure(id: Value, error: &ToolError) -> Value {
    let mut map = Map::new();
    map.insert("id".into(), id);
    map.insert("success".into(), Value::Bool(false));
    map.insert("error".into(), Value::String(error.to_string()));
    Value::Object(map)
}
