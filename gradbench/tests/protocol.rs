//! The tool as GradBench drives it: protocol messages on stdin, one response per line on
//! stdout. Each implemented eval gets one small input, its derivative checked against a closed
//! form or central differences of the tool's own primal.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{Value, json};

struct Session {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl Session {
    fn start() -> Session {
        let mut child = Command::new(env!("CARGO_BIN_EXE_jitdiff-gradbench"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("the tool starts");
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        Session { child, stdin, stdout, next_id: 0 }
    }

    fn raw(&mut self, line: &str) -> Value {
        let stdin = self.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{line}").expect("write");
        stdin.flush().expect("flush");
        let mut response = String::new();
        self.stdout.read_line(&mut response).expect("read");
        serde_json::from_str(&response).unwrap_or_else(|e| panic!("response {response:?}: {e}"))
    }

    fn send(&mut self, mut message: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        message["id"] = json!(id);
        let response = self.raw(&message.to_string());
        assert_eq!(response["id"], json!(id), "{response}");
        response
    }

    fn define(&mut self, module: &str) -> Value {
        self.send(json!({ "kind": "define", "module": module }))
    }

    fn evaluate(&mut self, module: &str, function: &str, input: Value) -> Value {
        let r = self.send(json!({ "kind": "evaluate", "module": module, "function": function, "input": input }));
        assert_eq!(r["success"], json!(true), "{module}.{function}: {r}");
        r
    }

    fn output(&mut self, module: &str, function: &str, input: Value) -> Value {
        self.evaluate(module, function, input)["output"].clone()
    }

    fn scalar(&mut self, module: &str, function: &str, input: Value) -> f64 {
        self.output(module, function, input).as_f64().expect("a number")
    }

    /// Ends the session (EOF) and returns the exit status.
    fn finish(mut self) -> std::process::ExitStatus {
        drop(self.stdin.take());
        self.child.wait().expect("exit")
    }
}

fn floats(v: &Value) -> Vec<f64> {
    match v {
        Value::Array(items) => items.iter().flat_map(floats).collect(),
        other => vec![other.as_f64().expect("a number")],
    }
}

fn assert_close(got: &[f64], want: &[f64], tol: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= tol * (1.0 + w.abs()), "{what}[{i}]: got {g}, want {w}");
    }
}

/// Central differences of `module.function` (a scalar) with respect to the numbers at the
/// given JSON pointers of `input`, in order.
fn central(s: &mut Session, module: &str, function: &str, input: &Value, pointers: &[String]) -> Vec<f64> {
    let h = 1e-6;
    pointers
        .iter()
        .map(|p| {
            let x = input.pointer(p).and_then(Value::as_f64).expect("a number at the pointer");
            let mut plus = input.clone();
            *plus.pointer_mut(p).expect("pointer") = json!(x + h);
            let mut minus = input.clone();
            *minus.pointer_mut(p).expect("pointer") = json!(x - h);
            (s.scalar(module, function, plus) - s.scalar(module, function, minus)) / (2.0 * h)
        })
        .collect()
}

/// Pointers to every number under `field` (a nested array), row by row.
fn pointers(input: &Value, field: &str) -> Vec<String> {
    fn walk(v: &Value, at: String, out: &mut Vec<String>) {
        match v {
            Value::Array(items) => items.iter().enumerate().for_each(|(i, x)| walk(x, format!("{at}/{i}"), out)),
            _ => out.push(at),
        }
    }
    let mut out = Vec::new();
    walk(&input[field], format!("/{field}"), &mut out);
    out
}

#[test]
fn hello_start_define_evaluate_and_eof() {
    let mut s = Session::start();
    let r = s.send(json!({ "kind": "start", "eval": "hello" }));
    assert_eq!(r["tool"], json!("jitdiff"));
    let r = s.define("hello");
    assert_eq!(r["success"], json!(true), "{r}");
    assert_eq!(r["timings"][0]["name"], json!("compile"));
    assert_eq!(s.scalar("hello", "square", json!(3.0)), 9.0);
    let r = s.evaluate("hello", "double", json!(3.0));
    assert_eq!(r["output"], json!(6.0));
    assert_eq!(r["timings"].as_array().expect("timings").len(), 1);
    assert_eq!(s.send(json!({ "kind": "analysis", "of": 3, "valid": true })).as_object().map(|o| o.len()), Some(1));
    assert_eq!(s.send(json!({ "kind": "end" }))["success"], Value::Null);
    assert!(s.finish().success());
}

#[test]
fn bad_messages_and_unknown_evals_are_errors_not_crashes() {
    let mut s = Session::start();
    assert_eq!(s.raw("not json")["success"], json!(false));
    assert_eq!(s.raw("[1, 2]")["success"], json!(false));
    {
        let stdin = s.stdin.as_mut().expect("stdin");
        stdin.write_all(b"{\"id\": \"\xff\"}\n").expect("write");
        stdin.flush().expect("flush");
        let mut line = String::new();
        s.stdout.read_line(&mut line).expect("read");
        assert!(line.starts_with("{\"id\""), "a non-UTF-8 line is answered: {line}");
    }
    let r = s.send(json!({ "kind": "evaluate", "module": "llsq", "function": "primal", "input": {} }));
    assert!(r["error"].as_str().expect("error").contains("not been defined"), "{r}");
    let r = s.define("nonesuch");
    assert_eq!(r["success"], json!(false), "{r}");
    assert!(r["error"].as_str().expect("error").contains("nonesuch"), "{r}");
    assert_eq!(s.define("llsq")["success"], json!(true));
    for input in [json!({ "x": [1.0] }), json!({ "x": "a", "n": 3 }), json!({ "x": [1.0], "n": -1 }), json!(7)] {
        let r = s.send(json!({ "kind": "evaluate", "module": "llsq", "function": "gradient", "input": input }));
        assert_eq!(r["success"], json!(false), "{r}");
    }
    let r =
        s.send(json!({ "kind": "evaluate", "module": "llsq", "function": "hessian", "input": { "x": [1.0], "n": 3 } }));
    assert!(r["error"].as_str().expect("error").contains("hessian"), "{r}");
    // Sizes that would overflow or exhaust memory are refused, not attempted.
    let huge = [
        ("det", json!({ "A": [1.0], "ell": 4_294_967_296u64 })),
        (
            "ba",
            json!({ "n": 1u64 << 60, "m": 1, "p": 1, "cam": vec![0.0; 11], "x": [0.0, 0.0, 0.0], "w": 1.0, "feat": [0.0, 0.0] }),
        ),
        (
            "gmm",
            json!({ "d": 1u64 << 40, "k": 1, "n": 1, "m": 0, "gamma": 1.0, "alpha": [0.0], "mu": [], "q": [], "l": [], "x": [] }),
        ),
    ];
    for (module, input) in huge {
        assert_eq!(s.define(module)["success"], json!(true));
        let function = if module == "det" { "gradient" } else { "jacobian" };
        let r = s.send(json!({ "kind": "evaluate", "module": module, "function": function, "input": input }));
        assert_eq!(r["success"], json!(false), "{r}");
    }
    assert!(s.finish().success());
}

#[test]
fn repetition_honours_min_runs() {
    let mut s = Session::start();
    s.define("lse");
    let r = s.evaluate("lse", "gradient", json!({ "x": [1.0, 2.0], "min_runs": 5, "min_seconds": 0.0 }));
    let timings = r["timings"].as_array().expect("timings");
    assert_eq!(timings.len(), 5);
    assert!(timings.iter().all(|t| t["name"] == json!("evaluate")));
}

#[test]
fn llsq_lse_and_ode_match_closed_forms() {
    let mut s = Session::start();
    // llsq: the gradient is -Σ_i r_i t_i^j with residuals r_i = s(t_i) - Σ_j x_j t_i^j.
    s.define("llsq");
    let (x, n) = ([0.3, -0.2, 0.7, 0.1], 7usize);
    let mut want = [0.0; 4];
    let mut f = 0.0;
    for i in 0..n {
        let t = -1.0 + 2.0 * i as f64 / (n - 1) as f64;
        let sign = if t > 0.0 {
            1.0
        } else if t < 0.0 {
            -1.0
        } else {
            0.0
        };
        let r = sign - (0..4).map(|j| x[j] * t.powi(j as i32)).sum::<f64>();
        f += 0.5 * r * r;
        for (j, w) in want.iter_mut().enumerate() {
            *w -= r * t.powi(j as i32);
        }
    }
    assert_close(&[s.scalar("llsq", "primal", json!({ "x": x, "n": n }))], &[f], 1e-12, "llsq primal");
    assert_close(&floats(&s.output("llsq", "gradient", json!({ "x": x, "n": n }))), &want, 1e-12, "llsq");

    // lse: the gradient is softmax(x).
    s.define("lse");
    let x: [f64; 4] = [0.5, -1.0, 2.0, 0.25];
    let z: f64 = x.iter().map(|v| v.exp()).sum();
    assert_close(&[s.scalar("lse", "primal", json!({ "x": x }))], &[z.ln()], 1e-12, "lse primal");
    let want: Vec<f64> = x.iter().map(|v| v.exp() / z).collect();
    assert_close(&floats(&s.output("lse", "gradient", json!({ "x": x }))), &want, 1e-12, "lse");
    // Long enough for the loops' fast copies (and the copies at their edges), the maximum in the
    // middle and a second element equal to it.
    let x: Vec<f64> = (0..1000).map(|k| ((k as f64) * 0.37).sin() * 3.0 - if k == 500 { -5.0 } else { 0.0 }).collect();
    let top = x.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let mut x = x;
    x[700] = top;
    let z: f64 = x.iter().map(|v| (v - top).exp()).sum();
    assert_close(&[s.scalar("lse", "primal", json!({ "x": x }))], &[z.ln() + top], 1e-12, "lse primal, n = 1000");
    let want: Vec<f64> = x.iter().map(|v| (v - top).exp() / z).collect();
    assert_close(&floats(&s.output("lse", "gradient", json!({ "x": x }))), &want, 1e-12, "lse, n = 1000");

    // ode: y_{n-1}(2) = Π x_i 2^n / n! exactly (RK4 integrates cubics exactly for n = 3).
    s.define("ode");
    let x = [0.9, 1.3, 0.6];
    let y_last = x.iter().product::<f64>() * 8.0 / 6.0;
    let primal = floats(&s.output("ode", "primal", json!({ "x": x, "s": 4 })));
    assert_close(&primal, &[x[0] * 2.0, x[0] * x[1] * 2.0, y_last], 1e-12, "ode primal");
    let want: Vec<f64> = x.iter().map(|v| y_last / v).collect();
    assert_close(&floats(&s.output("ode", "gradient", json!({ "x": x, "s": 4 }))), &want, 1e-12, "ode");
}

#[test]
fn gmm_gradient_matches_central_differences() {
    let mut s = Session::start();
    assert_eq!(s.define("gmm")["success"], json!(true));
    let input = json!({
        "d": 3, "k": 2, "n": 4, "m": 0, "gamma": 1.0,
        "alpha": [0.2, -0.4],
        "mu": [[0.1, 0.5, -0.3], [0.7, -0.2, 0.4]],
        "q": [[0.05, -0.1, 0.2], [0.3, 0.0, -0.25]],
        "l": [[0.1, -0.2, 0.3], [0.05, 0.15, -0.1]],
        "x": [[0.3, 0.1, -0.2], [0.9, -0.4, 0.5], [-0.6, 0.8, 0.0], [0.2, 0.2, 0.2]],
    });
    let out = s.output("gmm", "jacobian", input.clone());
    for (field, rows, cols) in [("alpha", 2, 0), ("mu", 2, 3), ("q", 2, 3), ("l", 2, 3)] {
        let got = &out[field];
        assert_eq!(got.as_array().map(Vec::len), Some(rows), "{field}: {got}");
        if cols > 0 {
            assert_eq!(got[0].as_array().map(Vec::len), Some(cols), "{field}: {got}");
        }
        let want = central(&mut s, "gmm", "objective", &input, &pointers(&input, field));
        assert_close(&floats(got), &want, 1e-6, field);
    }
}

#[test]
fn lstm_gradient_matches_central_differences() {
    let mut s = Session::start();
    assert_eq!(s.define("lstm")["success"], json!(true));
    // l = 2 layers, b = 2 bits, c = 4 characters.
    let input = json!({
        "main_params": [[0.1, -0.2, 0.3, 0.4, 0.5, -0.6, 0.7, 0.8], [0.05, 0.1, -0.15, 0.2, 0.25, 0.3, -0.35, 0.4],
                        [-0.3, 0.2, 0.1, 0.6, -0.5, 0.4, 0.3, 0.2], [0.15, -0.05, 0.25, 0.1, -0.2, 0.3, 0.05, 0.1]],
        "extra_params": [[0.9, -0.8], [0.7, 0.6], [-0.1, 0.2]],
        "state": [[0.1, 0.2], [0.3, -0.1], [-0.2, 0.4], [0.0, 0.1]],
        "sequence": [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.0, 0.0]],
    });
    let got = floats(&s.output("lstm", "jacobian", input.clone()));
    let mut ptrs = pointers(&input, "main_params");
    ptrs.extend(pointers(&input, "extra_params"));
    let want = central(&mut s, "lstm", "objective", &input, &ptrs);
    assert_close(&got, &want, 1e-6, "lstm");
}

