#!/usr/bin/env python3
"""On the GPU machine: our models with and without early kernel launches
(programmatic dependent launch, pass overlap-kernel-launches), measured in
alternation in one process so that drifting clocks hit both alike: ROUNDS
rounds of REPS timed calls with, then REPS without; medians over all.

    python3 bench/overlap_ab.py MODEL_DIR [MODEL ...]
(bench/gpu-run.sh sets up the library path; MODEL is a file name in
MODEL_DIR without .so, its function is found from the name.)
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpu_bench import CudaModel, random_args, time_in_rounds, with_setting  # noqa: E402

ROUNDS, REPS = 8, 10
DEFAULT = ["lstm_I1024_H1024", "gru_I1024_H1024", "lstm_bf16_I1024_H1024",
           "gru_bf16_I1024_H1024", "lstm_I2048_H2048", "lstm_bf16_I2048_H2048",
           "gru_bf16_I2048_H2048", "lstm_bf16_I256_H256", "zoo_mgu"]
SHAPES = {"I256": (100, 1), "I1024": (100, 64), "I2048": (50, 32), "I512": (100, 256)}


def alternate(call, switch):
    """Median ms of `call` with the runtime setting `switch` (an environment
    variable the runtime reads at every model call) left on and set to 0,
    in alternation on a side stream: ROUNDS rounds of REPS timed calls each
    way (gpu_bench.time_in_rounds). Returns (on, off)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.no_grad():
        on, off = time_in_rounds([(with_setting(call, switch, None), side),
                                  (with_setting(call, switch, "0"), side)],
                                 rounds=ROUNDS, repeats=REPS)
    torch.cuda.current_stream().wait_stream(side)
    return on, off


def main(model_dir, names):
    for name in names or DEFAULT:
        model = CudaModel(os.path.join(model_dir, name + ".so"))
        function = ("forward" if name.startswith("zoo_") else
                    f"{name.split('_')[0]}_seq")
        T, B = next((v for k, v in SHAPES.items() if f"_{k}_" in name + "_"), (100, 64))
        args = random_args(model, function, T, B, seed=1)
        outs = model.outputs(function, args)
        on, off = alternate(lambda: model(function, args, outs),
                            "RNN_CUDA_OVERLAP_LAUNCHES")
        print(f"  {name:24s} T={T:3d} B={B:3d}  early launch {on:.3f} ms  "
              f"without {off:.3f} ms  ratio {on / off:.3f}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
