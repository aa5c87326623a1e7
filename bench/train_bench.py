#!/usr/bin/env python3
"""On the GPU machine: one training step (forward and backward) of our LSTM and GRU against
cuDNN's, at the shapes of bench/configs.json (deep4 aside) and FlashRNN's grid shape, in
fp32 with TF32 matmuls (cuDNN's default for fp32; cuDNN fp16, its persistent algorithm
where PyTorch picks it, alongside) and with bf16 storage (make_models.py's `*_bf16`
models; against cuDNN fp16 and bf16).

Correctness first: our gradients (the derived backward of `rnn-compile --training`, on the
weights of a torch.nn.LSTM / GRU) against torch.autograd through that module in fp32 on the
same inputs. Then the timings, in the same process and on the same inputs: CUDA events
around each step, warm-up first, median of 15 calls in each of 3 alternating rounds, and
the spread (min and max over the rounds' calls).

    python3 bench/train_bench.py MODEL_DIR OUT_JSON [--precisions fp32,bf16]
        [--configs medium,...] [--profile N] [--compare DIR]
(deep4 only when --configs names it; --compare times DIR's models of the same shapes,
compiled otherwise, in the same rounds.)
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
from kernel_breakdown import kernel_breakdown, print_breakdown  # noqa: E402

# fp32: TF32 on both sides; bf16: our bf16 storage (bf16 matmul operands of the
# recurrent product as well) against fp32 autograd on the same bf16-rounded data.
LIMITS = {"fp32": 3e-2, "bf16": 6e-2}
ROUNDS, REPEATS = 3, 15
# FlashRNN's grid shape with a dense cell (its benchmarks' T, B and H), besides the
# shapes of configs.json.
EXTRA_CONFIGS = [{"name": "flashrnn-grid", "T": 1024, "B": 16, "I": 768, "H": 768, "L": 1}]
# The baselines of each precision: torch.nn.LSTM / GRU (cuDNN) in these dtypes.
BASELINES = {"fp32": (("cudnn_fp32", torch.float32), ("cudnn_fp16", torch.float16)),
             "bf16": (("cudnn_fp16", torch.float16), ("cudnn_bf16", torch.bfloat16))}


def configs(names=()):
    """The shapes timed: bench/configs.json but deep4 (its layers are medium's) unless
    `names` asks for it, then EXTRA_CONFIGS."""
    shapes = json.load(open(os.path.join(HERE, "configs.json")))["configs"]
    return [c for c in shapes if c["name"] != "deep4" or "deep4" in names] + EXTRA_CONFIGS


def model_file(kind, precision, config):
    """The file bench/training-gpu-build.sh compiled for a shape (make_models.py's names)."""
    name = kind + ("_bf16" if precision == "bf16" else "")
    suffix = f"_L{config['L']}" if config["L"] > 1 else ""
    return f"{name}_I{config['I']}_H{config['H']}{suffix}.so"


def torch_module(kind, I, H, L):
    torch.manual_seed(0)
    return getattr(torch.nn, kind.upper())(I, H, num_layers=L).cuda()


def step_functions(kind, precision, config, model_dir):
    """(our step, {baseline: step}, gradient errors) of one shape and precision."""
    T, B, I, H, L = (config[k] for k in ("T", "B", "I", "H", "L"))
    module = torch_module(kind, I, H, L)
    bf16 = precision == "bf16"
    gen = torch.Generator(device="cuda").manual_seed(1)
    x = torch.randn(T, B, I, device="cuda", generator=gen)
    nstates = 2 if kind == "lstm" else 1
    states = [torch.randn(L, B, H, device="cuda", generator=gen) for _ in range(nstates)]
    if bf16:
        # The reference runs on the values our model sees: bf16-rounded inputs and
        # matrices (biases and states stay f32 in both).
        x = x.bfloat16().float()
        with torch.no_grad():
            for name, p in module.named_parameters():
                if name.startswith("weight"):
                    p.copy_(p.bfloat16().float())
    cast = (lambda t: t.bfloat16()) if bf16 else (lambda t: t)
    ours_args = [cast(x)]
    for l in range(L):
        ours_args += [s[l].contiguous() for s in states]
        ours_args += [cast(getattr(module, f"weight_ih_l{l}").detach().contiguous()),
                      cast(getattr(module, f"weight_hh_l{l}").detach().contiguous()),
                      getattr(module, f"bias_ih_l{l}").detach().contiguous(),
                      getattr(module, f"bias_hh_l{l}").detach().contiguous()]

    ours = CudaModel(os.path.join(model_dir, model_file(kind, precision, config)))
    func = f"{kind}_seq" + (f"_L{L}" if L > 1 else "")
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

    # cuDNN: the same module, inputs and result gradients, through autograd. Our
    # results are y, then every layer's final states; torch's y, then (h_n, c_n).
    def cudnn_step_for(m, dtype):
        xx = x.to(dtype).requires_grad_()
        ss = [s.to(dtype).requires_grad_() for s in states]
        params = list(m.parameters())
        dy = result_grads[0].to(dtype)
        dfinal = [torch.stack([result_grads[1 + l * nstates + k] for l in range(L)]).to(dtype)
                  for k in range(nstates)]

        def step():
            y, hn = m(xx, tuple(ss) if kind == "lstm" else ss[0])
            outs = [y] + (list(hn) if kind == "lstm" else [hn])
            return torch.autograd.grad(outs, [xx] + ss + params, [dy] + dfinal)
        return step

    baselines = {}
    for name, dtype in BASELINES[precision]:
        m = module
        if dtype != torch.float32:
            m = torch_module(kind, I, H, L).to(dtype)
            m.load_state_dict(module.state_dict())
        # One contiguous weight buffer, as cuDNN wants it (else torch compacts it every call).
        m.flatten_parameters()
        baselines[name] = cudnn_step_for(m, dtype)

    # Correctness: ours against autograd through the fp32 module, in our order
    # (x, then per layer its initial states and W, U, b_W, b_U).
    ours_step()
    torch.cuda.synchronize()
    ref = cudnn_step_for(module, torch.float32)()
    ref_x, ref_states, ref_params = ref[0], ref[1:1 + nstates], ref[1 + nstates:]
    state_names = ["h0", "c0"][:nstates]
    expected = [("x", ref_x)]
    for l in range(L):
        expected += [(f"{n}_l{l}", s[l]) for n, s in zip(state_names, ref_states)]
        expected += [(f"{n}_l{l}", p) for n, p in
                     zip(("W", "U", "b_W", "b_U"), ref_params[4 * l:4 * l + 4])]
    errors = {}
    for (name, r), g in zip(expected, grads):
        r = r.reshape(g.shape).double()
        errors[name] = float((g.double() - r).abs().max() / r.abs().max().clamp_min(1e-30))
    return ours_step, baselines, errors


def main(model_dir, out_path, precisions, names, profile, compare=None):
    rows, failed = [], 0
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, "
          f"cuDNN {torch.backends.cudnn.version()}; one training step, ms (median of "
          f"{ROUNDS}x{REPEATS} calls in alternating rounds; min-max)")
    for precision in precisions:
        for kind in ("lstm", "gru"):
            for config in configs(names):
                if names and config["name"] not in names:
                    continue
                # Everything of a shape, the check included, on one stream: autograd then
                # never crosses streams (which would add synchronisations to cuDNN's step).
                stream = torch.cuda.Stream()
                stream.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(stream):
                    ours, baselines, errors = step_functions(kind, precision, config, model_dir)
                    fns = [ours] + list(baselines.values())
                    if compare:
                        # The same shape compiled otherwise (--compare), same inputs.
                        other, _, other_errors = step_functions(kind, precision, config,
                                                                compare)
                        errors.update((f"compare {k}", v) for k, v in other_errors.items())
                        fns.append(other)
                    samples = [[] for _ in fns]
                    for _ in range(ROUNDS):
                        for i, fn in enumerate(fns):
                            time_ms(fn, samples[i], REPEATS)
                    breakdown = {}
                    if profile:
                        breakdown = {"ours": kernel_breakdown(ours, True),
                                     "ours (no graphs)": kernel_breakdown(ours, False)}
                        breakdown.update((name, kernel_breakdown(fn, True))
                                         for name, fn in baselines.items())
                del ours, baselines, fns
                other = None
                torch.cuda.empty_cache()
                worst = max(errors.values())
                ok = worst <= LIMITS[precision]
                failed += not ok
                med = [statistics.median(s) for s in samples]
                row = {"kind": kind, "precision": precision, **config,
                       "grad_max_rel_err": worst, "grad_errors": errors,
                       "check": "PASS" if ok else "FAIL",
                       "ours_ms": med[0], "ours_range": [min(samples[0]), max(samples[0])]}
                for (name, _), m, s in zip(BASELINES[precision], med[1:], samples[1:]):
                    row[f"{name}_ms"] = m
                    row[f"{name}_range"] = [min(s), max(s)]
                if compare:
                    row["compare_dir"] = os.path.basename(os.path.normpath(compare))
                    row["compare_ms"] = med[-1]
                    row["compare_range"] = [min(samples[-1]), max(samples[-1])]
                if breakdown:
                    row["profile"] = breakdown
                rows.append(row)
                print(f"{'PASS' if ok else 'FAIL'} {kind:4} {precision} {config['name']:14} "
                      f"grads max rel err {worst:.1e} | ours {med[0]:8.3f} "
                      f"({min(samples[0]):.3f}-{max(samples[0]):.3f}) | " + " | ".join(
                          f"{name} {m:8.3f} ({m / med[0]:.2f}x)"
                          for (name, _), m in zip(BASELINES[precision], med[1:])) +
                      (f" | compare {med[-1]:8.3f} ({med[-1] / med[0]:.2f}x)" if compare else ""),
                      flush=True)
                for label, p in breakdown.items():
                    print_breakdown(label, p, profile)
    with open(out_path, "w") as f:
        json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                   "cudnn": torch.backends.cudnn.version(), "rows": rows}, f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    import argparse
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("model_dir")
    parser.add_argument("out_json")
    parser.add_argument("--precisions", default="fp32,bf16", help="of fp32, bf16")
    parser.add_argument("--configs", default="", help="shape names (default: all)")
    parser.add_argument("--profile", type=int, default=0, metavar="N",
                        help="after the timings, the N longest GPU kernels of one step of "
                             "each (torch.profiler; all of them in the JSON)")
    parser.add_argument("--compare", default=None, metavar="DIR",
                        help="also time the models of DIR (the same shapes compiled "
                             "otherwise) in the same rounds")
    args = parser.parse_args()
    sys.exit(main(args.model_dir, args.out_json, args.precisions.split(","),
                  [n for n in args.configs.split(",") if n], args.profile, args.compare))
