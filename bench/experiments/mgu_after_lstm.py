#!/usr/bin/env python3
"""On the GPU machine, from the repository root after bench/build-gpu.sh (carry build/gpu; LD_LIBRARY_PATH=build/gpu/lib:/usr/local/cuda/lib64,
RNN_RUNTIME_LIB=build/gpu/lib/librnn_runtime.so): see bench/experiments/README.md."""
# does the MGU slow down when other work exists in the process, or with where its buffers live?
import sys, torch
sys.path.insert(0, "bench")
import gpu_bench as gb
def make(name, fn, seed):
    m = gb.CudaModel(f"build/gpu/models/{name}.so")
    a = gb.random_args(m, fn, 100, 64, seed=seed); o = m.outputs(fn, a)
    s = torch.cuda.Stream(); s.wait_stream(torch.cuda.current_stream())
    return m, fn, a, o, s
def t(x, label):
    m, fn, a, o, s = x
    with torch.no_grad(), torch.cuda.stream(s):
        for _ in range(3):
            m(fn, a, o)
        ms = gb.time_ms(lambda: m(fn, a, o))
    torch.cuda.synchronize()
    print(f"{label}: {ms:.3f} ms", flush=True)
mgu = make("zoo_mgu", "forward", 5)
t(mgu, "A mgu, alone in the process")
lstm = make("lstm_I1024_H1024", "lstm_seq", 5)
t(lstm, "lstm")
t(mgu, "B same mgu graph after the lstm ran")
mgu2 = make("zoo_mgu", "forward", 6)
t(mgu2, "C new mgu buffers allocated after the lstm's")
t(mgu, "D first mgu graph again")
pad = torch.empty(64 << 20, dtype=torch.uint8, device="cuda")
mgu3 = make("zoo_mgu", "forward", 7)
t(mgu3, "E new mgu buffers after a 64 MiB pad")
t(lstm, "lstm again")
