"""The derived backward on the GPU, checked against the CPU in float64.

    training_gpu_check.py reference REF_DIR          (here: writes REF_DIR/<example>.npz)
    training_gpu_check.py check REF_DIR MODELS OUT   (there: CUDA models vs the references)
    training_gpu_check.py time REF_DIR MODELS OUT    (there: block kernels against the step
                                                      loop, training forward + backward)

`reference` compiles every example of examples/ in float64 for the CPU with --training and
stores, per example, float32-representable random arguments, random loss weights (the result
gradients), and the float64 results and gradients of the training forward and backward. It
does the same for the zoo's head-wise cells (rnn.NumpyRNN models, 4 and 16 heads) and for
dense zoo cells at H = 150 to 300 and the sLSTM with 3 heads of 256 units (clusters of
blocks), whose float32 source it also writes
(REF_DIR/<name>.mlir) for the CUDA build.
`check` runs the CUDA build (float32) of the same example on those arguments, on torch CUDA
tensors, and reports the largest relative difference of every result and gradient; the
examples' matmuls do not allow TF32, so float32 rounding is the only difference.
`time` runs each example's training forward and backward at T = 1000, B = 16 (random
arguments) with the block kernels (RNN_CUDA_PERSISTENT=1, read at every call) and with the
step loop of the same library (=0): both checked against each other first, then 3
alternating rounds of 10 steps each, CUDA events, medians; an example whose library has no
block kernel runs the same code both ways."""

import json
import pathlib
import sys

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "test" / "python"))

import rnn  # noqa: E402

T, B = 7, 3
LIMIT = 1e-4


def _save_reference(path, model, func, args, results, saved, weights):
    """The float64 backward of `func` for loss weights `weights`, saved with its arguments
    and results into `path` (an .npz); closes `model`."""
    grads = model.backward(func, args, results, saved, weights)
    arrays = {"func": np.array(func)}
    arrays.update({f"arg{i}": a for i, a in enumerate(args)})
    arrays.update({f"weight{i}": w for i, w in enumerate(weights)})
    arrays.update({f"result{i}": r for i, r in enumerate(results)})
    arrays.update({f"grad{i}": g for i, g in enumerate(grads) if g is not None})
    np.savez(path, **arrays)
    model.close()


def reference(ref_dir):
    import tempfile

    import reference as numpy_reference
    from test_examples import ARGS
    ref_dir = pathlib.Path(ref_dir)
    ref_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for k, example in enumerate(sorted(ARGS)):
            func, _ = numpy_reference.EXAMPLES[example]
            text = (ROOT / "examples" / f"{example}.mlir").read_text().replace("f32", "f64")
            model = rnn.Model(rnn.compile_mlir(text, pathlib.Path(tmp) / f"{example}.so",
                                               training=True))
            rng = np.random.default_rng(1000 + k)
            args = []
            for spec in ARGS[example]:
                shape = tuple({"T": T, "B": B}.get(d, d) for d in spec)
                scale = 1.0 if any(d in ("T", "B") for d in spec) else 0.3
                args.append((scale * rng.standard_normal(shape)).astype(np.float32)
                            .astype(np.float64))
            results, saved = model.train_forward(func, *args)
            weights = [rng.standard_normal(r.shape).astype(np.float32).astype(np.float64)
                       for r in results]
            _save_reference(ref_dir / f"{example}.npz", model, func, args, results, saved,
                            weights)
        for k, (name, heads) in enumerate(HEADWISE):
            _zoo_reference(ref_dir, pathlib.Path(tmp), f"zoo_{name}_nh{heads}", name,
                           HEADWISE_I, HEADWISE_H, {"NH": heads}, seed=2000 + k)
        for k, (name, hidden, sizes) in enumerate(CLUSTERED):
            tag = "".join(f"_{key.lower()}{v}" for key, v in sizes.items())
            _zoo_reference(ref_dir, pathlib.Path(tmp), f"zoo_{name}{tag}_h{hidden}", name,
                           CLUSTERED_I, hidden, sizes, seed=3000 + k, fan_in=True)


# The head-wise zoo cells, each at two head counts (D = 16 and 4), and cells whose heads are
# too large for one block (clusters of blocks on sm_90): dense ones at sizes that are no
# multiple of the cluster, and FlashRNN's sLSTM with 3 heads of 256 units.
HEADWISE = [(name, heads) for name in ("headwise_lstm", "headwise_gru", "slstm")
            for heads in (4, 16)]
HEADWISE_I, HEADWISE_H = 48, 64
CLUSTERED = [("lstm", 150, {}), ("gru", 300, {}), ("peephole_lstm", 250, {}),
             ("slstm", 768, {"NH": 3})]
CLUSTERED_I = 40


