#!/usr/bin/env python3
"""Experiment: the sweep's 8-layer bf16 stacks (T = 200, B = 32, H = 512) as wavefronts of
chunks of C steps (rnn-compile --wavefront-chunk=C): from C = 32 each lane's chunk may run
as a grid-wide kernel (T >= 32), below it the step loop. Each build checked against
torch.nn in fp32, then all timed in alternating rounds with cuDNN through torch.nn (fp16).

    python3 bench/wavefront_chunks.py MODEL_DIR
(MODEL_DIR holds {lstm,gru}_bf16_deep_<variant>.so: chunk<C> built with
--wavefront-chunk=C, default with the compiler's own choice.)
"""
import os
import statistics
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from gpu_bench import CudaModel, rel_err, time_in_rounds  # noqa: E402
from wavefront import stack_args  # noqa: E402

T, B, H, LAYERS = 200, 32, 512, 8


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
        files = sorted(f for f in os.listdir(model_dir) if f.startswith(kind + "_deep"))
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        blocks, labels = [], []
        with torch.no_grad():
            expected = ref(xs, states[0] if gru else tuple(states))
            flat = [expected[0]] + ([expected[1]] if gru else list(expected[1]))
            for f in files:
                model = CudaModel(os.path.join(model_dir, f))
                outs = model.outputs(name, args)
                with torch.cuda.stream(side):
                    for _ in range(3):
                        model(name, args, outs)
                side.synchronize()
                got = [outs[0]] + [torch.stack(outs[1 + k::len(states)])
                                   for k in range(len(states))]
                err = max(rel_err(g.double().cpu().numpy(), e.double().cpu().numpy())
                          for g, e in zip(got, flat))
                print(f"  {f}: error vs torch fp32 {err:.1e}", flush=True)
                blocks.append((lambda m=model, o=outs: m(name, args, o), side))
                labels.append(f[len(kind) + 1:-3])
            m16 = cls(H, H, num_layers=LAYERS).cuda().half()
            m16.load_state_dict(ref.state_dict())
            m16.flatten_parameters()
            hx = tuple(st.half() for st in states)
            blocks.append((lambda: m16(xs.half(), hx[0] if gru else hx),
                           torch.cuda.current_stream()))
            labels.append("torch cuDNN fp16")
            runs = [time_in_rounds(blocks, rounds=5) for _ in range(2)]
        torch.cuda.current_stream().wait_stream(side)
        print(f"{kind} deep (T={T}, B={B}, H={H}, 8 layers), ms, two runs of 5 rounds:",
              flush=True)
        for i, label in enumerate(labels):
            print(f"  {label:22s} {statistics.median(r[i] for r in runs):.3f} "
                  f"({'/'.join(f'{r[i]:.3f}' for r in runs)})", flush=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
