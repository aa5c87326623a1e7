"""rnn.RNN as a torch.nn.Module (python/rnn/nn.py) and its custom ops (_torch_ops.py), on the
CPU: the same outputs and gradients as torch.nn.LSTM / GRU / RNN for the same weights;
torch.autograd.gradcheck in float64 for every zoo cell and for random cells; opcheck of the
ops; torch.compile(fullgraph=True) without recompiling when T or B change, torch.export;
pickling; PackedSequence; dropout and zoneout under a seed; bias, proj_size, rank-0
parameters; precision (half parameters, autocast, GradScaler); autograd behaviour
(accumulation, retain_graph, two forwards, no_grad); errors."""

import copy
import io
import os
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import rnn  # noqa: E402
from rnn import _torch_ops  # noqa: E402
from torch.nn.utils.rnn import pack_padded_sequence  # noqa: E402

import cellgen  # noqa: E402
from test_dsl_common import scaled_cell  # noqa: E402

F64 = torch.float64
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Small shapes: gradcheck perturbs every element.
T, B, I, H = 4, 2, 3, 4
TORCH_CELLS = {
    "lstm": (rnn.zoo.lstm, lambda **kw: torch.nn.LSTM(I, H, **kw)),
    "gru": (rnn.zoo.gru, lambda **kw: torch.nn.GRU(I, H, **kw)),
    "rnn_tanh": (rnn.zoo.rnn_tanh, lambda **kw: torch.nn.RNN(I, H, **kw)),
    "rnn_relu": (rnn.zoo.rnn_relu, lambda **kw: torch.nn.RNN(I, H, nonlinearity="relu", **kw)),
}


def _states(model, batch, dtype=F64, requires_grad=True, seed=0):
    g = torch.Generator().manual_seed(seed)
    D = 2 if model.bidirectional else 1
    hs = [torch.randn(D * model.num_layers, batch, n, dtype=dtype, generator=g)
          .requires_grad_(requires_grad) for n in model._spec.state_sizes]
    return hs[0] if len(hs) == 1 else tuple(hs)


def _flat(out):
    y, h = out
    return [y] + (list(h) if isinstance(h, tuple) else [h])


@pytest.mark.parametrize("name", sorted(TORCH_CELLS))
def test_same_as_torch_nn_forward_and_gradients(name):
    """2 layers, bidirectional, lengths: outputs and every gradient equal torch.nn's."""
    cell, make = TORCH_CELLS[name]
    torch.manual_seed(0)
    ours = rnn.RNN(cell, I, H, num_layers=2, bidirectional=True, dtype=F64)
    ref = make(num_layers=2, bidirectional=True).double()
    ref.load_state_dict(ours.state_dict())
    x = torch.randn(5, 3, I, dtype=F64, requires_grad=True)
    hx = _states(ours, 3)
    lengths = torch.tensor([5, 1, 3])
    out = _flat(ours(x, hx, lengths=lengths))
    packed = pack_padded_sequence(x, lengths, enforce_sorted=False)
    ref_y, ref_h = ref(packed, hx)
    ref_y = torch.nn.utils.rnn.pad_packed_sequence(ref_y, total_length=5)[0]
    ref_out = _flat((ref_y, ref_h))
    for a, b in zip(out, ref_out):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)
    weights = [torch.randn_like(o) for o in out]
    leaves = [x, *(hx if isinstance(hx, tuple) else [hx])]
    g_ours = torch.autograd.grad(sum((w * o).sum() for w, o in zip(weights, out)),
                                 leaves + list(ours.parameters()))
    g_ref = torch.autograd.grad(sum((w * o).sum() for w, o in zip(weights, ref_out)),
                                leaves + list(ref.parameters()))
    for a, b in zip(g_ours, g_ref):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-10)


def _gradcheck_module(model, x, hx, lengths=None):
    names = [n for n, _ in model.named_parameters()]
    params = [p.detach().clone().requires_grad_() for p in model.parameters()]
    hs = list(hx) if isinstance(hx, tuple) else [hx]

    def f(x, *rest):
        states, ps = rest[:len(hs)], rest[len(hs):]
        h = tuple(states) if isinstance(hx, tuple) else states[0]
        out = torch.func.functional_call(model, dict(zip(names, ps)), (x, h),
                                         {"lengths": lengths})
        return tuple(_flat(out))

    assert torch.autograd.gradcheck(f, (x, *hs, *params), atol=1e-7, rtol=1e-6)


