"""Experiment (see README.md): four threads, each on a stream of its own,
make the first calls of a model with new buffers at once, so that their
captures and tunings run concurrently (the runtime no longer holds its
graph lock while a call is captured and tuned); each model's outputs must
equal those of a sequential run on the same inputs.

    python3 bench/experiments/concurrent_capture.py MODEL_DIR
(after bench/build-gpu.sh; the library path as bench/gpu-run.sh sets it)
"""
import os, sys, threading, time, torch
sys.path.insert(0, "bench")
from gpu_bench import CudaModel, random_args
d = sys.argv[1]
names = ["zoo_mgu", "lstm_I1024_H1024", "zoo_gru_reset_before", "gru_I1024_H1024"]
models = {n: CudaModel(os.path.join(d, n + ".so")) for n in names}
fn = lambda n: "forward" if n.startswith("zoo_") else n.split("_")[0] + "_seq"
ref = {}
with torch.no_grad():
    for n in names:  # Sequential reference on one stream.
        args = random_args(models[n], fn(n), 100, 64, seed=3)
        outs = models[n].outputs(fn(n), args)
        s = torch.cuda.Stream()
        with torch.cuda.stream(s):
            models[n](fn(n), args, outs); models[n](fn(n), args, outs)
        s.synchronize()
        ref[n] = (args, [o.clone() for o in outs])
results, times = {}, {}
def worker(n):
    s = torch.cuda.Stream()
    args = [a.clone() if torch.is_tensor(a) else a for a in ref[n][0]]  # new buffers: new call keys
    outs = models[n].outputs(fn(n), args)
    t0 = time.time()
    with torch.no_grad(), torch.cuda.stream(s):
        for _ in range(5):
            models[n](fn(n), args, outs)
    s.synchronize()
    times[n] = time.time() - t0
    results[n] = outs
threads = [threading.Thread(target=worker, args=(n,)) for n in names]
t0 = time.time()
for t in threads: t.start()
for t in threads: t.join()
print(f"4 threads, first 5 calls each (capture and tuning of new keys): {time.time() - t0:.2f} s wall;",
      ", ".join(f"{n} {times[n]:.2f} s" for n in names))
ok = True
for n in names:
    diff = max(float((a - b).abs().max()) for a, b in zip(results[n], ref[n][1]))
    ok &= diff == 0.0
    print(f"  {n}: max abs diff against the sequential run {diff:.2e}")
print("threads probe:", "PASS" if ok else "FAIL")
