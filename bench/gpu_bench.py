#!/usr/bin/env python3
"""On the GPU machine: checks every compiled zoo model against float64
references and the LSTM/GRU benchmark models against torch.nn.LSTM/GRU, then
times ours and cuDNN (torch.nn.LSTM/GRU, defaults) in the same process on the
same inputs: CUDA events around each call, warm-up first, median of repeats,
ours and cuDNN in alternating rounds.

    python3 bench/gpu_bench.py MODEL_DIR OUT_JSON
(bench/gpu-run.sh runs it with the right library path.)
"""
import ctypes
import glob
import json
import os
import statistics
import sys
import time

import numpy as np
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "test", "python"))

import rnn.runtime as rt  # noqa: E402
from cuda_events import event_times  # noqa: E402
import reference  # noqa: E402
from test_examples import ARGS, make_args  # noqa: E402

REPEATS = 15
WARMUP = 3
# Warm-up also lasts at least this long: while the host compiles a baseline
# (torch.compile takes seconds) the GPU idles and lowers its clocks, and the
# next model's first timings ran at them (a GRU at `small-latency` once took
# 0.624 ms in the table and 0.292 ms in the same call's runtime_gemm_check).
WARMUP_S = 0.2


# rnn_tensor's dtype codes.
DTYPE_CODES = {torch.float32: 0, torch.float64: 1, torch.bfloat16: 2,
               torch.float16: 3, torch.int32: 4, torch.int64: 5}
CODE_DTYPES = {code: dtype for dtype, code in DTYPE_CODES.items()}
_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)


def _current_raw_stream():
    """The current CUDA stream's handle, without building a torch.cuda.Stream (as the
    torch ops get it, python/rnn/_torch_ops.py)."""
    return _raw_stream(torch.cuda.current_device()) if _raw_stream else \
        torch.cuda.current_stream().cuda_stream


# The runtime's dtype names (rnn.runtime descriptors).
DTYPE_NAMES = {dtype: rt.DTYPE_NAMES[code] for dtype, code in DTYPE_CODES.items()}


def to_tensor(t):
    """An rnn_tensor describing a contiguous CUDA tensor."""
    desc = rt.RnnTensor()
    desc.data = t.data_ptr()
    desc.dtype = DTYPE_CODES[t.dtype]
    desc.rank = t.dim()
    for i, s in enumerate(t.shape):
        desc.shape[i] = s
    return desc


class CudaModel:
    def __init__(self, path):
        self.model = rt.Model(path)
        self.lib = rt.load_runtime()
        self._plans = {}

    def outputs(self, name, args):
        n = len(self.model.signature(name)[1])
        arg_array = (rt.RnnTensor * len(args))(*[to_tensor(a) for a in args])
        res = (rt.RnnTensor * n)()
        status = self.lib.rnn_model_result_shapes(self.model.handle, name.encode(),
                                                  arg_array, len(args), res, n)
        if status:
            raise RuntimeError(self.lib.rnn_last_error().decode())
        outs = []
        for r in res:
            shape = [r.shape[i] for i in range(r.rank)]
            outs.append(torch.empty(shape, dtype=CODE_DTYPES[r.dtype], device="cuda"))
        return outs

    def __call__(self, name, args, outs):
        """Runs `name` into `outs` on the current stream as the torch ops do (rnn::run):
        through a CallPlan kept per dtypes and shapes, which fills in only the data
        pointers (building the descriptors field by field through ctypes took 12-27 us
        a call on the H200's and H100's hosts, docs/performance-notes.md), so that a
        short call's time is what a torch user's would be."""
        key = (name, tuple((a.dtype, a.shape) for a in args),
               tuple((o.dtype, o.shape) for o in outs))
        plan = self._plans.get(key)
        if plan is None:
            if not all(t.is_contiguous() for t in list(args) + list(outs)):
                raise ValueError(f"{name}: the harness passes contiguous tensors only")
            plan = self.model.plan(name, [
                (a.data_ptr(), DTYPE_NAMES[a.dtype], tuple(a.shape)) for a in args])
            # The plan describes the results from the arguments: `outs` must
            # be what it says (the runtime checks the descriptors, not them).
            given = [(DTYPE_NAMES[o.dtype], tuple(o.shape)) for o in outs]
            if given != [(dt, tuple(shape)) for dt, shape in plan.results]:
                raise ValueError(f"{name}: results {given}, the function gives "
                                 f"{plan.results}")
            self._plans[key] = plan
        try:
            self.model.run_plan(plan, [a.data_ptr() if a.numel() else 0 for a in args],
                                [o.data_ptr() if o.numel() else 0 for o in outs],
                                _current_raw_stream())
        except rt.RNNError as e:
            raise RuntimeError(f"{name}: {e}") from None
        return outs


def rel_err(ours, ref):
    ours = np.asarray(ours, dtype=np.float64)
    return float(np.max(np.abs(ours - ref)) / max(np.max(np.abs(ref)), 1e-30))


