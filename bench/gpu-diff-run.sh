#!/usr/bin/env bash
# On the GPU machine (after bench/gpu-diff-build.sh here, carrying build/gpu-diff/lib and
# build/gpu-diff/cases.tar.xz): the GPU differential test (bench/gpu_diff.py check), its
# JSON in $OUT/gpu-diff.json. Extra arguments go to the check (e.g. --only mut1).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
GPU="$ROOT/build/gpu-diff"
xz -d -f "$GPU"/lib/*.xz 2>/dev/null || true
tar -C "$GPU" -xJf "$GPU/cases.tar.xz"
source "$ROOT/bench/gpu-env.sh"
PYTHONPATH="$ROOT/python${PYTHONPATH:+:$PYTHONPATH}" \
  python3 "$ROOT/bench/gpu_diff.py" check "$GPU/cases" --json "${OUT:-/tmp}/gpu-diff.json" "$@"
