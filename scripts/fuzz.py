#!/usr/bin/env python3
"""A mutation fuzzer for the compiler: rnn IR from the repository, mutated, through rnn-opt
and rnn-compile. A tool may reject an input (exit status 1 with a diagnostic); it must not
crash (a signal, an assertion, "LLVM ERROR", a stack dump) or hang.

    scripts/fuzz.py [--inputs N | --seconds S] [--seed K] [--jobs J] [--compile-every M]
                    [--target cpu|cuda|both] [--timeout T] [--crashes DIR]

The corpus is every .mlir file of examples/ and test/ (test/python/models included). Each
input is one corpus file with 1-4 mutations drawn from: change a number (sizes, constants,
indices: 0, 1, a neighbour, a large value), swap two type shapes, drop or duplicate a line,
swap two SSA names on a line, replace an op name by another rnn op's, truncate the text.
Each input runs through `rnn-opt --rnn-optimize` and `rnn-opt --rnn-differentiate`; every
--compile-every-th input that rnn-opt accepts also runs through `rnn-compile` (--target: the
CPU by default; `cuda` or `both` compile for the GPU too, which needs the CUDA toolkit but no
GPU), which must compile it or reject it with a diagnostic (never crash). The suite runs 2,000
inputs as four shards of 500, seeds 0 to 3 (test/python/test_fuzz.py); a longer run, e.g. `--seconds 3600 --target
both`, goes further, and bench/gpu_diff.py runs what the CUDA backend compiles on a GPU. The same seed gives the same
inputs. Crashing and hanging inputs are written to --crashes with the tool's stderr; the last
line is "fuzz: N inputs, C crashes, H hangs".

Where a crash was ever found, its input becomes a regression test in test/ (an errors-*.mlir
case or a tool test), so the fuzzer need not find it again.
"""

import argparse
import concurrent.futures
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CRASH_MARKERS = ("PLEASE submit a bug report", "Stack dump:", "LLVM ERROR", "Assertion",
                 "UNREACHABLE executed", "Segmentation fault")
RNN_OPS = ["rnn.add", "rnn.sub", "rnn.mul", "rnn.div", "rnn.neg", "rnn.sigmoid", "rnn.tanh",
           "rnn.relu", "rnn.exp", "rnn.log", "rnn.sqrt", "rnn.rsqrt", "rnn.minimum",
           "rnn.maximum", "rnn.matmul", "rnn.split", "rnn.concat", "rnn.cast",
           "rnn.row_sum", "rnn.row_mean", "rnn.row_max", "rnn.layer_norm", "rnn.scan",
           "rnn.step", "rnn.yield", "rnn.outer_sum", "rnn.sum_to", "rnn.zeros_like",
           "rnn.previous_states", "rnn.heaviside", "rnn.select", "rnn.transpose",
           "rnn.reshape"]
NUMBER = re.compile(r"(?<![\w%#@])\d+(?![\w])")
SHAPE = re.compile(r"tensor<[^<>]*>")
SSA = re.compile(r"%[\w]+")


def corpus():
    files = sorted(ROOT.glob("examples/*.mlir")) + sorted(ROOT.glob("test/**/*.mlir"))
    texts = []
    for f in files:
        text = f.read_text()
        # One module per chunk: the lit files split theirs with "// -----".
        for chunk in text.split("// -----"):
            if "rnn." in chunk:
                texts.append((f.relative_to(ROOT).as_posix(), chunk))
    return texts


def mutate(text, rng):
    lines = text.split("\n")
    kind = rng.choice(["number", "number", "shape", "drop", "dup", "ssa", "op", "truncate"])
    if kind == "number":
        spots = [(i, m) for i, line in enumerate(lines) if not line.lstrip().startswith("//")
                 for m in NUMBER.finditer(line)]
        if spots:
            i, m = rng.choice(spots)
            value = int(m.group())
            new = str(rng.choice([0, 1, value + 1, max(0, value - 1), 2 * value + 3,
                                  2**31, 2**40]))
            lines[i] = lines[i][:m.start()] + new + lines[i][m.end():]
    elif kind == "shape":
        spots = [(i, m) for i, line in enumerate(lines) for m in SHAPE.finditer(line)]
        if len(spots) >= 2:
            (i, a), (j, b) = rng.sample(spots, 2)
            if i == j:
                line = lines[i]
                first, second = sorted([a, b], key=lambda m: m.start())
                lines[i] = (line[:first.start()] + second.group() +
                            line[first.end():second.start()] + first.group() +
                            line[second.end():])
            else:
                lines[i] = lines[i][:a.start()] + b.group() + lines[i][a.end():]
    elif kind == "drop" and len(lines) > 1:
        del lines[rng.randrange(len(lines))]
    elif kind == "dup" and lines:
        i = rng.randrange(len(lines))
        lines.insert(i, lines[i])
    elif kind == "ssa":
        spots = [i for i, line in enumerate(lines) if len(SSA.findall(line)) >= 2]
        if spots:
            i = rng.choice(spots)
            names = SSA.findall(lines[i])
            a, b = rng.sample(names, 2)
            lines[i] = lines[i].replace(a, "\0").replace(b, a).replace("\0", b)
    elif kind == "op":
        spots = [(i, m) for i, line in enumerate(lines)
                 for m in re.finditer(r"rnn\.[a-z_]+", line)]
        if spots:
            i, m = rng.choice(spots)
            lines[i] = lines[i][:m.start()] + rng.choice(RNN_OPS) + lines[i][m.end():]
    elif kind == "truncate":
        cut = rng.randrange(max(1, len(text)))
        return text[:cut]
    return "\n".join(lines)


