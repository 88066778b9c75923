#!/usr/bin/env python3
"""Write docs/gradbench.md from GradBench run logs (`gradbench run -o LOG` JSONL files).

Usage: gradbench_report.py LOGDIR REPORT [--settings TEXT] [--gradbench-dir DIR]
                           [--tools "jitdiff manual adol-c jax"] [EVAL ...]
LOGDIR holds <eval>/<tool>.jsonl (and the .txt console logs scripts/gradbench.sh writes) for
the tools `jitdiff` and any of `manual`, `adol-c`, `jax`, `jax-nosync`. Times are medians of the
per-run `evaluate` timings; jitdiff's compile time is its `define` timing.
"""
import json, math, re, statistics, subprocess, sys
from datetime import datetime, timezone
from pathlib import Path

PRIMAL = {"hello": "square", "llsq": "primal", "lse": "primal", "det": "primal", "ode": "primal",
          "gmm": "objective", "lstm": "objective", "ba": "objective", "ht": "objective",
          "kmeans": "cost"}
DERIV = {"hello": ["double"], "llsq": ["gradient"], "lse": ["gradient"], "det": ["gradient"],
         "ode": ["gradient"], "gmm": ["jacobian"], "lstm": ["jacobian"], "ba": ["jacobian"],
         "ht": ["jacobian"], "kmeans": ["dir"], "particle": ["ff", "fr", "rf", "rr"],
         "saddle": ["ff", "fr", "rf", "rr"]}
LABEL = {"jitdiff": "jitdiff", "manual": "manual", "adol-c": "ADOL-C", "jax": "JAX",
         "jax-nosync": "JAX (upstream timing)", "finite": "finite"}
PEERS = ["manual", "adol-c", "jax", "jax-nosync", "finite"]


def read_log(path):
    """Messages and responses by id, and the order of the messages."""
    msgs, resps, order = {}, {}, []
    if not path.exists():
        return None
    with path.open() as f:
        for line in f:
            try:
                obj = json.loads(line)
            except json.JSONDecodeError:
                continue  # a capped run's last line
            if "message" in obj:
                msgs[obj["message"]["id"]] = obj["message"]
                order.append(obj["message"]["id"])
            elif "response" in obj:
                resps[obj["response"]["id"]] = obj["response"]
    return msgs, resps, order


def tool_results(path):
    """{'define': (ok, error, compile_ns), 'evals': {(function, size): dict}, 'sizes': [...]}."""
    log = read_log(path)
    if log is None:
        return None
    msgs, resps, order = log
    valid = {m["of"]: (m["valid"], m.get("error")) for m in msgs.values() if m["kind"] == "analysis"}
    out = {"define": None, "evals": {}, "sizes": []}
    for mid in order:
        m, r = msgs[mid], resps.get(mid)
        if m["kind"] == "define":
            if r is None:
                out["define"] = (False, "no response (capped)", None)
            else:
                ns = [t["nanoseconds"] for t in r.get("timings") or [] if t["name"] == "compile"]
                out["define"] = (bool(r.get("success")), r.get("error"), ns[0] if ns else None)
        elif m["kind"] == "evaluate":
            size = m.get("description") or "-"
            if size not in out["sizes"]:
                out["sizes"].append(size)
            entry = {"status": "capped", "median": None, "runs": 0, "valid": None, "error": None,
                     "other": None}
            if r is not None:
                ts = [t["nanoseconds"] for t in r.get("timings") or [] if t["name"] == "evaluate"]
                v = valid.get(mid)
                other = sum(t["nanoseconds"] for t in r.get("timings") or [] if t["name"] != "evaluate")
                entry = {"status": "ok" if r.get("success") else "failed",
                         "median": statistics.median(ts) if ts else None, "runs": len(ts),
                         "other": other or None,
                         "valid": None if v is None else v[0],
                         "error": (v[1] if v and not v[0] else None) or r.get("error")}
            out["evals"][(m["function"], size)] = entry
    return out


