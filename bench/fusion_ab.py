#!/usr/bin/env python3
"""Experiment: what rnn-hoist-input-pointwise and rnn-carry-state-pointwise do to GPU time.

Every model is compiled twice (bench/fusion-ab-build.sh): with rnn-optimize's defaults
("on") and with `--optimize-options="hoist-input-pointwise=false
carry-state-pointwise=false"` ("off"). On the GPU machine this times the two in
alternating rounds (CUDA events, warm-up first, median of 15 calls in each of 5 rounds,
min-max over all calls) and checks that they compute the same thing.

* forward models (`*.fwd.{on,off}.so`): the whole call of their one public function;
* training models (`*.train.{on,off}.so`, built with --training): the training forward
  and the backward, one training step.

    python3 bench/fusion_ab.py DIR OUT_JSON
"""
import glob
import json
import os
import statistics
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from gpu_bench import CudaModel, random_args, time_ms  # noqa: E402
import rnn.runtime as rt  # noqa: E402

DTYPES = {0: torch.float32, 1: torch.float64, 2: torch.bfloat16, 3: torch.float16,
          4: torch.int32, 5: torch.int64}


class TypedModel(CudaModel):
    """CudaModel whose result tensors take the dtypes the model gives them (a bf16
    model's training forward saves bf16 tensors)."""

    def outputs(self, name, args):
        n = len(self.model.signature(name)[1])
        from gpu_bench import to_tensor
        arg_array = (rt.RnnTensor * len(args))(*[to_tensor(a) for a in args])
        res = (rt.RnnTensor * n)()
        status = self.lib.rnn_model_result_shapes(self.model.handle, name.encode(),
                                                  arg_array, len(args), res, n)
        if status:
            raise RuntimeError(self.lib.rnn_last_error().decode())
        return [torch.empty([r.shape[i] for i in range(r.rank)], dtype=DTYPES[r.dtype],
                            device="cuda") for r in res]

T, B = 100, 64
ROUNDS, REPEATS = 5, 15


def step_of(path, name):
    """A function running one call (forward) or one training step of function `name` of
    the model, and the tensors it writes."""
    model = TypedModel(path)
    args = random_args(model, name, T, B, seed=3)
    if ".train." not in path:
        outs = model.outputs(name, args)
        return (lambda: model(name, args, outs)), outs
    info = model.model.training_info(name)
    train_outs = model.outputs(info.train_function, args)
    n_results = len(train_outs) - info.num_saved
    gen = torch.Generator(device="cuda").manual_seed(4)
    dys = [torch.randn(o.shape, device="cuda", generator=gen).to(o.dtype)
           for o in train_outs[:n_results]]
    backward_args = args + train_outs + dys
    grads = model.outputs(info.backward_function, backward_args)

    def step():
        model(info.train_function, args, train_outs)
        model(info.backward_function, backward_args, grads)
    return step, train_outs[:n_results] + grads


def main(model_dir, out_path):
    rows = []
    print(f"{torch.cuda.get_device_name()}; T={T}, B={B}; ms, median of {ROUNDS}x{REPEATS} "
          "calls in alternating rounds (min-max)")
    functions = json.load(open(os.path.join(model_dir, "functions.json")))
    for on_path in sorted(glob.glob(os.path.join(model_dir, "*.on.so"))):
        label = os.path.basename(on_path)[:-len(".on.so")]
        off_path = on_path.replace(".on.so", ".off.so")
        name = functions[label]
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        samples = [[], []]
        with torch.cuda.stream(stream), torch.no_grad():
            on, on_outs = step_of(on_path, name)
            off, off_outs = step_of(off_path, name)
            on()
            off()
            torch.cuda.synchronize()
            diff = max(float((a.double() - b.double()).abs().max()
                             / b.double().abs().max().clamp_min(1e-30))
                       for a, b in zip(on_outs, off_outs))
            for _ in range(ROUNDS):
                for i, fn in enumerate((on, off)):
                    time_ms(fn, samples[i], REPEATS)
        med = [statistics.median(s) for s in samples]
        row = {"model": label, "on_ms": med[0], "off_ms": med[1],
               "on_range": [min(samples[0]), max(samples[0])],
               "off_range": [min(samples[1]), max(samples[1])],
               "on_vs_off_max_rel_diff": diff}
        rows.append(row)
        print(f"{label:28s} on {med[0]:8.3f} ({min(samples[0]):.3f}-{max(samples[0]):.3f})  "
              f"off {med[1]:8.3f} ({min(samples[1]):.3f}-{max(samples[1]):.3f})  "
              f"off/on {med[1] / med[0]:.3f}  outputs differ by {diff:.1e}")
    with open(out_path, "w") as f:
        json.dump({"device": torch.cuda.get_device_name(), "T": T, "B": B, "rows": rows},
                  f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
