#!/usr/bin/env python3
"""Turns one run of bench/gpu-run.sh (the JSON of bench/gpu_bench.py and
the step probe's output, both in its $OUT) into the markdown tables of
docs/benchmarks.md: ratios against cuDNN and torch.compile with the issue's
floors, the hand-written path per shape, every zoo cell at medium, the
per-step breakdown and device memory.

    python3 bench/report.py RUN_DIR > tables.md
"""
import json
import os
import re
import sys

# cuDNN / ours floors (LSTM and GRU forward), from the CUDA backend's issue.
FLOORS = {("fp32", "small-latency"): 3.0, ("fp32", "medium"): 1.5,
          ("fp32", "wide"): 1.2, ("bf16", "small-latency"): 3.0,
          ("bf16", "medium"): 1.8, ("bf16", "wide"): 1.8}
CELL = {"lstm": "LSTM", "gru": "GRU", "lstm_bf16": "LSTM", "gru_bf16": "GRU"}


def dtype_of(row):
    return "bf16" if row["kind"].endswith("_bf16") else "fp32"


def probe_times(run_dir):
    """{(config, 'tf32'|'bf16'): ms} for the graph rows of step_probe."""
    times = {}
    path = os.path.join(run_dir, "step-probe.txt")
    if not os.path.exists(path):
        return times
    for line in open(path):
        m = re.match(r"(\S+)\s+(tf32|bf16)\s+graph=1\s+recurrence ([\d.]+) ms", line)
        if m:
            times[(m.group(1), m.group(2))] = float(m.group(3))
    return times


def timing_table(rows, dtype):
    # Since the tenth session: calls on the legacy default stream replay a
    # graph on the runtime's own stream (earlier runs have no such column).
    with_default = any("ours_default_stream_ms" in r for r in rows)
    out = ["| cell | config | T, B, I, H, L | ours (ms) | µs/step "
           + ("| ours, legacy default stream (ms) " if with_default else "")
           + "| ours, no graph (ms) "
           "| cuDNN (ms) | cuDNN / ours | floor | torch.compile (ms) | torch.compile / ours "
           "| rel. error vs torch |",
           "|---|---|---|---|---|" + ("---|" if with_default else "")
           + "---|---|---|---|---|---|---|"]
    for r in rows:
        if "kind" not in r or "check" in r or dtype_of(r) != dtype:
            continue
        floor = FLOORS.get((dtype, r["config"]))
        ratio = r["ratio_cudnn_over_ours"]
        verdict = "" if floor is None else f"{floor:g}x {'met' if ratio >= floor else 'not met'}"
        out.append(
            f"| {CELL[r['kind']]} | {r['config']} | {r['T']}, {r['B']}, {r['I']}, {r['H']}, "
            f"{r['L']} | {r['ours_ms']:.3f} | {1000 * r['ours_ms'] / (r['T'] * r['L']):.1f} "
            + (f"| {r['ours_default_stream_ms']:.3f} " if with_default else "")
            + f"| {r['ours_without_graph_ms']:.3f} | {r['cudnn_ms']:.3f} | {ratio:.2f}x "
            f"| {verdict} | {r['torch_compile_ms']:.3f} | {r['ratio_compile_over_ours']:.2f}x "
            f"| {r['rel_err_vs_torch']:.1e} |")
    return "\n".join(out)


def probe_table(rows, probe):
    out = ["| config | dtype | ours, whole call (ms) | probe recurrence (ms) "
           "| + our projection GEMM (ms) | probe total (ms) | ours / probe |",
           "|---|---|---|---|---|---|---|"]
    for r in rows:
        if r.get("kind") not in ("lstm", "lstm_bf16") or "check" in r or r["L"] != 1:
            continue
        key = (r["config"], "bf16" if r["kind"] == "lstm_bf16" else "tf32")
        if key not in probe or r.get("gemm_projection_ms") is None:
            continue
        total = probe[key] + r["gemm_projection_ms"]
        out.append(f"| {r['config']} | {dtype_of(r)} | {r['ours_ms']:.3f} | {probe[key]:.3f} "
                   f"| {r['gemm_projection_ms']:.3f} | {total:.3f} "
                   f"| {r['ours_ms'] / total:.2f} |")
    return "\n".join(out)


