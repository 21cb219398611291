#!/usr/bin/env bash
# gpu_run.sh — THE script run on the GPU machine: GPU tests, compute-sanitizer, `harness --verify
# all`, `harness --bench`; logs and JSON under $OUT, a short summary table printed last.
#
#   tools/gpu_run.sh [PHASE...]     PHASE: tests sanitize verify verifytrial verifybase verifyjobs1 verifygpus bisect
#                                   sanitizeharness submissions subbench bench benchtest benchbase emulate rehearse
#                                   verifywarm
#                                   (default: tests sanitize verify bench; verifytrial is verify with
#                                   --isolate trial; verifybase and benchbase run $dist/base/harness, a
#                                   baseline with its own paths/, the same way: verifybase then compares
#                                   the two verify reports trial by trial with tools/report_diff.py)
#
# Environment:
#   NVFP4_DIST   folder with the executables (default: build-gpu-dist, made by tools/gpu_dist.sh
#                on the build machine: harness, its paths/ modules, the gpu test executables,
#                test_planted_gpu and its planted-paths/ modules)
#   OUT          where logs and JSON go (default: ./gpu-out); at most 8 files come back from the
#                device machine, so each phase writes one log (+ one JSON)
#   NVFP4_VERIFY what `harness --verify` runs (default: all, the staged lattice on the suite)
#   NVFP4_BENCH  combinations to bench (default: plain,graph,autotune+graph, plus the fused
#                combinations when the harness lists a gpu `fused` optimization)
#   NVFP4_GPUMODE_CHECKOUT  (emulate) a copy of gpu-mode/reference-kernels' problems/nvidia (carried,
#                never committed): tools/gpumode_data_check.py compares the rehearsal's generator with it
# Each step has its own time limit so one hang cannot eat the whole call; the exit code is 0
# only when every step that ran passed.
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
dist=${NVFP4_DIST:-build-gpu-dist}
out=${OUT:-gpu-out}
mkdir -p "$out"
phases=("$@")
[ ${#phases[@]} -eq 0 ] && phases=(tests sanitize verify bench)
export NVFP4_HARNESS_BIN="$here/$dist/harness"
export NVFP4_SOURCE_DIR="$here"
summary="$out/summary.txt"
: > "$summary"
status=0

note() { echo "$*" | tee -a "$summary"; }
# step NAME LIMIT LOG CMD...: runs CMD with a time limit, appends its output to LOG, records a row.
step() {
  local name=$1 limit=$2 log=$3; shift 3
  local t0=$SECONDS rc
  echo "=== $name: $* (limit ${limit}s)" >> "$log"
  timeout --kill-after=10 "$limit" "$@" >> "$log" 2>&1
  rc=$?
  local verdict=PASS
  case $rc in
    0) ;;
    125) verdict=SKIP ;;
    124|137) verdict=TIMEOUT; status=1 ;;
    *) verdict="FAIL(rc=$rc)"; status=1 ;;
  esac
  printf '%-44s %-12s %5ds\n' "$name" "$verdict" $((SECONDS - t0)) >> "$summary.rows"
  echo "=== $name: $verdict rc=$rc $((SECONDS - t0))s" >> "$log"
}

: > "$summary.rows"
{
  echo "gpu_run.sh $(date -u +%Y-%m-%dT%H:%M:%SZ) phases: ${phases[*]}"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv 2>&1
  echo "dist: $(ls "$dist" | tr '\n' ' ')"
} | tee -a "$summary"

sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
gpu_tests=$(ls "$dist"/test_* 2>/dev/null | grep -v test_planted_gpu | sort)

