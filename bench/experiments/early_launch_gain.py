#!/usr/bin/env python3
"""On the GPU machine, from the repository root after bench/build-gpu.sh (carry build/gpu; LD_LIBRARY_PATH=build/gpu/lib:/usr/local/cuda/lib64,
RNN_RUNTIME_LIB=build/gpu/lib/librnn_runtime.so): see bench/experiments/README.md."""
# python3 bench/experiments/early_launch_gain.py TRIGGER  (none matmul lstm_graph_own_stream)
# Slow state vs early launch: MGU and LSTM with and without early launch, before and after a trigger.
import sys, torch
from model_timing import Probe, matmuls
trig = sys.argv[1]
mgu = Probe("zoo_mgu", "forward", 5)
gru = Probe("zoo_gru_reset_before", "forward", 5)
lstm = Probe("lstm_I1024_H1024", "lstm_seq", 5)
# The LSTM and the GRU run on the MGU's stream so that they do not trigger.
def t(probe, label, overlap=True):
    return f"{label} {probe.time(stream=mgu.stream, overlap=overlap):.3f}"
def row(tag):
    print(tag, " | ".join([t(mgu, "mgu"), t(mgu, "mgu-no-early", False),
                           t(lstm, "lstm") if trig != "matmul" else "",
                           t(lstm, "lstm-no-early", False) if trig != "matmul" else ""]), flush=True)
row("before")
if trig == "matmul":
    matmuls(torch.cuda.Stream(), 2000)
elif trig == "lstm_graph_own_stream":
    l2 = Probe("lstm_I1024_H1024", "lstm_seq", 6)
    print(f"  trigger lstm on its own stream {l2.time():.3f}")
row("after ")
print("gru_rb on the MGU's stream after:", t(gru, "gru"), t(gru, "gru-no-early", False))