def _zoo_reference(ref_dir, tmp, tag, name, inputs, hidden, sizes, seed, fan_in=False):
    """As for an example: a float64 CPU reference of a zoo cell's training forward and
    backward, and its float32 source for the CUDA build (the sLSTM's normaliser n starts
    positive). Weights are 0.3 N(0, 1), or with `fan_in` N(0, 1) / sqrt(fan-in), which keeps
    the recurrence contracting at any size."""
    spec = rnn.NumpyRNN(rnn.zoo.CELLS[name], inputs, hidden, sizes=sizes, seed=seed)
    text = spec.mlir
    func = text.split("func.func @", 1)[1].split("(", 1)[0]
    (ref_dir / f"{tag}.mlir").write_text(text)
    model = rnn.Model(rnn.compile_mlir(text.replace("f32", "f64"), tmp / f"{tag}.so",
                                       training=True))
    rng = np.random.default_rng(seed)

    def f32(a):
        return a.astype(np.float32).astype(np.float64)
    args = [f32(rng.standard_normal((T, B, inputs)))]
    for state in spec._spec.state_names:
        a = rng.standard_normal((B, hidden))
        args.append(f32(1.0 + np.abs(a) if state == "n" else a))
    args += [f32(rng.standard_normal(p.shape)
                 * (1 / np.sqrt(p.shape[-1] if p.ndim > 1 else 3) if fan_in else 0.3))
             for _, p in spec.named_parameters()]
    results, saved = model.train_forward(func, *args)
    weights = [f32(rng.standard_normal(r.shape)) for r in results]
    _save_reference(ref_dir / f"{tag}.npz", model, func, args, results, saved, weights)


def run_torch(model, name, tensors, torch):
    dtypes = {"f32": torch.float32, "f64": torch.float64}
    sig_args, _ = model.signature(name)
    descs = [(t.data_ptr(), dt, tuple(t.shape)) for t, (dt, _) in zip(tensors, sig_args)]
    outs = [torch.empty(shape, dtype=dtypes[dt], device="cuda")
            for dt, shape in model.result_descriptors(name, descs)]
    model.run_descriptors(name, descs, [(o.data_ptr(), dt, tuple(o.shape)) for o, (dt, _)
                                        in zip(outs, model.result_descriptors(name, descs))],
                          torch.cuda.current_stream().cuda_stream)
    torch.cuda.synchronize()
    return outs


def check_one(npz, model_path):
    """Checks one example; prints one JSON line. Run in a process of its own: a CUDA error
    is sticky and would fail every later example."""
    import torch
    ref = np.load(npz)
    func = str(ref["func"])
    n_args = sum(1 for k in ref.files if k.startswith("arg"))
    n_res = sum(1 for k in ref.files if k.startswith("result"))
    args = [torch.from_numpy(ref[f"arg{i}"].astype(np.float32)).cuda() for i in range(n_args)]
    weights = [torch.from_numpy(ref[f"weight{i}"].astype(np.float32)).cuda()
               for i in range(n_res)]
    with rnn.Model(model_path) as model:
        info = model.training_info(func)
        outs = run_torch(model, info.train_function, args, torch)
        results, saved = outs[:n_res], outs[n_res:]
        grads = run_torch(model, info.backward_function, args + results + saved + weights, torch)
    errors = {}
    for i in range(n_res):
        r = ref[f"result{i}"]
        errors[f"result{i}"] = float(np.max(np.abs(results[i].cpu().numpy() - r))
                                     / max(np.max(np.abs(r)), 1e-30))
    for g, arg in zip(grads, info.gradient_args):
        r = ref[f"grad{arg}"]
        errors[f"grad{arg}"] = float(np.max(np.abs(g.cpu().numpy() - r))
                                     / max(np.max(np.abs(r)), 1e-30))
    print(json.dumps({"function": func, "errors": errors}))


