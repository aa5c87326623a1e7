#!/usr/bin/env python3
"""On the GPU machine, from the repository root after bench/build-gpu.sh (carry
build/gpu; LD_LIBRARY_PATH=build/gpu/lib:/usr/local/cuda/lib64,
RNN_RUNTIME_LIB=build/gpu/lib/librnn_runtime.so): does routing calls made on
the legacy default stream through the runtime's own stream (their graph
replayed there, ordered by events) change the MGU's graph on a stream of its
own, the model most sensitive to the process's state (README,
early_launch_*)? The MGU timed, then TRIGGER, then the MGU again; one
process per trigger:

    python3 bench/experiments/default_stream_route.py routed|direct|none

routed: 200 calls of our LSTM on the legacy default stream (captured and
replayed on the runtime's stream); direct: the same with RNN_CUDA_GRAPHS=0
(kernel by kernel on the default stream, as every default-stream call ran
before); none: nothing."""
import os
import sys

import torch

from model_timing import Probe

trigger = sys.argv[1]
mgu = Probe("zoo_mgu", "forward", 5)
mgu.show("mgu before")
mgu.show("mgu before, again")
if trigger in ("routed", "direct"):
    lstm = Probe("lstm_I1024_H1024", "lstm_seq", 7)
    if trigger == "direct":
        os.environ["RNN_CUDA_GRAPHS"] = "0"
    with torch.no_grad():
        for _ in range(200):
            lstm.call()  # on the legacy default stream
    torch.cuda.synchronize()
    os.environ.pop("RNN_CUDA_GRAPHS", None)
mgu.show(f"mgu after {trigger}")
mgu.show(f"mgu after {trigger}, again")
