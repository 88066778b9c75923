#!/usr/bin/env bash
# Run GradBench's evals against jitdiff and GradBench's `manual` (hand-written reference),
# `adol-c`, `jax` and `finite` tools through the GradBench CLI, without Docker, then write
# docs/gradbench.md.
#
# Usage (from anywhere):
#   GRADBENCH_DIR=/path/to/gradbench VENV=/path/to/venv scripts/gradbench.sh [EVAL ...]
#
# Needs, in the GradBench checkout: the CLI built (cargo build --release -p gradbench, found as
# $GRADBENCH_BIN, else $CARGO_TARGET_DIR/release/gradbench, else target/release/gradbench), and for
# validation and the manual baseline the reference tool (cp nlohmann/json.hpp cpp/json.hpp;
# make -C tools/manual). VENV: a Python venv with numpy pydantic dataclasses-json scipy.
# Optional peers (a tool whose prerequisites are missing is skipped with a message):
#   adol-c  ADOL-C and boost headers/libraries, e.g. Debian's libadolc-dev (2.7.2) and
#           libboost-dev (ht and kmeans use adtl.h, which includes boost pool); GradBench's
#           cpp.py compiles tools/adol-c/bin/<eval> at `define`.
#   jax     jax and jaxlib in VENV: pip install "jax==0.4.38" "jaxlib==0.4.38" (GradBench's
#           uv.lock pin; CPU). Upstream's timing wrapper (gradbench/wrap.py) stops the clock
#           before JAX's asynchronous dispatch has produced the result; this script runs the
#           jax tool through a small launcher that adds jax.block_until_ready to the timed call
#           (the checkout is not modified). TOOLS=jax-nosync runs the upstream timing instead.
#
# Evals run one after the other, and for each eval the tools one after the other (never two
# at once), so an interrupted run has every tool for the evals it finished.
#
# Environment:
#   TOOLS          tools to run, among jitdiff manual adol-c jax jax-nosync finite (default
#                  "jitdiff manual adol-c jax finite"; adol-c/jax are dropped when not
#                  installed; finite, GradBench's central differences, is the one tool of the
#                  checkout besides jitdiff that implements particle and saddle)
#   CAP            per-eval wall-clock cap in seconds, the same for every tool (default 120;
#                  sizes finished before the cap are kept, the rest are reported as not run)
#   MIN_SECONDS    the evals' --min-seconds (default 0.2; upstream's default is 1)
#   MIN_RUNS       the evals' --min-runs (default 1)
#   MIN_RUNS_<t>   --min-runs for tool <t> (- as _), e.g. MIN_RUNS_jax=3: JAX compiles for each
#                  new input shape inside its first timed run, and when that run alone exceeds
#                  --min-seconds the median would be the compile; with 3 runs it is not
#   EVAL_ARGS_<e>  extra arguments of eval <e>, e.g. EVAL_ARGS_gmm='-d 2 10 -k 5 10'
#   OUT            log directory (default target/gradbench-logs)
#   REPORT         the report to write (default docs/gradbench.md; empty: none)
#   SETTINGS_NOTE  extra text for the report's settings line
set -u
: "${GRADBENCH_DIR:?set GRADBENCH_DIR to a GradBench checkout}" "${VENV:?set VENV to a Python venv}"
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
TOOLS=${TOOLS:-"jitdiff manual adol-c jax finite"}
CAP=${CAP:-120}; MIN_SECONDS=${MIN_SECONDS:-0.2}; MIN_RUNS=${MIN_RUNS:-1}
OUT=${OUT:-$TARGET/gradbench-logs}
REPORT=${REPORT-$ROOT/docs/gradbench.md}
EVALS=("$@")
[ ${#EVALS[@]} -eq 0 ] && EVALS=(hello llsq lse det ode gmm lstm ba ht kmeans particle saddle)
if [ -z "${GRADBENCH_BIN:-}" ]; then
  if [ -n "${CARGO_TARGET_DIR:-}" ] && [ -x "$CARGO_TARGET_DIR/release/gradbench" ]; then
    GRADBENCH_BIN=$CARGO_TARGET_DIR/release/gradbench
  else GRADBENCH_BIN=$GRADBENCH_DIR/target/release/gradbench; fi
fi
[ -x "$GRADBENCH_BIN" ] || { echo "no GradBench CLI at $GRADBENCH_BIN (cargo build --release -p gradbench)" >&2; exit 1; }

JITDIFF_TOOL=$TARGET/release/jitdiff-gradbench
case " $TOOLS " in *" jitdiff "*)
  (cd "$ROOT" && CARGO_TARGET_DIR=$TARGET cargo build --release -p jitdiff-gradbench) || exit 1 ;;
esac

mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
cd "$GRADBENCH_DIR" || exit 1
# shellcheck disable=SC1091
source "$VENV/bin/activate"
export PYTHONPATH="$GRADBENCH_DIR/python/gradbench${PYTHONPATH:+:$PYTHONPATH}"
# Which tools can run here.
have_adolc() {
  printf '#include <adolc/adolc.h>\n#include <boost/pool/pool_alloc.hpp>\nint main(){return 0;}\n' |
    ${CXX:-c++} -std=c++17 -x c++ - -ladolc -o /dev/null >/dev/null 2>&1
}
have_jax() { python3 -c 'import jax, jaxlib' >/dev/null 2>&1; }
RUN_TOOLS=()
for tool in $TOOLS; do
  case $tool in
    jitdiff|manual|finite) RUN_TOOLS+=("$tool") ;;
    adol-c) if have_adolc; then RUN_TOOLS+=("$tool")
            else echo "skipping adol-c: no ADOL-C/boost headers or libadolc (apt-get install libadolc-dev libboost-dev)" >&2; fi ;;
    jax|jax-nosync) if have_jax; then RUN_TOOLS+=("$tool")
            else echo "skipping $tool: jax is not installed in $VENV (pip install jax==0.4.38 jaxlib==0.4.38)" >&2; fi ;;
    *) echo "unknown tool $tool" >&2; exit 1 ;;
  esac
