#!/usr/bin/env python3
"""Writes the benchmark models (LSTM and GRU at the shapes of configs.json)
as rnn-dialect text: the same cells as examples/lstm.mlir and
examples/gru.mlir, at benchmark sizes, with `allow_tf32` on every matmul
(cuDNN's default for fp32).

    python3 bench/make_models.py OUT_DIR [--size I H]...
(each --size adds single-layer models of that input and hidden size, the
vanilla RNN's (tanh, as torch.nn.RNN) among them).
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def lstm(I, H, tf32=True):
    t = " allow_tf32" if tf32 else ""
    G = 4 * H
    return f"""
rnn.cell @lstm inputs(%x: tensor<?x{I}xf32>)
    states(%h: tensor<?x{H}xf32>, %c: tensor<?x{H}xf32>)
    params(%W: tensor<{G}x{I}xf32>, %U: tensor<{G}x{H}xf32>,
           %bW: tensor<{G}xf32>, %bU: tensor<{G}xf32>) -> (tensor<?x{H}xf32>) {{
  %wx = rnn.matmul %x, %W{t} : tensor<?x{I}xf32>, tensor<{G}x{I}xf32> -> tensor<?x{G}xf32>
  %uh = rnn.matmul %h, %U{t} : tensor<?x{H}xf32>, tensor<{G}x{H}xf32> -> tensor<?x{G}xf32>
  %a = rnn.add %wx, %bW : tensor<?x{G}xf32>, tensor<{G}xf32>
  %b = rnn.add %uh, %bU : tensor<?x{G}xf32>, tensor<{G}xf32>
  %g = rnn.add %a, %b : tensor<?x{G}xf32>, tensor<?x{G}xf32>
  %i, %f, %z, %o = rnn.split %g : tensor<?x{G}xf32>
      -> tensor<?x{H}xf32>, tensor<?x{H}xf32>, tensor<?x{H}xf32>, tensor<?x{H}xf32>
  %si = rnn.sigmoid %i : tensor<?x{H}xf32>
  %sf = rnn.sigmoid %f : tensor<?x{H}xf32>
  %tz = rnn.tanh %z : tensor<?x{H}xf32>
  %so = rnn.sigmoid %o : tensor<?x{H}xf32>
  %fc = rnn.mul %sf, %c : tensor<?x{H}xf32>, tensor<?x{H}xf32>
  %iz = rnn.mul %si, %tz : tensor<?x{H}xf32>, tensor<?x{H}xf32>
  %cn = rnn.add %fc, %iz : tensor<?x{H}xf32>, tensor<?x{H}xf32>
  %tc = rnn.tanh %cn : tensor<?x{H}xf32>
  %hn = rnn.mul %so, %tc : tensor<?x{H}xf32>, tensor<?x{H}xf32>
  rnn.yield outputs(%hn : tensor<?x{H}xf32>) states(%hn, %cn : tensor<?x{H}xf32>, tensor<?x{H}xf32>)
}}
func.func @lstm_seq(%xs: tensor<?x?x{I}xf32>, %h0: tensor<?x{H}xf32>, %c0: tensor<?x{H}xf32>,
                    %W: tensor<{G}x{I}xf32>, %U: tensor<{G}x{H}xf32>, %bW: tensor<{G}xf32>, %bU: tensor<{G}xf32>)
    -> (tensor<?x?x{H}xf32>, tensor<?x{H}xf32>, tensor<?x{H}xf32>) {{
  %ys, %hT, %cT = rnn.scan @lstm inputs(%xs : tensor<?x?x{I}xf32>)
      init(%h0, %c0 : tensor<?x{H}xf32>, tensor<?x{H}xf32>)
      params(%W, %U, %bW, %bU : tensor<{G}x{I}xf32>, tensor<{G}x{H}xf32>, tensor<{G}xf32>, tensor<{G}xf32>)
      -> outputs(tensor<?x?x{H}xf32>) states(tensor<?x{H}xf32>, tensor<?x{H}xf32>)
  return %ys, %hT, %cT : tensor<?x?x{H}xf32>, tensor<?x{H}xf32>, tensor<?x{H}xf32>
}}
"""


def gru(I, H, tf32=True):
    t = " allow_tf32" if tf32 else ""
    G = 3 * H
    return f"""
