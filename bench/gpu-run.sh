#!/usr/bin/env bash
# On the GPU machine (after bench/build-gpu.sh here, carrying build/gpu):
# correctness first, then timings against cuDNN; full JSON in $OUT.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
GPU="$ROOT/build/gpu"
source "$ROOT/bench/gpu-env.sh"
# RNN_PROFILE=only runs the per-kernel profile alone (below).
if [ "${RNN_PROFILE:-1}" != only ]; then
python3 "$ROOT/bench/gpu_bench.py" "$GPU/models" "${OUT:-/tmp}/gpu-bench.json"
# The runtime's own GEMM kernels (packed TF32 GEMM at `wide`, small-batch
# GEMV at `small-latency`): checked, then timed against cuBLAS in one process.
python3 "$ROOT/bench/runtime_gemm_check.py" "$GPU/models" | tee "${OUT:-/tmp}/runtime-gemm.txt"
# The hand-written path of ../shared/bench/step_probe.cu, in the same run.
NVCC="${CUDA_HOME:-/usr/local/cuda}/bin/nvcc"
if [ -f "$GPU/step_probe.cu" ] && [ -x "$NVCC" ]; then
  echo "== hand-written reference path (step_probe.cu: cuBLAS + one fused kernel per step)"
  "$NVCC" -O3 -arch=sm_90a "$GPU/step_probe.cu" -lcublas -o /tmp/step_probe
  /tmp/step_probe | tee "${OUT:-/tmp}/step-probe.txt"
fi
fi
# Per-kernel durations of one call (Nsight Compute, no graph): where a step's
# time goes. Set RNN_PROFILE=0 to skip it, RNN_PROFILE=only to run it alone.
NCU="${CUDA_HOME:-/usr/local/cuda}/bin/ncu"
if [ "${RNN_PROFILE:-1}" != 0 ] && [ -x "$NCU" ]; then
  for spec in "lstm_I1024_H1024 lstm_seq" "zoo_layernorm_lstm forward" "zoo_mgu forward" \
              "zoo_gru_reset_before forward" "zoo_lstmp forward"; do
    set -- $spec
    echo "== per-kernel profile: $1 ($2, T=10, B=64)"
    # At the GPU's own clocks and with warm caches, as in a real call (ncu
    # locks clocks to base and flushes caches between kernels by default).
    "$NCU" --profile-from-start off --clock-control none --cache-control none \
      --metrics gpu__time_duration.sum --csv \
      python3 "$ROOT/bench/kernel_profile.py" "$GPU/models/$1.so" "$2" 10 64 \
      > "${OUT:-/tmp}/ncu-$1.csv" 2>/dev/null || true
    python3 "$ROOT/bench/kernel_summary.py" "${OUT:-/tmp}/ncu-$1.csv" 10 || true
  done
fi
# Where a step's time goes in the replayed graph (kernel timestamps: each
# kernel's duration, its gap to the one ahead, the time it adds to the step).
if [ "${RNN_PROFILE:-1}" != only ]; then
  M="$GPU/models"
  python3 "$ROOT/bench/step_timeline.py" "$M/lstm_I1024_H1024.so" lstm_seq 100 64 \
    "$M/zoo_gru_reset_before.so" forward 100 64 "$M/zoo_mgu.so" forward 100 64 \
    "$M/gru_I1024_H1024.so" gru_seq 100 64 "$M/lstm_bf16_I1024_H1024.so" lstm_seq 100 64 \
    2>&1 | grep -v -i "warn" | tee "${OUT:-/tmp}/step-timeline.txt"
fi