def breakdown_table(rows):
    out = ["| cell | config | dtype | projection GEMM (ms) | recurrent GEMM (µs/step) "
           "| the rest: fused kernel, launch gaps (µs/step) | ours (µs/step) "
           "| ours, kernels not launched early (µs/step) |",
           "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if r.get("gemm_recurrent_ms") is None:
            continue
        T = r["T"]
        gemm = 1000 * r["gemm_recurrent_ms"] / T
        rest = 1000 * (r["ours_ms"] - r["gemm_projection_ms"] - r["gemm_recurrent_ms"]) / T
        out.append(f"| {CELL[r['kind']]} | {r['config']} | {dtype_of(r)} "
                   f"| {r['gemm_projection_ms']:.3f} | {gemm:.2f} | {rest:.2f} "
                   f"| {1000 * r['ours_ms'] / T:.2f} | {no_overlap_per_step(r)} |")
    return "\n".join(out)


def no_overlap_per_step(row):
    ms = row.get("ours_without_overlap_ms")
    return "" if ms is None else f"{1000 * ms / (row['T'] * row.get('L', 1)):.2f}"


def persistent_table(rows):
    """bf16 rows: ours against the same library with its persistent kernels
    refused (RNN_CUDA_PERSISTENT=0), timed in the same rounds."""
    out = ["| cell | config | ours (ms) | step by step, same library (ms) | step by step / ours |",
           "|---|---|---|---|---|"]
    for r in rows:
        if "check" in r or r.get("ours_without_persistent_ms") is None:
            continue
        stepwise = r["ours_without_persistent_ms"]
        out.append(f"| {CELL[r['kind']]} | {r['config']} | {r['ours_ms']:.3f} | "
                   f"{stepwise:.3f} | {stepwise / r['ours_ms']:.2f}x |")
    return "\n".join(out) if len(out) > 2 else ""


def memory_table(rows):
    out = ["| cell | config | dtype | L | gate buffer per layer (MiB) | our device memory, "
           "stream-ordered pool high-water (MiB) | the same, replayed graph (MiB) |",
           "|---|---|---|---|---|---|---|"]
    for r in rows:
        if "device_pool_high_bytes" not in r:
            continue
        out.append(f"| {CELL[r['kind']]} | {r['config']} | {dtype_of(r)} | {r['L']} "
                   f"| {r['gate_buffer_bytes_per_layer'] / 2**20:.1f} "
                   f"| {r['device_pool_high_bytes'] / 2**20:.1f} "
                   f"| {r['graph_pool_high_bytes'] / 2**20:.1f} |")
    return "\n".join(out)


def zoo_table(rows):
    # Runs since the sixth session time our LSTM in the same rounds as each
    # cell (our_lstm_ms); older ones divided by the LSTM's table time.
    # Since the seventh session: the graph's outputs against a direct call's.
    out = ["| cell | ours (ms) | our LSTM, same rounds (ms) | / our LSTM | within 1.3x "
           "| ours, kernels not launched early (ms) | graph replay vs direct call (rel.) |",
           "|---|---|---|---|---|---|---|"]
    for r in rows:
        if r.get("check") != "zoo_medium":
            continue
        ok = r["ratio_to_our_lstm"] <= 1.3
        lstm = r.get("our_lstm_ms")
        out.append(f"| {r['cell']} | {r['ours_ms']:.3f} "
                   f"| {f'{lstm:.3f}' if lstm is not None else '-'} | {r['ratio_to_our_lstm']:.2f}x "
                   f"| {'yes' if ok else 'no'} "
                   f"| {r.get('ours_without_overlap_ms', float('nan')):.3f} "
                   f"| {f'{g:.1e}' if (g := r.get('graph_vs_direct_rel_err')) is not None else '-'} |")
    return "\n".join(out)


def main(run_dir):
    data = json.load(open(os.path.join(run_dir, "gpu-bench.json")))
    rows = data["results"]
    probe = probe_times(run_dir)
    zoo_errors = [r["rel_err"] for r in rows if r.get("check") == "zoo"]
    print(f"Device: {data['device']}.\n")
    print("### fp32 (TF32 allowed)\n")
    print(timing_table(rows, "fp32") + "\n")
    print("### bf16 storage, fp32 accumulation and state\n")
    print(timing_table(rows, "bf16") + "\n")
    if table := persistent_table(rows):
        print("### bf16: persistent kernels against the step loop (same rounds)\n")
        print(table + "\n")
    print("### Against the hand-written path (step_probe.cu, same run)\n")
    print(probe_table(rows, probe) + "\n")
    print("### Every zoo cell at `medium`\n")
    print(zoo_table(rows) + "\n")
    print("### Per step: the GEMMs alone, as the model issues them, and the rest\n")
    print(breakdown_table(rows) + "\n")
    print("### Device memory\n")
    print(memory_table(rows) + "\n")
    if zoo_errors:
        print(f"Correctness, same run: all {len(zoo_errors)} examples of `examples/` on CUDA "
              f"within {max(zoo_errors):.1e} of float64 numpy (T = 7, B = 3).")
    for r in rows:
        if r.get("check") == "two_stage_h1024":
            calls = len(r.get("per_call", [])) or 4
            print(f"{r['cell']} at I = H = 1024, B = 64 (K-split partials), {calls} calls "
                  f"(direct, then graph): within {r['rel_err']:.1e} of float64 numpy "
                  f"({'ok' if r['ok'] else 'FAIL'}).")
        if r.get("check") == "persistent":
            path = "the persistent kernel" if not r["equal_to_stepwise"] else "the step loop"
            print(f"{r['kind']}{' (reverse)' if r.get('reverse') else ''} "
                  f"(H = {r.get('H', 2048)}) "
                  f"T = {r['T']}, B = {r['B']}, direct and graph: "
                  f"within {r['rel_err']:.1e} of torch.nn (float32), ran {path} "
                  f"({'ok' if r['ok'] else 'FAIL'}).")
        if r.get("check") == "changing_inputs":
            print(f"{r['cell']} at I = H = 1024, B = 64, {len(r['per_call'])} graph replays, "
                  f"the input changed in place between them (two inputs in turn): within "
                  f"{r['rel_err']:.1e} of float64 numpy ({'ok' if r['ok'] else 'FAIL'}).")
        if r.get("check") == "lengths":
            print(f"Per-sequence lengths (bidirectional LSTM, T = 7, B = 4), {len(r['per_call'])} "
                  f"calls, the lengths changed in place between them: within "
                  f"{r['rel_err']:.1e} of float64 numpy ({'ok' if r['ok'] else 'FAIL'}).")
        if r.get("check") == "default_stream_order":
            print(f"LSTM `medium` on the legacy default stream ({len(r['per_call'])} calls, "
                  f"each after an in-place change of its input there, its output copied "
                  f"there right after): within {r['rel_err']:.1e} of direct calls "
                  f"({'ok' if r['ok'] else 'FAIL'}).")


if __name__ == "__main__":
    main(sys.argv[1])
