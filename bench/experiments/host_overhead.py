#!/usr/bin/env python3
"""On the GPU machine, from the repository root after bench/build-gpu.sh (carry build/gpu; LD_LIBRARY_PATH=build/gpu/lib:/usr/local/cuda/lib64,
RNN_RUNTIME_LIB=build/gpu/lib/librnn_runtime.so): see bench/experiments/README.md."""
# per-call time with events around each call vs around 20 back-to-back calls.
import sys, time, torch
sys.path.insert(0, "bench")
import gpu_bench as gb
for name, fn, T, B in (("zoo_mgu", "forward", 100, 64), ("lstm_I1024_H1024", "lstm_seq", 100, 64), ("lstm_I256_H256", "lstm_seq", 100, 1)):
    m = gb.CudaModel(f"build/gpu/models/{name}.so")
    a = gb.random_args(m, fn, T, B, seed=5); o = m.outputs(fn, a)
    s = torch.cuda.Stream(); s.wait_stream(torch.cuda.current_stream())
    with torch.no_grad(), torch.cuda.stream(s):
        for _ in range(5):
            m(fn, a, o)
        single = gb.time_ms(lambda: m(fn, a, o))
        def twenty():
            for _ in range(20):
                m(fn, a, o)
        batched = gb.time_ms(twenty) / 20
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(200):
            m(fn, a, o)
        host = (time.perf_counter() - t0) / 200 * 1000
        torch.cuda.synchronize()
    print(f"{name}: events around each call {single:.3f} ms, around 20 calls {batched:.3f} ms per call, host enqueue {host:.3f} ms per call", flush=True)
