#!/usr/bin/env python3
"""Training steps of the zoo's cells through rnn.RNN on the GPU: every cell against our
LSTM, and the LayerNorm LSTM and the GRU with the reset gate first against torch.compile.

    python3 bench/train_cells.py build DIR         # here: the modules and their CUDA libraries
    python3 bench/train_cells.py verify DIR        # here: the run finds every library it needs
    python3 bench/train_cells.py run DIR JSON      # on the GPU machine
    python3 bench/train_cells.py smoke [JSON]      # here: the whole run, tiny shapes, on the CPU

run and smoke take --only CELL..., --no-zoo (part 1), --no-compile (part 2), --configs
(part 2's shapes), --precisions fp32|bf16 and --compiled-repeats N; run takes --profile N
(part 1: the kernels of one step of each cell).

(bench/train-cells-build.sh and bench/train-cells-run.sh wrap build + verify and run.)

A training step is the forward of a one-layer rnn.RNN and the backward of a weighted sum
of its outputs through autograd (torch.autograd.grad with respect to the input and every
parameter, the compiled derived backward), from a leaf input that requires a gradient.

1. Every zoo cell that runs at I = H = 1024 (ZOO; LSTMP with P = 512, as docs/benchmarks.md's
   forward table) at `medium` (T = 100, B = 64), in fp32 with TF32 products (rnn.RNN's
   choice on CUDA while torch.backends.cudnn.allow_tf32, PyTorch's default) and in bf16
   (torch.autocast: bf16 matmul operands, float32 accumulation, states and pointwise math),
   each timed in alternating rounds with rnn.RNN(rnn.zoo.lstm) of the same precision in the
   same process; ratio cell / our LSTM.
2. The LayerNorm LSTM and the GRU with the reset gate first written as plain PyTorch step
   functions (the zoo's equations and parameter layout; the input projection, and the
   LayerNorm LSTM's normalisation of it, hoisted by hand into one matmul over the
   sequence), the step under torch.compile (default mode, dynamic=False, fullgraph=True),
   the time loop in Python, the backward through autograd, on copies of rnn.RNN's weights
   (zero initial states that require a gradient on both sides: one graph); at
   small-latency, medium and wide, fp32 (TF32 products on both sides) and bf16 (the
   baseline casts the matmul operands to bf16 and accumulates in float32, as autocast
   does for ours); ratio torch.compile / ours against the 5x target. The compile (the
   first step, less a timed step) is reported apart; the warm-up comes after it.

Correctness first, on the GPU, against a float64 reference written in plain PyTorch
(REFERENCE: each cell's step, the time loop in Python; the smoke run checks these against
rnn.RNN's float64 CPU build to 1e-10):
  * every cell at a small shape (CHECK: T = 9, B = 5, I = H = 64, random initial states,
    the final states in the loss too), exact float32 (TF32 off): the largest elementwise
    error over the largest value of each output and gradient, at most 1e-4;
  * every timed step at its timed shape, ours and torch.compile's, fp32 (TF32) and bf16:
    the normwise error ||ours - ref|| / ||ref|| of each output and gradient, at most
    LIMITS[precision] or SENSITIVITY_FACTOR times the cell's sensitivity (how far the
    float64 reference moves when its input and weights are perturbed by the precision's
    unit roundoff; relu cells and the LayerNorm LSTM move most).
A failed check makes the run exit with status 1 (the timings are still taken).

Timing (bench/gpu_bench.py's time_ms: CUDA events around each step, a warm-up of at least
3 steps and 0.2 s first): ROUNDS alternating rounds of REPEATS steps of each side; the
median over all rounds' steps, the min-max spread, and the ratio of each round's medians.

The modules travel pickled with their compiled libraries (docs/torch.md) and with their
weights zeroed (drawn again on the GPU machine from a seed): the GPU machine has no
rnn-compile, and the run fails rather than compile. `verify` loads every module with the
compiler out of reach and asks each for the library of every precision the run uses, as
a call would (rnn.RNN._precision on a CUDA input, under autocast for bf16).
"""
import argparse
import concurrent.futures
import contextlib
import json
import math
import os
import statistics
import sys
import tempfile
import time
from unittest import mock

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))

import rnn  # noqa: E402
from gpu_bench import REPEATS, time_ms  # noqa: E402
from torch_gpu_check import _load, _save, _without_weights  # noqa: E402

ZOO = ("rnn_tanh", "rnn_relu", "lstm", "gru", "gru_reset_before", "peephole_lstm",
       "cifg_lstm", "lstmp", "mgu", "sru", "indrnn", "layernorm_lstm")
COMPILED = ("layernorm_lstm", "gru_reset_before")
SHAPES = {"check": {"T": 9, "B": 5, "I": 64, "H": 64},
          "small-latency": {"T": 100, "B": 1, "I": 256, "H": 256},
          "medium": {"T": 100, "B": 64, "I": 1024, "H": 1024},
          "wide": {"T": 50, "B": 32, "I": 2048, "H": 2048}}
# `smoke`: the same run on the CPU at these shapes.
SMOKE_SHAPES = {"check": {"T": 5, "B": 3, "I": 8, "H": 8},
                "small-latency": {"T": 6, "B": 1, "I": 8, "H": 8},
                "medium": {"T": 6, "B": 4, "I": 16, "H": 16},
                "wide": {"T": 4, "B": 2, "I": 24, "H": 24}}
