#!/usr/bin/env python3
"""The shape sweep: our forward call against cuDNN's best algorithm over the shapes of
../shared/bench/sweep.json (a copy travels as bench/sweep.json).

The sweep's note asks to cover every H, every B and every T at least once per cell and
precision. `plan` does it with one shape per (cell, H): B cycles through the B list and T
through the T list in a different order (a cell-dependent offset), T lowered where T·B·H
would pass 2^22 elements (large H get short sequences: cuDNN's PERSIST_DYNAMIC took
1.1 s a call at H = 3072, T·B = 24,000); every
precision of a cell runs the same shapes, so cuDNN runs each once per precision class.
I = H, one layer.

    build DIR [--min-h H] [--max-h H] [--cells C,...] [--precisions P,...]
                       (here) the models, one per (cell, precision, H) (of those
                       given; a partial sweep): LSTM, GRU and
                       RNN-tanh of bench/make_models.py's form, TF32 matmuls in fp32,
                       bf16 / fp16 storage (input sequence and weights) with f32
                       accumulation and states otherwise; DIR/plan.json and
                       DIR/cudnn-configs.json for bench/cudnn_rnn_bench.
    run DIR OUT.json   (on the GPU machine) every shape: ours against the same torch.nn
                       module in the same precision (PyTorch's cuDNN algorithm), checked
                       against the fp32 module first, then both timed with CUDA events in
                       3 alternating rounds of 10 calls after a warm-up (medians). OUT.json
                       is rewritten after every shape.
    report OUT.json [--cudnn CUDNN.json] [--png FILE]
                       the table (markdown) and the plot: cuDNN best / ours against H, one
                       line per band of B, a panel per cell and precision. cuDNN best is
                       the fastest algorithm that cudnn_rnn_bench --inference-only found on
                       DIR/cudnn-configs.json (CUDNN.json, the same call on the GPU
                       machine, after the run) in the precision class: fp32 with TF32 for
                       fp32, the faster of cuDNN fp16 and bf16 for bf16 and fp16.

bench/sweep-build.sh and bench/sweep-run.sh wrap build and run.
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import make_models  # noqa: E402

CELLS = ("lstm", "gru", "rnn_tanh")
GATES = {"lstm": 4, "gru": 3, "rnn_tanh": 1}
MAX_ELEMENTS = 1 << 22  # T·B·H of the largest call
ROUNDS, REPEATS, WARMUP = 3, 10, 3
TOLERANCE = {"fp32": 3e-2, "bf16": 6e-2, "fp16": 3e-2}  # max |ours - fp32 torch| / max |.|


def model_text(cell, precision, H):
    """Our model of `cell` at I = H in `precision`."""
    make = {"lstm": make_models.lstm, "gru": make_models.gru,
            "rnn_tanh": lambda I, H, tf32: make_models.rnn(I, H, tf32, name="rnn_tanh")}[cell]
    if precision == "fp32":
        return make(H, H, tf32=True)
    text = make_models.bf16_storage(make(H, H, tf32=False), H, H, GATES[cell] * H)
    return text if precision == "bf16" else text.replace("bf16", "f16")


def plan(sweep):
    """The sampled shapes: [{cell, H, B, T}], one per (cell, H)."""
    Hs, Bs, Ts = sweep["H"], sweep["B"], sorted(sweep["T"], reverse=True)
    shapes = []
    for c, cell in enumerate(sweep["cells"]):
        for i, H in enumerate(Hs):
            B = Bs[(i + 5 * c) % len(Bs)]
            T = Ts[(i + 2 * c) % len(Ts)]
            while T * B * H > MAX_ELEMENTS and T > min(Ts):
                T = max(t for t in Ts if t < T)
            shapes.append({"cell": cell, "H": H, "B": B, "T": T})
    for cell in sweep["cells"]:
        mine = [s for s in shapes if s["cell"] == cell]
        for key in ("H", "B", "T"):
            missing = set(sweep[key]) - {s[key] for s in mine}
            if missing:
                raise SystemExit(f"sweep plan: {cell} misses {key} = {sorted(missing)}")
    return shapes


def build(out_dir, compiler, runtime_dir, max_h=None, min_h=None, cells=None,
          precisions=None):
    sweep = json.load(open(os.path.join(HERE, "sweep.json")))
    shapes = [s for s in plan(sweep) if (max_h is None or s["H"] <= max_h) and
              (min_h is None or s["H"] >= min_h) and (not cells or s["cell"] in cells)]
    if precisions:
        sweep["precisions"] = [p for p in sweep["precisions"] if p in precisions]
    os.makedirs(os.path.join(out_dir, "models"), exist_ok=True)
    for s in shapes:
        for precision in sweep["precisions"]:
            name = f"{s['cell']}_{precision}_H{s['H']}"
            src = os.path.join(out_dir, "models", name + ".mlir")
            with open(src, "w") as f:
                f.write(model_text(s["cell"], precision, s["H"]))
            subprocess.run([compiler, "--target=cuda", src, "-o", src[:-5] + ".so",
                            "--runtime-dir", runtime_dir], check=True)
            os.unlink(src)
    json.dump({"precisions": sweep["precisions"], "shapes": shapes},
              open(os.path.join(out_dir, "plan.json"), "w"), indent=1)
    json.dump([{"name": f"{s['cell']}-H{s['H']}-B{s['B']}-T{s['T']}", "T": s["T"],
                "B": s["B"], "I": s["H"], "H": s["H"], "cell": s["cell"]} for s in shapes],
              open(os.path.join(out_dir, "cudnn-configs.json"), "w"), indent=1)
    print(f"sweep build: {len(shapes)} shapes x {len(sweep['precisions'])} precisions")


# ---------------------------------------------------------------------------------------
# On the GPU machine
# ---------------------------------------------------------------------------------------

def cudnn_best(path):
    """{(cell, H, B, T): {'fp32': ms, '16-bit': ms, 'algo': {...}}} from cudnn_rnn_bench."""
    best = {}
    for r in json.load(open(path))["results"]:
        c = r["config"]
        entry = best.setdefault((r["cell"], c["H"], c["B"], c["T"]), {"algo": {}})
        for cls, measures in r.get("class_best", {}).items():
            inference = measures.get("inference") or {}
            if "median_ms" in inference:
                entry[cls] = inference["median_ms"]
                entry["algo"][cls] = f"{inference['algo']} {inference.get('precision', '')}".strip()
    return best


def join_cudnn(rows, cudnn_path):
    """Adds cuDNN best (cudnn_best) to each row that has our time."""
    best = cudnn_best(cudnn_path)
    for row in rows:
        b_ = best.get((row["cell"], row["H"], row["B"], row["T"]), {})
        cls = "fp32" if row["precision"] == "fp32" else "16-bit"
        if cls in b_ and "ours_ms" in row:
            row["cudnn_best_ms"] = b_[cls]
            row["cudnn_best_algo"] = b_["algo"][cls]
            row["ratio_vs_best"] = b_[cls] / row["ours_ms"]


def run(model_dir, out_path):
    import torch
    from cuda_events import event_times
    from gpu_bench import CudaModel

    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    p = json.load(open(os.path.join(model_dir, "plan.json")))
    dtypes = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
    rows = []
    print(f"{torch.cuda.get_device_name()}; ms, medians of {ROUNDS}x{REPEATS} calls in "
          "alternating rounds")
    for s in p["shapes"]:
        cell, H, B, T = s["cell"], s["H"], s["B"], s["T"]
        torch.manual_seed(0)
        module = {"lstm": torch.nn.LSTM, "gru": torch.nn.GRU,
                  "rnn_tanh": torch.nn.RNN}[cell](H, H).cuda()
        gen = torch.Generator(device="cuda").manual_seed(1)
        x = torch.randn(T, B, H, device="cuda", generator=gen)
        states = [torch.randn(B, H, device="cuda", generator=gen) * 0.5
                  for _ in range(2 if cell == "lstm" else 1)]
        with torch.no_grad():
            ref = module(x, tuple(st[None] for st in states) if cell == "lstm"
                         else states[0][None])[0]
        for precision in p["precisions"]:
            row = {"cell": cell, "precision": precision, "H": H, "B": B, "T": T}
            try:
                dt = dtypes[precision]
                store = (lambda t: t) if precision == "fp32" else (lambda t: t.to(dt))
                ours = CudaModel(os.path.join(model_dir, "models",
                                              f"{cell}_{precision}_H{H}.so"))
                args = [store(x)] + states + [
                    store(module.weight_ih_l0.detach().contiguous()),
                    store(module.weight_hh_l0.detach().contiguous()),
                    module.bias_ih_l0.detach().contiguous(),
                    module.bias_hh_l0.detach().contiguous()]
                fn = f"{cell}_seq"
                outs = ours.outputs(fn, args)
                theirs = module if precision == "fp32" else \
                    type(module)(H, H).cuda().to(dt)
                if theirs is not module:
                    theirs.load_state_dict(module.state_dict())
                    theirs.flatten_parameters()
                tx = x.to(dt)
                tstates = tuple(st.to(dt)[None] for st in states)
                tstates = tstates if cell == "lstm" else tstates[0]
                with torch.no_grad():
                    ours(fn, args, outs)
                    torch.cuda.synchronize()
                    err = float((outs[0].double() - ref.double()).abs().max()
                                / ref.double().abs().max())
                    row["rel_err_vs_fp32_torch"] = err
                    row["check"] = "PASS" if err <= TOLERANCE[precision] else "FAIL"
                    calls = [lambda: ours(fn, args, outs), lambda: theirs(tx, tstates)]
                    samples = [[], []]
                    for fn_ in calls:
                        for _ in range(WARMUP):
                            fn_()
                    torch.cuda.synchronize()
                    for _ in range(ROUNDS):
                        for i, fn_ in enumerate(calls):
                            samples[i] += event_times(fn_, REPEATS)
                row["ours_ms"] = statistics.median(samples[0])
                row["ours_range"] = [min(samples[0]), max(samples[0])]
                row["torch_cudnn_ms"] = statistics.median(samples[1])
                row["ratio_vs_torch"] = row["torch_cudnn_ms"] / row["ours_ms"]
                del ours
            except Exception as e:  # a shape that fails is recorded, the sweep goes on
                row["check"] = "ERROR"
                row["error"] = f"{type(e).__name__}: {e}"
            rows.append(row)
            print(f"{row.get('check', '?'):5} {cell:8} {precision:4} H={H:5} B={B:4} T={T:5}  "
                  f"ours {row.get('ours_ms', float('nan')):9.3f}  torch {row.get('torch_cudnn_ms', float('nan')):9.3f}  "
                  f"torch/ours {row.get('ratio_vs_torch', float('nan')):5.2f}x  "
                  f"err {row.get('rel_err_vs_fp32_torch', float('nan')):.1e}"
                  f"{'  ' + row['error'] if 'error' in row else ''}", flush=True)
            json.dump({"device": torch.cuda.get_device_name(), "rows": rows},
                      open(out_path, "w"), indent=1)
        torch.cuda.empty_cache()
    return 0 if all(r.get("check") == "PASS" for r in rows) else 1


# ---------------------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------------------

def b_band(B):
    return "B 1-4" if B <= 4 else "B 8-32" if B <= 32 else "B 64-256"


def report(path, cudnn_path, png):
    data = json.load(open(path))
    if cudnn_path:
        join_cudnn(data["rows"], cudnn_path)
    rows = [r for r in data["rows"] if "ratio_vs_best" in r]
    print("| cell | precision | H | B | T | ours (ms) | cuDNN best (ms) | algorithm "
          "| best / ours | torch's cuDNN / ours | check |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in data["rows"]:
        print(f"| {r['cell']} | {r['precision']} | {r['H']} | {r['B']} | {r['T']} "
              f"| {r.get('ours_ms', float('nan')):.3f} | {r.get('cudnn_best_ms', float('nan')):.3f} "
              f"| {r.get('cudnn_best_algo', '-')} | {r.get('ratio_vs_best', float('nan')):.2f}x "
              f"| {r.get('ratio_vs_torch', float('nan')):.2f}x | {r.get('check')} |")
    print()
    for cell in CELLS:
        for precision in ("fp32", "bf16", "fp16"):
            mine = [r["ratio_vs_torch"] for r in data["rows"] if "ratio_vs_torch" in r
                    and r["cell"] == cell and r["precision"] == precision]
            if mine:
                geo = math.exp(statistics.mean(math.log(v) for v in mine))
                print(f"- {cell} {precision} against torch's cuDNN: {len(mine)} shapes, "
                      f"geomean {geo:.2f}x, worst {min(mine):.2f}x, best {max(mine):.2f}x")
    for cell in CELLS:
        for precision in ("fp32", "bf16", "fp16"):
            mine = [r["ratio_vs_best"] for r in rows
                    if r["cell"] == cell and r["precision"] == precision]
            if mine:
                geo = math.exp(statistics.mean(math.log(v) for v in mine))
                print(f"- {cell} {precision}: {len(mine)} shapes, geomean {geo:.2f}x, "
                      f"worst {min(mine):.2f}x, {sum(v < 0.95 for v in mine)} below 0.95x")
    if png:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        precisions = ("fp32", "bf16", "fp16")
        fig, axes = plt.subplots(len(CELLS), len(precisions), figsize=(13, 10),
                                 sharex=True, sharey=True)
        for i, cell in enumerate(CELLS):
            for j, precision in enumerate(precisions):
                ax = axes[i][j]
                for band in ("B 1-4", "B 8-32", "B 64-256"):
                    pts = sorted((r["H"], r["ratio_vs_best"]) for r in rows
                                 if r["cell"] == cell and r["precision"] == precision
                                 and b_band(r["B"]) == band)
                    if pts:
                        ax.plot(*zip(*pts), marker="o", label=band)
                if not ax.lines:
                    ax.text(0.5, 0.5, "cuDNN best not measured", ha="center",
                            va="center", transform=ax.transAxes, fontsize=8, color="grey")
                ax.axhline(1.0, color="grey", lw=0.8)
                ax.axhline(0.95, color="red", lw=0.6, ls="--")
                ax.set_xscale("log", base=2)
                ax.set_yscale("log", base=2)
                ax.set_title(f"{cell}, {precision}", fontsize=9)
                if i == len(CELLS) - 1:
                    ax.set_xlabel("H")
                if j == 0:
                    ax.set_ylabel("cuDNN best / ours")
        axes[0][0].legend(fontsize=7)
        fig.suptitle(f"Forward, one layer: cuDNN's best algorithm / ours ({data['device']})")
        fig.tight_layout()
        fig.savefig(png, dpi=110)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("dir")
    b.add_argument("--compiler", default=os.path.join(
        os.environ.get("RNN_BUILD_DIR", os.path.join(ROOT, "build")), "bin", "rnn-compile"))
    b.add_argument("--runtime-dir", required=True)
    b.add_argument("--max-h", type=int,
                   help="only the plan's shapes with H up to this (a partial sweep)")
    b.add_argument("--min-h", type=int, help="only the plan's shapes with H from this")
    b.add_argument("--cells", help="only these cells (comma-separated)")
    b.add_argument("--precisions", help="only these precisions (comma-separated)")
    r = sub.add_parser("run")
    r.add_argument("dir")
    r.add_argument("out")
    p = sub.add_parser("report")
    p.add_argument("json")
    p.add_argument("--cudnn")
    p.add_argument("--png")
    sub.add_parser("plan")
    a = ap.parse_args()
    if a.cmd == "build":
        build(a.dir, a.compiler, a.runtime_dir, a.max_h, a.min_h,
              a.cells.split(",") if a.cells else None,
              a.precisions.split(",") if a.precisions else None)
    elif a.cmd == "run":
        sys.exit(run(a.dir, a.out))
    elif a.cmd == "report":
        report(a.json, a.cudnn, a.png)
    else:
        for s in plan(json.load(open(os.path.join(HERE, "sweep.json")))):
            print(s)


if __name__ == "__main__":
    main()
