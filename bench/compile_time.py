#!/usr/bin/env python3
"""Compile time against the size of a cell and the depth of a stack.

Two families of models, each compiled with rnn-compile for the CPU and for CUDA (which
compiles without a GPU, given the CUDA toolkit's ptxas):

* gates-N: a cell of N gates, each `tanh(x @ W_k.T + h @ U_k.T)`, summed into the new h
  (I = H = 16). rnn-concat-gate-matmuls packs the N weights of each side into one
  matrix (an rnn.concat of N pieces) and splits the product into N gates again, so
  the lowering sees concats and splits of N pieces.
* lnlstm-bi-L: rnn.NumpyRNN of the zoo's layer-normalised LSTM, L layers, bidirectional
  (I = 512, H = 1024 by default): two functions (with and without lengths) of 2·L scans
  each. Its build from Python (trace, emit, compile with the same rnn-compile, load,
  parameters) is timed once too, with an empty compile cache.

    python3 bench/compile_time.py                       # the table, and the JSON below
    python3 bench/compile_time.py --gates 16,32 --layers '' --targets cpu   # no stacks
    python3 bench/compile_time.py --timing 5            # and each compile's 5 slowest passes

Each row is the median of --repeat runs of `rnn-compile MODEL -o MODEL.so`: CPU time
(user + system, of rnn-compile and what it runs: ptxas, the link) and wall time. On a
machine that other jobs share, CPU time is the steadier figure. The JSON goes to
bench/results/<date>-cpu-compile-time.json unless --json says otherwise; with
--before OLD.json (a run of another compiler, RNN_COMPILE=...), the table sets the two
side by side and the JSON keeps the old run under "before".
rnn-compile is $RNN_COMPILE, else $RNN_BUILD_DIR/bin/rnn-compile, else build/bin.
"""

import argparse
import datetime
import json
import os
import platform
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "python"))

import rnn  # noqa: E402
from rnn import runtime as rnn_runtime  # noqa: E402


def gates_cell(n, I=16, H=16):
    """MLIR of the N-gate cell and a function that scans it."""
    t = lambda *dims: "tensor<" + "x".join(str(d) for d in dims) + "xf32>"  # noqa: E731
    W = [f"%W{k}" for k in range(n)]
    U = [f"%U{k}" for k in range(n)]
    params = ", ".join([f"{w}: {t(H, I)}" for w in W] + [f"{u}: {t(H, H)}" for u in U])
    lines = [f"rnn.cell @gates{n} inputs(%x: {t('?', I)}) states(%h: {t('?', H)})",
             f"    params({params}) -> ({t('?', H)}) {{"]
    acc = None
    for k in range(n):
        lines += [
            f"  %wx{k} = rnn.matmul %x, %W{k} : {t('?', I)}, {t(H, I)} -> {t('?', H)}",
            f"  %uh{k} = rnn.matmul %h, %U{k} : {t('?', H)}, {t(H, H)} -> {t('?', H)}",
            f"  %g{k} = rnn.add %wx{k}, %uh{k} : {t('?', H)}, {t('?', H)}",
            f"  %a{k} = rnn.tanh %g{k} : {t('?', H)}",
        ]
        if acc is None:
            acc = f"%a{k}"
        else:
            lines.append(f"  %s{k} = rnn.add {acc}, %a{k} : {t('?', H)}, {t('?', H)}")
            acc = f"%s{k}"
    lines += [f"  %hn = rnn.tanh {acc} : {t('?', H)}",
              f"  rnn.yield outputs(%hn : {t('?', H)}) states(%hn : {t('?', H)})", "}"]
    ptypes = ", ".join([t(H, I)] * n + [t(H, H)] * n)
    fargs = ", ".join([f"%xs: {t('?', '?', I)}", f"%h0: {t('?', H)}"] +
                      [f"{w}: {t(H, I)}" for w in W] + [f"{u}: {t(H, H)}" for u in U])
    lines += [
        f"func.func @seq({fargs}) -> ({t('?', '?', H)}, {t('?', H)}) {{",
        f"  %ys, %hT = rnn.scan @gates{n} inputs(%xs : {t('?', '?', I)}) "
        f"init(%h0 : {t('?', H)}) params({', '.join(W + U)} : {ptypes}) "
        f"-> outputs({t('?', '?', H)}) states({t('?', H)})",
        f"  return %ys, %hT : {t('?', '?', H)}, {t('?', H)}",
        "}",
    ]
    return "\n".join(lines) + "\n"


