//! Filetests: IR text files under `tests/filetests/` whose header says what to do with them, in
//! the manner of Cranelift's filetests.
//!
//! Header directives (comment lines at the top of the file):
//!
//! - `; test: roundtrip` — parse, print; the printed module is the expected output.
//! - `; test: verify` — parse and verify; must succeed.
//! - `; test: verify-error` with `; error: <KindName> at <line>:<col>` — must fail that way.
//! - `; test: pass <name> [<name> ...]` — run IR passes (`dce`, `fold`, `cse`, `optimize`) in
//!   order; the printed result is the expected output.
//! - `; test: jvp @f wrt <flags> width <W>` — derive the forward-mode function of `@f` (flags:
//!   one `1`/`0` per parameter) and print the derived module's new functions; the printed result
//!   is the expected output.
//! - `; test: vjp @f wrt <flags>` — derive the reverse mode of `@f` and print the new functions
//!   (`_fwd`, which records the pullback state on the tape, `_pullback` and `_value_and_grad`).
//! - `; test: expand` — expand the module's derivative declarations (nested AD) and print it.
//! - `; test: run` with lines `; run: @f(args) == results` (exact, NaN equals NaN),
//!   `; run: @f(args) ~= results` (relative 1e-12) or `; run: @f(args) == error <KindName>`.
//!   Arguments are read by the function's parameter types: `1.5`, `3`, `true`, `[1.0, 2.0]`.
//!
//! Expected output lives at the end of the file after a line `; expected:`, every line prefixed
//! with `; `. Set `JITDIFF_BLESS=1` to rewrite it from the actual output.

use jitdiff_ir::{ArgValue, Interpreter, Module, RuntimeValue, Type, passes, print_module, verify_module_with_spans};
use std::path::{Path, PathBuf};

const EXPECTED_MARKER: &str = "; expected:";

