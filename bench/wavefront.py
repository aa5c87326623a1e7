#!/usr/bin/env python3
"""The layer wavefront (rnn-layer-wavefront): stacked LSTMs and GRUs against
one layer of the same shape, against the same stack compiled layer by layer
(--layer-wavefront=off), against the wavefront with its lanes on one stream
(RNN_CUDA_LANES=0) and against cuDNN through torch.nn in the same precision
(bf16 and fp16 for our bf16 models).

    python3 bench/wavefront.py make OUT_DIR
        (here) the models' rnn-dialect text: NAME_L{1,4,8}.mlir
    python3 bench/wavefront.py run MODEL_DIR OUT_JSON
        (on the GPU machine; bench/wavefront-run.sh) every stack checked
        against torch.nn's fp32 module (graph replays on a side stream, and
        direct calls), then timed in alternating rounds
        (WAVEFRONT_CHECK_ONLY=1: the checks alone).
    python3 bench/wavefront.py extras MODEL_DIR OUT_JSON
        the same for the shape sweep's stacked extras (8 layers at H = 512;
        4 bidirectional layers at H = 768), against cuDNN through torch.nn.
    python3 bench/wavefront.py cudnn-configs FILE
        those extras as cudnn_rnn_bench --configs takes them.
"""
import glob
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

KINDS = ("lstm", "gru", "lstm_bf16", "gru_bf16")
T, B, I, H = 100, 64, 1024, 1024
LAYERS = (4, 8)
ROUNDS = 5


# The shape sweep's stacked extras (../shared/bench/sweep.json), I = H:
# name -> (T, B, H, L, bidirectional).
EXTRAS = {"deep": (200, 32, 512, 8, False),
          "deep_bidirectional": (100, 16, 768, 4, True)}


def bidirectional(kind, H, layers):
    """`layers` bidirectional layers of `kind` (I = H) in one function
    @{cell}_bi_L{layers}: each layer a forward and a reverse scan over the
    layer's input, their outputs concatenated (cast to bf16 for the bf16
    kinds) as the next layer's input. Arguments: xs, then per layer and
    direction (forward first) its initial states and W, U, b_W, b_U, as
    torch.nn orders them; results: the last layer's outputs, then the final
    states in the same order."""
    from make_models import KINDS as MAKERS
    base = kind.split("_")[0]
    states = ["h"] if base == "gru" else ["h", "c"]
    G = (3 if base == "gru" else 4) * H
    w = "bf16" if kind.endswith("_bf16") else "f32"
    cells = ""
    for width in (H, 2 * H):
        text = MAKERS[kind](width, H)
        cells += text[:text.index("func.func")].replace(f"@{base} ", f"@{base}_i{width} ")
    st = f"tensor<?x{H}xf32>"
    args, body, finals = [f"%xs: tensor<?x?x{H}x{w}>"], [], []
    x, width = "%xs", H
    for l in range(layers):
        seq_in = f"tensor<?x?x{width}x{w}>"
        outs = []
        for d, reverse in (("f", ""), ("r", " reverse")):
            ptypes = [f"tensor<{G}x{width}x{w}>", f"tensor<{G}x{H}x{w}>",
                      f"tensor<{G}xf32>", f"tensor<{G}xf32>"]
            args += [f"%{s}0_{l}{d}: {st}" for s in states]
            args += [f"%{p}_{l}{d}: {t}" for p, t in zip(("W", "U", "bW", "bU"), ptypes)]
            fin = [f"%{s}T_{l}{d}" for s in states]
            body.append(
                f"  %ys{l}{d}, {', '.join(fin)} = rnn.scan @{base}_i{width}{reverse} "
                f"inputs({x} : {seq_in})\n"
                f"      init({', '.join(f'%{s}0_{l}{d}' for s in states)} : "
                f"{', '.join([st] * len(states))})\n"
                f"      params(%W_{l}{d}, %U_{l}{d}, %bW_{l}{d}, %bU_{l}{d} : {', '.join(ptypes)})\n"
                f"      -> outputs(tensor<?x?x{H}xf32>) states({', '.join([st] * len(states))})")
            finals += fin
            outs.append(f"%ys{l}{d}")
        body.append(f"  %y{l} = rnn.concat {outs[0]}, {outs[1]} : tensor<?x?x{H}xf32>, "
                    f"tensor<?x?x{H}xf32> -> tensor<?x?x{2 * H}xf32>")
        x, width = f"%y{l}", 2 * H
        if w == "bf16" and l + 1 < layers:
            body.append(f"  %x{l} = rnn.cast {x} : tensor<?x?x{width}xf32> to "
                        f"tensor<?x?x{width}xbf16>")
            x = f"%x{l}"
    rtypes = [f"tensor<?x?x{2 * H}xf32>"] + [st] * len(finals)
    return (cells + f"func.func @{base}_bi_L{layers}({', '.join(args)})\n"
            f"    -> ({', '.join(rtypes)}) {{\n" + "\n".join(body) + "\n"
            f"  return {', '.join([x if w == 'f32' else f'%y{layers - 1}'] + finals)} : "
            f"{', '.join(rtypes)}\n}}\n")


