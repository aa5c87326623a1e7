#!/usr/bin/env bash
# Regenerates the dialect, pass and conversion-pass references from ODS and
# the Passes.td files and copies them into docs/generated/. The test suite
# fails while the committed copy is stale.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${RNN_BUILD_DIR:-$ROOT/build}"
"$ROOT/scripts/build.sh" mlir-doc
cp "$BUILD"/docs/Dialects/*.md "$BUILD"/docs/RNNPasses.md \
  "$BUILD"/docs/RNNConversionPasses.md "$ROOT/docs/generated/"
echo "updated: $(ls "$ROOT"/docs/generated)"
