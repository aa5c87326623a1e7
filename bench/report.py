#!/usr/bin/env python3
"""Turns one run of bench/gpu-run.sh into the markdown tables of
docs/benchmarks.md: ratios against cuDNN and torch.compile with the issue's
floors, the persistent kernels against the step loop, the hand-written path
per shape, every zoo cell at medium, the per-step breakdown, where a step's
time goes in the replayed graph, the per-kernel profile, device memory and
the run's correctness checks; and bench/train_bench.py's JSON into the
training table.

    python3 bench/report.py RUN_DIR > tables.md
        a run's $OUT (gpu-bench.json, step-probe.txt, step-timeline.txt)
    python3 bench/report.py --json RUN.json [--log RUN-log.txt] > tables.md
        a run kept in bench/results; its log holds the hand-written path's,
        the runtime GEMM check's, the per-kernel profile's and the step
        timeline's output
    (either form takes --dsl DSL-CHECK.txt: bench/dsl-gpu-run.sh's output)
    python3 bench/report.py --train TRAIN.json > table.md
"""
import argparse
import json
import os
import re

# cuDNN / ours floors (LSTM and GRU forward), from the CUDA backend's issue.
FLOORS = {("fp32", "small-latency"): 3.0, ("fp32", "medium"): 1.5,
          ("fp32", "wide"): 1.2, ("bf16", "small-latency"): 3.0,
          ("bf16", "medium"): 1.8, ("bf16", "wide"): 1.8}
CELL = {"lstm": "LSTM", "gru": "GRU", "lstm_bf16": "LSTM", "gru_bf16": "GRU"}


def dtype_of(row):
    return "bf16" if row["kind"].endswith("_bf16") else "fp32"


def probe_times(path):
    """{(config, 'tf32'|'bf16'): ms} for the graph rows of step_probe in
    `path` (its own output, or a log that holds it)."""
    times = {}
    if not path or not os.path.exists(path):
        return times
    for line in open(path):
        m = re.match(r"(\S+)\s+(tf32|bf16)\s+graph=1\s+recurrence ([\d.]+) ms", line)
        if m:
            times[(m.group(1), m.group(2))] = float(m.group(3))
    return times