rnn.cell @gru inputs(%x: tensor<?x{I}xf32>) states(%h: tensor<?x{H}xf32>)
    params(%W: tensor<{G}x{I}xf32>, %U: tensor<{G}x{H}xf32>,
           %bW: tensor<{G}xf32>, %bU: tensor<{G}xf32>) -> (tensor<?x{H}xf32>) {{
  %wx = rnn.matmul %x, %W{t} : tensor<?x{I}xf32>, tensor<{G}x{I}xf32> -> tensor<?x{G}xf32>
  %uh = rnn.matmul %h, %U{t} : tensor<?x{H}xf32>, tensor<{G}x{H}xf32> -> tensor<?x{G}xf32>
  %a = rnn.add %wx, %bW : tensor<?x{G}xf32>, tensor<{G}xf32>
  %b = rnn.add %uh, %bU : tensor<?x{G}xf32>, tensor<{G}xf32>
  %xr, %xz, %xn = rnn.split %a : tensor<?x{G}xf32> -> tensor<?x{H}xf32>, tensor<?x{H}xf32>, tensor<?x{H}xf32>
  %hr, %hz, %hn = rnn.split %b : tensor<?x{G}xf32> -> tensor<?x{H}xf32>, tensor<?x{H}xf32>, tensor<?x{H}xf32>
  %rs = rnn.add %xr, %hr : tensor<?x{H}xf32>, tensor<?x{H}xf32>
  %r = rnn.sigmoid %rs : tensor<?x{H}xf32>
  %zs = rnn.add %xz, %hz : tensor<?x{H}xf32>, tensor<?x{H}xf32>
  %z = rnn.sigmoid %zs : tensor<?x{H}xf32>
  %rh = rnn.mul %r, %hn : tensor<?x{H}xf32>, tensor<?x{H}xf32>
  %ns = rnn.add %xn, %rh : tensor<?x{H}xf32>, tensor<?x{H}xf32>
  %n = rnn.tanh %ns : tensor<?x{H}xf32>
  %one = rnn.constant 1.0 : tensor<f32>
  %omz = rnn.sub %one, %z : tensor<f32>, tensor<?x{H}xf32>
  %a1 = rnn.mul %omz, %n : tensor<?x{H}xf32>, tensor<?x{H}xf32>
  %a2 = rnn.mul %z, %h : tensor<?x{H}xf32>, tensor<?x{H}xf32>
  %hnew = rnn.add %a1, %a2 : tensor<?x{H}xf32>, tensor<?x{H}xf32>
  rnn.yield outputs(%hnew : tensor<?x{H}xf32>) states(%hnew : tensor<?x{H}xf32>)
}}
func.func @gru_seq(%xs: tensor<?x?x{I}xf32>, %h0: tensor<?x{H}xf32>,
                   %W: tensor<{G}x{I}xf32>, %U: tensor<{G}x{H}xf32>, %bW: tensor<{G}xf32>, %bU: tensor<{G}xf32>)
    -> (tensor<?x?x{H}xf32>, tensor<?x{H}xf32>) {{
  %ys, %hT = rnn.scan @gru inputs(%xs : tensor<?x?x{I}xf32>) init(%h0 : tensor<?x{H}xf32>)
      params(%W, %U, %bW, %bU : tensor<{G}x{I}xf32>, tensor<{G}x{H}xf32>, tensor<{G}xf32>, tensor<{G}xf32>)
      -> outputs(tensor<?x?x{H}xf32>) states(tensor<?x{H}xf32>)
  return %ys, %hT : tensor<?x?x{H}xf32>, tensor<?x{H}xf32>
}}
"""


def rnn(I, H, tf32=True, name="rnn"):
    """The vanilla RNN as torch.nn.RNN computes it, h' = tanh(x·Wᵀ + b_W + h·Uᵀ + b_U):
    one gate; the cell @`name`, the function @`name`_seq."""
    t = " allow_tf32" if tf32 else ""
    return f"""
