#!/usr/bin/env bash
# Set up vdir in a fresh virtual environment and run the main job: compile the
# Llama-style MLP block to its encoded per-engine queues, then run it (on the
# CPU simulator, or on the GPU when one is present) and check the result
# against the reference evaluator. An example given as the argument is found
# from the caller's folder; VDIR_VENV (default .venv) from the repository's.
set -euo pipefail

EXAMPLE="${1:-}"
if [ -n "$EXAMPLE" ]; then
  if [ ! -f "$EXAMPLE" ]; then
    echo "demo.sh: error: $EXAMPLE: no such file" >&2
    exit 1
  fi
  EXAMPLE="$(cd "$(dirname "$EXAMPLE")" && pwd)/$(basename "$EXAMPLE")"  # before the cd below
fi
cd "$(dirname "$0")/.."
EXAMPLE="${EXAMPLE:-examples/mlp.mlir}"

VENV="${VDIR_VENV:-.venv}"
if [ ! -x "$VENV/bin/vdir-opt" ]; then
  python3 -m venv "$VENV"
  "$VENV/bin/python" -m pip install --quiet --upgrade pip
  # compat: a folder named vdir in the caller's directory cannot shadow the package
  "$VENV/bin/python" -m pip install --quiet -e . --config-settings editable_mode=compat
fi

echo "== $EXAMPLE: the pass pipeline, first lines of the encoded queues =="
"$VENV/bin/vdir-opt" "$EXAMPLE" -p vdir-pipeline -t isa | head -n 24
echo "..."
echo "== run it and check against the reference evaluator =="
BACKEND="$("$VENV/bin/python" -c 'from vdir.device_runtime import default_backend; print(default_backend())')"
# the simulator's trace is modelled; on a GPU --trace lowers the kernel with the trace option (measured)
TRACE="${TMPDIR:-/tmp}/vdir-trace.json"
"$VENV/bin/vdir-run" "$EXAMPLE" --backend "$BACKEND" --check --trace "$TRACE"
echo "trace (open in https://ui.perfetto.dev): $TRACE"
