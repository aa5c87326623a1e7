#!/usr/bin/env python3
"""On the GPU machine, from the repository root after bench/build-gpu.sh (carry build/gpu; LD_LIBRARY_PATH=build/gpu/lib:/usr/local/cuda/lib64,
RNN_RUNTIME_LIB=build/gpu/lib/librnn_runtime.so): see bench/experiments/README.md."""
# python3 bench/experiments/early_launch_triggers.py TRIGGER  (none sleep matmul torchgraph lstm_direct lstm_graph lstm_graph_nodirect mgu2 mgu_newstream gru_rb lstm_nopack; one process each)
# Which event turns the MGU graph slow? One trigger per process: MGU timed, trigger, MGU timed again.
import sys, time, torch
from model_timing import Probe, matmuls
trig = sys.argv[1]
mgu = Probe("zoo_mgu", "forward", 5)
mgu.show("mgu A")
mgu.show("mgu A again")
if trig == "sleep":
    time.sleep(3)
elif trig == "matmul":
    matmuls(torch.cuda.Stream(), 2000)
elif trig == "torchgraph":
    s = torch.cuda.Stream(); x = torch.randn(1024, device="cuda")
    g = torch.cuda.CUDAGraph()
    with torch.cuda.stream(s):
        y = x * 2
        with torch.cuda.graph(g):
            y = x * 2
    for _ in range(200): g.replay()
    torch.cuda.synchronize()
elif trig == "lstm_direct":
    lstm = Probe("lstm_I1024_H1024", "lstm_seq", 5)
    with torch.no_grad():
        for _ in range(200): lstm.call()   # default stream: no graph
    torch.cuda.synchronize()
elif trig == "lstm_graph":
    Probe("lstm_I1024_H1024", "lstm_seq", 5).show("lstm")
elif trig == "lstm_graph_nodirect":
    Probe("lstm_I1024_H1024", "lstm_seq", 5).show("lstm", stream=mgu.stream)
elif trig == "mgu2":
    Probe("zoo_mgu", "forward", 6).show("mgu second instance")
elif trig == "mgu_newstream":
    s = torch.cuda.Stream(); s.wait_stream(torch.cuda.current_stream())
    mgu.show("mgu same graph on a new stream", stream=s)
elif trig == "gru_rb":
    Probe("zoo_gru_reset_before", "forward", 5).show("gru_rb")
elif trig == "lstm_nopack":
    Probe("lstm_I1024_H1024", "lstm_seq", 5).show("lstm no overlap", overlap=False)
mgu.show(f"mgu after {trig}")
mgu.show(f"mgu after {trig}, again")
