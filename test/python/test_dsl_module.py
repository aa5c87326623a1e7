"""rnn.NumpyRNN: layers, directions, lengths, batch_first, unbatched input, initial states,
parameters (PyTorch's init, names per layer and direction) and the state_dict name mapping
(tested with plain numpy dicts that mimic torch's state_dict)."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import reference
from test_dsl_common import assert_close, rand, randomize, params_of, rnn, scaled_cell

I, H = 10, 20
LSTM_P = ["W", "U", "b_W", "b_U"]


def ref_stack(cell_fn, names, model, xs, inits, lengths=None):
    """Reference of a (multi-layer, maybe bidirectional) model: output and final states
    stacked [D*L, B, n] per state, from reference.scan per layer and direction."""
    s = model._spec
    D = 2 if s.bidirectional else 1
    finals = [[] for _ in s.state_names]
    inp = xs.astype(np.float64)
    for l in range(s.num_layers):
        outs = []
        for d in range(D):
            cell = cell_fn(*params_of(model, names, l, d == 1))
            states = tuple(st[l * D + d] for st in inits)
            (ys,), fin = reference.scan(cell, inp, states, reverse=d == 1, lengths=lengths)
            outs.append(ys)
            for k, f in enumerate(fin):
                finals[k].append(f)
        inp = np.concatenate(outs, axis=-1)
    return inp, [np.stack(f) for f in finals]


@pytest.fixture(scope="module")
def bilstm():
    return randomize(rnn.NumpyRNN(rnn.zoo.lstm, I, H, num_layers=2, bidirectional=True), seed=1)


@pytest.mark.parametrize("lengths", [None, [6, 2, 4, 1], [6, 6, 6, 6], [0, 3, 6, 5]],
                         ids=["nolengths", "mixed", "full", "zero"])
def test_bidirectional_two_layers(bilstm, lengths):
    rng = np.random.default_rng(5)
    T, B = 6, 4
    xs = rand(rng, T, B, I)
    inits = (rand(rng, 4, B, H), rand(rng, 4, B, H))
    ys, (hT, cT) = bilstm(xs, inits, lengths=lengths)
    assert ys.shape == (T, B, 2 * H) and hT.shape == cT.shape == (4, B, H)
    ref_ys, (ref_h, ref_c) = ref_stack(reference.lstm_cell, LSTM_P, bilstm, xs, inits, lengths)
    assert_close(ys, ref_ys, "output")
    assert_close(hT, ref_h, "h_n")
    assert_close(cT, ref_c, "c_n")
    if lengths is not None:
        for b, n in enumerate(lengths):
            assert np.all(ys[n:, b] == 0.0), "padding positions are exactly zero"


def test_full_lengths_equal_no_lengths(bilstm):
    rng = np.random.default_rng(6)
    xs = rand(rng, 5, 3, I)
    a = bilstm(xs)
    b = bilstm(xs, lengths=np.array([5, 5, 5], dtype=np.int32))
    np.testing.assert_allclose(a[0], b[0], rtol=0, atol=1e-6)
    np.testing.assert_allclose(a[1][0], b[1][0], rtol=0, atol=1e-6)


def test_gru_batch_first_and_default_states():
    model = randomize(rnn.NumpyRNN(rnn.zoo.gru, I, H, num_layers=3, batch_first=True), seed=2)
    rng = np.random.default_rng(8)
    B, T = 2, 5
    xs_bf = rand(rng, B, T, I)
    ys, hT = model(xs_bf)
    assert ys.shape == (B, T, H) and hT.shape == (3, B, H)
    zeros = np.zeros((3, B, H))
    ref_ys, (ref_h,) = ref_stack(reference.gru_cell, LSTM_P, model,
                                 xs_bf.transpose(1, 0, 2), (zeros,))
    assert_close(ys, ref_ys.transpose(1, 0, 2), "output")
    assert_close(hT, ref_h, "h_n")
    # one cell per distinct input width: layers 1 and 2 share theirs
    assert model.mlir.count("rnn.cell @") == 2


def test_lstmp_bidirectional_widths():
    """The second layer's input is 2 * P wide: a second cell."""
    model = randomize(rnn.NumpyRNN(rnn.zoo.lstmp, I, H, proj_size=6, num_layers=2,
                              bidirectional=True), seed=4)
    assert "rnn.cell @lstmp_i10" in model.mlir and "rnn.cell @lstmp_i12" in model.mlir
    rng = np.random.default_rng(9)
    xs = rand(rng, 4, 3, I)
    ys, (rT, cT) = model(xs, lengths=[4, 1, 3])
    assert ys.shape == (4, 3, 12) and rT.shape == (4, 3, 6) and cT.shape == (4, 3, H)
    zeros = (np.zeros((4, 3, 6)), np.zeros((4, 3, H)))
    ref_ys, (ref_r, ref_c) = ref_stack(reference.lstmp_cell, LSTM_P + ["W_hr"], model, xs,
                                       zeros, lengths=[4, 1, 3])
    assert_close(ys, ref_ys, "output")
    assert_close(rT, ref_r, "r_n")
    assert_close(cT, ref_c, "c_n")