def time_ms(fn, samples=None, repeats=REPEATS):
    """Median ms of `repeats` calls of fn after a warm-up; the times are also
    appended to `samples` if given."""
    warm_start, calls = time.perf_counter(), 0
    while calls < WARMUP or time.perf_counter() - warm_start < WARMUP_S:
        fn()
        torch.cuda.synchronize()
        calls += 1
    times = event_times(fn, repeats)
    if samples is not None:
        samples += times
    return statistics.median(times)


def time_in_rounds(blocks, rounds=3, repeats=REPEATS):
    """Median ms of each (fn, stream) in `blocks`, timed in alternation:
    `rounds` rounds, each timing every block in turn (time_ms, `repeats`
    calls), medians over all rounds' calls. Something that slows the GPU
    for a while (we saw a model's calls take 1.5x for a whole block, never
    when re-measured) then hits every block of a round rather than one of
    them."""
    samples = [[] for _ in blocks]
    for _ in range(rounds):
        for i, (fn, stream) in enumerate(blocks):
            with torch.cuda.stream(stream):
                time_ms(fn, samples[i], repeats)
    return [statistics.median(t) for t in samples]


def with_setting(fn, name, value):
    """fn with the runtime setting `name` (an environment variable the
    runtime reads at every model call, keeping a graph per setting) at
    `value`, None for unset; the environment is left as it was. The call
    returns what fn returns."""
    def call():
        saved = os.environ.pop(name, None)
        if value is not None:
            os.environ[name] = value
        try:
            return fn()
        finally:
            os.environ.pop(name, None)
            if saved is not None:
                os.environ[name] = saved
    return call


def without_graphs(fn):
    """fn with the model call run directly, kernel by kernel, instead of
    captured into a CUDA graph and replayed."""
    return with_setting(fn, "RNN_CUDA_GRAPHS", "0")


def without_overlap(fn):
    """fn with our kernels launched only after the work ahead of them has
    finished (no programmatic dependent launch)."""
    return with_setting(fn, "RNN_CUDA_OVERLAP_LAUNCHES", "0")


def check_zoo(model_dir, report):
    print("== correctness: every example on CUDA vs float64 numpy (T=7, B=3)")
    for example in sorted(ARGS):
        path = os.path.join(model_dir, f"{example}.so")
        model = CudaModel(path)
        name, reference_fn = reference.EXAMPLES[example]
        args = make_args(example, 7, 3, seed=11)
        gpu_args = [torch.from_numpy(a).cuda() for a in args]
        outs = model.outputs(name, gpu_args)
        model(name, gpu_args, outs)
        torch.cuda.synchronize()
        refs = reference_fn(*[a.astype(np.float64) for a in args])
        err = max(rel_err(o.cpu().numpy(), r) for o, r in zip(outs, refs))
        ok = err <= 1e-5
        print(f"  {example:18s} max rel err {err:.2e} {'ok' if ok else 'FAIL'}")
        report.append({"check": "zoo", "example": example, "rel_err": err, "ok": ok})


def check_two_stage_wide(model_dir, report):
    """The two-stage cells at the benchmark's width (I = H = 1024, B = 64,
    where their recurrent products take K-split partials summed by the step
    kernel) against float64 numpy: a direct call (no graph) and a call on the
    legacy default stream (captured and tuned on the runtime's own stream),
    then three on a side stream (replays of that graph)."""
    from test_dsl_zoo import ZOO  # the reference and its parameter order
    T, B = 16, 64
    print(f"== correctness: two-stage zoo cells at I=H=1024 vs float64 numpy (T={T}, B={B})")
    for cell in ("mgu", "gru_reset_before"):
        path = os.path.join(model_dir, f"zoo_{cell}.so")
        if not os.path.exists(path):
            continue
        model = CudaModel(path)
        args = random_args(model, "forward", T, B, seed=9)
        ref_fn, names, _, _ = ZOO[cell]
        assert len(args) == 2 + len(names), cell
        refs = ref_fn(*[a.double().cpu().numpy() for a in args])
        errs = []
        outs = model.outputs("forward", args)
        with torch.no_grad():
            for run in (without_graphs(lambda: model("forward", args, outs)),
                        lambda: model("forward", args, outs)):
                outs[0].fill_(float("nan"))
                run()
                torch.cuda.synchronize()
                errs.append(max(rel_err(o.cpu().numpy(), r) for o, r in zip(outs, refs)))
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for _ in range(3):
                    model("forward", args, outs)
                    side.synchronize()
                    errs.append(max(rel_err(o.cpu().numpy(), r) for o, r in zip(outs, refs)))
        ok = max(errs) <= 5e-3
        print(f"  {cell:18s} max rel err {max(errs):.2e} (per call: "
              f"{', '.join(f'{e:.1e}' for e in errs)}) {'ok' if ok else 'FAIL'}")
        report.append({"check": "two_stage_h1024", "cell": cell, "rel_err": max(errs),
                       "per_call": errs, "ok": ok})