COMPILE_SHAPES = ("small-latency", "medium", "wide")
ROUNDS = 3
# precision: (parameter dtype, rnn.RNN.build's matmul_dtype on CUDA, autocast dtype, TF32)
PRECISIONS = {"fp32": (torch.float32, "tf32", None, True),
              "bf16": (torch.float32, torch.bfloat16, torch.bfloat16, True),
              "fp32-exact": (torch.float32, None, None, False),
              "fp64": (torch.float64, None, None, False)}
TIMED = ("fp32", "bf16")
# The check at the small shape: exact float32 on the GPU; float64 in the smoke run, where it
# checks REFERENCE against rnn.RNN's own float64 build.
CHECK_PRECISION = {"cuda": "fp32-exact", "cpu": "fp64"}
# Elementwise (max |ours - ref| / max |ref|) for the exact types, normwise otherwise.
LIMITS = {"fp64": 1e-10, "fp32-exact": 1e-4, "fp32": 5e-3, "bf16": 3e-2}
UNIT_ROUNDOFF = {"fp32": 2.0**-11, "bf16": 2.0**-8}  # TF32's operands: 10 stored bits
SENSITIVITY_FACTOR = 4
SENSITIVITY_DRAWS = 2
LN_EPS = 1e-5  # rnn.layer_norm's default


# -- the cells in plain PyTorch -----------------------------------------------------------

def _ln(v, gamma, beta):
    return F.layer_norm(v, v.shape[-1:], gamma, beta, LN_EPS)


def _linear(x, W, b=None):
    y = x @ W.t()
    return y if b is None else y + b


def _ref_rnn_tanh(x, s, p):
    h = torch.tanh(_linear(x, p["W"], p["b_W"]) + _linear(s[0], p["U"], p["b_U"]))
    return h, (h,)


def _ref_rnn_relu(x, s, p):
    h = torch.relu(_linear(x, p["W"], p["b_W"]) + _linear(s[0], p["U"], p["b_U"]))
    return h, (h,)


def _lstm_update(i, f, g, o, c):
    c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
    return torch.sigmoid(o) * torch.tanh(c), c


def _ref_lstm(x, s, p):
    i, f, g, o = (_linear(x, p["W"], p["b_W"]) + _linear(s[0], p["U"], p["b_U"])).chunk(4, -1)
    h, c = _lstm_update(i, f, g, o, s[1])
    return h, (h, c)


def _ref_gru(x, s, p):
    h = s[0]
    x_r, x_z, x_n = _linear(x, p["W"], p["b_W"]).chunk(3, -1)
    h_r, h_z, h_n = _linear(h, p["U"], p["b_U"]).chunk(3, -1)
    r = torch.sigmoid(x_r + h_r)
    z = torch.sigmoid(x_z + h_z)
    n = torch.tanh(x_n + r * h_n)
    h = (1 - z) * n + z * h
    return h, (h,)


def _ref_gru_reset_before(x, s, p):
    h, H = s[0], s[0].shape[-1]
    x_r, x_z, x_n = _linear(x, p["W"], p["b_W"]).chunk(3, -1)
    h_r, h_z = _linear(h, p["U"][:2 * H], p["b_U"][:2 * H]).chunk(2, -1)
    r = torch.sigmoid(x_r + h_r)
    z = torch.sigmoid(x_z + h_z)
    n = torch.tanh(x_n + _linear(r * h, p["U"][2 * H:], p["b_U"][2 * H:]))
    h = (1 - z) * n + z * h
    return h, (h,)


def _ref_peephole_lstm(x, s, p):
    h, c = s
    gi, gf, gg, go = (_linear(x, p["W"], p["b_W"]) + _linear(h, p["U"], p["b_U"])).chunk(4, -1)
    i = torch.sigmoid(gi + p["p_i"] * c)
    f = torch.sigmoid(gf + p["p_f"] * c)
    c = f * c + i * torch.tanh(gg)
    h = torch.sigmoid(go + p["p_o"] * c) * torch.tanh(c)
    return h, (h, c)


def _ref_cifg_lstm(x, s, p):
    h, c = s
    gi, gg, go = (_linear(x, p["W"], p["b_W"]) + _linear(h, p["U"], p["b_U"])).chunk(3, -1)
    i = torch.sigmoid(gi)
    c = (1 - i) * c + i * torch.tanh(gg)
    h = torch.sigmoid(go) * torch.tanh(c)
    return h, (h, c)


def _ref_lstmp(x, s, p):
    r, c = s
    i, f, g, o = (_linear(x, p["W"], p["b_W"]) + _linear(r, p["U"], p["b_U"])).chunk(4, -1)
    h, c = _lstm_update(i, f, g, o, c)
    r = _linear(h, p["W_hr"])
    return r, (r, c)


def _ref_mgu(x, s, p):
    h, H = s[0], s[0].shape[-1]
    x_f, x_h = _linear(x, p["W"], p["b"]).chunk(2, -1)
    f = torch.sigmoid(x_f + _linear(h, p["U"][:H]))
    h_hat = torch.tanh(x_h + _linear(f * h, p["U"][H:]))
    h = (1 - f) * h + f * h_hat
    return h, (h,)


