#!/usr/bin/env python3
"""Writes every cell of the zoo (python/rnn/zoo.py) as a one-layer model at
the `medium` shape of configs.json (I = H = 1024; lstmp projects to P = 512;
the head-wise cells have 4 heads)
in rnn-dialect text, with `allow_tf32` on every matmul (as the LSTM/GRU
benchmark models: cuDNN's fp32 default). bench/gpu_bench.py times them
against our own LSTM.

    python3 bench/make_zoo_models.py OUT_DIR
"""
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))

import rnn  # noqa: E402


def main(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    medium = next(c for c in json.load(open(os.path.join(HERE, "configs.json")))["configs"]
                  if c["name"] == "medium")
    I, H = medium["I"], medium["H"]
    for name, cell in rnn.zoo.CELLS.items():
        extra = {"proj_size": H // 2} if name == "lstmp" else {}
        if name in ("headwise_lstm", "headwise_gru", "slstm"):
            extra = {"sizes": {"NH": 4}}  # heads of H / 4 units
        model = rnn.NumpyRNN(cell, I, H, seed=0, **extra)
        text = re.sub(r"(rnn\.matmul %[\w.]+, %[\w.]+)( weight_in_out)?(?! allow_tf32) :",
                      r"\1\2 allow_tf32 :", model.mlir)
        assert "allow_tf32" in text, name
        with open(os.path.join(out_dir, f"zoo_{name}.mlir"), "w") as f:
            f.write(text)
        print(f"zoo_{name}.mlir")


if __name__ == "__main__":
    main(sys.argv[1])