def test_unbatched_and_dict_states(bilstm):
    rng = np.random.default_rng(10)
    x = rand(rng, 5, I)
    h0 = rand(rng, 4, H)
    ys, fin = bilstm(x, {"h": h0})
    assert ys.shape == (5, 2 * H) and set(fin) == {"h", "c"} and fin["h"].shape == (4, H)
    ys_b, (h_b, c_b) = bilstm(x[:, None], (h0[:, None], None))
    np.testing.assert_array_equal(ys, ys_b[:, 0])
    np.testing.assert_array_equal(fin["c"], c_b[:, 0])


def test_parameters_init_and_names():
    model = rnn.NumpyRNN(rnn.zoo.lstm, I, H, num_layers=2, bidirectional=True, seed=0)
    keys = [k for k, _ in model.named_parameters()]
    assert keys == [f"{n}_l{l}{r}" for l in range(2) for r in ("", "_reverse") for n in LSTM_P]
    assert model.param("W", 0).shape == (4 * H, I)
    assert model.param("W", 1, reverse=True).shape == (4 * H, 2 * H)
    bound = 1 / np.sqrt(H)
    for _, a in model.named_parameters():
        assert a.dtype == np.float32 and np.all(np.abs(a) <= bound) and np.std(a) > bound / 4
    again = rnn.NumpyRNN(rnn.zoo.lstm, I, H, num_layers=2, bidirectional=True, seed=0)
    assert all(np.array_equal(a, b) for (_, a), (_, b) in
               zip(model.named_parameters(), again.named_parameters()))
    assert again.from_cache, "the same model twice: the second comes from the cache"
    ln = rnn.NumpyRNN(rnn.zoo.layernorm_lstm, I, H, seed=0)
    assert np.all(ln.param("gamma_x") == 1) and np.all(ln.param("beta_c") == 0)
    with pytest.raises(KeyError, match="no parameter 'V_l0'"):
        model.param("V")


def torch_like_state_dict(num_layers, bidirectional, I, H, gates, rng, proj=0):
    sd = {}
    for l in range(num_layers):
        for sfx in ("", "_reverse") if bidirectional else ("",):
            width = I if l == 0 else (2 if bidirectional else 1) * (proj or H)
            sd[f"weight_ih_l{l}{sfx}"] = rng.standard_normal((gates * H, width))
            sd[f"weight_hh_l{l}{sfx}"] = rng.standard_normal((gates * H, proj or H))
            sd[f"bias_ih_l{l}{sfx}"] = rng.standard_normal(gates * H)
            sd[f"bias_hh_l{l}{sfx}"] = rng.standard_normal(gates * H)
            if proj:
                sd[f"weight_hr_l{l}{sfx}"] = rng.standard_normal((proj, H))
    return sd