def errors_with_changing_input(model, function, args, which, values, refs, warmup, calls):
    """Runs `function` on a side stream: `warmup` calls as they are, then
    `calls` calls each after args[which] is set in place to values[i % n]
    and each followed by a copy of the outputs, with no synchronisation in
    between; returns each copied call's largest relative error against
    refs[i % n] (float64 numpy)."""
    outs = model.outputs(function, args)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    copies = []
    with torch.no_grad(), torch.cuda.stream(side):
        for _ in range(warmup):
            model(function, args, outs)
        for i in range(calls):
            args[which].copy_(values[i % len(values)])
            model(function, args, outs)
            copies.append([o.clone() for o in outs])
    torch.cuda.synchronize()
    return [max(rel_err(c.cpu().numpy(), r) for c, r in zip(copy, refs[i % len(refs)]))
            for i, copy in enumerate(copies)]


def report_errors(report, label, errs, limit, **entry):
    ok = max(errs) <= limit
    print(f"  {label:18s} max rel err {max(errs):.2e} (per call: "
          f"{', '.join(f'{e:.1e}' for e in errs)}) {'ok' if ok else 'FAIL'}")
    report.append({**entry, "rel_err": max(errs), "per_call": errs, "ok": ok})


def check_changing_inputs(model_dir, report):
    """Kernels in time loops read the input projection (and the biases)
    before they wait for the grid ahead (overlap-kernel-launches), behind a
    launch in stream order at the loop's start: each call must still read
    its own call's projection. Zoo cells at I = H = 1024 (B = 64, T = 16):
    six graph replays on a side stream, the input changed in place on that
    stream before each (two inputs in turn) and the output copied right
    after it, with no synchronisation in between; each copy against float64
    numpy for its input."""
    from test_dsl_zoo import ZOO
    T, B = 16, 64
    print(f"== correctness: inputs changed between graph replays (zoo, I=H=1024, T={T}, B={B})")
    for cell in ("gru_reset_before", "mgu", "gru", "lstm", "layernorm_lstm", "sru", "indrnn"):
        path = os.path.join(model_dir, f"zoo_{cell}.so")
        if not os.path.exists(path):
            continue
        model = CudaModel(path)
        args = random_args(model, "forward", T, B, seed=21)
        sequences = [args[0].clone(), random_args(model, "forward", T, B, seed=22)[0]]
        ref_fn = ZOO[cell][0]
        refs = [ref_fn(*[a.double().cpu().numpy() for a in [xs] + args[1:]])
                for xs in sequences]
        # Three calls first: the direct one, the capture, a replay.
        errs = errors_with_changing_input(model, "forward", args, 0, sequences, refs,
                                          warmup=3, calls=6)
        report_errors(report, cell, errs, 5e-3, check="changing_inputs", cell=cell)


def check_lengths(model_dir, report):
    """Per-sequence lengths (test/python/models/lengths.mlir: a bidirectional
    LSTM, forward and reverse scans that read the [B] lengths in every step
    kernel) against float64 numpy: a direct call, then graph replays with
    the lengths changed in place between them (two vectors in turn) on the
    same stream, no synchronisation in between."""
    from test_lengths import make_args
    path = os.path.join(model_dir, "lengths.so")
    if not os.path.exists(path):
        return
    print("== correctness: per-sequence lengths (bidirectional LSTM, T=7, B=4) vs float64 numpy")
    model = CudaModel(path)
    host = [make_args(7, lengths, seed=5) for lengths in ([7, 3, 1, 5], [2, 7, 6, 4])]
    refs = [reference.lstm_bidir_lengths(*[a.astype(np.float64) if a.dtype == np.float32
                                           else a for a in args]) for args in host]
    args = [torch.from_numpy(a).cuda() for a in host[0]]
    lengths = [torch.from_numpy(h[1]).cuda() for h in host]
    # Every call counted: the direct one, the capture, then replays.
    errs = errors_with_changing_input(model, "lstm_bidir_lengths", args, 1, lengths, refs,
                                      warmup=0, calls=7)
    report_errors(report, "lstm_bidir_lengths", errs, 1e-5, check="lengths")


def check_default_stream_order(model_dir, report):
    """Calls on the legacy default stream are captured and replayed on the
    runtime's own stream, ordered by events: each of 6 calls follows an
    in-place change of its input on the default stream and is followed by a
    copy of its output there, with no synchronisation in between. The copies
    must equal direct calls (no graph) on the same inputs."""
    path = os.path.join(model_dir, "lstm_I1024_H1024.so")
    if not os.path.exists(path):
        return
    T, B, calls = 100, 64, 6
    print(f"== correctness: calls on the legacy default stream, ordered by events "
          f"(LSTM medium, {calls} calls, inputs changed in place between them)")
    model = CudaModel(path)
    args = random_args(model, "lstm_seq", T, B, seed=13)
    x0 = args[0].clone()
    outs = model.outputs("lstm_seq", args)

    def run_all(call):
        args[0].copy_(x0)
        snapshots = []
        for _ in range(calls):
            args[0].mul_(0.75)
            call()
            snapshots.append(outs[0].clone())
        torch.cuda.synchronize()
        return snapshots

    with torch.no_grad():
        model("lstm_seq", args, outs)  # captured and tuned beforehand
        torch.cuda.synchronize()
        routed = run_all(lambda: model("lstm_seq", args, outs))
        direct = run_all(without_graphs(lambda: model("lstm_seq", args, outs)))
    errs = [rel_err(a.cpu().numpy(), b.double().cpu().numpy()) for a, b in zip(routed, direct)]
    ok = max(errs) <= 1e-5
    print(f"  lstm_I1024_H1024    max rel diff to direct calls {max(errs):.1e} "
          f"(per call: {', '.join(f'{e:.1e}' for e in errs)}) {'ok' if ok else 'FAIL'}")
    report.append({"check": "default_stream_order", "rel_err": max(errs), "per_call": errs,
                   "ok": ok})