def _ref_sru(x, s, p):
    c = s[0]
    xt, fx, rx = _linear(x, p["W"], p["b"]).chunk(3, -1)
    f = torch.sigmoid(fx + p["v_f"] * c)
    r = torch.sigmoid(rx + p["v_r"] * c)
    c = f * c + (1 - f) * xt
    return r * c + (1 - r) * x, (c,)


def _ref_indrnn(x, s, p):
    h = torch.relu(_linear(x, p["W"], p["b"]) + p["u"] * s[0])
    return h, (h,)


def _ref_layernorm_lstm(x, s, p):
    h, c = s
    gates = (_ln(_linear(x, p["W"]), p["gamma_x"], p["beta_x"])
             + _ln(_linear(h, p["U"]), p["gamma_h"], p["beta_h"]) + p["b"])
    i, f, g, o = gates.chunk(4, -1)
    c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
    h = torch.sigmoid(o) * torch.tanh(_ln(c, p["gamma_c"], p["beta_c"]))
    return h, (h, c)


# Each cell's step, python/rnn/zoo.py's equations: (x_t, states, params by the cell's names)
# -> (the step's output, the new states).
REFERENCE = {name: globals()[f"_ref_{name}"] for name in ZOO}


def reference_sequence(cell, x, states, p):
    """[output sequence, final states (each [1, B, n])] of the cell over x [T, B, I]."""
    step, ys = REFERENCE[cell], []
    for t in range(x.shape[0]):
        y, states = step(x[t], states, p)
        ys.append(y)
    return [torch.stack(ys)] + [s.unsqueeze(0) for s in states]


# -- the torch.compile baselines: the step with the input projection precomputed ---------

def _compiled_step_layernorm_lstm(xp, h, c, U, gamma_h, beta_h, gamma_c, beta_c):
    # xp: the normalised input projection plus b; U in the matmul type.
    g = xp + _ln((h.to(U.dtype) @ U.t()).float(), gamma_h, beta_h)
    i, f, gg, o = g.chunk(4, 1)
    c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(gg)
    h = torch.sigmoid(o) * torch.tanh(_ln(c, gamma_c, beta_c))
    return h, c


def _compiled_step_gru_reset_before(xp, h, U_rz, b_Urz, U_n, b_Un):
    # xp: the input projection plus b_W; U_rz, U_n in the matmul type.
    x_r, x_z, x_n = xp.chunk(3, 1)
    h_r, h_z = ((h.to(U_rz.dtype) @ U_rz.t()).float() + b_Urz).chunk(2, 1)
    r = torch.sigmoid(x_r + h_r)
    z = torch.sigmoid(x_z + h_z)
    n = torch.tanh(x_n + (((r * h).to(U_n.dtype) @ U_n.t()).float() + b_Un))
    return ((1 - z) * n + z * h,)


def _projection(x, W, mm_dtype):
    T, B = x.shape[0], x.shape[1]
    return (x.reshape(T * B, -1).to(mm_dtype) @ W.to(mm_dtype).t()).float().reshape(T, B, -1)


def _hoisted_layernorm_lstm(x, p, mm_dtype):
    """(the input part of every step's gates, the step's other arguments)."""
    xp = _ln(_projection(x, p["W"], mm_dtype), p["gamma_x"], p["beta_x"]) + p["b"]
    return xp, (p["U"].to(mm_dtype), p["gamma_h"], p["beta_h"], p["gamma_c"], p["beta_c"])


def _hoisted_gru_reset_before(x, p, mm_dtype):
    H = p["U"].shape[1]
    xp = _projection(x, p["W"], mm_dtype) + p["b_W"]
    U = p["U"].to(mm_dtype)
    return xp, (U[:2 * H], p["b_U"][:2 * H], U[2 * H:], p["b_U"][2 * H:])


HOISTED = {name: (globals()[f"_hoisted_{name}"], globals()[f"_compiled_step_{name}"])
           for name in COMPILED}


def compiled_training_step(cell, x, hx, params, weights, precision):
    """torch.compile's training step on leaf copies of `params` ({cell's name: tensor}):
    a function returning (outputs, gradients of x, hx and the parameters), as our_step."""
    hoist, step = HOISTED[cell]
    step = torch.compile(step, dynamic=False, fullgraph=True)
    mm_dtype = PRECISIONS[precision][2] or torch.float32
    leaves = {k: v.detach().clone().requires_grad_() for k, v in params.items()}
    wrt = [x, *hx, *leaves.values()]

    def run():
        xp, extra = hoist(x, leaves, mm_dtype)
        states, ys = tuple(s[0] for s in hx), []
        for t in range(x.shape[0]):
            states = step(xp[t], *states, *extra)
            ys.append(states[0])
        outs = [torch.stack(ys)] + [s.unsqueeze(0) for s in states]
        return outs, torch.autograd.grad(_weighted_sum(outs, weights), wrt)
    return run


# -- modules ---------------------------------------------------------------------------

def _sizes(shape, cell):
    s = dict(shape)
    if cell == "lstmp":
        s["P"] = s["H"] // 2  # 512 at H = 1024, as the forward zoo table
    return s


def make_module(cell, shape):
    s = _sizes(shape, cell)
    extra = {"proj_size": s["P"]} if "P" in s else {}
    torch.manual_seed(0)
    return rnn.RNN(rnn.zoo.CELLS[cell], s["I"], s["H"], **extra)