def test_state_dict_torch_names(bilstm):
    rng = np.random.default_rng(0)
    sd = torch_like_state_dict(2, True, I, H, 4, rng)
    model = rnn.NumpyRNN(rnn.zoo.lstm, I, H, num_layers=2, bidirectional=True)
    model.load_state_dict(sd)
    assert np.array_equal(model.param("U", 1, reverse=True),
                          sd["weight_hh_l1_reverse"].astype(np.float32))
    assert np.array_equal(model.param("b_W", 0), sd["bias_ih_l0"].astype(np.float32))
    out = model.state_dict()
    assert list(out) == list(sd)  # torch's key order: layer, direction, ih, hh, b_ih, b_hh
    for k in sd:
        np.testing.assert_array_equal(out[k], sd[k].astype(np.float32))
    out["weight_ih_l0"][...] = 0  # state_dict() gives copies
    assert np.any(model.param("W", 0) != 0)
    # lstmp: weight_hr, with U [4H, P]
    sdp = torch_like_state_dict(2, True, I, H, 4, rng, proj=6)
    mp = rnn.NumpyRNN(rnn.zoo.lstmp, I, H, proj_size=6, num_layers=2, bidirectional=True)
    mp.load_state_dict(sdp)
    assert np.array_equal(mp.param("W_hr", 1, True), sdp["weight_hr_l1_reverse"].astype(np.float32))
    assert list(mp.state_dict()) == list(sdp)
    # gru: 3 gates
    sdg = torch_like_state_dict(1, False, I, H, 3, rng)
    mg = rnn.NumpyRNN(rnn.zoo.gru, I, H)
    mg.load_state_dict(sdg)
    assert list(mg.state_dict()) == list(sdg)


def test_state_dict_errors():
    rng = np.random.default_rng(1)
    model = rnn.NumpyRNN(rnn.zoo.lstm, I, H, num_layers=2)
    sd = torch_like_state_dict(2, False, I, H, 4, rng)
    bad = dict(sd, weight_ih_l1=np.zeros((80, 7)))
    with pytest.raises(rnn.ShapeError, match=r"weight_ih_l1: expected shape \[80, 20\], got "
                                             r"\[80, 7\]"):
        model.load_state_dict(bad)
    missing = {k: v for k, v in sd.items() if k != "bias_hh_l0"}
    with pytest.raises(rnn.ShapeError, match="missing keys: bias_hh_l0"):
        model.load_state_dict(missing)
    with pytest.raises(rnn.ShapeError, match="unexpected keys: weight_ih_l0_reverse"):
        model.load_state_dict(dict(sd, weight_ih_l0_reverse=sd["weight_ih_l0"]))
    before = model.param("W").copy()
    result = model.load_state_dict(missing, strict=False)
    assert result["missing_keys"] == ["bias_hh_l0"]
    assert not np.array_equal(before, model.param("W"))


def test_state_dict_own_names_for_cells_without_torch():
    model = rnn.NumpyRNN(rnn.zoo.mgu, I, H, bidirectional=True, seed=3)
    sd = model.state_dict()
    assert list(sd) == ["W_l0", "U_l0", "b_l0", "W_l0_reverse", "U_l0_reverse", "b_l0_reverse"]
    other = rnn.NumpyRNN(rnn.zoo.mgu, I, H, bidirectional=True, seed=4)
    other.load_state_dict(sd)
    assert all(np.array_equal(a, b) for (_, a), (_, b) in
               zip(model.named_parameters(), other.named_parameters()))


def test_torch_is_imported_lazily():
    """Importing rnn, building and running a model never imports torch."""
    code = (
        "import sys, numpy as np\n"
        f"sys.path.insert(0, {str(Path(rnn.__file__).parents[1])!r})\n"
        "import rnn\n"
        "m = rnn.NumpyRNN(rnn.zoo.gru, 4, 5)\n"
        "m(np.zeros((2, 1, 4), np.float32))\n"
        "m.state_dict(); m.load_state_dict(m.state_dict())\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
        "print('ok')\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=dict(os.environ))
    assert r.returncode == 0 and "ok" in r.stdout, r.stderr


def test_repr_and_properties(bilstm):
    assert repr(bilstm).startswith("rnn.NumpyRNN(lstm, input_size=10, hidden_size=20")
    assert bilstm.state_names == ("h", "c") and bilstm.dtype == "float32"
    assert bilstm.num_layers == 2 and bilstm.bidirectional and not bilstm.batch_first


def test_rank0_parameter_stays_scalar():
    """A rank-0 parameter is a numpy scalar array, and the model runs with it."""
    model = rnn.NumpyRNN(scaled_cell, 3, 4, seed=0)
    assert model.param("s").shape == ()
    x = np.random.default_rng(0).standard_normal((5, 2, 3)).astype(np.float32)
    y, h = model(x)
    W = model.param("W").astype(np.float64)
    ref = np.zeros((2, 4))
    for t in range(5):
        ref = np.tanh(x[t] @ W.T + 0.5 * ref)
    np.testing.assert_allclose(h[0], ref, rtol=1e-5, atol=1e-6)
