//! Lower a Rust source file and print the IR module (or the error):
//! `cargo run -p jitdiff-front --example lower -- path/to/file.rs`.

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: lower <file.rs>");
        std::process::exit(2);
    };
    let source = match std::fs::read_to_string(&path) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{path}: {e}");
            std::process::exit(2);
        }
    };
    match jitdiff_front::lower_source(&source) {
        Ok(module) => print!("{}", jitdiff_ir::print_module(&module)),
        Err(e) => {
            eprintln!("{path}:{e}");
            std::process::exit(1);
        }
    }
}
