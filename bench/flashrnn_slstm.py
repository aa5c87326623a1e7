#!/usr/bin/env python3
"""Our compiled sLSTM against FlashRNN's (the `flashrnn` package, NX-AI/flashrnn) on the GPU,
at FlashRNN's head-dimension grid: T = 1024, B = 16, H = NH * D = 768, D in 16, 32, 64, 128,
256, 768 (HEAD_DIMS), input size I = 768, bf16 matmuls.

FlashRNN's sLSTM is not the zoo's (rnn.zoo.slstm): its forget gate is a sigmoid taken in log
space (log f = logsigmoid(f~), not f~), the first step (n == 0) sets the stabiliser to m = i~,
and the normaliser is kept at n >= 1. `slstm_flashrnn` below is that cell in the DSL, so the
same weights give the same outputs (and the same c, n, m states), the pre-activations as the
zoo's: x W^T + b + headwise(h, R), gates i, f, z, o.

    python3 bench/flashrnn_slstm.py --cpu-check
        (here, with torch and flashrnn importable) the cell and the weight mapping at a tiny
        size (T=5, B=3, NH=2, D=4) on the CPU: our cell (rnn.NumpyRNN, float64), FlashRNN's
        PyTorch backends ("vanilla" in float64, "vanilla_fwbw" in float32) and the torch
        reference below, from zero and from random initial states; also the zoo's sLSTM,
        which differs. bench/flashrnn-build.sh runs it.
    python3 bench/flashrnn_slstm.py MODEL_DIR OUT_JSON [--dims 16,64] [--backends cuda,...]
        (the GPU machine; bench/flashrnn-run.sh sets the paths) for each head dim D: loads our
        model MODEL_DIR/slstm_flashrnn_d<D> (built by bench/flashrnn-build.sh; its weights are
        replaced here), draws deterministic bf16-exact weights and input, checks ours and
        every FlashRNN backend against a float64 torch reference of the same equations on
        the GPU, and times the forward pass (and FlashRNN's training step).

Inputs given to both sides: x [T, B, I] (ours reads it in float32, FlashRNN's projection in
bf16: the same values), W [4H, I], R [NH, 4D, D] (each head's [out, in] matrix, rows i, f, z,
o), b [4H], all rounded to bf16 so that both sides see exactly the same numbers. FlashRNN
takes the input projection precomputed: Wx = x W^T as [B, T, 4, NH, D] (gate-major, then
head, as our pre-activations), R as [4, NH, D_out, D_in], b as [4, NH, D]; it returns every
state at every step, [4 (h, c, n, m), B, T, NH, D], and the last ones.

Timings (CUDA events around each call, each call synchronised, warm-up first, `--repeats`
calls per implementation in each of `--rounds` alternating rounds, median over all calls):
  * ours: the whole layer, x -> h for all steps (projection GEMM inside); "ours zoo": the
    zoo's sLSTM (rnn.zoo.slstm, MODEL_DIR/slstm_d<D>) with the same weights, timed for
    reference only (its equations differ);
  * FlashRNN "<backend>": its recurrence alone, Wx precomputed (its API; its internal
    re-layout of Wx, R and b included);
  * FlashRNN "<backend>+proj": the same with the projection x W^T (a torch bf16 GEMM on x
    [B, T, I]) in the timed call, the like-for-like comparison with ours;
  * FlashRNN "<backend> train": forward and backward of its recurrence (Wx, R and b require
    grad; a fixed random gradient of h). Ours: not measured here (the saved models are
    inference libraries).
A backend that fails to build or run is reported with its error and skipped (a build
failure of a backend skips it for the later head dims too). Each head dim runs in a process
of its own, so that a backend that breaks the CUDA context costs that head dim only. The
table is printed and written to OUT_JSON's .txt, the results (every timed call included) to
OUT_JSON.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
import rnn  # noqa: E402
from rnn import (H, I, exp, headwise, log, maximum, minimum, param, sigmoid,  # noqa: E402
                 split, tanh)
from rnn.zoo import NH, _head_size  # noqa: E402

try:
    import torch
except ImportError:  # building the models needs only the cell
    torch = None

T, B, HIDDEN, INPUT = 1024, 16, 768, 768
HEAD_DIMS = (16, 32, 64, 128, 256, 768)          # FlashRNN's head-dim benchmark grid
BACKENDS = ("cuda", "cuda_fused", "triton_fused", "vanilla")
TRAIN_BACKENDS = ("cuda", "cuda_fused", "triton_fused", "vanilla_fwbw")
SEED = 20241212
BF16_LIMIT = 5e-2    # max |a - ref| / max |ref| over T = 1024 steps with bf16 operands


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


def model_name(D, cell="slstm_flashrnn"):
    """The saved model's directory: slstm_flashrnn_d<D>, or slstm_d<D> for the zoo's cell."""
    return f"{cell}_d{D}"


# -- weights, layouts, reference ---------------------------------------------------------------

def draw_weights(I_, H_, NH_, seed, dtype, bf16_exact=True):
    """Deterministic (CPU generator) W [4H, I], R [NH, 4D, D], b [4H]: PyTorch-style uniform
    in +-1/sqrt(fan in) (I for W, D for R), b in +-1; rounded to bf16 values if bf16_exact."""
    D = H_ // NH_
    g = torch.Generator().manual_seed(seed)

    def u(shape, k):
        t = (torch.rand(shape, generator=g, dtype=torch.float64) * 2 - 1) * k
        return t.to(torch.bfloat16).to(dtype) if bf16_exact else t.to(dtype)
    return {"W": u((4 * H_, I_), I_ ** -0.5), "R": u((NH_, 4 * D, D), D ** -0.5),
            "b": u((4 * H_,), 1.0)}


def to_flashrnn(w, NH_):
    """Our R [NH, 4D, D] and b [4H] in FlashRNN's default layouts: R [4, NH, D_out, D_in]
    ("GHDP"), b [4, NH, D] ("GHD")."""
    R = w["R"]
    nh, rows, D = R.shape
    assert nh == NH_ and rows == 4 * D
    return R.view(NH_, 4, D, D).permute(1, 0, 2, 3).contiguous(), w["b"].view(4, NH_, D)


def flashrnn_wx(xw, NH_):
    """x W^T [T, B, 4H] (gate-major, head-major within a gate) as FlashRNN's Wx
    [B, T, 4, NH, D]."""
    T_, B_, G = xw.shape
    return xw.view(T_, B_, 4, NH_, G // (4 * NH_)).transpose(0, 1).contiguous()


def flashrnn_states(states, NH_):
    """Our states (h, c, n, m), each [B, H], as FlashRNN's initial states [4, B, 1, NH, D]."""
    s = torch.stack(states)
    return s.view(4, s.shape[1], 1, NH_, s.shape[2] // NH_)


def from_flashrnn(all_states, last_states):
    """FlashRNN's outputs [4, B, T, NH, D] and [4, B, 1, NH, D] as ours: h for every step
    [T, B, H], and the last (h, c, n, m), each [B, H]."""
    S, B_, T_, nh, D = all_states.shape
    ys = all_states[0].reshape(B_, T_, nh * D).transpose(0, 1)
    return ys, [last_states[k].reshape(B_, nh * D) for k in range(4)]


def reference(x, w, NH_, states=None):
    """The equations of slstm_flashrnn, stepped in torch in the dtype of x (float64 for the
    reference), independent of both implementations. Returns h for every step [T, B, H] and
    the last (h, c, n, m)."""
    T_, B_, _ = x.shape
    W, R, b = w["W"], w["R"], w["b"]
    H_ = W.shape[0] // 4
    D = H_ // NH_
    if states is None:
        states = [torch.zeros(B_, H_, dtype=x.dtype, device=x.device) for _ in range(4)]
    h, c, n, m = states
    xw = (x.reshape(T_ * B_, -1) @ W.T).view(T_, B_, 4 * H_) + b
    ys = []
    for t in range(T_):
        rh = torch.einsum("bhk,hok->bho", h.view(B_, NH_, D), R)      # [B, NH, 4D]
        rh = rh.view(B_, NH_, 4, D).transpose(1, 2).reshape(B_, 4 * H_)
        pi, pf, pz, po = (xw[t] + rh).chunk(4, dim=-1)
        logf_m = torch.nn.functional.logsigmoid(pf) + m
        m = torch.where(n == 0, pi, torch.maximum(pi, logf_m))
        i = torch.exp(pi - m).clamp(max=1.0)
        f = torch.exp(logf_m - m).clamp(max=1.0)
        c = f * c + i * torch.tanh(pz)
        n = torch.clamp(f * n + i, min=1.0)
        h = torch.sigmoid(po) * (c / n)
        ys.append(h)
    return torch.stack(ys), [h, c, n, m]


def rel_err(a, ref):
    a, ref = a.detach().double(), ref.detach().double()
    assert a.shape == ref.shape, (a.shape, ref.shape)
    return float((a - ref).abs().max() / ref.abs().max().clamp(min=1e-30))


def errs(got, ref):
    """{"h": ..., "h_n": ..., "c_n": ..., "n_n": ..., "m_n": ...}: max relative errors of the
    output sequence and each last state."""
    (ys, last), (rys, rlast) = got, ref
    out = {"h": rel_err(ys, rys)}
    out.update({f"{s}_n": rel_err(a, r) for s, a, r in zip("hcnm", last, rlast)})
    return out


# -- here: the mapping on the CPU --------------------------------------------------------------

def cpu_check():
    """Tiny check on the CPU of the cell, the weight mapping and FlashRNN's PyTorch backends
    against the float64 reference: ours and "vanilla" in float64 (limit 1e-12),
    "vanilla_fwbw" in float32 (limit 1e-5). Returns 0 when all agree."""
    from flashrnn import flashrnn
    T_, B_, NH_, D, I_ = 5, 3, 2, 4, 6
    H_ = NH_ * D
    f64 = torch.float64
    w = draw_weights(I_, H_, NH_, seed=1, dtype=f64, bf16_exact=False)
    g = torch.Generator().manual_seed(2)
    x = torch.randn(T_, B_, I_, generator=g, dtype=f64)
    init = [torch.randn(B_, H_, generator=g, dtype=f64) for _ in range(4)]
    init[2] = init[2].abs() + 1.0                              # n >= 1, as FlashRNN keeps it
    ours = rnn.NumpyRNN(slstm_flashrnn, I_, H_, dtype="float64", sizes={"NH": NH_})
    ours.load_state_dict({f"{k}_l0": v.numpy() for k, v in w.items()})
    zoo = rnn.NumpyRNN(rnn.zoo.slstm, I_, H_, dtype="float64", sizes={"NH": NH_})
    zoo.load_state_dict({f"{k}_l0": v.numpy() for k, v in w.items()})
    R_f, b_f = to_flashrnn(w, NH_)
    Wx = flashrnn_wx((x.reshape(T_ * B_, I_) @ w["W"].T).view(T_, B_, 4 * H_), NH_)
    failed = False
    for label, states in (("zero initial states", None), ("random initial states", init)):
        ref = reference(x, w, NH_, states)
        hx = None if states is None else tuple(s.numpy()[None] for s in states)
        ys, last = ours(x.numpy(), hx)
        got_ours = (torch.from_numpy(ys), [torch.from_numpy(s[0]) for s in last])
        ys, last = zoo(x.numpy(), hx)
        got_zoo = (torch.from_numpy(ys), [torch.from_numpy(s[0]) for s in last])
        fr_states = None if states is None else flashrnn_states(states, NH_)
        results = {"ours (slstm_flashrnn, float64 CPU)": (got_ours, 1e-12)}
        # vanilla: FlashRNN's step loop in torch (any dtype); vanilla_fwbw: its hand-written
        # forward and backward in torch (float32, float16 or bfloat16 only).
        for backend, dt, limit in (("vanilla", f64, 1e-12), ("vanilla_fwbw", torch.float32, 1e-5)):
            try:
                out = flashrnn(Wx.to(dt), R_f.to(dt), b_f.to(dt),
                               states=None if fr_states is None else fr_states.to(dt),
                               function="slstm", backend=backend, dtype=str(dt)[6:])
                results[f"FlashRNN {backend} ({str(dt)[6:]} CPU)"] = (from_flashrnn(*out), limit)
            except Exception as e:  # noqa: BLE001 - report and go on
                print(f"  FlashRNN {backend} on the CPU: FAILED {short(e)}")
                failed = True
        print(f"cpu-check, T={T_} B={B_} NH={NH_} D={D} I={I_}, {label}: max rel err vs "
              "the float64 torch reference")
        for name, (got, limit) in results.items():
            e = errs(got, ref)
            failed |= max(e.values()) > limit
            print(f"  {name:36s} " + "  ".join(f"{k} {v:.1e}" for k, v in e.items())
                  + f"  (limit {limit:g})")
        e = errs(got_ours, results.get("FlashRNN vanilla (float64 CPU)", (got_ours,))[0])
        print(f"  {'ours vs FlashRNN vanilla':36s} " + "  ".join(f"{k} {v:.1e}"
                                                          for k, v in e.items()))
        e = errs(got_zoo, ref)
        print(f"  {'rnn.zoo.slstm (differs: exp forget)':36s} "
              + "  ".join(f"{k} {v:.1e}" for k, v in e.items()))
    print(f"cpu-check: {'FAIL' if failed else 'PASS'}")
    return 1 if failed else 0


# -- on the GPU --------------------------------------------------------------------------------

def time_calls(fn, warmup, repeats):
    """ms of `repeats` calls of fn after `warmup` calls: CUDA events around each call, each
    synchronised."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return times


def short(e):
    s = f"{type(e).__name__}: {e}".strip().replace("\n", " | ")
    return s if len(s) <= 400 else s[:400] + " ..."


def run_dim(D, args, skip):
    """Checks and times one head dim; returns its JSON record. `skip` maps backends that
    failed to build at an earlier head dim to that failure."""
    from flashrnn import flashrnn
    NH_ = HIDDEN // D
    dev = "cuda"
    rec = {"D": D, "NH": NH_, "T": T, "B": B, "H": HIDDEN, "I": INPUT,
           "errors": {}, "failures": {}, "ms": {}, "samples_ms": {}}
    w = draw_weights(INPUT, HIDDEN, NH_, seed=SEED + D, dtype=torch.float32)
    g = torch.Generator().manual_seed(SEED)
    x32 = torch.randn(T, B, INPUT, generator=g).to(torch.bfloat16).float()
    dy = torch.randn(B, T, NH_, D, generator=g).to(torch.bfloat16)
    w = {k: v.to(dev) for k, v in w.items()}
    x32, dy = x32.to(dev), dy.to(dev)

    # Ours: the saved model with these weights.
    model = rnn.load(os.path.join(args.model_dir, model_name(D)))
    assert model.device.startswith("cuda") and model._matmul_type, (model.device,)
    model.load_state_dict({f"{k}_l0": v for k, v in w.items()})

    # FlashRNN's inputs: bf16, its layouts.
    W16 = w["W"].to(torch.bfloat16)
    R16, b16 = (t.to(torch.bfloat16) for t in to_flashrnn(w, NH_))
    x16_bt = x32.to(torch.bfloat16).transpose(0, 1).contiguous()          # [B, T, I]
    Wx16 = (x16_bt @ W16.T).view(B, T, 4, NH_, D)                          # [B, T, 4, NH, D]

    # Correctness against the float64 reference on the GPU.
    w64 = {k: v.double() for k, v in w.items()}
    ref = reference(x32.double(), w64, NH_)
    with torch.no_grad():
        ys, last = model(x32)
        rec["errors"]["ours"] = errs((ys, [s[0] for s in last]), ref)
    ours_out = (ys, [s[0] for s in last])
    print(f"D={D:4d} NH={NH_:3d}: max rel err vs float64 reference (h over all steps; "
          "last h, c, n, m)")
    print(f"  {'ours':24s} " + "  ".join(f"{k} {v:.1e}" for k, v in rec["errors"]["ours"].items()))

    def fr_call(backend, Wx):
        return flashrnn(Wx, R16, b16, function="slstm", backend=backend, dtype="bfloat16")

    timed = {"ours": lambda: model(x32)}
    zoo_dir = os.path.join(args.model_dir, model_name(D, "slstm"))
    if os.path.isdir(zoo_dir):  # the zoo's sLSTM (other equations): its time only
        zoo = rnn.load(zoo_dir)
        zoo.load_state_dict({f"{k}_l0": v for k, v in w.items()})
        timed["ours zoo"] = lambda: zoo(x32)
    for backend in args.backends:
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
            print(f"  FlashRNN {backend:15s} " + "  ".join(
                f"{k} {v:.1e}" for k, v in rec["errors"][backend].items()))
            del out, got
        except Exception as e:  # noqa: BLE001 - report the backend and go on
            rec["failures"][backend] = short(e)
            print(f"  FlashRNN {backend}: FAILED {short(e)}")
            if "Error building extension" in str(e):
                skip[backend] = (D, short(e))
            continue
        timed[backend] = (lambda be=backend: fr_call(be, Wx16))
        timed[f"{backend}+proj"] = (
            lambda be=backend: fr_call(be, (x16_bt @ W16.T).view(B, T, 4, NH_, D)))

    # Training steps of FlashRNN's recurrence: forward and backward from Wx, R, b.
    train = {}
    for backend in (args.train_backends if args.train else ()):
        if backend in skip or backend in rec["failures"]:
            continue
        leaves = [t.detach().clone().requires_grad_() for t in (Wx16, R16, b16)]

        def step(be=backend, leaves=leaves):
            for t in leaves:
                t.grad = None
            all_states, _ = flashrnn(*leaves, function="slstm", backend=be, dtype="bfloat16")
            all_states[0].backward(dy)
        try:
            step()
            torch.cuda.synchronize()
            bad = [n for n, t in zip(("Wx", "R", "b"), leaves)
                   if t.grad is None or not torch.isfinite(t.grad).all()]
            if bad:
                raise RuntimeError(f"gradients of {', '.join(bad)} missing or not finite")
        except Exception as e:  # noqa: BLE001
            rec["failures"][f"{backend} train"] = short(e)
            print(f"  FlashRNN {backend} train: FAILED {short(e)}")
            continue
        train[f"{backend} train"] = step

    # Timing: every implementation in turn, `rounds` rounds.
    runners = dict(timed)
    runners.update(train)
    samples = {k: [] for k in runners}
    dead = set()
    for r in range(args.rounds):
        for name, fn in runners.items():
            if name in dead:
                continue
            try:
                grad = torch.enable_grad() if name in train else torch.no_grad()
                with grad:
                    samples[name] += time_calls(fn, args.warmup, args.repeats)
            except Exception as e:  # noqa: BLE001
                rec["failures"][name] = f"while timing: {short(e)}"
                dead.add(name)
    for name, s in samples.items():
        if s and name not in dead:
            rec["ms"][name] = statistics.median(s)
            rec["samples_ms"][name] = [round(v, 4) for v in s]
    del model, timed, runners
    torch.cuda.empty_cache()
    return rec


def table(records, backends, train_backends):
    """The summary: forward ms of ours and each FlashRNN backend (recurrence alone and with the
    projection), the best FlashRNN over ours, and FlashRNN's training steps."""
    cols = ["ours", "ours zoo"]
    for be in backends:
        cols += [be, f"{be}+proj"]
    tcols = [f"{be} train" for be in train_backends]
    lines = [f"Forward ms (T={T}, B={B}, H={HIDDEN}, I={INPUT}, bf16).",
             "ours = the whole layer (projection inside), FlashRNN's equations; ours zoo = "
             "rnn.zoo.slstm (exp forget gate);",
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
        lines += ["", "FlashRNN training step ms (forward + backward of its recurrence, Wx, R, b "
                  "requiring grad); ours: not measured (TODO: our training libraries)."]
        width = {c: max(len(c), 8) for c in tcols}
        head = f"{'D':>4} {'NH':>3} " + " ".join(f"{c:>{width[c]}}" for c in tcols)
        lines += [head, "-" * len(head)]
        for rec in records:
            lines.append(f"{rec['D']:>4} {rec['NH']:>3} " + " ".join(
                f"{rec['ms'][c]:{width[c]}.3f}" if c in rec["ms"] else f"{'-':>{width[c]}}"
                for c in tcols))
    lines += ["", "Max rel err vs the float64 reference (h over all steps / worst last state); "
              f"agree = within {BF16_LIMIT:g}:"]
    for rec in records:
        for name, e in rec["errors"].items():
            worst = max(e.values())
            lines.append(f"  D={rec['D']:<4} {name:28s} h {e['h']:.1e}  states "
                         f"{max(v for k, v in e.items() if k != 'h'):.1e}  "
                         f"{'agree' if worst <= BF16_LIMIT else 'DIFFER'}")
    failures = [(rec["D"], k, v) for rec in records for k, v in rec["failures"].items()]
    if failures:
        lines += ["", "Failures:"] + [f"  D={d:<4} {k}: {v}" for d, k, v in failures]
    return "\n".join(lines)


def flashrnn_version():
    import importlib.metadata
    try:
        return importlib.metadata.version("flashrnn")
    except importlib.metadata.PackageNotFoundError:
        return "?"


def write_json(args, records):
    config = {"T": T, "B": B, "H": HIDDEN, "I": INPUT, "dtype": "bfloat16",
              "rounds": args.rounds, "repeats": args.repeats, "warmup": args.warmup,
              "device": torch.cuda.get_device_name(0), "torch": torch.__version__,
              "cuda": torch.version.cuda, "flashrnn": flashrnn_version()}
    with open(args.out_json, "w") as f:
        json.dump({"config": config, "records": records}, f, indent=1)


def run_one(args):
    """--one D: one head dim in this process; its record (with the build failures to skip
    later, "skip") to OUT_JSON."""
    torch.backends.cuda.matmul.allow_tf32 = False
    skip = {k: tuple(v) for k, v in json.loads(args.skip).items()}
    try:
        rec = run_dim(args.one, args, skip)
    except Exception as e:  # noqa: BLE001 - ours or the reference failed at this size
        traceback.print_exc()
        rec = {"D": args.one, "NH": HIDDEN // args.one, "errors": {}, "ms": {},
               "failures": {"ours/reference": short(e)}}
    rec["skip"] = skip
    with open(args.out_json, "w") as f:
        json.dump(rec, f)
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model_dir", nargs="?")
    ap.add_argument("out_json", nargs="?")
    ap.add_argument("--cpu-check", action="store_true", help="the tiny CPU check, here")
    ap.add_argument("--dims", default=",".join(map(str, HEAD_DIMS)),
                    help="head dims D (default %(default)s)")
    ap.add_argument("--backends", default=",".join(BACKENDS),
                    help="FlashRNN forward backends (default %(default)s)")
    ap.add_argument("--train-backends", default=",".join(TRAIN_BACKENDS),
                    help="FlashRNN training-step backends (default %(default)s)")
    ap.add_argument("--no-train", dest="train", action="store_false",
                    help="no FlashRNN training steps")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--skip", default="{}", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.cpu_check:
        return cpu_check()
    if not args.model_dir or not args.out_json:
        ap.error("MODEL_DIR and OUT_JSON are needed (or --cpu-check)")
    args.backends = [b for b in args.backends.split(",") if b]
    args.train_backends = [b for b in args.train_backends.split(",") if b]
    if args.one:
        return run_one(args)
    import flashrnn as _fr
    print("device:", torch.cuda.get_device_name(0), "| torch", torch.__version__,
          "| CUDA", torch.version.cuda, "| flashrnn", flashrnn_version(),
          os.path.dirname(_fr.__file__), flush=True)
    # Each head dim runs in a process of its own: a backend that leaves the CUDA context
    # broken (an illegal address is sticky) costs that head dim only.
    records, skip = [], {}
    part = os.path.splitext(args.out_json)[0] + ".part.json"
    for D in (int(d) for d in args.dims.split(",")):
        cmd = [sys.executable, "-u", os.path.abspath(__file__), args.model_dir, part,
               "--one", str(D), "--skip", json.dumps(skip),
               "--backends", ",".join(args.backends),
               "--train-backends", ",".join(args.train_backends),
               "--rounds", str(args.rounds), "--repeats", str(args.repeats),
               "--warmup", str(args.warmup)] + ([] if args.train else ["--no-train"])
        if os.path.exists(part):
            os.remove(part)
        rc = subprocess.call(cmd)
        if rc == 0 and os.path.exists(part):
            with open(part) as f:
                rec = json.load(f)
            skip = rec.pop("skip")
        else:
            rec = {"D": D, "NH": HIDDEN // D, "errors": {}, "ms": {},
                   "failures": {"process": f"exited with status {rc}"}}
        records.append(rec)
        write_json(args, records)  # after every head dim: a later failure keeps these
    if os.path.exists(part):
        os.remove(part)
    text = table(records, args.backends, args.train_backends if args.train else [])
    print()
    print(text)
    with open(os.path.splitext(args.out_json)[0] + ".txt", "w") as f:
        f.write(text + "\n")
    write_json(args, records)  # again, with the ratios
    return 0


if __name__ == "__main__":
    sys.exit(main())