def plan(cells=ZOO, device="cuda"):
    """[(module name, cell, shape name, precisions)] of everything the run calls."""
    out = [(f"{c}_check", c, "check", (CHECK_PRECISION[device],)) for c in cells]
    out += [(f"{c}_medium", c, "medium", TIMED) for c in cells]
    out += [(f"{c}_{s}", c, s, TIMED) for c in COMPILED if c in cells
            for s in COMPILE_SHAPES if s != "medium"]
    return out


def _build_one(model, device, precision):
    dtype, matmul, _, _ = PRECISIONS[precision]
    if device != "cuda" and matmul == "tf32":
        matmul = None  # the CPU has no TF32
    return model.build(device, dtype, matmul_dtype=matmul)


def build_all(modules, device, jobs):
    """Compiles (or finds in the cache) the library of every (module, precision), `jobs`
    compiles at a time."""
    tasks = [(modules[name], precision) for name, _, _, precisions in modules["plan"]
             for precision in precisions]
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        for f in [pool.submit(_build_one, m, device, p) for m, p in tasks]:
            f.result()


def build(directory, jobs):
    os.makedirs(directory, exist_ok=True)
    modules = {"plan": plan()}
    for name, cell, shape, _ in modules["plan"]:
        modules[name] = make_module(cell, SHAPES[shape])
    start = time.time()
    build_all(modules, "cuda", jobs)
    for name, *_ in modules["plan"]:
        _save(_without_weights(modules[name]), directory, name)
    print(f"train-cells build: {len(modules['plan'])} modules in {time.time() - start:.0f} s")


class _CudaInput:
    """What rnn.RNN._precision reads of an input: its device and dtype."""
    device = torch.device("cuda")
    dtype = torch.float32


def _library_key(model, precision):
    """The library key a CUDA call of `model` in `precision` asks for, from the module's
    own choice (under autocast for bf16, with TF32 allowed or not)."""
    _, _, autocast, tf32 = PRECISIONS[precision]
    saved = torch.backends.cudnn.allow_tf32
    torch.backends.cudnn.allow_tf32 = tf32
    try:
        with mock.patch.object(torch, "is_autocast_enabled",
                               lambda device=None: autocast is not None), \
                mock.patch.object(torch, "get_autocast_dtype", lambda device=None: autocast):
            model_dtype, matmul, _ = model._precision(_CudaInput())
    finally:
        torch.backends.cudnn.allow_tf32 = saved
    return ("cuda", model_dtype, matmul)


def verify(directory):
    """Every module of the plan loads and finds the CUDA library of every precision the run
    uses among those it carries, with rnn-compile out of reach: nothing is compiled."""
    os.environ["RNN_COMPILE"] = os.path.join(tempfile.mkdtemp(), "no-rnn-compile")
    os.environ["RNN_CACHE_DIR"] = tempfile.mkdtemp()
    n = 0
    for name, _, _, precisions in plan():
        model = _load(directory, name)
        for precision in precisions:
            key = _library_key(model, precision)
            path = model._library(*key)
            if not os.path.basename(path).startswith("carried-"):
                raise SystemExit(f"{name} {precision}: {key} is not a carried library")
            n += 1
    assert rnn.cache.stats["compiles"] == 0, rnn.cache.stats
    size = sum(os.path.getsize(os.path.join(directory, f)) for f in os.listdir(directory))
    print(f"train-cells verify: {n} libraries of {len(plan())} modules carried, none "
          f"compiled ({size / 2**20:.1f} MiB of modules)")


# -- steps, references, errors ----------------------------------------------------------

def _autocast(device, precision):
    dtype = PRECISIONS[precision][2]
    if dtype is None:
        return contextlib.nullcontext()
    return torch.autocast(device, dtype=dtype)


def _set_tf32(precision):
    tf32 = PRECISIONS[precision][3]
    torch.backends.cudnn.allow_tf32 = tf32  # rnn.RNN's choice, as nn.LSTM's
    torch.backends.cuda.matmul.allow_tf32 = tf32  # torch.compile's matmuls


def _weighted_sum(outs, weights):
    return sum((w * o.to(w.dtype)).sum() for w, o in zip(weights, outs))


def our_step(model, x, hx, weights, precision):
    """rnn.RNN's training step: a function returning (outputs: the output sequence and the
    final states, gradients of x, of each initial state in hx and of every parameter)."""
    wrt = [x, *hx, *model.parameters()]
    hx_arg = None if not hx else hx[0] if len(hx) == 1 else tuple(hx)
    device = x.device.type

    def run():
        with _autocast(device, precision):
            y, h_n = model(x, hx_arg)
        outs = [y] + list(h_n if isinstance(h_n, tuple) else (h_n,))
        return outs, torch.autograd.grad(_weighted_sum(outs, weights), wrt)
    return run


def cell_names(model):
    """The module's parameters by the cell's own names (W, U, b_W, ...), in its order."""
    names = {v: k for k, v in ((model.cell.torch or {}).get("names") or {}).items()}
    return {names.get(attr[:-len("_l0")], attr[:-len("_l0")]): p
            for attr, p in model.named_parameters()}


