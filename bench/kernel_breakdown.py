"""One call's GPU work kernel by kernel under torch.profiler: what the benchmarks of bench/
print as a per-kernel breakdown of a step."""
import os
import statistics
import time

import torch


def kernel_breakdown(step, graphs):
    """The GPU work of one call of `step` (after one warm-up call) under torch.profiler:
    "kernels", [name, total us, launches] per kernel name, longest first; "span_us" from the
    first kernel's start to the last one's end, "busy_us" the time a kernel ran in it, and
    "gaps", the longest idle times between kernels [us, kernel before, kernel after];
    "sequence", every kernel in launch order [name, us].
    `graphs` False: our runtime launches each kernel and GEMM by itself (RNN_CUDA_GRAPHS=0,
    read at every call), so that each is seen."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile
    old = os.environ.get("RNN_CUDA_GRAPHS")
    if not graphs:
        os.environ["RNN_CUDA_GRAPHS"] = "0"
    try:
        with torch.enable_grad():
            step()
            torch.cuda.synchronize()
            host = []
            for _ in range(5):
                t0 = time.perf_counter()
                step()
                host.append((time.perf_counter() - t0) * 1e6)
                torch.cuda.synchronize()
            with profile(activities=[ProfilerActivity.CUDA, ProfilerActivity.CPU]) as prof:
                step()
                torch.cuda.synchronize()
    finally:
        if old is None:
            os.environ.pop("RNN_CUDA_GRAPHS", None)
        else:
            os.environ["RNN_CUDA_GRAPHS"] = old
    cpu = sorted(([e.key[:60], e.self_cpu_time_total, e.count] for e in prof.key_averages()
                  if e.self_cpu_time_total > 0), key=lambda r: -r[1])[:8]
    spans = sorted((e.time_range.start, e.time_range.end, e.name[:90]) for e in prof.events()
                   if e.device_type == DeviceType.CUDA)
    per_kernel = {}
    for start, stop, name in spans:
        row = per_kernel.setdefault(name, [name, 0.0, 0])
        row[1] += stop - start
        row[2] += 1
    rows = sorted(per_kernel.values(), key=lambda r: -r[1])
    busy, gaps, end, before = 0.0, [], None, None
    for start, stop, name in spans:
        if end is not None and start > end:
            gaps.append([start - end, before, name])
        if end is None or stop > end:
            busy += stop - max(start, end if end is not None else start)
            end, before = stop, name
    return {"kernels": rows, "span_us": spans[-1][1] - spans[0][0] if spans else 0.0,
            "busy_us": busy, "gaps": sorted(gaps, key=lambda g: -g[0])[:6],
            "sequence": [[name, round(stop - start, 1)] for start, stop, name in spans],
            "host_us": statistics.median(host), "cpu_ops": cpu}


def print_breakdown(label, p, top, indent="  "):
    """Prints a kernel_breakdown result: the kernels' time in the span, the host's time and
    the `top` longest kernels by name."""
    print(f"{indent}{label}: kernels {p['busy_us']:.1f} us of a {p['span_us']:.1f} us span, "
          f"host {p['host_us']:.1f} us; longest kernels (us, launches):")
    for name, us, n in p["kernels"][:top]:
        print(f"{indent}  {us:9.1f} {n:5d}  {name}")
