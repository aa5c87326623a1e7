"""Experiment (see README.md): persistent kernels of two models on two
streams at once. A persistent kernel's blocks wait for each other every
step, so two of them that each got only part of the GPU would wait for
ever unless the launch keeps them whole. Two threads, each on a stream of
its own, call the bf16 GRU and LSTM at `wide` (both persistent) 100 times
each at once; a watchdog reports a hang. Outputs must equal a sequential
run's.

    python3 bench/experiments/persistent_concurrent.py MODEL_DIR
(after bench/build-gpu.sh; the library path as bench/gpu-run.sh sets it)
"""
import os, sys, threading, time, torch
sys.path.insert(0, "bench")
from gpu_bench import CudaModel, random_args
d = sys.argv[1]
names = ["gru_bf16_I2048_H2048", "lstm_bf16_I2048_H2048"]
models = {n: CudaModel(os.path.join(d, n + ".so")) for n in names}
fn = lambda n: n.split("_")[0] + "_seq"
ref = {}
with torch.no_grad():
    for n in names:  # Sequential reference on one stream.
        args = random_args(models[n], fn(n), 50, 32, seed=7)
        outs = models[n].outputs(fn(n), args)
        s = torch.cuda.Stream()
        with torch.cuda.stream(s):
            models[n](fn(n), args, outs)
        s.synchronize()
        ref[n] = (args, [o.clone() for o in outs])
results, done = {}, {}
def worker(n, calls=100):
    s = torch.cuda.Stream()
    args = ref[n][0]
    outs = models[n].outputs(fn(n), args)
    with torch.no_grad(), torch.cuda.stream(s):
        for _ in range(calls):
            models[n](fn(n), args, outs)
    s.synchronize()
    results[n] = outs
    done[n] = True
threads = [threading.Thread(target=worker, args=(n,), daemon=True) for n in names]
t0 = time.time()
for t in threads:
    t.start()
for t in threads:
    t.join(timeout=60)
elapsed = time.time() - t0
if len(done) < len(names):
    print(f"HANG: {sorted(set(names) - set(done))} not done after {elapsed:.0f} s", flush=True)
    os._exit(1)
for n in names:
    same = all(torch.equal(a, b) for a, b in zip(results[n], ref[n][1]))
    print(f"{n}: 100 calls on its own stream beside the other model's: "
          f"{'equal to' if same else 'DIFFERENT from'} the sequential run")
print(f"both done in {elapsed:.2f} s")