def reference(cell, x, hx, params, weights, state_sizes, jitter=0.0, seed=0):
    """float64 (outputs, gradients) of the step: our_step's, on the device of x, from zero
    initial states of `state_sizes` where hx is empty; with `jitter`, the input, initial
    states and parameters each multiplied by (1 + jitter * N(0, 1))."""
    gen = torch.Generator(device=x.device).manual_seed(seed)

    def leaf(t):
        t = t.detach().double()
        if jitter:
            t = t * (1 + jitter * torch.randn(t.shape, dtype=t.dtype, device=t.device,
                                              generator=gen))
        return t.requires_grad_()
    x64, hx64 = leaf(x), [leaf(h) for h in hx]
    p64 = {k: leaf(v) for k, v in params.items()}
    states = [h[0] for h in hx64] or [
        torch.zeros(x.shape[1], n, dtype=torch.float64, device=x.device) for n in state_sizes]
    outs = reference_sequence(cell, x64, states, p64)
    grads = torch.autograd.grad(_weighted_sum(outs, [w.double() for w in weights]),
                                [x64, *hx64, *p64.values()])
    return [o.detach() for o in outs], list(grads)


def _errors(got, ref):
    """(max elementwise error over the largest value, normwise error) per tensor."""
    out = []
    for g, r in zip(got, ref):
        d = g.detach().double() - r
        out.append(((d.abs().max() / r.abs().max().clamp_min(1e-30)).item(),
                    (d.norm() / r.norm().clamp_min(1e-30)).item()))
    return out


def check(label, got, ref, names, precision, sensitivity=None):
    """A check record of outputs and gradients `got` against float64 `ref`."""
    errs = _errors(got[0] + list(got[1]), ref[0] + list(ref[1]))
    exact = precision in ("fp64", "fp32-exact")
    which = 0 if exact else 1
    worst = max(range(len(errs)), key=lambda i: errs[i][which])
    limit = LIMITS[precision]
    if sensitivity is not None:
        limit = max(limit, SENSITIVITY_FACTOR * sensitivity)
    err = errs[worst][which]
    ok = math.isfinite(err) and err <= limit
    return {**label, "precision": precision,
            "checked": "max_rel_err" if exact else "normwise_err",
            "max_rel_err": max(e[0] for e in errs), "normwise_err": max(e[1] for e in errs),
            "worst": names[worst], "sensitivity": sensitivity, "limit": limit, "ok": ok}


def _names(model, with_states):
    states = list(model.state_names)
    return (["y"] + [f"{s}_n" for s in states] + ["dx"]
            + ([f"d{s}_0" for s in states] if with_states else [])
            + [f"d{n}" for n in cell_names(model)])


def draw_weights(model, seed):
    """PyTorch's initialisation from `seed`; a parameter that it sets to a constant (the
    LayerNorm LSTM's gains and biases) gets noise of 0.1, so that its gradient means
    something."""
    torch.manual_seed(seed)
    model.reset_parameters()
    with torch.no_grad():
        for p in model.parameters():
            if p.numel() > 1 and bool((p == p.flatten()[0]).all()):
                p.add_(0.1 * torch.randn(p.shape, dtype=p.dtype))
    return model


def _inputs(model, shape, device, seed, states):
    """x (a leaf that requires a gradient), initial states (random ones for the small
    check; zeros that require a gradient for torch.compile's loop; none otherwise) and the
    loss weights of the outputs (the final states' too when the states are random)."""
    gen = torch.Generator().manual_seed(seed)
    T, B = shape["T"], shape["B"]
    x = torch.randn(T, B, model.input_size, generator=gen)
    sizes = model._spec.state_sizes
    hx = []
    if states == "random":
        hx = [torch.randn(1, B, n, generator=gen) for n in sizes]
    elif states == "zeros":
        hx = [torch.zeros(1, B, n) for n in sizes]
    weights = [torch.randn(T, B, model._spec.output_size, generator=gen)]
    if states == "random":
        weights += [torch.randn(1, B, n, generator=gen) for n in sizes]
    x = x.to(device).requires_grad_()
    hx = [h.to(device).requires_grad_() for h in hx]
    return x, hx, [w.to(device) for w in weights]


# -- timing ----------------------------------------------------------------------------

def _wall_ms(fn, samples, repeats):
    """time_ms on the CPU (the smoke run): one warm-up call, then `repeats` timed."""
    fn()
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        samples.append(1000 * (time.perf_counter() - start))
    return statistics.median(samples[-repeats:])


def time_rounds(fns, device, repeats):
    """{name: [per-round lists of ms]} of the functions `fns` timed in ROUNDS alternating
    rounds of `repeats[name]` calls each."""
    timer = time_ms if device == "cuda" else _wall_ms
    samples = {k: [[] for _ in range(ROUNDS)] for k in fns}
    for r in range(ROUNDS):
        for k, fn in fns.items():
            timer(fn, samples[k][r], repeats[k])
    return samples


def _summary(prefix, rounds):
    every = [t for r in rounds for t in r]
    return {f"{prefix}_ms": statistics.median(every), f"{prefix}_ms_min": min(every),
            f"{prefix}_ms_max": max(every),
            f"{prefix}_ms_rounds": [statistics.median(r) for r in rounds]}


def _ratio(row, num, den):
    row["ratio"] = row[f"{num}_ms"] / row[f"{den}_ms"]
    per_round = [a / b for a, b in zip(row[f"{num}_ms_rounds"], row[f"{den}_ms_rounds"])]
    row["ratio_rounds_min"], row["ratio_rounds_max"] = min(per_round), max(per_round)


def _sync(device):
    if device == "cuda":
        torch.cuda.synchronize()