done
[ ${#RUN_TOOLS[@]} -gt 0 ] || { echo "no tool to run" >&2; exit 1; }

# The jax tool with jax.block_until_ready inside the timed call: wraps the two decorators of
# gradbench.wrap so that the function they time waits for its result, then runs the tool's run.py.
JAX_SYNC=$OUT/jax_sync_launcher.py
cat > "$JAX_SYNC" <<'PY'
import runpy, sys
from gradbench import wrap

def _synced(decorator_factory):
    def factory(**kwargs):
        decorator = decorator_factory(**kwargs)
        def decorate(function):
            import jax
            timed = decorator(lambda x: jax.block_until_ready(function(x)))
            return wrap.Wrapped(function=function, wrapped=timed.wrapped)
        return decorate
    return factory

wrap.function = _synced(wrap.function)
wrap.multiple_runs = _synced(wrap.multiple_runs)
run_py = sys.argv[1]
sys.argv = sys.argv[1:]
sys.path[0] = run_py.rsplit("/", 1)[0]  # as `python3 run.py`: not this file's folder (the logs)
runpy.run_path(run_py, run_name="__main__")
PY

tool_command() {
  case $1 in
    jitdiff) echo "$JITDIFF_TOOL" ;;
    manual|adol-c|finite) echo "python3 python/gradbench/gradbench/cpp.py $1" ;;
    jax) echo "python3 $JAX_SYNC python/gradbench/gradbench/tools/jax/run.py" ;;
    jax-nosync) echo "python3 python/gradbench/gradbench/tools/jax/run.py" ;;
  esac
}

echo "tools: ${RUN_TOOLS[*]}; evals: ${EVALS[*]}; cap ${CAP}s per eval and tool"
run_start=$(date +%s)
for ev in "${EVALS[@]}"; do
  extra_var="EVAL_ARGS_$ev"; extra=${!extra_var:-}
  mkdir -p "$OUT/$ev"
  for tool in "${RUN_TOOLS[@]}"; do
    tool_runs_var="MIN_RUNS_${tool//-/_}"; tool_runs=${!tool_runs_var:-$MIN_RUNS}
    runs="--min-runs $tool_runs --min-seconds $MIN_SECONDS"
    [ "$ev" = hello ] && runs=""   # hello has no repetition fields
    echo "== $ev / $tool (cap ${CAP}s) $extra"
    start=$(date +%s)
    timeout -k 10 "$CAP" "$GRADBENCH_BIN" run \
      --eval "python3 python/gradbench/gradbench/evals/$ev/run.py $runs $extra" \
      --tool "$(tool_command "$tool")" -o "$OUT/$ev/$tool.jsonl" > "$OUT/$ev/$tool.txt" 2>&1
    rc=$?
    echo "rc=$rc wall=$(( $(date +%s) - start ))s" | tee -a "$OUT/$ev/$tool.txt"
    [ $rc -eq 124 ] && echo "   (capped at ${CAP}s; the sizes finished so far are in the log)"
  done
done
echo "run: $(( $(date +%s) - run_start ))s in all"

if [ -n "$REPORT" ]; then
  per_tool=""
  for tool in "${RUN_TOOLS[@]}"; do
    v="MIN_RUNS_${tool//-/_}"; [ -n "${!v:-}" ] && per_tool+=", --min-runs ${!v} for $tool"
  done
  for ev in "${EVALS[@]}"; do
    v="EVAL_ARGS_$ev"; [ -n "${!v:-}" ] && per_tool+=", $ev: \`${!v}\`"
  done
  python3 "$ROOT/scripts/gradbench_report.py" "$OUT" "$REPORT" \
    --settings "CAP=${CAP}s per eval and tool, --min-seconds $MIN_SECONDS, --min-runs $MIN_RUNS$per_tool${SETTINGS_NOTE:+, $SETTINGS_NOTE}" \
    --gradbench-dir "$GRADBENCH_DIR" --tools "${RUN_TOOLS[*]}" \
    "${EVALS[@]}"
  echo "wrote $REPORT"
fi
