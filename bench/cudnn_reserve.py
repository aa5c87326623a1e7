"""What cuDNN keeps for the backward of an LSTM or GRU: its reserve space.

Runs torch.nn.LSTM / torch.nn.GRU (cuDNN) forward in training mode on the GPU
and records, with torch.autograd.graph.saved_tensors_hooks, every tensor
autograd saves for the backward; cuDNN's reserve space is the uint8 one.
Prints bytes per time step per batch row (per layer) for each shape of
bench/configs.json and writes the full table to $OUT/cudnn-reserve.json.

    python3 bench/cudnn_reserve.py
"""

import json
import os
import pathlib

import torch

HERE = pathlib.Path(__file__).resolve().parent


def saved_bytes(module, x, h0):
    saved = []

    def pack(t):
        saved.append((t.dtype, t.numel() * t.element_size(), tuple(t.shape)))
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = module(x, h0)
    reserve = sum(n for dtype, n, _ in saved if dtype == torch.uint8)
    return reserve, saved, out


def main():
    configs = json.loads((HERE / "configs.json").read_text())["configs"]
    rows = []
    for cell in ("LSTM", "GRU"):
        for dtype in (torch.float32, torch.float16, torch.bfloat16):
            for c in configs:
                T, B, I, H, L = c["T"], c["B"], c["I"], c["H"], c["L"]
                torch.manual_seed(0)
                m = getattr(torch.nn, cell)(I, H, L).cuda().to(dtype).train()
                x = torch.randn(T, B, I, device="cuda", dtype=dtype, requires_grad=True)
                h = torch.zeros(L, B, H, device="cuda", dtype=dtype)
                h0 = (h, h.clone()) if cell == "LSTM" else h
                reserve, saved, _ = saved_bytes(m, x, h0)
                per_step_row = reserve / (T * B * L)
                rows.append({"cell": cell, "dtype": str(dtype).split(".")[1], "config": c["name"],
                             "T": T, "B": B, "H": H, "L": L, "reserve_bytes": reserve,
                             "bytes_per_step_row_layer": per_step_row,
                             "in_units_of_H_elements": per_step_row / (H * torch.finfo(dtype).bits // 8),
                             "saved": [(str(d), n, s) for d, n, s in saved]})
                print(f"{cell:4} {rows[-1]['dtype']:8} {c['name']:14} reserve {reserve / 2**20:9.2f} MiB"
                      f"  = {per_step_row:8.0f} B per step, row and layer"
                      f"  = {rows[-1]['in_units_of_H_elements']:.2f} H elements")
    out = pathlib.Path(os.environ.get("OUT", "."))
    (out / "cudnn-reserve.json").write_text(json.dumps({
        "device": torch.cuda.get_device_name(), "torch": torch.__version__,
        "cudnn": torch.backends.cudnn.version(), "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