rnn.cell @{name} inputs(%x: tensor<?x{I}xf32>) states(%h: tensor<?x{H}xf32>)
    params(%W: tensor<{H}x{I}xf32>, %U: tensor<{H}x{H}xf32>,
           %bW: tensor<{H}xf32>, %bU: tensor<{H}xf32>) -> (tensor<?x{H}xf32>) {{
  %wx = rnn.matmul %x, %W{t} : tensor<?x{I}xf32>, tensor<{H}x{I}xf32> -> tensor<?x{H}xf32>
  %uh = rnn.matmul %h, %U{t} : tensor<?x{H}xf32>, tensor<{H}x{H}xf32> -> tensor<?x{H}xf32>
  %a = rnn.add %wx, %bW : tensor<?x{H}xf32>, tensor<{H}xf32>
  %b = rnn.add %uh, %bU : tensor<?x{H}xf32>, tensor<{H}xf32>
  %s = rnn.add %a, %b : tensor<?x{H}xf32>, tensor<?x{H}xf32>
  %hn = rnn.tanh %s : tensor<?x{H}xf32>
  rnn.yield outputs(%hn : tensor<?x{H}xf32>) states(%hn : tensor<?x{H}xf32>)
}}
func.func @{name}_seq(%xs: tensor<?x?x{I}xf32>, %h0: tensor<?x{H}xf32>,
                   %W: tensor<{H}x{I}xf32>, %U: tensor<{H}x{H}xf32>, %bW: tensor<{H}xf32>, %bU: tensor<{H}xf32>)
    -> (tensor<?x?x{H}xf32>, tensor<?x{H}xf32>) {{
  %ys, %hT = rnn.scan @{name} inputs(%xs : tensor<?x?x{I}xf32>) init(%h0 : tensor<?x{H}xf32>)
      params(%W, %U, %bW, %bU : tensor<{H}x{I}xf32>, tensor<{H}x{H}xf32>, tensor<{H}xf32>, tensor<{H}xf32>)
      -> outputs(tensor<?x?x{H}xf32>) states(tensor<?x{H}xf32>)
  return %ys, %hT : tensor<?x?x{H}xf32>, tensor<?x{H}xf32>
}}
"""


def bf16_storage(text, I, H, G):
    """A cell of this file (`lstm`, `gru`, `rnn`; built without TF32) with bf16 storage: bf16
    input sequence and weights, f32 accumulation, f32 biases, state and
    outputs; the recurrent matmul reads the f32 state cast to bf16."""
    return text.replace(
        f"inputs(%x: tensor<?x{I}xf32>)", f"inputs(%x: tensor<?x{I}xbf16>)").replace(
        f"%W: tensor<{G}x{I}xf32>, %U: tensor<{G}x{H}xf32>",
        f"%W: tensor<{G}x{I}xbf16>, %U: tensor<{G}x{H}xbf16>").replace(
        f"%wx = rnn.matmul %x, %W : tensor<?x{I}xf32>, tensor<{G}x{I}xf32>",
        f"%wx = rnn.matmul %x, %W : tensor<?x{I}xbf16>, tensor<{G}x{I}xbf16>").replace(
        f"  %uh = rnn.matmul %h, %U : tensor<?x{H}xf32>, tensor<{G}x{H}xf32>",
        f"  %h16 = rnn.cast %h : tensor<?x{H}xf32> to tensor<?x{H}xbf16>\n"
        f"  %uh = rnn.matmul %h16, %U : tensor<?x{H}xbf16>, tensor<{G}x{H}xbf16>").replace(
        f"%xs: tensor<?x?x{I}xf32>", f"%xs: tensor<?x?x{I}xbf16>").replace(
        f"inputs(%xs : tensor<?x?x{I}xf32>)", f"inputs(%xs : tensor<?x?x{I}xbf16>)").replace(
        f"params(%W, %U, %bW, %bU : tensor<{G}x{I}xf32>, tensor<{G}x{H}xf32>",
        f"params(%W, %U, %bW, %bU : tensor<{G}x{I}xbf16>, tensor<{G}x{H}xbf16>")


def lstm_bf16(I, H):
    """The LSTM with bf16 storage (see bf16_storage)."""
    return bf16_storage(lstm(I, H, tf32=False), I, H, 4 * H)


def gru_bf16(I, H):
    """The GRU with bf16 storage (see bf16_storage)."""
    return bf16_storage(gru(I, H, tf32=False), I, H, 3 * H)


def rnn_bf16(I, H):
    """The vanilla RNN with bf16 storage (see bf16_storage)."""
    return bf16_storage(rnn(I, H, tf32=False), I, H, H)


def stacked(kind, I, H, layers):
    """`layers` layers of `kind` (lstm, gru, lstm_bf16, gru_bf16) in one
    function @{lstm,gru}_seq_L{layers}: layer l runs on the outputs of layer
    l - 1 (cast to bf16 for the bf16 kinds, whose cells read bf16). Arguments: xs, then
    per layer its initial states and W, U, b_W, b_U; results: the last
    layer's outputs, then every layer's final states. Needs I == H (one
    cell for every layer)."""
    assert I == H, "one cell for every layer"
    text = KINDS[kind](I, H)
    cell_text = text[:text.index("func.func")]
    base = kind.split("_")[0]
    states = ["h"] if base == "gru" else ["h", "c"]
    G = (3 if base == "gru" else 4) * H
    w = "bf16" if kind.endswith("_bf16") else "f32"
    seq_in, seq_out = f"tensor<?x?x{H}x{w}>", f"tensor<?x?x{H}xf32>"
    st = f"tensor<?x{H}xf32>"
    ptypes = [f"tensor<{G}x{H}x{w}>", f"tensor<{G}x{H}x{w}>",
              f"tensor<{G}xf32>", f"tensor<{G}xf32>"]
    args, body, finals = [f"%xs: {seq_in}"], [], []
    x = "%xs"
    for l in range(layers):
        args += [f"%{s}0_{l}: {st}" for s in states]
        args += [f"%{p}_{l}: {t}" for p, t in zip(("W", "U", "bW", "bU"), ptypes)]
        if l > 0 and w == "bf16":
            body.append(f"  %x{l} = rnn.cast {x} : {seq_out} to {seq_in}")
            x = f"%x{l}"
        fin = [f"%{s}T_{l}" for s in states]
        body.append(
            f"  %ys{l}, {', '.join(fin)} = rnn.scan @{base} inputs({x} : {seq_in})\n"
            f"      init({', '.join(f'%{s}0_{l}' for s in states)} : "
            f"{', '.join([st] * len(states))})\n"
            f"      params(%W_{l}, %U_{l}, %bW_{l}, %bU_{l} : {', '.join(ptypes)})\n"
            f"      -> outputs({seq_out}) states({', '.join([st] * len(states))})")
        finals += fin
        x = f"%ys{l}"
    results = [x] + finals
    rtypes = [seq_out] + [st] * len(finals)
    return (cell_text +
            f"func.func @{base}_seq_L{layers}({', '.join(args)})\n"
            f"    -> ({', '.join(rtypes)}) {{\n" + "\n".join(body) + "\n"
            f"  return {', '.join(results)} : {', '.join(rtypes)}\n}}\n")


KINDS = {"lstm": lstm, "gru": gru, "lstm_bf16": lstm_bf16, "gru_bf16": gru_bf16}
# Written only at the --size sizes.
VANILLA = {"rnn": rnn, "rnn_bf16": rnn_bf16}


def main(out_dir, extra_sizes=()):
    os.makedirs(out_dir, exist_ok=True)
    configs = json.load(open(os.path.join(HERE, "configs.json")))["configs"]
    sizes = sorted({(c["I"], c["H"]) for c in configs} | {(c["H"], c["H"]) for c in configs}
                   | set(extra_sizes))
    for I, H in sizes:
        kinds = dict(KINDS, **VANILLA) if (I, H) in extra_sizes else KINDS
        for name, make in kinds.items():
            path = os.path.join(out_dir, f"{name}_I{I}_H{H}.mlir")
            with open(path, "w") as f:
                f.write(make(I, H))
            print(path)
    # The bf16 cells as reverse scans at H = 2048, where their recurrences
    # are persistent kernels (bench/gpu_bench.py checks them).
    for name in ("lstm_bf16", "gru_bf16"):
        cell = name.split("_")[0]
        path = os.path.join(out_dir, f"{name}_I2048_H2048_reverse.mlir")
        with open(path, "w") as f:
            f.write(KINDS[name](2048, 2048).replace(
                f"rnn.scan @{cell} inputs", f"rnn.scan @{cell} reverse inputs"))
        print(path)
    for c in configs:
        if c["L"] == 1:
            continue
        for name in KINDS:
            path = os.path.join(out_dir, f"{name}_I{c['I']}_H{c['H']}_L{c['L']}.mlir")
            with open(path, "w") as f:
                f.write(stacked(name, c["I"], c["H"], c["L"]))
            print(path)


if __name__ == "__main__":
    import argparse
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out_dir", nargs="?", default="build/gpu/bench-models")
    parser.add_argument("--size", nargs=2, type=int, action="append", default=[],
                        metavar=("I", "H"), help="single-layer models of this size as well (the vanilla RNN too)")
    args = parser.parse_args()
    main(args.out_dir, [tuple(s) for s in args.size])
