//! The `jitdiff` command. With no arguments it runs the demo: Extended Rosenbrock (n = 1,000)
//! from embedded IR — parsed, verified, interpreted, JIT-compiled, differentiated, checked
//! against finite differences and optimised. Subcommands work on IR files: `jitdiff --help`.

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
