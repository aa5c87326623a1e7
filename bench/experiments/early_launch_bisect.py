#!/usr/bin/env python3
"""On the GPU machine, from the repository root after bench/build-gpu.sh (carry build/gpu; LD_LIBRARY_PATH=build/gpu/lib:/usr/local/cuda/lib64,
RNN_RUNTIME_LIB=build/gpu/lib/librnn_runtime.so): see bench/experiments/README.md."""
# python3 bench/experiments/early_launch_bisect.py PHASE  (check_zoo check_two_stage legacy-direct cudnn breakdown bench_config; one process each)
# Which step of gpu_bench turns the MGU slow: the MGU timed fresh, one step, the MGU again.
import os, sys, json, torch
sys.path.insert(0, "bench")
import gpu_bench as gb
MD = "build/gpu/models"
m = gb.CudaModel(f"{MD}/zoo_mgu.so")
a = gb.random_args(m, "forward", 100, 64, seed=5); o = m.outputs("forward", a)
s1 = torch.cuda.Stream(); s1.wait_stream(torch.cuda.current_stream())
def t(label):
    with torch.no_grad(), torch.cuda.stream(s1):
        for _ in range(3): m("forward", a, o)
        ms = gb.time_ms(lambda: m("forward", a, o))
    torch.cuda.synchronize(); print(f"  {label}: {ms:.3f} ms", flush=True)
t("fresh")
phase = sys.argv[1]
medium = next(c for c in json.load(open("bench/configs.json"))["configs"] if c["name"] == "medium")
if phase == "check_zoo":
    gb.check_zoo(MD, [])
elif phase == "check_two_stage":
    gb.check_two_stage_wide(MD, [])
elif phase == "legacy-direct":
    with torch.no_grad():
        for _ in range(50): m("forward", a, o)
elif phase == "cudnn":
    ref = torch.nn.LSTM(1024, 1024).cuda(); x = torch.randn(100, 64, 1024, device="cuda")
    with torch.no_grad():
        for _ in range(50): ref(x)
elif phase == "breakdown":
    ref = torch.nn.LSTM(1024, 1024).cuda(); xs = torch.randn(100, 64, 1024, device="cuda")
    h0 = torch.randn(1, 64, 1024, device="cuda"); c0 = torch.randn(1, 64, 1024, device="cuda")
    args = gb.module_args("lstm", ref, xs, [h0, c0], 1, False)
    gb.breakdown("lstm", args, 100, False)
elif phase == "bench_config":
    gb.bench_config(MD, "lstm", medium, [], gb.MemPool(), with_compile=False)
torch.cuda.synchronize()
t(f"after {phase}")