#[test]
fn kmeans_direction_is_centroid_minus_cluster_mean() {
    let mut s = Session::start();
    assert_eq!(s.define("kmeans")["success"], json!(true));
    let points: [[f64; 2]; 5] = [[0.0, 0.0], [1.0, 0.5], [4.0, 4.0], [5.0, 3.0], [0.5, 1.0]];
    let centroids: [[f64; 2]; 2] = [[0.2, 0.3], [4.2, 3.9]];
    let input = json!({ "points": points, "centroids": centroids });
    let cost: f64 = points
        .iter()
        .map(|p| centroids.iter().map(|c| (p[0] - c[0]).powi(2) + (p[1] - c[1]).powi(2)).fold(f64::INFINITY, f64::min))
        .sum();
    assert_close(&[s.scalar("kmeans", "cost", input.clone())], &[cost], 1e-12, "kmeans cost");
    // Points 0, 1, 4 go to centroid 0; points 2, 3 to centroid 1.
    let mean0 = [(0.0 + 1.0 + 0.5) / 3.0, (0.0 + 0.5 + 1.0) / 3.0];
    let mean1 = [4.5, 3.5];
    let want = [0.2 - mean0[0], 0.3 - mean0[1], 4.2 - mean1[0], 3.9 - mean1[1]];
    let out = s.output("kmeans", "dir", input);
    assert_eq!(out.as_array().map(Vec::len), Some(2));
    assert_close(&floats(&out), &want, 1e-12, "kmeans dir");
}