@pytest.mark.parametrize("name", sorted(n for n in rnn.zoo.__all__ if n != "CELLS"))
def test_gradcheck_zoo(name):
    """Every zoo cell, float64, gradients of the output and final states with respect to the
    input, the initial states and every parameter, against finite differences."""
    cell = getattr(rnn.zoo, name)
    kw = {"proj_size": 2} if name == "lstmp" else {}
    if name in ("headwise_lstm", "headwise_gru", "slstm"):
        kw = {"sizes": {"NH": 2}}
    torch.manual_seed(1)
    i = H if name == "sru" else I  # the SRU's highway needs I = H
    model = rnn.RNN(cell, i, H, dtype=F64, **kw)
    x = torch.randn(T, B, i, dtype=F64, requires_grad=True)
    states = _states(model, B)
    if name == "slstm":  # a positive normaliser n
        states = tuple(s.detach().abs().add(1.0).requires_grad_() if k == 2 else s
                       for k, s in enumerate(states))
    _gradcheck_module(model, x, states, lengths=torch.tensor([T, 2]))


def test_gradcheck_two_layers_bidirectional():
    torch.manual_seed(2)
    model = rnn.RNN(rnn.zoo.gru_reset_before, I, H, num_layers=2, bidirectional=True,
                    dtype=F64)
    x = torch.randn(T, B, I, dtype=F64, requires_grad=True)
    _gradcheck_module(model, x, _states(model, B))


RANDOM_SEEDS = range(0, 12)


@pytest.fixture(scope="module")
def random_cells(tmp_path_factory):
    """The first cellgen cells in float64, one library (rnn-compile --training -O0)."""
    texts, funcs = [], {}
    for seed in RANDOM_SEEDS:
        text, _, shapes = cellgen.generate(seed)
        text = text.replace("f32", "f64").replace("@cell ", f"@cell_{seed} ") \
            .replace("@cell(", f"@cell_{seed}(").replace("@cell_seq(", f"@cell_seq_{seed}(")
        texts.append(text)
        funcs[seed] = (f"cell_seq_{seed}", shapes)
    path = tmp_path_factory.mktemp("random") / "cells.so"
    rnn.compile_mlir("\n".join(texts), path, training=True, extra_args=("-O0",))
    return str(path), funcs


@pytest.mark.parametrize("seed", RANDOM_SEEDS)
def test_gradcheck_random_cells(random_cells, seed):
    """Random cells through the rnn::train op: torch.autograd.gradcheck in float64."""
    library, funcs = random_cells
    func, shapes = funcs[seed]
    rng = np.random.default_rng(seed)
    args = [torch.from_numpy(a.astype(np.float64)).requires_grad_()
            for a in cellgen.make_args(shapes, 3, 2, rng)]

    def f(*args):
        n = _torch_ops.num_results(library, func)
        return tuple(_torch_ops.train(library, func, list(args))[:n])

    assert torch.autograd.gradcheck(f, args, atol=1e-7, rtol=1e-6)


def test_opcheck():
    """Schema, fake (meta) implementation, autograd registration, AOT dispatch with dynamic
    shapes: torch.library.opcheck of both ops."""
    model = rnn.RNN(rnn.zoo.lstm, I, H, dtype=F64)
    library = model._library("cpu", "f64", None)
    args = [torch.randn(T, B, I, dtype=F64, requires_grad=True),
            torch.randn(B, H, dtype=F64, requires_grad=True),
            torch.randn(B, H, dtype=F64, requires_grad=True)]
    args += [p.detach().clone().requires_grad_() for p in model.parameters()]
    torch.library.opcheck(torch.ops.rnn.train.default, (library, "forward", args))
    torch.library.opcheck(torch.ops.rnn.run.default,
                          (library, "forward", [a.detach() for a in args]))