def _run_one(command, npz, models_dir):
    """Runs `command` (check-one, time-one) on one reference and its model in a process of
    its own (a crash ends that process only); returns its last line of output as JSON, or
    None and why it failed."""
    import subprocess
    proc = subprocess.run([sys.executable, __file__, command, str(npz),
                           str(pathlib.Path(models_dir) / f"{npz.stem}.so")],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        return None, (proc.stderr.strip().splitlines()
                      or [f"exit status {proc.returncode}, no output"])[-1]
    return json.loads(proc.stdout.strip().splitlines()[-1]), None


def check(ref_dir, models_dir, out_path):
    import torch
    report, failed = [], 0
    for npz in sorted(pathlib.Path(ref_dir).glob("*.npz")):
        example = npz.stem
        entry, why = _run_one("check-one", npz, models_dir)
        if entry is None:
            failed += 1
            report.append({"example": example, "pass": False, "error": why})
            print(f"FAIL {example:18} {why}")
            continue
        worst = max(entry["errors"].values())
        ok = worst <= LIMIT
        failed += not ok
        report.append({"example": example, "function": entry["function"], "T": T, "B": B,
                       "max_rel_err": worst, "errors": entry["errors"], "pass": ok})
        print(f"{'PASS' if ok else 'FAIL'} {example:18} training forward + backward, "
              f"max rel err {worst:.2e} (limit {LIMIT:g})")
    pathlib.Path(out_path).write_text(json.dumps(
        {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "T": T, "B": B,
         "limit": LIMIT, "examples": report}, indent=1))
    print(f"training_gpu_check: {len(report) - failed} of {len(report)} PASS")
    return 1 if failed or not report else 0


TIME_T, TIME_B = 1000, 16


def _sized_arguments(model, func, torch):
    """Random arguments of `func` at T = TIME_T, B = TIME_B: the first two sizes of a
    sequence argument are T and B (the manifest's symbols), other sizes static."""
    args, _ = model.symbolic_signature(func)
    sizes = {}
    for _, shape in args:
        if len(shape) == 3 and all(isinstance(d, str) for d in shape[:2]):
            sizes = {shape[0]: TIME_T, shape[1]: TIME_B}
            break
    gen = torch.Generator(device="cuda").manual_seed(5)
    tensors = []
    for dtype, shape in args:
        dims = [sizes[d] if isinstance(d, str) else d for d in shape]
        if dtype.startswith("i"):
            tensors.append(torch.full(dims, TIME_T, dtype=torch.int32, device="cuda"))
            continue
        # Weights scaled by their fan-in (a contracting recurrence: over 1000 steps an
        # expanding one would amplify the two paths' different rounding), the rest 0.5.
        static = all(isinstance(d, int) for d in shape)
        scale = 0.5 / max(shape[-1], 1) ** 0.5 if static and len(shape) >= 2 else 0.5
        tensors.append(scale * torch.randn(dims, generator=gen, device="cuda"))
    return tensors


def time_one(npz, model_path):
    """Times one example (block kernels against the step loop); prints one JSON line. Run
    in a process of its own, as check_one."""
    import os
    import statistics

    import torch
    sys.path.insert(0, str(ROOT / "bench"))
    from cuda_events import event_times
    func = str(np.load(npz)["func"])
    with rnn.Model(model_path) as model:
        info = model.training_info(func)
        args = _sized_arguments(model, func, torch)

        def step():
            outs = run_torch(model, info.train_function, args, torch)
            n = len(outs) - info.num_saved
            weights = [torch.ones_like(o) for o in outs[:n]]
            return outs + run_torch(model, info.backward_function, args + outs + weights,
                                    torch)

        results, samples = {}, {"1": [], "0": []}
        for mode in ("1", "0"):
            os.environ["RNN_CUDA_PERSISTENT"] = mode
            results[mode] = step()
        diff = max(float((a - b).abs().max() / b.abs().max().clamp_min(1e-30))
                   for a, b in zip(results["1"], results["0"]))
        for _ in range(3):
            for mode in ("1", "0"):
                os.environ["RNN_CUDA_PERSISTENT"] = mode
                step()
                samples[mode] += event_times(step, 10)
    print(json.dumps({"function": func, "max_rel_diff": diff,
                      "block_kernel_ms": statistics.median(samples["1"]),
                      "step_loop_ms": statistics.median(samples["0"]),
                      "block_kernel_range": [min(samples["1"]), max(samples["1"])],
                      "step_loop_range": [min(samples["0"]), max(samples["0"])]}))


def time_examples(ref_dir, models_dir, out_path):
    """Block kernels against the step loop, one training step of every example."""
    import torch
    report = []
    for npz in sorted(pathlib.Path(ref_dir).glob("*.npz")):
        example = npz.stem
        entry, why = _run_one("time-one", npz, models_dir)
        if entry is None:
            report.append({"example": example, "pass": False, "error": why})
            print(f"FAIL {example:24} {why}", flush=True)
            continue
        entry.update(example=example, T=TIME_T, B=TIME_B,
                     **{"pass": entry["max_rel_diff"] <= LIMIT})
        report.append(entry)
        kernel, loop = entry["block_kernel_ms"], entry["step_loop_ms"]
        print(f"{'PASS' if entry['pass'] else 'FAIL'} {example:24} kernel vs loop rel diff "
              f"{entry['max_rel_diff']:.1e} | block kernels {kernel:8.3f} ms | step loop "
              f"{loop:8.3f} ms | {loop / kernel:.2f}x", flush=True)
    pathlib.Path(out_path).write_text(json.dumps(
        {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
         "examples": report}, indent=1))
    return 0 if report and all(r["pass"] for r in report) else 1


if __name__ == "__main__":
    if sys.argv[1] == "reference":
        reference(sys.argv[2])
    elif sys.argv[1] == "check-one":
        check_one(*sys.argv[2:4])
    elif sys.argv[1] == "time-one":
        time_one(*sys.argv[2:4])
    elif sys.argv[1] == "time":
        sys.exit(time_examples(*sys.argv[2:5]))
    else:
        sys.exit(check(*sys.argv[2:5]))