def check_persistent(model_dir, report):
    """The bf16 LSTM and GRU at H = 2048, whose recurrences are persistent
    kernels, against torch.nn.LSTM/GRU (float32, the same weights) over batch
    sizes of 1 to 40 rows, with the step-by-step path of the same library
    (RNN_CUDA_PERSISTENT=0) beside them: a direct call (no graph), then graph
    replays on a side stream. Batches the kernel does not take (over 32) and
    sequences under 32 steps run the step loop: their outputs equal the
    step-by-step path's bit for bit, where the persistent kernel's sum in
    another order."""
    print("== correctness: persistent recurrences (bf16, H=2048) vs torch.nn.LSTM/GRU "
          "and vs the step-by-step path")
    # (H, reverse, T, B): the kernel takes batches of up to 32 rows and sequences of
    # at least 32 steps.
    shapes = [(2048, False, T, B) for T, B in ((32, 8), (37, 24), (50, 32), (33, 16),
                                               (35, 5), (5, 40), (7, 12))]
    # Reverse scans (the kernel walks the views from the last step down).
    shapes += [(2048, True, T, B) for T, B in ((37, 24), (5, 40))]
    cases = [(kind,) + shape for shape in shapes for kind in ("lstm_bf16", "gru_bf16")]
    for kind, H, reverse, T, B in cases:
        path = os.path.join(model_dir, f"{kind}_I{H}_H{H}{'_reverse' if reverse else ''}.so")
        if not os.path.exists(path):
            continue
        model = CudaModel(path)
        gru = cell_of(kind) == "gru"
        name = f"{cell_of(kind)}_seq"
        torch.manual_seed(T * 100 + B)
        ref = (torch.nn.GRU if gru else torch.nn.LSTM)(H, H).cuda()
        xs = torch.randn(T, B, H, device="cuda")
        states = [torch.randn(1, B, H, device="cuda") for _ in range(1 if gru else 2)]
        args = module_args(kind, ref, xs, states, 1, True)
        with torch.no_grad():
            expected = ref(xs.flip(0) if reverse else xs, states[0] if gru else tuple(states))
            expected = [expected[0].flip(0) if reverse else expected[0]] + (
                [expected[1]] if gru else list(expected[1]))
            expected = [e.reshape(-1, H).double().cpu().numpy() for e in expected]
            outs = model.outputs(name, args)
            results = {}
            for label, run in (("direct", without_graphs(lambda: model(name, args, outs))),
                               ("graph", lambda: model(name, args, outs)),
                               ("stepwise", with_setting(lambda: model(name, args, outs),
                                                         "RNN_CUDA_PERSISTENT", "0"))):
                side = torch.cuda.Stream()
                side.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(side):
                    for _ in range(2 if label == "graph" else 1):
                        for o in outs:
                            o.fill_(float("nan"))
                        run()
                    side.synchronize()
                results[label] = [o.reshape(-1, H).cpu() for o in outs]
        errs = {k: max(rel_err(o.double().numpy(), e) for o, e in zip(v, expected))
                for k, v in results.items()}
        diff = max(rel_err(a.double().numpy(), b.double().numpy())
                   for a, b in zip(results["graph"], results["stepwise"]))
        same = all(torch.equal(a, b) for a, b in zip(results["direct"], results["stepwise"]))
        takes = B <= 32 and T >= 32
        # Step by step where the kernel does not take the batch; a
        # different summation order (not bit-equal) where it does.
        ok = max(errs.values()) <= 1e-2 and same == (not takes)
        print(f"  {kind + (' reverse' if reverse else ''):17s} H={H} T={T:3d} B={B:2d}  rel err vs torch: direct {errs['direct']:.1e}, "
              f"graph {errs['graph']:.1e}, step by step {errs['stepwise']:.1e}; "
              f"{'equal to' if same else f'{diff:.1e} from'} the step-by-step path "
              f"({'persistent kernel' if takes else 'step loop'} expected) "
              f"{'ok' if ok else 'FAIL'}")
        report.append({"check": "persistent", "kind": kind, "reverse": reverse,
                       "H": H, "T": T, "B": B,
                       "rel_err": max(errs.values()), "per_path": errs,
                       "rel_diff_to_stepwise": diff, "equal_to_stepwise": same,
                       "ok": ok})