fn main() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/filetests");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/filetests exists")
        .map(|e| e.expect("readable dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "ir"))
        .collect();
    files.sort();
    let bless = std::env::var_os("JITDIFF_BLESS").is_some();
    let (mut passed, mut failed) = (0, 0);
    for file in &files {
        match run_file(file, bless) {
            Ok(()) => passed += 1,
            Err(msg) => {
                failed += 1;
                eprintln!("FAIL {}: {msg}", file.display());
            }
        }
    }
    println!("filetests: {passed} passed, {failed} failed");
    assert!(files.len() >= 10, "expected at least 10 filetests, found {}", files.len());
    assert_eq!(failed, 0, "{failed} filetest(s) failed");
}

/// One filetest: split header, body and expected block; run each directive.
fn run_file(path: &Path, bless: bool) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let (body, expected) = match text.find(&format!("\n{EXPECTED_MARKER}")) {
        Some(i) => (&text[..i + 1], Some(&text[i + 1 + EXPECTED_MARKER.len()..])),
        None => (text.as_str(), None),
    };
    let directives: Vec<&str> = body.lines().filter_map(|l| l.trim().strip_prefix(';')).map(str::trim).collect();
    let tests: Vec<&str> = directives.iter().filter_map(|d| d.strip_prefix("test:")).map(str::trim).collect();
    if tests.is_empty() {
        return Err("no `; test:` directive".into());
    }
    let mut actual_output: Option<String> = None;
    for test in tests {
        let mut words = test.split_whitespace();
        match words.next() {
            Some("roundtrip") => {
                let module = parse(body)?;
                let printed = print_module(&module);
                let again = jitdiff_ir::parse_module(&printed).map_err(|e| format!("reparse: {e}"))?;
                if again != module {
                    return Err("parse(print(m)) != m".into());
                }
                actual_output = Some(printed);
            }
            Some("verify") => {
                parse(body)?;
            }
            Some("verify-error") => check_error(body, &directives)?,
            Some("pass") => {
                let mut module = parse(body)?;
                for name in words {
                    passes::run_pass(name, &mut module).map_err(|e| e.to_string())?;
                }
                jitdiff_ir::verify_module(&module).map_err(|e| format!("pass output does not verify: {e}"))?;
                actual_output = Some(print_module(&module));
            }
            Some("jvp") => {
                let module = parse(body)?;
                let words: Vec<&str> = words.collect();
                let (name, flags, width) = match words.as_slice() {
                    [name, "wrt", flags, "width", w] => (name.trim_start_matches('@'), *flags, *w),
                    _ => return Err("expected `test: jvp @f wrt <flags> width <W>`".into()),
                };
                let wrt: Vec<bool> = flags.chars().map(|c| c == '1').collect();
                let width: u8 = width.parse().map_err(|e| format!("bad width: {e}"))?;
                let derived = jitdiff::ad::derive_forward(&module, name, &wrt, width).map_err(|e| e.to_string())?;
                let new_functions = &derived.module.functions[module.functions.len()..];
                let printed: Vec<String> =
                    new_functions.iter().map(|f| jitdiff_ir::print_function(&derived.module, f)).collect();
                actual_output = Some(printed.join("\n"));
            }
            Some("vjp") => {
                let module = parse(body)?;
                let words: Vec<&str> = words.collect();
                let (name, flags) = match words.as_slice() {
                    [name, "wrt", flags] => (name.trim_start_matches('@'), *flags),
                    _ => return Err("expected `test: vjp @f wrt <flags>`".into()),
                };
                let wrt: Vec<bool> = flags.chars().map(|c| c == '1').collect();
                let derived = jitdiff::ad::derive_reverse(&module, name, &wrt).map_err(|e| e.to_string())?;
                let new_functions = &derived.module.functions[module.functions.len()..];
                let printed: Vec<String> =
                    new_functions.iter().map(|f| jitdiff_ir::print_function(&derived.module, f)).collect();
                actual_output = Some(printed.join("\n"));
            }
            Some("expand") => {
                let module = parse(body)?;
                let expanded =
                    jitdiff::ad::expand_derivatives(&module, &Default::default()).map_err(|e| e.to_string())?;
                jitdiff_ir::verify_module(&expanded).map_err(|e| format!("expansion does not verify: {e}"))?;
                actual_output = Some(print_module(&expanded));
            }
            Some("run") => {
                let module = parse(body)?;
                let runs: Vec<&str> = directives.iter().filter_map(|d| d.strip_prefix("run:")).collect();
                if runs.is_empty() {
                    return Err("`test: run` without `; run:` lines".into());
                }
                for run in runs {
                    check_run(&module, run.trim()).map_err(|e| format!("`{}`: {e}", run.trim()))?;
                }
            }
            other => return Err(format!("unknown test kind {other:?}")),
        }
    }
    compare_expected(path, body, expected, actual_output, bless)
}

fn parse(text: &str) -> Result<Module, String> {
    let (module, spans) = jitdiff_ir::parse_module_with_spans(text).map_err(|e| format!("parse: {e}"))?;
    verify_module_with_spans(&module, Some(&spans)).map_err(|e| format!("verify: {e}"))?;
    Ok(module)
}

fn check_error(body: &str, directives: &[&str]) -> Result<(), String> {
    let want = directives
        .iter()
        .find_map(|d| d.strip_prefix("error:"))
        .ok_or("`test: verify-error` needs `; error: <Kind> at <line>:<col>`")?
        .trim();
    let got = match jitdiff_ir::parse_module_with_spans(body) {
        Err(e) => format!("{} at {}", e.kind.kind_name(), e.pos),
        Ok((m, spans)) => match verify_module_with_spans(&m, Some(&spans)) {
            Err(e) => format!("{} at {}", e.kind.kind_name(), e.pos.map_or("?".into(), |p| p.to_string())),
            Ok(()) => return Err(format!("expected error `{want}`, but the module verified")),
        },
    };
    if got != want {
        return Err(format!("expected error `{want}`, got `{got}`"));
    }
    Ok(())
}

