#!/usr/bin/env bash
# On the GPU machine (after bench/torch-gpu-build.sh here, carrying
# build/gpu-torch): every zoo cell's rnn.RNN trained through the CUDA backward
# in fp32, fp16 and bf16 against float64 references, then a first timing of the
# training step against torch.nn.LSTM / GRU (bench/torch_gpu_check.py); then
# examples/train_ddp.py on 1 and 2 GPUs.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
GPU="$ROOT/build/gpu-torch"
source "$ROOT/bench/gpu-env.sh"
export RNN_CACHE_DIR="${RNN_CACHE_DIR:-/tmp/rnn-cache}"
status=0
PYTHONPATH="$ROOT/python${PYTHONPATH:+:$PYTHONPATH}" \
  python3 "$ROOT/bench/torch_gpu_check.py" check "$GPU/models" \
  "${OUT:-/tmp}/torch-gpu-check.json" || status=$?
# DistributedDataParallel (examples/train_ddp.py) on 1 and, where there are two,
# 2 GPUs, 64 sequences per GPU: gradients against one process on the whole
# batch, tokens/s.
NGPU=$(nvidia-smi -L | wc -l)
PYTHONPATH="$ROOT/python${PYTHONPATH:+:$PYTHONPATH}" \
  python3 "$ROOT/bench/torch_gpu_check.py" ddp-module "$GPU/models" /tmp/ddp_lstm.pt
for n in 1 2; do
  if (( n <= NGPU )); then
    PYTHONPATH="$ROOT/python${PYTHONPATH:+:$PYTHONPATH}" torchrun --nproc_per_node=$n \
      "$ROOT/examples/train_ddp.py" --module /tmp/ddp_lstm.pt --batch $((64 * n)) \
      --json "${OUT:-/tmp}/ddp-$n.json"
  fi
done
exit $status
