"""Timing GPU calls with CUDA events: what the benchmarks of bench/ share."""
import torch


def event_times(fn, repeats):
    """ms of each of `repeats` calls of fn, between CUDA events recorded around it on the
    current stream, each call finished before the next starts."""
    times = []
    for _ in range(repeats):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return times