def fmt_ns(ns):
    if ns is None:
        return "–"
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if ns >= scale:
            return f"{ns / scale:.3g} {unit}"
    return f"{ns:.0f} ns"


def short(text, limit=120):
    text = re.sub(r"/[A-Za-z0-9_.+-]+(/[A-Za-z0-9_.+-]+)+", "<path>", text or "")
    return text.replace("|", "/").replace("\n", " ")[:limit]


def finished(e):
    return e is not None and e["status"] == "ok" and e["median"]


def time_cell(e):
    if e is None or e["status"] == "capped":
        return "not run"
    if e["status"] == "failed":
        return "failed"
    return fmt_ns(e["median"])


def valid_mark(e):
    if e is None or e["status"] == "capped":
        return "–"
    if e["status"] == "failed":
        return "✗"
    return {True: "✓", False: "✗", None: "?"}[e["valid"]]


def fmt_ratio(r):
    return f"{r:.2f}" if r >= 0.1 else f"{r:.2g}"


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def sh(cmd, cwd=None, strip=True):
    try:
        out = subprocess.run(cmd, shell=True, capture_output=True, text=True, cwd=cwd,
                             timeout=60).stdout
        return out.strip() if strip else out.rstrip("\n")
    except Exception:
        return ""


def versions(tools, gb_dir, root):
    out = []
    head = sh("git rev-parse --short=12 HEAD", root)
    dirty = sh("git status --porcelain -- . ':!docs' ':!scripts'", root)
    out.append(f"jitdiff: this repository at `{head or '?'}`"
               + (" with uncommitted changes" if dirty else "")
               + f", {sh('rustc --version') or 'rustc ?'}, release build")
    cxx = sh("c++ --version | head -1")
    if "manual" in tools:
        out.append(f"manual: GradBench's `tools/manual` at the commit above, {cxx or 'c++ ?'}")
    if "finite" in tools:
        out.append(f"finite: GradBench's `tools/finite` (central differences of the C++ primal) at the "
                   f"commit above, {cxx or 'c++ ?'}")
    if "adol-c" in tools:
        ver = sh("dpkg-query -W -f '${Version}' libadolc-dev 2>/dev/null") or sh(
            "grep -h 'define ADOLC_VERSION\\|define ADOLC_SUBVERSION\\|define ADOLC_PATCHLEVEL' "
            "/usr/include/adolc/internal/adolc_settings.h | awk '{print $3}' | paste -sd.")
        out.append(f"ADOL-C: {ver or '?'} (Debian package `libadolc-dev`), GradBench's "
                   f"`tools/adol-c`, {cxx or 'c++ ?'}")
    if "jax" in tools or "jax-nosync" in tools:
        ver = sh("python3 -c 'import jax, jaxlib; print(jax.__version__, jaxlib.__version__)'")
        jv = ver.split() if ver else ["?", "?"]
        out.append(f"JAX: jax {jv[0]}, jaxlib {jv[-1]} (PyPI, CPU), GradBench's `tools/jax`, "
                   f"{sh('python3 --version') or 'python ?'}")
    return out


def run_times(logdir, evals, tools):
    """(first start, last end, sum of per-eval walls) from the .txt console logs."""
    walls, starts, ends = 0, [], []
    for ev in evals:
        for t in tools:
            p = logdir / ev / f"{t}.txt"
            if not p.exists():
                continue
            m = re.findall(r"rc=(-?\d+) wall=(\d+)s", p.read_text(errors="replace"))
            if m:
                w = int(m[-1][1])
                walls += w
                end = p.stat().st_mtime
                ends.append(end)
                starts.append(end - w)
    if not starts:
        return None
    f = lambda t: datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return f(min(starts)), f(max(ends)), walls, max(ends) - min(starts)


