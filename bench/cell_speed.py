#!/usr/bin/env python3
"""Cell-speed test (issue 28): random cells of cellgen's extended family, each timed on
the GPU against our LSTM scaled by the cell's recurrent work.

Each case is seed N of test/python/cellgen.py's extended family (gate feedback, second
recurrent stages, pointwise functions of the states before matmuls, input-only pointwise
chains) at I = H = 1024, compiled with `--target=cuda --matmul-type=tf32`; the reference
is our LSTM (bench/make_models.py's, the `medium` benchmark model) compiled the same way.

The reference cost. A cell's recurrent work per step is F, the multiply-adds per row of
its products whose left operand depends on a state (they run inside the time loop; the
input projections run once before it, as in the LSTM). The LSTM's is F_lstm = 4·H·H. A
cell's score is

    t_cell / (t_lstm · F_cell / F_lstm)

where t is the time of a whole call (input projections included) at T = 100, B = 64:
1.0 means the cell's step costs what an LSTM step of the same recurrent work does.
Scaling the LSTM by FLOPs is only fair where the products dominate a step and their
shapes resemble the LSTM's. The extended generator therefore plans its recurrent
matmuls to between 2 and 8 H·H multiply-adds per row and step (half to twice the
LSTM's): below 2 the step's fixed costs (launches, the pointwise group, the wait for the
step ahead) dominate and the scaled reference would ask for the impossible; above 8 the
cell is a different kind of model. F is counted on cellgen's own graph (live products
only) and again on the IR after rnn-optimize (the `rnn.matmul`s left in the cell); the
two agree unless the compiler changed the work, which the report flags.

  build DIR [--cells N] [--first S] [--target cuda|cpu] [--size H] [--jobs J]
      (here) writes DIR/lstm.mlir and DIR/cellS.mlir for N seeds (default 120 from 0),
      compiles each (DIR/*.so), and writes DIR/cases.json: per cell its seed, F from the
      generator and from the optimised IR, the IR after rnn-optimize (rnn-opt) and
      `rnn-compile --explain`'s report. `--target cpu --size 8` makes a small build that
      the check can run on the CPU (test/python/test_cell_speed.py does).
  check DIR [--json OUT] [--T 100] [--batch 64] [--rounds 3] [--repeats 15]
      (on the GPU machine; on the CPU for a cpu build) for each cell: three calls at a
      small T (CHECK_T, or --check-T; on CUDA a direct call, the graph capture and a replay) against
      cellgen's float64 reference, so that a fast wrong kernel does not count; then the
      cell and the LSTM timed in `rounds` alternating rounds, each block a warm-up (the
      first round: at least WARMUP calls and WARMUP_S; later rounds: WARMUP calls) and
      `repeats` calls timed with CUDA events around each call; t is the median over all
      rounds' calls, and the last timed call's results must be finite. Cells run one at
      a time in a worker process; a crash is recorded and the next cell runs in a fresh
      one. The report: the score of every cell, their median, quantiles and worst, the
      issue's targets (median within 1.15, none beyond 1.5) and the 5 worst cells with
      their explain reports.

Tolerance of the correctness calls, max |ours - ref| / max(max |ref|, 1) per result: 1e-2
with TF32 products (about 11 bits of mantissa), 1e-4 for the cpu build (f32).
bench/cell-speed-build.sh and bench/cell-speed-run.sh wrap the two steps.
"""

import argparse
import hashlib
import json
import os
import re
import statistics
import subprocess
import sys
import time
import traceback
from concurrent.futures import ThreadPoolExecutor

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "test", "python"))
sys.path.insert(0, os.path.join(ROOT, "bench"))

import cellgen  # noqa: E402
from gpu_diff import rel_err  # noqa: E402  (the differential test's error measure)

FAMILY = "extended"
SIZE = 1024                 # I = H of the cells and the LSTM
MATMUL_TYPE = "tf32"
CHECK_T = 4                 # steps of the correctness call
TOL = {"cuda": 1e-2, "cpu": 1e-4}
WARMUP = 3
WARMUP_S = 0.2
WORST = 5


# ---------------------------------------------------------------------------------------
# Recurrent multiply-adds of the optimised IR
# ---------------------------------------------------------------------------------------

_MATMUL = re.compile(r"=\s*rnn\.matmul\b[^:]*:\s*tensor<([^>]*)>.*->\s*tensor<([^>]*)>")


def _dims(ttype):
    return ttype.split("x")[:-1]