def module_args(kind, ref, xs, states, layers, bf16):
    """Our model's arguments for the weights of torch module `ref`: xs, then
    per layer its initial states and W, U, b_W, b_U (bf16 storage: xs, W, U
    in bf16)."""
    cast = (lambda t: t.bfloat16()) if bf16 else (lambda t: t)
    args = [cast(xs)]
    for l in range(layers):
        args += [s[l] for s in states]
        args += [cast(getattr(ref, f"weight_ih_l{l}").detach().contiguous()),
                 cast(getattr(ref, f"weight_hh_l{l}").detach().contiguous()),
                 getattr(ref, f"bias_ih_l{l}").detach().contiguous(),
                 getattr(ref, f"bias_hh_l{l}").detach().contiguous()]
    return args


def cell_of(kind):
    """The cell of a benchmark kind: lstm, gru, lstm_bf16, gru_bf16."""
    return kind.split("_")[0]


def torch_cell_step(kind):
    """One step of the cell in PyTorch, the input projection (with b_W)
    precomputed: the torch.compile baseline's unit."""
    if cell_of(kind) == "gru":
        def step(xp, h, U, bU, mm_dtype):
            hp = (h.to(mm_dtype) @ U.t()).float() + bU
            xr, xz, xn = xp.chunk(3, 1)
            hr, hz, hn = hp.chunk(3, 1)
            r = torch.sigmoid(xr + hr)
            z = torch.sigmoid(xz + hz)
            n = torch.tanh(xn + r * hn)
            return ((1 - z) * n + z * h,)
        return step

    def step(xp, h, c, U, bU, mm_dtype):
        g = xp + (h.to(mm_dtype) @ U.t()).float() + bU
        i, f, z, o = g.chunk(4, 1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(z)
        h = torch.sigmoid(o) * torch.tanh(c)
        return h, c
    return step


def compiled_baseline(kind, args, layers, bf16):
    """torch.compile of the cell's step (default mode), the input projection
    hoisted by hand into one matmul per layer, the time loop in Python.
    Returns (forward function, compile seconds)."""
    import time
    step = torch.compile(torch_cell_step(kind), dynamic=False)
    nstates = 1 if cell_of(kind) == "gru" else 2
    mm_dtype = torch.bfloat16 if bf16 else torch.float32

    def forward():
        x = args[0]
        pos = 1
        for _ in range(layers):
            states = list(args[pos:pos + nstates])
            W, U, bW, bU = args[pos + nstates:pos + nstates + 4]
            pos += nstates + 4
            T, B = x.shape[0], x.shape[1]
            xp = (x.reshape(T * B, -1).to(mm_dtype) @ W.t()).float().reshape(T, B, -1) + bW
            ys = []
            for t in range(T):
                states = step(xp[t], *states, U, bU, mm_dtype)
                ys.append(states[0])
            x = torch.stack(ys)
        return x

    start = time.time()
    with torch.no_grad():
        forward()
    torch.cuda.synchronize()
    return forward, time.time() - start


# rnn_cuda_call's `call` argument: void (*)(void **).
CALL_FUNCTION = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


def cuda_runtime():
    """librnn_runtime_cuda.so (beside RNN_RUNTIME_LIB), for its rnn_cuda_gemm."""
    path = os.path.join(os.path.dirname(os.environ["RNN_RUNTIME_LIB"]),
                        "librnn_runtime_cuda.so")
    lib = ctypes.CDLL(path)
    lib.rnn_cuda_set_stream.argtypes = [ctypes.c_void_p]
    lib.rnn_cuda_gemm.argtypes = [ctypes.c_int32] * 3 + [ctypes.c_int64] * 9
    lib.rnn_cuda_gemm_partials.argtypes = [ctypes.c_int32] * 3 + [ctypes.c_int64] * 10
    lib.mgpuMemset32.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_size_t,
                                 ctypes.c_void_p]
    lib.rnn_cuda_call.argtypes = [ctypes.c_void_p, CALL_FUNCTION, ctypes.c_void_p,
                                  ctypes.c_char_p, ctypes.c_size_t]
    lib.rnn_cuda_call.restype = ctypes.c_int32
    lib.rnn_cuda_take_error.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    lib.rnn_cuda_take_error.restype = ctypes.c_int32
    lib.rnn_cuda_release_graphs.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    return lib


