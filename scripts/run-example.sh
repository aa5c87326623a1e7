#!/usr/bin/env bash
# The main job: builds what is needed, then runs one example cell
# (examples/<name>.mlir, default: lstm) through rnn-opt's pipeline and prints
# the result.
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

PIPELINE="builtin.module(canonicalize,cse)"
echo "== $EXAMPLE through rnn-opt --pass-pipeline='$PIPELINE'"
"$BUILD/bin/rnn-opt" "$EXAMPLE" --pass-pipeline="$PIPELINE"
