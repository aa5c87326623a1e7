"""The derived backward on the GPU, checked against the CPU in float64.

    training_gpu_check.py reference REF_DIR          (here: writes REF_DIR/<example>.npz)
    training_gpu_check.py check REF_DIR MODELS OUT   (there: CUDA models vs the references)

`reference` compiles every example of examples/ in float64 for the CPU with --training and
stores, per example, float32-representable random arguments, random loss weights (the result
gradients), and the float64 results and gradients of the training forward and backward. It
does the same for the zoo's head-wise cells (rnn.NumpyRNN models, 4 and 16 heads), whose
float32 source it also writes (REF_DIR/<name>.mlir) for the CUDA build.
`check` runs the CUDA build (float32) of the same example on those arguments, on torch CUDA
tensors, and reports the largest relative difference of every result and gradient; the
examples' matmuls do not allow TF32, so float32 rounding is the only difference."""

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
            _headwise_reference(ref_dir, pathlib.Path(tmp), name, heads, seed=2000 + k)


# The head-wise zoo cells, each at two head counts (D = 16 and 4).
HEADWISE = [(name, heads) for name in ("headwise_lstm", "headwise_gru", "slstm")
            for heads in (4, 16)]
HEADWISE_I, HEADWISE_H = 48, 64


def _headwise_reference(ref_dir, tmp, name, heads, seed):
    """As for an example: a float64 CPU reference of a head-wise zoo cell's training forward
    and backward, and its float32 source for the CUDA build (the sLSTM's normaliser n
    starts positive)."""
    tag = f"zoo_{name}_nh{heads}"
    spec = rnn.NumpyRNN(rnn.zoo.CELLS[name], HEADWISE_I, HEADWISE_H, sizes={"NH": heads},
                        seed=seed)
    text = spec.mlir
    func = text.split("func.func @", 1)[1].split("(", 1)[0]
    (ref_dir / f"{tag}.mlir").write_text(text)
    model = rnn.Model(rnn.compile_mlir(text.replace("f32", "f64"), tmp / f"{tag}.so",
                                       training=True))
    rng = np.random.default_rng(seed)

    def f32(a):
        return a.astype(np.float32).astype(np.float64)
    args = [f32(rng.standard_normal((T, B, HEADWISE_I)))]
    for state in spec._spec.state_names:
        a = rng.standard_normal((B, HEADWISE_H))
        args.append(f32(1.0 + np.abs(a) if state == "n" else a))
    args += [f32(0.3 * rng.standard_normal(p.shape)) for _, p in spec.named_parameters()]
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


def check(ref_dir, models_dir, out_path):
    import subprocess

    import torch
    report, failed = [], 0
    for npz in sorted(pathlib.Path(ref_dir).glob("*.npz")):
        example = npz.stem
        proc = subprocess.run([sys.executable, __file__, "check-one", str(npz),
                               str(pathlib.Path(models_dir) / f"{example}.so")],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            failed += 1
            why = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            report.append({"example": example, "pass": False, "error": why})
            print(f"FAIL {example:18} {why}")
            continue
        entry = json.loads(proc.stdout.strip().splitlines()[-1])
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


if __name__ == "__main__":
    if sys.argv[1] == "reference":
        reference(sys.argv[2])
    elif sys.argv[1] == "check-one":
        check_one(*sys.argv[2:4])
    else:
        sys.exit(check(*sys.argv[2:5]))