# -- the run ---------------------------------------------------------------------------

class Modules:
    """The modules of the plan: loaded from DIR (the GPU run) or made and compiled here
    (the smoke run), each with its weights drawn, on the device."""

    def __init__(self, directory, device, shapes):
        self.directory, self.device, self.shapes = directory, device, shapes

    def get(self, cell, shape, seed=0):
        if self.directory:
            model = _load(self.directory, f"{cell}_{shape}")
        else:
            model = make_module(cell, self.shapes[shape])
        return draw_weights(model, seed).to(self.device)


class Case:
    """A module with the inputs of its step: x, the initial states hx that it is given (a
    gradient is taken of each) and the loss weights of its outputs."""

    def __init__(self, cell, model, shape, device, seed, states, dtype=torch.float32):
        self.cell, self.model, self.shape = cell, model, shape
        x, hx, weights = _inputs(model, shape, device, seed, states)
        self.x = x.detach().to(dtype).requires_grad_()
        self.hx = [h.detach().to(dtype).requires_grad_() for h in hx]
        self.weights = [w.to(dtype) for w in weights]
        self.params = cell_names(model)
        self.names = _names(model, bool(hx))

    def our_step(self, precision):
        return our_step(self.model, self.x, self.hx, self.weights, precision)

    def reference(self, jitter=0.0, seed=0):
        return reference(self.cell, self.x, self.hx, self.params, self.weights,
                         self.model._spec.state_sizes, jitter, seed)

    def sensitivity(self, ref, precision):
        """The largest normwise move of the float64 reference's outputs and gradients
        under perturbations of its input, states and parameters by the precision's unit
        roundoff."""
        worst = 0.0
        for draw in range(SENSITIVITY_DRAWS):
            moved = self.reference(UNIT_ROUNDOFF[precision], seed=draw + 1)
            worst = max([worst] + [e[1] for e in _errors(moved[0] + moved[1],
                                                         ref[0] + ref[1])])
        return worst


def checked(label, steps, case, precision, results):
    """Runs each of `steps` ({what: step function}) once and checks its outputs and
    gradients against the float64 reference (elementwise for the exact types, otherwise
    normwise within the limit or the cell's sensitivity); returns whether all passed."""
    ref = case.reference()
    exact = precision in ("fp64", "fp32-exact")
    sens = None if exact else case.sensitivity(ref, precision)
    ok = True
    for what, step in steps.items():
        _set_tf32(precision)
        rec = check({**label, "what": what}, step(), ref, case.names, precision, sens)
        results.add("checks", rec)
        _print_check(rec)
        ok &= rec["ok"]
    return ok


def check_small(modules, cell, results):
    """The cell at the small shape, exact, against float64."""
    precision = CHECK_PRECISION[modules.device]
    dtype = PRECISIONS[precision][0]
    model = modules.get(cell, "check").to(dtype)
    case = Case(cell, model, modules.shapes["check"], modules.device, 1, "random", dtype)
    return checked({"cell": cell, "shape": "check"}, {"ours": case.our_step(precision)},
                   case, precision, results)


def _print_check(rec):
    sens = f" (sensitivity {rec['sensitivity']:.1e})" if rec["sensitivity"] is not None else ""
    print(f"  check {rec['cell']:17s} {rec['shape']:13s} {rec['precision']:10s} "
          f"{rec['what']:13s} {rec['checked']} {rec[rec['checked']]:.1e} "
          f"(worst {rec['worst']}) limit {rec['limit']:.1e}{sens} "
          f"{'ok' if rec['ok'] else 'FAIL'}", flush=True)


def bench_zoo(modules, cells, results, precisions=TIMED, profile=0):
    """Part 1: every cell's training step at `medium`, in rounds with our LSTM's (and with
    `profile`, the kernels of one step of each, the `profile` longest printed)."""
    device, shape = modules.device, modules.shapes["medium"]
    ok = True
    lstm = Case("lstm", modules.get("lstm", "medium"), shape, device, 2, None)
    print(f"== every zoo cell's training step at medium ({_shape_str(shape)}) against our "
          f"LSTM's, {ROUNDS} alternating rounds of {REPEATS}", flush=True)
    for cell in cells:
        ok &= check_small(modules, cell, results)
        case = lstm if cell == "lstm" else Case(cell, modules.get(cell, "medium"), shape,
                                                device, 2, None)
        for precision in precisions:
            step = case.our_step(precision)
            ok &= checked({"cell": cell, "shape": "medium", "precision": precision},
                          {"ours": step}, case, precision, results)
            _set_tf32(precision)
            samples = time_rounds({"ours": step, "lstm": lstm.our_step(precision)}, device,
                                  {"ours": REPEATS, "lstm": REPEATS})
            row = {"cell": cell, "precision": precision, "shape": _sizes(shape, cell),
                   **_summary("ours", samples["ours"]), **_summary("lstm", samples["lstm"])}
            _ratio(row, "ours", "lstm")
            if profile:
                from kernel_breakdown import kernel_breakdown
                row["profile"] = {"graphs": kernel_breakdown(step, True),
                                  "no graphs": kernel_breakdown(step, False)}
            results.add("zoo", row)
            print(f"  {cell:17s} {precision:5s} ours {_ms(row, 'ours')}  our LSTM "
                  f"{_ms(row, 'lstm')}  {row['ratio']:.2f}x our LSTM "
                  f"(rounds {row['ratio_rounds_min']:.2f}-{row['ratio_rounds_max']:.2f})",
                  flush=True)
            for label, prof in row.get("profile", {}).items():
                from kernel_breakdown import print_breakdown
                print_breakdown(label, prof, profile, indent="    ")
        del case
    return ok


