//! Reading an IR file and picking the function a subcommand works on.

use super::error::CliError;
use jitdiff::front::SourceModule;
use jitdiff::ir::{Function, Module, SourceMap, Type, parse_module_with_spans, verify_module_with_spans};

/// A parsed and verified IR file and the chosen function.
pub struct Loaded {
    /// The path, as given.
    pub path: String,
    /// The module.
    pub module: Module,
    /// The chosen function's name (without `@`).
    pub name: String,
    /// Source positions of an IR file (for errors at the user's lines).
    pub spans: SourceMap,
    /// A Rust file's functions as written, with their positions (for the same, by
    /// `Builder::rust_source`); none for an IR file.
    pub rust: SourceModule,
}

impl Loaded {
    /// The chosen function.
    pub fn func(&self) -> &Function {
        self.module.func_by_name(&self.name).expect("load checked the name")
    }

    /// Parameter names (`#i` for unnamed ones) and types.
    pub fn params(&self) -> Vec<(String, Type)> {
        let f = self.func();
        f.params
            .iter()
            .enumerate()
            .map(|(i, &p)| (f.values[p.index()].name.clone().unwrap_or_else(|| format!("#{i}")), f.ty(p)))
            .collect()
    }

    /// `(x: slice, n: i64) -> f64`.
    pub fn signature(&self) -> String {
        let params: Vec<String> = self.params().iter().map(|(n, t)| format!("{n}: {t}")).collect();
        let returns: Vec<String> = self.func().returns.iter().map(|t| t.to_string()).collect();
        match returns.len() {
            0 => format!("({})", params.join(", ")),
            _ => format!("({}) -> {}", params.join(", "), returns.join(", ")),
        }
    }
}

/// The most a command reads from one input (an IR file, an `@file` argument, stdin).
pub const MAX_INPUT_MIB: usize = 256;

/// Read `path` (`-`: standard input) as text, refusing what is too large to be an input
/// (`/dev/zero`) or is not UTF-8 (a binary file) with an error rather than exhausting memory.
pub fn read_text(path: &str) -> Result<String, CliError> {
    use std::io::Read;
    let limit = MAX_INPUT_MIB << 20;
    let read_error = |source| CliError::Read { path: path.into(), source };
    let mut bytes = Vec::new();
    if path == "-" {
        std::io::stdin().lock().take(limit as u64 + 1).read_to_end(&mut bytes).map_err(read_error)?;
    } else {
        let file = std::fs::File::open(path).map_err(read_error)?;
        if file.metadata().map_err(read_error)?.is_dir() {
            return Err(read_error(std::io::Error::other("it is a directory")));
        }
        file.take(limit as u64 + 1).read_to_end(&mut bytes).map_err(read_error)?;
    }
    if bytes.len() > limit {
        return Err(CliError::TooLarge { path: path.into(), limit_mib: MAX_INPUT_MIB });
    }
    String::from_utf8(bytes).map_err(|_| CliError::NotText { path: path.into() })
}

/// Read, parse and verify `path` (`-`: standard input); choose `--fn name`, or the file's first
/// function. A path ending in `.rs` is Rust source for the front end (`docs/rust.md`): its
/// default function is the file's last (helpers usually come first).
pub fn load(path: &str, name: Option<&str>) -> Result<Loaded, CliError> {
    let text = read_text(path)?;
    load_text(path, &text, name)
}

/// As [`load`], from text already read (`path` is for messages).
pub fn load_text(path: &str, text: &str, name: Option<&str>) -> Result<Loaded, CliError> {
    let rust = path.ends_with(".rs");
    let mut as_written = SourceModule { module: Module::new(), as_written: None };
    let (module, spans) = if rust {
        let lowered = jitdiff::front::lower_source_as_written(text)
            .map_err(|error| CliError::Front { path: path.into(), error: Box::new(error) })?;
        as_written.as_written = lowered.as_written;
        (lowered.module, SourceMap::default())
    } else {
        let (module, spans) =
            parse_module_with_spans(text).map_err(|error| CliError::Parse { path: path.into(), error })?;
        verify_module_with_spans(&module, Some(&spans))
            .map_err(|error| CliError::Verify { path: path.into(), error: Box::new(error) })?;
        (module, spans)
    };
    let default = if rust {
        module.functions.iter().rev().find(|f| !jitdiff::front::is_view_variant(&f.name))
    } else {
        module.functions.first()
    };
    let name = match name {
        Some(n) => n.trim_start_matches('@').to_string(),
        None => default.map(|f| f.name.clone()).ok_or_else(|| CliError::NoFunction(path.into()))?,
    };
    if module.func_by_name(&name).is_none() {
        let available: Vec<String> = module.functions.iter().map(|f| format!("@{}", f.name)).collect();
        let available = if available.is_empty() { "no function".into() } else { available.join(", ") };
        return Err(CliError::UnknownFunction { name, path: path.into(), available });
    }
    Ok(Loaded { path: path.into(), module, name, spans, rust: as_written })
}