def build_stack(layers, input_size, hidden_size, cache_dir):
    """rnn.NumpyRNN of the LayerNorm LSTM, timed from Python with an empty cache;
    returns (seconds, the model's MLIR)."""
    os.environ["RNN_CACHE_DIR"] = str(cache_dir)
    start = time.perf_counter()
    model = rnn.NumpyRNN(rnn.zoo.layernorm_lstm, input_size=input_size,
                         hidden_size=hidden_size, num_layers=layers, bidirectional=True,
                         seed=0)
    seconds = time.perf_counter() - start
    text = model.mlir
    del model
    return seconds, text


# A line of a report: one or two "seconds (percent%)" columns (user and wall time, or
# wall time alone), then the name; the last column is the wall time.
_TIMING_RE = re.compile(r"^(?:\s*[0-9.]+\s+\(\s*[0-9.]+%\))*\s*([0-9.]+)\s+\(\s*[0-9.]+%\)"
                        r"\s+(\S.*?)\s*$")


def slowest_passes(stderr, top):
    """The `top` slowest passes in the --mlir-timing reports of all stages (wall seconds,
    name). "Rest" of the lowering's report is mostly LLVM's optimiser, code generation and
    the link, which run while its pass manager is alive."""
    rows = []
    for line in stderr.splitlines():
        m = _TIMING_RE.match(line)
        if not m:
            continue
        name = m[2]
        if name == "Total" or name.startswith("'") or name.endswith("Pipeline"):
            continue
        rows.append((float(m[1]), name.strip()))
    rows.sort(reverse=True)
    return [{"pass": name, "s": round(s, 4)} for s, name in rows[:top]]


def run_compile(compiler, source, target, timing, workdir):
    """One rnn-compile of `source`: (wall s, CPU s of the child, stderr)."""
    out = Path(workdir) / (Path(source).stem + f"-{target}.so")
    cmd = [compiler, str(source), "-o", str(out), f"--target={target}"]
    if timing:
        cmd.append("--mlir-timing")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"rnn-compile failed on {source} ({target}):\n{proc.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, proc.stderr


def time_compile(compiler, source, target, repeat, max_repeat_seconds, timing, workdir):
    """Wall and CPU seconds of `repeat` runs of rnn-compile on `source` (a path), fewer
    where one run takes longer than `max_repeat_seconds`; with `timing`, the first run
    reports --mlir-timing and the `timing` slowest passes are kept."""
    walls, cpus = [], []
    wall, cpu, stderr = run_compile(compiler, source, target, timing, workdir)
    walls.append(wall)
    cpus.append(cpu)
    slow = slowest_passes(stderr, timing) if timing else None
    while len(walls) < repeat and wall < max_repeat_seconds:
        wall, cpu, _ = run_compile(compiler, source, target, False, workdir)
        walls.append(wall)
        cpus.append(cpu)
    return walls, cpus, slow


def row_line(row, before):
    """One line of the table: this run's figures, and the --before run's where it has the
    same model and target."""
    py = "" if row.get("python_build_s") is None else f"{row['python_build_s']:.2f}"
    line = f"{row['model']:<15} {row['target']:<6}"
    if before is not None:
        b = before.get((row["model"], row["target"]))
        bpy = "" if not b or b.get("python_build_s") is None else f"{b['python_build_s']:.2f}"
        line += (f" {b['cpu_s']:>9.2f} {b['wall_s']:>9.2f} {bpy:>9}" if b else
                 f" {'':>9} {'':>9} {'':>9}")
    line += f" {row['cpu_s']:>9.2f} {row['wall_s']:>9.2f} {py:>9}"
    top = ", ".join(f"{p['pass']} {p['s']:.2f}" for p in row.get("slowest_passes", [])[:3])
    return line + ("  " + top if top else "")


