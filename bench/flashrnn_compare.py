#!/usr/bin/env python3
"""Our compiled head-wise cells against FlashRNN's (the `flashrnn` package, NX-AI/flashrnn) on
the GPU, for its functions "slstm", "lstm" and "gru" (FUNCTIONS), at FlashRNN's
head-dimension grid: T = 1024, B = 16, H = NH * D = 768, D in 16, 32, 64, 128, 256, 768
(HEAD_DIMS), input size I = 768, bf16 matmuls.

Each function has a DSL cell below with FlashRNN's exact equations and parameters (W, R, b in
its gate orders), so that the same weights give the same outputs and states:

  * slstm_flashrnn (FlashRNN "slstm"): FlashRNN's sLSTM is not the zoo's (rnn.zoo.slstm): its
    forget gate is a sigmoid taken in log space (log f = logsigmoid(f~), not f~), the first
    step (n == 0) sets the stabiliser to m = i~, and the normaliser is kept at n >= 1. The
    pre-activations are the zoo's: x W^T + b + headwise(h, R), gates i, f, z, o.
  * lstm_flashrnn (FlashRNN "lstm"): the LSTM with gates i, f, z, o and one bias b; the same
    function as rnn.zoo.headwise_lstm with b_W = b, b_U = 0.
  * gru_flashrnn (FlashRNN "gru"): the GRU with the reset gate after the recurrent product
    (torch.nn.GRU's), in FlashRNN's layout: W rows r, z, n; R's rows g, r, z per head (g: the
    candidate's recurrent part); b rows g, r, z, n (4 rows: the candidate has a recurrent bias
    b_g inside the reset and an input bias b_n outside it). The same function as
    rnn.zoo.headwise_gru with R's gate rows reordered and b split into b_W, b_U.

The zoo's cells (rnn.zoo.slstm, rnn.zoo.headwise_lstm, rnn.zoo.headwise_gru) are built and
timed alongside ("ours zoo"); those of the LSTM and GRU get the mapped weights and are checked
too (same function), the zoo's sLSTM is timed for reference only (other equations).

    python3 bench/flashrnn_compare.py --cpu-check [--functions slstm,lstm,gru]
        (here, with torch and flashrnn importable) each cell and its weight mapping at a tiny
        size (T=5, B=3, NH=2, D=4) on the CPU: our cell (rnn.NumpyRNN, float64), FlashRNN's
        PyTorch backends ("vanilla" in float64, "vanilla_fwbw" in float32 where FlashRNN has
        it: slstm, lstm) and the torch reference below, from zero and from random initial
        states; also the zoo's cell (the same function for the LSTM and GRU; the sLSTM
        differs). Then the training step: the gradients of our rnn.RNN of the cell (float64,
        CPU library) for x, W, R, b (and the initial states), and those of FlashRNN's
        training steps ("vanilla", "vanilla_fwbw"; with and without the projection) mapped
        to our layouts, against float64 autograd through the reference.
        bench/flashrnn-build.sh runs it.
    python3 bench/flashrnn_compare.py MODEL_DIR OUT_JSON [--train-model-dir DIR]
            [--functions slstm,lstm,gru] [--dims 16,64] [--backends cuda,...]
        (the GPU machine; bench/flashrnn-run.sh sets the paths) first builds FlashRNN's
        "cuda" extensions of every (function, D) in parallel processes (--build-jobs), then
        for each function and head dim D: loads our model MODEL_DIR/<cell>_d<D> and our
        training module DIR/<cell>_d<D>.pt (default MODEL_DIR/../train-models; both built by
        bench/flashrnn-build.sh, their weights replaced here), draws deterministic
        bf16-exact weights, input and gradient of h, checks ours and every FlashRNN backend
        against a float64 torch reference of the same equations on the GPU (the outputs,
        and the training steps' gradients against float64 autograd through it), and times
        the forward pass and the training step of each.

Our training step is an rnn.RNN of the cell (python/rnn/nn.py), built here by
build_train_models (bench/flashrnn-build.sh): float32 parameters on the meta device (no data:
the weights are set on the GPU machine) and the CUDA training library that a call under
torch.autocast(bfloat16) runs (library key TRAIN_KEY: bf16 matmul operands, float32 states
and pointwise math), compiled without a GPU; torch.save of the module carries the library.
On the GPU machine torch.load, Module.to_empty(device="cuda") and load_state_dict make it
runnable. The carried library is written to the compile cache there and links the runtime
libraries by name (librnn_runtime.so, librnn_runtime_cuda.so): bench/flashrnn-run.sh puts
their copies (build/gpu/lib) on LD_LIBRARY_PATH.

Inputs given to both sides: x [T, B, I] (ours reads it in float32, FlashRNN's projection in
bf16: the same values), W [G_W H, I], R [NH, G_R D, D] (each head's [out, in] matrix, gate
rows in FlashRNN's order), b [G_B H], all rounded to bf16 so that both sides see exactly the
same numbers (G_W, G_R, G_B = 4, 4, 4 for slstm and lstm, 3, 3, 4 for gru). FlashRNN takes the
input projection precomputed: Wx = x W^T as [B, T, G_W, NH, D] (gate-major, then head, as our
pre-activations), R as [G_R, NH, D_out, D_in], b as [G_B, NH, D]; it returns every state at
every step, [S, B, T, NH, D] (S: h, c, n, m for slstm; h, c for lstm; h for gru), and the
last ones. The training steps' loss is sum(h * dh) over all steps, with dh a fixed random
bf16 tensor.

Timings (CUDA events around each call, each call synchronised, warm-up first, `--repeats`
calls per implementation in each of `--rounds` alternating rounds, median over all calls):
  * ours: the whole layer, x -> h for all steps (projection GEMM inside); "ours zoo": the
    zoo's cell (MODEL_DIR/<zoo cell>_d<D>) with the same (mapped) weights;
  * FlashRNN "<backend>": its recurrence alone, Wx precomputed (its API; its internal
    re-layout of Wx, R and b included);
  * FlashRNN "<backend>+proj": the same with the projection x W^T (a torch bf16 GEMM on x
    [B, T, I]) in the timed call, the like-for-like comparison with ours;
  * ours train: forward and backward of the whole layer (projection inside) under
    torch.autocast("cuda", bfloat16): x [T, B, I] float32 and the float32 parameters W, R,
    b requiring grad;
  * FlashRNN "<backend> train": forward and backward of its recurrence (Wx, R and b require
    grad);
  * FlashRNN "<backend> train+proj": the same with the projection inside (x [B, T, I] and W
    in bf16 require grad instead of Wx), the like-for-like comparison with ours train.
The training steps' gradients are checked against float64 autograd through the reference:
the norm-wise relative error ||g - ref|| / ||ref|| of h and of the gradients of x, W, R and b
(FlashRNN's mapped to our layouts; those of x and W follow in float64 from the gradient of Wx
for "<backend> train"); ours beyond GRAD_LIMIT is reported as FAILED.
A backend that FlashRNN 1.0.8 does not have for a function (triton_fused and vanilla_fwbw:
slstm and lstm only; cuda_fused maps gru to cuda) is left out of that function's table and
named under it. A backend that fails to build or run is reported with its error and skipped
(a build failure of a backend skips it for the later head dims of that function too). Each
(function, head dim) runs in a process of its own, so that a backend that breaks the CUDA
context costs that case only. FlashRNN's extension loader sleeps up to 10 s at random before
each build or load (against concurrent builds of one extension); the builds here are of
distinct extensions, so that sleep is skipped in these processes. A table per function is
printed and written to OUT_JSON's .txt, the results (every timed call included, each record
with its "function") to OUT_JSON.

--profile N adds, after the timings, one training step of each (ours also with
RNN_CUDA_GRAPHS=0, kernel by kernel) under torch.profiler: the N longest GPU kernels (by
name: total time, launches), the time from the first kernel's start to the last one's end
against the time kernels ran in it, the longest idle gaps between kernels, how long the host
takes to return from an unsynchronised step, and the longest CPU operations; all of it in
each record's "profile".
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from contextlib import nullcontext

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
import rnn  # noqa: E402
from rnn import (H, I, exp, headwise, log, maximum, minimum, param, sigmoid,  # noqa: E402
                 split, tanh)
from rnn.zoo import NH, _head_size  # noqa: E402
from kernel_breakdown import kernel_breakdown  # noqa: E402

try:
    import torch
except ImportError:  # building the models needs only the cells
    torch = None

T, B, HIDDEN, INPUT = 1024, 16, 768, 768
HEAD_DIMS = (16, 32, 64, 128, 256, 768)          # FlashRNN's head-dim benchmark grid
BACKENDS = ("cuda", "cuda_fused", "triton_fused", "vanilla")
TRAIN_BACKENDS = ("cuda", "cuda_fused", "triton_fused", "vanilla_fwbw")
SEED = 20241212
DEVICE = "cuda"      # where run_dim runs (a test may set "cpu")
BF16_LIMIT = 5e-2    # max |a - ref| / max |ref| over T = 1024 steps with bf16 operands
GRAD_LIMIT = 2e-2    # ||g - ref|| / ||ref|| of h and each gradient, with bf16 operands
# The library that rnn.RNN runs for a call on CUDA under torch.autocast(bfloat16) with float32
# parameters: (device type, model dtype, matmul operand type).
TRAIN_KEY = ("cuda", "f32", "bf16")


@rnn.cell(states=("h", "c", "n", "m"))
def slstm_flashrnn(x, h, c, n, m):
    """FlashRNN's sLSTM (its CUDA kernel flashrnn/flashrnn/alternating/slstm_pointwise.cu):
    with the pre-activations i~, f~, z~, o~ of x W^T + b + headwise(h, R),

        log f + m = logsigmoid(f~) + m
        m' = i~ where n == 0 (the first step from zero states), else max(i~, logsigmoid(f~) + m)
        i = min(1, exp(i~ - m')),  f = min(1, exp(logsigmoid(f~) + m - m'))
        c' = f c + i tanh(z~),  n' = max(f n + i, 1),  h' = sigmoid(o~) c' / n'

    logsigmoid(v) = min(v, 0) - log(1 + exp(-|v|)), as FlashRNN computes it."""
    D = _head_size()
    W = param("W", (4 * H, I))
    R = param("R", (NH, 4 * D, D))
    b = param("b", (4 * H,))
    pi, pf, pz, po = split((x @ W.T + b) + headwise(h, R, gates=4), 4)
    logf_m = minimum(pf, 0.0) - log(1.0 + exp(minimum(pf, -pf))) + m
    m_new = rnn.where(rnn.eq(n, 0.0), pi, maximum(pi, logf_m))
    i = minimum(exp(pi - m_new), 1.0)
    f = minimum(exp(logf_m - m_new), 1.0)
    c = f * c + i * tanh(pz)
    n = maximum(f * n + i, 1.0)
    h = sigmoid(po) * (c / n)
    return h, c, n, m_new


@rnn.cell(states=("h", "c"))
def lstm_flashrnn(x, h, c):
    """FlashRNN's LSTM (flashrnn/flashrnn/vanilla/lstm.py, alternating/lstm_pointwise.cu): with
    the pre-activations i~, f~, z~, o~ of x W^T + b + headwise(h, R) (one bias),

        c' = sigmoid(f~) c + sigmoid(i~) tanh(z~),  h' = sigmoid(o~) tanh(c')."""
    D = _head_size()
    W = param("W", (4 * H, I))
    R = param("R", (NH, 4 * D, D))
    b = param("b", (4 * H,))
    pi, pf, pz, po = split((x @ W.T + b) + headwise(h, R, gates=4), 4)
    c = sigmoid(pf) * c + sigmoid(pi) * tanh(pz)
    h = sigmoid(po) * tanh(c)
    return h, c


@rnn.cell(states=("h",))
def gru_flashrnn(x, h):
    """FlashRNN's GRU (flashrnn/flashrnn/vanilla/gru.py, alternating/gru_pointwise.cu): W rows
    r, z, n (3 input gates), R's rows g, r, z per head (3 recurrent gates; g is the
    candidate's recurrent part), b rows g, r, z, n (4):

        r = sigmoid(x W_r^T + R_r h + b_r),  z = sigmoid(x W_z^T + R_z h + b_z)
        n = tanh(x W_n^T + b_n + r (R_g h + b_g)),  h' = z h + (1 - z) n."""
    D = _head_size()
    W = param("W", (3 * H, I))
    R = param("R", (NH, 3 * D, D))
    b = param("b", (4 * H,))
    b_g, b_x = split(b, [H, 3 * H])              # b_x: rows r, z, n, those of W
    x_r, x_z, x_n = split(x @ W.T + b_x, 3)
    h_g, h_r, h_z = split(headwise(h, R, gates=3), 3)
    r = sigmoid(x_r + h_r)
    z = sigmoid(x_z + h_z)
    n = tanh(x_n + r * (h_g + b_g))
    return z * h + (1.0 - z) * n


# -- the float64 references: one step of each function's equations, in torch -----------------
# xw: x W^T [B, G_W H] (no bias), rh: the head-wise recurrent product [B, G_R H] (gate-major),
# b [G_B H], states: the function's states [B, H] each. Written from the equations above,
# independent of both implementations.

def _slstm_step(xw, rh, b, states):
    h, c, n, m = states
    pi, pf, pz, po = ((xw + b) + rh).chunk(4, dim=-1)
    logf_m = torch.nn.functional.logsigmoid(pf) + m
    m = torch.where(n == 0, pi, torch.maximum(pi, logf_m))
    i = torch.exp(pi - m).clamp(max=1.0)
    f = torch.exp(logf_m - m).clamp(max=1.0)
    c = f * c + i * torch.tanh(pz)
    n = torch.clamp(f * n + i, min=1.0)
    h = torch.sigmoid(po) * (c / n)
    return [h, c, n, m]


def _lstm_step(xw, rh, b, states):
    h, c = states
    pi, pf, pz, po = ((xw + b) + rh).chunk(4, dim=-1)
    c = torch.sigmoid(pf) * c + torch.sigmoid(pi) * torch.tanh(pz)
    h = torch.sigmoid(po) * torch.tanh(c)
    return [h, c]


def _gru_step(xw, rh, b, states):
    (h,) = states
    b_g, b_r, b_z, b_n = b.chunk(4, dim=-1)
    x_r, x_z, x_n = xw.chunk(3, dim=-1)
    h_g, h_r, h_z = rh.chunk(3, dim=-1)
    r = torch.sigmoid(x_r + h_r + b_r)
    z = torch.sigmoid(x_z + h_z + b_z)
    n = torch.tanh(x_n + b_n + r * (h_g + b_g))
    return [z * h + (1 - z) * n]


# -- the zoo's parameters for the same function ---------------------------------------------

def _zoo_same(w, NH_):
    return dict(w)


def _zoo_lstm(w, NH_):
    """rnn.zoo.headwise_lstm: b_W = b, b_U = 0."""
    return {"W": w["W"], "R": w["R"], "b_W": w["b"], "b_U": torch.zeros_like(w["b"])}


def _zoo_gru(w, NH_):
    """rnn.zoo.headwise_gru (rows r, z, n in W, R, b_W and b_U): R's rows g, r, z reordered to
    r, z, g; b_W = (b_r, b_z, b_n), b_U = (0, 0, b_g)."""
    R = w["R"]
    nh, rows, D = R.shape
    R = R.view(nh, 3, D, D)[:, [1, 2, 0]].reshape(nh, rows, D).contiguous()
    b_g, b_r, b_z, b_n = w["b"].chunk(4)
    zero = torch.zeros_like(b_g)
    return {"W": w["W"], "R": R, "b_W": torch.cat([b_r, b_z, b_n]),
            "b_U": torch.cat([zero, zero, b_g])}


class Function:
    """One FlashRNN function: our cell for it, the zoo's, its gates and states, its
    reference step and the zoo's weight mapping."""

    def __init__(self, name, title, cell, zoo, states, gates, step, zoo_weights, zoo_same,
                 zoo_note, unsupported=None):
        self.name, self.title, self.cell, self.zoo = name, title, cell, zoo
        self.states = states                       # FlashRNN's states, in its order
        self.gw, self.gr, self.gb = gates          # rows of W (and Wx), of R, of b
        self.step, self.zoo_weights, self.zoo_same, self.zoo_note = \
            step, zoo_weights, zoo_same, zoo_note
        self.unsupported = unsupported or {}       # backend -> why not


FUNCTIONS = {
    "slstm": Function("slstm", "sLSTM", slstm_flashrnn, rnn.zoo.slstm, "hcnm", (4, 4, 4),
                      _slstm_step, _zoo_same, False, "rnn.zoo.slstm (exp forget gate)"),
    "lstm": Function("lstm", "head-wise LSTM", lstm_flashrnn, rnn.zoo.headwise_lstm, "hc",
                     (4, 4, 4), _lstm_step, _zoo_lstm, True,
                     "rnn.zoo.headwise_lstm (same function: b_W = b, b_U = 0)"),
    "gru": Function("gru", "head-wise GRU", gru_flashrnn, rnn.zoo.headwise_gru, "h", (3, 3, 4),
                    _gru_step, _zoo_gru, True,
                    "rnn.zoo.headwise_gru (same function: R's gate rows reordered, b split)",
                    unsupported={
                        "triton_fused": "not in FlashRNN 1.0.8 (triton_fused: slstm, lstm only)",
                        "vanilla_fwbw": "not in FlashRNN 1.0.8 (vanilla_fwbw: slstm, lstm only)",
                        "cuda_fused": "not in FlashRNN 1.0.8 (cuda_fused runs gru on cuda)"}),
}


def model_name(D, cell="slstm_flashrnn"):
    """The saved model's directory: <cell>_d<D>, e.g. slstm_flashrnn_d64, or slstm_d64 for the
    zoo's sLSTM."""
    return f"{cell}_d{D}"


# -- weights, layouts, reference ---------------------------------------------------------------

def draw_weights(I_, H_, NH_, seed, dtype, bf16_exact=True, fn=None):
    """Deterministic (CPU generator) W [G_W H, I], R [NH, G_R D, D], b [G_B H] (gates of `fn`,
    default the sLSTM's 4, 4, 4): PyTorch-style uniform in +-1/sqrt(fan in) (I for W, D for
    R), b in +-1; rounded to bf16 values if bf16_exact."""
    gw, gr, gb = (4, 4, 4) if fn is None else (fn.gw, fn.gr, fn.gb)
    D = H_ // NH_
    g = torch.Generator().manual_seed(seed)

    def u(shape, k):
        t = (torch.rand(shape, generator=g, dtype=torch.float64) * 2 - 1) * k
        return t.to(torch.bfloat16).to(dtype) if bf16_exact else t.to(dtype)
    return {"W": u((gw * H_, I_), I_ ** -0.5), "R": u((NH_, gr * D, D), D ** -0.5),
            "b": u((gb * H_,), 1.0)}


def to_flashrnn(w, NH_):
    """Our R [NH, G_R D, D] and b [G_B H] in FlashRNN's default layouts: R [G_R, NH, D_out,
    D_in] ("GHDP"), b [G_B, NH, D] ("GHD")."""
    R = w["R"]
    nh, rows, D = R.shape
    assert nh == NH_ and rows % D == 0
    gr = rows // D
    return (R.view(NH_, gr, D, D).permute(1, 0, 2, 3).contiguous(),
            w["b"].view(-1, NH_, D))


def flashrnn_wx(xw, NH_, gates=4):
    """x W^T [T, B, G H] (gate-major, head-major within a gate) as FlashRNN's Wx
    [B, T, G, NH, D]."""
    T_, B_, G = xw.shape
    return xw.view(T_, B_, gates, NH_, G // (gates * NH_)).transpose(0, 1).contiguous()


def flashrnn_states(states, NH_):
    """Our states (e.g. h, c, n, m), each [B, H], as FlashRNN's initial states
    [S, B, 1, NH, D]."""
    s = torch.stack(states)
    return s.view(s.shape[0], s.shape[1], 1, NH_, s.shape[2] // NH_)


def from_flashrnn(all_states, last_states):
    """FlashRNN's outputs [S, B, T, NH, D] and [S, B, 1, NH, D] as ours: h for every step
    [T, B, H], and the last states, each [B, H]."""
    S, B_, T_, nh, D = all_states.shape
    ys = all_states[0].reshape(B_, T_, nh * D).transpose(0, 1)
    return ys, [last_states[k].reshape(B_, nh * D) for k in range(S)]


def reference(x, w, NH_, states=None, fn=None):
    """The equations of `fn` (default the sLSTM, slstm_flashrnn), stepped in torch in the dtype
    of x (float64 for the reference), independent of both implementations. Returns h for every
    step [T, B, H] and the last states."""
    fn = fn or FUNCTIONS["slstm"]
    T_, B_, _ = x.shape
    W, R, b = w["W"], w["R"], w["b"]
    H_ = W.shape[0] // fn.gw
    D = H_ // NH_
    if states is None:
        states = [torch.zeros(B_, H_, dtype=x.dtype, device=x.device)
                  for _ in fn.states]
    states = list(states)
    xw = (x.reshape(T_ * B_, -1) @ W.T).view(T_, B_, fn.gw * H_)
    ys = []
    for t in range(T_):
        rh = torch.einsum("bhk,hok->bho", states[0].view(B_, NH_, D), R)  # [B, NH, G_R D]
        rh = rh.view(B_, NH_, fn.gr, D).transpose(1, 2).reshape(B_, fn.gr * H_)
        states = fn.step(xw[t], rh, b, states)
        ys.append(states[0])
    return torch.stack(ys), states


def rel_err(a, ref):
    a, ref = a.detach().double(), ref.detach().double()
    assert a.shape == ref.shape, (a.shape, ref.shape)
    return float((a - ref).abs().max() / ref.abs().max().clamp(min=1e-30))


def errs(got, ref):
    """{"h": ..., "h_n": ..., "c_n": ..., ...}: max relative errors of the output sequence and
    each last state (h, c, n, m for the sLSTM; h, c for the LSTM; h for the GRU)."""
    (ys, last), (rys, rlast) = got, ref
    assert len(last) == len(rlast), (len(last), len(rlast))
    out = {"h": rel_err(ys, rys)}
    out.update({f"{s}_n": rel_err(a, r) for s, a, r in zip("hcnm", last, rlast)})
    return out


def last_states(last):
    """A model's last states (a tuple of [L, B, H] arrays, or one array for a cell of one
    state, as torch.nn.GRU's h_n) as a list of [B, H], layer 0."""
    return [s[0] for s in (last if isinstance(last, (tuple, list)) else (last,))]


def _fmt(e):
    return "  ".join(f"{k} {v:.1e}" for k, v in e.items())


# -- training: gradients in our layouts, the reference's by float64 autograd -------------------

def params_from_flashrnn(R_f, b_f):
    """FlashRNN's R [G_R, NH, D_out, D_in] and b [G_B, NH, D] (or their gradients) in our
    layouts, R [NH, G_R D, D] and b [G_B H]: the inverse of to_flashrnn."""
    gr, nh, D, _ = R_f.shape
    return R_f.permute(1, 0, 2, 3).reshape(nh, gr * D, D), b_f.reshape(-1)


def norm_err(a, ref):
    """||a - ref|| / ||ref||, in float64."""
    a, ref = a.detach().double(), ref.detach().double()
    assert a.shape == ref.shape, (a.shape, ref.shape)
    return float(torch.linalg.vector_norm(a - ref)
                 / torch.linalg.vector_norm(ref).clamp(min=1e-30))


def grad_errs(ys, grads, ref):
    """{"h": ..., "x": ..., "W": ..., ...}: norm-wise relative errors of the output sequence
    `ys` and of each gradient in `grads` against `ref` (reference_grads' (ys, grads))."""
    rys, rgrads = ref
    return {"h": norm_err(ys, rys), **{k: norm_err(g, rgrads[k]) for k, g in grads.items()}}


def reference_grads(x, w, NH_, dy, fn, states=None, dlast=None):
    """float64 autograd through reference(): loss = sum(h * dy) over all steps (plus
    sum(s * ds) over the last states for `dlast`, one ds per state, when given). Returns h for
    every step [T, B, H] and the gradients of x, the weights of `w` and the initial
    `states` when given ("h_0", "c_0", ...)."""
    leaves = {k: v.detach().requires_grad_() for k, v in {"x": x, **w}.items()}
    init = [s.detach().requires_grad_() for s in states] if states is not None else []
    dlast = list(dlast or ())
    with torch.enable_grad():
        ys, last = reference(leaves["x"], {k: leaves[k] for k in w}, NH_, init or None, fn)
        grads = torch.autograd.grad([ys] + last[:len(dlast)], list(leaves.values()) + init,
                                    [dy] + dlast)
    names = list(leaves) + [f"{s}_0" for s in fn.states[:len(init)]]
    return ys.detach(), dict(zip(names, grads))


def ours_train_grads(model, x, dy, names, states=None, dlast=None, autocast=None):
    """One training step of our rnn.RNN `model` with the loss of reference_grads: returns h
    for every step and the gradients of x, of the parameters `names` (the cell's names: "W"
    for W_l0) and of the initial states when given. `autocast`: the dtype of torch.autocast
    around the forward (None: none)."""
    x = x.detach().clone().requires_grad_()
    hx = None if states is None else [s[None].detach().clone().requires_grad_() for s in states]
    model.zero_grad(set_to_none=True)
    with torch.enable_grad():
        with torch.autocast(x.device.type, dtype=autocast) if autocast else nullcontext():
            ys, h_n = model(x, None if hx is None else hx[0] if len(hx) == 1 else tuple(hx))
        outs = [ys] + last_states(h_n)[:len(dlast or ())]
        torch.autograd.backward(outs, [d.to(o.dtype)
                                       for d, o in zip([dy] + list(dlast or ()), outs)])
    grads = {"x": x.grad}
    grads.update({k: getattr(model, f"{k}_l0").grad for k in names})
    grads.update({f"{s}_0": h.grad[0] for s, h in zip(model.state_names, hx or ())})
    return ys.detach(), grads


def flashrnn_train_step(fn, backend, dtype, leaves, dy):
    """A training step of FlashRNN's `backend` (dtype its name, e.g. "bfloat16") as a
    function: forward from `leaves`, (Wx, R, b) in its layouts, or (x [B, T, I], W, R, b) with
    the projection x W^T inside, and backward of h's gradient dy [B, T, NH, D]."""
    from flashrnn import flashrnn
    NH_, D = dy.shape[2:]

    def step():
        for t in leaves:
            t.grad = None
        if len(leaves) == 4:
            x_bt, W, R, b = leaves
            Wx = (x_bt @ W.T).view(*x_bt.shape[:2], fn.gw, NH_, D)
        else:
            Wx, R, b = leaves
        all_states, _ = flashrnn(Wx, R, b, function=fn.name, backend=backend, dtype=dtype)
        all_states[0].backward(dy)
        return all_states[0]
    return step


def flashrnn_grads(leaves, x, W):
    """The gradients of a FlashRNN training step's leaves (flashrnn_train_step) in our layouts,
    {"x", "W", "R", "b"}: with (Wx, R, b), those of x [T, B, I] and W follow in float64 from
    Wx's [B, T, G_W, NH, D] (x and W: the values Wx was made of)."""
    *front, R_f, b_f = leaves
    if len(front) == 2:
        grads = {"x": front[0].grad.transpose(0, 1), "W": front[1].grad}
    else:
        dWx = front[0].grad.double()
        B_, T_ = dWx.shape[:2]
        dxw = dWx.transpose(0, 1).reshape(T_ * B_, -1)                   # [T B, G_W H]
        grads = {"x": (dxw @ W.double()).view(T_, B_, -1),
                 "W": dxw.T @ x.double().reshape(T_ * B_, -1)}
    grads.update(zip("Rb", params_from_flashrnn(R_f.grad, b_f.grad)))
    return grads


def flashrnn_h(h):
    """FlashRNN's h for every step [B, T, NH, D] as ours, [T, B, H]."""
    B_, T_, nh, D = h.shape
    return h.reshape(B_, T_, nh * D).transpose(0, 1)


# -- our training modules: built here, run on the GPU machine -------------------------------

def train_model_path(model_dir, D, cell):
    return os.path.join(model_dir, model_name(D, cell.name) + ".pt")


def build_train_models(out_dir, functions=None, dims=HEAD_DIMS):
    """Builds our training modules for the GPU machine: for each function (default all) and
    head dim, an rnn.RNN of its cell (input INPUT, hidden HIDDEN, NH = HIDDEN / D) with float32
    parameters on the meta device (no data: the weights are set there) and its CUDA training
    library for torch.autocast(bfloat16) (TRAIN_KEY), compiled here through the compile cache
    (no GPU needed), saved by torch.save as OUT_DIR/<cell>_d<D>.pt: the pickle carries the
    library and names the cell by reference, so import this file as `flashrnn_compare` to
    build them (the GPU machine imports it under that name to load them). Returns the
    paths."""
    os.makedirs(out_dir, exist_ok=True)
    paths = []
    for fn in functions or FUNCTIONS.values():
        for D in dims:
            NH_ = HIDDEN // D
            t0 = time.perf_counter()
            model = rnn.RNN(fn.cell, INPUT, HIDDEN, sizes={"NH": NH_}, device="meta")
            library = model.build(device=TRAIN_KEY[0], dtype=torch.float32,
                                  matmul_dtype=torch.bfloat16)
            assert model._libraries.get(TRAIN_KEY) == library, model._libraries
            path = train_model_path(out_dir, D, fn.cell)
            torch.save(model, path)
            print(f"flashrnn-build: {os.path.basename(path)}: NH={NH_} D={D}, "
                  f"{os.path.getsize(path) / 2**20:.2f} MiB "
                  f"({time.perf_counter() - t0:.0f} s)", flush=True)
            paths.append(path)
    return paths


def load_train_model(path, device="cuda"):
    """Our training module saved by build_train_models, on `device`, its parameters
    uninitialised (load_state_dict them)."""
    model = torch.load(path, weights_only=False)
    if TRAIN_KEY not in getattr(model, "_library_blobs", {}):
        raise RuntimeError(f"{path} carries no library for {TRAIN_KEY} (libraries for: "
                           f"{sorted(getattr(model, '_library_blobs', {}))})")
    return model.to_empty(device=device)


# -- here: the mapping on the CPU --------------------------------------------------------------

def cpu_check(functions):
    """Tiny check on the CPU of each cell, its weight mapping and FlashRNN's PyTorch backends
    against the float64 reference: ours, the zoo's cell where it is the same function (LSTM,
    GRU) and "vanilla" in float64 (limit 1e-12), "vanilla_fwbw" in float32 (limit 1e-5); then
    the training steps' gradients (cpu_check_training). Returns 0 when all agree."""
    from flashrnn import flashrnn
    T_, B_, NH_, D, I_ = 5, 3, 2, 4, 6
    H_ = NH_ * D
    f64 = torch.float64
    failed = False
    for fn in functions:
        S = len(fn.states)
        w = draw_weights(I_, H_, NH_, seed=1, dtype=f64, bf16_exact=False, fn=fn)
        g = torch.Generator().manual_seed(2)
        x = torch.randn(T_, B_, I_, generator=g, dtype=f64)
        init = [torch.randn(B_, H_, generator=g, dtype=f64) for _ in range(S)]
        if fn.name == "slstm":
            init[2] = init[2].abs() + 1.0                      # n >= 1, as FlashRNN keeps it
        ours = rnn.NumpyRNN(fn.cell, I_, H_, dtype="float64", sizes={"NH": NH_})
        ours.load_state_dict({f"{k}_l0": v.numpy() for k, v in w.items()})
        zoo = rnn.NumpyRNN(fn.zoo, I_, H_, dtype="float64", sizes={"NH": NH_})
        zoo.load_state_dict({f"{k}_l0": v.numpy()
                             for k, v in fn.zoo_weights(w, NH_).items()})
        R_f, b_f = to_flashrnn(w, NH_)
        Wx = flashrnn_wx((x.reshape(T_ * B_, I_) @ w["W"].T).view(T_, B_, fn.gw * H_), NH_,
                         fn.gw)
        for label, states in (("zero initial states", None), ("random initial states", init)):
            ref = reference(x, w, NH_, states, fn)
            hx = None if states is None else tuple(s.numpy()[None] for s in states)
            ys, last = ours(x.numpy(), hx)
            got_ours = (torch.from_numpy(ys), [torch.from_numpy(s) for s in last_states(last)])
            ys, last = zoo(x.numpy(), hx)
            got_zoo = (torch.from_numpy(ys), [torch.from_numpy(s) for s in last_states(last)])
            fr_states = None if states is None else flashrnn_states(states, NH_)
            results = {f"ours ({fn.cell.name}, float64 CPU)": (got_ours, 1e-12)}
            # vanilla: FlashRNN's step loop in torch (any dtype); vanilla_fwbw: its
            # hand-written forward and backward in torch (float32, float16 or bfloat16 only).
            for backend, dt, limit in (("vanilla", f64, 1e-12),
                                       ("vanilla_fwbw", torch.float32, 1e-5)):
                if backend in fn.unsupported:
                    continue
                try:
                    out = flashrnn(Wx.to(dt), R_f.to(dt), b_f.to(dt),
                                   states=None if fr_states is None else fr_states.to(dt),
                                   function=fn.name, backend=backend, dtype=str(dt)[6:])
                    results[f"FlashRNN {backend} ({str(dt)[6:]} CPU)"] = \
                        (from_flashrnn(*out), limit)
                except Exception as e:  # noqa: BLE001 - report and go on
                    print(f"  FlashRNN {backend} on the CPU: FAILED {short(e)}")
                    failed = True
            if fn.zoo_same:
                results[f"rnn.zoo.{fn.zoo.name} (mapped)"] = (got_zoo, 1e-12)
            print(f"cpu-check{'' if fn.name == 'slstm' else ' ' + fn.name}, T={T_} B={B_} "
                  f"NH={NH_} D={D} I={I_}, {label}: max rel err vs the float64 torch reference")
            for name, (got, limit) in results.items():
                e = errs(got, ref)
                failed |= max(e.values()) > limit
                print(f"  {name:36s} {_fmt(e)}  (limit {limit:g})")
            e = errs(got_ours, results.get("FlashRNN vanilla (float64 CPU)", (got_ours,))[0])
            print(f"  {'ours vs FlashRNN vanilla':36s} {_fmt(e)}")
            if not fn.zoo_same:
                e = errs(got_zoo, ref)
                print(f"  {'rnn.zoo.slstm (differs: exp forget)':36s} {_fmt(e)}")
        failed |= cpu_check_training(fn, x, w, init, NH_)
    print(f"cpu-check: {'FAIL' if failed else 'PASS'}")
    return 1 if failed else 0


def cpu_check_training(fn, x, w, init, NH_):
    """The training step of `fn` on the CPU against float64 autograd through the reference:
    our rnn.RNN of the cell (float64) from zero initial states with the GPU's loss,
    sum(h * dh), and from the random initial states `init` with the last states in the loss
    too (limit 1e-10); FlashRNN's training steps with the GPU's loss, their gradients mapped
    to our layouts: "vanilla" in float64 (1e-10) and "vanilla_fwbw" in float32 (1e-5), each
    from Wx and with the projection inside. Returns True when one differs."""
    T_, B_, I_ = x.shape
    H_ = w["W"].shape[0] // fn.gw
    D = H_ // NH_
    g = torch.Generator().manual_seed(3)
    dy = torch.randn(T_, B_, H_, generator=g, dtype=x.dtype)
    dlast = [torch.randn(B_, H_, generator=g, dtype=x.dtype) for _ in fn.states]
    model = rnn.RNN(fn.cell, I_, H_, sizes={"NH": NH_}, dtype=x.dtype)
    model.load_state_dict({f"{k}_l0": v for k, v in w.items()})
    failed = False
    print(f"cpu-check{'' if fn.name == 'slstm' else ' ' + fn.name} training, T={T_} B={B_} "
          f"NH={NH_} D={D} I={I_}: ||g - ref|| / ||ref|| vs float64 autograd of the reference")
    ref = reference_grads(x, w, NH_, dy, fn)
    results = {"ours rnn.RNN (float64, from zeros)":
               (ours_train_grads(model, x, dy, list(w)), ref, 1e-10),
               "ours rnn.RNN (float64, random initial states, last states in the loss)":
               (ours_train_grads(model, x, dy, list(w), init, dlast),
                reference_grads(x, w, NH_, dy, fn, init, dlast), 1e-10)}
    dy_fr = dy.transpose(0, 1).reshape(B_, T_, NH_, D)
    R_f, b_f = to_flashrnn(w, NH_)
    x_bt = x.transpose(0, 1).contiguous()
    for backend, dt, limit in (("vanilla", torch.float64, 1e-10),
                               ("vanilla_fwbw", torch.float32, 1e-5)):
        if backend in fn.unsupported:
            continue
        Wx = flashrnn_wx((x.reshape(T_ * B_, I_) @ w["W"].T).view(T_, B_, -1), NH_, fn.gw)
        for variant, inputs in (("train", (Wx, R_f, b_f)),
                                ("train+proj", (x_bt, w["W"], R_f, b_f))):
            name = f"FlashRNN {backend} {variant} ({str(dt)[6:]})"
            leaves = [t.to(dt).detach().requires_grad_() for t in inputs]
            try:
                h = flashrnn_train_step(fn, backend, str(dt)[6:], leaves, dy_fr.to(dt))()
                results[name] = ((flashrnn_h(h).detach(), flashrnn_grads(leaves, x, w["W"])),
                                 ref, limit)
            except Exception as e:  # noqa: BLE001 - report and go on
                print(f"  {name}: FAILED {short(e)}")
                failed = True
    for name, (got, ref_, limit) in results.items():
        e = grad_errs(*got, ref_)
        failed |= max(e.values()) > limit
        print(f"  {name}\n    {_fmt(e)}  (limit {limit:g})")
    return failed


# -- on the GPU --------------------------------------------------------------------------------

def no_load_jitter():
    """FlashRNN's extension loader (flashrnn/flashrnn/cuda_init.py, load) sleeps a random 0 to
    10 s before every build or load, against concurrent builds of one extension; each
    extension here is built by one process, so the sleep only costs time: skipped."""
    import importlib
    import types
    cuda_init = importlib.import_module("flashrnn.flashrnn.cuda_init")
    cuda_init.time = types.SimpleNamespace(sleep=lambda seconds: None)


def time_calls(fn, warmup, repeats):
    """ms of `repeats` calls of fn after `warmup` calls: CUDA events around each call, each
    synchronised."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    from cuda_events import event_times  # torch: on the GPU machine only
    return event_times(fn, repeats)


def short(e):
    s = f"{type(e).__name__}: {e}".strip().replace("\n", " | ")
    return s if len(s) <= 400 else s[:400] + " ..."


def run_dim(D, args, skip, fn=None):
    """Checks and times one function (default the sLSTM) at one head dim; returns its JSON
    record. `skip` maps backends that failed to build at an earlier head dim (or in the
    build phase) to that failure."""
    from flashrnn import flashrnn
    no_load_jitter()
    fn = fn or FUNCTIONS["slstm"]
    NH_ = HIDDEN // D
    dev = DEVICE
    rec = {"function": fn.name, "D": D, "NH": NH_, "T": T, "B": B, "H": HIDDEN, "I": INPUT,
           "errors": {}, "grad_errors": {}, "failures": {}, "ms": {}, "samples_ms": {}}
    w = draw_weights(INPUT, HIDDEN, NH_, seed=SEED + D, dtype=torch.float32, fn=fn)
    g = torch.Generator().manual_seed(SEED)
    x32 = torch.randn(T, B, INPUT, generator=g).to(torch.bfloat16).float()
    dy = torch.randn(B, T, NH_, D, generator=g).to(torch.bfloat16)       # h's gradient
    w = {k: v.to(dev) for k, v in w.items()}
    x32, dy = x32.to(dev), dy.to(dev)
    dy_t = flashrnn_h(dy).contiguous()                                    # ours: [T, B, H]

    # Ours: the saved model with these weights (rnn.load also loads the runtime that our
    # training module's library links).
    model = rnn.load(os.path.join(args.model_dir, model_name(D, fn.cell.name)))
    assert model.device.startswith("cuda") and model._matmul_type, (model.device,)
    model.load_state_dict({f"{k}_l0": v for k, v in w.items()})

    # FlashRNN's inputs: bf16, its layouts.
    W16 = w["W"].to(torch.bfloat16)
    R16, b16 = (t.to(torch.bfloat16) for t in to_flashrnn(w, NH_))
    x16_bt = x32.to(torch.bfloat16).transpose(0, 1).contiguous()          # [B, T, I]
    Wx16 = (x16_bt @ W16.T).view(B, T, fn.gw, NH_, D)                     # [B, T, G, NH, D]

    # Correctness against the float64 reference on the GPU.
    w64 = {k: v.double() for k, v in w.items()}
    ref = reference(x32.double(), w64, NH_, fn=fn)
    with torch.no_grad():
        ys, last = model(x32)
        rec["errors"]["ours"] = errs((ys, last_states(last)), ref)
    ours_out = (ys, last_states(last))
    states = ", ".join(fn.states)
    print(f"D={D:4d} NH={NH_:3d}: max rel err vs float64 reference (h over all steps; "
          f"last {states})")
    print(f"  {'ours':24s} {_fmt(rec['errors']['ours'])}")

    def fr_call(backend, Wx):
        return flashrnn(Wx, R16, b16, function=fn.name, backend=backend, dtype="bfloat16")

    timed = {"ours": lambda: model(x32)}
    zoo_dir = os.path.join(args.model_dir, model_name(D, fn.zoo.name))
    if os.path.isdir(zoo_dir):  # the zoo's cell: the same function (LSTM, GRU) or its time only
        zoo = rnn.load(zoo_dir)
        zoo.load_state_dict({f"{k}_l0": v for k, v in fn.zoo_weights(w, NH_).items()})
        if fn.zoo_same:
            with torch.no_grad():
                zys, zlast = zoo(x32)
                rec["errors"]["ours zoo"] = errs((zys, last_states(zlast)), ref)
            print(f"  {'ours zoo':24s} {_fmt(rec['errors']['ours zoo'])}")
            del zys, zlast
        timed["ours zoo"] = lambda: zoo(x32)
    for backend in args.backends:
        if backend in fn.unsupported:
            rec.setdefault("unsupported", {})[backend] = fn.unsupported[backend]
            continue
        if backend in skip:
            rec["failures"][backend] = f"skipped (failed to build at D={skip[backend][0]})"
            continue
        try:
            t0 = time.perf_counter()
            with torch.no_grad():
                out = fr_call(backend, Wx16)
                torch.cuda.synchronize()
            rec.setdefault("first_call_s", {})[backend] = round(time.perf_counter() - t0, 1)
            got = from_flashrnn(*out)
            rec["errors"][backend] = errs(got, ref)
            rec["errors"][f"ours vs {backend}"] = errs(ours_out, got)
            print(f"  FlashRNN {backend:15s} {_fmt(rec['errors'][backend])}")
            del out, got
        except Exception as e:  # noqa: BLE001 - report the backend and go on
            rec["failures"][backend] = short(e)
            print(f"  FlashRNN {backend}: FAILED {short(e)}")
            if "Error building extension" in str(e):
                skip[backend] = (D, short(e))
            continue
        timed[backend] = (lambda be=backend: fr_call(be, Wx16))
        timed[f"{backend}+proj"] = (
            lambda be=backend: fr_call(be, (x16_bt @ W16.T).view(B, T, fn.gw, NH_, D)))

    # Training steps: ours (the whole layer) and FlashRNN's (its recurrence from Wx, and with
    # the projection), each checked against float64 autograd through the reference.
    train = {}
    if args.train:
        ref_grads = reference_grads(x32.double(), w64, NH_, dy_t.double(), fn)
        print("  training: ||g - ref|| / ||ref|| vs float64 autograd (h; gradients of x, W, R, "
              "b)")
        try:
            tm = load_train_model(train_model_path(args.train_model_dir, D, fn.cell), dev)
            tm.load_state_dict({f"{k}_l0": v for k, v in w.items()})
            e = grad_errs(*ours_train_grads(tm, x32, dy_t, list(w), autocast=torch.bfloat16),
                          ref_grads)
            rec["grad_errors"]["ours train"] = e
            worst = max(e, key=e.get)
            ok = e[worst] <= GRAD_LIMIT
            print(f"  {'ours train':33s} {_fmt(e)}  {'agree' if ok else 'FAILED'}")
            if not ok:
                rec["failures"]["ours train"] = (f"gradient of {worst} differs from the float64 "
                                                 f"reference: {e[worst]:.1e} > {GRAD_LIMIT:g} "
                                                 "(timed all the same)")
            xt = x32.detach().clone().requires_grad_()

            def ours_step():
                xt.grad = None
                tm.zero_grad(set_to_none=True)
                with torch.autocast(xt.device.type, dtype=torch.bfloat16):
                    ys, _ = tm(xt)
                ys.backward(dy_t)
            train["ours train"] = ours_step
        except Exception as e:  # noqa: BLE001 - report and go on
            traceback.print_exc()
            rec["failures"]["ours train"] = short(e)
            print(f"  ours train: FAILED {short(e)}")
    for backend in (args.train_backends if args.train else ()):
        if backend in fn.unsupported:
            rec.setdefault("unsupported", {})[f"{backend} train"] = fn.unsupported[backend]
            continue
        if backend in skip or backend in rec["failures"]:
            continue
        for variant, inputs, names in (("train", (Wx16, R16, b16), ("Wx", "R", "b")),
                                       ("train+proj", (x16_bt, W16, R16, b16),
                                        ("x", "W", "R", "b"))):
            name = f"{backend} {variant}"
            leaves = [t.detach().clone().requires_grad_() for t in inputs]
            step = flashrnn_train_step(fn, backend, "bfloat16", leaves, dy)
            try:
                h = step()
                torch.cuda.synchronize()
                bad = [n for n, t in zip(names, leaves)
                       if t.grad is None or not torch.isfinite(t.grad).all()]
                if bad:
                    raise RuntimeError(f"gradients of {', '.join(bad)} missing or not finite")
                e = grad_errs(flashrnn_h(h), flashrnn_grads(leaves, x32, w["W"]), ref_grads)
                rec["grad_errors"][name] = e
                print(f"  {'FlashRNN ' + name:33s} {_fmt(e)}")
                del h
            except Exception as e:  # noqa: BLE001
                rec["failures"][name] = short(e)
                print(f"  FlashRNN {name}: FAILED {short(e)}")
                continue
            train[name] = step

    # Timing: every implementation in turn, `rounds` rounds.
    runners = dict(timed)
    runners.update(train)
    samples = {k: [] for k in runners}
    dead = set()
    for r in range(args.rounds):
        for name, f in runners.items():
            if name in dead:
                continue
            try:
                grad = torch.enable_grad() if name in train else torch.no_grad()
                with grad:
                    samples[name] += time_calls(f, args.warmup, args.repeats)
            except Exception as e:  # noqa: BLE001
                rec["failures"][name] = f"while timing: {short(e)}"
                dead.add(name)
    for name, s in samples.items():
        if s and name not in dead:
            rec["ms"][name] = statistics.median(s)
            rec["samples_ms"][name] = [round(v, 4) for v in s]
    if args.profile:
        rec["profile"] = {f"{name}{suffix}": kernel_breakdown(f, graphs)
                          for name, f in train.items() if name not in dead
                          for suffix, graphs in (("", True), (" (no graphs)", False))
                          if name == "ours train" or graphs}
        for name, p in rec["profile"].items():
            print(f"  {name}, one step: kernels {p['busy_us']:.1f} us of a "
                  f"{p['span_us']:.1f} us span; longest kernels (us, launches):")
            for kernel, us, count in p["kernels"][:args.profile]:
                print(f"    {us:9.1f} {count:6d}  {kernel}")
            for us, before, after in p["gaps"][:3]:
                print(f"    idle {us:7.1f} us between {before} and {after}")
            print(f"    the host returns after {p['host_us']:.1f} us (median of 5 unsynchronised "
                  "calls); longest CPU ops (self us, calls):")
            for op, us, count in p["cpu_ops"][:5]:
                print(f"    {us:9.1f} {count:6d}  {op}")
    del model, timed, runners
    torch.cuda.empty_cache()
    return rec


def table(records, backends, train_backends, fn=None, title=False):
    """The summary of one function (default the sLSTM): forward ms of ours and each FlashRNN
    backend (recurrence alone and with the projection) and the best FlashRNN over ours; the
    same for the training steps, and their gradients' errors. `title`: a first line naming
    the function."""
    fn = fn or FUNCTIONS["slstm"]
    backends = [be for be in backends if be not in fn.unsupported]
    train_backends = [be for be in train_backends if be not in fn.unsupported]
    cols = ["ours", "ours zoo"]
    for be in backends:
        cols += [be, f"{be}+proj"]
    tcols = ["ours train"] + [f"{be} {v}" for be in train_backends
                              for v in ("train", "train+proj")]
    lines = [f"== {fn.title}: FlashRNN function \"{fn.name}\", ours = {fn.cell.name} =="] \
        if title else []
    lines += [f"Forward ms (T={T}, B={B}, H={HIDDEN}, I={INPUT}, bf16).",
              "ours = the whole layer (projection inside), FlashRNN's equations; ours zoo = "
              f"{fn.zoo_note};",
              "FlashRNN <b> = its recurrence, Wx precomputed; <b>+proj = with the x W^T GEMM; "
              "'-' = failed or not run.",
              "ratio = best FlashRNN / ours (>1: ours faster): rec = its recurrence alone, "
              "+proj = like for like."]
    width = {c: max(len(c), 8) for c in cols}
    head = f"{'D':>4} {'NH':>3} " + " ".join(f"{c:>{width[c]}}" for c in cols) + \
        f" {'ratio rec':>9} {'ratio +proj':>11}"
    lines += [head, "-" * len(head)]
    for rec in records:
        ms = rec["ms"]
        cells = " ".join(f"{ms[c]:{width[c]}.3f}" if c in ms else f"{'-':>{width[c]}}"
                         for c in cols)
        rec_best = min((ms[be] for be in backends if be in ms), default=None)
        proj_best = min((ms[f"{be}+proj"] for be in backends if f"{be}+proj" in ms),
                        default=None)
        ours = ms.get("ours")
        r1 = f"{rec_best / ours:9.2f}" if ours and rec_best else f"{'-':>9}"
        r2 = f"{proj_best / ours:11.2f}" if ours and proj_best else f"{'-':>11}"
        rec["ratio_best_flashrnn_over_ours"] = {
            "recurrence": rec_best / ours if ours and rec_best else None,
            "with_projection": proj_best / ours if ours and proj_best else None}
        lines.append(f"{rec['D']:>4} {rec['NH']:>3} {cells} {r1} {r2}")
    if any(c in rec["ms"] for rec in records for c in tcols):
        lines += ["", f"Training step ms (forward + backward, T={T}, B={B}, H={HIDDEN}, "
                  f"I={INPUT}, bf16 matmuls, loss sum(h dh)).",
                  "ours train = the whole layer (projection inside; x, W, R, b require grad; "
                  "torch.autocast bf16, float32 parameters);",
                  "FlashRNN <b> train = its recurrence (Wx, R, b require grad); <b> train+proj = "
                  "with the x W^T GEMM (x, W, R, b in bf16 require grad).",
                  "ratio = best FlashRNN / ours train (>1: ours faster): rec = its recurrence "
                  "alone, +proj = like for like."]
        width = {c: max(len(c), 8) for c in tcols}
        head = f"{'D':>4} {'NH':>3} " + " ".join(f"{c:>{width[c]}}" for c in tcols) + \
            f" {'ratio rec':>9} {'ratio +proj':>11}"
        lines += [head, "-" * len(head)]
        for rec in records:
            ms = rec["ms"]
            cells = " ".join(f"{ms[c]:{width[c]}.3f}" if c in ms else f"{'-':>{width[c]}}"
                             for c in tcols)
            best = [min((ms[f"{be} {v}"] for be in train_backends if f"{be} {v}" in ms),
                        default=None) for v in ("train", "train+proj")]
            ours = ms.get("ours train")
            ratios = [b / ours if ours and b else None for b in best]
            rec["ratio_best_flashrnn_train_over_ours"] = dict(
                zip(("recurrence", "with_projection"), ratios))
            lines.append(f"{rec['D']:>4} {rec['NH']:>3} {cells} " + " ".join(
                f"{r:{n}.2f}" if r else f"{'-':>{n}}" for r, n in zip(ratios, (9, 11))))
    lines += ["", "Max rel err vs the float64 reference (h over all steps / worst last state); "
              f"agree = within {BF16_LIMIT:g}:"]
    for rec in records:
        for name, e in rec["errors"].items():
            worst = max(e.values())
            others = [v for k, v in e.items() if k != "h"]
            lines.append(f"  D={rec['D']:<4} {name:28s} h {e['h']:.1e}  states "
                         f"{max(others):.1e}  "
                         f"{'agree' if worst <= BF16_LIMIT else 'DIFFER'}")
    if any(rec.get("grad_errors") for rec in records):
        lines += ["", "Training: ||g - ref|| / ||ref|| vs float64 autograd of the reference (h, "
                  f"and the gradients of x, W, R, b); agree = within {GRAD_LIMIT:g}:"]
        for rec in records:
            for name, e in rec.get("grad_errors", {}).items():
                ok = max(e.values()) <= GRAD_LIMIT
                verdict = "agree" if ok else "FAILED" if name == "ours train" else "DIFFER"
                lines.append(f"  D={rec['D']:<4} {name:28s} {_fmt(e)}  {verdict}")
    failures = [(rec["D"], k, v) for rec in records for k, v in rec["failures"].items()]
    if failures:
        lines += ["", "Failures:"] + [f"  D={d:<4} {k}: {v}" for d, k, v in failures]
    unsupported = {}
    for rec in records:
        unsupported.update(rec.get("unsupported", {}))
    if unsupported:
        lines += ["", "Not run:"] + [f"  {k}: {v}" for k, v in unsupported.items()]
    return "\n".join(lines)


def flashrnn_version():
    import importlib.metadata
    try:
        return importlib.metadata.version("flashrnn")
    except importlib.metadata.PackageNotFoundError:
        return "?"


def write_json(args, records, build=None):
    config = {"T": T, "B": B, "H": HIDDEN, "I": INPUT, "dtype": "bfloat16",
              "grad_limit": GRAD_LIMIT,
              "rounds": args.rounds, "repeats": args.repeats, "warmup": args.warmup,
              "device": torch.cuda.get_device_name(0), "torch": torch.__version__,
              "cuda": torch.version.cuda, "flashrnn": flashrnn_version(),
              "functions": [fn.name for fn in args.functions]}
    if build:
        config["cuda_build_s"] = build
    with open(args.out_json, "w") as f:
        json.dump({"config": config, "records": records}, f, indent=1)


def run_one(args):
    """--one D: one function at one head dim in this process; its record (with the build
    failures to skip later, "skip") to OUT_JSON."""
    torch.backends.cuda.matmul.allow_tf32 = False
    fn = args.functions[0]
    skip = {k: tuple(v) for k, v in json.loads(args.skip).items()}
    try:
        rec = run_dim(args.one, args, skip, fn)
    except Exception as e:  # noqa: BLE001 - ours or the reference failed at this size
        traceback.print_exc()
        rec = {"function": fn.name, "D": args.one, "NH": HIDDEN // args.one, "errors": {},
               "ms": {}, "failures": {"ours/reference": short(e)}}
    rec["skip"] = skip
    with open(args.out_json, "w") as f:
        json.dump(rec, f)
    return 0


def build_one(args):
    """--build D: FlashRNN's "cuda" extension of one function at one head dim (the one
    run_dim's calls load: B = 16, bf16), built and loaded by one call on a short sequence;
    {"s": seconds} or {"error": ...} to OUT_JSON."""
    from flashrnn import flashrnn
    no_load_jitter()
    fn, D = args.functions[0], args.build
    NH_ = HIDDEN // D
    kw = {"dtype": torch.bfloat16, "device": "cuda"}
    t0 = time.perf_counter()
    try:
        with torch.no_grad():
            flashrnn(torch.zeros(B, 2, fn.gw, NH_, D, **kw), torch.zeros(fn.gr, NH_, D, D, **kw),
                     torch.zeros(fn.gb, NH_, D, **kw), function=fn.name, backend="cuda",
                     dtype="bfloat16")
            torch.cuda.synchronize()
        res = {"s": round(time.perf_counter() - t0, 1)}
    except Exception as e:  # noqa: BLE001
        traceback.print_exc()
        res = {"error": short(e), "build": "Error building extension" in str(e)}
    with open(args.out_json, "w") as f:
        json.dump(res, f)
    return 0


def build_all(args, dims):
    """Builds FlashRNN's "cuda" extensions of every (function, D) in `--build-jobs` parallel
    processes (each build's output printed when it ends). Returns {function: {D: result}}."""
    jobs = [(fn.name, D) for fn in args.functions for D in dims]
    n = max(1, min(args.build_jobs, len(jobs)))
    cores = int(os.environ.get("MAX_JOBS") or len(os.sched_getaffinity(0)))
    env = dict(os.environ, MAX_JOBS=str(max(2, cores // n)))
    tmp = tempfile.mkdtemp(prefix="flashrnn-build-")
    print(f"Building FlashRNN's cuda extensions: {len(jobs)} in {n} processes "
          f"(MAX_JOBS={env['MAX_JOBS']} each)", flush=True)
    t0 = time.perf_counter()
    results, running = {}, []
    while jobs or running:
        while jobs and len(running) < n:
            name, D = jobs.pop(0)
            stem = os.path.join(tmp, f"{name}_d{D}")
            log_f = open(stem + ".log", "w")
            cmd = [sys.executable, "-u", os.path.abspath(__file__), args.model_dir,
                   stem + ".json", "--functions", name, "--build", str(D)]
            running.append((name, D, stem, log_f,
                            subprocess.Popen(cmd, stdout=log_f, stderr=subprocess.STDOUT,
                                             env=env)))
        time.sleep(0.5)
        for job in list(running):
            name, D, stem, log_f, proc = job
            if proc.poll() is None:
                continue
            running.remove(job)
            log_f.close()
            try:
                with open(stem + ".json") as f:
                    res = json.load(f)
            except (OSError, ValueError):
                res = {"error": f"build process exited with status {proc.returncode}"}
            with open(stem + ".log", errors="replace") as f:
                sys.stdout.write(f.read())
            print(f"build cuda {name} D={D}: "
                  + (f"{res['s']} s" if "s" in res else f"FAILED {res['error']}"), flush=True)
            results.setdefault(name, {})[D] = res
            for p in (stem + ".json", stem + ".log"):
                if os.path.exists(p):
                    os.remove(p)
    os.rmdir(tmp)
    print(f"Built in {time.perf_counter() - t0:.0f} s", flush=True)
    return results


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model_dir", nargs="?")
    ap.add_argument("out_json", nargs="?")
    ap.add_argument("--cpu-check", action="store_true", help="the tiny CPU check, here")
    ap.add_argument("--functions", default=",".join(FUNCTIONS),
                    help="FlashRNN functions (default %(default)s)")
    ap.add_argument("--dims", default=",".join(map(str, HEAD_DIMS)),
                    help="head dims D (default %(default)s)")
    ap.add_argument("--backends", default=",".join(BACKENDS),
                    help="FlashRNN forward backends (default %(default)s)")
    ap.add_argument("--train-backends", default=",".join(TRAIN_BACKENDS),
                    help="FlashRNN training-step backends (default %(default)s)")
    ap.add_argument("--train-model-dir",
                    help="our training modules <cell>_d<D>.pt (default "
                         "MODEL_DIR/../train-models)")
    ap.add_argument("--no-train", dest="train", action="store_false",
                    help="no training steps (ours and FlashRNN's)")
    ap.add_argument("--profile", type=int, default=0, metavar="N",
                    help="after the timings, the N longest GPU kernels of one training step "
                         "of each (torch.profiler; all of them in the JSON)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--build-jobs", type=int, default=8,
                    help="processes building FlashRNN's cuda extensions before the runs "
                         "(0: each run builds its own; default %(default)s)")
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--build", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--skip", default="{}", help=argparse.SUPPRESS)
    args = ap.parse_args()
    names = [f for f in args.functions.split(",") if f]
    unknown = [f for f in names if f not in FUNCTIONS]
    if unknown or not names:
        ap.error(f"--functions: {', '.join(unknown) or 'none given'}; known: "
                 f"{', '.join(FUNCTIONS)}")
    args.functions = [FUNCTIONS[f] for f in names]
    if args.cpu_check:
        return cpu_check(args.functions)
    if not args.model_dir or not args.out_json:
        ap.error("MODEL_DIR and OUT_JSON are needed (or --cpu-check)")
    args.train_model_dir = args.train_model_dir or os.path.join(
        os.path.dirname(os.path.abspath(args.model_dir)), "train-models")
    args.backends = [b for b in args.backends.split(",") if b]
    args.train_backends = [b for b in args.train_backends.split(",") if b]
    if args.build:
        return build_one(args)
    if args.one:
        return run_one(args)
    import flashrnn as _fr
    print("device:", torch.cuda.get_device_name(0), "| torch", torch.__version__,
          "| CUDA", torch.version.cuda, "| flashrnn", flashrnn_version(),
          os.path.dirname(_fr.__file__), flush=True)
    dims = [int(d) for d in args.dims.split(",")]
    uses_cuda = "cuda" in args.backends or (args.train and "cuda" in args.train_backends)
    built = build_all(args, dims) if uses_cuda and args.build_jobs > 0 else {}
    # Each (function, head dim) runs in a process of its own: a backend that leaves the CUDA
    # context broken (an illegal address is sticky) costs that case only.
    records, tables = [], []
    part = os.path.splitext(args.out_json)[0] + ".part.json"
    titled = [fn.name for fn in args.functions] != ["slstm"]
    for fn in args.functions:
        if titled:
            print(f"\n== {fn.title}: FlashRNN function \"{fn.name}\", ours = {fn.cell.name}",
                  flush=True)
        fn_records, skip = [], {}
        for D in dims:
            t0 = time.perf_counter()
            res = built.get(fn.name, {}).get(D, {})
            one_skip = dict(skip)
            if res.get("build"):  # its cuda extension failed to build
                one_skip["cuda"] = (D, res["error"])
            cmd = [sys.executable, "-u", os.path.abspath(__file__), args.model_dir, part,
                   "--functions", fn.name, "--one", str(D), "--skip", json.dumps(one_skip),
                   "--backends", ",".join(args.backends),
                   "--train-backends", ",".join(args.train_backends),
                   "--train-model-dir", args.train_model_dir,
                   "--rounds", str(args.rounds), "--repeats", str(args.repeats),
                   "--warmup", str(args.warmup), "--profile", str(args.profile)] + \
                ([] if args.train else ["--no-train"])
            if os.path.exists(part):
                os.remove(part)
            rc = subprocess.call(cmd)
            if rc == 0 and os.path.exists(part):
                with open(part) as f:
                    rec = json.load(f)
                new_skip = {k: tuple(v) for k, v in rec.pop("skip").items()}
                if res.get("build"):  # the build phase's failure at D is D's own
                    if "cuda" in skip:
                        new_skip["cuda"] = skip["cuda"]
                    else:
                        new_skip.pop("cuda", None)
                skip = new_skip
            else:
                rec = {"function": fn.name, "D": D, "NH": HIDDEN // D, "errors": {}, "ms": {},
                       "failures": {"process": f"exited with status {rc}"}}
            rec["wall_s"] = round(time.perf_counter() - t0, 1)
            print(f"  ({fn.name} D={D}: {rec['wall_s']} s)", flush=True)
            fn_records.append(rec)
            records.append(rec)
            write_json(args, records, built)  # after every case: a later failure keeps these
        tables.append(table(fn_records, args.backends,
                            args.train_backends if args.train else [], fn, titled))
        with open(os.path.splitext(args.out_json)[0] + ".txt", "w") as f:
            f.write("\n\n".join(tables) + "\n")  # after every function, as the JSON
    if os.path.exists(part):
        os.remove(part)
    print()
    print("\n\n".join(tables))
    write_json(args, records, built)  # again, with the ratios
    return 0


if __name__ == "__main__":
    sys.exit(main())
