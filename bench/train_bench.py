#!/usr/bin/env python3
"""On the GPU machine: one training step (forward and backward) of our LSTM and GRU against
cuDNN's, at the single-layer shapes of bench/configs.json, fp32 with TF32 matmuls (cuDNN's
default for fp32), cuDNN fp16 (its persistent algorithm where PyTorch picks it) alongside.

Correctness first: our gradients (the derived backward of `rnn-compile --training`, on the
weights of a torch.nn.LSTM / GRU) against torch.autograd through that module in fp32 on the
same inputs. Then the timings, in the same process and on the same inputs: CUDA events
around each step, warm-up first, median of 15 calls in each of 3 alternating rounds, and
the spread (min and max over the rounds' calls).

    python3 bench/train_bench.py MODEL_DIR OUT_JSON
(bench/training-gpu-run.sh runs it with the right library path.)
"""
import json
import os
import statistics
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from gpu_bench import CudaModel, time_ms  # noqa: E402

LIMIT = 3e-2  # TF32 on both sides
ROUNDS, REPEATS = 3, 15


def torch_module(kind, I, H):
    torch.manual_seed(0)
    return getattr(torch.nn, kind.upper())(I, H).cuda()


def step_functions(kind, config, model_dir):
    T, B, I, H = config["T"], config["B"], config["I"], config["H"]
    module = torch_module(kind, I, H)
    gen = torch.Generator(device="cuda").manual_seed(1)
    x = torch.randn(T, B, I, device="cuda", generator=gen)
    states = [torch.randn(B, H, device="cuda", generator=gen)
              for _ in range(2 if kind == "lstm" else 1)]
    weights = [module.weight_ih_l0, module.weight_hh_l0, module.bias_ih_l0, module.bias_hh_l0]
    ours_args = [x] + states + [w.detach().contiguous() for w in weights]

    ours = CudaModel(os.path.join(model_dir, f"{kind}_I{I}_H{H}.so"))
    func = f"{kind}_seq"
    info = ours.model.training_info(func)
    train_outs = ours.outputs(info.train_function, ours_args)
    n_results = len(train_outs) - info.num_saved
    result_grads = [torch.randn(o.shape, device="cuda", generator=gen)
                    for o in train_outs[:n_results]]
    backward_args = ours_args + train_outs + result_grads
    grads = ours.outputs(info.backward_function, backward_args)

    def ours_step():
        ours(info.train_function, ours_args, train_outs)
        ours(info.backward_function, backward_args, grads)

    # cuDNN: the same module, inputs and result gradients, through autograd.
    def cudnn_step_for(m, dtype):
        xx = x.to(dtype).requires_grad_()
        ss = [s.to(dtype).unsqueeze(0).requires_grad_() for s in states]
        params = list(m.parameters())
        dys = [g.to(dtype) for g in result_grads]

        def step():
            y, hn = m(xx, tuple(ss) if kind == "lstm" else ss[0])
            outs = [y] + ([hn[0][0], hn[1][0]] if kind == "lstm" else [hn[0]])
            return torch.autograd.grad(outs, [xx] + ss + params, dys)
        return step

    cudnn32 = cudnn_step_for(module, torch.float32)
    module16 = torch_module(kind, I, H).half()
    module16.load_state_dict(module.state_dict())
    cudnn16 = cudnn_step_for(module16, torch.float16)

    # Correctness: ours against autograd through the fp32 module.
    ours_step()
    torch.cuda.synchronize()
    ref = cudnn32()
    names = ["x"] + (["h0", "c0"] if kind == "lstm" else ["h0"]) + ["W", "U", "b_W", "b_U"]
    errors = {}
    for name, g, r in zip(names, grads, ref):
        r = r.reshape(g.shape).double()
        errors[name] = float((g.double() - r).abs().max() / r.abs().max().clamp_min(1e-30))
    return ours_step, cudnn32, cudnn16, errors


def main(model_dir, out_path):
    configs = json.load(open(os.path.join(HERE, "configs.json")))["configs"]
    rows, failed = [], 0
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, "
          f"cuDNN {torch.backends.cudnn.version()}; one training step, ms (median of "
          f"{ROUNDS}x{REPEATS} calls in alternating rounds; min-max)")
    for kind in ("lstm", "gru"):
        for config in configs:
            if config["L"] != 1:
                continue
            # Everything of a shape, the check included, on one stream: autograd then
            # never crosses streams (which would add synchronisations to cuDNN's step).
            stream = torch.cuda.Stream()
            stream.wait_stream(torch.cuda.current_stream())
            samples = [[], [], []]
            with torch.cuda.stream(stream):
                ours, c32, c16, errors = step_functions(kind, config, model_dir)
                for _ in range(ROUNDS):
                    for i, fn in enumerate((ours, c32, c16)):
                        time_ms(fn, samples[i], REPEATS)
            worst = max(errors.values())
            ok = worst <= LIMIT
            failed += not ok
            med = [statistics.median(s) for s in samples]
            row = {"kind": kind, **config, "grad_max_rel_err": worst, "grad_errors": errors,
                   "check": "PASS" if ok else "FAIL",
                   "ours_ms": med[0], "cudnn_fp32_ms": med[1], "cudnn_fp16_ms": med[2],
                   "ours_range": [min(samples[0]), max(samples[0])],
                   "cudnn_fp32_range": [min(samples[1]), max(samples[1])],
                   "cudnn_fp16_range": [min(samples[2]), max(samples[2])]}
            rows.append(row)
            print(f"{'PASS' if ok else 'FAIL'} {kind:4} {config['name']:14} grads max rel err "
                  f"{worst:.1e} | ours fp32 {med[0]:8.3f} ({min(samples[0]):.3f}-"
                  f"{max(samples[0]):.3f}) | cuDNN fp32 {med[1]:8.3f} | cuDNN fp16 "
                  f"{med[2]:8.3f} | cuDNN fp32 / ours {med[1] / med[0]:.2f}x")
    with open(out_path, "w") as f:
        json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                   "cudnn": torch.backends.cudnn.version(), "rows": rows}, f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