def test_compile_fullgraph_no_recompile():
    """torch.compile(fullgraph=True, dynamic=True): one graph (our op in it), no recompile
    when T or B change; outputs and gradients equal eager's."""
    from torch._dynamo.testing import CompileCounterWithBackend
    torch._dynamo.reset()
    model = rnn.RNN(rnn.zoo.gru, I, H, dtype=F64)
    counter = CompileCounterWithBackend("aot_eager")
    compiled = torch.compile(model, fullgraph=True, dynamic=True, backend=counter)
    frames = None
    for t, b in ((5, 2), (7, 3), (2, 5)):  # (sizes 0 and 1 are specialised by torch)
        x = torch.randn(t, b, I, dtype=F64, requires_grad=True)
        y, h = compiled(x)
        frames = frames or counter.frame_count
        (y.sum() + h.sum()).backward()
        gx, gw = x.grad.clone(), model.weight_hh_l0.grad.clone()
        x.grad = None
        model.zero_grad()
        y2, h2 = model(x)
        (y2.sum() + h2.sum()).backward()
        torch.testing.assert_close(y, y2)
        torch.testing.assert_close(gx, x.grad)
        torch.testing.assert_close(gw, model.weight_hh_l0.grad)
        model.zero_grad()
    assert counter.frame_count == frames  # compiled at the first call only


def test_export_sees_one_op():
    model = rnn.RNN(rnn.zoo.lstm, I, H)
    x = torch.randn(T, B, I)
    dims = {0: torch.export.Dim("T"), 1: torch.export.Dim("B")}
    with torch.no_grad():
        ep = torch.export.export(model, (x,), dynamic_shapes=({**dims},))
    targets = [str(n.target) for n in ep.graph.nodes if n.op == "call_function"]
    assert sum("rnn." in t for t in targets) == 1, targets
    x2 = torch.randn(7, 3, I)
    with torch.no_grad():
        torch.testing.assert_close(ep.module()(x2)[0], model(x2)[0])


