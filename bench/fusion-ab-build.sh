#!/usr/bin/env bash
# Here (the build machine): the models of bench/fusion_ab.py, each compiled for CUDA with
# rnn-optimize's defaults (NAME.on.so) and without rnn-hoist-input-pointwise and
# rnn-carry-state-pointwise (NAME.off.so), into build/fusion-ab/models (compressed into
# models.tar.xz), the runtime into build/fusion-ab/lib. On the GPU machine:
#   xz -d build/fusion-ab/lib/*.xz; tar -C build/fusion-ab -xJf build/fusion-ab/models.tar.xz
#   GPU=build/fusion-ab source bench/gpu-env.sh
#   python3 bench/fusion_ab.py build/fusion-ab/models $OUT/fusion-ab.json
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${RNN_BUILD_DIR:-$ROOT/build}"
OUT="$BUILD/fusion-ab"
"$ROOT/scripts/build.sh" rnn-compile rnn_runtime rnn_runtime_cuda rnn_device_library >/dev/null
rm -rf "$OUT" && mkdir -p "$OUT/models" "$OUT/lib" "$OUT/src"
cp "$BUILD"/lib/librnn_runtime.so "$BUILD"/lib/librnn_runtime_cuda.so \
  "$BUILD"/lib/rnn_device_library.bc "$OUT/lib/"
python3 "$ROOT/bench/make_zoo_models.py" "$OUT/src" >/dev/null
# The two cells of the rewrites' tests at I = H = 1024: mut1 (input-only z and tanh(x)),
# tanh_state (tanh(h) before the recurrent matmul); forward scans without lengths.
python3 - "$ROOT" "$OUT/src" <<'PY'
import re, sys
root, out = sys.argv[1:]
text = open(f"{root}/test/Tools/rnn-compile/Inputs/mut1.mlir").read()
text = re.sub(r"(?<=[<x])4(?=x)", "1024", text)
text = text.replace(" reverse", "").replace(", %len: tensor<?xi32>", "")
text = re.sub(r"\s*lengths\(%len : tensor<\?xi32>\)", "", text)
open(f"{out}/mut1.mlir", "w").write(text)
open(f"{out}/tanh_state.mlir", "w").write("""
rnn.cell @tanh_state inputs(%x: tensor<?x1024xf32>) states(%h: tensor<?x1024xf32>)
    params(%W: tensor<1024x1024xf32>, %U: tensor<1024x1024xf32>, %b: tensor<1024xf32>)
    -> (tensor<?x1024xf32>) {
  %th = rnn.tanh %h : tensor<?x1024xf32>
  %u = rnn.matmul %th, %U : tensor<?x1024xf32>, tensor<1024x1024xf32> -> tensor<?x1024xf32>
  %w = rnn.matmul %x, %W : tensor<?x1024xf32>, tensor<1024x1024xf32> -> tensor<?x1024xf32>
  %s = rnn.add %u, %w : tensor<?x1024xf32>, tensor<?x1024xf32>
  %sb = rnn.add %s, %b : tensor<?x1024xf32>, tensor<1024xf32>
  %hn = rnn.sigmoid %sb : tensor<?x1024xf32>
  rnn.yield outputs(%hn : tensor<?x1024xf32>) states(%hn : tensor<?x1024xf32>)
}
func.func @forward(%xs: tensor<?x?x1024xf32>, %h0: tensor<?x1024xf32>,
                   %W: tensor<1024x1024xf32>, %U: tensor<1024x1024xf32>, %b: tensor<1024xf32>)
    -> (tensor<?x?x1024xf32>, tensor<?x1024xf32>) {
  %ys, %hT = rnn.scan @tanh_state inputs(%xs : tensor<?x?x1024xf32>) init(%h0 : tensor<?x1024xf32>)
      params(%W, %U, %b : tensor<1024x1024xf32>, tensor<1024x1024xf32>, tensor<1024xf32>)
      -> outputs(tensor<?x?x1024xf32>) states(tensor<?x1024xf32>)
  return %ys, %hT : tensor<?x?x1024xf32>, tensor<?x1024xf32>
}
""")
PY
OFF="--optimize-options=hoist-input-pointwise=false carry-state-pointwise=false"
compile() {  # label source function extra-args...
  local label=$1 src=$2 fn=$3; shift 3
  "$BUILD/bin/rnn-compile" --target=cuda "$@" "$src" -o "$OUT/models/$label.on.so" --runtime-dir "$OUT/lib"
  "$BUILD/bin/rnn-compile" --target=cuda "$@" "$OFF" "$src" -o "$OUT/models/$label.off.so" --runtime-dir "$OUT/lib"
  echo "\"$label\": \"$fn\"," >> "$OUT/functions.part"
}
for cell in lstm gru mgu sru rnn_tanh lstmp; do
  compile "$cell.train" "$OUT/src/zoo_$cell.mlir" forward --training
done
for cell in lstm gru; do
  compile "$cell.bf16.train" "$OUT/src/zoo_$cell.mlir" forward --training --matmul-type=bf16
done
compile mut1.fwd "$OUT/src/mut1.mlir" run_mut1 --matmul-type=tf32
compile tanh_state.fwd "$OUT/src/tanh_state.mlir" forward --matmul-type=tf32
compile mut1.train "$OUT/src/mut1.mlir" run_mut1 --training --matmul-type=tf32
(echo "{"; sed '$ s/,$//' "$OUT/functions.part"; echo "}") > "$OUT/models/functions.json"
rm -rf "$OUT/src" "$OUT/functions.part"
tar -C "$OUT" -cf - models | xz -T0 -6 > "$OUT/models.tar.xz" && rm -rf "$OUT/models"
xz -T0 -6 "$OUT"/lib/*.so "$OUT"/lib/*.bc
echo "fusion-ab-build: $(du -sh "$OUT" | cut -f1)"
