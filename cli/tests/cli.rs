//! The `jitdiff` binary on the example IR files: every subcommand's output, and clear errors
//! (non-zero exit, no panic) on bad input.

use jitdiff_problems::rosenbrock::{rosenbrock, rosenbrock_gradient};
use std::path::PathBuf;
use std::process::{Command, Output};

fn jitdiff(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_jitdiff")).args(args).output().expect("the jitdiff binary runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Run, expect success, return stdout.
fn ok(args: &[&str]) -> String {
    let o = jitdiff(args);
    assert!(o.status.success(), "jitdiff {args:?} failed:\n{}\n{}", stdout(&o), stderr(&o));
    stdout(&o)
}

/// Run, expect exit status 1 with an `error:` message and no panic; return stderr.
fn fails(args: &[&str]) -> String {
    let o = jitdiff(args);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "jitdiff {args:?} should fail:\n{}\n{err}", stdout(&o));
    assert!(err.starts_with("error: "), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    err
}

fn example(name: &str) -> String {
    format!("{}/../examples/ir/{name}.ir", env!("CARGO_MANIFEST_DIR"))
}

fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("cli-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The number after `key` in `text`.
fn number_after(text: &str, key: &str) -> f64 {
    let at = text.find(key).unwrap_or_else(|| panic!("no {key:?} in\n{text}")) + key.len();
    let word: String = text[at..].trim_start().chars().take_while(|c| !c.is_whitespace() && *c != ',').collect();
    word.parse().unwrap_or_else(|_| panic!("{word:?} after {key:?} is not a number"))
}

const X: [f64; 4] = [-1.2, 1.0, 0.5, 2.0];
const X_TEXT: &str = "[-1.2, 1, 0.5, 2]";

#[test]
fn run_evaluates_with_the_jit_and_the_interpreter() {
    let file = example("rosenbrock");
    for extra in [&[][..], &["--interp"][..]] {
        let mut args = vec!["run", file.as_str(), "--args", X_TEXT];
        args.extend_from_slice(extra);
        let out = ok(&args);
        assert!(out.contains("@rosenbrock(x: slice) -> f64"), "{out}");
        assert_eq!(number_after(&out, "result 0:"), rosenbrock(&X), "{out}");
    }
}

#[test]
fn slice_arguments_can_come_from_a_file() {
    let path = scratch("args").join("x.txt");
    std::fs::write(&path, "# the point\n-1.2 1\n0.5, 2\n").unwrap();
    let at = format!("@{}", path.display());
    let out = ok(&["run", &example("rosenbrock"), "--args", &at]);
    assert_eq!(number_after(&out, "result 0:"), rosenbrock(&X));
}

#[test]
fn grad_prints_value_and_the_exact_gradient() {
    let out = ok(&["grad", &example("rosenbrock"), "--fn", "rosenbrock", "--args", X_TEXT]);
    let mut expected = [0.0; 4];
    let value = rosenbrock_gradient(&X, &mut expected);
    assert_eq!(number_after(&out, "value:"), value);
    for (i, g) in expected.iter().enumerate() {
        let got = number_after(&out, &format!("x[{i}] ="));
        assert!((got - g).abs() <= 1e-12 * g.abs().max(1.0), "x[{i}]: {got} vs {g}");
    }
    // A scalar parameter by name: the pendulum's initial angle alone.
    let out = ok(&[
        "grad",
        &example("pendulum"),
        "--args",
        "[9.81, 0.25, 0.5]",
        "1.0",
        "0.0",
        "0.01",
        "20",
        "--wrt",
        "theta0",
    ]);
    assert!(out.contains("gradient (1 entries"), "{out}");
    assert!(out.contains("theta0 ="), "{out}");
}

#[test]
fn jvp_default_seeds_give_the_first_gradient_entries_and_given_tangents_a_dot_product() {
    let mut g = [0.0; 4];
    rosenbrock_gradient(&X, &mut g);
    let out = ok(&["jvp", &example("rosenbrock"), "--args", X_TEXT, "--width", "2"]);
    assert!(out.contains("lane l seeds one input: x[0], x[1]"), "{out}");
    let lanes = out.lines().find(|l| l.starts_with("tangent of f64 result 0:")).unwrap();
    let inner = lanes.split('[').nth(1).unwrap().trim_end_matches(']');
    let values: Vec<f64> = inner.split(',').map(|s| s.trim().parse().unwrap()).collect();
    assert_eq!(values.len(), 2);
    for (v, e) in values.iter().zip(&g) {
        assert!((v - e).abs() <= 1e-12 * e.abs(), "{v} vs {e}");
    }
    let out = ok(&["jvp", &example("rosenbrock"), "--args", X_TEXT, "--tangents", "[1, -1, 2, 0.5]"]);
    let dot = g[0] - g[1] + 2.0 * g[2] + 0.5 * g[3];
    let got: f64 = out.lines().last().unwrap().split('[').nth(1).unwrap().trim_end_matches(']').parse().unwrap();
    assert!((got - dot).abs() <= 1e-12 * dot.abs(), "{got} vs {dot}");
    let err = fails(&["jvp", &example("rosenbrock"), "--args", X_TEXT, "--tangents", "[1, 2]"]);
    assert!(err.contains("needs 4 numbers"), "{err}");
}

#[test]
fn jacobian_matches_the_gradient_for_a_scalar_function() {
    let mut g = [0.0; 4];
    rosenbrock_gradient(&X, &mut g);
    let out = ok(&["jacobian", &example("rosenbrock"), "--args", X_TEXT, "--width", "2"]);
    assert!(out.contains("1 output(s) × 4 input(s), 2 forward sweep(s) of width 2"), "{out}");
    for (i, e) in g.iter().enumerate() {
        let got = number_after(&out, &format!("d/dx[{i}] ="));
        assert!((got - e).abs() <= 1e-12 * e.abs().max(1.0), "{got} vs {e}");
    }
}

#[test]
fn check_passes_on_every_example_program() {
    let dir = format!("{}/../examples/ir", env!("CARGO_MANIFEST_DIR"));
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.retain(|p| p.extension().is_some_and(|e| e == "ir"));
    files.sort();
    assert!(files.len() >= 4, "{files:?}");
    for file in files {
        let out = ok(&["check", file.to_str().unwrap()]);
        let max_rel = number_after(&out, "max rel err");
        assert!(max_rel <= 1e-6, "{}: max relative error {max_rel}\n{out}", file.display());
        // The four benchmark programs are checked at their benchmark instance; other example
        // programs (e.g. the per-sample MLP) at the generic inputs.
        let stem = file.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
        if ["gmm", "mlp", "pendulum", "rosenbrock"].contains(&stem) {
            assert!(out.contains("point: the benchmark instance"), "{out}");
        }
        assert!(out.trim_end().ends_with("OK"), "{out}");
    }
}

#[test]
fn check_fails_above_the_tolerance_and_takes_explicit_points() {
    let file = example("rosenbrock");
    let o = jitdiff(&["check", &file, "--args", X_TEXT, "--tol", "0"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("gradient check failed: max relative error"), "{}", stderr(&o));
    assert!(stdout(&o).contains("worst coordinate: x["), "{}", stdout(&o));
    let out = ok(&["check", &file, "--args", X_TEXT]);
    assert!(out.contains("point: the point given by --args") && out.contains("4 coordinate(s)"), "{out}");
    // A function that is no benchmark problem gets generic inputs.
    let out = ok(&["check", &example("pendulum"), "--fn", "accel"]);
    assert!(out.contains("generic inputs of size n = 8"), "{out}");
    assert!(number_after(&out, "max rel err") <= 1e-6, "{out}");
}

#[test]
fn show_prints_primal_forward_and_reverse_ir() {
    let file = example("rosenbrock");
    let out = ok(&["show", &file, "--mode", "primal"]);
    assert!(out.contains("func @rosenbrock(x: slice) -> f64 {"), "{out}");
    let out = ok(&["show", &file, "--mode", "jvp", "--width", "2"]);
    assert!(out.contains("func @rosenbrock_jvp_w2(x: slice, d_x: slice) -> f64, f64x2 {"), "{out}");
    assert!(!out.contains("func @rosenbrock("), "the primal is not repeated:\n{out}");
    let out = ok(&["show", &file, "--mode", "vjp"]);
    for needle in ["func @rosenbrock_fwd(", "tpush", "pullback state of @rosenbrock_fwd", "func @rosenbrock_pullback("]
    {
        assert!(out.contains(needle), "no {needle:?} in\n{out}");
    }
    // What value_and_grad compiles: one loop, no call, no tape.
    let (_, compiled) = out.split_once("; what value_and_grad compiles").expect("the compiled section");
    assert!(compiled.contains("func @rosenbrock_value_and_grad("), "{compiled}");
    assert!(!compiled.contains("call @") && !compiled.contains("tpush"), "{compiled}");
    assert_eq!(compiled.matches("jump rosenbrock_fwd_head(").count(), 2, "entry and one back edge:\n{compiled}");
    // Calls nest their callee's state.
    let out = ok(&["show", &example("pendulum"), "--mode", "vjp"]);
    assert!(out.contains("<the state of @accel_fwd, nested here>"), "{out}");
    let out = ok(&["show", &file, "--mode", "primal", "--asm"]);
    assert!(out.contains("machine code of @rosenbrock"), "{out}");
    // The checkpointing schedule, and a bad budget.
    let out = ok(&["show", &example("pendulum"), "--mode", "vjp", "--checkpoint", "snapshots:8"]);
    assert!(out.contains("@pendulum loop `head`: @pendulum_steps runs at most 8 segments"), "{out}");
    let out = ok(&["show", &example("pendulum"), "--mode", "vjp", "--checkpoint", "binomial:5"]);
    assert!(
        out.contains("a binomial schedule (@pendulum_revolve) with 5 snapshots over leaves of 1 iteration"),
        "{out}"
    );
    assert!(out.contains("func @pendulum_revolve_fwd"), "{out}");
    let out = ok(&["show", &example("pendulum"), "--mode", "vjp", "--checkpoint", "bytes:64KiB"]);
    assert!(out.contains("; checkpointing: a tape budget of 65536 bytes"), "{out}");
    for (bad, message) in [
        ("snapshots:0", "expected snapshots:K with K a positive integer"),
        ("binomial:65", "expected binomial:K with K snapshots, 1 to 64"),
        ("bytes:0", "expected bytes:N with N a positive number of bytes"),
        ("bytes:99999999999GiB", "expected bytes:N"),
    ] {
        let o = jitdiff(&["show", &example("pendulum"), "--mode", "vjp", "--checkpoint", bad]);
        assert_eq!(o.status.code(), Some(1));
        assert!(stderr(&o).contains(message), "{}", stderr(&o));
    }
}

#[test]
fn bench_writes_table_csv_json_and_plot() {
    let dir = scratch("bench");
    let out = ok(&[
        "bench",
        &example("rosenbrock"),
        "--fn",
        "rosenbrock",
        "--sizes",
        "10,100",
        "--quick",
        "--out",
        dir.to_str().unwrap(),
    ]);
    for header in ["primal", "JVP W=8", "val&grad", "FD grad", "FD/VG"] {
        assert!(out.contains(header), "no {header:?} in\n{out}");
    }
    let rows: Vec<&str> =
        out.lines().filter(|l| l.trim_start().starts_with("10 ") || l.trim_start().starts_with("100 ")).collect();
    assert_eq!(rows.len(), 2, "{out}");
    let csv = std::fs::read_to_string(dir.join("bench_rosenbrock.csv")).unwrap();
    assert_eq!(csv.lines().count(), 3, "{csv}");
    assert!(csv.lines().nth(2).unwrap().starts_with("100,100,"), "{csv}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("bench_rosenbrock.json")).unwrap()).unwrap();
    let json_rows = json["rows"].as_array().unwrap();
    assert_eq!(json_rows.len(), 2);
    for r in json_rows {
        for key in ["primal_s", "jvp_s", "jvp8_s", "value_and_grad_s", "fd_s"] {
            assert!(r[key].as_f64().is_some_and(|t| t > 0.0 && t < 1.0), "{key} in {r}");
        }
    }
    // Central FD on n = 100 costs 200 primal calls: far more than one gradient.
    assert!(json_rows[1]["fd_s"].as_f64() > json_rows[1]["value_and_grad_s"].as_f64());
    let svg = std::fs::read_to_string(dir.join("bench_rosenbrock.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("value_and_grad") && svg.contains("problem size n"), "{svg:.200}");
}

#[test]
fn report_writes_markdown_with_ratios_and_the_machine() {
    let path = scratch("report").join("perf.md");
    ok(&["report", "--quick", "--only", "rosenbrock n=10", "--out", path.to_str().unwrap()]);
    let md = std::fs::read_to_string(&path).unwrap();
    assert!(md.starts_with("# Performance report"), "{md}");
    assert!(md.contains("Machine: ") && md.contains("rustc"), "{md}");
    let row = md.lines().find(|l| l.starts_with("| rosenbrock n=10 | 10 |")).unwrap_or_else(|| panic!("{md}"));
    // Rosenbrock has a hand-written gradient, and jitdiff's agrees with it.
    assert!(!row.contains("n/a"), "{row}");
    // A row in each table: ratios, times, break-even.
    assert!(md.lines().filter(|l| l.starts_with("| rosenbrock n=10 |")).count() == 3, "{md}");
    assert!(md.contains("## Break-even") && md.contains("calls to repay vs FD"), "{md}");
}

#[test]
fn demo_runs_with_no_arguments() {
    let out = ok(&[]);
    for needle in
        ["Extended Rosenbrock, n = 1000", "agree bit for bit: yes", "|grad f| =", "max |AD - FD| =", "AD is", "descent"]
    {
        assert!(out.contains(needle), "no {needle:?} in\n{out}");
    }
    let first = number_after(&out, "f by iteration — 0:");
    let last: f64 = out.trim_end().rsplit(": ").next().unwrap().parse().unwrap();
    assert!(last < first / 100.0, "descent from {first} to {last}");
}

#[test]
fn bad_input_gives_a_clear_message_and_exit_status_1() {
    let rosen = example("rosenbrock");
    let err = fails(&["run", "no/such/file.ir", "--args", "[1]"]);
    assert!(err.contains("cannot read no/such/file.ir"), "{err}");

    let dir = scratch("bad");
    let malformed = dir.join("malformed.ir");
    std::fs::write(&malformed, "func @f(x: f64) -> f64 {\nentry:\n    y = fmul x, z\n    ret y\n}\n").unwrap();
    let err = fails(&["check", malformed.to_str().unwrap()]);
    assert!(err.contains(&format!("{}:3:17: unknown value `z`", malformed.display())), "{err}");
    let ill_typed = dir.join("ill_typed.ir");
    std::fs::write(&ill_typed, "func @f(x: f64) -> f64 {\nentry:\n    ret x, x\n}\n").unwrap();
    let err = fails(&["grad", ill_typed.to_str().unwrap(), "--args", "1"]);
    assert!(err.contains(&format!("{}:3:5:", ill_typed.display())), "{err}");

    let err = fails(&["grad", &rosen, "--fn", "nope", "--args", "[1]"]);
    assert!(err.contains("no function @nope in") && err.contains("it defines @rosenbrock"), "{err}");
    let err = fails(&["run", &rosen, "--args", "[1]", "[2]"]);
    assert!(err.contains("@rosenbrock(x: slice) -> f64 takes 1 argument(s), but --args gave 2"), "{err}");
    let err = fails(&["jacobian", &rosen]);
    assert!(err.contains("takes 1 argument(s), but --args gave 0"), "{err}");
    let err = fails(&["run", &rosen, "--args", "1.5"]);
    assert!(err.contains("argument 0 (x: slice)") && err.contains("write [1, 2, 3] or @file"), "{err}");
    let err = fails(&["run", &example("pendulum"), "--args", "[1,2,3]", "1", "0", "0.01", "ten"]);
    assert!(err.contains("argument 4 (steps: i64): cannot read \"ten\" as an integer"), "{err}");
    let err = fails(&["grad", &example("pendulum"), "--args", "[1,2,3]", "1", "0", "0.01", "5", "--wrt", "steps"]);
    assert!(err.contains("only f64 and slice parameters can be differentiated"), "{err}");
    let err = fails(&["jvp", &rosen, "--args", "[1,2]", "--width", "3"]);
    assert!(err.contains("width must be 1, 2, 4, 8 or 16"), "{err}");
    let err = fails(&["bench", &rosen, "--sizes", "10,x"]);
    assert!(err.contains("--sizes"), "{err}");
    // A run-time fault in native code is an error too.
    let err = fails(&[
        "run",
        &example("gmm"),
        "--fn",
        "main_term",
        "--args",
        "[1]",
        "[1]",
        "[1]",
        "[1]",
        "[1]",
        "[1]",
        "5",
        "5",
        "5",
    ]);
    assert!(err.contains("out of bounds"), "{err}");
}

/// Inputs that are not IR files, and sizes no machine holds, are clean errors (exit 1): a
/// device that never ends, a binary, a directory, an `@file` argument that is binary, and
/// `bench --sizes` past what fits in memory (once an abort and a capacity-overflow panic).
/// `-` reads standard input.
#[test]
fn unreadable_inputs_and_huge_sizes_are_errors_and_dash_is_stdin() {
    let exe = env!("CARGO_BIN_EXE_jitdiff");
    let rosenbrock_file = example("rosenbrock");
    let cases: [(&[&str], &str); 6] = [
        (&["run", "/dev/zero"], "larger than 256 MiB"),
        (&["run", exe], "not UTF-8 text"),
        (&["run", env!("CARGO_MANIFEST_DIR")], "is a directory"),
        (&["run", &rosenbrock_file, "--args", &format!("@{exe}")], "not UTF-8 text"),
        (&["bench", &rosenbrock_file, "--sizes", "100000000000"], "too large; bench takes sizes up to 10000000"),
        (&["bench", &rosenbrock_file, "--sizes", "10,18446744073709551615"], "18446744073709551615 is too large"),
    ];
    for (args, needle) in cases {
        let err = fails(args);
        assert!(err.contains(needle), "jitdiff {args:?}: {err}");
    }
    let mut child = Command::new(exe)
        .args(["run", "-", "--args", X_TEXT])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(std::fs::read(&rosenbrock_file).unwrap().as_slice()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!((number_after(&stdout(&out), "result 0:") - rosenbrock(&X)).abs() < 1e-12);
}

/// A `.rs` file is Rust source for the front end: its last function is the default, and a
/// construct outside the subset is an error at the file's line and column.
#[test]
fn rust_source_files_are_differentiated_like_ir_files() {
    let model = format!("{}/../examples/models/logistic.rs", env!("CARGO_MANIFEST_DIR"));
    let out = ok(&["grad", &model, "--args", "[0.5, -0.5]", "[1, 2, 3, 4]", "[1, -1]", "2", "2", "0.01", "--wrt", "w"]);
    // z = x w = (-0.5, -0.5); the margins -y z are (0.5, -0.5), so
    // d/dw0 = (sigma(0.5) * (-1 * 1) + sigma(-0.5) * (1 * 3)) / 2 + 0.01 * 0.5.
    let sigma = |z: f64| 1.0 / (1.0 + (-z).exp());
    let want = (-sigma(0.5) + 3.0 * sigma(-0.5)) / 2.0 + 0.005;
    let got = number_after(&out, "w[0] =");
    assert!((got - want).abs() <= 1e-12, "{got} vs {want}\n{out}");
    let dir = scratch("rust-source");
    let bad = dir.join("bad.rs");
    std::fs::write(&bad, "fn f(x: f64, n: i64) -> f64 {\n    x + n\n}\n").unwrap();
    let err = fails(&["grad", bad.to_str().unwrap(), "--args", "1.0", "2"]);
    assert!(err.contains("bad.rs:2:9: mismatched types") && err.contains("add `as f64`"), "{err}");
}

/// A Rust model with nested gradients: `show` prints the declared derivatives as derived,
/// `--asm` compiles them, and `grad` differentiates through them.
#[test]
fn show_and_grad_go_through_nested_gradients() {
    let model = format!("{}/../gradbench/models/saddle.rs", env!("CARGO_MANIFEST_DIR"));
    let out = ok(&["show", &model, "--fn", "inner_grad"]);
    for needle in [
        "call @f__grad_forward_2_3(",
        "the derivatives it declares (nested AD)",
        "func @f__grad_forward_2_3(p1x: f64, p1y: f64, p2x: f64, p2y: f64) -> f64, f64 {",
        "func @f__grad_reverse_2_3(",
    ] {
        assert!(out.contains(needle), "no {needle:?} in\n{out}");
    }
    let out = ok(&["show", &model, "--fn", "inner_grad", "--asm"]);
    assert!(out.contains("machine code of @f__grad_reverse_2_3"), "{out}");
    // max over p2 of f(p1, p2) is |p1|², whose gradient is 2 p1.
    let out = ok(&["grad", &model, "--fn", "max_f", "--args", "0.5", "0.25", "1.0", "1.0", "true"]);
    assert!(out.contains("p1x = 1.0") && out.contains("p1y = 0.5"), "{out}");
}

/// A run-time fault names the IR text's line and column in `run` as in `grad`, and an empty
/// gradient has norm +0.
#[test]
fn run_and_grad_faults_name_the_line() {
    let dir = scratch("fault-line");
    let file = dir.join("oob.ir");
    std::fs::write(&file, "func @f(x: slice) -> f64 {\nentry:\n    i = iconst 5\n    v = load x, i\n    ret v\n}\n")
        .unwrap();
    let file = file.to_str().unwrap();
    for command in [&["run"][..], &["run", "--interp"], &["grad"]] {
        let err = fails(&[command, &[file, "--args", "[1, 2]"]].concat());
        assert!(err.contains("index 5 out of bounds") && err.contains("line 4, column 5"), "{command:?}: {err}");
    }
    let out = ok(&["grad", &example("rosenbrock"), "--args", "[]"]);
    assert!(out.contains("gradient (0 entries, norm 0.000000e0)"), "{out}");
}

/// A Rust source file's fault names its line and column there, in `run` and `grad`.
#[test]
fn rust_file_faults_name_the_source_line() {
    let dir = scratch("rust-fault-line");
    let file = dir.join("f.rs");
    std::fs::write(&file, "fn f(x: &[f64], n: i64) -> f64 {\n    let m = 10 / n;\n    x[3] * (m as f64)\n}\n").unwrap();
    let file = file.to_str().unwrap();
    for command in [&["run"][..], &["run", "--interp"], &["grad"]] {
        let err = fails(&[command, &[file, "--args", "[1, 2]", "0"]].concat());
        assert!(err.contains("integer division by zero at line 2, column 16"), "{command:?}: {err}");
        let err = fails(&[command, &[file, "--args", "[1, 2]", "1"]].concat());
        assert!(err.contains("index 3 out of bounds") && err.contains("line 3, column 5"), "{command:?}: {err}");
    }
    // `bench` at size 1: x = [x0], n = 1.
    let out = dir.join("bench");
    let err = fails(&["bench", file, "--sizes", "1", "--quick", "--out", out.to_str().unwrap()]);
    assert!(err.contains("index 3 out of bounds") && err.contains("line 3, column 5"), "bench: {err}");
}
