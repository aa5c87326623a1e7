#!/usr/bin/env python3
"""Experiment: `deep4` (4 layers, T = 100, B = 64, H = 1024) in bf16 as a wavefront of step
loops (B = 64 leaves the lanes' grid-wide kernels out) against layer by layer, where each
layer runs the grid-wide kernel in two batch tiles; checked against torch.nn in fp32,
timed in alternating rounds.

    python3 bench/deep4_layered.py MODEL_DIR
"""
import os
import statistics
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from gpu_bench import CudaModel, rel_err, time_in_rounds  # noqa: E402
from wavefront import stack_args  # noqa: E402

T, B, H, LAYERS = 100, 64, 1024, 4


def main(model_dir):
    print(torch.cuda.get_device_name(), flush=True)
    for kind in ("lstm_bf16", "gru_bf16"):
        base = kind.split("_")[0]
        gru = base == "gru"
        cls = torch.nn.GRU if gru else torch.nn.LSTM
        torch.manual_seed(1)
        ref = cls(H, H, num_layers=LAYERS).cuda()
        xs = torch.randn(T, B, H, device="cuda")
        states = [torch.randn(LAYERS, B, H, device="cuda") for _ in range(1 if gru else 2)]
        args = stack_args(kind, ref, xs, states, LAYERS, 1, True)
        name = f"{base}_seq_L{LAYERS}"
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        blocks, labels = [], []
        with torch.no_grad():
            expected = ref(xs, states[0] if gru else tuple(states))[0]
            for variant in ("", "_layered"):
                model = CudaModel(os.path.join(model_dir, f"{kind}_L4{variant}.so"))
                outs = model.outputs(name, args)
                with torch.cuda.stream(side):
                    for _ in range(3):
                        model(name, args, outs)
                side.synchronize()
                err = rel_err(outs[0].double().cpu().numpy(), expected.double().cpu().numpy())
                blocks.append((lambda m=model, o=outs: m(name, args, o), side))
                labels.append(f"{'wavefront' if not variant else 'layer by layer'} "
                              f"(error {err:.1e})")
            runs = [time_in_rounds(blocks, rounds=5) for _ in range(2)]
        torch.cuda.current_stream().wait_stream(side)
        print(f"{kind} deep4:", flush=True)
        for i, label in enumerate(labels):
            print(f"  {label:36s} {statistics.median(r[i] for r in runs):.3f} ms "
                  f"({'/'.join(f'{r[i]:.3f}' for r in runs)})", flush=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