def make(out_dir):
    from make_models import KINDS as MAKERS, stacked
    os.makedirs(out_dir, exist_ok=True)
    for kind in KINDS:
        with open(os.path.join(out_dir, f"{kind}_L1.mlir"), "w") as f:
            f.write(MAKERS[kind](I, H))
        for layers in LAYERS:
            with open(os.path.join(out_dir, f"{kind}_L{layers}.mlir"), "w") as f:
                f.write(stacked(kind, I, H, layers))
        for name, (_, _, h, layers, bi) in EXTRAS.items():
            with open(os.path.join(out_dir, f"{kind}_{name}.mlir"), "w") as f:
                f.write(bidirectional(kind, h, layers) if bi else stacked(kind, h, h, layers))


def run(model_dir, out_json):
    import torch
    from gpu_bench import (CudaModel, cell_of, rel_err,
                           time_in_rounds, with_setting)
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    rows = []
    device = torch.cuda.get_device_name()
    for kind in KINDS:
        bf16 = kind.endswith("_bf16")
        gru = cell_of(kind) == "gru"
        cls = torch.nn.GRU if gru else torch.nn.LSTM
        one = CudaModel(os.path.join(model_dir, f"{kind}_L1.so"))
        torch.manual_seed(0)
        ref1 = cls(I, H).cuda()
        xs = torch.randn(T, B, I, device="cuda")
        s1 = [torch.randn(1, B, H, device="cuda") for _ in range(1 if gru else 2)]
        args1 = stack_args(kind, ref1, xs, s1, 1, 1, bf16)
        name1 = f"{cell_of(kind)}_seq"
        outs1 = one.outputs(name1, args1)
        for layers in LAYERS:
            torch.manual_seed(layers)
            ref = cls(I, H, num_layers=layers).cuda()
            states = [torch.randn(layers, B, H, device="cuda")
                      for _ in range(1 if gru else 2)]
            args = stack_args(kind, ref, xs, states, layers, 1, bf16)
            name = f"{cell_of(kind)}_seq_L{layers}"
            wave = CudaModel(os.path.join(model_dir, f"{kind}_L{layers}.so"))
            layered = CudaModel(os.path.join(model_dir, f"{kind}_L{layers}_layered.so"))
            outs_w = wave.outputs(name, args)
            outs_l = layered.outputs(name, args)
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.no_grad():
                expected = ref(xs, states[0] if gru else tuple(states))
                flat = [expected[0]] + ([expected[1]] if gru else list(expected[1]))
                errors = {}

                def error_of(outs):
                    ours = [outs[0]] + [torch.stack(outs[1 + l::len(states)])
                                        for l in range(len(states))]
                    return max(rel_err(o.double().cpu().numpy(),
                                       e.double().cpu().numpy())
                               for o, e in zip(ours, flat))
                # Checked on the caller's side stream (the captured graph
                # with its lanes) after a direct call on the default stream,
                # and called directly, kernel by kernel, on the side stream.
                for label, model, outs in (("wavefront", wave, outs_w),
                                           ("layered", layered, outs_l)):
                    model(name, args, outs)
                    with torch.cuda.stream(side):
                        for _ in range(3):
                            for o in outs:
                                o.zero_()
                            model(name, args, outs)
                    side.synchronize()
                    errors[label] = error_of(outs)
                    for o in outs:
                        o.zero_()
                    with torch.cuda.stream(side):
                        with_setting(lambda: model(name, args, outs),
                                     "RNN_CUDA_GRAPHS", "0")()
                    side.synchronize()
                    errors[label + " direct"] = error_of(outs)
                if os.environ.get("WAVEFRONT_CHECK_ONLY"):
                    print(f"{kind:10s} L={layers} errors " + ", ".join(
                        f"{k} {v:.1e}" for k, v in errors.items()), flush=True)
                    rows.append({"kind": kind, "L": layers, "errors": errors})
                    continue
                cudnn = {}
                for dtype in ((torch.bfloat16, torch.float16) if bf16 else (torch.float32,)):
                    m = cls(I, H, num_layers=layers).cuda().to(dtype)
                    m.load_state_dict(ref.state_dict())
                    m.flatten_parameters()
                    hx = tuple(s.to(dtype) for s in states)
                    cudnn[str(dtype).split(".")[1]] = (m, (xs.to(dtype), hx[0] if gru else hx))
                # Builds with other chunk sizes (WAVEFRONT_CHUNKS in
                # bench/wavefront-build.sh), timed beside the default.
                variants = {}
                for path in sorted(glob.glob(os.path.join(
                        model_dir, f"{kind}_L{layers}_chunk*.so"))):
                    label = os.path.basename(path)[len(f"{kind}_L{layers}_"):-3]
                    model = CudaModel(path)
                    variants[label] = (model, model.outputs(name, args))
                blocks = [(lambda: one(name1, args1, outs1), side),
                          (lambda: wave(name, args, outs_w), side),
                          (lambda: layered(name, args, outs_l), side),
                          (with_setting(lambda: wave(name, args, outs_w),
                                        "RNN_CUDA_LANES", "0"), side)]
                blocks += [(lambda m=m, a=a: m(*a), torch.cuda.current_stream())
                           for m, a in cudnn.values()]
                blocks += [(lambda m=m, o=o: m(name, args, o), side)
                           for m, o in variants.values()]
                samples = []
                for _ in range(2):  # two runs of rounds: the spread
                    samples.append(time_in_rounds(blocks, rounds=ROUNDS))
            torch.cuda.current_stream().wait_stream(side)
            medians = [statistics.median(s[i] for s in samples) for i in range(len(blocks))]
            t_one, t_wave, t_layered, t_in_order = medians[:4]
            t_cudnn = medians[4:4 + len(cudnn)]
            t_variants = dict(zip(variants, medians[4 + len(cudnn):]))
            row = {"kind": kind, "T": T, "B": B, "I": I, "H": H, "L": layers,
                   "device": device,
                   "rel_err_wavefront": errors["wavefront"],
                   "rel_err_layered": errors["layered"],
                   "one_layer_ms": t_one, "wavefront_ms": t_wave,
                   "layered_ms": t_layered, "wavefront_in_order_ms": t_in_order,
                   "cudnn_ms": dict(zip(cudnn, t_cudnn)),
                   "chunk_variants_ms": t_variants,
                   "runs": [dict(zip(["one_layer", "wavefront", "layered", "in_order"]
                                     + [f"cudnn_{k}" for k in cudnn] + list(variants), s))
                            for s in samples],
                   "wavefront_over_one_layer": t_wave / t_one,
                   "layered_over_wavefront": t_layered / t_wave,
                   "best_cudnn_over_wavefront": min(t_cudnn) / t_wave}
            rows.append(row)
            spread = "/".join(f"{s[1]:.3f}" for s in samples)
            print(f"{kind:10s} L={layers} err {errors['wavefront']:.1e} (layered "
                  f"{errors['layered']:.1e})  one layer {t_one:.3f} ms  wavefront "
                  f"{t_wave:.3f} ({spread}; {t_wave / t_one:.2f}x one layer)  layered "
                  f"{t_layered:.3f} ({t_layered / t_wave:.2f}x)  lanes in order "
                  f"{t_in_order:.3f}  cuDNN " +
                  " ".join(f"{k} {v:.3f}" for k, v in zip(cudnn, t_cudnn)) +
                  "".join(f"  {k} {v:.3f}" for k, v in t_variants.items()), flush=True)
    with open(out_json, "w") as f:
        json.dump(rows, f, indent=1)


