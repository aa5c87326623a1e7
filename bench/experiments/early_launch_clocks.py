#!/usr/bin/env python3
"""On the GPU machine, from the repository root after bench/build-gpu.sh (carry build/gpu; LD_LIBRARY_PATH=build/gpu/lib:/usr/local/cuda/lib64,
RNN_RUNTIME_LIB=build/gpu/lib/librnn_runtime.so): see bench/experiments/README.md."""
# python3 bench/experiments/early_launch_clocks.py N_MATMULS  (1, 2000)
# Is the slow state a clock/power state that time undoes?
import os, sys, time, subprocess, torch
sys.path.insert(0, "bench")
import gpu_bench as gb
m = gb.CudaModel("build/gpu/models/zoo_mgu.so")
a = gb.random_args(m, "forward", 100, 64, seed=5); o = m.outputs("forward", a)
def smi():
    return subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active",
                           "--format=csv,noheader"], capture_output=True, text=True).stdout.strip()
def t(s, label, overlap=True):
    if not overlap: os.environ["RNN_CUDA_OVERLAP_LAUNCHES"] = "0"
    with torch.no_grad(), torch.cuda.stream(s):
        for _ in range(3):
            m("forward", a, o)
        ms = gb.time_ms(lambda: m("forward", a, o))
    torch.cuda.synchronize()
    os.environ.pop("RNN_CUDA_OVERLAP_LAUNCHES", None)
    print(f"  {label}: {ms:.3f} ms   [{smi()}]", flush=True)
s1 = torch.cuda.Stream()
print("idle:", smi())
t(s1, "before")
t(s1, "before, no early", False)
with torch.cuda.stream(s1):
    x = torch.randn(64, 1024, device="cuda"); w = torch.randn(1024, 4096, device="cuda")
    n = int(sys.argv[1])
    for _ in range(n): y = x @ w
torch.cuda.synchronize()
print(f"after {n} matmuls:", smi())
t(s1, "after")
time.sleep(2); t(s1, "after + 2 s")
time.sleep(10); t(s1, "after + 12 s")
t(s1, "no early", False)
