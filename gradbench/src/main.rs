//! `jitdiff-gradbench`: answers GradBench's messages on stdin, one response per line on stdout.

use std::io::{BufWriter, stdin, stdout};

fn main() {
    let mut tool = jitdiff_gradbench::Tool::new();
    if let Err(e) = tool.serve(stdin().lock(), BufWriter::new(stdout().lock())) {
        eprintln!("jitdiff-gradbench: {e}");
        std::process::exit(1);
    }
}
