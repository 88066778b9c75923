//! Command-line values: `--args`, `--tangents`, `--wrt`, and how results are printed.
//!
//! Syntax of one value, by parameter type:
//! - `f64`: a Rust float literal (`2.5`, `-1e-3`, `inf`, `nan`);
//! - `i64`: an integer; `bool`: `true` or `false`;
//! - `slice`, `mslice`, `f64xW`: `[1, 2.5, -3]` (commas and/or spaces), or `@path` — a file of
//!   numbers separated by commas, spaces or newlines, optionally inside `[ ]`, `#` starting a
//!   comment to the end of the line.

use super::error::CliError;
use super::load::Loaded;
use jitdiff::ir::{ArgValue, RuntimeValue, Type};

/// Parse `--args`: one value per parameter of the chosen function.
pub fn parse_args(loaded: &Loaded, texts: &[String]) -> Result<Vec<ArgValue>, CliError> {
    let params = loaded.params();
    if texts.len() != params.len() {
        return Err(CliError::ArgCount {
            function: loaded.name.clone(),
            signature: loaded.signature(),
            expected: params.len(),
            got: texts.len(),
        });
    }
    params.iter().zip(texts).enumerate().map(|(i, ((name, ty), text))| parse_value(i, name, *ty, text)).collect()
}

fn parse_value(index: usize, name: &str, ty: Type, text: &str) -> Result<ArgValue, CliError> {
    let bad = |message: String| CliError::BadValue {
        what: "argument",
        index,
        name: name.into(),
        ty: ty.to_string(),
        message,
    };
    let text = text.trim();
    match ty {
        Type::F64 => {
            text.parse().map(ArgValue::F64).map_err(|_| bad(format!("cannot read {text:?} as a float, e.g. 2.5")))
        }
        Type::I64 => {
            text.parse().map(ArgValue::I64).map_err(|_| bad(format!("cannot read {text:?} as an integer, e.g. 3")))
        }
        Type::Bool => match text {
            "true" => Ok(ArgValue::Bool(true)),
            "false" => Ok(ArgValue::Bool(false)),
            _ => Err(bad(format!("cannot read {text:?} as a bool: write true or false"))),
        },
        Type::Slice => numbers(text).map(ArgValue::Slice).map_err(bad),
        Type::SliceMut => numbers(text).map(ArgValue::SliceMut).map_err(bad),
        Type::F64x(w) => {
            let lanes = numbers(text).map_err(bad)?;
            if lanes.len() != w as usize {
                return Err(bad(format!("needs exactly {w} lanes, got {}", lanes.len())));
            }
            Ok(ArgValue::Vector(lanes))
        }
    }
}

/// Numbers from `[a, b, ...]` or `@path`.
pub fn numbers(text: &str) -> Result<Vec<f64>, String> {
    let text = text.trim();
    if let Some(path) = text.strip_prefix('@') {
        let content = super::load::read_text(path).map_err(|e| e.to_string())?;
        let without_comments: String =
            content.lines().map(|l| l.split('#').next().unwrap_or("")).collect::<Vec<_>>().join("\n");
        let body = without_comments.trim();
        let body = body.strip_prefix('[').and_then(|b| b.strip_suffix(']')).unwrap_or(body);
        return list(body).map_err(|e| format!("in {path}: {e}"));
    }
    let Some(body) = text.strip_prefix('[').and_then(|b| b.strip_suffix(']')) else {
        return Err(format!("cannot read {text:?} as a list: write [1, 2, 3] or @file"));
    };
    list(body)
}

fn list(body: &str) -> Result<Vec<f64>, String> {
    body.split(|c: char| c == ',' || c.is_whitespace())
        .filter(|t| !t.is_empty())
        .map(|t| t.parse::<f64>().map_err(|_| format!("cannot read {t:?} as a number")))
        .collect()
}