def run_tool(cmd, timeout):
    """('ok' | 'rejected' | 'crash' | 'hang', stderr)."""
    try:
        proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              text=True, errors="replace", timeout=timeout)
    except subprocess.TimeoutExpired:
        return "hang", ""
    err = proc.stderr
    if proc.returncode < 0 or any(marker in err for marker in CRASH_MARKERS):
        return "crash", err
    if proc.returncode == 0:
        return "ok", err
    if proc.returncode == 1 and "error" in err:
        return "rejected", err
    return "crash", err  # an unexpected exit status, or a failure without a diagnostic


def fuzz_one(index, source, text, tools, timeout, compile_input, workdir, targets=("cpu",)):
    path = Path(workdir) / f"input-{index}.mlir"
    path.write_text(text)
    findings = []
    accepted = False
    for flag in ("--rnn-optimize", "--rnn-differentiate"):
        verdict, err = run_tool([tools["rnn-opt"], str(path), flag], timeout)
        if verdict in ("crash", "hang"):
            findings.append((verdict, f"rnn-opt {flag}", err))
        accepted = accepted or verdict == "ok"
    for target in targets if compile_input and accepted and not findings else ():
        out = Path(workdir) / f"input-{index}.so"
        verdict, err = run_tool([tools["rnn-compile"], str(path), "-o", str(out), "-O0",
                                 f"--target={target}"], timeout)
        if verdict in ("crash", "hang"):
            findings.append((verdict, f"rnn-compile --target={target}", err))
        out.unlink(missing_ok=True)
    path.unlink(missing_ok=True)
    return index, source, text, findings


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--inputs", type=int, default=2000)
    p.add_argument("--seconds", type=float, default=None,
                   help="run until this much time has passed instead of --inputs")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    p.add_argument("--compile-every", type=int, default=10)
    p.add_argument("--target", choices=("cpu", "cuda", "both"), default="cpu",
                   help="what the compiled inputs are compiled for")
    p.add_argument("--timeout", type=float, default=30.0)
    p.add_argument("--crashes", default=None, help="directory for crashing inputs")
    p.add_argument("--build-dir", default=os.environ.get("RNN_BUILD_DIR", ROOT / "build"))
    args = p.parse_args(argv)

    build = Path(args.build_dir)
    tools = {t: str(build / "bin" / t) for t in ("rnn-opt", "rnn-compile")}
    texts = corpus()
    targets = ("cpu", "cuda") if args.target == "both" else (args.target,)
    rng = random.Random(args.seed)
    deadline = time.monotonic() + args.seconds if args.seconds else None
    counts = {"inputs": 0, "crash": 0, "hang": 0}
    crash_dir = Path(args.crashes) if args.crashes else None

    def record(index, source, text, findings):
        counts["inputs"] += 1
        for verdict, tool, err in findings:
            counts[verdict] += 1
            print(f"fuzz: input {index} (from {source}): {tool}: {verdict}", flush=True)
            if crash_dir:
                crash_dir.mkdir(parents=True, exist_ok=True)
                (crash_dir / f"{verdict}-{index}.mlir").write_text(text)
                (crash_dir / f"{verdict}-{index}.stderr").write_text(err)

    def inputs():
        i = 0
        while (deadline is None and i < args.inputs) or \
                (deadline is not None and time.monotonic() < deadline):
            source, text = rng.choice(texts)
            for _ in range(rng.randint(1, 4)):
                text = mutate(text, rng)
            yield i, source, text, i % args.compile_every == 0
            i += 1

    with tempfile.TemporaryDirectory(prefix="rnn-fuzz-") as workdir, \
            concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        pending = set()
        for i, source, text, compile_input in inputs():
            pending.add(pool.submit(fuzz_one, i, source, text, tools, args.timeout,
                                    compile_input, workdir, targets))
            if len(pending) >= 4 * args.jobs:
                finished, pending = concurrent.futures.wait(
                    pending, return_when=concurrent.futures.FIRST_COMPLETED)
                for f in finished:
                    record(*f.result())
        for f in concurrent.futures.as_completed(pending):
            record(*f.result())
    print(f"fuzz: {counts['inputs']} inputs, {counts['crash']} crashes, "
          f"{counts['hang']} hangs")
    return 1 if counts["crash"] or counts["hang"] else 0


if __name__ == "__main__":
    sys.exit(main())
