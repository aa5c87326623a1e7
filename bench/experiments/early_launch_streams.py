#!/usr/bin/env python3
"""On the GPU machine, from the repository root after bench/build-gpu.sh (carry build/gpu; LD_LIBRARY_PATH=build/gpu/lib:/usr/local/cuda/lib64,
RNN_RUNTIME_LIB=build/gpu/lib/librnn_runtime.so): see bench/experiments/README.md."""
# python3 bench/experiments/early_launch_streams.py MODE  (same other)
# After the slow state sets in: which stream brings the MGU's early launch back?
import os, sys, torch
sys.path.insert(0, "bench")
import gpu_bench as gb
m = gb.CudaModel("build/gpu/models/zoo_mgu.so")
a = gb.random_args(m, "forward", 100, 64, seed=5); o = m.outputs("forward", a)
def t(s, label, overlap=True):
    if not overlap: os.environ["RNN_CUDA_OVERLAP_LAUNCHES"] = "0"
    with torch.no_grad(), torch.cuda.stream(s):
        for _ in range(3):
            m("forward", a, o)
        ms = gb.time_ms(lambda: m("forward", a, o))
    torch.cuda.synchronize()
    os.environ.pop("RNN_CUDA_OVERLAP_LAUNCHES", None)
    print(f"  {label}: {ms:.3f} ms", flush=True)
def matmul(s, n=2000):
    with torch.cuda.stream(s):
        x = torch.randn(64, 1024, device="cuda"); w = torch.randn(1024, 4096, device="cuda")
        for _ in range(n): y = x @ w
    torch.cuda.synchronize()
s1 = torch.cuda.Stream()
t(s1, "s1 before")
mode = sys.argv[1]
if mode == "same":
    matmul(s1); t(s1, "s1 after matmul on s1")
    s2 = torch.cuda.Stream(); matmul(s2); t(s1, "s1 after matmul on s2")
else:
    s2 = torch.cuda.Stream(); matmul(s2); t(s1, "s1 after matmul on s2")
    t(s2, "s2 (the matmul's stream)")
    s3 = torch.cuda.Stream(); t(s3, "s3 new stream")
    hp = torch.cuda.Stream(priority=-1); t(hp, "new high-priority stream")
    t(s1, "s1 again")
    t(s1, "s1 no early launch", overlap=False)
