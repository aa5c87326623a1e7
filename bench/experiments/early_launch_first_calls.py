#!/usr/bin/env python3
"""On the GPU machine, from the repository root after bench/build-gpu.sh (carry build/gpu; LD_LIBRARY_PATH=build/gpu/lib:/usr/local/cuda/lib64,
RNN_RUNTIME_LIB=build/gpu/lib/librnn_runtime.so): see bench/experiments/README.md."""
# python3 bench/experiments/early_launch_first_calls.py MODE  (matmul-default matmul-new-stream elementwise-new-stream big-alloc lstm-new-stream lstm-new-stream-pinned-ws mgu-direct-new-stream; one process each)
# The MGU timed in a fresh process, then after one event: which ones turn it slow?
import os, sys, torch
sys.path.insert(0, "bench")
import gpu_bench as gb
m = gb.CudaModel("build/gpu/models/zoo_mgu.so")
a = gb.random_args(m, "forward", 100, 64, seed=5); o = m.outputs("forward", a)
s1 = torch.cuda.Stream(); s1.wait_stream(torch.cuda.current_stream())
def t(label):
    with torch.no_grad(), torch.cuda.stream(s1):
        for _ in range(3): m("forward", a, o)
        ms = gb.time_ms(lambda: m("forward", a, o))
    torch.cuda.synchronize(); print(f"  {label}: {ms:.3f} ms", flush=True)
t("fresh")
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
    l = gb.CudaModel("build/gpu/models/lstm_I1024_H1024.so")
    la = gb.random_args(l, "lstm_seq", 100, 64, seed=5); lo = l.outputs("lstm_seq", la)
    s2 = torch.cuda.Stream(); s2.wait_stream(torch.cuda.current_stream())
    with torch.no_grad(), torch.cuda.stream(s2): l("lstm_seq", la, lo)   # one direct call only
    os.environ.pop("RNN_CUDA_CUBLAS_WORKSPACE_MIB", None)
elif mode == "mgu-direct-new-stream":
    s2 = torch.cuda.Stream(); s2.wait_stream(torch.cuda.current_stream())
    o2 = m.outputs("forward", a)
    with torch.no_grad(), torch.cuda.stream(s2): m("forward", a, o2)   # a new key: one direct call
torch.cuda.synchronize()
t(f"after {mode}")
