#!/usr/bin/env python3
"""On the GPU machine, from the repository root after bench/build-gpu.sh (carry build/gpu; LD_LIBRARY_PATH=build/gpu/lib:/usr/local/cuda/lib64,
RNN_RUNTIME_LIB=build/gpu/lib/librnn_runtime.so): see bench/experiments/README.md."""
# MGU vs our LSTM under different alternation protocols; per-call times by position in a block.
import statistics, sys, torch
sys.path.insert(0, "bench")
import gpu_bench as gb
def setup(name, fn, seed):
    m = gb.CudaModel(f"build/gpu/models/{name}.so")
    a = gb.random_args(m, fn, 100, 64, seed=seed); o = m.outputs(fn, a)
    s = torch.cuda.Stream(); s.wait_stream(torch.cuda.current_stream())
    return (lambda: m(fn, a, o)), s
mgu, ms = setup("zoo_mgu", "forward", 5)
lstm, ls = setup("lstm_I1024_H1024", "lstm_seq", 5)
nov = gb.without_overlap(mgu)
def block(fn, s, n=15):
    ts = []
    with torch.cuda.stream(s):
        for _ in range(n):
            e0 = torch.cuda.Event(enable_timing=True); e1 = torch.cuda.Event(enable_timing=True)
            e0.record(); fn(); e1.record(); e1.synchronize(); ts.append(e0.elapsed_time(e1))
    return ts
with torch.no_grad():
    for f, s in ((mgu, ms), (lstm, ls), (nov, ms)):
        block(f, s, 30)
    for label, seq in (("alone", [("mgu", mgu, ms)] * 3 + [("lstm", lstm, ls)] * 3),
                       ("mgu/lstm", [("mgu", mgu, ms), ("lstm", lstm, ls)] * 3),
                       ("mgu/no-early/lstm", [("mgu", mgu, ms), ("nov", nov, ms), ("lstm", lstm, ls)] * 3)):
        res = {}
        for k, f, s in seq:
            res.setdefault(k, []).append(block(f, s))
        out = []
        for k, blocks in res.items():
            allt = [t for b in blocks for t in b]
            firsts = [round(b[0], 3) for b in blocks]
            out.append(f"{k}: median {statistics.median(allt):.3f} first-of-block {firsts} rest-median {statistics.median([t for b in blocks for t in b[1:]]):.3f}")
        print(label, "|", " ; ".join(out), flush=True)
