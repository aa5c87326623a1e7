#!/usr/bin/env python3
"""On the GPU machine, from the repository root after bench/build-gpu.sh (carry build/gpu; LD_LIBRARY_PATH=build/gpu/lib:/usr/local/cuda/lib64,
RNN_RUNTIME_LIB=build/gpu/lib/librnn_runtime.so): see bench/experiments/README.md."""
# does the MGU slow down when other work exists in the process, or with where its buffers live?
import torch
from model_timing import Probe
mgu = Probe("zoo_mgu", "forward", 5)
mgu.show("A mgu, alone in the process")
lstm = Probe("lstm_I1024_H1024", "lstm_seq", 5)
lstm.show("lstm")
mgu.show("B same mgu graph after the lstm ran")
Probe("zoo_mgu", "forward", 6).show("C new mgu buffers allocated after the lstm's")
mgu.show("D first mgu graph again")
pad = torch.empty(64 << 20, dtype=torch.uint8, device="cuda")
Probe("zoo_mgu", "forward", 7).show("E new mgu buffers after a 64 MiB pad")
lstm.show("lstm again")