#[test]
fn det_gradient_is_the_cofactor_matrix() {
    let mut s = Session::start();
    assert_eq!(s.define("det")["success"], json!(true));
    let a = [2.0, -1.0, 0.5, 1.0, 3.0, 1.5, 0.25, 1.0, 4.0];
    let minor = |r: usize, c: usize| {
        let idx: Vec<(usize, usize)> =
            (0..3).filter(|&i| i != r).flat_map(|i| (0..3).filter(move |&j| j != c).map(move |j| (i, j))).collect();
        let m: Vec<f64> = idx.iter().map(|&(i, j)| a[3 * i + j]).collect();
        m[0] * m[3] - m[1] * m[2]
    };
    let cof: Vec<f64> =
        (0..9).map(|k| if (k / 3 + k % 3) % 2 == 0 { minor(k / 3, k % 3) } else { -minor(k / 3, k % 3) }).collect();
    let det: f64 = (0..3).map(|j| a[j] * cof[j]).sum();
    let input = json!({ "A": a, "ell": 3 });
    assert_close(&[s.scalar("det", "primal", input.clone())], &[det], 1e-12, "det");
    assert_close(&floats(&s.output("det", "gradient", input)), &cof, 1e-12, "det gradient");
    // ℓ = 1 and a 4 x 4 permutation matrix (determinant -1: one swap).
    assert_eq!(s.scalar("det", "primal", json!({ "A": [5.0], "ell": 1 })), 5.0);
    let p = [0.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0];
    assert_eq!(s.scalar("det", "primal", json!({ "A": p, "ell": 4 })), -1.0);
}

