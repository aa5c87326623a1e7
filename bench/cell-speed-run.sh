#!/usr/bin/env bash
# On the GPU machine (after bench/cell-speed-build.sh here, carrying build/cell-speed/lib
# and build/cell-speed/cases.tar.xz): the cell-speed test (bench/cell_speed.py check), its
# JSON in $OUT/cell-speed.json. Extra arguments go to the check (e.g. --only cell3 cell7).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
GPU="$ROOT/build/cell-speed"
xz -d -f "$GPU"/lib/*.xz 2>/dev/null || true
tar -C "$GPU" -xJf "$GPU/cases.tar.xz"
source "$ROOT/bench/gpu-env.sh"
PYTHONPATH="$ROOT/python${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 \
  python3 "$ROOT/bench/cell_speed.py" check "$GPU/cases" --json "${OUT:-/tmp}/cell-speed.json" "$@"
