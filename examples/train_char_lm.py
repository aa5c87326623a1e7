#!/usr/bin/env python3
"""Trains a character-level language model with torch.nn.LSTM and with rnn.RNN(rnn.zoo.lstm)
from the same initial weights on the same batches, and the same model with the zoo's
LayerNorm LSTM and with the tutorial's cell of docs/python.md (leaky_gru).

The text is this repository's documentation (docs/*.md, README.md): it ships with the
repository, nothing is downloaded. The LSTM curves must agree (the two implementations
differ only in floating-point rounding); the script says by how much and exits non-zero
when they do not agree within --tolerance.

    python3 examples/train_char_lm.py [--steps 300] [--device cpu|cuda] [--json F] [--plot F]
"""
import argparse
import glob
import json
import os
import sys
import time

import torch
from torch import nn

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
import rnn  # noqa: E402
from rnn import H, I, param, sigmoid, split, tanh  # noqa: E402


@rnn.cell(states=("h",))
def leaky_gru(x, h):                         # docs/python.md, "A custom cell in a few lines"
    W = param("W", (2 * H, I))
    U = param("U", (2 * H, H))
    b = param("b", (2 * H,), init="zeros")
    z, n = split(x @ W.T + h @ U.T + b, 2)
    z = sigmoid(z)
    return (1 - z) * h + z * tanh(n)


def corpus():
    files = sorted(glob.glob(os.path.join(ROOT, "docs", "*.md"))) + \
        [os.path.join(ROOT, "README.md")]
    return "\n".join(open(f, encoding="utf-8").read() for f in files)


class CharLM(nn.Module):
    def __init__(self, vocab, recurrent, hidden):
        super().__init__()
        self.embed = nn.Embedding(vocab, 64)
        self.rnn = recurrent
        self.head = nn.Linear(hidden, vocab)

    def forward(self, tokens):               # tokens: [T, B]
        return self.head(self.rnn(self.embed(tokens))[0])


def make_models(vocab, hidden, device):
    """name -> CharLM; the two LSTMs from the same initial weights."""
    torch.manual_seed(0)
    reference = CharLM(vocab, nn.LSTM(64, hidden), hidden)
    ours = CharLM(vocab, rnn.RNN(rnn.zoo.lstm, 64, hidden), hidden)
    ours.load_state_dict(reference.state_dict())
    models = {"torch.nn.LSTM": reference, "rnn.RNN(zoo.lstm)": ours}
    torch.manual_seed(1)
    models["rnn.RNN(zoo.layernorm_lstm)"] = CharLM(
        vocab, rnn.RNN(rnn.zoo.layernorm_lstm, 64, hidden), hidden)
    torch.manual_seed(2)
    models["rnn.RNN(leaky_gru)"] = CharLM(vocab, rnn.RNN(leaky_gru, 64, hidden), hidden)
    return {k: m.to(device) for k, m in models.items()}


def train(model, data, steps, batch, seq, device, lr):
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    gen = torch.Generator().manual_seed(3)  # the same batches for every model
    losses = []
    start = time.perf_counter()
    for _ in range(steps):
        at = torch.randint(0, len(data) - seq - 1, (batch,), generator=gen)
        chunk = torch.stack([data[a:a + seq + 1] for a in at.tolist()], dim=1).to(device)
        logits = model(chunk[:-1])
        loss = nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                           chunk[1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, time.perf_counter() - start


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--seq", type=int, default=64)
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--tolerance", type=float, default=0.02,
                   help="largest |loss(rnn.RNN) - loss(torch.nn.LSTM)| allowed at any step")
    p.add_argument("--json", help="write the loss curves here")
    p.add_argument("--plot", help="write a PNG of the curves here (needs matplotlib)")
    args = p.parse_args(argv)

    text = corpus()
    chars = sorted(set(text))
    data = torch.tensor([chars.index(c) for c in text])
    print(f"corpus: {len(text)} characters, {len(chars)} symbols; {args.steps} steps of "
          f"{args.batch} x {args.seq} on {args.device}")
    curves, seconds = {}, {}
    for name, model in make_models(len(chars), args.hidden, args.device).items():
        curves[name], seconds[name] = train(model, data, args.steps, args.batch, args.seq,
                                            args.device, args.lr)
        print(f"{name:30s} loss {curves[name][0]:.3f} -> {curves[name][-1]:.3f} "
              f"({seconds[name]:.1f} s)")
    diff = max(abs(a - b) for a, b in zip(curves["rnn.RNN(zoo.lstm)"],
                                          curves["torch.nn.LSTM"]))
    agree = diff <= args.tolerance
    print(f"largest |loss difference| between rnn.RNN(zoo.lstm) and torch.nn.LSTM: "
          f"{diff:.2e} (tolerance {args.tolerance:g}): {'agree' if agree else 'DIFFER'}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"steps": args.steps, "batch": args.batch, "seq": args.seq,
                       "hidden": args.hidden, "device": args.device, "curves": curves,
                       "seconds": seconds, "max_lstm_difference": diff}, f)
    if args.plot:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(7, 4))
        for name, losses in curves.items():  # torch.nn.LSTM last, dashed, over ours
            if name != "torch.nn.LSTM":
                ax.plot(losses, label=name, linewidth=1)
        ax.plot(curves["torch.nn.LSTM"], label="torch.nn.LSTM", color="black",
                linestyle=(0, (3, 3)), linewidth=1)
        ax.set_xlabel("step")
        ax.set_ylabel("cross-entropy (nats per character)")
        ax.set_title(f"character LM on the repository's docs ({args.device}); "
                     f"|rnn.RNN(zoo.lstm) - torch.nn.LSTM| <= {diff:.1e}", fontsize=9)
        ax.legend()
        fig.tight_layout()
        fig.savefig(args.plot, dpi=110)
    return 0 if agree else 1


if __name__ == "__main__":
    sys.exit(main())
