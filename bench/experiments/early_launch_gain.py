#!/usr/bin/env python3
"""On the GPU machine, from the repository root after bench/build-gpu.sh (carry build/gpu; LD_LIBRARY_PATH=build/gpu/lib:/usr/local/cuda/lib64,
RNN_RUNTIME_LIB=build/gpu/lib/librnn_runtime.so): see bench/experiments/README.md."""
# python3 bench/experiments/early_launch_gain.py TRIGGER  (none matmul lstm_graph_own_stream)
# Slow state vs early launch: MGU and LSTM with and without early launch, before and after a trigger.
import os, sys, torch
sys.path.insert(0, "bench")
import gpu_bench as gb
def make(name, fn, seed):
    m = gb.CudaModel(f"build/gpu/models/{name}.so")
    a = gb.random_args(m, fn, 100, 64, seed=seed); o = m.outputs(fn, a)
    s = torch.cuda.Stream(); s.wait_stream(torch.cuda.current_stream())
    return m, fn, a, o, s
def t(x, label, overlap=True):
    m, fn, a, o, s = x
    if not overlap: os.environ["RNN_CUDA_OVERLAP_LAUNCHES"] = "0"
    with torch.no_grad(), torch.cuda.stream(s):
        for _ in range(3):
            m(fn, a, o)
        ms = gb.time_ms(lambda: m(fn, a, o))
    torch.cuda.synchronize()
    os.environ.pop("RNN_CUDA_OVERLAP_LAUNCHES", None)
    return f"{label} {ms:.3f}"
trig = sys.argv[1]
mgu = make("zoo_mgu", "forward", 5)
gru = make("zoo_gru_reset_before", "forward", 5) if trig != "gru_first" else None
lstm = make("lstm_I1024_H1024", "lstm_seq", 5)
def row(tag):
    print(tag, " | ".join([t(mgu, "mgu"), t(mgu, "mgu-no-early", False),
                           t(lstm, "lstm") if trig != "matmul" else "", t(lstm, "lstm-no-early", False) if trig != "matmul" else ""]), flush=True)
# lstm shares the MGU's stream so that it does not trigger
lstm = (lstm[0], lstm[1], lstm[2], lstm[3], mgu[4])
row("before")
if trig == "matmul":
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        x = torch.randn(64, 1024, device="cuda"); w = torch.randn(1024, 4096, device="cuda")
        for _ in range(2000): y = x @ w
    torch.cuda.synchronize()
elif trig == "lstm_graph_own_stream":
    l2 = make("lstm_I1024_H1024", "lstm_seq", 6)
    print("  trigger", t(l2, "lstm on its own stream"))
row("after ")
if gru:
    g = (gru[0], gru[1], gru[2], gru[3], mgu[4])
    print("gru_rb on the MGU's stream after:", t(g, "gru"), t(g, "gru-no-early", False))
