#!/usr/bin/env python3
"""The block kernels (convert-step-loops-to-block-kernels) on the GPU: every zoo cell at small,
odd sizes, checked against float64 and timed against the step loop of the same library.

    build DIR          (here) every zoo cell at H = 17, 64 and 100 (head-wise cells with 4
                       heads at H = 68, 64, 100: heads of 17, 16, 25 units; other sizes
                       with RNN_BLOCK_SIZES, e.g. 150,300), input size 24,
                       in float32 and with bf16 matmuls (matmul_dtype="bfloat16"), saved with
                       rnn.NumpyRNN.save into DIR/<name>/ with zero weights (`run` draws
                       random ones from the plan's seed);
                       DIR/plan.json says which libraries hold a block kernel (they import
                       rnn_cuda_persistent_enabled).
    run DIR OUT.json   (on the GPU machine) each model at B = 1, 3, 5, 16 and 64 (T = 7, random
                       initial states; RNN_BLOCK_CHECK_T), on its persistent kernel (block
                       or, from H = 449, grid-wide) and on the step loop
                       (RNN_CUDA_PERSISTENT=0, read at every call), against the float64
                       references of test/python/reference.py: max |ours - ref| / max |ref|
                       within 1e-4 (float32) or 3e-2 (bf16 matmuls). Then the models with a
                       block kernel at B = 1, 16, 64 and T = 300: the block kernel and the step
                       loop in 3 alternating rounds of 10 calls after a warm-up, CUDA events,
                       medians (ms) and the spread.

bench/block-kernels-build.sh and bench/block-kernels-run.sh wrap build and run.
"""
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "test", "python"))

# RNN_BLOCK_SIZES (comma-separated) replaces the sizes, e.g. "150,300" for recurrences that
# clusters of blocks share; head-wise cells then take 4 heads of H // 4 units.
SIZES = tuple(int(s) for s in os.environ.get("RNN_BLOCK_SIZES", "17,64,100").split(","))
HEADWISE_SIZES = {17: 68, 64: 64, 100: 100}  # 4 heads of 17, 16 and 25 units
# RNN_BLOCK_CELLS (comma-separated) keeps those zoo cells only, e.g. "lstm,gru".
CELLS = tuple(c for c in os.environ.get("RNN_BLOCK_CELLS", "").split(",") if c)
INPUT = 24
CHECK_BATCHES = (1, 3, 5, 16, 64)
TIME_BATCHES = (1, 16, 64)
# RNN_BLOCK_CHECK_T replaces the checks' T, e.g. 40 for the grid-wide kernels (which take
# T >= 32) at the sizes they run.
CHECK_T = int(os.environ.get("RNN_BLOCK_CHECK_T", "7"))
TIME_T = 300
ROUNDS, REPEATS, WARMUP = 3, 10, 3
TOLERANCE = {"f32": 1e-4, "bf16": 3e-2}
HEADWISE = ("headwise_lstm", "headwise_gru", "slstm")


