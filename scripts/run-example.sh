#!/usr/bin/env bash
# The main job: builds what is needed, then runs one example cell
# (examples/<name>.mlir, default: lstm) through rnn-opt's rnn-optimize pipeline
# and prints the optimised IR with the kernel count per step before and after.
#   ./scripts/run-example.sh [name]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${RNN_BUILD_DIR:-$ROOT/build}"
NAME="${1:-lstm}"
EXAMPLE="$ROOT/examples/$NAME.mlir"
if [[ ! -f "$EXAMPLE" ]]; then
  echo "run-example: no example '$NAME'; choose one of:" >&2
  (cd "$ROOT/examples" && ls *.mlir | sed 's/\.mlir$//' | sed 's/^/  /') >&2
  exit 2
fi

"$ROOT/scripts/build.sh" rnn-opt >/dev/null

# Kernels per step: the matmuls and fused pointwise groups inside the cells.
count_kernels() {
  awk '/rnn.cell @/{inCell=1} /^  func.func/{inCell=0}
       inCell && /rnn.matmul/{m++} inCell && /rnn.pointwise\(/{p++}
       inCell && /= rnn\.(add|sub|mul|div|max|min|neg|sigmoid|tanh|relu|exp|log|sqrt|rsqrt|cast|reduce_|layer_norm) /{u++}
       END{printf "%d matmuls, %d fused pointwise groups, %d unfused pointwise ops", m, p, u}'
}

echo "== $EXAMPLE"
echo "-- as written: $("$BUILD/bin/rnn-opt" "$EXAMPLE" | count_kernels) in its cells"
echo "-- after rnn-optimize (concat-gate-matmuls, hoist-input-projection, fuse-pointwise):"
"$BUILD/bin/rnn-opt" "$EXAMPLE" --rnn-optimize | tee "${TMPDIR:-/tmp}/rnn-example-$NAME.mlir"
echo "-- $("$BUILD/bin/rnn-opt" "$EXAMPLE" --rnn-optimize | count_kernels) per step in its cells"
