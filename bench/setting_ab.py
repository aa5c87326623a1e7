#!/usr/bin/env python3
"""On the GPU machine: our models with a runtime setting at its default and
set to 0, measured in alternation in one process so that drifting clocks
hit both alike: ROUNDS rounds of REPS timed calls each way; medians over
all. With SETTING=V1,V2 the default is compared with each listed value. SETTING is one of the runtime's environment variables, e.g.
RNN_CUDA_OVERLAP_LAUNCHES (early kernel launches) or
RNN_CUDA_CUBLAS_WORKSPACE_MIB (the call's cuBLAS workspace; 0: cuBLAS's
own).

    python3 bench/setting_ab.py MODEL_DIR SETTING[=V1,V2...] [MODEL ...]
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
           "gru_bf16_I2048_H2048", "lstm_bf16_I256_H256", "zoo_mgu",
           "zoo_gru_reset_before"]
SHAPES = {"I256": (100, 1), "I1024": (100, 64), "I2048": (50, 32), "I512": (100, 256)}


def alternate(call, switch, values=(None, "0")):
    """Median ms of `call` with the runtime setting `switch` (an environment
    variable the runtime reads at every model call) at each of `values`
    (None: unset, the runtime's default), in alternation on a side stream:
    ROUNDS rounds of REPS timed calls each (gpu_bench.time_in_rounds).
    Returns a time per value; by default (on, off)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.no_grad():
        times = time_in_rounds([(with_setting(call, switch, v), side) for v in values],
                               rounds=ROUNDS, repeats=REPS)
    torch.cuda.current_stream().wait_stream(side)
    return times


def main(model_dir, setting, names):
    # SETTING=V1,V2: those values against the default, else the default against 0.
    setting, _, listed = setting.partition("=")
    values = [None] + listed.split(",") if listed else [None, "0"]
    for name in names or DEFAULT:
        model = CudaModel(os.path.join(model_dir, name + ".so"))
        function = ("forward" if name.startswith("zoo_") else
                    f"{name.split('_')[0]}_seq")
        # Stacked models name their function after the layer count (lstm_seq_L2).
        function = next((f for f in model.model.functions if f.startswith(function)),
                        function)
        T, B = next((v for k, v in SHAPES.items() if f"_{k}_" in name + "_"), (100, 64))
        args = random_args(model, function, T, B, seed=1)
        outs = model.outputs(function, args)
        times = alternate(lambda: model(function, args, outs), setting, values)
        print(f"  {name:24s} T={T:3d} B={B:3d}  default {times[0]:.3f} ms", " ".join(
            f" {setting}={v} {t:.3f} ms (default/this {times[0] / t:.3f})"
            for v, t in zip(values[1:], times[1:])), flush=True)


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
