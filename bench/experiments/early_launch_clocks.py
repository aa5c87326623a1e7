#!/usr/bin/env python3
"""On the GPU machine, from the repository root after bench/build-gpu.sh (carry build/gpu; LD_LIBRARY_PATH=build/gpu/lib:/usr/local/cuda/lib64,
RNN_RUNTIME_LIB=build/gpu/lib/librnn_runtime.so): see bench/experiments/README.md."""
# python3 bench/experiments/early_launch_clocks.py N_MATMULS  (1, 2000)
# Is the slow state a clock/power state that time undoes?
import subprocess, sys, time
from model_timing import Probe, matmuls
def smi():
    return subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active",
                           "--format=csv,noheader"], capture_output=True, text=True).stdout.strip()
mgu = Probe("zoo_mgu", "forward", 5)
def t(label, overlap=True):
    mgu.show(label, overlap=overlap, suffix=f"   [{smi()}]")
print("idle:", smi())
t("before")
t("before, no early", False)
n = int(sys.argv[1])
matmuls(mgu.stream, n)
print(f"after {n} matmuls:", smi())
t("after")
time.sleep(2); t("after + 2 s")
time.sleep(10); t("after + 12 s")
t("no early", False)