def breakdown(kind, args, T, bf16):
    """The GEMMs of one layer alone, issued through our runtime's
    rnn_cuda_gemm exactly as the model issues them (its operand types, f32
    results, TF32 for fp32, the weights marked constant): the input
    projection over the whole sequence, and the T recurrent GEMMs
    (accumulating onto the projection rows for the LSTM, into a scratch
    buffer for the GRU) run as one model call through rnn_cuda_call, which
    replays them as a CUDA graph and, for weights too large for L2, packs
    them and runs its own kernel as in the model (RNN_CUDA_PACKED_GEMM).
    In ms."""
    lib = cuda_runtime()
    xs = args[0]
    gru = cell_of(kind) == "gru"
    nstates = 1 if gru else 2
    W, U = args[1 + nstates], args[2 + nstates]
    ab = 2 if bf16 else 0
    flags = (0 if bf16 else 2) | 8  # TF32 for fp32; constant weights
    x2 = xs.reshape(-1, xs.shape[-1])
    G, I, H, B = W.shape[0], W.shape[1], U.shape[1], args[1].shape[-2]
    proj = torch.empty(x2.shape[0], G, device="cuda")
    h = args[1].reshape(-1, H)[:B].to(U.dtype).contiguous()
    scratch = torch.empty(B, G, device="cuda")

    def projection_gemm():
        lib.rnn_cuda_set_stream(torch.cuda.current_stream().cuda_stream)
        lib.rnn_cuda_gemm(ab, 0, flags, x2.shape[0], G, I, x2.data_ptr(), I,
                          W.data_ptr(), I, proj.data_ptr(), G)

    @CALL_FUNCTION
    def recurrent_gemms(_):
        for t in range(T):
            c = scratch.data_ptr() if gru else proj[t * B:(t + 1) * B].data_ptr()
            lib.rnn_cuda_gemm(ab, 0, flags | (0 if gru else 4), B, G, H, h.data_ptr(), H,
                              U.data_ptr(), H, c, G)

    key = f"breakdown|{kind}|{T}|{B}|{h.data_ptr()}|{proj.data_ptr()}".encode()

    def recurrent_call():
        stream = torch.cuda.current_stream().cuda_stream
        if lib.rnn_cuda_call(stream, recurrent_gemms, None, key, len(key)):
            check()

    def check():
        message = ctypes.create_string_buffer(1024)
        if lib.rnn_cuda_take_error(message, len(message)):
            raise RuntimeError(message.value.decode())

    projection = time_ms(projection_gemm)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        # The first call runs directly, the second is captured, later ones
        # replay the graph.
        recurrent = time_ms(recurrent_call)
    torch.cuda.current_stream().wait_stream(side)
    check()
    lib.rnn_cuda_release_graphs(b"breakdown|", len(b"breakdown|"))
    return projection, recurrent


class MemPool:
    """Device memory our runtime takes from the CUDA driver's pools: the
    stream-ordered default pool (calls on the default stream) and the graph
    memory pool (replayed graphs). High-water marks in bytes, resettable."""

    def __init__(self):
        self.cuda = ctypes.CDLL("libcuda.so.1")
        self.pool = ctypes.c_void_p()
        device = ctypes.c_int()
        self.cuda.cuCtxGetDevice(ctypes.byref(device))
        self.device = device
        status = self.cuda.cuDeviceGetDefaultMemPool(ctypes.byref(self.pool), device)
        assert status == 0, status

    def reset(self):
        zero = ctypes.c_uint64(0)
        self.cuda.cuMemPoolSetAttribute(self.pool, 8, ctypes.byref(zero))  # USED_MEM_HIGH
        self.cuda.cuDeviceSetGraphMemAttribute(self.device, 1, ctypes.byref(zero))

    def high(self):
        pool_high, graph_high = ctypes.c_uint64(), ctypes.c_uint64()
        self.cuda.cuMemPoolGetAttribute(self.pool, 8, ctypes.byref(pool_high))
        self.cuda.cuDeviceGetGraphMemAttribute(self.device, 1, ctypes.byref(graph_high))
        return pool_high.value, graph_high.value


