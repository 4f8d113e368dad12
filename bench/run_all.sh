#!/bin/bash
# Everything the GPU figures in docs/performance.md need, in one go, on the GPU
# machine, from the repository root: installs the pre-downloaded wheels (.whl/: xdsl
# and its dependencies; .whl/opt/: ml_dtypes, hypothesis, sortedcontainers,
# installed only where python3 lacks them), then runs
#   bench    - bench/bench_gpu.py (the table)
#   test     - the GPU tests (pytest -m gpu)
#   launch   - bench/bench_launch.py (host cost per launch: host call, enqueue,
#              launch+sync, CUDA-graph replay, against the kernel time)
#   sanitize - compute-sanitizer memcheck, synccheck, racecheck on a small
#              pipeline-compiled MLP stack (bench/sanitize_mlp.py; $SAN_ARGS, e.g. --lowering control_warp=1)
#   trace    - bench/bench_trace.py: each program timed with the lowering option
#              trace off and on (the tracing overhead), the traced launches
#              written as Chrome/Perfetto JSON to $OUT/traces
#   ab       - the bench of an earlier checkout (its tree in $BASE_DIR, e.g.
#              from `git archive`) and of this one, alternately, $AB_ROUNDS
#              rounds (default 2), compared by bench/compare_runs.py; the bench is
#              bench/bench_gpu.py ($BENCH_ARGS), or with AB_BENCH=sweep
#              bench/bench_sweep.py ($SWEEP_ARGS, e.g. --only gemv --torch-compile none),
#              or with AB_BENCH=uop bench/bench_uop_cost.py ($UOP_ARGS, e.g. --gemv 16x1024
#              --sms 1 --sizes 16,64 --variants only=compute,only=store,full);
#              the runs' logs come back in one tar, $OUT/ab-runs.tar
#   kcache   - bench/bench_kernel_cache.py: the kernel's load time in fresh
#              processes, driver JIT against the kernel cache cold and warm
#   sweep    - bench/bench_sweep.py: gemvs, MLP blocks and stacks over shapes, against
#              torch eager, CUDA graph, cuBLAS and torch.compile ($SWEEP_ARGS)
#   targets  - every performance target judged in one call (bench/targets.py): the sweep's gemvs
#              against cuBLAS (no torch.compile), then its 16-layer stacks against torch.compile
#              (max-autotune), judged together ($TARGETS_ARGS: more bench_sweep.py options for both)
#   uop      - bench/bench_uop_cost.py: the fixed cost of one micro-op per engine ($UOP_ARGS)
#   profile  - Nsight Compute's source counters of one SM's compute engine alone (bench/profile_uop.py
#              --variant only=compute: the tiny add, then a 16 x 1024 gemv), each kernel's source page
#              as CSV and bench/ncu_sources.py's summary of it, in $OUT/profile-KIND.{csv,log}
#   loops    - bench/diag_loops.py: the 16-layer stack with keep_trips, unrolled against
#              run_loops, and run_loops with one engine's queues unrolled at a time
#   decode   - bench/bench_decode.py: the Llama-3.2-1B-shaped decode step over a
#              1024-token context against torch ($DECODE_ARGS)
#   probe    - bench/stream_probe.cu (nvcc): the streaming ceiling without vdir, bulk
#              copies from one CTA per SM against plain loads from many CTAs
#   claimprobe - bench/claim_probe.cu (nvcc): one CTA per SM streaming 64 KiB tiles placed
#              statically (as vdir places them) against tiles claimed at run time (all, or a tail)
#   l2probe  - bench/l2_prefetch_probe.cu (nvcc): whether an L2 prefetch, with or without
#              a cache hint, serves the bulk copies that follow it after a wait
#   gapprobe - bench/launch_gap_probe.cu (nvcc): what a launch of a kernel shaped like vdir's
#              costs around its body, back to back, with programmatic dependent launch, and
#              timed one launch at a time between events; then an empty launch between events by its
#              shape (threads, shared memory), vdir's down to a small library kernel's
#   clusterprobe - bench/cluster_handoff_probe.cu (nvcc): a hand-off between two SMs through
#              global memory against one through a cluster's shared memory, idle and under load
#   protoprobe - bench/handoff_protocol_probe.cu (nvcc): a row handed from 128 SMs to all, round
#              after round, by three protocols (vdir's counter and bulk copies, a counter and plain
#              accesses, a flag in every word), idle and with every SM streaming
#   splitkprobe - bench/split_k_probe.cu (nvcc): an MLP layer's two hand-offs against a split-K down
#              projection (partials added by reducing bulk stores, u64 fixed point or f32) under the
#              weight stream, at three stack shapes
#   splitk   - the split-K MLPs: their GPU tests, the three 16-layer stacks of the sweep with the split-K
#              form (build_split_k_mlp_stack) beside vdir's plain stack and torch ($SWEEP_ARGS), then the 1B
#              decode step with split_k_mlp beside the default in one process ($DECODE_ARGS, $SPLITK_STEPS)
#   ring     - two weight tiles in flight per SM against one on programs that hand rows between SMs (the
#              same on every GPU, whatever its target's ring): the MLP blocks and stacks of the sweep
#              ($RING_CASES) with --lowering stream_ring=2 --also-lowering stream_ring=1 (each case's ring-1
#              kernel timed between two figures of its ring-2 kernel, in one process), then the 1B decode
#              step (or $RING_DECODE_RUNS, decode_all's form) with both beside the default in one process
#   landprobe - bench/landing_probe.cu (nvcc): when a small gemv's few weight tiles per SM land,
#              by ring depth and the ring's second issue, and whether a tile's pieces land in order
#   pace     - bench/sm_pace.py: each SM's pace through a gemv's weight tiles, launch
#              after launch, in two programs, compared by CTA and by SM ($PACE_ARGS)
#   flagwords - the flag-word hand-offs in one go: their GPU tests, the 1B step timed with
#              vdir-pipeline{flag-words=4096} beside the default in one process, a trace of layer 5
#              of each (--handoffs --stores), and compute-sanitizer on a small stack whose act rows
#              are scratch and handed over as words alone
#   holds    - the stream holds (vdir-pipeline{hold-streams=N}), release-first and batch_releases:
#              their GPU tests, then the 1B step timed with N = 1 and 2, each with and without
#              release-first, and release-first alone, beside the default in one process
#   holds-batch - the 1B step with the lowering option batch_releases beside the default, and a
#              trace of layer 5 of the default and of N = 2 with release-first (--stores: the
#              releasing stores' durations)
#   holds-stacks - the 16-layer stacks 2048/8192 and 4096/14336 with and without N = 2 and
#              release-first, alternated
#   holds-sweep - the whole sweep (gemvs and MLPs, no torch.compile) with and without
#              hold-streams=1 and release-first, alternated, two rounds
#   holds-decode - the three decode runs of decode-all, each with hold-streams=1 and
#              release-first beside the default in one process
#   buckets  - LlamaDecoder's context_buckets: the 1B step over 4096 tokens (1024 steps) with shorter
#              steps for 1024 and 2048, and over 1024 (256 steps) with one for 512, each beside the
#              single step in one process; then the GPU tests of the context buckets (the decode
#              runs above use the decoder's default, auto: a step for 2048 under a 4096-token context)
#   rows     - the decode step's projection rows across shapes, one projection at a time
#              (LlamaConfig.qkv_rows, o_rows, down_rows beside proj_rows): the 3B shape with 8-row
#              q/k/v, output and down tiles each and together beside its 16, the 1B shape likewise;
#              each set in one process ($ROWS_CONFIGS: which shapes, default "llama-3b llama-1b";
#              $ROWS_VARIANTS: which variants, space-separated; the 3B set takes most of 10 minutes,
#              so one shape per call where calls are limited to that)
#   paths    - layer 5 of the 3B step (8 steps) and of the 1B step (16 steps) traced, each layer's stages,
#              hand-offs, releasing stores and critical path (bench/trace_decode.py --handoffs --stores
#              --path-layer 5) into $OUT/path-CONFIG.log ($PATH_CONFIGS: which shapes, default
#              "llama-3b llama-1b"); bench/trace_decode.py --sim POS models the same on the CPU
#   decode-all - the four decode runs docs/performance.md quotes, one after the
#              other: the 1B shape over 1024 (256 steps) and 4096 tokens (1024
#              steps), the 3B and 8B shapes over 1024 (64 steps); $DECODE_ARGS for each
#              (default: no torch.compile, whose autotuning takes minutes); $DECODE_RUNS for
#              others (e.g. "qwen3-1.7b 1024 64,qwen3-4b 1024 64")
# Logs go to $OUT (default /tmp/out). Steps by argument; none = all.
set -o pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  || exit 1
for mod in ml_dtypes hypothesis sortedcontainers; do
  if ! python3 -c "import $mod" 2>/dev/null; then
    echo "installing $mod from .whl/opt" | tee -a "$OUT/info.log"
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/opt/$mod-*.whl
  fi