def stack_args(kind, ref, xs, states, layers, directions, bf16):
    """Our arguments for torch module `ref`: xs, then per layer and direction
    its initial states and W, U, b_W, b_U (bf16 storage: xs, W, U in bf16)."""
    cast = (lambda t: t.bfloat16()) if bf16 else (lambda t: t)
    args = [cast(xs)]
    for l in range(layers):
        for d in range(directions):
            suffix = "_reverse" if d else ""
            args += [s[l * directions + d] for s in states]
            args += [cast(getattr(ref, f"weight_ih_l{l}{suffix}").detach().contiguous()),
                     cast(getattr(ref, f"weight_hh_l{l}{suffix}").detach().contiguous()),
                     getattr(ref, f"bias_ih_l{l}{suffix}").detach().contiguous(),
                     getattr(ref, f"bias_hh_l{l}{suffix}").detach().contiguous()]
    return args


def run_extras(model_dir, out_json):
    """The sweep's stacked extras: each checked against torch.nn, then ours
    (wavefront / side by side) and ours layer by layer timed with cuDNN
    through torch.nn in alternating rounds; cuDNN's best algorithm comes
    from cudnn_rnn_bench on the same shapes (bench/wavefront-run.sh)."""
    import torch
    from gpu_bench import CudaModel, rel_err, time_in_rounds
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    rows = []
    for extra, (T, B, H, layers, bi) in EXTRAS.items():
        for kind in KINDS:
            bf16 = kind.endswith("_bf16")
            base = kind.split("_")[0]
            gru = base == "gru"
            cls = torch.nn.GRU if gru else torch.nn.LSTM
            D = 2 if bi else 1
            torch.manual_seed(1)
            ref = cls(H, H, num_layers=layers, bidirectional=bi).cuda()
            xs = torch.randn(T, B, H, device="cuda")
            states = [torch.randn(layers * D, B, H, device="cuda")
                      for _ in range(1 if gru else 2)]
            args = stack_args(kind, ref, xs, states, layers, D, bf16)
            name = f"{base}_bi_L{layers}" if bi else f"{base}_seq_L{layers}"
            ours = CudaModel(os.path.join(model_dir, f"{kind}_{extra}.so"))
            layered = CudaModel(os.path.join(model_dir, f"{kind}_{extra}_layered.so"))
            outs, outs_l = ours.outputs(name, args), layered.outputs(name, args)
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.no_grad():
                expected = ref(xs, states[0] if gru else tuple(states))
                flat = [expected[0]] + ([expected[1]] if gru else list(expected[1]))
                errors = []
                for model, o in ((ours, outs), (layered, outs_l)):
                    with torch.cuda.stream(side):
                        for _ in range(3):
                            model(name, args, o)
                    side.synchronize()
                    got = [o[0]] + [torch.stack(o[1 + k::len(states)])
                                    for k in range(len(states))]
                    errors.append(max(rel_err(g.double().cpu().numpy(),
                                              e.double().cpu().numpy())
                                      for g, e in zip(got, flat)))
                cudnn = {}
                for dtype in ((torch.bfloat16, torch.float16) if bf16 else (torch.float32,)):
                    m = cls(H, H, num_layers=layers, bidirectional=bi).cuda().to(dtype)
                    m.load_state_dict(ref.state_dict())
                    m.flatten_parameters()
                    hx = tuple(st.to(dtype) for st in states)
                    cudnn[str(dtype).split(".")[1]] = (m, (xs.to(dtype), hx[0] if gru else hx))
                blocks = [(lambda: ours(name, args, outs), side),
                          (lambda: layered(name, args, outs_l), side)]
                blocks += [(lambda m=m, a=a: m(*a), torch.cuda.current_stream())
                           for m, a in cudnn.values()]
                samples = [time_in_rounds(blocks, rounds=ROUNDS) for _ in range(2)]
            torch.cuda.current_stream().wait_stream(side)
            medians = [statistics.median(x[i] for x in samples) for i in range(len(blocks))]
            row = {"extra": extra, "kind": kind, "T": T, "B": B, "H": H, "L": layers,
                   "bidirectional": bi, "rel_err": errors[0], "rel_err_layered": errors[1],
                   "ours_ms": medians[0], "layered_ms": medians[1],
                   "torch_cudnn_ms": dict(zip(cudnn, medians[2:])),
                   "ours_runs_ms": [x[0] for x in samples]}
            rows.append(row)
            print(f"{extra:19s} {kind:10s} err {errors[0]:.1e} ({errors[1]:.1e})  ours "
                  f"{medians[0]:.3f} ms ({'/'.join(f'{x[0]:.3f}' for x in samples)})  "
                  f"layer by layer {medians[1]:.3f} ({medians[1] / medians[0]:.2f}x)  "
                  "torch cuDNN " + " ".join(f"{k} {v:.3f}" for k, v in
                                            zip(cudnn, medians[2:])), flush=True)
    with open(out_json, "w") as f:
        json.dump(rows, f, indent=1)


def cudnn_configs(path):
    """The extras as cudnn_rnn_bench --configs takes them."""
    with open(path, "w") as f:
        json.dump([{"name": name, "T": T, "B": B, "I": H, "H": H, "L": L,
                    "bidirectional": bi}
                   for name, (T, B, H, L, bi) in EXTRAS.items()], f, indent=1)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "make":
        make(sys.argv[2])
    elif len(sys.argv) == 4 and sys.argv[1] == "run":
        run(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 4 and sys.argv[1] == "extras":
        run_extras(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 3 and sys.argv[1] == "cudnn-configs":
        cudnn_configs(sys.argv[2])
    else:
        sys.exit(__doc__)