def ir_recurrent_macs(text):
    """Multiply-adds per row and step of the matmuls left inside the `rnn.cell`s of
    `text` (rnn-opt's printed IR). After rnn-optimize every product of the input alone
    has left the cell (rnn-hoist-input-projection), so these are the recurrent ones; a
    row-wise matmul in a cell has a [?, K] left operand."""
    total, indent = 0, None
    for line in text.splitlines():
        stripped = line.lstrip()
        if indent is None:
            if stripped.startswith("rnn.cell "):
                indent = len(line) - len(stripped)
            continue
        if stripped == "}" and len(line) - len(stripped) == indent:
            indent = None
            continue
        m = _MATMUL.search(line)
        if m:
            lhs, res = _dims(m.group(1)), _dims(m.group(2))
            if len(lhs) == 2:
                total += int(lhs[-1]) * int(res[-1])
    return total


# ---------------------------------------------------------------------------------------
# build (here)
# ---------------------------------------------------------------------------------------

def _rnn_opt():
    build = os.environ.get("RNN_BUILD_DIR") or os.path.join(ROOT, "build")
    return os.environ.get("RNN_OPT", os.path.join(build, "bin", "rnn-opt"))


def _sha(text):
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def build(out, cells, first, target, size, jobs):
    from make_models import lstm
    from rnn.runtime import compile_mlir, explain_mlir
    os.makedirs(out, exist_ok=True)
    flags = [f"--target={target}", f"--matmul-type={MATMUL_TYPE}"]
    with open(os.path.join(out, "lstm.mlir"), "w") as f:
        # The benchmark LSTM; TF32 comes from --matmul-type, as for the cells.
        f.write(lstm(size, size, tf32=False))
    ref = {"name": "lstm", "func": "lstm_seq", "mlir": "lstm.mlir", "lib": f"lstm.{target}.so",
           "recurrent_macs": 4 * size * size}
    cases = []
    for seed in range(first, first + cells):
        text, _, shapes = cellgen.generate(seed, I=size, H=size, family=FAMILY)
        name = f"cell{seed}"
        with open(os.path.join(out, name + ".mlir"), "w") as f:
            f.write(text)
        cases.append({"name": name, "seed": seed, "func": shapes.func, "mlir": name + ".mlir",
                      "lib": f"{name}.{target}.so", "sha": _sha(text),
                      "num_states": shapes.num_states, "num_ops": shapes.num_ops,
                      "recurrent_macs": shapes.recurrent_macs})

    def one(job):
        """Compiles one model and reads its optimised IR and explain report; returns the
        error text or None."""
        try:
            src = os.path.join(out, job["mlir"])
            compile_mlir(src, os.path.join(out, job["lib"]), extra_args=flags)
            job["explain"] = explain_mlir(src, extra_args=flags)
            p = subprocess.run([_rnn_opt(), src, "--rnn-optimize"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
            if p.returncode != 0:
                return f"{job['name']}: rnn-opt --rnn-optimize failed:\n{p.stderr[-2000:]}"
            job["optimized_mlir"] = p.stdout
            job["ir_recurrent_macs"] = ir_recurrent_macs(p.stdout)
            return None
        except Exception as e:  # noqa: BLE001 - a compile error is a finding, recorded
            return f"{job['name']}: {e}"

    t0 = time.time()
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        errors = [e for e in pool.map(one, [ref] + cases) if e]
    failed = {e.split(":")[0] for e in errors}
    cases = [c for c in cases if c["name"] not in failed]
    units = [c["recurrent_macs"] / (size * size) for c in cases]
    with open(os.path.join(out, "cases.json"), "w") as f:
        json.dump({"family": FAMILY, "target": target, "matmul_type": MATMUL_TYPE,
                   "size": size, "reference": ref, "cases": cases, "compile_errors": errors},
                  f, indent=1)
    print(f"cell_speed build: {len(cases)} cells + the LSTM for {target} in "
          f"{time.time() - t0:.0f} s, {len(errors)} errors; recurrent work "
          f"{min(units, default=0):g}..{max(units, default=0):g} H*H per row and step")
    for e in errors:
        print("  error:", e[:2000])
    return 1 if errors else 0


# ---------------------------------------------------------------------------------------
# check (on the GPU machine, or on the CPU for a cpu build)
# ---------------------------------------------------------------------------------------

class Runner:
    """One model function on fixed arguments: `call()` queues one call (CUDA: on a stream
    of its own, where the runtime replays it as a CUDA graph), `results()` copies the last
    results back, `timed()` times one call in ms."""

    def __init__(self, model, func, args, torch=None):
        self.model, self.func, self.torch = model, func, torch
        if torch is None:
            self.args = args
            self.outs = None
            return
        self.stream = torch.cuda.Stream()
        self.dev = [torch.from_numpy(np.ascontiguousarray(a)).cuda() for a in args]
        self.descs = [(t.data_ptr(), {torch.float32: "f32", torch.int64: "i64"}[t.dtype],
                       tuple(t.shape)) for t in self.dev]
        shapes = model.result_descriptors(func, self.descs)
        self.outs = [torch.empty(s, dtype=torch.float32, device="cuda") for _, s in shapes]
        self.out_descs = [(o.data_ptr(), "f32", tuple(o.shape)) for o in self.outs]
        self.stream.wait_stream(torch.cuda.current_stream())

    def call(self):
        if self.torch is None:
            self.outs = self.model(self.func, *self.args)
        else:
            self.model.run_descriptors(self.func, self.descs, self.out_descs,
                                       self.stream.cuda_stream)

    def sync(self):
        if self.torch is not None:
            self.stream.synchronize()

    def results(self):
        self.sync()
        if self.torch is None:
            return list(self.outs)
        return [o.cpu().numpy() for o in self.outs]

    def timed(self):
        if self.torch is None:
            t0 = time.perf_counter()
            self.call()
            return 1e3 * (time.perf_counter() - t0)
        start = self.torch.cuda.Event(enable_timing=True)
        end = self.torch.cuda.Event(enable_timing=True)
        start.record(self.stream)
        self.call()
        end.record(self.stream)
        end.synchronize()
        return start.elapsed_time(end)

    def warm_up(self, first):
        t0, calls = time.perf_counter(), 0
        while calls < WARMUP or (first and time.perf_counter() - t0 < WARMUP_S):
            self.call()
            self.sync()
            calls += 1


def time_in_rounds(runners, rounds, repeats):
    """Median ms of each runner over `rounds` alternating rounds of `repeats` timed calls:
    a slow stretch of the GPU then hits every runner of a round, not one of them."""
    samples = [[] for _ in runners]
    for r in range(rounds):
        for i, run in enumerate(runners):
            run.warm_up(first=(r == 0))
            samples[i] += [run.timed() for _ in range(repeats)]
    return [statistics.median(s) for s in samples], samples


def lstm_args(model, func, H, T, B, rng):
    """The sequence and the states (the first three arguments) in [-1, 1], weights and
    biases in [-1/sqrt(H), 1/sqrt(H)] (as PyTorch initialises them)."""
    args = []
    for i, (_, shape) in enumerate(model.signature(func)[0]):
        dims = [(T if i == 0 and d == 0 else B) if s is None else s for d, s in enumerate(shape)]
        scale = 1.0 if i < 3 else 1.0 / np.sqrt(H)
        args.append(rng.uniform(-scale, scale, dims).astype(np.float32))
    return args


def check_case(case, meta, d, lstm, opts, torch):
    from rnn.runtime import Model
    size = meta["size"]
    text, reference, shapes = cellgen.generate(case["seed"], I=size, H=size, family=FAMILY)
    rec = {"name": case["name"], "seed": case["seed"], "recurrent_macs": case["recurrent_macs"],
           "ir_recurrent_macs": case.get("ir_recurrent_macs"), "ok": True}
    if _sha(text) != case["sha"]:
        rec.update(ok=False, error="cellgen made a different cell than at build time")
        return rec
    tol = TOL[meta["target"]]
    model = Model(os.path.join(d, case["lib"]))
    try:
        rng = np.random.default_rng(case["seed"])
        args = cellgen.make_args(shapes, opts.check_T, opts.batch, rng)
        run = Runner(model, case["func"], args, torch)
        ref = reference(*args)
        # Three calls: on CUDA a direct one, the graph capture and a replay, as timed.
        got = []
        for _ in range(3):
            run.call()
            got.append(run.results())
        rec["vs_ref"] = max(rel_err(o, e) for outs in got for o, e in zip(outs, ref))
        rec["finite"] = all(bool(np.all(np.isfinite(o))) for outs in got for o in outs)
        rec["ok"] = rec["finite"] and rec["vs_ref"] <= tol
        del run
        args = cellgen.make_args(shapes, opts.T, opts.batch, rng)
        run = Runner(model, case["func"], args, torch)
        (t_cell, t_lstm), _ = time_in_rounds([run, lstm], opts.rounds, opts.repeats)
        # No float64 reference at this length (seconds a cell), but the timed calls
        # must at least have produced numbers.
        rec["timed_finite"] = all(bool(np.all(np.isfinite(o))) for o in run.results())
        rec["ok"] = rec["ok"] and rec["timed_finite"]
        scaled = t_lstm * case["recurrent_macs"] / meta["reference"]["recurrent_macs"]
        rec.update(cell_ms=t_cell, lstm_ms=t_lstm, score=t_cell / scaled)
        del run
    finally:
        model.close()
    return rec


def worker(d, indices, results_path, opts):
    """Runs cases `indices` in order, one JSON line each (a 'begin' line first, so that the
    supervisor knows which case a crash took)."""
    from rnn.runtime import Model
    meta = json.load(open(os.path.join(d, "cases.json")))
    torch = None
    if meta["target"] == "cuda":
        import torch
    ref = meta["reference"]
    lstm_model = Model(os.path.join(d, ref["lib"]))
    lstm = Runner(lstm_model, ref["func"],
                  lstm_args(lstm_model, ref["func"], meta["size"], opts.T, opts.batch,
                            np.random.default_rng(5)), torch)
    with open(results_path, "a") as log:
        for i in indices:
            log.write(json.dumps({"begin": i}) + "\n")
            log.flush()
            try:
                rec = check_case(meta["cases"][i], meta, d, lstm, opts, torch)
            except Exception as e:  # noqa: BLE001 - an error of the case is its result
                rec = {"name": meta["cases"][i]["name"], "ok": False,
                       "error": f"{type(e).__name__}: {e}",
                       "traceback": traceback.format_exc()[-3000:]}
                log.write(json.dumps({"index": i, **rec}) + "\n")
                log.flush()
                # A CUDA fault poisons the context: leave the rest to a fresh process.
                return 3
            log.write(json.dumps({"index": i, **rec}) + "\n")
            log.flush()
            if "score" in rec:
                print(f"{rec['name']:>8s}: score {rec['score']:.3f} ({rec['cell_ms']:.3f} ms, "
                      f"LSTM {rec['lstm_ms']:.3f} ms, F = "
                      f"{rec['recurrent_macs'] / meta['size'] ** 2:g} H*H), "
                      f"vs float64 {rec['vs_ref']:.1e}{'' if rec['ok'] else '  FAIL'}",
                      flush=True)
    return 0


def quantiles(xs):
    xs = sorted(xs)
    if not xs:
        return {}
    q = lambda p: float(np.quantile(xs, p))  # noqa: E731
    return {"min": xs[0], "p10": q(0.1), "p25": q(0.25), "median": q(0.5), "p75": q(0.75),
            "p90": q(0.9), "max": xs[-1]}


def summarize(meta, recs, wall_s):
    """The report's summary and the worst cells, from the per-cell records."""
    timed = [r for r in recs if "score" in r]
    scores = [r["score"] for r in timed]
    summary = {"family": meta["family"], "target": meta["target"], "size": meta["size"],
               "cells": len(recs), "timed": len(timed),
               "failed": sum(not r["ok"] for r in recs),
               "compile_errors": len(meta.get("compile_errors", [])),
               "score": quantiles(scores),
               "over_1.15": sum(s > 1.15 for s in scores),
               "over_1.5": sum(s > 1.5 for s in scores),
               "macs_differ": [r["name"] for r in recs if r.get("ir_recurrent_macs") is not None
                               and r["ir_recurrent_macs"] != r["recurrent_macs"]],
               "wall_s": round(wall_s, 1)}
    if timed:
        summary["lstm_ms"] = statistics.median(r["lstm_ms"] for r in timed)
        summary["targets_met"] = (summary["score"]["median"] <= 1.15
                                  and summary["over_1.5"] == 0 and summary["failed"] == 0)
    by_name = {c["name"]: c for c in meta["cases"]}
    worst = []
    for r in sorted(timed, key=lambda r: -r["score"])[:WORST]:
        c = by_name[r["name"]]
        worst.append({"name": r["name"], "seed": r["seed"], "score": r["score"],
                      "cell_ms": r["cell_ms"], "lstm_ms": r["lstm_ms"],
                      "units": r["recurrent_macs"] / meta["size"] ** 2,
                      "explain": c.get("explain", ""), "optimized_mlir": c.get("optimized_mlir", "")})
    return summary, worst


def report(summary, worst, recs):
    print(json.dumps(summary, indent=1))
    for r in recs:
        if not r["ok"]:
            print("FAIL", r["name"], r.get("error", ""),
                  f"vs_ref {r.get('vs_ref', float('nan')):.2e}" if "vs_ref" in r else "")
            for key in ("stderr", "traceback"):
                if key in r:
                    print(r[key][-1500:])
    print(f"== the {len(worst)} worst cells (score = t_cell / (t_lstm * F_cell / F_lstm))")
    for w in worst:
        print(f"-- {w['name']} (cellgen --family {FAMILY} {w['seed']}): score {w['score']:.3f},"
              f" {w['cell_ms']:.3f} ms, LSTM {w['lstm_ms']:.3f} ms, F = {w['units']:g} H*H")
        print(w["explain"].rstrip())


def check(d, opts):
    meta = json.load(open(os.path.join(d, "cases.json")))
    cases = meta["cases"]
    todo = [i for i, c in enumerate(cases) if not opts.only or c["name"] in opts.only]
    results = {}
    t0 = time.time()
    path = os.path.join(d, "worker.jsonl")
    open(path, "w").close()
    rest = list(todo)
    # One worker at a time: two processes timing at once would time each other.
    while rest:
        cmd = [sys.executable, os.path.abspath(__file__), "worker", d, path,
               ",".join(map(str, rest)), "--T", str(opts.T), "--batch", str(opts.batch),
               "--rounds", str(opts.rounds), "--repeats", str(opts.repeats),
               "--check-T", str(opts.check_T)]
        p = subprocess.run(cmd, stderr=subprocess.PIPE, text=True)
        lines = [json.loads(s) for s in open(path) if s.strip()]
        begun = [x["begin"] for x in lines if "begin" in x]
        for x in lines:
            if "index" in x:
                results[x["index"]] = x
        if begun and begun[-1] not in results:   # the process died inside this case
            i = begun[-1]
            results[i] = {"index": i, "name": cases[i]["name"], "ok": False,
                          "error": f"worker died (exit status {p.returncode})",
                          "stderr": p.stderr[-3000:]}
        left = [i for i in rest if i not in results]
        if left and p.returncode not in (0, 3) and (not begun or begun[-1] in results):
            # It exited between cases (or before the first): charge the next case, so
            # that every restart makes progress.
            i = left.pop(0)
            results[i] = {"index": i, "name": cases[i]["name"], "ok": False,
                          "error": f"worker exited (status {p.returncode}) before the case",
                          "stderr": p.stderr[-3000:]}
        rest = left
    recs = [results[i] for i in todo]
    summary, worst = summarize(meta, recs, time.time() - t0)
    if meta["target"] == "cuda":
        try:
            import torch
            summary["device"] = torch.cuda.get_device_name()
        except Exception:  # noqa: BLE001
            pass
    report(summary, worst, recs)
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump({"summary": summary, "worst": worst, "results": recs}, f, indent=1)
    return 1 if summary["failed"] or summary["compile_errors"] else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="mode", required=True)
    b = sub.add_parser("build")
    b.add_argument("dir")
    b.add_argument("--cells", type=int, default=120)
    b.add_argument("--first", type=int, default=0)
    b.add_argument("--target", choices=("cuda", "cpu"), default="cuda")
    b.add_argument("--size", type=int, default=SIZE)
    b.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    for name in ("check", "worker"):
        c = sub.add_parser(name)
        c.add_argument("dir")
        if name == "worker":
            c.add_argument("results")
            c.add_argument("indices")
        else:
            c.add_argument("--json")
            c.add_argument("--only", nargs="*", help="cell names (default: all)")
        c.add_argument("--T", type=int, default=100)
        # 32 or more for the grid-wide kernels, which shorter sequences leave to the
        # step loop.
        c.add_argument("--check-T", type=int, default=CHECK_T)
        c.add_argument("--batch", type=int, default=64)
        c.add_argument("--rounds", type=int, default=3)
        c.add_argument("--repeats", type=int, default=15)
    a = ap.parse_args()
    if a.mode == "build":
        return build(a.dir, a.cells, a.first, a.target, a.size, a.jobs)
    if a.mode == "check":
        return check(a.dir, a)
    return worker(a.dir, [int(i) for i in a.indices.split(",")], a.results, a)


if __name__ == "__main__":
    sys.exit(main())
