#!/usr/bin/env python3
"""GPU differential test: random cells compiled for CUDA, optimised and not, run on the GPU
against the CPU build of the same cell and cellgen's float64 reference.

Each case is one seeded random cell of test/python/cellgen.py, varied by its seed:

  * sizes: half keep cellgen's own small I and H (1..13), half take I and H from GPU_SIZES
    (odd widths, rows longer than a block of threads, K of 1024 and more);
  * lengths: about 30% of the cells take per-row sequence lengths (0..T);
  * precision: float32, or a float32 cell with bf16 or f16 matmul operands
    (`--matmul-type`, float32 accumulation);
  * two (T, B) shapes per case, B in BATCHES (1, 3, 5, ... rows).

The case list also holds named cells written with the Python DSL (NAMED_CELLS), run the
same way against references of their own.

  build DIR [--cells N] [--first S]    (here) compiles every case into DIR: the CPU build
                                       (optimised) and the CUDA builds with and without
                                       rnn-optimize, and DIR/cases.json
  check DIR [--json OUT] [--workers W] (on the GPU machine) runs every case: the float64
                                       reference (cellgen, recomputed from the seed), the CPU
                                       build, and each CUDA build three times on one side
                                       stream (a direct call, a CUDA-graph capture and a
                                       replay); a crash or CUDA error of one case is recorded
                                       and the next case runs in a fresh process. Then the
                                       out-of-memory check: an LSTM (I = 1, H = 1024) called
                                       with T·B so large that its buffers cannot fit must
                                       return RNN_ERROR_OUT_OF_MEMORY, directly and under
                                       graph capture, and calls after it must still be right

Tolerances, max |ours - ref| / max(max |ref|, 1) per result: float32 1e-4; with bf16
matmul operands 4e-2 against float64 and 2e-2 against the CPU build with the same
operand rounding; f16 1e-2 and 5e-3. A case passes when every result of every call is
finite and within them. bench/gpu-diff-build.sh and bench/gpu-diff-run.sh wrap the two
steps.
"""

import argparse
import json
import os
import random
import subprocess
import sys
import time
import traceback
from concurrent.futures import ThreadPoolExecutor

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "test", "python"))

import cellgen  # noqa: E402

GPU_SIZES = (17, 33, 100, 129, 255, 300, 513, 1024, 1031)
BATCHES = (1, 3, 5, 8, 9, 64, 67)
TOL = {"f32": (1e-4, 1e-4), "bf16": (4e-2, 2e-2), "f16": (1e-2, 5e-3)}  # (vs float64, vs CPU)


# ---------------------------------------------------------------------------------------
# Cases
# ---------------------------------------------------------------------------------------

def random_case(seed):
    """The variation of cellgen seed `seed`: a dict that `cell_of` turns into the cell."""
    r = random.Random(1_000_003 * seed + 17)
    large = r.random() < 0.5
    case = {"kind": "cellgen", "name": f"cell{seed}", "seed": seed,
            "I": r.choice(GPU_SIZES) if large else None,
            "H": r.choice(GPU_SIZES) if large else None,
            "lengths": r.random() < 0.3,
            "matmul": r.choice(("f32", "f32", "bf16", "f16"))}
    big = large and max(case["I"], case["H"]) >= 1024
    case["runs"] = [(r.randint(1, 6 if big else 12), r.choice(BATCHES)) for _ in range(2)]
    return case


def cell_of(case):
    """(mlir_text, reference_fn, shapes) of a cellgen case."""
    return cellgen.generate(case["seed"], I=case["I"], H=case["H"], lengths=case["lengths"])


