#!/usr/bin/env bash
# On the GPU machine (after bench/grid-trace-build.sh here, carrying build/grid-trace).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
GPU="$ROOT/build/grid-trace"
source "$ROOT/bench/gpu-env.sh"
for variant in ${GRID_TRACE_VARIANTS:-plain trace nowait}; do
  echo "== $variant"
  # Two trace lines per kernel, block and batch: the printf runs at every call.
  python3 "$ROOT/bench/grid_trace.py" "$GPU/$variant/models" 2>&1 \
    | awk '/^trace/ { key = $2 $3 $4 $5 $7; if (seen[key]++ >= 2) next } { print }'
done
