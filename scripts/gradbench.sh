#!/usr/bin/env bash
# Run GradBench's evals against jitdiff (and optionally GradBench's `manual` reference tool)
# through the GradBench CLI, without Docker, then write docs/gradbench.md.
#
# Usage (from anywhere):
#   GRADBENCH_DIR=/path/to/gradbench VENV=/path/to/venv scripts/gradbench.sh [EVAL ...]
#
# Needs, in the GradBench checkout: the CLI built (cargo build --release -p gradbench, found as
# $GRADBENCH_BIN, else $CARGO_TARGET_DIR/release/gradbench, else target/release/gradbench), and for
# validation and the manual baseline the reference tool (cp nlohmann/json.hpp cpp/json.hpp;
# make -C tools/manual). VENV: a Python venv with numpy pydantic dataclasses-json scipy.
#
# Environment:
#   TOOLS          which tools to run: "jitdiff manual" (default) or "jitdiff"
#   CAP            per-eval wall-clock cap in seconds (default 120; sizes finished before the cap
#                  are kept, the rest are reported as not run)
#   MIN_SECONDS    the evals' --min-seconds (default 0.2; upstream's default is 1)
#   MIN_RUNS       the evals' --min-runs (default 1)
#   EVAL_ARGS_<e>  extra arguments of eval <e>, e.g. EVAL_ARGS_gmm='-d 2 10 -k 5 10'
#   OUT            log directory (default target/gradbench-logs)
#   REPORT         the report to write (default docs/gradbench.md; empty: none)
set -u
: "${GRADBENCH_DIR:?set GRADBENCH_DIR to a GradBench checkout}" "${VENV:?set VENV to a Python venv}"
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
TOOLS=${TOOLS:-"jitdiff manual"}
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

(cd "$ROOT" && CARGO_TARGET_DIR=$TARGET cargo build --release -p jitdiff-gradbench) || exit 1
JITDIFF_TOOL=$TARGET/release/jitdiff-gradbench

mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
cd "$GRADBENCH_DIR" || exit 1
# shellcheck disable=SC1091
source "$VENV/bin/activate"
export PYTHONPATH="$GRADBENCH_DIR/python/gradbench${PYTHONPATH:+:$PYTHONPATH}"
for tool in $TOOLS; do
  case $tool in
    jitdiff) cmd=$JITDIFF_TOOL ;;
    manual) cmd="python3 python/gradbench/gradbench/cpp.py manual" ;;
    *) echo "unknown tool $tool" >&2; exit 1 ;;
  esac
  for ev in "${EVALS[@]}"; do
    extra_var="EVAL_ARGS_$ev"; extra=${!extra_var:-}
    runs="--min-runs $MIN_RUNS --min-seconds $MIN_SECONDS"
    [ "$ev" = hello ] && runs=""   # hello has no repetition fields
    mkdir -p "$OUT/$ev"
    echo "== $ev / $tool (cap ${CAP}s) $extra"
    start=$(date +%s)
    timeout -k 10 "$CAP" "$GRADBENCH_BIN" run \
      --eval "python3 python/gradbench/gradbench/evals/$ev/run.py $runs $extra" \
      --tool "$cmd" -o "$OUT/$ev/$tool.jsonl" > "$OUT/$ev/$tool.txt" 2>&1
    rc=$?
    echo "rc=$rc wall=$(( $(date +%s) - start ))s" | tee -a "$OUT/$ev/$tool.txt"
    [ $rc -eq 124 ] && echo "   (capped at ${CAP}s; the sizes finished so far are in the log)"
  done
done

if [ -n "$REPORT" ]; then
  python3 "$ROOT/scripts/gradbench_report.py" "$OUT" "$REPORT" \
    --settings "CAP=${CAP}s per eval and tool, --min-seconds $MIN_SECONDS, --min-runs $MIN_RUNS" \
    "${EVALS[@]}"
  echo "wrote $REPORT"
fi