def test_eager_calls_skip_the_ops_with_the_same_results():
    """In eager mode a call runs the library functions without the custom ops' dispatch
    (_torch_ops._Train); under a dispatch mode, which must see the operators, it goes
    through rnn::train and rnn::run. Outputs and gradients are the same bits either way."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Record(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.ops = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.ops.append(str(func))
            return func(*args, **(kwargs or {}))

    torch.manual_seed(21)
    model = rnn.RNN(rnn.zoo.lstm, I, H, num_layers=2, bidirectional=True, dtype=F64)
    x = torch.randn(T, B, I, dtype=F64, requires_grad=True)

    def step():
        model.zero_grad()
        x.grad = None
        y, (h, c) = model(x)
        (y.sum() + 2 * h.sum()).backward()  # c unused: its gradient is zeros
        with torch.no_grad():
            y_eval = model(x)[0]
        return y, [y, h, c, y_eval, x.grad] + [p.grad for p in model.parameters()]

    y, eager = step()
    assert type(y.grad_fn).__name__ == "_TrainBackward"
    with Record() as record:
        y, traced = step()
    assert type(y.grad_fn).__name__ != "_TrainBackward"
    assert {"rnn.train.default", "rnn.run.default"} <= set(record.ops)
    for a, b in zip(eager, traced):
        assert torch.equal(a, b)
    # Without the private functions that tell a plain eager call (another torch), every
    # call goes through the custom ops, with the same results.
    from rnn import _torch_ops
    saved = _torch_ops._PROBES
    _torch_ops._PROBES = None
    try:
        y, fallback = step()
    finally:
        _torch_ops._PROBES = saved
    assert type(y.grad_fn).__name__ != "_TrainBackward"
    for a, b in zip(eager, fallback):
        assert torch.equal(a, b)


def test_call_plans_bounded(monkeypatch):
    """Calls alike share the result shapes of one rnn.CallPlan; the cache of plans keeps at
    most _PLAN_CACHE_SIZE, the oldest going first."""
    monkeypatch.setattr(_torch_ops, "_PLAN_CACHE_SIZE", 3)
    monkeypatch.setattr(_torch_ops, "_plans", {})
    model = rnn.RNN(rnn.zoo.gru, I, H, dtype=F64)
    ref = torch.nn.GRU(I, H, dtype=F64)
    ref.load_state_dict(model.state_dict())
    for t in (1, 2, 3, 4, 5, 2, 3):
        x = torch.randn(t, B, I, dtype=F64)
        with torch.no_grad():
            y, h = model(x)
            torch.testing.assert_close(y, ref(x)[0], rtol=1e-12, atol=1e-12)
        assert y.shape == (t, B, H) and h.shape == (1, B, H)
        assert len(_torch_ops._plans) <= 3


def test_parameters_state_dict_optimizer():
    """Parameters under torch's names in a parent's state_dict; an optimiser trains them."""
    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = rnn.RNN(rnn.zoo.lstm, I, H, num_layers=2)
            self.head = torch.nn.Linear(H, 1)

        def forward(self, x):
            return self.head(self.rnn(x)[0]).squeeze(-1)

    torch.manual_seed(3)
    net = Net()
    keys = list(net.state_dict())
    assert "rnn.weight_ih_l1" in keys and "rnn.bias_hh_l0" in keys and "head.weight" in keys
    opt = torch.optim.Adam(net.parameters(), lr=0.05)
    x, target = torch.randn(6, 8, I), torch.randn(6, 8)
    losses = []
    for _ in range(30):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(net(x), target)
        loss.backward()
        assert net.rnn.weight_hh_l1.grad is not None and net.rnn.weight_hh_l1.grad.abs().sum() > 0
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0]


def test_pickle_deepcopy_and_reload_in_a_new_process(tmp_path):
    torch.manual_seed(4)
    model = rnn.RNN(rnn.zoo.layernorm_lstm, I, H, bidirectional=True)
    x = torch.randn(T, B, I)
    y = model(x)[0]
    torch.testing.assert_close(copy.deepcopy(model)(x)[0], y)
    buf = io.BytesIO()
    torch.save(model, buf)
    buf.seek(0)
    torch.testing.assert_close(torch.load(buf, weights_only=False)(x)[0], y)
    path = tmp_path / "model.pt"
    torch.save({"model": model, "x": x, "y": y}, path)
    script = ("import sys, torch; sys.path.insert(0, sys.argv[2]); import rnn; "
              "d = torch.load(sys.argv[1], weights_only=False); "
              "torch.testing.assert_close(d['model'](d['x'])[0], d['y']); print('ok')")
    out = subprocess.run([sys.executable, "-c", script, str(path), os.path.join(REPO, "python")],
                         capture_output=True, text=True, env={**os.environ,
                                                              "RNN_CACHE_DIR": str(tmp_path / "c")})
    assert out.returncode == 0 and "ok" in out.stdout, out.stderr


def test_packed_sequence_as_torch():
    torch.manual_seed(5)
    ours = rnn.RNN(rnn.zoo.lstm, I, H, num_layers=2, bidirectional=True)
    ref = torch.nn.LSTM(I, H, num_layers=2, bidirectional=True)
    ref.load_state_dict(ours.state_dict())
    x = torch.randn(6, 4, I, requires_grad=True)
    packed = pack_padded_sequence(x, torch.tensor([3, 6, 1, 4]), enforce_sorted=False)
    hx = _states(ours, 4, dtype=torch.float32, requires_grad=False)
    (y, (h, c)), (ry, (rh, rc)) = ours(packed, hx), ref(packed, hx)
    assert torch.equal(y.batch_sizes, ry.batch_sizes)
    assert torch.equal(y.sorted_indices, ry.sorted_indices)
    assert torch.equal(y.unsorted_indices, ry.unsorted_indices)
    for a, b in ((y.data, ry.data), (h, rh), (c, rc)):
        torch.testing.assert_close(a, b)
    g = torch.autograd.grad(y.data.sum() + c.sum(), x, retain_graph=True)[0]
    rg = torch.autograd.grad(ry.data.sum() + rc.sum(), x)[0]
    torch.testing.assert_close(g, rg)


def test_dropout_between_layers():
    """dropout: seeded and reproducible in train mode, none in eval mode (then as the
    network without dropout), none after the last layer."""
    torch.manual_seed(6)
    model = rnn.RNN(rnn.zoo.gru, I, H, num_layers=3, dropout=0.5)
    plain = rnn.RNN(rnn.zoo.gru, I, H, num_layers=3)
    plain.load_state_dict(model.state_dict())
    x = torch.randn(T, B, I)
    torch.manual_seed(7)
    a = model(x)[0]
    torch.manual_seed(7)
    b = model(x)[0]
    assert torch.equal(a, b)
    assert not torch.allclose(a, plain(x)[0])
    model.eval()
    torch.testing.assert_close(model(x)[0], plain(x)[0])
    # The same as dropping the layers' outputs by hand with the same RNG stream.
    model.train()
    layers = [rnn.RNN(rnn.zoo.gru, I if l == 0 else H, H) for l in range(3)]
    sd = model.state_dict()
    for l, layer in enumerate(layers):
        layer.load_state_dict({k.replace(f"_l{l}", "_l0"): v for k, v in sd.items()
                               if k.endswith(f"_l{l}")})
    torch.manual_seed(8)
    a = model(x)[0]
    torch.manual_seed(8)
    y = x
    for l, layer in enumerate(layers):
        if l:
            y = torch.nn.functional.dropout(y, 0.5, training=True)
        y = layer(y)[0]
    torch.testing.assert_close(a, y)


def _zoneout_lstm_reference(model, x, masks):
    """The zoo LSTM with zoneout, step by step in torch: s = m * s_prev + (1 - m) * s_new."""
    W, U = model.weight_ih_l0, model.weight_hh_l0
    b = model.bias_ih_l0 + model.bias_hh_l0
    h = torch.zeros(x.shape[1], H)
    c = torch.zeros(x.shape[1], H)
    ys = []
    for t in range(x.shape[0]):
        i, f, g, o = (x[t] @ W.T + h @ U.T + b).chunk(4, dim=1)
        c_new = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        h_new = torch.sigmoid(o) * torch.tanh(c_new)
        m_h, m_c = masks[t, :, :H], masks[t, :, H:]
        h = m_h * h + (1 - m_h) * h_new
        c = m_c * c + (1 - m_c) * c_new
        ys.append(h)
    return torch.stack(ys), h, c


def test_zoneout():
    torch.manual_seed(9)
    model = rnn.RNN(rnn.zoo.lstm, I, H, zoneout=0.3)
    x = torch.randn(6, B, I)
    torch.manual_seed(10)
    y, (h, c) = model(x)
    torch.manual_seed(10)
    masks = torch.bernoulli(torch.full((6, B, 2 * H), 0.3))
    assert 0 < masks.mean() < 1
    ry, rh, rc = _zoneout_lstm_reference(model, x, masks)
    for a, b in ((y, ry), (h[0], rh), (c[0], rc)):
        torch.testing.assert_close(a, b)
    torch.manual_seed(10)
    torch.testing.assert_close(model(x)[0], y)
    model.eval()
    plain = rnn.RNN(rnn.zoo.lstm, I, H)
    plain.load_state_dict(model.state_dict())
    torch.testing.assert_close(model(x)[0], plain(x)[0])


def test_zoneout_gradcheck():
    torch.manual_seed(11)
    model = rnn.RNN(rnn.zoo.mgu, I, H, zoneout=0.5, bidirectional=True, dtype=F64)
    x = torch.randn(T, B, I, dtype=F64, requires_grad=True)
    hx = _states(model, B)

    def f(x, h):
        torch.manual_seed(12)  # the same masks at every evaluation
        return tuple(_flat(model(x, h)))

    assert torch.autograd.gradcheck(f, (x, hx), atol=1e-7, rtol=1e-6)


def test_bias_false_and_proj_size():
    torch.manual_seed(13)
    ours = rnn.RNN(rnn.zoo.lstm, I, H, bias=False)
    assert sorted(ours.state_dict()) == ["weight_hh_l0", "weight_ih_l0"]
    ref = torch.nn.LSTM(I, H, bias=False)
    ref.load_state_dict(ours.state_dict())
    x = torch.randn(T, B, I)
    torch.testing.assert_close(ours(x)[0], ref(x)[0])
    with pytest.raises(ValueError, match="cell lstm has no projection"):
        rnn.RNN(rnn.zoo.lstm, I, H, proj_size=2)
    with pytest.raises(ValueError, match="bias=False: cell mgu"):
        rnn.RNN(rnn.zoo.mgu, I, H, bias=False)
    proj = rnn.RNN(rnn.zoo.lstmp, I, H, proj_size=2)
    ref = torch.nn.LSTM(I, H, proj_size=2)
    ref.load_state_dict(proj.state_dict())
    torch.testing.assert_close(proj(x)[0], ref(x)[0])
    from_torch = rnn.RNN.from_torch(ref)
    torch.testing.assert_close(from_torch(x)[1][0], ref(x)[1][0])


def test_rank0_parameter():
    model = rnn.RNN(scaled_cell, I, H, dtype=F64)
    assert model.s_l0.shape == ()
    x = torch.randn(T, B, I, dtype=F64, requires_grad=True)
    _gradcheck_module(model, x, _states(model, B))


def test_precision_half_parameters_autocast_and_gradscaler():
    torch.manual_seed(14)
    model = rnn.RNN(rnn.zoo.lstm, I, H)
    x = torch.randn(T, B, I)
    y32 = model(x)[0]
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = model(x)[0]
    assert y.dtype == torch.bfloat16
    torch.testing.assert_close(y.float(), y32, atol=2e-2, rtol=0)
    half = copy.deepcopy(model).bfloat16()
    y = half(x.bfloat16())[0]
    assert y.dtype == torch.bfloat16
    torch.testing.assert_close(y.float(), y32, atol=2e-2, rtol=0)
    y.float().sum().backward()
    assert half.weight_ih_l0.grad.dtype == torch.bfloat16
    scaler = torch.amp.GradScaler("cpu")
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = model(x)[0].float().pow(2).mean()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    assert all(torch.isfinite(p).all() for p in model.parameters())


def test_autograd_behaviour():
    """Gradients accumulate; retain_graph allows a second backward; two forwards before one
    backward; no_grad records nothing; a backward through the backward is refused."""
    torch.manual_seed(15)
    model = rnn.RNN(rnn.zoo.gru, I, H)
    x = torch.randn(T, B, I)
    y = model(x)[0].sum()
    y.backward(retain_graph=True)
    g1 = model.weight_hh_l0.grad.clone()
    y.backward()
    torch.testing.assert_close(model.weight_hh_l0.grad, 2 * g1)
    model.zero_grad()
    y1, y2 = model(x)[0].sum(), model(2 * x)[0].sum()
    (y1 + y2).backward()
    g12 = model.weight_hh_l0.grad.clone()
    model.zero_grad()
    model(x)[0].sum().backward()
    model(2 * x)[0].sum().backward()
    torch.testing.assert_close(model.weight_hh_l0.grad, g12)
    with torch.no_grad():
        y = model(x)[0]
    assert y.grad_fn is None
    xg = x.clone().requires_grad_()
    g = torch.autograd.grad(model(xg)[0].sum(), xg, create_graph=True)[0]
    with pytest.raises(RuntimeError):
        g.sum().backward()


def test_jit_trace_follows_new_inputs():
    model = rnn.RNN(rnn.zoo.gru, I, H)
    with torch.no_grad():
        traced = torch.jit.trace(model, (torch.randn(T, B, I),), check_trace=False)
        x = torch.randn(T, B, I)
        torch.testing.assert_close(traced(x)[0], model(x)[0])


def test_errors():
    model = rnn.RNN(rnn.zoo.lstm, I, H)
    with pytest.raises(TypeError, match="rnn.NumpyRNN"):
        model(np.zeros((T, B, I), np.float32))
    with pytest.raises(rnn.ShapeError, match=r"input: expected \[T, B, 3\]"):
        model(torch.randn(T, B, I + 1))
    with pytest.raises(rnn.ShapeError, match="expected 2 initial state"):
        model(torch.randn(T, B, I), (torch.zeros(1, B, H),))
    with pytest.raises(rnn.ShapeError, match=r"initial state 'c': expected \[1, 2, 4\]"):
        model(torch.randn(T, B, I), (torch.zeros(1, B, H), torch.zeros(1, 3, H)))
    with pytest.raises(rnn.ShapeError, match=r"lengths: every length must be in \[0, T=4\]"):
        model(torch.randn(T, B, I), lengths=torch.tensor([5, 1]))
    with pytest.raises(TypeError, match="lengths: expected integers"):
        model(torch.randn(T, B, I), lengths=torch.tensor([1.5, 1.0]))
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        rnn.RNN(rnn.zoo.gru, I, H, dropout=0.2)  # as torch.nn.GRU warns: it drops nothing
    with pytest.raises(ValueError, match="dropout should be a number"):
        rnn.RNN(rnn.zoo.lstm, I, H, dropout=1.5)
    with pytest.raises(TypeError, match="must be an rnn.Cell"):
        rnn.RNN(torch.nn.LSTM, I, H)


def test_batch_first_and_unbatched():
    torch.manual_seed(16)
    model = rnn.RNN(rnn.zoo.lstm, I, H, num_layers=2)
    first = rnn.RNN(rnn.zoo.lstm, I, H, num_layers=2, batch_first=True)
    first.load_state_dict(model.state_dict())
    x = torch.randn(T, B, I)
    y, (h, c) = model(x)
    yb, (hb, cb) = first(x.transpose(0, 1))
    torch.testing.assert_close(yb, y.transpose(0, 1))
    torch.testing.assert_close(hb, h)
    y1, (h1, c1) = model(x[:, 0])                      # unbatched: [T, I]
    torch.testing.assert_close(y1, y[:, 0])
    torch.testing.assert_close(c1, c[:, 0])