/// Parse `--wrt name,name` (names or 0-based positions) into a mask; without it, every `f64` and
/// slice parameter.
pub fn parse_wrt(loaded: &Loaded, spec: Option<&str>) -> Result<Vec<bool>, CliError> {
    let params = loaded.params();
    let Some(spec) = spec else {
        return Ok(params.iter().map(|(_, t)| differentiable(*t)).collect());
    };
    let mut mask = vec![false; params.len()];
    for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let position = params.iter().position(|(n, _)| n == item).or_else(|| item.parse::<usize>().ok());
        let Some(p) = position.filter(|&p| p < params.len()) else {
            let names: Vec<&str> = params.iter().map(|(n, _)| n.as_str()).collect();
            return Err(CliError::Usage(format!(
                "--wrt {item}: @{} has no parameter {item:?}; its parameters are {}",
                loaded.name,
                names.join(", ")
            )));
        };
        if !differentiable(params[p].1) {
            return Err(CliError::Usage(format!(
                "--wrt {item}: parameter {} is {}; only f64 and slice parameters can be differentiated",
                params[p].0, params[p].1
            )));
        }
        mask[p] = true;
    }
    if !mask.contains(&true) {
        return Err(CliError::Usage("--wrt names no parameter".into()));
    }
    Ok(mask)
}

fn differentiable(t: Type) -> bool {
    t == Type::F64 || t.is_slice()
}

/// `--tangents`: one value per differentiated parameter, `W` lanes per scalar, lane-interleaved
/// (`W * len` numbers for a slice of length `len`; a plain number is accepted when W = 1).
pub fn parse_tangents(
    loaded: &Loaded,
    wrt: &[bool],
    width: usize,
    args: &[ArgValue],
    texts: &[String],
) -> Result<Vec<Vec<f64>>, CliError> {
    let params = loaded.params();
    let active: Vec<usize> = (0..wrt.len()).filter(|&p| wrt[p]).collect();
    if texts.len() != active.len() {
        return Err(CliError::Usage(format!(
            "--tangents needs one value per differentiated parameter ({}), got {}",
            active.iter().map(|&p| params[p].0.as_str()).collect::<Vec<_>>().join(", "),
            texts.len()
        )));
    }
    active
        .iter()
        .zip(texts)
        .enumerate()
        .map(|(k, (&p, text))| {
            let elements = scalars_in(&args[p]);
            let parsed = match text.trim().parse::<f64>() {
                Ok(v) => Ok(vec![v]),
                Err(_) => numbers(text),
            };
            let bad = |message: String| CliError::BadValue {
                what: "tangent",
                index: k,
                name: params[p].0.clone(),
                ty: params[p].1.to_string(),
                message,
            };
            let values = parsed.map_err(bad)?;
            if values.len() != elements * width {
                return Err(bad(format!(
                    "needs {} numbers ({elements} scalar(s) × width {width}, lane-interleaved), got {}",
                    elements * width,
                    values.len()
                )));
            }
            Ok(values)
        })
        .collect()
}

/// How many differentiable scalars an argument holds.
pub fn scalars_in(a: &ArgValue) -> usize {
    match a {
        ArgValue::Slice(v) | ArgValue::SliceMut(v) => v.len(),
        _ => 1,
    }
}

/// Labels of the differentiated scalars: `x[3]`, `y`.
pub fn coordinate_labels(loaded: &Loaded, wrt: &[bool], args: &[ArgValue]) -> Vec<String> {
    let mut labels = vec![];
    for ((name, _), (a, _)) in loaded.params().iter().zip(args.iter().zip(wrt)).filter(|(_, (_, w))| **w) {
        match a {
            ArgValue::Slice(v) | ArgValue::SliceMut(v) => labels.extend((0..v.len()).map(|e| format!("{name}[{e}]"))),
            _ => labels.push(name.clone()),
        }
    }
    labels
}

/// Names of the outputs: `result k` for the `f64` results, then `out[e]` for every element of
/// every `mslice` parameter.
pub fn output_labels(loaded: &Loaded, args: &[ArgValue]) -> Vec<String> {
    let floats = loaded.func().returns.iter().filter(|t| **t == Type::F64).count();
    let mut labels: Vec<String> = (0..floats).map(|k| format!("result {k}")).collect();
    for ((name, _), a) in loaded.params().iter().zip(args) {
        if let ArgValue::SliceMut(v) = a {
            labels.extend((0..v.len()).map(|e| format!("{name}[{e}]")));
        }
    }
    labels
}

