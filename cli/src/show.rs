//! `jitdiff show`: the IR of a function and of its derivatives, optionally with machine code.
//!
//! Machine code comes from the JIT's own disassembly switch (the `JITDIFF_DISASM` environment
//! variable, read when code is compiled): `--asm` runs this program again with that variable set
//! and only compiling, and prints what the compiler wrote.

use super::error::CliError;
use super::load::load;
use super::values::parse_wrt;
use jitdiff::RuleSet;
use jitdiff::ad::{Checkpoint, derive_forward, derive_reverse_checkpointed};
use jitdiff::ir::{Callee, ExternRegistry, Function, Imm, Module, Opcode, Value, print_function};
use jitdiff::jit::{JitOptions, compile};
use jitdiff::{ForwardFn, GradientFn};
use std::collections::BTreeSet;

/// Which IR to show.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    /// The function itself and what it calls.
    Primal,
    /// The forward-mode (tangent) function.
    Jvp,
    /// Reverse mode: the forward function, the layout of its pullback state, the pullback.
    Vjp,
}

impl Mode {
    fn flag(self) -> &'static str {
        match self {
            Mode::Primal => "primal",
            Mode::Jvp => "jvp",
            Mode::Vjp => "vjp",
        }
    }
}

/// What `show` needs.
pub struct ShowArgs<'a> {
    /// The IR file.
    pub file: &'a str,
    /// `--fn`.
    pub name: Option<&'a str>,
    /// `--mode`.
    pub mode: Mode,
    /// `--width` (jvp).
    pub width: u8,
    /// `--wrt`.
    pub wrt: Option<&'a str>,
    /// `--checkpoint` (vjp).
    pub checkpoint: Checkpoint,
}

/// Print the IR; with `asm`, also the machine code.
pub fn show(a: &ShowArgs<'_>, asm: bool) -> Result<(), CliError> {
    let loaded = load(a.file, a.name)?;
    let wrt = parse_wrt(&loaded, a.wrt)?;
    match a.mode {
        Mode::Primal => {
            println!("; @{} and the functions it calls", loaded.name);
            print!("{}", functions_reachable(&loaded.module, &[loaded.name.as_str()]));
            let declared = declarations_called(&loaded.module, &loaded.name);
            if !declared.is_empty() {
                let expanded =
                    jitdiff::ad::expand_derivatives(&loaded.module, &RuleSet::new()).map_err(jitdiff::Error::from)?;
                let roots: Vec<&str> = declared.iter().map(String::as_str).collect();
                println!();
                println!("; the derivatives it declares (nested AD), as jitdiff derives them when a handle is built");
                print!("{}", derived_only(&loaded.module, &expanded, &roots));
            }
        }
        Mode::Jvp => {
            let d = derive_forward(&loaded.module, &loaded.name, &wrt, a.width).map_err(jitdiff::Error::from)?;
            println!(
                "; forward mode of @{} (W = {}): @{} and the derived functions it calls",
                loaded.name, a.width, d.name
            );
            print!("{}", derived_only(&loaded.module, &d.module, &[d.name.as_str()]));
        }
        Mode::Vjp => {
            let (d, schedule) =
                derive_reverse_checkpointed(&loaded.module, &loaded.name, &wrt, &RuleSet::new(), a.checkpoint)
                    .map_err(jitdiff::Error::from)?;
            let forward = d.module.func_by_name(&d.forward).expect("derive_reverse names its functions");
            println!("; reverse mode of @{}", loaded.name);
            if a.checkpoint != Checkpoint::Off {
                println!("; checkpointing: {}", a.checkpoint);
                if schedule.is_empty() {
                    println!(
                        ";   no loop qualifies (see docs/reverse.md, \"Checkpointing\"): every iteration is recorded"
                    );
                }
                for l in &schedule {
                    println!(";   @{} loop `{}`: {}", l.func, l.header, l.schedule);
                }
            }
            println!("; forward function: computes the primal and records the pullback state on the tape");
            print!("{}", print_function(&d.module, forward));
            println!();
            print!("{}", state_layout(&d.module, forward));
            println!();
            println!("; pullback: pops the state in reverse and maps result cotangents to parameter cotangents");
            let pullback = d.module.func_by_name(&d.pullback).expect("derive_reverse names its functions");
            print!("{}", print_function(&d.module, pullback));
            let mut roots = vec![d.forward.as_str(), d.pullback.as_str()];
            if let Some(vg) = &d.value_and_grad {
                roots.push(vg);
            }
            let others = derived_only(&loaded.module, &d.module, &roots);
            let shown = [d.forward.as_str(), d.pullback.as_str()];
            let rest: String = split_functions(&others)
                .into_iter()
                .filter(|(n, _)| !shown.contains(&n.as_str()))
                .map(|(_, text)| text)
                .collect();
            if !rest.is_empty() {
                println!();
                println!("; fused value_and_grad and derived callees");
                print!("{rest}");
            }
            if let Some(compiled) = jitdiff::value_and_grad_ir(&d) {
                println!();
                println!(
                    "; what value_and_grad compiles: forward function and pullback inlined, once-per-call \
                     state passed directly, a loop fused with its reversed loop where the reversed iterations commute"
                );
                let texts: Vec<String> = compiled.functions.iter().map(|f| print_function(&compiled, f)).collect();
                print!("{}", texts.join("\n"));
            }
        }
    }
    if asm {
        print_machine_code(a)?;
    }
    Ok(())
}