def _dynamo_graphs():
    from torch._dynamo.utils import counters
    return counters["stats"]["unique_graphs"]


def compare_compiled(case, label, device, results, compiled_repeats):
    """One configuration of part 2: compile, check both sides, time them in rounds."""
    precision = label["precision"]
    _set_tf32(precision)
    torch._dynamo.reset()
    graphs_before = _dynamo_graphs()
    compiled = compiled_training_step(case.cell, case.x, case.hx, case.params, case.weights,
                                      precision)
    _sync(device)
    start = time.perf_counter()
    compiled()
    _sync(device)
    first_s = time.perf_counter() - start
    graphs = _dynamo_graphs() - graphs_before
    ours = case.our_step(precision)
    ok = checked(label, {"ours": ours, "torch.compile": compiled}, case, precision, results)
    _set_tf32(precision)
    samples = time_rounds({"ours": ours, "compiled": compiled}, device,
                          {"ours": REPEATS, "compiled": compiled_repeats})
    row = {"cell": case.cell, "config": label["shape"], "shape": dict(case.shape),
           "precision": precision, **_summary("ours", samples["ours"]),
           **_summary("compiled", samples["compiled"])}
    _ratio(row, "compiled", "ours")
    row["meets_5x"] = row["ratio"] >= 5
    # The first step, less a timed one.
    row["compile_s"] = first_s - row["compiled_ms"] / 1000
    row["dynamo_graphs"] = graphs
    row["dynamo_recompiled_while_timed"] = _dynamo_graphs() - graphs_before != graphs
    results.add("compile", row)
    print(f"  {case.cell:17s} {label['shape']:13s} {precision:5s} ours {_ms(row, 'ours')}"
          f"  torch.compile {_ms(row, 'compiled')}  {row['ratio']:.2f}x "
          f"(rounds {row['ratio_rounds_min']:.2f}-{row['ratio_rounds_max']:.2f}) "
          f"{'>= 5x' if row['meets_5x'] else '< 5x'}  compile {row['compile_s']:.1f} s, "
          f"{graphs} graph(s)" + ("  RECOMPILED" if row["dynamo_recompiled_while_timed"]
                                   else ""), flush=True)
    return ok


def bench_compiled(modules, cells, results, compiled_repeats, configs=COMPILE_SHAPES,
                   precisions=TIMED):
    """Part 2: ours against torch.compile's step, the same cell and weights."""
    device = modules.device
    ok = True
    print(f"== training step against torch.compile (default mode, dynamic=False), "
          f"{ROUNDS} alternating rounds of {REPEATS} (ours) and {compiled_repeats} "
          "(torch.compile)", flush=True)
    for cell in cells:
        for config in configs:
            shape = modules.shapes[config]
            # Zero initial states that require a gradient: every step of torch.compile's
            # loop then sees the same kind of inputs (one graph).
            case = Case(cell, modules.get(cell, config), shape, device, 3, "zeros")
            for precision in precisions:
                label = {"cell": cell, "shape": config, "precision": precision}
                try:
                    ok &= compare_compiled(case, label, device, results, compiled_repeats)
                except Exception as e:  # noqa: BLE001 (recorded; the next configuration runs)
                    ok = False
                    results.add("compile", {**label, "error": f"{type(e).__name__}: {e}"})
                    print(f"  {cell:17s} {config:13s} {precision:5s} FAILED: "
                          f"{type(e).__name__}: {e}", flush=True)
            del case
    torch._dynamo.reset()
    return ok


def _ms(row, k):
    return f"{row[k + '_ms']:.3f} ms [{row[k + '_ms_min']:.3f}-{row[k + '_ms_max']:.3f}]"


def _shape_str(s):
    return ", ".join(f"{k}={v}" for k, v in s.items())


def print_tables(results):
    print("\n| cell | precision | ours ms (min-max) | our LSTM ms (min-max) | / our LSTM "
          "(per round) |")
    print("|---|---|---|---|---|")
    for r in results["zoo"]:
        print(f"| {r['cell']} | {r['precision']} | {r['ours_ms']:.3f} ({r['ours_ms_min']:.3f}-"
              f"{r['ours_ms_max']:.3f}) | {r['lstm_ms']:.3f} ({r['lstm_ms_min']:.3f}-"
              f"{r['lstm_ms_max']:.3f}) | {r['ratio']:.2f}x ({r['ratio_rounds_min']:.2f}-"
              f"{r['ratio_rounds_max']:.2f}) |")
    print("\n| cell | config | precision | ours ms (min-max) | torch.compile ms (min-max) | "
          "torch.compile / ours (per round) | >= 5x | compile s |")
    print("|---|---|---|---|---|---|---|---|")
    for r in results["compile"]:
        if "error" in r:
            print(f"| {r['cell']} | {r['shape']} | {r['precision']} | | failed: {r['error']} "
                  "| | | |")
            continue
        print(f"| {r['cell']} | {r['config']} | {r['precision']} | {r['ours_ms']:.3f} "
              f"({r['ours_ms_min']:.3f}-{r['ours_ms_max']:.3f}) | {r['compiled_ms']:.3f} "
              f"({r['compiled_ms_min']:.3f}-{r['compiled_ms_max']:.3f}) | {r['ratio']:.2f}x "
              f"({r['ratio_rounds_min']:.2f}-{r['ratio_rounds_max']:.2f}) | "
              f"{'yes' if r['meets_5x'] else 'no'} | {r['compile_s']:.1f} |")
    failed = [c for c in results["checks"] if not c["ok"]]
    print(f"\n{len(results['checks']) - len(failed)} of {len(results['checks'])} checks "
          "passed" + "".join(f"\n  FAILED: {c['cell']} {c['shape']} {c['precision']} "
                             f"{c['what']}: {c[c['checked']]:.2e} > {c['limit']:.2e} "
                             f"({c['worst']})" for c in failed))