#[test]
fn ba_jacobian_in_the_reference_layout_matches_central_differences() {
    let mut s = Session::start();
    assert_eq!(s.define("ba")["success"], json!(true));
    let (n, m, p) = (3usize, 4usize, 20usize);
    let input = json!({
        "n": n, "m": m, "p": p,
        "cam": [0.1, -0.2, 0.3, 1.0, 2.0, 3.0, 400.0, 0.1, 0.2, 0.01, 0.001],
        "x": [5.0, 6.0, 17.0], "w": 0.9, "feat": [10.0, 20.0],
    });
    let obj = s.output("ba", "objective", input.clone());
    assert_eq!(obj["reproj_error"]["repeated"], json!(p));
    assert_close(&[obj["w_err"]["element"].as_f64().expect("w_err")], &[1.0 - 0.81], 1e-12, "w_err");
    let jac = s.output("ba", "jacobian", input.clone());
    let rows: Vec<usize> = (0..30).map(|r| 15 * r).chain([30 * p + p]).collect();
    assert_eq!(jac["rows"], json!(rows));
    let cols0: Vec<usize> = (0..11).chain(11 * n..11 * n + 3).chain([11 * n + 3 * m]).collect();
    let mut cols = cols0.clone();
    cols.extend(&cols0);
    cols.push(11 * n + 3 * m + p - 1);
    assert_eq!(jac["cols"], json!(cols));
    // Observation 0 sees camera 0 and point 0, which stand for every replicated copy: the
    // derivative of its residual by cam[k] is that by the input's cam[k].
    let vals = floats(&jac["vals"]);
    let mut ptrs = pointers(&input, "cam");
    ptrs.extend(pointers(&input, "x"));
    ptrs.push("/w".to_string());
    for (row, elem) in [(0, 0), (1, 1)] {
        let h = 1e-6;
        let want: Vec<f64> = ptrs
            .iter()
            .map(|ptr| {
                let x = input.pointer(ptr).and_then(Value::as_f64).expect("number");
                let mut plus = input.clone();
                *plus.pointer_mut(ptr).expect("ptr") = json!(x + h);
                let mut minus = input.clone();
                *minus.pointer_mut(ptr).expect("ptr") = json!(x - h);
                let f = |s: &mut Session, v: Value| {
                    floats(&s.output("ba", "objective", v)["reproj_error"]["elements"])[elem]
                };
                (f(&mut s, plus) - f(&mut s, minus)) / (2.0 * h)
            })
            .collect();
        assert_close(&vals[15 * row..15 * row + 15], &want, 1e-5, &format!("ba row {row}"));
    }
    assert_close(&[vals[30]], &[-1.8], 1e-12, "ba weight row");
}

