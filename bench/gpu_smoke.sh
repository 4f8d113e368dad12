#!/bin/bash
# Runs on the GPU machine from the repository root: installs the pre-downloaded
# wheels (.whl/: xdsl and its two dependencies), then, by argument:
#   test   - the GPU tests
#   bench  - bench/bench_gpu.py (pass --quick after it for the short table)
#   sanitize - compute-sanitizer memcheck/racecheck/synccheck on a multi-SM gemv
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
for what in "$@"; do
  case "$what" in
    test)
      timeout 180 python3 -m pytest -q -p no:cacheprovider -rs test/pytest/test_cuda_backend.py 2>&1 | tee "$OUT/pytest.log" ;;
    bench)
      timeout 300 python3 bench/bench_gpu.py $BENCH_ARGS 2>&1 | tee "$OUT/bench.log" ;;
    sanitize)
      for tool in memcheck racecheck synccheck; do
        timeout 150 compute-sanitizer --tool $tool python3 bench/gpu_check.py 2>&1 | tail -n 8 | tee -a "$OUT/sanitize.log"
      done ;;
    diag)
      timeout 200 python3 bench/diag_gemv.py 2>&1 | tee "$OUT/diag.log" ;;
    check)
      timeout 100 python3 bench/gpu_check.py 2>&1 | tee "$OUT/check.log" ;;
    info)
      nvidia-smi -L
      python3 -c "import ml_dtypes, cuda.bindings, xdsl, torch; print('ml_dtypes', ml_dtypes.__version__, 'cuda.bindings', cuda.bindings.__version__, 'torch', torch.__version__)" ;;
  esac
done