def _mut1_cell():
    """A GRU-like cell whose candidate adds tanh(x) (I = H) to a product of the reset
    state; built --no-optimize for CUDA at I = H = 1024, it once faulted at its first call."""
    import rnn
    from rnn import H, I, param, sigmoid, tanh

    @rnn.cell(states=("h",))
    def mut1(x, h):
        W_z = param("W_z", (H, I))
        b_z = param("b_z", (H,))
        W_r = param("W_r", (H, I))
        U_r = param("U_r", (H, H))
        b_r = param("b_r", (H,))
        U_h = param("U_h", (H, H))
        b_h = param("b_h", (H,))
        z = sigmoid(x @ W_z.T + b_z)
        r = sigmoid(x @ W_r.T + h @ U_r.T + b_r)
        return tanh((r * h) @ U_h.T + tanh(x) + b_h) * z + h * (1 - z)
    return mut1


def _mut1_reference(xs, h, W_z, b_z, W_r, U_r, b_r, U_h, b_h):
    sig = lambda v: 1.0 / (1.0 + np.exp(-v))
    ys = np.zeros(xs.shape[:2] + (h.shape[1],))
    for t in range(xs.shape[0]):
        x = xs[t]
        z = sig(x @ W_z.T + b_z)
        r = sig(x @ W_r.T + h @ U_r.T + b_r)
        h = np.tanh((r * h) @ U_h.T + np.tanh(x) + b_h) * z + h * (1 - z)
        ys[t] = h
    return ys, h


# name -> (cell factory, I, H, float64 reference of (xs, h0, *params), runs)
NAMED_CELLS = {"mut1": (_mut1_cell, 1024, 1024, _mut1_reference, [(100, 64), (7, 3)])}


def named_case(name):
    return {"kind": "named", "name": name, "matmul": "f32", "lengths": False,
            "runs": NAMED_CELLS[name][4]}


def named_args(case, T, B, rng):
    """float32 arguments of the DSL model's `forward`: xs, h0, then the parameters, drawn
    in [-1/sqrt(H), 1/sqrt(H)] like PyTorch's initialisation (inputs and states in [-1, 1])."""
    _, I, H, _, _ = NAMED_CELLS[case["name"]]
    k = 1.0 / np.sqrt(H)
    args = [rng.uniform(-1, 1, (T, B, I)), rng.uniform(-1, 1, (B, H))]
    args += [rng.uniform(-k, k, shape) for shape in case["param_shapes"]]
    return [a.astype(np.float32) for a in args]


# ---------------------------------------------------------------------------------------
# build (here)
# ---------------------------------------------------------------------------------------

OOM_H = 1024


def build_oom(out):
    """The out-of-memory check's LSTM, for the CPU and CUDA, with its parameter shapes."""
    import rnn
    from rnn.runtime import compile_mlir
    lstm = rnn.NumpyRNN(rnn.zoo.lstm, 1, OOM_H)
    src = os.path.join(out, "oom_lstm.mlir")
    with open(src, "w") as f:
        f.write(lstm.mlir)
    with open(os.path.join(out, "oom_lstm.json"), "w") as f:
        json.dump([list(np.shape(a)) for _, a in lstm.named_parameters()], f)
    for target in ("cpu", "cuda"):
        compile_mlir(src, os.path.join(out, f"oom_lstm.{target}.so"),
                     extra_args=[f"--target={target}"])


