#!/usr/bin/env python3
"""Our sLSTM against the xLSTM package's own CUDA sLSTM kernels (PyPI `xlstm`,
xlstm.blocks.slstm.cell.sLSTMCell with backend "cuda": cuBLAS products and pointwise kernels
per step, compiled on the GPU machine by torch.utils.cpp_extension with nvcc) at FlashRNN's
head-dimension grid: T = 1024, B = 16, H = NH * D = 768, input 768, bf16 matmuls.

The xLSTM package's sLSTM function ("slstm") is FlashRNN's (bench/flashrnn_compare.py: a
sigmoid forget gate taken in log space, the stabiliser set to the input gate's pre-activation
at the first step, gates capped at 1), so ours is flashrnn_compare's slstm_flashrnn cell,
its saved model and training module (bench/flashrnn-build.sh builds both), with the same
deterministic weights. The xLSTM cell gets them in its layouts (recurrent kernel [NH, D_in,
G, D_out], bias [NH, G, D], input pre-activations [B, T, G, NH, D]) with bf16 recurrent
weights and inputs and float32 biases, as the package's defaults.

Checked first on the GPU against the float64 torch reference of flashrnn_compare: the forward's
h over all steps (max relative error) and the training step's gradients (norm-wise relative
error of h and of x, W, R, b against float64 autograd), then timed like flashrnn_compare
(CUDA events around each synchronised call, warm-up, alternating rounds, medians):
  ours / ours train: the whole layer (projection inside; training under torch.autocast bf16
      with float32 parameters);
  xlstm / xlstm train: its cell on the precomputed projection Wx (Wx, R, b require grad);
  xlstm+proj / xlstm train+proj: with the x W^T GEMM in torch (x, W, R, b require grad).
Each head dim builds its own extension (its size, heads and batch are compile-time constants
of the kernels); one that fails to build or run is reported and skipped.

    python3 bench/xlstm_compare.py MODEL_DIR TRAIN_MODEL_DIR OUT_JSON [--dims 16,32,64]
        (the GPU machine; bench/xlstm-run.sh installs the carried wheel and sets the paths)
"""
import argparse
import importlib.util
import json
import os
import statistics
import sys
import time
import traceback
import types

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import flashrnn_compare as fc  # noqa: E402
import rnn  # noqa: E402

GATES = 4


def xlstm_cell_classes():
    """sLSTMCell and sLSTMCellConfig, imported without the package's __init__: that imports
    its mLSTM blocks, which need the mlstm_kernels package (Triton kernels) and nothing of the
    sLSTM's."""
    if "xlstm" not in sys.modules:
        spec = importlib.util.find_spec("xlstm")
        if spec is None or not spec.submodule_search_locations:
            raise ImportError("the xlstm package is not installed")
        package = types.ModuleType("xlstm")
        package.__path__ = list(spec.submodule_search_locations)
        sys.modules["xlstm"] = package
    from xlstm.blocks.slstm.cell import sLSTMCell, sLSTMCellConfig
    return sLSTMCell, sLSTMCellConfig


def xlstm_cell(NH_, w, device):
    """The xLSTM CUDA sLSTM cell for NH_ heads with our weights `w` (R [NH, G D, D], b [G H])."""
    sLSTMCell, sLSTMCellConfig = xlstm_cell_classes()
    config = sLSTMCellConfig(hidden_size=fc.HIDDEN, num_heads=NH_, backend="cuda",
                             function="slstm", batch_size=fc.B, input_shape="BSGNH",
                             output_shape="BSH", dtype="bfloat16", dtype_b="float32",
                             enable_automatic_mixed_precision=False)
    cell = sLSTMCell(config).to(device)
    D = fc.HIDDEN // NH_
    R_ext = w["R"].view(NH_, GATES, D, D).permute(0, 3, 1, 2)         # [NH, D_in, G, D_out]
    b_ext = w["b"].view(GATES, NH_, D).permute(1, 0, 2)                # [NH, G, D]
    with torch.no_grad():
        cell._recurrent_kernel_.copy_(cell._recurrent_kernel_ext2int(
            R_ext.to(cell._recurrent_kernel_.dtype)))
        cell._bias_.copy_(cell._bias_ext2int(b_ext.to(cell._bias_.dtype)))
    return cell


