//! Reading an `evaluate` input: numbers, flat and nested arrays, repetition settings.

use serde_json::Value;

use crate::ToolError;

fn bad(field: &str, reason: impl Into<String>) -> ToolError {
    ToolError::Input { field: field.to_string(), reason: reason.into() }
}

/// The field `name` of an input object.
pub fn field<'a>(input: &'a Value, name: &str) -> Result<&'a Value, ToolError> {
    match input {
        Value::Object(map) => map.get(name).ok_or_else(|| bad(name, "missing")),
        _ => Err(bad(name, "the input is not an object")),
    }
}

/// A JSON number as `f64`.
pub fn number(value: &Value, name: &str) -> Result<f64, ToolError> {
    value.as_f64().ok_or_else(|| bad(name, format!("expected a number, found {}", kind(value))))
}

/// A non-negative JSON integer as `usize`.
pub fn count(value: &Value, name: &str) -> Result<usize, ToolError> {
    value
        .as_u64()
        .and_then(|v| usize::try_from(v).ok())
        .ok_or_else(|| bad(name, format!("expected a non-negative integer, found {value}")))
}

/// A JSON integer as `i64`.
pub fn integer(value: &Value, name: &str) -> Result<i64, ToolError> {
    value.as_i64().ok_or_else(|| bad(name, format!("expected an integer, found {value}")))
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// An array of numbers.
pub fn vector(value: &Value, name: &str) -> Result<Vec<f64>, ToolError> {
    let items = value.as_array().ok_or_else(|| bad(name, format!("expected an array, found {}", kind(value))))?;
    items.iter().enumerate().map(|(i, v)| number(v, &format!("{name}[{i}]"))).collect()
}

/// An array of arrays of numbers, flattened row by row, with the common row length (`None` for
/// no rows). Rows of different lengths are an error.
pub fn matrix(value: &Value, name: &str) -> Result<(Vec<f64>, usize, Option<usize>), ToolError> {
    let rows = value.as_array().ok_or_else(|| bad(name, format!("expected an array, found {}", kind(value))))?;
    let mut flat = Vec::new();
    let mut width = None;
    for (r, row) in rows.iter().enumerate() {
        let row = vector(row, &format!("{name}[{r}]"))?;
        match width {
            None => width = Some(row.len()),
            Some(w) if w != row.len() => {
                return Err(bad(&format!("{name}[{r}]"), format!("has {} entries, row 0 has {w}", row.len())));
            }
            Some(_) => {}
        }
        flat.extend(row);
    }
    Ok((flat, rows.len(), width))
}

/// A matrix with exactly `cols` columns (any number of rows, `cols` unchecked when empty).
pub fn matrix_cols(value: &Value, name: &str, cols: usize) -> Result<(Vec<f64>, usize), ToolError> {
    let (flat, rows, width) = matrix(value, name)?;
    match width {
        Some(w) if w != cols => Err(bad(name, format!("expected rows of {cols} entries, found {w}"))),
        _ => Ok((flat, rows)),
    }
}

/// Fails unless `ok`, naming the field.
pub fn require(ok: bool, name: &str, reason: &str) -> Result<(), ToolError> {
    if ok { Ok(()) } else { Err(bad(name, reason)) }
}

/// How often to evaluate: at least `min_runs` times and until `min_seconds` have accumulated
/// (GradBench's `Runs` fields; absent fields mean one run).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Runs {
    /// The fewest runs.
    pub min_runs: usize,
    /// The least accumulated time of the timed runs, in seconds.
    pub min_seconds: f64,
}

impl Runs {
    /// The settings of an input (a non-object, such as hello's number, means one run).
    pub fn of(input: &Value) -> Result<Runs, ToolError> {
        let mut runs = Runs { min_runs: 1, min_seconds: 0.0 };
        if let Value::Object(map) = input {
            if let Some(v) = map.get("min_runs") {
                runs.min_runs = count(v, "min_runs")?.max(1);
            }
            if let Some(v) = map.get("min_seconds") {
                let s = number(v, "min_seconds")?;
                require(s.is_finite() && s >= 0.0, "min_seconds", "expected a finite number >= 0")?;
                runs.min_seconds = s;
            }
        }
        Ok(runs)
    }
}