def build(out, cells, first):
    from rnn.runtime import compile_mlir
    os.makedirs(out, exist_ok=True)
    build_oom(out)
    cases = [random_case(s) for s in range(first, first + cells)]
    cases += [named_case(n) for n in NAMED_CELLS]
    jobs = []
    for case in cases:
        if case["kind"] == "cellgen":
            text, _, shapes = cell_of(case)
            case["func"] = shapes.func
            case["I"], case["H"] = shapes.I, shapes.H
        else:
            import rnn
            factory, I, H, _, _ = NAMED_CELLS[case["name"]]
            m = rnn.NumpyRNN(factory(), I, H)
            text = m.mlir
            case["func"] = "forward"
            case["I"], case["H"] = I, H
            case["param_shapes"] = [list(np.shape(a)) for _, a in m.named_parameters()]
        src = os.path.join(out, case["name"] + ".mlir")
        with open(src, "w") as f:
            f.write(text)
        extra = [] if case["matmul"] == "f32" else [f"--matmul-type={case['matmul']}"]
        for build_name, target, optimize in (("cpu", "cpu", True), ("cuda", "cuda", True),
                                             ("cuda_noopt", "cuda", False)):
            lib = os.path.join(out, f"{case['name']}.{build_name}.so")
            case[build_name] = os.path.basename(lib)
            jobs.append((src, lib, optimize, [f"--target={target}"] + extra))

    def compile_one(job):
        src, lib, optimize, extra = job
        try:
            compile_mlir(src, lib, optimize=optimize, extra_args=extra)
            return None
        except Exception as e:  # noqa: BLE001 - a compile error is a finding, recorded
            return f"{os.path.basename(lib)}: {e}"

    t0 = time.time()
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        errors = [e for e in pool.map(compile_one, jobs) if e]
    with open(os.path.join(out, "cases.json"), "w") as f:
        json.dump({"cases": cases, "compile_errors": errors}, f, indent=1)
    print(f"gpu_diff build: {len(cases)} cases, {len(jobs)} libraries in {time.time() - t0:.0f} s,"
          f" {len(errors)} compile errors")
    for e in errors:
        print("  compile error:", e[:2000])
    return 1 if errors else 0


# ---------------------------------------------------------------------------------------
# check (on the GPU machine)
# ---------------------------------------------------------------------------------------