/// A 22-bone chain, 5 vertices, 4 triangles: small enough for central differences.
fn hand_input(complicated: bool) -> Value {
    let bones = 22;
    let translation = |k: usize| {
        let t = [0.1 * (k % 3) as f64, 0.2, -0.05 * (k % 5) as f64];
        json!([[1.0, 0.0, 0.0, t[0]], [0.0, 1.0, 0.0, t[1]], [0.0, 0.0, 1.0, t[2]], [0.0, 0.0, 0.0, 1.0]])
    };
    let parents: Vec<i64> = (0..bones as i64).map(|k| k - 1).collect();
    let verts = 5;
    let base_positions: Vec<Value> =
        (0..verts).map(|v| json!([0.3 * v as f64, 1.0 - 0.2 * v as f64, 0.1 * (v * v) as f64, 1.0])).collect();
    let weights: Vec<Vec<f64>> = (0..verts)
        .map(|v| (0..bones).map(|b| if b == (4 * v) % bones || b == (4 * v + 7) % bones { 0.5 } else { 0.0 }).collect())
        .collect();
    let theta: Vec<f64> = (0..26).map(|k| 0.05 * k as f64 - 0.4).collect();
    let us = if complicated { json!([[0.2, 0.3], [0.5, 0.1], [0.3, 0.3]]) } else { json!([]) };
    let corr = if complicated { json!([0, 3, 1]) } else { json!([4, 0, 2]) };
    json!({
        "theta": theta,
        "us": us,
        "data": {
            "model": {
                "bone_count": bones,
                "bone_names": (0..bones).map(|k| format!("b{k}")).collect::<Vec<_>>(),
                "parents": parents,
                "base_relatives": (0..bones).map(translation).collect::<Vec<_>>(),
                "inverse_base_absolutes": (0..bones).map(|k| translation(k + 1)).collect::<Vec<_>>(),
                "base_positions": base_positions,
                "weights": weights,
                "triangles": [[0, 1, 2], [1, 2, 3], [2, 3, 4], [0, 2, 4]],
                "is_mirrored": complicated,
            },
            "correspondences": corr,
            "points": [[0.1, 0.2, 0.3], [1.0, -0.5, 0.2], [0.0, 0.4, -0.3]],
        },
    })
}

