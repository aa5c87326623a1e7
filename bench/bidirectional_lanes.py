#!/usr/bin/env python3
"""Experiment: do a bidirectional layer's two grid-wide kernels run side by side? The
sweep's deep bidirectional shape (T = 100, B = 16, H = 768, bf16) with 1 and 4 layers,
timed with the lanes on streams of their own (default), in order on the call's stream
(RNN_CUDA_LANES=0), and with batch tiles allowed on the lanes' kernels
(RNN_CUDA_BATCH_TILES is ignored on lanes; shown for reference), in alternating rounds.

    python3 bench/bidirectional_lanes.py MODEL_DIR
"""
import os
import statistics
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from gpu_bench import CudaModel, rel_err, time_in_rounds, with_setting  # noqa: E402
from wavefront import stack_args  # noqa: E402

T, B, H = 100, 16, 768


def main(model_dir):
    print(torch.cuda.get_device_name(), flush=True)
    for kind, layers in (("lstm_bf16", 1), ("lstm_bf16", 4), ("gru_bf16", 4)):
        base = kind.split("_")[0]
        gru = base == "gru"
        cls = torch.nn.GRU if gru else torch.nn.LSTM
        torch.manual_seed(1)
        ref = cls(H, H, num_layers=layers, bidirectional=True).cuda()
        xs = torch.randn(T, B, H, device="cuda")
        states = [torch.randn(2 * layers, B, H, device="cuda")
                  for _ in range(1 if gru else 2)]
        args = stack_args(kind, ref, xs, states, layers, 2, True)
        name = f"{base}_bi_L{layers}"
        model = CudaModel(os.path.join(model_dir, f"{kind}_bi_L{layers}.so"))
        outs = model.outputs(name, args)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.no_grad():
            expected = ref(xs, states[0] if gru else tuple(states))[0]
            call = lambda: model(name, args, outs)  # noqa: E731
            variants = [("lanes", call), ("in order", with_setting(call, "RNN_CUDA_LANES", "0")),
                        ("no persistent", with_setting(call, "RNN_CUDA_PERSISTENT", "0"))]
            errors = []
            for label, fn in variants:
                with torch.cuda.stream(side):
                    fn()
                side.synchronize()
                errors.append(rel_err(outs[0].double().cpu().numpy(),
                                      expected.double().cpu().numpy()))
            runs = [time_in_rounds([(fn, side) for _, fn in variants], rounds=5)
                    for _ in range(2)]
        torch.cuda.current_stream().wait_stream(side)
        print(f"{name} (T={T}, B={B}, H={H}):", flush=True)
        for i, (label, _) in enumerate(variants):
            print(f"  {label:14s} {statistics.median(r[i] for r in runs):.3f} ms "
                  f"({'/'.join(f'{r[i]:.3f}' for r in runs)})  error {errors[i]:.1e}",
                  flush=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
