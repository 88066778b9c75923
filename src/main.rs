//! The `jitdiff` command. With no arguments it runs the built-in demo: Extended Rosenbrock
//! (n = 1,000) parsed from embedded IR text, verified, run by the reference interpreter and by
//! JIT-compiled native code, with both results side by side.

use jitdiff::ir::{
    ArgValue, ExternRegistry, Interpreter, RuntimeValue, parse_module_with_spans, verify_module_with_spans,
};
use jitdiff::jit::{Arg, JitOptions, compile};
use jitdiff::problems::rosenbrock::{ENTRY, ROSENBROCK_IR, rosenbrock, standard_start};
use std::process::ExitCode;
use std::time::Instant;

fn main() -> ExitCode {
    match demo() {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}

fn demo() -> Result<(), String> {
    let n = 1_000;
    println!("jitdiff demo: Extended Rosenbrock, n = {n}, from the standard start (-1.2, 1, -1.2, 1, ...)");

    let (module, spans) = parse_module_with_spans(ROSENBROCK_IR).map_err(|e| e.to_string())?;
    verify_module_with_spans(&module, Some(&spans)).map_err(|e| e.to_string())?;
    let func = module.func_by_name(ENTRY).ok_or("the embedded module has no @rosenbrock")?;
    let instructions: usize = func.blocks.iter().map(|b| b.insts.len() + 1).sum();
    println!("  IR: parsed and verified @{ENTRY}: {} blocks, {instructions} instructions", func.blocks.len());

    let x = standard_start(n);
    let start = Instant::now();
    let interpreted =
        Interpreter::new(&module).call(ENTRY, &mut [ArgValue::Slice(x.clone())]).map_err(|e| e.to_string())?;
    let interpreter_time = start.elapsed();
    let interpreted = match interpreted.as_slice() {
        [RuntimeValue::F64(v)] => *v,
        other => return Err(format!("unexpected interpreter result {other:?}")),
    };

    let start = Instant::now();
    let compiled = compile(&module, &ExternRegistry::new(), &JitOptions::new()).map_err(|e| e.to_string())?;
    let native = compiled.function(ENTRY).map_err(|e| e.to_string())?;
    let compile_time = start.elapsed();
    let calls = 1_000;
    let mut jitted = f64::NAN;
    let start = Instant::now();
    for _ in 0..calls {
        match native.call(&mut [Arg::Slice(&x)]).map_err(|e| e.to_string())?.as_slice() {
            [RuntimeValue::F64(v)] => jitted = *v,
            other => return Err(format!("unexpected native result {other:?}")),
        }
    }
    let native_time = start.elapsed() / calls;
    let reference = rosenbrock(&x);

    println!("  interpreter : f(x0) = {interpreted:.17e}   ({:.3} ms)", interpreter_time.as_secs_f64() * 1e3);
    println!(
        "  JIT (native): f(x0) = {jitted:.17e}   (compiled in {:.2} ms, {:.2} us per call)",
        compile_time.as_secs_f64() * 1e3,
        native_time.as_secs_f64() * 1e6
    );
    println!("  plain Rust  : f(x0) = {reference:.17e}");
    let agree = interpreted.to_bits() == jitted.to_bits();
    println!("  interpreter and JIT agree bit for bit: {}", if agree { "yes" } else { "NO" });
    if !agree {
        return Err("the interpreter and the JIT disagree".into());
    }
    println!(
        "  (differentiation — gradients, JVPs, the AD vs finite-difference comparison — comes with the next issues)"
    );
    Ok(())
}
