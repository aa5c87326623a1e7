#!/usr/bin/env python3
"""On the GPU machine: where a step's time goes in a replayed CUDA graph,
from the GPU's own kernel timestamps (CUPTI, through torch.profiler).

Nsight Compute (bench/kernel_profile.py) times each kernel alone, with the
call run kernel by kernel; it cannot see what the graph replay adds or
saves between kernels: launch gaps, and the overlap of kernels launched
early (programmatic dependent launch). This script replays each model's
graph a few times under the profiler and splits the steady-state steps
kernel by kernel:

* `duration`: the kernel's start to its end on the GPU (a kernel launched
  early starts before the one ahead of it ends and waits inside);
* `gap`: its start minus the previous kernel's end (negative: it was
  already running when that one ended);
* `adds`: its end minus the previous kernel's end, the time it adds to the
  step. The `adds` of a step's kernels sum to the step.

    python3 bench/step_timeline.py MODEL.so FUNCTION T B [MODEL.so FUNCTION ...]
(bench/gpu-run.sh's library path.) Prints one table per model and the
call's time measured without the profiler in the same process, so that
what tracing itself costs shows.
"""
import collections
import json
import os
import statistics
import sys
import tempfile

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpu_bench as gb  # noqa: E402

CALLS = 5


def kernel_events(trace_path):
    """(name, start µs, end µs) of every GPU kernel in a Chrome trace, in
    start order."""
    with open(trace_path) as f:
        events = json.load(f)["traceEvents"]
    kernels = [(e["name"], float(e["ts"]), float(e["ts"]) + float(e["dur"]))
               for e in events if e.get("cat") == "kernel"]
    return sorted(kernels, key=lambda k: k[1])


def step_pattern(names, steps):
    """Where one call's kernels (`names`) hold the step: the shortest run of
    names that repeats exactly `steps` times in a row (a step of two
    kernels of the same names, as GEMM, kernel, GEMM, kernel, also repeats
    as a run of half its length, 2·steps times), aligned so that as few
    kernels as possible come after the last step. (first index, length),
    or None."""
    def repeats(first, length):
        pattern, count = names[first:first + length], 0
        while names[first + count * length:first + (count + 1) * length] == pattern:
            count += 1
        return count

    for length in range(1, len(names) // steps + 1):
        starts = [first for first in range(0, len(names) - length * steps + 1)
                  if repeats(first, length) == steps and
                  (first < length or names[first - length:first] != names[first:first + length])]
        if starts:
            return max(starts), length
    return None


def short(name, width=44):
    return name if len(name) <= width else name[:width - 3] + "..."


def timeline(path, function, steps, batch):
    model = gb.CudaModel(path)
    args = gb.random_args(model, function, steps, batch, seed=7)
    outs = model.outputs(function, args)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    call = lambda: model(function, args, outs)  # noqa: E731
    with torch.no_grad(), torch.cuda.stream(stream):
        untraced = gb.time_ms(call)
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(CALLS):
                call()
                torch.cuda.synchronize()
    with tempfile.TemporaryDirectory() as tmp:
        trace = os.path.join(tmp, "trace.json")
        prof.export_chrome_trace(trace)
        kernels = kernel_events(trace)
    # Split into calls: the host synchronises between them, so a call's
    # kernels are separated from the next call's by the largest gaps.
    gaps = sorted(range(1, len(kernels)),
                  key=lambda i: kernels[i][1] - kernels[i - 1][2])[-(CALLS - 1):]
    bounds = [0] + sorted(gaps) + [len(kernels)]
    calls = [kernels[a:b] for a, b in zip(bounds, bounds[1:])]
    traced = statistics.median((c[-1][2] - c[0][1]) / 1e3 for c in calls)
    print(f"== {os.path.basename(path)} {function} T={steps} B={batch}: "
          f"{untraced:.3f} ms per call untraced, {traced:.3f} ms traced "
          f"(first kernel's start to last kernel's end), {len(calls[-1])} kernels a call")
    found = step_pattern([k[0] for k in calls[-1]], steps)
    if not found:
        print("  no repeating step found; kernels of the last call:")
        for name, start, end in calls[-1]:
            print(f"  {short(name, 60):60s} {end - start:8.2f} us")
        return
    first, length = found
    # Per kernel of the step: durations, gaps and added time over every
    # step but the first of each call (no kernel ahead of it in the step).
    stats = collections.defaultdict(lambda: {"duration": [], "gap": [], "adds": []})
    step_times = []
    for call_kernels in calls[1:]:
        for s in range(1, steps):
            base = first + s * length
            step_times.append(call_kernels[base + length - 1][2] -
                              call_kernels[base - 1][2])
            for j in range(length):
                name, start, end = call_kernels[base + j]
                prev_end = call_kernels[base + j - 1][2]
                stats[j]["duration"].append(end - start)
                stats[j]["gap"].append(start - prev_end)
                stats[j]["adds"].append(end - prev_end)
    names = [k[0] for k in calls[-1][first:first + length]]
    before = calls[-1][first][1] - calls[-1][0][1]
    after = calls[-1][-1][2] - calls[-1][first + steps * length - 1][2]
    print(f"  before the first step {before:.1f} us ({first} kernels), after the "
          f"last {after:.1f} us; a step: {statistics.median(step_times):.2f} us "
          "(median over steps 2..T of the traced calls)")
    print(f"  {'kernel of the step':44s} {'duration':>9s} {'gap':>7s} {'adds':>7s}  (us, medians)")
    for j, name in enumerate(names):
        med = {k: statistics.median(v) for k, v in stats[j].items()}
        print(f"  {short(name):44s} {med['duration']:9.2f} {med['gap']:7.2f} {med['adds']:7.2f}")


def main(argv):
    if len(argv) % 4 or not argv:
        sys.exit(__doc__)
    for i in range(0, len(argv), 4):
        timeline(argv[i], argv[i + 1], int(argv[i + 2]), int(argv[i + 3]))


if __name__ == "__main__":
    main(sys.argv[1:])
