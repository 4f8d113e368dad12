#!/usr/bin/env bash
# Set up vdir in a fresh virtual environment and run the main job: compile the
# Llama-style MLP block to its encoded per-engine queues, then run it (on the
# CPU simulator, or on the GPU when one is present) and check the result
# against the reference evaluator.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV="${VDIR_VENV:-.venv}"
if [ ! -x "$VENV/bin/vdir-opt" ]; then
  python3 -m venv "$VENV"
  "$VENV/bin/python" -m pip install --quiet --upgrade pip
  "$VENV/bin/python" -m pip install --quiet -e .
fi

EXAMPLE="${1:-examples/mlp.mlir}"
echo "== $EXAMPLE: the pass pipeline, first lines of the encoded queues =="
"$VENV/bin/vdir-opt" "$EXAMPLE" -p vdir-pipeline -t isa | head -n 24
echo "..."
echo "== run it and check against the reference evaluator =="
"$VENV/bin/vdir-run" "$EXAMPLE" --check --trace "${TMPDIR:-/tmp}/vdir-trace.json"
echo "trace (open in https://ui.perfetto.dev): ${TMPDIR:-/tmp}/vdir-trace.json"