for phase in "${phases[@]}"; do
  case $phase in
    tests)
      # Every gpu test executable that was carried (label gpu: decode, plans, harness, fused...).
      for t in $gpu_tests; do
        step "test $(basename "$t")" 300 "$out/tests.log" "$t" --no-colors
      done
      # The GPU-specific planted bugs: the real harness with the test's own modules (tests/planted).
      if [ -x "$dist/test_planted_gpu" ] && [ -d "$dist/planted-paths" ]; then
        step "test test_planted_gpu" 300 "$out/tests.log" \
          env NVFP4_PATHS_DIR="$here/$dist/planted-paths" "$dist/test_planted_gpu" --no-colors
      fi
      # The v5 kernels' main loops in the carried gpu module's SASS (no R2UR / WARPSYNC, 8 HGMMA).
      step "sass_check gpu module" 60 "$out/tests.log" python3 tools/sass_check.py "$dist/paths/libnvfp4_paths_gpu.so"
      ;;
    sanitize)
      # Small shapes of every GPU combination, in one process so the sanitizer sees every kernel
      # (test_plans' "small" cases: plain, graph, autotune, autotune+graph), plus the decoder test.
      for tool in memcheck racecheck initcheck synccheck; do
        step "sanitizer $tool test_plans[small]" 300 "$out/sanitize.log" \
          "$sanitizer" --tool "$tool" --error-exitcode 99 --print-limit 20 \
          "$dist/test_plans" --no-colors -tc='small*'
        step "sanitizer $tool test_decode" 60 "$out/sanitize.log" \
          "$sanitizer" --tool "$tool" --error-exitcode 99 --print-limit 20 "$dist/test_decode" --no-colors
        # The fused kernel's own test, when it was carried (its small cases).
        if [ -x "$dist/test_fused" ]; then
          step "sanitizer $tool test_fused[small]" 300 "$out/sanitize.log" \
            "$sanitizer" --tool "$tool" --error-exitcode 99 --print-limit 20 \
            "$dist/test_fused" --no-colors -tc='small*'
        fi
      done
      ;;
    verify)
      what=${NVFP4_VERIFY:-all}
      step "harness --backend gpu --verify $what" "${NVFP4_VERIFY_LIMIT:-540}" "$out/verify.log" \
        "$dist/harness" --backend gpu --verify "$what" --json "$out/verify.json"
      ;;
    verifywarm)
      # The same verify again: every reference comes from the on-disk cache the first run filled
      # (harness/check/reference_store.hpp); outcomes trial for trial against the first run.
      what=${NVFP4_VERIFY:-all}
      step "harness --backend gpu --verify $what (reference cache warm)" "${NVFP4_VERIFY_LIMIT:-540}" \
        "$out/verify-warm.log" "$dist/harness" --backend gpu --verify "$what" --json "${TMPDIR:-/tmp}/verify-warm.json"
      step "report_diff cold -> warm" 60 "$out/verify-warm.log" \
        python3 tools/report_diff.py "$out/verify.json" "${TMPDIR:-/tmp}/verify-warm.json"
      ;;
    verifytrial)
      # The same verify with one process per trial (--isolate trial): the before/after of workers.
      what=${NVFP4_VERIFY:-all}
      step "harness --backend gpu --verify $what --isolate trial" "${NVFP4_VERIFY_LIMIT:-540}" \
        "$out/verify-trial.log" "$dist/harness" --backend gpu --verify "$what" --isolate trial \
        --json "$out/verify-trial.json"
      ;;
    verifybase)
      # The same verify with the baseline harness, twice (its references cold, then warm: the base
      # may hash the reference's sources differently), then both reports compared trial by trial.
      if [ -x "$dist/base/harness" ]; then
        what=${NVFP4_VERIFY:-all}
        for run in cold warm; do
          step "base harness --backend gpu --verify $what ($run)" "${NVFP4_VERIFY_LIMIT:-540}" "$out/verify-base.log" \
            "$dist/base/harness" --backend gpu --verify "$what" --json "${TMPDIR:-/tmp}/verify-base-$run.json"
        done
        step "report_diff base -> this" 60 "$out/verify-base.log" \
          python3 tools/report_diff.py "${TMPDIR:-/tmp}/verify-base-warm.json" "$out/verify.json"
      fi
      ;;
    verifyjobs1)
      # The same verify with one slot (--jobs 1: every trial has the device alone, as the default
      # was before slots shared a GPU); outcomes trial for trial against the default run.
      j="${TMPDIR:-/tmp}/verify-jobs1.json"
      step "harness --verify all --jobs 1" "${NVFP4_VERIFY_LIMIT:-540}" "$out/verify-gpus.log" \
        "$dist/harness" --backend gpu --verify all --jobs 1 --json "$j"
      step "report_diff default -> --jobs 1" 60 "$out/verify-gpus.log" \
        python3 tools/report_diff.py "$out/verify.json" "$j"
      ;;
    verifygpus)
      # The same verify on 2 and on every GPU of the host (when it has several): time and the
      # outcomes trial for trial against the one-GPU run.
      n=$(nvidia-smi -L 2>/dev/null | wc -l)
      for g in 2 "$n"; do
        [ "$n" -ge "$g" ] && [ "$g" -gt 1 ] || continue
        list=$(seq -s, 0 $((g - 1)))
        j="${TMPDIR:-/tmp}/verify-${g}gpu.json"  # not under $OUT: at most 8 files come back
        [ -f "$j" ] && continue
        step "harness --verify all --gpus $list" "${NVFP4_VERIFY_LIMIT:-540}" "$out/verify-gpus.log" \
          "$dist/harness" --backend gpu --verify all --gpus "$list" --json "$j"
        step "report_diff 1 GPU -> $g GPUs" 60 "$out/verify-gpus.log" \
          python3 tools/report_diff.py "$out/verify.json" "$j"
      done
      ;;
    bisect)
      # Bisect of a planted GPU bug (the test's planted-paths modules) on the default GPU suite.
      if [ -d "$dist/planted-paths" ]; then
        # (exit 1: the bisect names a culprit; its JSON has each trial's start, wall and judging time)
        step "bisect autotune+bug-edge-tiles-unwritten+graph" 300 "$out/bisect.log" \
          env NVFP4_PATHS_DIR="$here/$dist/planted-paths" "$dist/harness" bisect autotune+bug-edge-tiles-unwritten+graph \
          --backend gpu --json "$out/bisect.json"
        if [ -x "$dist/base/harness" ]; then
          step "base bisect autotune+bug-edge-tiles-unwritten+graph" 300 "$out/bisect.log" \
            env NVFP4_PATHS_DIR="$here/$dist/planted-paths" "$dist/base/harness" bisect \
            autotune+bug-edge-tiles-unwritten+graph --backend gpu
        fi
      fi
      ;;
    sanitizeharness)
      # --sanitize through the harness on the product's own paths: no report expected.
      step "harness --sanitize memcheck plain,fused" 400 "$out/sanitize-harness.log" \
        "$dist/harness" --backend gpu --verify plain,fused --shape 33x65x160,128x96x256x2 --dist normal \
        --warmup 1 --runs 2 --sanitize memcheck
      # A plugin that reads one byte past the end of A and discards it (tests/plugin's planted build
      # of the GPU example): its outputs are right, so verify passes; under memcheck the trial must be
      # ERROR with the sanitizer's report (exit 1 wanted).
      oob="$dist/plugins/libnvfp4_plugin_gpu_oob.so"
      if [ -f "$oob" ]; then
        step "planted OOB plugin: verify passes" 120 "$out/sanitize-harness.log" \
          "$dist/harness" verify plain --plugin "$oob" --shape 33x65x160 --dist normal
        step "planted OOB plugin: --sanitize memcheck ERROR (exit 1 wanted)" 300 "$out/sanitize-harness.log" \
          bash -c '"$@" | tee /dev/stderr | grep -q "ERROR.*compute-sanitizer memcheck"' _ \
          "$dist/harness" verify plain --plugin "$oob" --shape 33x65x160 --dist normal --sanitize memcheck
      fi
      ;;
    submissions)
      # The planted torch submissions (tests/planted/submissions, label gpu) through this harness.
      step "planted submissions (torch)" 540 "$out/submissions.log" \
        python3 tests/planted/submissions/run_planted.py --label gpu --harness "$dist/harness" \
        ${NVFP4_SUBMISSIONS_ONLY:+--only "$NVFP4_SUBMISSIONS_ONLY"}
      ;;
    subbench)
      # Python submissions timed by bench trials on GPU MODE's benchmark shapes (both timing
      # methods), and a submission trial's overhead outside the submission's own work.
      step "bench origin_story plain,cuda-graph" 300 "$out/subbench.log" \
        "$dist/harness" bench plain,cuda-graph --submission examples/origin_story/submission.py \
        --json "$out/subbench-origin.json"
      step "bench correct torch submission plain,graph" 300 "$out/subbench.log" \
        "$dist/harness" bench plain,graph --submission tests/planted/submissions/gpu/correct.py \
        --json "$out/subbench-correct.json"
      step "verify correct torch submission 256x4096x7168 (overhead)" 200 "$out/subbench.log" \
        "$dist/harness" verify plain,graph --submission tests/planted/submissions/gpu/correct.py \
        --shape 256x4096x7168 --dist gpumode --seed 1111
      ;;
    bench)
      combos=${NVFP4_BENCH:-plain,graph,autotune+graph}
      if [ -z "${NVFP4_BENCH:-}" ] && "$dist/harness" --list 2>/dev/null | grep -qw fused; then
        combos="$combos,fused,fused+graph,autotune+fused+graph"
      fi
      step "harness --bench $combos" 300 "$out/bench.log" \
        "$dist/harness" --bench "$combos" --bench-json "$out/bench.json"
      ;;
    benchtest)
      # The fused path on GPU MODE's nine distinct test shapes (task.yml's tests, M x N x K), with
      # the cuBLASLt yardstick of each shape.
      shapes=1536x512x7168,256x512x256,3072x1024x1536,7168x1024x256,7168x2304x2048,4608x384x7168,7168x384x2304,512x768x7168,4096x768x512
      step "harness --bench on the test shapes" 400 "$out/bench-test.log" \
        "$dist/harness" --bench "${NVFP4_BENCH:-fused+graph,autotune+fused+graph}" --shape "$shapes" \
        --dist gpumode --seed 1111 --bench-json "$out/bench-test.json"
      ;;
    benchbase)
      # The same bench with a baseline harness carried as $dist/harness-base (e.g. the commit before
      # a refactor, with its own paths/ in $dist/base/), in the same call: before/after figures from one
      # machine state.
      if [ -x "$dist/base/harness" ]; then
        combos=${NVFP4_BENCH:-plain,graph,autotune+graph,fused,fused+graph,autotune+fused+graph}
        step "base harness --bench $combos" 300 "$out/bench-base.log" \
          "$dist/base/harness" --bench "$combos" --bench-json "$out/bench-base.json"
      fi
      ;;
    emulate)
      # The FP4 emulation of torch._scaled_mm on this GPU (eager, compile, graph capture, fallback),
      # and the rehearsal's data generator against GPU MODE's own when a copy of it was carried.
      step "emulate_fp4_selftest" 300 "$out/emulate.log" python3 tools/emulate_fp4_selftest.py
      if [ -n "${NVFP4_GPUMODE_CHECKOUT:-}" ] && [ -d "$NVFP4_GPUMODE_CHECKOUT" ]; then
        step "gpumode_data_check" 120 "$out/emulate.log" python3 tools/gpumode_data_check.py "$NVFP4_GPUMODE_CHECKOUT"
      fi
      ;;
    rehearse)
      # GPU MODE's evaluator rehearsed (harness rehearse gpumode) on the origin story and on the
      # B200-style example (under the FP4 emulation on a Hopper), each without and with the pair of
      # toggles that breaks it (that run must end with exit 1), then the example's bisect, and the
      # origin story without its per-tensor warm-up: one job per GPU at a time (a timed mode beside
      # another job's would time both; NVFP4_REHEARSE_ONLY="NAME ..." picks some). Reports are
      # packed into one archive (at most 8 files come back).
      n=$(nvidia-smi -L 2>/dev/null | wc -l)
      rdir="${TMPDIR:-/tmp}/rehearse"
      mkdir -p "$rdir"
      origin=examples/origin_story/submission.py b200=examples/gpumode_b200/submission.py
      # origin-good: without the bad pair the origin story passes the test mode and then runs out
      # of time in a timed mode (the story's timeout: exit 1); without warmup-10 as well it passes.
      jobs=("origin-good $origin autotune-epilogue+init-at-import+warmup-10 1"
            "origin-bad $origin autotune-epilogue+cuda-graph+init-at-import+warmup-10 1"
            "b200-good $b200 graph-cache+init-at-import+warmup-10 0"
            "b200-bad $b200 autotune-epilogue+graph-cache+init-at-import+warmup-10 1"
            "origin-nowarmup $origin autotune-epilogue+init-at-import 0")
      if [ -n "${NVFP4_REHEARSE_ONLY:-}" ]; then  # e.g. "origin-good b200-good"
        keep=()
        for j in "${jobs[@]}"; do [[ " $NVFP4_REHEARSE_ONLY " == *" ${j%% *} "* ]] && keep+=("$j"); done
        jobs=("${keep[@]}")
      fi
      i=0
      for j in "${jobs[@]}"; do
        read -r name sub toggles want <<< "$j"
        gpu=$(( n > 0 ? i % n : 0 ))
        (
          export CUDA_VISIBLE_DEVICES=$gpu
          step "rehearse $name ($toggles; exit $want wanted)" 560 "$rdir/$name.log" \
            bash -c '"$@"; rc=$?; [ $rc -eq '"$want"' ] || { echo "exit $rc, wanted '"$want"'"; exit 1; }' _ \
            "$dist/harness" rehearse gpumode --submission "$sub" --toggles "$toggles" --json "$rdir/$name.json"
          if [ "$name" = b200-bad ]; then
            # A bisect that finds the culprit exits 1.
            step "bisect b200 example (emulated FP4; exit 1 wanted)" 400 "$rdir/$name.log" \
              bash -c '"$@"; rc=$?; [ $rc -eq 1 ] || { echo "exit $rc, wanted 1"; exit 1; }' _ \
              "$dist/harness" bisect "$toggles" --submission "$sub" --shape 256x4096x7168 --dist gpumode \
              --seed 1111 --budget-load 120 --budget-init 120 --json "$rdir/bisect-b200.json"
          fi
        ) &
        i=$((i + 1))
        if [ "$n" -le 1 ] || [ $((i % n)) -eq 0 ]; then wait; fi
      done
      wait
      for j in "${jobs[@]}"; do
        read -r name _ <<< "$j"
        cat "$rdir/$name.log" >> "$out/rehearse.log"
      done
      grep -q "FAIL\|TIMEOUT" "$summary.rows" && status=1
      tar -czf "$out/rehearse-json.tar.gz" -C "$rdir" $(cd "$rdir" && ls *.json 2>/dev/null)
      ;;
    *) echo "unknown phase $phase" >&2; exit 2 ;;
  esac
done

# Short summary: each step's verdict, the verify summary line(s) and the bench table.
{
  echo
  echo "step                                         verdict       time"
  cat "$summary.rows"
  for v in verify verify-warm verify-trial verify-base verify-gpus bisect sanitize-harness submissions subbench emulate; do
    if [ -f "$out/$v.log" ]; then
      echo
      echo "--- $v (tail)"
      tail -n 25 "$out/$v.log"
    fi
  done
  for b in bench bench-test bench-base; do
    if [ -f "$out/$b.log" ]; then
      echo
      echo "--- $b summary"
      sed -n '/^Summary/,$p' "$out/$b.log"
    fi
  done
  if [ -f "$out/rehearse.log" ]; then
    echo
    echo "--- rehearse (results and verdicts)"
    grep -E "^(test|benchmark|leaderboard) |^result:|culprit|why:|^=== " "$out/rehearse.log"
  fi
  if [ -f "$out/sanitize.log" ]; then
    echo
    echo "--- sanitizer error summaries"
    grep -E "ERROR SUMMARY|RACECHECK SUMMARY|LEAK SUMMARY" "$out/sanitize.log" | sort | uniq -c
  fi
} | tee -a "$summary"
rm -f "$summary.rows"
exit $status