done
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
steps=${*:-bench launch test sanitize}  # ab, kcache, trace, sweep, targets, uop, profile, loops, probe, claimprobe, l2probe, gapprobe, clusterprobe, protoprobe, splitkprobe, landprobe, pace, flagwords, holds, holds-batch, holds-stacks, holds-sweep, holds-decode, ring, buckets, rows, paths, decode and decode-all only when asked
{ date -u; nvidia-smi -L; compute-sanitizer --version | tail -1
  python3 -c "import ml_dtypes, numpy, torch, xdsl; print('ml_dtypes', ml_dtypes.__version__, 'numpy', numpy.__version__, 'torch', torch.__version__)"
} 2>&1 | tee -a "$OUT/info.log"
SAN="--layers 2 --hidden 512 --inter 1024 --sms 8 $SAN_ARGS"
# cuda_probe STEP NAME: build bench/NAME.cu (the binary outside $OUT, which holds only logs), run it, log to STEP.log
cuda_probe() {
  mkdir -p /tmp/vdir-probes
  nvcc -arch=sm_90a -O3 -o "/tmp/vdir-probes/$2" "bench/$2.cu" \
    && timeout ${PROBE_TIMEOUT:-120} "/tmp/vdir-probes/$2" 2>&1 | tee "$OUT/$1.log"
}
# layer 5 of the 1B step traced (--handoffs --stores --path-layer 5) by default and with the pipeline
# option $2 (e.g. flag-words=4096), into $OUT/$1-trace-default.log and $OUT/$1-trace-$3.log (log names of
# letters, digits and dashes only)
trace_pair() {
  for variant in default "$3"; do
    pipe=; [ "$variant" = default ] || pipe="--pipeline $2"
    timeout ${TRACE_TIMEOUT:-300} python3 bench/trace_decode.py --config llama-1b --steps 16 --layers 5 --handoffs \
      --stores --path-layer 5 $pipe > "$OUT/$1-trace-$variant.log" 2>&1
    echo "trace $variant: exit $?" | tee -a "$OUT/info.log"
  done
}
# decode_all [PREFIX]: the four decode runs docs/performance.md quotes (or $DECODE_RUNS: "CONFIG CONTEXT
# STEPS" runs separated by commas), each with $DECODE_ARGS, logged to $OUT/PREFIX-CONFIG-CONTEXT.* (PREFIX:
# decode)
decode_all() {
  local prefix=${1:-decode}
  IFS=, read -ra runs <<< "${DECODE_RUNS:-llama-1b 1024 256,llama-1b 4096 1024,llama-3b 1024 64,llama-8b 1024 64}"
  for run in "${runs[@]}"; do
    set -- $run
    timeout ${DECODE_TIMEOUT:-420} python3 bench/bench_decode.py --config "$1" --context "$2" --steps "$3" \
      --json "$OUT/$prefix-$1-$2.json" ${DECODE_ARGS:---torch-compile none} 2>&1 | tee "$OUT/$prefix-$1-$2.log"
  done
}
for what in $steps; do
  t0=$(date +%s)
  case "$what" in
    bench)
      timeout ${BENCH_TIMEOUT:-240} python3 bench/bench_gpu.py --json "$OUT/bench.json" $BENCH_ARGS 2>&1 | tee "$OUT/bench.log" ;;
    trace)
      timeout ${TRACE_TIMEOUT:-300} python3 bench/bench_trace.py --json "$OUT/trace.json" --traces "$OUT/traces" \
        $TRACE_ARGS 2>&1 | tee "$OUT/trace.log" ;;
    ab)
      runs=()
      for round in $(seq 1 ${AB_ROUNDS:-2}); do
        for side in before after; do
          dir=$PWD; [ "$side" = before ] && dir=${BASE_DIR:?set BASE_DIR to the earlier checkout}
          if [ "${AB_BENCH:-gpu}" = sweep ]; then
            bench="bench/bench_sweep.py $SWEEP_ARGS"; limit=${SWEEP_TIMEOUT:-540}
          elif [ "${AB_BENCH}" = uop ]; then
            bench="bench/bench_uop_cost.py $UOP_ARGS"; limit=${UOP_TIMEOUT:-180}
          else
            bench="bench/bench_gpu.py $BENCH_ARGS"; limit=${BENCH_TIMEOUT:-240}
          fi
          (cd "$dir" && PYTHONPATH=/tmp/site:$dir timeout $limit python3 $bench \
             --json "$OUT/$side$round.json" > "$OUT/$side$round.log" 2>&1) || echo "$side $round: exit $?"
          runs+=("$OUT/$side$round.json")
        done
      done
      python3 bench/compare_runs.py "${runs[@]}" 2>&1 | tee "$OUT/ab.log"
      (cd "$OUT" && tar cf ab-runs.tar before*.json before*.log after*.json after*.log && rm -f before* after*) ;;
    launch)
      timeout ${BENCH_TIMEOUT:-240} python3 bench/bench_launch.py --json "$OUT/launch.json" 2>&1 | tee "$OUT/launch.log" ;;
    sweep)
      timeout ${SWEEP_TIMEOUT:-540} python3 bench/bench_sweep.py --json "$OUT/sweep.json" $SWEEP_ARGS 2>&1 \
        | tee "$OUT/sweep.log" ;;
    targets)
      timeout ${TARGETS_GEMV_TIMEOUT:-120} python3 bench/bench_sweep.py --only gemv --torch-compile none \
        --json "$OUT/targets-gemv.json" $TARGETS_ARGS 2>&1 | tee "$OUT/targets-gemv.log"
      timeout ${TARGETS_STACK_TIMEOUT:-420} python3 bench/bench_sweep.py --only stack --torch-compile max-autotune-no-cudagraphs \
        --json "$OUT/targets-stacks.json" $TARGETS_ARGS 2>&1 | tee "$OUT/targets-stacks.log"
      python3 bench/targets.py --together "$OUT/targets-gemv.json" "$OUT/targets-stacks.json" 2>&1 \
        | tee "$OUT/targets.log" ;;
    profile)
      for kind in add gemv; do
        args=; [ "$kind" = gemv ] && args="--gemv 16x1024"
        timeout ${PROFILE_TIMEOUT:-150} ncu --launch-skip 2 --launch-count 1 --section WarpStateStats \
          --section SourceCounters --warp-sampling-interval 0 -f -o "/tmp/vdir-profile-$kind" \
          python3 bench/profile_uop.py --variant only=compute $args > "$OUT/profile-$kind.ncu.log" 2>&1
        ncu -i "/tmp/vdir-profile-$kind.ncu-rep" --page source --csv --print-source sass > "$OUT/profile-$kind.csv" \
          && python3 bench/ncu_sources.py "$OUT/profile-$kind.csv" 2>&1 | tee "$OUT/profile-$kind.log"
      done ;;
    uop)
      timeout ${UOP_TIMEOUT:-180} python3 bench/bench_uop_cost.py --json "$OUT/uop.json" $UOP_ARGS 2>&1 | tee "$OUT/uop.log" ;;
    probe) cuda_probe probe stream_probe ;;
    claimprobe) cuda_probe claimprobe claim_probe ;;
    l2probe) cuda_probe l2probe l2_prefetch_probe ;;
    gapprobe) cuda_probe gapprobe launch_gap_probe ;;
    clusterprobe) cuda_probe clusterprobe cluster_handoff_probe ;;
    protoprobe) cuda_probe protoprobe handoff_protocol_probe ;;
    landprobe) cuda_probe landprobe landing_probe ;;
    splitkprobe) cuda_probe splitkprobe split_k_probe ;;
    splitk)
      timeout ${SPLITK_TEST_TIMEOUT:-240} python3 -m pytest -q -m gpu test/pytest/test_fixed_point_sums.py \
        test/pytest/test_vecmat.py test/pytest/test_reduce_store.py test/pytest/test_llama.py -k "split or vecmat or reduc" \
        2>&1 | tail -5 | tee "$OUT/splitk-test.log"
      timeout ${SWEEP_TIMEOUT:-540} python3 bench/bench_sweep.py --only mlp --split-k --case "MLP x16 2048/8192" \
        --case "MLP x16 4096/14336" --case "MLP x16 5120/13824" --json "$OUT/splitk.json" $SWEEP_ARGS 2>&1 \
        | tee "$OUT/splitk.log"
      timeout ${DECODE_TIMEOUT:-300} python3 bench/bench_decode.py --config llama-1b --context 1024 \
        --steps ${SPLITK_STEPS:-512} --variant split_k_mlp=true --json "$OUT/splitk-decode.json" \
        ${DECODE_ARGS:---torch-compile none} 2>&1 | tee "$OUT/splitk-decode.log" ;;
    ring)
      IFS=, read -ra ring_cases <<< "${RING_CASES:-MLP block 2048/8192,MLP x16 2048/8192,MLP x16 4096/14336,MLP x16 5120/13824}"
      case_args=(); for c in "${ring_cases[@]}"; do case_args+=(--case "$c"); done
      timeout ${SWEEP_TIMEOUT:-300} python3 bench/bench_sweep.py --only mlp "${case_args[@]}" --torch-compile none \
        --iters ${RING_ITERS:-100} --lowering stream_ring=2 --also-lowering stream_ring=1 --json "$OUT/ring.json" 2>&1 \
        | tee "$OUT/ring.log"
      DECODE_RUNS=${RING_DECODE_RUNS:-llama-1b 1024 256} DECODE_TIMEOUT=${DECODE_TIMEOUT:-240} \
        DECODE_ARGS="--lowering stream_ring=2 --lowering stream_ring=1 --torch-compile none" decode_all ring ;;
    pace)
      timeout ${PACE_TIMEOUT:-180} python3 bench/sm_pace.py ${PACE_ARGS:---gemv 28672x8192 --gemv 8192x28672 --gemv 14336x4096} 2>&1 | tee "$OUT/pace.log" ;;
    loops)
      timeout ${LOOPS_TIMEOUT:-180} python3 bench/diag_loops.py 2>&1 | tee "$OUT/loops.log" ;;
    decode)
      timeout ${DECODE_TIMEOUT:-420} python3 bench/bench_decode.py --config llama-1b --context 1024 --steps 1024 \
        --json "$OUT/decode.json" ${DECODE_ARGS:---torch-compile default} 2>&1 | tee "$OUT/decode.log" ;;
    decode-all) decode_all ;;
    paths)
      for config in ${PATH_CONFIGS:-llama-3b llama-1b}; do
        n_steps=16; [ "$config" = llama-3b ] && n_steps=8
        timeout ${TRACE_TIMEOUT:-240} python3 bench/trace_decode.py --config "$config" --steps $n_steps --layers 5 \
          --handoffs --stores --path-layer 5 > "$OUT/path-$config.log" 2>&1
        echo "path $config: exit $?" | tee -a "$OUT/info.log"
      done ;;
    rows)
      for name in ${ROWS_CONFIGS:-llama-3b llama-1b}; do
        n_steps=64; [ "$name" = llama-1b ] && n_steps=256
        variants=()
        for v in ${ROWS_VARIANTS:-qkv_rows=8 o_rows=8 down_rows=8 o_rows=8,down_rows=8 qkv_rows=8,o_rows=8,down_rows=8}; do
          variants+=(--variant "$v")
        done
        timeout ${DECODE_TIMEOUT:-520} python3 bench/bench_decode.py --config "$name" --steps "$n_steps" --torch-compile none \
          "${variants[@]}" --json "$OUT/rows-$name.json" 2>&1 | tee "$OUT/rows-$name.log"
      done ;;
    flagwords)
      timeout ${TEST_TIMEOUT:-240} python3 -m pytest -q -p no:cacheprovider -rs -m gpu -k flag_words test/pytest 2>&1 \
        | tee "$OUT/flagwords-test.log" | tail -n 5
      timeout ${DECODE_TIMEOUT:-420} python3 bench/bench_decode.py --config llama-1b --context 1024 --steps 256 \
        --torch-compile none --pipeline flag-words=4096 --json "$OUT/flagwords-decode.json" 2>&1 \
        | tee "$OUT/flagwords-decode.log"
      trace_pair flagwords flag-words=4096 words4096
      for tool in memcheck synccheck racecheck; do
        timeout ${SAN_TIMEOUT:-70} compute-sanitizer --tool $tool --print-limit 30 python3 bench/sanitize_mlp.py $SAN \
          --flag-words 4096 --scratch-act > "$OUT/flagwords-san_$tool.log" 2>&1
        echo "exit $?" >> "$OUT/flagwords-san_$tool.log"
        grep -E "ERROR SUMMARY|RACECHECK SUMMARY|hazard|max rel err|Error|exit " "$OUT/flagwords-san_$tool.log" | sort \
          | uniq -c | head -n 12 | sed "s/^/$tool: /" | tee -a "$OUT/info.log"
      done ;;
    holds)  # about one 10-minute call; holds-batch and holds-stacks are the rest of the round
      timeout ${TEST_TIMEOUT:-150} python3 -m pytest -q -p no:cacheprovider -rs -m gpu test/pytest/test_stream_holds.py \
        test/pytest/test_batch_releases.py 2>&1 | tee "$OUT/holds-test.log" | tail -n 5
      timeout ${DECODE_TIMEOUT:-420} python3 bench/bench_decode.py --config llama-1b --context 1024 --steps 256 \
        --torch-compile none --pipeline hold-streams=1 --pipeline hold-streams=2 \
        --pipeline hold-streams=1,release-first=true --pipeline hold-streams=2,release-first=true \
        --pipeline release-first=true --json "$OUT/holds-decode.json" 2>&1 | tee "$OUT/holds-decode.log" ;;
    holds-batch)
      timeout ${DECODE_TIMEOUT:-420} python3 bench/bench_decode.py --config llama-1b --context 1024 --steps 256 \
        --torch-compile none --lowering batch_releases=1 --json "$OUT/holds-batch-decode.json" 2>&1 \
        | tee "$OUT/holds-batch-decode.log"
      trace_pair holds hold-streams=2,release-first=true hold2first ;;
    holds-stacks)
      for holds in "" "--hold-streams 2 --release-first" "" "--hold-streams 2 --release-first"; do  # alternated
        timeout ${SWEEP_TIMEOUT:-420} python3 bench/bench_sweep.py --only mlp --torch-compile none \
          --case "MLP x16 2048/8192" --case "MLP x16 4096/14336" $holds 2>&1 \
          | tee -a "$OUT/holds-stacks.log" | grep -E "MLP x16|PASS|FAIL|release-first" | tee -a "$OUT/info.log"
      done ;;
    holds-sweep)
      for holds in "" "--hold-streams 1 --release-first" "" "--hold-streams 1 --release-first"; do  # alternated
        tag=${holds:+holds}; tag=${tag:-default}
        timeout ${SWEEP_TIMEOUT:-280} python3 bench/bench_sweep.py --torch-compile none $holds \
          --json "$OUT/holds-sweep-$tag-$(date +%s).json" 2>&1 | tee -a "$OUT/holds-sweep.log" \
          | grep -E "gemv|MLP|FAIL|release-first" | tee -a "$OUT/info.log"
      done ;;
    holds-decode)
      DECODE_ARGS="--torch-compile none --pipeline hold-streams=1,release-first=true" decode_all ;;
    buckets)
      for run in "llama-1b 4096 1024 1024,2048" "llama-1b 1024 256 512"; do
        set -- $run
        timeout ${DECODE_TIMEOUT:-300} python3 bench/bench_decode.py --config "$1" --context "$2" --steps "$3" \
          --torch-compile none --context-buckets none --context-buckets "$4" --json "$OUT/buckets-$1-$2.json" 2>&1 | tee "$OUT/buckets-$1-$2.log"
      done
      timeout ${TEST_TIMEOUT:-150} python3 -m pytest -q -p no:cacheprovider -rs -m gpu test/pytest/test_context_buckets.py \
        2>&1 | tee "$OUT/buckets-test.log" | tail -n 5 ;;
    kcache)
      timeout ${KCACHE_TIMEOUT:-300} python3 bench/bench_kernel_cache.py --json "$OUT/kernel_cache.json" \
        2>&1 | tee "$OUT/kernel_cache.log" ;;
    test)
      timeout ${TEST_TIMEOUT:-240} python3 -m pytest -q -p no:cacheprovider -rs -m gpu test/pytest 2>&1 | tee "$OUT/pytest.log" | tail -n 15 ;;
    sanitize)
      timeout 30 python3 bench/sanitize_mlp.py $SAN 2>&1 | tee "$OUT/sanitize.log"
      for tool in memcheck synccheck racecheck; do
        echo "== compute-sanitizer --tool $tool" | tee -a "$OUT/sanitize.log"
        timeout ${SAN_TIMEOUT:-70} compute-sanitizer --tool $tool --print-limit 30 python3 bench/sanitize_mlp.py $SAN \
          > "$OUT/san_$tool.log" 2>&1
        echo "exit $?" >> "$OUT/san_$tool.log"
        grep -E "ERROR SUMMARY|RACECHECK SUMMARY|hazard|max rel err|Error|exit " "$OUT/san_$tool.log" | sort | uniq -c | head -n 12 \
          | tee -a "$OUT/sanitize.log"
      done ;;
  esac
  echo "[$what: $(( $(date +%s) - t0 )) s]" | tee -a "$OUT/info.log"
done