/// A result as printed: floats in the shortest form that reads back to the same bits.
pub fn format_value(v: &RuntimeValue) -> String {
    match v {
        RuntimeValue::F64(x) => format!("{x:?}"),
        RuntimeValue::I64(x) => x.to_string(),
        RuntimeValue::Bool(x) => x.to_string(),
        RuntimeValue::Vector(v) => format!("[{}]", v.iter().map(|x| format!("{x:?}")).collect::<Vec<_>>().join(", ")),
    }
}

/// Parse `--sizes 10,100,1000`.
pub fn parse_sizes(spec: &str) -> Result<Vec<usize>, CliError> {
    let sizes: Vec<usize> = spec
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            let n = s.replace('_', "").parse::<usize>().ok().filter(|&n| n > 0).ok_or_else(|| {
                CliError::Usage(format!("--sizes: cannot read {s:?} as a positive integer (e.g. --sizes 10,100,1000)"))
            })?;
            if n > MAX_BENCH_SIZE {
                return Err(CliError::Usage(format!(
                    "--sizes: {n} is too large; bench takes sizes up to {MAX_BENCH_SIZE} (the inputs alone would not fit in memory)"
                )));
            }
            Ok(n)
        })
        .collect::<Result<_, _>>()?;
    if sizes.is_empty() {
        return Err(CliError::Usage("--sizes lists no size".into()));
    }
    Ok(sizes)
}

/// The largest size `bench --sizes` takes: inputs are built in memory (an MLP batch of this
/// size is 2.5 GB), and a size past it would end in an allocation failure.
pub const MAX_BENCH_SIZE: usize = 10_000_000;

/// Check `--width`.
/// `--checkpoint`: `off`, `segments` (ceil(sqrt(bound)) iterations), a segment length,
/// `snapshots:K` (at most K segment starts recorded), `binomial:K` (Revolve with K snapshots) or
/// `bytes:N` (a tape budget; `N` may end in KiB, MiB or GiB).
pub fn parse_checkpoint(text: &str) -> Result<jitdiff::ad::Checkpoint, CliError> {
    use jitdiff::ad::{Checkpoint, MAX_SNAPSHOTS};
    match text {
        "off" => Ok(Checkpoint::Off),
        "segments" | "sqrt" => Ok(Checkpoint::Segments),
        n if n.starts_with("binomial:") => match n["binomial:".len()..].parse::<u32>() {
            Ok(k) if (1..=MAX_SNAPSHOTS).contains(&k) => Ok(Checkpoint::Binomial(k)),
            _ => Err(CliError::Usage(format!(
                "--checkpoint {text}: expected binomial:K with K snapshots, 1 to {MAX_SNAPSHOTS}"
            ))),
        },
        n if n.starts_with("bytes:") => {
            let amount = &n["bytes:".len()..];
            let (digits, scale) = [("KiB", 1u64 << 10), ("MiB", 1 << 20), ("GiB", 1 << 30)]
                .iter()
                .find_map(|&(suffix, scale)| amount.strip_suffix(suffix).map(|d| (d, scale)))
                .unwrap_or((amount, 1));
            match digits.parse::<u64>().ok().and_then(|d| d.checked_mul(scale)) {
                Some(bytes) if bytes > 0 => Ok(Checkpoint::Bytes(bytes)),
                _ => Err(CliError::Usage(format!(
                    "--checkpoint {text}: expected bytes:N with N a positive number of bytes, optionally ending in KiB, MiB or GiB"
                ))),
            }
        }
        n if n.starts_with("snapshots:") => match n["snapshots:".len()..].parse::<u32>() {
            Ok(k) if k > 0 => Ok(Checkpoint::Snapshots(k)),
            _ => Err(CliError::Usage(format!("--checkpoint {text}: expected snapshots:K with K a positive integer"))),
        },
        n => match n.parse::<u32>() {
            Ok(len) if len > 0 => Ok(Checkpoint::SegmentLength(len)),
            _ => Err(CliError::Usage(format!(
                "--checkpoint {text}: expected off, segments, a segment length (a positive integer), snapshots:K, binomial:K or bytes:N"
            ))),
        },
    }
}

/// Check a tangent width.
pub fn check_width(width: usize) -> Result<u8, CliError> {
    match width {
        1 | 2 | 4 | 8 | 16 => Ok(width as u8),
        _ => Err(CliError::Usage(format!("--width {width}: the tangent width must be 1, 2, 4, 8 or 16"))),
    }
}