def timing_table(rows, dtype):
    # Runs from 2026-11-23 on time calls on the legacy default stream, which
    # replay a graph on the runtime's own stream (older JSON lacks the column).
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
    # our_lstm_ms: our LSTM timed in the same rounds as the cell (older JSON
    # divided by the LSTM's table time and lacks it); graph_vs_direct_rel_err:
    # the graph's outputs against a direct call's (also absent from older JSON).
    # precision: fp32 (TF32 matmuls) or bf16 (absent from older JSON: fp32).
    out = ["| cell | precision | ours (ms) | our LSTM, same rounds (ms) | / our LSTM "
           "| within 1.25x | ours, kernels not launched early (ms) "
           "| graph replay vs direct call (rel.) |",
           "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if r.get("check") != "zoo_medium":
            continue
        ok = r["ratio_to_our_lstm"] <= 1.25
        lstm = r.get("our_lstm_ms")
        out.append(f"| {r['cell']} | {r.get('precision', 'fp32')} | {r['ours_ms']:.3f} "
                   f"| {f'{lstm:.3f}' if lstm is not None else '-'} | {r['ratio_to_our_lstm']:.2f}x "
                   f"| {'yes' if ok else 'no'} "
                   f"| {r.get('ours_without_overlap_ms', float('nan')):.3f} "
                   f"| {f'{g:.1e}' if (g := r.get('graph_vs_direct_rel_err')) is not None else '-'} |")
    return "\n".join(out)


def runtime_gemm_table(path):
    """bench/runtime_gemm_check.py's output (alone or in a log): its checks
    counted, and its timings in alternation as a table."""
    if not path or not os.path.exists(path):
        return ""
    passed = failed = 0
    out = ["| kernel | model | shape | with the kernel (ms) | without (ms) | ratio |",
           "|---|---|---|---|---|---|"]
    section = ""
    for line in open(path):
        if line.startswith("== "):
            section = line[3:].split(":")[0]
        if line.startswith("  ") and line.rstrip().endswith(": PASS"):
            passed += 1
        if line.startswith("  ") and line.rstrip().endswith(": FAIL"):
            failed += 1
        m = re.match(r"  (.+?) (H=\d+ T=\d+ B=\d+): with the kernel ([\d.]+) ms, (\S+)=0 "
                     r"([\d.]+) ms, ratio ([\d.]+)", line)
        if m:
            out.append(f"| {section} | {m.group(1)} | {m.group(2)} | {m.group(3)} "
                       f"| {m.group(5)} (`{m.group(4)}=0`) | {m.group(6)} |")
    if not passed + failed:
        return ""
    head = f"Checks against float64: {passed} PASS, {failed} FAIL.\n\n"
    return head + ("\n".join(out) if len(out) > 2 else "")


def dsl_summary(path):
    """bench/dsl_gpu_check.py's output: models checked, and the largest
    error of the fp32 models and of those with bf16 matmuls."""
    if not path or not os.path.exists(path):
        return ""
    fp32, bf16, failed = [], [], []
    for line in open(path):
        m = re.match(r"(PASS|FAIL) (\S+): max rel err ([\d.e+-]+)", line)
        if m:
            (bf16 if m.group(2).endswith("_bf16") else fp32).append(float(m.group(3)))
            if m.group(1) == "FAIL":
                failed.append(m.group(2))
    if not fp32 + bf16:
        return ""
    return (f"{len(fp32) + len(bf16)} models, {len(failed)} FAIL"
            + (f" ({', '.join(failed)})" if failed else "")
            + f": fp32 within {max(fp32):.1e} of their references"
            + (f", with bf16 matmuls within {max(bf16):.1e}" if bf16 else "") + ".")


MODELS = {"lstm_I1024_H1024": "LSTM, fp32", "gru_I1024_H1024": "GRU, fp32",
          "lstm_bf16_I1024_H1024": "LSTM, bf16", "gru_bf16_I1024_H1024": "GRU, bf16",
          "zoo_gru_reset_before": "GRU with the reset gate first, fp32",
          "zoo_mgu": "MGU, fp32"}


def kernel_label(name):
    if name.startswith("rnn_preloaded_partials_gemm"):
        return "partials GEMM"
    if name.startswith("rnn_"):
        return name
    if name.endswith("_kernel"):
        return "fused kernel"
    return "cuBLAS GEMM"


def timeline_table(path):
    """bench/step_timeline.py's output (in `path`, alone or in a log): one
    row per model, each kernel of its step as duration / gap / adds."""
    if not path or not os.path.exists(path):
        return ""
    models, current = [], None
    for line in open(path):
        m = re.match(r"== (\S+)\.so (\S+) T=(\d+) B=(\d+): ([\d.]+) ms per call untraced, "
                     r"([\d.]+) ms traced", line)
        if m:
            current = {"model": m.group(1), "untraced": m.group(5), "traced": m.group(6),
                       "kernels": []}
            models.append(current)
            continue
        if current is None:
            continue
        m = re.match(r"  before the first step ([\d.]+) us .*a step: ([\d.]+) us", line)
        if m:
            current["before"], current["step"] = m.group(1), m.group(2)
            continue
        m = re.match(r"  (\S+)\s+(-?[\d.]+)\s+(-?[\d.]+)\s+(-?[\d.]+)$", line)
        if m and "step" in current:
            current["kernels"].append((kernel_label(m.group(1)),) + m.groups()[1:])
        elif not line.startswith("  "):
            current = None
    if not models:
        return ""
    out = ["| model | call untraced / traced (ms) | before the first step (µs) | step (µs) "
           "| each kernel of the step: duration / gap / adds (µs) |",
           "|---|---|---|---|---|"]
    for m in models:
        labels = [k[0] for k in m["kernels"]]
        seen, cells = {}, []
        for label, duration, gap, adds in m["kernels"]:
            if labels.count(label) > 1:
                seen[label] = seen.get(label, 0) + 1
                label = f"{label} {seen[label]}"
            cells.append(f"{label} {duration} / {gap} / {adds}")
        out.append(f"| {MODELS.get(m['model'], m['model'])} | {m['untraced']} / {m['traced']} "
                   f"| {m.get('before', '')} | {m.get('step', '')} | {'; '.join(cells)} |")
    return "\n".join(out)


def profile_block(path):
    """The per-kernel profile (bench/kernel_summary.py's tables) in a log."""
    if not path or not os.path.exists(path):
        return ""
    out, inside = [], False
    for line in open(path):
        if line.startswith("== per-kernel profile:"):
            inside = True
        elif line.startswith("==") or not line.startswith("  "):
            inside = False
            continue
        if inside:
            out.append(line.rstrip())
    return "```text\n" + "\n".join(out) + "\n```" if out else ""


# The cuDNN precisions a precision class of ours is compared with.
PRECISION_CLASS = {"fp32": ("fp32",), "bf16": ("fp16", "bf16")}


def train_table(path, cudnn_path=None):
    """bench/train_bench.py's JSON: one training step, ours against cuDNN through
    torch.nn (same process), and with `cudnn_path` (cudnn_rnn_bench's JSON) against the
    fastest algorithm cuDNN runs a training step with in the same precision class."""
    data = json.load(open(path))
    cudnn = data.get("cudnn")
    print(f"Device: {data['device']}, PyTorch {data.get('torch', '?')}"
          + (f", cuDNN {cudnn // 10000}.{cudnn // 100 % 100}" if cudnn else "") + ".\n")
    entries = {}
    if cudnn_path:
        entries = {(e["cell"], e["config"]["name"]): e
                   for e in json.load(open(cudnn_path))["results"]}
    head = ("| cell | config | T, B, I, H, L | precision | ours (ms, min-max) "
            "| cuDNN through torch.nn (ms) | torch.nn / ours |")
    if entries:
        head += " cuDNN best (ms) | its algorithm | cuDNN best / ours |"
    out = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in data["rows"]:
        precision = r.get("precision", "fp32")
        names = [k[:-3] for k in r if k.startswith("cudnn_") and k.endswith("_ms")]
        torch_nn = " / ".join(f"{r[n + '_ms']:.3f} ({n[6:]})" for n in names)
        ratios = " / ".join(f"{r[n + '_ms'] / r['ours_ms']:.2f}x" for n in names)
        row = (f"| {CELL[r['kind']]} | {r['name']} | {r['T']}, {r['B']}, {r['I']}, {r['H']}, "
               f"{r.get('L', 1)} | {precision} | {r['ours_ms']:.3f} "
               f"({r['ours_range'][0]:.3f}-{r['ours_range'][1]:.3f}) | {torch_nn} | {ratios} |")
        if entries:
            entry = entries.get((r["kind"], r["name"]))
            best = entry and _cudnn_best(entry, "training_step", PRECISION_CLASS[precision])
            row += (f" {best[0]:.3f} | {best[1]} ({best[2]}) | {best[0] / r['ours_ms']:.2f}x |"
                    if best else " | | |")
        out.append(row)
    out.append("")
    out.append("Our gradients against autograd through the fp32 module (max. relative): "
               + ", ".join(f"{CELL[r['kind']]} {r['name']} {r.get('precision', 'fp32')} "
                           f"{r['grad_max_rel_err']:.1e} ({r['check']})" for r in data["rows"])
               + ".")
    return "\n".join(out)


def _cudnn_best(entry, measurement, precisions):
    """(ms, algorithm, precision) of the fastest checked cuDNN algorithm for `measurement`
    over `precisions` in one cudnn_rnn_bench result, or None."""
    best = None
    for prec in entry["precisions"]:
        if prec["precision"] not in precisions:
            continue
        for algo in prec.get("algos", []):
            m = algo.get("measurements", {}).get(measurement, {})
            if m.get("supported") and m.get("check_passed") and \
                    (best is None or m["median_ms"] < best[0]):
                best = (m["median_ms"], algo["algo"], prec["precision"])
    return best


def cudnn_table(cudnn_path, ours_path):
    """cuDNN's every algorithm measured directly (bench/cudnn_rnn_bench.cpp) against our
    forward calls of a kept gpu_bench run: the best cuDNN algorithm in our precision class
    (fp32 with TF32 allowed; bf16 against the 16-bit best, fp16 or bf16), and PyTorch's
    default choice beside it."""
    cudnn = json.load(open(cudnn_path))
    ours = {(r["kind"], r["config"]): r for r in json.load(open(ours_path))["results"]
            if "ours_ms" in r and "kind" in r and "check" not in r}
    entries = {(e["cell"], e["config"]["name"]): e for e in cudnn["results"]}
    out = ["| cell | config | precision | ours (ms) | cuDNN best (ms) | its algorithm | "
           "cuDNN best / ours | PyTorch's choice (ms) |",
           "|---|---|---|---|---|---|---|---|"]
    for (kind, config), r in ours.items():
        cell = kind.removesuffix("_bf16")
        entry = entries.get((cell, config))
        if entry is None:
            continue
        classes = (("bf16", "fp16") if kind.endswith("_bf16") else ("fp32",))
        best = _cudnn_best(entry, "inference", classes)
        torch_ms = min((p["torch_default"]["inference_median_ms"] for p in entry["precisions"]
                        if p["precision"] in classes and p.get("torch_default", {})
                        .get("inference_median_ms")), default=None)
        if best is None:
            continue
        precision = "bf16 (cuDNN: fp16 or bf16)" if kind.endswith("_bf16") else "fp32, TF32"
        out.append(f"| {CELL[kind]} | {config} | {precision} "
                   f"| {r['ours_ms']:.3f} | {best[0]:.3f} | {best[1]} ({best[2]}) "
                   f"| {best[0] / r['ours_ms']:.2f}x "
                   f"| {'' if torch_ms is None else f'{torch_ms:.3f}'} |")
    return "\n".join(out)


def main(json_path, probe_path=None, timeline_path=None, log_path=None,
         runtime_gemm_path=None, dsl_path=None):
    data = json.load(open(json_path))
    rows = data["results"]
    probe = probe_times(probe_path)
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
    if table := timeline_table(timeline_path):
        print("### Where a step's time goes, in the replayed graph\n")
        print(table + "\n")
    if block := profile_block(log_path):
        print("### Per-kernel durations under Nsight Compute (T = 10, B = 64, no graph)\n")
        print(block + "\n")
    print("### Device memory\n")
    print(memory_table(rows) + "\n")
    print("### Correctness, same run\n")
    if zoo_errors:
        print(f"* All {len(zoo_errors)} examples of `examples/` on CUDA "
              f"within {max(zoo_errors):.1e} of float64 numpy (T = 7, B = 3).")
    for r in rows:
        if r.get("check") == "two_stage_h1024":
            calls = len(r.get("per_call", [])) or 4
            print(f"* {r['cell']} at I = H = 1024, B = 64 (K-split partials), {calls} calls "
                  f"(direct, then graph): within {r['rel_err']:.1e} of float64 numpy "
                  f"({'ok' if r['ok'] else 'FAIL'}).")
        if r.get("check") == "persistent":
            path = "the persistent kernel" if not r["equal_to_stepwise"] else "the step loop"
            print(f"* {r['kind']}{' (reverse)' if r.get('reverse') else ''} "
                  f"(H = {r.get('H', 2048)}) "
                  f"T = {r['T']}, B = {r['B']}, direct and graph: "
                  f"within {r['rel_err']:.1e} of torch.nn (float32), ran {path} "
                  f"({'ok' if r['ok'] else 'FAIL'}).")
        if r.get("check") == "changing_inputs":
            print(f"* {r['cell']} at I = H = 1024, B = 64, {len(r['per_call'])} graph replays, "
                  f"the input changed in place between them (two inputs in turn): within "
                  f"{r['rel_err']:.1e} of float64 numpy ({'ok' if r['ok'] else 'FAIL'}).")
        if r.get("check") == "lengths":
            print(f"* Per-sequence lengths (bidirectional LSTM, T = 7, B = 4), "
                  f"{len(r['per_call'])} "
                  f"calls, the lengths changed in place between them: within "
                  f"{r['rel_err']:.1e} of float64 numpy ({'ok' if r['ok'] else 'FAIL'}).")
        if r.get("check") == "default_stream_order":
            print(f"* LSTM `medium` on the legacy default stream ({len(r['per_call'])} calls, "
                  f"each after an in-place change of its input there, its output copied "
                  f"there right after): within {r['rel_err']:.1e} of direct calls "
                  f"({'ok' if r['ok'] else 'FAIL'}).")
    if table := runtime_gemm_table(runtime_gemm_path):
        print("\n### The runtime's own GEMMs (bench/runtime_gemm_check.py, same run)\n")
        print(table)
    if summary := dsl_summary(dsl_path):
        print("\n### DSL models on the GPU (bench/dsl_gpu_check.py, same call)\n")
        print(summary)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dir", nargs="?", help="a run's $OUT")
    parser.add_argument("--json", help="gpu_bench.py's JSON of a kept run")
    parser.add_argument("--log", help="the kept run's log (probe, runtime GEMMs, profile, "
                        "step timeline)")
    parser.add_argument("--dsl", help="dsl_gpu_check.py's output from the same call")
    parser.add_argument("--train", help="train_bench.py's JSON")
    parser.add_argument("--train-cudnn", metavar="CUDNN_JSON",
                        help="with --train: cudnn_rnn_bench's JSON, for cuDNN's best algorithm")
    parser.add_argument("--cudnn", nargs=2, metavar=("CUDNN_JSON", "OURS_JSON"),
                        help="cudnn_rnn_bench's JSON and a kept gpu_bench JSON")
    args = parser.parse_args()
    if args.cudnn:
        print(cudnn_table(*args.cudnn))
    elif args.train:
        print(train_table(args.train, args.train_cudnn))
    elif args.json:
        main(args.json, args.log, args.log, args.log, args.log, args.dsl)
    elif args.run_dir:
        d = args.run_dir
        main(os.path.join(d, "gpu-bench.json"), os.path.join(d, "step-probe.txt"),
             os.path.join(d, "step-timeline.txt"), args.log,
             os.path.join(d, "runtime-gemm.txt"), args.dsl)
    else:
        parser.error("give RUN_DIR, --json or --train")
