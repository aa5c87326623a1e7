#!/usr/bin/env python3
"""On the GPU machine, from the repository root after bench/build-gpu.sh (carry build/gpu; LD_LIBRARY_PATH=build/gpu/lib:/usr/local/cuda/lib64,
RNN_RUNTIME_LIB=build/gpu/lib/librnn_runtime.so): see bench/experiments/README.md."""
# python3 bench/experiments/early_launch_first_calls.py MODE  (matmul-default matmul-new-stream elementwise-new-stream big-alloc lstm-new-stream lstm-new-stream-pinned-ws mgu-direct-new-stream; one process each)
# The MGU timed in a fresh process, then after one event: which ones turn it slow?
# (A model's first call on a stream ran directly until the runtime captured
# it the first time; the eighth session's figures of both are in the README.)
import os, sys, torch
from model_timing import Probe
mgu = Probe("zoo_mgu", "forward", 5)
mgu.show("fresh")
mode = sys.argv[1]
x = torch.randn(64, 1024, device="cuda"); w = torch.randn(1024, 4096, device="cuda"); torch.cuda.synchronize()
if mode == "matmul-default":
    y = x @ w
elif mode == "matmul-new-stream":
    s2 = torch.cuda.Stream()
    with torch.cuda.stream(s2): y = x @ w
elif mode == "elementwise-new-stream":
    s2 = torch.cuda.Stream()
    with torch.cuda.stream(s2): y = x * 2 + 1
elif mode == "big-alloc":
    y = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
elif mode in ("lstm-new-stream", "lstm-new-stream-pinned-ws"):
    if mode.endswith("pinned-ws"): os.environ["RNN_CUDA_CUBLAS_WORKSPACE_MIB"] = "32"
    lstm = Probe("lstm_I1024_H1024", "lstm_seq", 5)
    with torch.no_grad(), torch.cuda.stream(lstm.stream): lstm.call()   # its first call only
    os.environ.pop("RNN_CUDA_CUBLAS_WORKSPACE_MIB", None)
elif mode == "mgu-direct-new-stream":
    s2 = torch.cuda.Stream(); s2.wait_stream(torch.cuda.current_stream())
    outs = mgu.model.outputs("forward", mgu.args)   # other outputs: a new graph key
    with torch.no_grad(), torch.cuda.stream(s2): mgu.model("forward", mgu.args, outs)   # its first call only
torch.cuda.synchronize()
mgu.show(f"after {mode}")