def bench_config(model_dir, kind, cfg, report, pool, with_compile):
    T, B, I, H, L = cfg["T"], cfg["B"], cfg["I"], cfg["H"], cfg["L"]
    torch.manual_seed(0)
    bf16 = kind.endswith("_bf16")
    gru = cell_of(kind) == "gru"
    torch_cls = torch.nn.GRU if gru else torch.nn.LSTM
    ref = torch_cls(I, H, num_layers=L).cuda()
    xs = torch.randn(T, B, I, device="cuda")
    h0 = torch.randn(L, B, H, device="cuda")
    c0 = torch.randn(L, B, H, device="cuda")
    states = [h0] if gru else [h0, c0]
    suffix = f"_L{L}" if L > 1 else ""
    model = CudaModel(os.path.join(model_dir, f"{kind}_I{I}_H{H}{suffix}.so"))
    name = f"{cell_of(kind)}_seq{suffix}"
    args = module_args(kind, ref, xs, states, L, bf16)
    if bf16:
        # cuDNN runs the same module converted to bf16. Converting leaves the
        # weights in separate buffers; cuDNN would then compact them on every
        # call. Give it the layout it expects.
        cudnn_module = torch_cls(I, H, num_layers=L).cuda()
        cudnn_module.load_state_dict(ref.state_dict())
        cudnn_module = cudnn_module.bfloat16()
        cudnn_module.flatten_parameters()
        hx = tuple(s.bfloat16() for s in states)
        cudnn_inputs = (xs.bfloat16(), hx[0] if gru else hx)
    else:
        cudnn_module = ref
        cudnn_inputs = (xs, h0 if gru else tuple(states))
    outs = model.outputs(name, args)
    with torch.no_grad():
        expected, _ = ref(xs, h0 if gru else tuple(states))
        pool.reset()
        model(name, args, outs)
        torch.cuda.synchronize()
        pool_high, _ = pool.high()
        err = rel_err(outs[0].cpu().numpy(), expected.double().cpu().numpy())
        # On the legacy default stream the runtime replays the call's graph on
        # a stream of its own, ordered by events; run directly (no graph),
        # every kernel is launched one by one.
        default_stream = time_ms(lambda: model(name, args, outs))
        direct = time_ms(without_graphs(lambda: model(name, args, outs)))
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        call = lambda: model(name, args, outs)  # noqa: E731
        with torch.cuda.stream(side):
            # The graph's memory: the first replays, before the graph of the
            # run without early launch exists.
            pool.reset()
            for _ in range(3):
                call()
            side.synchronize()
            _, graph_high = pool.high()
        blocks = [(call, side), (without_overlap(call), side),
                  (lambda: cudnn_module(*cudnn_inputs), torch.cuda.current_stream())]
        if bf16:
            # The same library with its persistent kernels refused: the
            # recurrence step by step (where the model has none, the same).
            blocks.append((with_setting(call, "RNN_CUDA_PERSISTENT", "0"), side))
        ours, no_overlap, cudnn, *stepwise = time_in_rounds(blocks)
        stepwise = stepwise[0] if stepwise else None
        with torch.cuda.stream(side):
            model(name, args, outs)
            side.synchronize()
            graph_err = rel_err(outs[0].cpu().numpy(),
                                expected.double().cpu().numpy())
        torch.cuda.current_stream().wait_stream(side)
        compiled, compile_s = None, None
        if with_compile:
            forward, compile_s = compiled_baseline(kind, args, L, bf16)
            compiled = time_ms(forward)
        projection, recurrent = breakdown(kind, args, T, bf16) if L == 1 else (None, None)
    gates = T * B * (3 if gru else 4) * H * 4
    row = {"kind": kind, "config": cfg["name"], "T": T, "B": B, "I": I, "H": H, "L": L,
           "dtype": "bf16 storage, fp32 accumulation" if bf16 else "fp32 (tf32 allowed)",
           "ours_ms": ours, "cudnn_ms": cudnn, "ratio_cudnn_over_ours": cudnn / ours,
           "torch_compile_ms": compiled, "torch_compile_compile_s": compile_s,
           "ratio_compile_over_ours": compiled / ours if compiled else None,
           "rel_err_vs_torch": err, "rel_err_graph_replay_vs_torch": graph_err,
           "ours_without_graph_ms": direct, "ours_default_stream_ms": default_stream,
           "ours_us_per_step": 1000 * ours / T,
           "ours_without_overlap_ms": no_overlap,
           "ours_without_persistent_ms": stepwise,
           "gemm_projection_ms": projection, "gemm_recurrent_ms": recurrent,
           "device_pool_high_bytes": pool_high, "graph_pool_high_bytes": graph_high,
           "gate_buffer_bytes_per_layer": gates}
    report.append(row)
    extra = f"  torch.compile {compiled:8.3f} ms ({compiled / ours:5.2f}x)" if compiled else ""
    print(f"  {kind:9s} {cfg['name']:14s} L={L} ours {ours:8.3f} ms (default stream {default_stream:7.3f}, "
          f"no graph {direct:7.3f})  "
          f"cuDNN {cudnn:8.3f} ms  cuDNN/ours {cudnn / ours:5.2f}x{extra}  "
          f"rel err {err:.1e}/{graph_err:.1e}  no early launch {no_overlap:.3f} ms  "
          + (f"no persistent kernel {stepwise:.3f} ms  " if stepwise else "") +
          f"scratch {pool_high / 2**20:.1f} MiB "
          f"(graph {graph_high / 2**20:.1f}, gate buffer {gates / 2**20:.1f})")
    if projection is not None:
        rest = ours - projection - recurrent
        print(f"      breakdown: projection GEMM {projection:.3f} ms + recurrent GEMMs "
              f"{1000 * recurrent / T:.2f} us/step + rest (pointwise kernel, launch gaps) "
              f"{1000 * rest / T:.2f} us/step")


TORCH_DTYPES = {"f32": torch.float32, "f64": torch.float64, "bf16": torch.bfloat16,
                "f16": torch.float16}


def random_args(model, name, T, B, seed):
    """Random inputs for every argument of `name`: [T, B, ...] for the
    sequence, B for other dynamic sizes, scaled by 1/sqrt(last dim)."""
    gen = torch.Generator(device="cuda").manual_seed(seed)
    args = []
    for i, (dtype, shape) in enumerate(model.model.signature(name)[0]):
        dims = [(T if i == 0 and d == 0 else B) if s is None else s
                for d, s in enumerate(shape)]
        scale = 1.0 / (dims[-1] ** 0.5) if dims else 1.0
        args.append((torch.randn(dims, device="cuda", generator=gen) * scale).to(
            TORCH_DTYPES[dtype]))
    return args