def build(out_dir):
    import numpy as np
    import rnn
    from test_dsl_zoo import ZOO

    os.makedirs(out_dir, exist_ok=True)
    plan = []
    for cell, (_, _, kwargs, _) in sorted(ZOO.items()):
        if CELLS and cell not in CELLS:
            continue
        for size in SIZES:
            H = HEADWISE_SIZES.get(size, 4 * (size // 4)) if cell in HEADWISE else size
            extra = dict(kwargs)
            if cell == "lstmp":
                extra["proj_size"] = max(H // 2, 1)
            for precision, mm in (("f32", None), ("bf16", "bfloat16")):
                name = f"{cell}_{precision}_H{H}"
                model = rnn.NumpyRNN(rnn.zoo.CELLS[cell], H if cell == "sru" else INPUT, H,
                                     device="cuda", matmul_dtype=mm, **extra)
                # Zeros here (the saved models stay small at large H); `run` draws the
                # weights from the plan's seed.
                for key, a in model.named_parameters():
                    model.params[key] = np.zeros(np.shape(a), np.float32)
                path = os.path.join(out_dir, name)
                model.save(path)
                libraries = [open(os.path.join(path, f), "rb").read()
                             for f in os.listdir(path) if f.endswith(".so") and "runtime" not in f]
                # The host code of a block kernel asks rnn_cuda_persistent_enabled, a
                # grid-wide kernel's rnn_cuda_persistent_batch_tiles.
                grid = any(b"rnn_cuda_persistent_batch_tiles" in lib for lib in libraries)
                blocks = grid or any(b"rnn_cuda_persistent_enabled" in lib for lib in libraries)
                plan.append({"name": name, "cell": cell, "precision": precision, "H": H,
                             "seed": len(plan), "block_kernel": blocks, "grid_kernel": grid})
                print(f"block-kernels build: {name}: "
                      f"{'grid-wide kernel' if grid else 'block kernel' if blocks else 'step loop'}")
    json.dump(plan, open(os.path.join(out_dir, "plan.json"), "w"), indent=1)


def run(model_dir, out_path):
    import numpy as np
    import torch
    import rnn
    from cuda_events import event_times
    from test_dsl_zoo import ZOO

    def rel_err(ours, ref):
        ours = ours.detach().cpu().double().numpy()
        return float(np.max(np.abs(ours - ref)) / max(np.max(np.abs(ref)), 1e-30))

    def call(model, x, hx, persistent):
        os.environ["RNN_CUDA_PERSISTENT"] = "1" if persistent else "0"
        ys, st = model(x, hx if len(hx) > 1 else hx[0])
        return [ys] + (list(st) if isinstance(st, tuple) else [st])

    plan = json.load(open(os.path.join(model_dir, "plan.json")))
    device = torch.cuda.get_device_name()
    print(f"{device}, torch {torch.__version__}")
    rows, failed = [], []
    for entry in plan:
        model = rnn.load(os.path.join(model_dir, entry["name"]))
        rng = np.random.default_rng(entry["seed"])
        k = 1.0 / np.sqrt(entry["H"])
        model.load_state_dict({key: rng.uniform(-k, k, np.shape(a)).astype(np.float32)
                               for key, a in model.state_dict().items()})
        ref_fn, names, _, _ = ZOO[entry["cell"]]
        params = [torch.as_tensor(model.param(n)).cpu().double().numpy() for n in names]
        worst = {"block": 0.0, "step loop": 0.0}
        for B in CHECK_BATCHES:
            g = torch.Generator().manual_seed(B)
            x = torch.randn(CHECK_T, B, model.input_size, generator=g).cuda()
            hx = tuple(torch.randn(1, B, size, generator=g).cuda()
                       for size in model._spec.state_sizes)
            hx = tuple(h.abs() + 1 if s == "n" else h  # the sLSTM's normaliser is positive
                       for s, h in zip(model._spec.state_names, hx))
            refs = ref_fn(x.cpu().double().numpy(), *[h[0].cpu().double().numpy() for h in hx],
                          *params)
            refs = [r if k == 0 else r[None] for k, r in enumerate(refs)]
            for how, persistent in (("block", True), ("step loop", False)):
                outs = call(model, x, hx, persistent)
                torch.cuda.synchronize()
                err = max(rel_err(o, r) for o, r in zip(outs, refs))
                worst[how] = max(worst[how], err)
        ok = all(e <= TOLERANCE[entry["precision"]] for e in worst.values())
        if not ok:
            failed.append(entry["name"])
        row = dict(entry, check="PASS" if ok else "FAIL",
                   max_rel_err={k: v for k, v in worst.items()})
        print(f"{row['check']} {entry['name']:26s} "
              f"{'block kernel' if entry['block_kernel'] else 'step loop   '} "
              f"max rel err {worst['block']:.1e} (step loop {worst['step loop']:.1e})",
              flush=True)
        if entry["block_kernel"] and ok:
            row["timings"] = []
            for B in TIME_BATCHES:
                g = torch.Generator().manual_seed(100 + B)
                x = torch.randn(TIME_T, B, model.input_size, generator=g).cuda()
                hx = tuple(torch.randn(1, B, size, generator=g).cuda().abs() + 0.5
                           for size in model._spec.state_sizes)
                samples = {True: [], False: []}
                with torch.no_grad():
                    for persistent in (True, False):
                        for _ in range(WARMUP):
                            call(model, x, hx, persistent)
                    torch.cuda.synchronize()
                    for _ in range(ROUNDS):
                        for persistent in (True, False):
                            os.environ["RNN_CUDA_PERSISTENT"] = "1" if persistent else "0"
                            samples[persistent] += event_times(
                                lambda: model(x, hx if len(hx) > 1 else hx[0]), REPEATS)
                t = {"B": B, "T": TIME_T,
                     "block_ms": statistics.median(samples[True]),
                     "block_range": [min(samples[True]), max(samples[True])],
                     "step_loop_ms": statistics.median(samples[False]),
                     "step_loop_range": [min(samples[False]), max(samples[False])]}
                t["speedup"] = t["step_loop_ms"] / t["block_ms"]
                row["timings"].append(t)
                print(f"      B={B:3d} T={TIME_T}: block {t['block_ms']:.3f} ms "
                      f"({t['block_ms'] * 1000 / TIME_T:.2f} us/step), step loop "
                      f"{t['step_loop_ms']:.3f} ms: {t['speedup']:.2f}x", flush=True)
        rows.append(row)
        json.dump({"device": device, "rows": rows}, open(out_path, "w"), indent=1)
        del model
    os.environ.pop("RNN_CUDA_PERSISTENT", None)
    print("block-kernels:", "all PASS" if not failed else f"FAILED: {', '.join(failed)}")
    return 1 if failed else 0


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "build":
        return build(sys.argv[2])
    if len(sys.argv) >= 4 and sys.argv[1] == "run":
        return run(sys.argv[2], sys.argv[3])
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