def rel_err(got, ref):
    got = np.asarray(got, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    if got.shape != ref.shape:
        return float("inf")
    if ref.size == 0:
        return 0.0
    return float(np.abs(got - ref).max() / max(float(np.abs(ref).max()), 1.0))


def run_cuda(model, func, args, torch, calls=3):
    """Results of `calls` calls on one side stream (direct, graph capture, replay)."""
    dev = [torch.from_numpy(np.ascontiguousarray(a)).cuda() for a in args]
    descs = [(t.data_ptr(), {torch.float32: "f32", torch.int64: "i64"}[t.dtype],
              tuple(t.shape)) for t in dev]
    shapes = model.result_descriptors(func, descs)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    runs = []
    with torch.cuda.stream(side):
        for _ in range(calls):
            outs = [torch.empty(s, dtype=torch.float32, device="cuda") for _, s in shapes]
            model.run_descriptors(func, descs, [(o.data_ptr(), "f32", tuple(o.shape))
                                                for o in outs], side.cuda_stream)
            runs.append(outs)
    side.synchronize()
    return [[o.cpu().numpy() for o in outs] for outs in runs]


def check_case(case, d, torch):
    from rnn.runtime import Model
    tol_ref, tol_cpu = TOL[case["matmul"]]
    rec = {"name": case["name"], "matmul": case["matmul"], "I": case["I"], "H": case["H"],
           "lengths": case["lengths"], "runs": [], "ok": True}
    if case["kind"] == "cellgen":
        _, reference, shapes = cell_of(case)
    models = {b: Model(os.path.join(d, case[b])) for b in ("cpu", "cuda", "cuda_noopt")}
    try:
        for k, (T, B) in enumerate(case["runs"]):
            rng = np.random.default_rng(1000 * k + 7)
            if case["kind"] == "cellgen":
                args = cellgen.make_args(shapes, T, B, rng)
                ref = reference(*args)
            else:
                args = named_args(case, T, B, rng)
                ref = NAMED_CELLS[case["name"]][3](*[a.astype(np.float64) for a in args])
            cpu = models["cpu"](case["func"], *args)
            run = {"T": T, "B": B, "cpu_vs_ref": max(rel_err(c, e) for c, e in zip(cpu, ref))}
            ok = run["cpu_vs_ref"] <= tol_ref
            for b in ("cuda", "cuda_noopt"):
                calls = run_cuda(models[b], case["func"], args, torch)
                finite = all(np.all(np.isfinite(o)) for outs in calls for o in outs)
                vs_ref = max(rel_err(o, e) for outs in calls for o, e in zip(outs, ref))
                vs_cpu = max(rel_err(o, c) for outs in calls for o, c in zip(outs, cpu))
                run[b] = {"vs_ref": vs_ref, "vs_cpu": vs_cpu, "finite": finite}
                ok = ok and finite and vs_ref <= tol_ref and vs_cpu <= tol_cpu
            run["ok"] = ok
            rec["ok"] = rec["ok"] and ok
            rec["runs"].append(run)
    finally:
        for m in models.values():
            m.close()
    return rec


def worker(d, indices, results_path):
    """Runs cases `indices` in order, appending one JSON line per case to results_path (a
    'begin' line first, so that the supervisor knows which case a crash took)."""
    import torch
    cases = json.load(open(os.path.join(d, "cases.json")))["cases"]
    with open(results_path, "a") as log:
        for i in indices:
            log.write(json.dumps({"begin": i}) + "\n")
            log.flush()
            try:
                rec = check_case(cases[i], d, torch)
            except Exception as e:  # noqa: BLE001 - an error of the case is its result
                rec = {"name": cases[i]["name"], "ok": False, "error": f"{type(e).__name__}: {e}",
                       "traceback": traceback.format_exc()[-3000:]}
                log.write(json.dumps({"index": i, **rec}) + "\n")
                log.flush()
                # A CUDA fault poisons the context: leave the rest to a fresh process.
                return 3
            log.write(json.dumps({"index": i, **rec}) + "\n")
            log.flush()
    return 0


def check_oom(d):
    """The out-of-memory check (see the module's docstring); returns its record."""
    import torch
    from rnn.runtime import Model, RNNError
    cuda = Model(os.path.join(d, "oom_lstm.cuda.so"))
    cpu = Model(os.path.join(d, "oom_lstm.cpu.so"))
    H, B = OOM_H, 1000
    free, _ = torch.cuda.mem_get_info()
    # The outputs take 30% of the free memory; the hoisted input projection
    # alone needs four times that.
    T = int(0.3 * free / (B * H * 4))
    rng = np.random.default_rng(5)
    k = 1 / np.sqrt(H)
    params = [rng.uniform(-k, k, shape).astype(np.float32)
              for shape in json.load(open(os.path.join(d, "oom_lstm.json")))]
    rec = {"name": "out_of_memory", "T": T, "B": B, "free_bytes": free, "ok": True, "calls": []}
    big = [np.zeros((T, B, 1), np.float32), np.zeros((B, H), np.float32),
           np.zeros((B, H), np.float32)] + params
    for i in range(3):   # direct, then (the key's second call) under graph capture
        try:
            outs = run_cuda(cuda, "forward", big, torch, calls=1)
            rec["calls"].append("no error")
            rec["ok"] = False
            del outs
        except RNNError as e:
            rec["calls"].append(f"{e.status_name}: {e}"[:300])
            rec["ok"] = rec["ok"] and e.status_name == "RNN_ERROR_OUT_OF_MEMORY"
        torch.cuda.empty_cache()
        small = [rng.uniform(-1, 1, (5, 3, 1)).astype(np.float32),
                 rng.uniform(-1, 1, (3, H)).astype(np.float32),
                 rng.uniform(-1, 1, (3, H)).astype(np.float32)] + params
        got = run_cuda(cuda, "forward", small, torch)
        ref = cpu("forward", *small)
        err = max(rel_err(o, r) for outs in got for o, r in zip(outs, ref))
        rec["calls"].append(f"small call after it: max error vs the CPU build {err:.2e}")
        rec["ok"] = rec["ok"] and err <= 1e-4
    return rec


def check(d, json_out, workers, only):
    cases = json.load(open(os.path.join(d, "cases.json")))["cases"]
    todo = [i for i, c in enumerate(cases) if not only or c["name"] in only]
    shards = [todo[w::workers] for w in range(workers)]
    results = {}
    t0 = time.time()
    procs = []

    def start(w, indices):
        path = os.path.join(d, f"worker{w}.jsonl")
        p = subprocess.Popen([sys.executable, os.path.abspath(__file__), "worker", d, path,
                              ",".join(map(str, indices))], stderr=subprocess.PIPE, text=True)
        return (w, indices, path, p)

    for w, shard in enumerate(shards):
        if shard:
            open(os.path.join(d, f"worker{w}.jsonl"), "w").close()
            procs.append(start(w, shard))
    while procs:
        w, indices, path, p = procs.pop(0)
        _, stderr = p.communicate()
        lines = [json.loads(s) for s in open(path) if s.strip()]
        begun = [x["begin"] for x in lines if "begin" in x]
        for x in lines:
            if "index" in x:
                results[x["index"]] = x
        done = set(results)
        if begun and begun[-1] not in done:   # the process died inside this case
            i = begun[-1]
            results[i] = {"index": i, "name": cases[i]["name"], "ok": False,
                          "error": f"worker died (exit status {p.returncode})",
                          "stderr": stderr[-3000:]}
        rest = [i for i in indices if i not in results]
        if rest and p.returncode not in (0, 3) and (not begun or begun[-1] in done):
            # It exited between cases (or before the first): charge the next case, so
            # that every restart makes progress.
            i = rest.pop(0)
            results[i] = {"index": i, "name": cases[i]["name"], "ok": False,
                          "error": f"worker exited (status {p.returncode}) before the case",
                          "stderr": stderr[-3000:]}
        if rest:
            procs.append(start(w, rest))

    recs = [results[i] for i in todo]
    if not only:
        p = subprocess.run([sys.executable, os.path.abspath(__file__), "oom", d],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            recs.append(json.loads(p.stdout.strip().splitlines()[-1]))
        except (IndexError, ValueError):
            recs.append({"name": "out_of_memory", "ok": False,
                         "error": f"exit status {p.returncode}", "stderr": p.stderr[-3000:]})
    failed = [r for r in recs if not r["ok"]]
    summary = {"cases": len(recs), "failed": len(failed), "wall_s": round(time.time() - t0, 1),
               "runs": sum(len(r.get("runs", [])) for r in recs)}
    for prec in TOL:
        rs = [r for r in recs if r.get("matmul") == prec and "runs" in r]
        if rs:
            worst = lambda key: max(run[b][key] for r in rs for run in r["runs"]
                                    for b in ("cuda", "cuda_noopt"))
            summary[prec] = {"cases": len(rs), "worst_vs_ref": worst("vs_ref"),
                             "worst_vs_cpu": worst("vs_cpu"),
                             "worst_cpu_vs_ref": max(run["cpu_vs_ref"] for r in rs
                                                     for run in r["runs"])}
    try:
        import torch
        summary["device"] = torch.cuda.get_device_name()
    except Exception:  # noqa: BLE001
        pass
    print(json.dumps(summary, indent=1))
    for r in failed:
        print("FAIL", r["name"], r.get("error", ""), json.dumps(r.get("runs", ""))[:600])
        if "stderr" in r:
            print(r["stderr"][-1500:])
        if "traceback" in r:
            print(r["traceback"][-1500:])
    if json_out:
        with open(json_out, "w") as f:
            json.dump({"summary": summary, "results": recs}, f, indent=1)
    return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="mode", required=True)
    b = sub.add_parser("build")
    b.add_argument("dir")
    b.add_argument("--cells", type=int, default=300)
    b.add_argument("--first", type=int, default=0)
    c = sub.add_parser("check")
    c.add_argument("dir")
    c.add_argument("--json")
    c.add_argument("--workers", type=int, default=4)
    c.add_argument("--only", nargs="*", help="case names (default: all)")
    o = sub.add_parser("oom")
    o.add_argument("dir")
    w = sub.add_parser("worker")
    w.add_argument("dir")
    w.add_argument("results")
    w.add_argument("indices")
    a = ap.parse_args()
    if a.mode == "build":
        return build(a.dir, a.cells, a.first)
    if a.mode == "check":
        return check(a.dir, a.json, a.workers, a.only)
    if a.mode == "oom":
        print(json.dumps(check_oom(a.dir)))
        return 0
    return worker(a.dir, [int(i) for i in a.indices.split(",")], a.results)


if __name__ == "__main__":
    sys.exit(main())