def xlstm_grads_R_b(cell, NH_):
    """The gradients of the cell's recurrent kernel and bias in our layouts."""
    D = fc.HIDDEN // NH_
    R_ext = cell._recurrent_kernel_int2ext(cell._recurrent_kernel_.grad)  # [NH, D_in, G, D_out]
    b_ext = cell._bias_int2ext(cell._bias_.grad)                         # [NH, G, D]
    return (R_ext.permute(0, 2, 3, 1).reshape(NH_, GATES * D, D),
            b_ext.permute(1, 0, 2).reshape(-1))


def run_dim(D, args):
    fn = fc.FUNCTIONS["slstm"]
    NH_ = fc.HIDDEN // D
    dev = "cuda"
    rec = {"D": D, "NH": NH_, "errors": {}, "grad_errors": {}, "failures": {}, "ms": {},
           "samples_ms": {}}
    w = fc.draw_weights(fc.INPUT, fc.HIDDEN, NH_, seed=fc.SEED + D, dtype=torch.float32, fn=fn)
    g = torch.Generator().manual_seed(fc.SEED)
    x32 = torch.randn(fc.T, fc.B, fc.INPUT, generator=g).to(torch.bfloat16).float()
    dy = torch.randn(fc.B, fc.T, NH_, D, generator=g).to(torch.bfloat16)
    w = {k: v.to(dev) for k, v in w.items()}
    x32, dy = x32.to(dev), dy.to(dev)
    dy_t = fc.flashrnn_h(dy).contiguous()                                 # [T, B, H]
    dy_bsh = dy.reshape(fc.B, fc.T, fc.HIDDEN)
    w64 = {k: v.double() for k, v in w.items()}
    ref_h = fc.reference(x32.double(), w64, NH_, fn=fn)[0]
    ref_grads = fc.reference_grads(x32.double(), w64, NH_, dy_t.double(), fn)
    W16 = w["W"].to(torch.bfloat16)
    x16_bt = x32.to(torch.bfloat16).transpose(0, 1).contiguous()          # [B, T, I]
    Wx16 = (x16_bt @ W16.T).contiguous()                                  # [B, T, G NH D]
    timed = {}

    # Ours: the saved model and the training module, as flashrnn_compare loads them.
    model = rnn.load(os.path.join(args.model_dir, fc.model_name(D, fn.cell.name)))
    model.load_state_dict({f"{k}_l0": v for k, v in w.items()})
    with torch.no_grad():
        rec["errors"]["ours"] = fc.rel_err(model(x32)[0], ref_h)
    timed["ours"] = lambda: model(x32)
    tm = fc.load_train_model(fc.train_model_path(args.train_model_dir, D, fn.cell), dev)
    tm.load_state_dict({f"{k}_l0": v for k, v in w.items()})
    rec["grad_errors"]["ours train"] = fc.grad_errs(
        *fc.ours_train_grads(tm, x32, dy_t, list(w), autocast=torch.bfloat16), ref_grads)
    xt = x32.detach().clone().requires_grad_()

    def ours_step():
        xt.grad = None
        tm.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            ys, _ = tm(xt)
        ys.backward(dy_t)
    timed["ours train"] = ours_step

    # The xLSTM package's cell (its extension is built here, on first use).
    try:
        t0 = time.perf_counter()
        cell = xlstm_cell(NH_, w, dev)
        with torch.no_grad():
            h = cell(Wx16)[0]                                             # [B, T, H]
        torch.cuda.synchronize()
        rec["xlstm_build_s"] = round(time.perf_counter() - t0, 1)
        rec["errors"]["xlstm"] = fc.rel_err(h.transpose(0, 1), ref_h)
        timed["xlstm"] = lambda: cell(Wx16)
        timed["xlstm+proj"] = lambda: cell((x16_bt @ W16.T))
        x_leaf = x16_bt.detach().clone().requires_grad_()
        W_leaf = W16.detach().clone().requires_grad_()
        wx_leaf = Wx16.detach().clone().requires_grad_()

        def xlstm_step(with_projection):
            def step():
                cell.zero_grad(set_to_none=True)
                for t in (x_leaf, W_leaf, wx_leaf):
                    t.grad = None
                wx = x_leaf @ W_leaf.T if with_projection else wx_leaf
                cell(wx)[0].backward(dy_bsh)
            return step
        xlstm_step(True)()
        grads = {"x": x_leaf.grad.transpose(0, 1), "W": W_leaf.grad}
        grads.update(zip("Rb", xlstm_grads_R_b(cell, NH_)))
        with torch.no_grad():
            h = cell((x16_bt @ W16.T))[0].transpose(0, 1)
        rec["grad_errors"]["xlstm train+proj"] = fc.grad_errs(h, grads, ref_grads)
        timed["xlstm train"] = xlstm_step(False)
        timed["xlstm train+proj"] = xlstm_step(True)
    except Exception as e:  # noqa: BLE001 - report and go on with ours
        traceback.print_exc()
        rec["failures"]["xlstm"] = fc.short(e)
    for name, e in rec["errors"].items():
        print(f"  D={D:4d} {name:18s} h max rel err {e:.1e}")
    for name, e in rec["grad_errors"].items():
        print(f"  D={D:4d} {name:18s} {fc._fmt(e)}")

    samples = {k: [] for k in timed}
    for _ in range(args.rounds):
        for name, f in timed.items():
            grad = torch.enable_grad() if "train" in name else torch.no_grad()
            with grad:
                samples[name] += fc.time_calls(f, args.warmup, args.repeats)
    for name, s in samples.items():
        rec["ms"][name] = statistics.median(s)
        rec["samples_ms"][name] = [round(v, 4) for v in s]
    ms = rec["ms"]
    for ours, theirs in (("ours", "xlstm+proj"), ("ours train", "xlstm train+proj")):
        if ours in ms and theirs in ms:
            rec[f"ratio {theirs} / {ours}"] = ms[theirs] / ms[ours]
    print(f"  D={D:4d} ms: " + ", ".join(f"{k} {v:.3f}" for k, v in ms.items()), flush=True)
    return rec


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model_dir")
    ap.add_argument("train_model_dir")
    ap.add_argument("out_json")
    ap.add_argument("--dims", default="16,32,64,128,768")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=6)
    ap.add_argument("--warmup", type=int, default=3)
    args = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    import importlib.metadata
    version = importlib.metadata.version("xlstm")
    print(f"device: {torch.cuda.get_device_name(0)} | torch {torch.__version__} | xlstm "
          f"{version}", flush=True)
    records = []
    for D in (int(d) for d in args.dims.split(",")):
        try:
            records.append(run_dim(D, args))
        except Exception as e:  # noqa: BLE001
            traceback.print_exc()
            records.append({"D": D, "failures": {"ours/reference": fc.short(e)}})
        with open(args.out_json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
                       "xlstm": version, "T": fc.T, "B": fc.B, "H": fc.HIDDEN,
                       "I": fc.INPUT, "records": records}, f, indent=1)
    print("\nms (T=1024, B=16, H=768, I=768, bf16); ratio = xLSTM with the projection / ours")
    print(f"{'D':>4} {'ours':>8} {'xlstm':>8} {'+proj':>8} {'ratio':>6} | {'ours tr':>8} "
          f"{'xlstm tr':>8} {'+proj':>8} {'ratio':>6}")
    for r in records:
        ms = r.get("ms", {})

        def cell(k):
            return f"{ms[k]:8.3f}" if k in ms else f"{'-':>8}"

        def ratio(k):
            return f"{r[k]:6.2f}" if k in r else f"{'-':>6}"
        print(f"{r['D']:>4} {cell('ours')} {cell('xlstm')} {cell('xlstm+proj')} "
              f"{ratio('ratio xlstm+proj / ours')} | {cell('ours train')} "
              f"{cell('xlstm train')} {cell('xlstm train+proj')} "
              f"{ratio('ratio xlstm train+proj / ours train')}")
        for k, v in r.get("failures", {}).items():
            print(f"     {k}: {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
