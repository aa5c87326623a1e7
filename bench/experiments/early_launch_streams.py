#!/usr/bin/env python3
"""On the GPU machine, from the repository root after bench/build-gpu.sh (carry build/gpu; LD_LIBRARY_PATH=build/gpu/lib:/usr/local/cuda/lib64,
RNN_RUNTIME_LIB=build/gpu/lib/librnn_runtime.so): see bench/experiments/README.md."""
# python3 bench/experiments/early_launch_streams.py MODE  (same other)
# After the slow state sets in: which stream brings the MGU's early launch back?
import sys, torch
from model_timing import Probe, matmuls
mgu = Probe("zoo_mgu", "forward", 5)
s1 = mgu.stream
mgu.show("s1 before")
if sys.argv[1] == "same":
    matmuls(s1, 2000); mgu.show("s1 after matmul on s1")
    matmuls(torch.cuda.Stream(), 2000); mgu.show("s1 after matmul on s2")
else:
    s2 = torch.cuda.Stream(); matmuls(s2, 2000); mgu.show("s1 after matmul on s2")
    mgu.show("s2 (the matmul's stream)", stream=s2)
    mgu.show("s3 new stream", stream=torch.cuda.Stream())
    mgu.show("new high-priority stream", stream=torch.cuda.Stream(priority=-1))
    mgu.show("s1 again")
    mgu.show("s1 no early launch", overlap=False)