def bench_zoo(model_dir, cfg, report, precision="fp32"):
    """Every zoo cell (bench/make_zoo_models.py) at `medium`, timed as our
    LSTM (graph replay on a side stream), in rounds with our LSTM model
    (fp32: lstm_I1024_H1024; bf16: the zoo's LSTM built the same way as the
    other bf16 cells, with --matmul-type=bf16) so that the ratio compares the
    same moments."""
    T, B = cfg["T"], cfg["B"]
    if precision == "fp32":
        prefix, lstm_name = "zoo_", "lstm_seq"
        lstm_path = os.path.join(model_dir, f"lstm_I{cfg['I']}_H{cfg['H']}.so")
    else:
        prefix, lstm_name = f"zoo{precision}_", "forward"
        lstm_path = os.path.join(model_dir, f"{prefix}lstm.so")
        if not os.path.exists(lstm_path):
            return
    lstm = CudaModel(lstm_path)
    lstm_args = random_args(lstm, lstm_name, T, B, seed=5)
    lstm_outs = lstm.outputs(lstm_name, lstm_args)
    lstm_side = torch.cuda.Stream()
    print(f"== every zoo cell at medium (T={T}, B={B}, I=H={cfg['H']}), {precision}, in "
          f"rounds with our LSTM")
    for path in sorted(glob.glob(os.path.join(model_dir, f"{prefix}*.so"))):
        cell = os.path.basename(path)[len(prefix):-3]
        model = CudaModel(path)
        args = random_args(model, "forward", T, B, seed=5)
        outs = model.outputs("forward", args)
        # A direct call (no graph, cuBLAS's own workspace), to compare the
        # tuned graph's replays with.
        direct = model.outputs("forward", args)
        with torch.no_grad():
            without_graphs(lambda: model("forward", args, direct))()
        torch.cuda.synchronize()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        lstm_side.wait_stream(torch.cuda.current_stream())
        call = lambda: model("forward", args, outs)  # noqa: E731
        with torch.no_grad():
            ms, no_overlap, lstm_ms = time_in_rounds(
                [(call, side), (without_overlap(call), side),
                 (lambda: lstm(lstm_name, lstm_args, lstm_outs), lstm_side)])
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.current_stream().wait_stream(lstm_side)
        finite = all(bool(torch.isfinite(o).all()) for o in outs)
        torch.cuda.synchronize()
        graph_err = max(rel_err(o.cpu().numpy(), d.double().cpu().numpy())
                        for o, d in zip(outs, direct))
        ratio = ms / lstm_ms
        report.append({"check": "zoo_medium", "cell": cell, "precision": precision,
                       "ours_ms": ms,
                       "ours_without_overlap_ms": no_overlap, "our_lstm_ms": lstm_ms,
                       "ratio_to_our_lstm": ratio, "finite": finite,
                       "graph_vs_direct_rel_err": graph_err})
        print(f"  {cell:18s} {ms:8.3f} ms  (no early launch {no_overlap:.3f}, "
              f"our LSTM {lstm_ms:.3f})  {ratio:5.2f}x our LSTM  "
              f"{'ok' if ratio <= 1.25 else 'OVER 1.25x'}{'' if finite else '  NON-FINITE'}"
              f"  graph replay vs direct call {graph_err:.1e}"
              f"{'' if graph_err <= 1e-3 else '  GRAPH DIFFERS'}")


def main(model_dir, out_json):
    report = []
    print("device:", torch.cuda.get_device_name(0), "torch", torch.__version__)
    check_zoo(model_dir, report)
    check_two_stage_wide(model_dir, report)
    check_changing_inputs(model_dir, report)
    check_lengths(model_dir, report)
    check_default_stream_order(model_dir, report)
    check_persistent(model_dir, report)
    pool = MemPool()
    print("== timing: cuDNN and torch.compile vs ours; fp32 with tf32 allowed, and bf16 "
          f"storage (ours, ours without early launch and cuDNN: 3 rounds of {REPEATS} "
          "CUDA-event timings in alternation, medians; torch.compile: median of "
          f"{REPEATS})")
    configs = json.load(open(os.path.join(ROOT, "bench", "configs.json")))["configs"]
    # For quick experiments: RNN_BENCH_CONFIGS=medium,wide times only those
    # shapes, RNN_BENCH_COMPILE=0 skips torch.compile. The documented tables
    # come from the default (everything).
    only = os.environ.get("RNN_BENCH_CONFIGS")
    with_compile = os.environ.get("RNN_BENCH_COMPILE", "1") != "0"
    for cfg in configs:
        if only and cfg["name"] not in only.split(",") and cfg["name"] != "medium":
            continue
        for kind in ("lstm", "gru", "lstm_bf16", "gru_bf16"):
            bench_config(model_dir, kind, cfg, report, pool, with_compile=with_compile)
    medium = next(c for c in configs if c["name"] == "medium")
    bench_zoo(model_dir, medium, report)
    bench_zoo(model_dir, medium, report, precision="bf16")
    with open(out_json, "w") as f:
        json.dump({"device": torch.cuda.get_device_name(0), "results": report}, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