def main():
    args = sys.argv[1:]
    opts = {"--settings": "", "--gradbench-dir": None, "--tools": None}
    for k in list(opts):
        if k in args:
            i = args.index(k)
            opts[k] = args[i + 1]
            del args[i:i + 2]
    logdir, report, evals = Path(args[0]), Path(args[1]), args[2:] or list(DERIV)
    root = Path(__file__).resolve().parent.parent
    tools = (opts["--tools"] or "").split() or [
        t for t in ["jitdiff"] + PEERS if any((logdir / ev / f"{t}.jsonl").exists() for ev in evals)]
    peers = [t for t in PEERS if t in tools]
    gb_dir = opts["--gradbench-dir"]
    cpu = sh("grep -m1 'model name' /proc/cpuinfo | cut -d: -f2")
    ncpu = sh("nproc")
    gb_commit, gb_local = "?", ""
    if gb_dir:
        gb_commit = sh("git log -1 --format='%h (%cs)' --abbrev=12", gb_dir) or "?"
        changed = sh("git status --porcelain --untracked-files=no", gb_dir, strip=False).splitlines()
        if changed:
            gb_local = ("; files differing from that commit in the checkout: "
                        + ", ".join(f"`{c[3:]}` ({'deleted' if c[:2].strip() == 'D' else 'modified'})"
                                    for c in changed))
    times = run_times(logdir, evals, tools)

    results = {ev: {t: tool_results(logdir / ev / f"{t}.jsonl") for t in tools} for ev in evals}

    def implements(r):
        return r is not None and r["define"] is not None and r["define"][0]

    names = ", ".join(LABEL[t] for t in tools)
    lines = [
        "# GradBench: jitdiff against " + (", ".join(LABEL[p] for p in peers[:-1]) + " and " + LABEL[peers[-1]]
                                           if len(peers) > 1 else LABEL[peers[0]] if peers else "nothing"),
        "",
        "[GradBench](https://github.com/gradbench/gradbench)'s evals run against `jitdiff-gradbench`",
        "(`gradbench/`: each eval's functions as plain Rust in jitdiff's subset, `gradbench/models/`,",
        "differentiated by jitdiff's handles) and GradBench's own tools, through the GradBench CLI",
        "without Docker: `manual` (hand-written C++ derivatives, `-O3 -march=native`), `adol-c`",
        "(operator-overloading tape, C++), `jax` (Python, `jax.jit`, CPU) and `finite` (central",
        "differences of a C++ primal: the only GradBench tool here with `particle` and `saddle`,",
        "which `manual` leaves out). Regenerate with",
        "`GRADBENCH_DIR=... VENV=... scripts/gradbench.sh` (see the script's header).",
        "",
        f"- Tools in this run: {names}. All ran in one sitting, one process at a time (for each eval,"
        " the tools one after the other)" + (f", {times[0]} to {times[1]} ({times[3] / 60:.0f} min"
                                             f" wall, {times[2]} s inside the evals)" if times else "") + ".",
        f"- GradBench: upstream commit `{gb_commit}`{gb_local}.",
    ]
    lines += [f"- {v}." for v in versions(tools, gb_dir, root)]
    lines += [
        f"- Machine: {cpu or 'unknown CPU'}, {ncpu or '?'} cores, shared with other work (another"
        " engineer's builds and tests may have run at the same time), so absolute times are noisy"
        " and the ratios (same sitting) are the better guide; every tool's timed runs"
        " single-threaded (jitdiff compiles in `define` on all cores; the jax tool pins itself"
        " to CPU 0).",
        f"- Settings: {opts['--settings']}.",
        "",
        "Times are medians of the per-run times of the derivative function (the eval repeats each",
        "evaluation until `--min-seconds` have passed; tape recording, JIT compilation in `define`,",
        "JSON and input conversion are outside these runs, see below). *jitdiff/X* = jitdiff's",
        "time / X's time: **lower is better for jitdiff** (below 1: jitdiff faster). *valid*:",
        "GradBench's validator on each tool's output (it compares with `manual`, tolerance 1e-4;",
        "for particle and saddle with the answers stored in the eval),",
        "in the order " + " / ".join(LABEL[t] for t in tools) + "; ✓ valid, ✗ invalid or failed,",
        "? finished, but the cap ended the run before the validator's answer, – not run or not",
        "implemented. *not run*: the tool did not finish that size within the",
        "per-eval cap (the eval runs sizes in ascending order; a capped run keeps the sizes it",
        "finished). *failed*: the tool answered with an error.",
        "",
        "## Summary",
        "",
        "Geometric mean of the per-size ratios over the sizes **every** tool that implements the",
        "eval finished (the *sizes* column; the other sizes are in the tables below).",
        "",
        "| eval | sizes | " + " | ".join(f"jitdiff/{LABEL[p]}" for p in peers)
        + " | valid (" + " / ".join(LABEL[t] for t in tools) + ") |",
        "|---|---:|" + "---:|" * len(peers) + "---|",
    ]
    pair_lines = [
        "",
        "The same ratios over the sizes each pair finished (number of sizes in parentheses):",
        "",
        "| eval | " + " | ".join(f"jitdiff/{LABEL[p]}" for p in peers) + " |",
        "|---|" + "---:|" * len(peers),
    ]
    details, notes = [], []
    for ev in evals:
        res = results[ev]
        jd = res.get("jitdiff")
        impl = [t for t in tools if implements(res.get(t))]
        for t in tools:
            r = res.get(t)
            if r is None:
                continue
            if not implements(r):
                err = (r["define"] or (False, "no response to define", None))[1]
                notes.append(f"- **{ev}** / {LABEL[t]}: {short(err, 300) or 'define failed'}")
        if not impl:
            continue
        sizes = []
        for t in impl:
            for s in res[t]["sizes"]:
                if s not in sizes:
                    sizes.append(s)
        deriv = DERIV[ev]
        get = lambda t, d, s: res[t]["evals"].get((d, s)) if t in impl else None
        # summary
        common = [(d, s) for s in sizes for d in deriv if all(finished(get(t, d, s)) for t in impl)]
        cells = []
        for p in peers:
            if "jitdiff" in impl and p in impl and common:
                g = geomean([get("jitdiff", d, s)["median"] / get(p, d, s)["median"] for d, s in common])
                cells.append(fmt_ratio(g))
            else:
                cells.append("–")
        vsum = []
        for t in tools:
            if t not in impl:
                vsum.append("n/a" if res.get(t) is not None else "not run")
                continue
            es = [get(t, d, s) for s in sizes for d in deriv]
            ok = sum(1 for e in es if e and e["status"] == "ok" and e["valid"])
            bad = sum(1 for e in es if e and (e["status"] == "failed" or (e["status"] == "ok" and e["valid"] is False)))
            unk = sum(1 for e in es if e and e["status"] == "ok" and e["valid"] is None)
            vsum.append(f"{ok}✓" + (f" {bad}✗" if bad else "") + (f" {unk}?" if unk else ""))
        lines.append(f"| {ev} | {len(common)} of {len(sizes) * len(deriv)} | " + " | ".join(cells)
                     + " | " + " / ".join(vsum) + " |")
        pcells = []
        for p in peers:
            if "jitdiff" in impl and p in impl:
                both = [(d, s) for s in sizes for d in deriv
                        if finished(get("jitdiff", d, s)) and finished(get(p, d, s))]
                g = geomean([get("jitdiff", d, s)["median"] / get(p, d, s)["median"] for d, s in both])
                pcells.append(f"{fmt_ratio(g)} ({len(both)})" if g else "–")
            else:
                pcells.append("–")
        pair_lines.append(f"| {ev} | " + " | ".join(pcells) + " |")
        # details
        compile_ns = jd["define"][2] if "jitdiff" in impl else None
        head = f"### {ev}"
        details += ["", head, ""]
        if compile_ns:
            details += [f"jitdiff compile (`define`: lowering, derivation and Cranelift compilation of"
                        f" the eval's functions, once, objective and derivative on two threads; the"
                        f" tool's process start-up, a warm-up compile at `start`, is not in it):"
                        f" {fmt_ns(compile_ns)}.", ""]
        missing = [LABEL[t] for t in tools if t not in impl and res.get(t) is not None]
        if missing:
            details += [f"Not implemented by (`define` failed): {', '.join(missing)}.", ""]
        nolog = [LABEL[t] for t in tools if res.get(t) is None]
        if nolog:
            details += [f"Not run on this eval (no log): {', '.join(nolog)}.", ""]
        cols = ["size"] + [f"{LABEL[t]}" for t in impl] + [f"jitdiff/{LABEL[p]}" for p in peers if p in impl and "jitdiff" in impl] \
            + ["valid"] + (["jitdiff objective"] if "jitdiff" in impl else []) + ["derivative/objective"] \
            + [f"{LABEL[t]} prepare" for t in impl if t in ("jitdiff", "adol-c")]
        details.append("| " + " | ".join(cols) + " |")
        details.append("|---|" + "|".join(":---" if c == "valid" else "---:" for c in cols[1:]) + "|")
        for s in sizes:
            for d in deriv:
                row = [s if len(deriv) == 1 else f"{s} {d}"]
                row += [time_cell(get(t, d, s)) for t in impl]
                for p in peers:
                    if p in impl and "jitdiff" in impl:
                        a, b = get("jitdiff", d, s), get(p, d, s)
                        row.append(fmt_ratio(a['median'] / b['median']) if finished(a) and finished(b) else "–")
                row.append(" ".join(valid_mark(get(t, d, s)) for t in impl))
                prim = PRIMAL.get(ev)
                if "jitdiff" in impl:
                    row.append(time_cell(get("jitdiff", prim, s)) if prim else "–")
                dv = []
                for t in impl:
                    a, o = get(t, d, s), get(t, prim, s) if prim else None
                    dv.append(f"{a['median'] / o['median']:.1f}" if finished(a) and finished(o) else "–")
                row.append(" / ".join(dv))
                for t in impl:
                    if t in ("jitdiff", "adol-c"):
                        e = get(t, d, s)
                        row.append(fmt_ns(e["other"]) if e and e.get("other") else "")
                details.append("| " + " | ".join(row) + " |")
        errs = []
        for t in impl:
            for s in sizes:
                for d in deriv:
                    e = get(t, d, s)
                    if e and (e["status"] == "failed" or (e["status"] == "ok" and e["valid"] is False)):
                        errs.append(f"- {LABEL[t]}, {s}: {short(e['error'], 300)}")
        if errs:
            details += ["", "Failures:", ""] + errs
    lines += pair_lines
    lines += [
        "",
        "## Reading the tables",
        "",
        "- *derivative/objective*: each tool's derivative time over its own objective time, in the",
        "  order of the tool columns (a tool's objective time is its median primal run). *prepare*: work a tool reports apart from the timed runs, once",
        "  per input: jitdiff's sparsity detection and colouring of the ba Jacobian; for ADOL-C, what",
        "  GradBench's adol-c tool does before its timed runs: the tape recording (`trace_on`…",
        "  `trace_off` of the whole function at the input point) in llsq, lse, det, ode, gmm, lstm",
        "  and kmeans, so there its derivative times are tape replays only; in ba it tapes one",
        "  observation's block inside the timed runs, and ht uses ADOL-C's traceless vector forward",
        "  mode (`adtl`, 28 directions), so there *prepare* is input conversion only. JAX compiles (`jax.jit`) for each new input",
        "  shape inside the first timed run of that size: an outlier the median discards when",
        "  there are at least 3 runs (hence a larger `--min-runs` for JAX, see Settings).",
        "- **JAX timing**: upstream's timing wrapper stops the clock before JAX's asynchronous",
        "  dispatch has produced the result, which makes its times too small at large sizes; the",
        "  `jax` column here was run with `jax.block_until_ready` inside the timed call (a launcher",
        "  in `scripts/gradbench.sh` wraps upstream's decorators; the checkout is unchanged).",
        "- **ode**: `manual`'s gradient is the closed form of the exact solution, O(n) whatever",
        "  the number of RK4 steps s; jitdiff, ADOL-C and JAX differentiate the RK4 loop as written",
        "  (the validator accepts both: the values are tiny). jitdiff/manual compares different",
        "  algorithms there; jitdiff/ADOL-C and jitdiff/JAX compare the same one.",
        "- **kmeans**: jitdiff: one Hessian-vector product with all ones (the Hessian is diagonal)",
        "  gives the diagonal, with the gradient from the same forward-over-reverse sweep (which",
        "  computes no tangent of the cost itself: only the nearest centroid's distances get one).",
        "- **gmm** at d = 32 and 64: GradBench's inputs make many mixture weights",
        "  exp(main_term − max) tiny, so part of the reverse pass computes with subnormal numbers,",
        "  which x86 processors handle in microcode (about a hundred cycles per operation). One",
        "  process, input 64_25_1000: jitdiff's gradient 265 ms as is, 122 ms with the processor's",
        "  flush-to-zero and denormals-are-zero flags set (objective 41 ms either way), 123 ms on",
        "  random inputs of that size without subnormals. `manual` meets the same tiny weights but",
        "  multiplies each point's per-component gradient by them once, at the end, where jitdiff's",
        "  reverse pass carries the tiny cotangent through every step of the triangular product;",
        "  JAX's CPU backend (XLA) flushes subnormals to zero (`jax.jit(lambda x: x * 0.5)` maps",
        "  1e-310 to 0), so its large-d times do not pay for them. jitdiff keeps IEEE arithmetic.",
        "- **ba**: jitdiff's `SparseJacobianFn` (14 colours, 2 sweeps of 8 lanes); its pattern has",
        "  14 nonzeros per reprojection row, re-laid in the reference's 15-column layout outside",
        "  the timed runs. jitdiff's plan is keyed on the contents of the non-differentiated",
        "  arguments, so with few runs per size a re-detection weighs on the median.",
        "- **det**: expansion by minors through recursion, as the reference; jitdiff's reverse mode",
        "  tapes every recursive call (0.54 GB at ℓ = 10, about 5.9 GB at ℓ = 11): the tool sets an",
        "  8 GiB tape limit (`JitOptions::tape_limit`; the default is 4 GiB).",
        "- **ht**: the complicated variant on the big model (GradBench's default); jitdiff: forward",
        "  mode, 28 directions (26 `theta`, 2 compressed `us`) in 4 sweeps of 8 lanes.",
        "- **hello**: the time is one call per run, timed alone: per-call overhead.",
        "- **particle**, **saddle**: nested AD. jitdiff's models are one plain-Rust program each",
        "  (`gradbench/models/`): the gradient descent of GradBench's `gd.hpp`, whose objective",
        "  takes a gradient itself (`jitdiff::grad_forward`/`grad_reverse`, both levels exact,",
        "  the variant's two letters choosing each level's mode); the whole descent is one",
        "  compiled call. `manual`, ADOL-C and JAX do not implement these evals; `finite` takes",
        "  central differences at both levels (a performance baseline, not a faithful",
        "  implementation, by its own description). The validator compares with stored answers.",
        "- Validation runs `tools/manual` on every input inside the eval, so it counts against the",
        "  cap of every tool (most at ht and ba).",
    ]
    if notes:
        lines += ["", "## Not implemented (the tool's answer to `define`)", ""] + notes
    lines += ["", "## Per eval"] + details
    report.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