#[test]
fn ht_jacobian_matches_central_differences() {
    let mut s = Session::start();
    assert_eq!(s.define("ht")["success"], json!(true));
    for complicated in [false, true] {
        let input = hand_input(complicated);
        let jac = s.output("ht", "jacobian", input.clone());
        let rows = jac.as_array().expect("rows");
        let ncols = if complicated { 28 } else { 26 };
        assert_eq!(rows.len(), 9);
        assert!(rows.iter().all(|r| r.as_array().map(Vec::len) == Some(ncols)), "{jac}");
        // Column by column, central differences of every residual.
        let h = 1e-6;
        let mut directions: Vec<Vec<String>> = Vec::new();
        if complicated {
            for k in 0..2 {
                directions.push((0..3).map(|i| format!("/us/{i}/{k}")).collect());
            }
        }
        directions.extend((0..26).map(|k| vec![format!("/theta/{k}")]));
        for (col, ptrs) in directions.iter().enumerate() {
            let shifted = |sign: f64| {
                let mut v = input.clone();
                for p in ptrs {
                    let x = v.pointer(p).and_then(Value::as_f64).expect("number");
                    *v.pointer_mut(p).expect("ptr") = json!(x + sign * h);
                }
                v
            };
            let plus = floats(&s.output("ht", "objective", shifted(1.0)));
            let minus = floats(&s.output("ht", "objective", shifted(-1.0)));
            let want: Vec<f64> = plus.iter().zip(&minus).map(|(a, b)| (a - b) / (2.0 * h)).collect();
            let got: Vec<f64> = rows.iter().map(|r| r[col].as_f64().expect("number")).collect();
            assert_close(&got, &want, 1e-6, &format!("ht column {col} (complicated: {complicated})"));
        }
    }
}

/// The nested-AD evals: every variant (outer/inner mode) reaches GradBench's expected answer
/// (its validator compares with an absolute tolerance of 1e-4; the four variants agree far more
/// closely), and unknown variants and malformed inputs are errors.
#[test]
fn particle_and_saddle_reach_the_reference_answers_in_every_mode() {
    let mut s = Session::start();
    assert_eq!(s.define("particle")["success"], json!(true));
    let mut particles = vec![];
    for variant in ["rr", "ff", "fr", "rf"] {
        let w = s.scalar("particle", variant, json!({ "w": 0.0 }));
        assert!((w - 0.2071918746486116).abs() < 1e-9, "particle {variant}: {w}");
        particles.push(w);
    }
    for (p, q) in particles.iter().zip(&particles[1..]) {
        assert!((p - q).abs() < 1e-12, "{particles:?}");
    }
    for input in [json!({ "w": "zero" }), json!({})] {
        let r = s.send(json!({ "kind": "evaluate", "module": "particle", "function": "rr", "input": input }));
        assert_eq!(r["success"], json!(false), "{r}");
    }
    assert_eq!(s.define("saddle")["success"], json!(true));
    let mut saddles = vec![];
    for variant in ["rr", "ff", "fr", "rf"] {
        let point = floats(&s.output("saddle", variant, json!({ "start": [1.0, 1.0] })));
        assert_close(&point, &[8.246324826140356e-06; 4], 1e-9, &format!("saddle {variant}"));
        saddles.push(point);
    }
    for point in &saddles[1..] {
        assert_close(point, &saddles[0], 1e-12, "saddle variants");
    }
    for (module, function, input) in
        [("saddle", "fx", json!({ "start": [1.0, 1.0] })), ("saddle", "rr", json!({ "start": [1.0] }))]
    {
        let r = s.send(json!({ "kind": "evaluate", "module": module, "function": function, "input": input }));
        assert_eq!(r["success"], json!(false), "{r}");
    }
    assert!(s.finish().success());
}