/// Compile what `show` printed (the `--compile-only` child of `--asm`).
pub fn compile_only(a: &ShowArgs<'_>) -> Result<(), CliError> {
    let loaded = load(a.file, a.name)?;
    let wrt = parse_wrt(&loaded, a.wrt)?;
    match a.mode {
        Mode::Primal => {
            let expanded =
                jitdiff::ad::expand_derivatives(&loaded.module, &RuleSet::new()).map_err(jitdiff::Error::from)?;
            drop(compile(&expanded, &ExternRegistry::new(), &JitOptions::new())?)
        }
        Mode::Jvp => drop(
            ForwardFn::builder(&loaded.module, &loaded.name)
                .wrt_mask(&wrt)
                .source_map(&loaded.spans)
                .rust_source(&loaded.rust)
                .width(a.width)
                .build()?,
        ),
        Mode::Vjp => drop(
            GradientFn::builder(&loaded.module, &loaded.name)
                .wrt_mask(&wrt)
                .source_map(&loaded.spans)
                .rust_source(&loaded.rust)
                .build()?,
        ),
    }
    Ok(())
}

fn print_machine_code(a: &ShowArgs<'_>) -> Result<(), CliError> {
    let exe =
        std::env::current_exe().map_err(|source| CliError::Read { path: "the jitdiff executable".into(), source })?;
    let mut command = std::process::Command::new(exe);
    command.args(["show", a.file, "--mode", a.mode.flag(), "--width", &a.width.to_string(), "--compile-only"]);
    if let Some(n) = a.name {
        command.args(["--fn", n]);
    }
    if let Some(w) = a.wrt {
        command.args(["--wrt", w]);
    }
    let output = command
        .env("JITDIFF_DISASM", "1")
        .output()
        .map_err(|source| CliError::Read { path: "the output of jitdiff --compile-only".into(), source })?;
    if !output.status.success() {
        return Err(CliError::Usage(format!(
            "compiling for --asm failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    }
    println!();
    println!("; Cranelift IR and machine code (x86-64) of every compiled function, as the JIT reports them");
    print!("{}", String::from_utf8_lossy(&output.stderr));
    Ok(())
}

/// The text of `roots` and every function they call, in module order.
fn functions_reachable(module: &Module, roots: &[&str]) -> String {
    let reachable = reachable(module, roots);
    module
        .functions
        .iter()
        .filter(|f| reachable.contains(&f.name))
        .map(|f| print_function(module, f))
        .collect::<Vec<_>>()
        .join("\n")
}

/// As [`functions_reachable`], leaving out the functions of the original module.
fn derived_only(original: &Module, derived: &Module, roots: &[&str]) -> String {
    let reachable = reachable(derived, roots);
    derived
        .functions
        .iter()
        .filter(|f| reachable.contains(&f.name) && original.func_by_name(&f.name).is_none())
        .map(|f| print_function(derived, f))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The derivative declarations (`extern @g(...) = grad ...`) that `@name` or what it calls
/// calls, by name.
fn declarations_called(module: &Module, name: &str) -> Vec<String> {
    let mut names = vec![];
    for f in reachable(module, &[name]).iter().filter_map(|n| module.func_by_name(n)) {
        for inst in f.blocks.iter().flat_map(|b| &b.insts) {
            if let Imm::Callee(Callee::Extern(id)) = inst.imm
                && let Some(decl) = module.externs.get(id.index()).filter(|d| d.derivative.is_some())
                && !names.contains(&decl.name)
            {
                names.push(decl.name.clone());
            }
        }
    }
    names
}

fn reachable(module: &Module, roots: &[&str]) -> BTreeSet<String> {
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut stack: Vec<String> = roots.iter().map(|s| s.to_string()).collect();
    while let Some(name) = stack.pop() {
        let Some(f) = module.func_by_name(&name) else { continue };
        if !seen.insert(name) {
            continue;
        }
        for inst in f.blocks.iter().flat_map(|b| &b.insts) {
            if let Imm::Callee(Callee::Func(id)) = inst.imm {
                stack.push(module.func(id).name.clone());
            }
        }
    }
    seen
}

/// Split printed functions back into (name, text) pairs.
fn split_functions(text: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = vec![];
    for line in text.split_inclusive('\n') {
        if let Some(rest) = line.strip_prefix("func @") {
            let name = rest.split(['(', ' ']).next().unwrap_or("").to_string();
            out.push((name, String::new()));
        }
        if let Some(last) = out.last_mut() {
            last.1.push_str(line);
        }
    }
    out
}

/// The pullback state of a `_fwd` function: what each block pushes on the tape, in order.
fn state_layout(module: &Module, f: &Function) -> String {
    let name = |v: Value| f.values[v.index()].name.clone().unwrap_or_else(|| format!("v{}", v.index()));
    let origin = |v: Value| {
        if f.params.contains(&v) {
            return "function parameter".to_string();
        }
        for block in &f.blocks {
            if block.params.contains(&v) {
                return format!("parameter of block {}", block.name);
            }
            if let Some(inst) = block.insts.iter().find(|i| i.results.contains(&v)) {
                return format!("{} in block {}", inst.op.spelling(), block.name);
            }
        }
        "unknown".to_string()
    };
    let mut out = format!(
        "; pullback state of @{}: tape entries of 8 bytes, pushed in this order within each block\n\
         ; (a block in a loop pushes once per iteration; merge blocks push the index of the edge taken;\n\
         ; `_leave` blocks push, once per run of a loop, the values its reversed loop carries and its trip\n\
         ; count; values not listed are recomputed by the pullback)\n",
        f.name
    );
    let mut sites = 0;
    for block in &f.blocks {
        let mut items = vec![];
        for inst in &block.insts {
            match (inst.op, inst.imm) {
                (Opcode::TPush, _) => {
                    let v = inst.args[0];
                    items.push(format!("{}: {} ({})", name(v), f.ty(v), origin(v)));
                }
                (Opcode::Call, Imm::Callee(Callee::Func(id))) if module.func(id).name.contains("_fwd") => {
                    items.push(format!("<the state of @{}, nested here>", module.func(id).name));
                }
                _ => {}
            }
        }
        if !items.is_empty() {
            out.push_str(&format!(";   block {}:\n", block.name));
            for item in items {
                sites += 1;
                out.push_str(&format!(";     {sites:>3}. {item}\n"));
            }
        }
    }
    if sites == 0 {
        out.push_str(";   (nothing: the pullback needs no state)\n");
    }
    out
}
