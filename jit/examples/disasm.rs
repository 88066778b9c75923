//! Print the Cranelift IR and machine code of an IR file's functions:
//! `JITDIFF_DISASM=1 cargo run -p jitdiff-jit --example disasm -- examples/ir/rosenbrock.ir`.

fn main() {
    let path = std::env::args().nth(1).expect("usage: disasm FILE.ir");
    let text = std::fs::read_to_string(&path).expect("readable file");
    let module = jitdiff_ir::parse_module(&text).expect("parses");
    if std::env::var_os("JITDIFF_DISASM").is_none() {
        eprintln!("set JITDIFF_DISASM=1 to see the code");
    }
    let compiled = jitdiff_jit::compile(&module, &jitdiff_ir::ExternRegistry::new(), &jitdiff_jit::JitOptions::new());
    println!("{:?}", compiled.map(|c| c.function_names().map(String::from).collect::<Vec<_>>()));
}