def header(before):
    cols = f"{'model':<15} {'target':<6}"
    if before is not None:
        cols += f" {'cpu s':>9} {'wall s':>9} {'python s':>9}"
    cols += f" {'cpu s':>9} {'wall s':>9} {'python s':>9}  slowest passes (wall s)"
    lines = []
    if before is not None:
        lines.append(f"{'':<22} {'---------- before ----------':>29} "
                     f"{'----------- after ----------':>29}")
    lines += [cols, "-" * len(cols)]
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gates", default="16,32,64,128,256",
                    help="gate counts N of the gates-N cell (default %(default)s)")
    ap.add_argument("--layers", default="1,2,4,8",
                    help="layer counts of the LayerNorm LSTM stack (default %(default)s)")
    ap.add_argument("--input-size", type=int, default=512)
    ap.add_argument("--hidden-size", type=int, default=1024)
    ap.add_argument("--targets", default="cpu,cuda")
    ap.add_argument("--repeat", type=int, default=3,
                    help="runs per compile, the median kept (default %(default)s)")
    ap.add_argument("--max-repeat-seconds", type=float, default=20.0,
                    help="a compile slower than this runs once (default %(default)s)")
    ap.add_argument("--timing", type=int, default=0, metavar="K",
                    help="the first run reports --mlir-timing; keep its K slowest passes")
    ap.add_argument("--label", default="", help="a note stored in the JSON (e.g. the commit)")
    ap.add_argument("--before", default=None, metavar="JSON",
                    help="an earlier run's JSON (another compiler): its figures go into the "
                         "table beside these and into this run's JSON as 'before'")
    ap.add_argument("--json", default=None,
                    help="where the JSON goes (default bench/results/<today>-cpu-compile-time"
                         ".json; '-' for none)")
    args = ap.parse_args()

    before_run = json.loads(Path(args.before).read_text()) if args.before else None
    before = None if before_run is None else \
        {(r["model"], r["target"]): r for r in before_run["rows"]}
    compiler = rnn_runtime.compiler_path()
    targets = [t for t in args.targets.split(",") if t]
    gates = [int(n) for n in args.gates.split(",") if n]
    layers = [int(n) for n in args.layers.split(",") if n]
    load_start = list(os.getloadavg())
    rows = []
    with tempfile.TemporaryDirectory(prefix="rnn-compile-time-") as tmp:
        tmp = Path(tmp)
        models = []
        for n in gates:
            path = tmp / f"gates{n}.mlir"
            path.write_text(gates_cell(n))
            models.append({"model": f"gates-{n}", "family": "gates", "size": n,
                           "path": path})
        for L in layers:
            python_s, text = build_stack(L, args.input_size, args.hidden_size,
                                         tmp / f"cache-{L}")
            path = tmp / f"stack{L}.mlir"
            path.write_text(text)
            models.append({"model": f"lnlstm-bi-{L}", "family": "stack", "size": L,
                           "path": path, "scans": text.count("rnn.scan @"),
                           "python_build_s": round(python_s, 3)})
        print(f"rnn-compile: {compiler}")
        print(header(before))
        for m in models:
            for target in targets:
                walls, cpus, slow = time_compile(compiler, m["path"], target, args.repeat,
                                                 args.max_repeat_seconds, args.timing, tmp)
                row = {k: v for k, v in m.items() if k != "path"}
                if target != "cpu":
                    row.pop("python_build_s", None)  # the Python build is the CPU model's
                row.update(target=target,
                           wall_s=round(statistics.median(walls), 3),
                           cpu_s=round(statistics.median(cpus), 3),
                           walls_s=[round(w, 3) for w in walls],
                           cpus_s=[round(c, 3) for c in cpus])
                if slow is not None:
                    row["slowest_passes"] = slow
                rows.append(row)
                print(row_line(row, before), flush=True)

    result = {
        "date": datetime.date.today().isoformat(),
        "label": args.label,
        "host": {"machine": platform.machine(), "cpus": os.cpu_count(),
                 "processor": _cpu_name(), "loadavg_start": load_start,
                 "loadavg_end": list(os.getloadavg())},
        "compiler": compiler,
        "command": " ".join(sys.argv),
        "gates_cell": {"I": 16, "H": 16},
        "stack": {"cell": "layernorm_lstm", "bidirectional": True,
                  "input_size": args.input_size, "hidden_size": args.hidden_size},
        "rows": rows,
    }
    if before_run is not None:
        result["before"] = before_run
    if args.json != "-":
        out = Path(args.json) if args.json else \
            REPO / "bench" / "results" / f"{result['date']}-cpu-compile-time.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=1) + "\n")
        print(f"wrote {out}")


def _cpu_name():
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


if __name__ == "__main__":
    main()
