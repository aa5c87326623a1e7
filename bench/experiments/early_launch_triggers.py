#!/usr/bin/env python3
"""On the GPU machine, from the repository root after bench/build-gpu.sh (carry build/gpu; LD_LIBRARY_PATH=build/gpu/lib:/usr/local/cuda/lib64,
RNN_RUNTIME_LIB=build/gpu/lib/librnn_runtime.so): see bench/experiments/README.md."""
# python3 bench/experiments/early_launch_triggers.py TRIGGER  (none sleep matmul torchgraph lstm_direct lstm_graph lstm_graph_nodirect mgu2 mgu_newstream gru_rb lstm_nopack; one process each)
# Which event turns the MGU graph slow? One trigger per process: MGU timed, trigger, MGU timed again.
import sys, time, torch
sys.path.insert(0, "bench")
import gpu_bench as gb
def make(name, fn, seed):
    m = gb.CudaModel(f"build/gpu/models/{name}.so")
    a = gb.random_args(m, fn, 100, 64, seed=seed); o = m.outputs(fn, a)
    s = torch.cuda.Stream(); s.wait_stream(torch.cuda.current_stream())
    return m, fn, a, o, s
def t(x, label, stream=None):
    m, fn, a, o, s = x
    with torch.no_grad(), torch.cuda.stream(stream or s):
        for _ in range(3):
            m(fn, a, o)
        ms = gb.time_ms(lambda: m(fn, a, o))
    torch.cuda.synchronize()
    print(f"  {label}: {ms:.3f} ms", flush=True)
    return ms
trig = sys.argv[1]
mgu = make("zoo_mgu", "forward", 5)
t(mgu, "mgu A")
t(mgu, "mgu A again")
if trig == "sleep":
    time.sleep(3)
elif trig == "matmul":
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        x = torch.randn(64, 1024, device="cuda"); w = torch.randn(1024, 4096, device="cuda")
        for _ in range(2000): y = x @ w
    torch.cuda.synchronize()
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
    m, fn, a, o, s = make("lstm_I1024_H1024", "lstm_seq", 5)
    with torch.no_grad():
        for _ in range(200): m(fn, a, o)   # default stream: no graph
    torch.cuda.synchronize()
elif trig == "lstm_graph":
    t(make("lstm_I1024_H1024", "lstm_seq", 5), "lstm")
elif trig == "lstm_graph_nodirect":
    lstm = make("lstm_I1024_H1024", "lstm_seq", 5)
    t(lstm, "lstm", stream=mgu[4])
elif trig == "mgu2":
    t(make("zoo_mgu", "forward", 6), "mgu second instance")
elif trig == "mgu_newstream":
    s = torch.cuda.Stream(); s.wait_stream(torch.cuda.current_stream())
    t(mgu, "mgu same graph on a new stream", stream=s)
elif trig == "gru_rb":
    t(make("zoo_gru_reset_before", "forward", 5), "gru_rb")
elif trig == "lstm_nopack":
    import os; os.environ["RNN_CUDA_OVERLAP_LAUNCHES"] = "0"
    t(make("lstm_I1024_H1024", "lstm_seq", 5), "lstm no overlap")
    del os.environ["RNN_CUDA_OVERLAP_LAUNCHES"]
t(mgu, f"mgu after {trig}")
t(mgu, f"mgu after {trig}, again")