fn check_run(module: &Module, run: &str) -> Result<(), String> {
    let name_start = run.find('@').ok_or("missing @function")? + 1;
    let open = run.find('(').ok_or("missing `(`")?;
    let close = run.rfind(')').ok_or("missing `)`")?;
    let name = &run[name_start..open];
    let func = module.func_by_name(name).ok_or_else(|| format!("no function @{name}"))?;
    let mut args = parse_args(&run[open + 1..close], &func.param_types())?;
    let rest = run[close + 1..].trim();
    let (approx, expected) = if let Some(r) = rest.strip_prefix("~=") {
        (true, r.trim())
    } else if let Some(r) = rest.strip_prefix("==") {
        (false, r.trim())
    } else {
        return Err("expected `==` or `~=` after the call".into());
    };
    let result = Interpreter::new(module).with_step_limit(100_000_000).call(name, &mut args);
    if let Some(kind) = expected.strip_prefix("error") {
        return match result {
            Err(e) if e.kind_name() == kind.trim() => Ok(()),
            Err(e) => Err(format!("expected error {}, got {} ({e})", kind.trim(), e.kind_name())),
            Ok(v) => Err(format!("expected error {}, got {v:?}", kind.trim())),
        };
    }
    let values = result.map_err(|e| format!("interpreter error: {e}"))?;
    let want = parse_args(expected, &func.returns)?;
    if values.len() != want.len() {
        return Err(format!("expected {} results, got {}", want.len(), values.len()));
    }
    for (got, want) in values.iter().zip(&want) {
        let ok = match (got, want) {
            (RuntimeValue::F64(a), ArgValue::F64(b)) => {
                if approx {
                    (a - b).abs() <= 1e-12 * b.abs().max(1e-300) || a == b
                } else {
                    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
                }
            }
            (RuntimeValue::I64(a), ArgValue::I64(b)) => a == b,
            (RuntimeValue::Bool(a), ArgValue::Bool(b)) => a == b,
            (RuntimeValue::Vector(a), ArgValue::Vector(b)) => a == b,
            _ => false,
        };
        if !ok {
            return Err(format!("expected {want:?}, got {got:?}"));
        }
    }
    Ok(())
}

/// Split on top-level commas (not inside `[...]`) and read each item by its type.
fn parse_args(text: &str, types: &[Type]) -> Result<Vec<ArgValue>, String> {
    let mut items = vec![];
    let (mut depth, mut start) = (0, 0);
    for (i, c) in text.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            ',' if depth == 0 => {
                items.push(text[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    if !text[start..].trim().is_empty() {
        items.push(text[start..].trim());
    }
    if items.len() != types.len() {
        return Err(format!("expected {} values, got {}", types.len(), items.len()));
    }
    items
        .iter()
        .zip(types)
        .map(|(item, ty)| {
            let float = |s: &str| s.trim().parse::<f64>().map_err(|e| format!("bad float `{s}`: {e}"));
            let list = |s: &str| -> Result<Vec<f64>, String> {
                let inner = s.trim().strip_prefix('[').and_then(|s| s.strip_suffix(']')).ok_or("expected [..]")?;
                inner.split(',').filter(|x| !x.trim().is_empty()).map(float).collect()
            };
            Ok(match ty {
                Type::F64 => ArgValue::F64(float(item)?),
                Type::I64 => ArgValue::I64(item.parse().map_err(|e| format!("bad integer `{item}`: {e}"))?),
                Type::Bool => ArgValue::Bool(item.parse().map_err(|e| format!("bad bool `{item}`: {e}"))?),
                Type::Slice => ArgValue::Slice(list(item)?),
                Type::SliceMut => ArgValue::SliceMut(list(item)?),
                Type::F64x(_) => ArgValue::Vector(list(item)?),
            })
        })
        .collect()
}

fn compare_expected(
    path: &Path,
    body: &str,
    expected: Option<&str>,
    actual: Option<String>,
    bless: bool,
) -> Result<(), String> {
    let Some(actual) = actual else {
        return match expected {
            Some(_) => Err("has an `; expected:` block but its test kind prints nothing".into()),
            None => Ok(()),
        };
    };
    let commented: String =
        actual.lines().map(|l| if l.is_empty() { ";\n".to_string() } else { format!("; {l}\n") }).collect();
    let want = expected.map(|e| e.trim_start_matches('\n'));
    if want == Some(commented.as_str()) {
        return Ok(());
    }
    if bless {
        let new = format!("{}{EXPECTED_MARKER}\n{commented}", body.trim_end_matches('\n').to_string() + "\n");
        std::fs::write(path, new).map_err(|e| e.to_string())?;
        return Ok(());
    }
    Err(format!(
        "output differs from the `; expected:` block (set JITDIFF_BLESS=1 to update)\n--- expected\n{}\n--- actual\n{commented}",
        want.unwrap_or("<none>")
    ))
}