class Results(dict):
    """The run's JSON, written again after every record: a run stopped early (a time
    limit) leaves what it measured."""

    def __init__(self, path, **fields):
        super().__init__(fields)
        self.path = path

    def add(self, section, record):
        self[section].append(record)
        self.save()

    def save(self):
        if self.path:
            with open(self.path + ".tmp", "w") as f:
                json.dump(self, f, indent=1)
            os.replace(self.path + ".tmp", self.path)


def run(directory, out_json, device, shapes, cells, compile_cells, compiled_repeats, command,
        configs=COMPILE_SHAPES, precisions=TIMED, profile=0):
    start = time.time()
    results = Results(out_json, **{"date": time.strftime("%Y-%m-%d"), "command": command,
               "device": torch.cuda.get_device_name() if device == "cuda" else "cpu",
               "torch": torch.__version__, "cudnn": torch.backends.cudnn.version(),
               "rounds": ROUNDS, "repeats": REPEATS, "compiled_repeats": compiled_repeats,
               "limits": LIMITS, "sensitivity_factor": SENSITIVITY_FACTOR,
               "finished": False, "ok": False, "checks": [], "zoo": [], "compile": []})
    print(f"device: {results['device']}, torch {results['torch']}, cuDNN {results['cudnn']}",
          flush=True)
    modules = Modules(directory, device, shapes)
    ok, finished = True, False
    try:
        if cells:
            ok &= bench_zoo(modules, cells, results, precisions, profile)
        if compile_cells:
            ok &= bench_compiled(modules, compile_cells, results, compiled_repeats, configs,
                                 precisions)
        finished = True
    finally:
        # What ran, also when something raised.
        results["libraries_compiled"] = rnn.cache.stats["compiles"]
        results["finished"] = finished
        results["ok"] = bool(ok and finished)
        results["wall_s"] = time.time() - start
        results.save()
    print_tables(results)
    print(f"train-cells: {'all checks ok' if ok else 'CHECK FAILURES'} "
          f"({results['wall_s']:.0f} s)")
    return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("dir")
    b.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    v = sub.add_parser("verify")
    v.add_argument("dir")
    for name in ("run", "smoke"):
        r = sub.add_parser(name)
        if name == "run":
            r.add_argument("dir")
        r.add_argument("json", nargs="?" if name == "smoke" else None)
        r.add_argument("--only", nargs="+", choices=ZOO, help="these cells only")
        r.add_argument("--no-zoo", action="store_true", help="skip part 1")
        r.add_argument("--no-compile", action="store_true", help="skip part 2")
        r.add_argument("--compiled-repeats", type=int, default=REPEATS,
                       help="timed steps of torch.compile's per round")
        r.add_argument("--configs", nargs="+", choices=COMPILE_SHAPES, default=COMPILE_SHAPES,
                       help="part 2's shapes")
        r.add_argument("--precisions", nargs="+", choices=TIMED, default=TIMED,
                       help="the precisions timed")
        r.add_argument("--profile", type=int, default=0, metavar="N",
                       help="part 1: the N longest GPU kernels of one step of each cell "
                            "(torch.profiler; all of them in the JSON)")
    a = ap.parse_args()
    if a.cmd == "build":
        build(a.dir, a.jobs)
        return 0
    if a.cmd == "verify":
        verify(a.dir)
        return 0
    cells = [] if a.no_zoo else [c for c in ZOO if not a.only or c in a.only]
    compile_cells = [] if a.no_compile else [c for c in COMPILED if not a.only or c in a.only]
    command = "python3 bench/train_cells.py " + " ".join(sys.argv[1:])
    if a.cmd == "run":
        if not torch.cuda.is_available():
            raise SystemExit("train_cells.py run: no GPU (the smoke run is the CPU's)")
        return run(a.dir, a.json, "cuda", SHAPES, cells, compile_cells, a.compiled_repeats,
                   command, a.configs, a.precisions, a.profile)
    # smoke: tiny shapes on the CPU, the libraries compiled here first (in parallel).
    modules = {"plan": [p for p in plan(ZOO, "cpu") if p[1] in cells + compile_cells]}
    for name, cell, shape, _ in modules["plan"]:
        modules[name] = make_module(cell, SMOKE_SHAPES[shape])
    build_all(modules, "cpu", os.cpu_count() or 2)
    return run(None, a.json, "cpu", SMOKE_SHAPES, cells, compile_cells, a.compiled_repeats,
               command, a.configs, a.precisions)


if __name__ == "__main__":
    sys.exit(main())
