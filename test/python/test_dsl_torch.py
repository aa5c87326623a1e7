"""PyTorch interop (runs only where torch is importable): rnn.NumpyRNN.from_torch on
torch.nn.LSTM (with and without proj_size), GRU and RNN (tanh, relu), every layer and
direction, against the torch module's own forward (with packed sequences for lengths);
state_dict() / to_torch() back into torch."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from test_dsl_common import assert_close, rand, rnn  # noqa: E402

I, H = 10, 20
T, B = 6, 4
LENGTHS = [6, 3, 1, 5]

CASES = {
    "lstm_2l_bi": lambda: torch.nn.LSTM(I, H, num_layers=2, bidirectional=True),
    "lstm_proj_bi": lambda: torch.nn.LSTM(I, H, num_layers=2, bidirectional=True,
                                          proj_size=7),
    "gru_2l_bi_bf": lambda: torch.nn.GRU(I, H, num_layers=2, bidirectional=True,
                                         batch_first=True),
    "gru_3l": lambda: torch.nn.GRU(I, H, num_layers=3),
    "rnn_tanh_bi": lambda: torch.nn.RNN(I, H, bidirectional=True),
    "rnn_relu_2l": lambda: torch.nn.RNN(I, H, num_layers=2, nonlinearity="relu"),
    "lstm_nobias": lambda: torch.nn.LSTM(I, H, num_layers=2, bias=False),
}


def make(case):
    torch.manual_seed(sorted(CASES).index(case))
    return CASES[case]().eval()


def torch_run(module, x, hx, lengths):
    xt = torch.from_numpy(x)
    hxt = None
    if hx is not None:
        hxt = tuple(torch.from_numpy(h) for h in hx) if isinstance(hx, tuple) \
            else torch.from_numpy(hx)
    with torch.no_grad():
        if lengths is None:
            out, fin = module(xt, hxt)
        else:
            packed = torch.nn.utils.rnn.pack_padded_sequence(
                xt, torch.tensor(lengths), batch_first=module.batch_first,
                enforce_sorted=False)
            out, fin = module(packed, hxt)
            out, _ = torch.nn.utils.rnn.pad_packed_sequence(
                out, batch_first=module.batch_first, total_length=T)
    fin = tuple(f.numpy() for f in fin) if isinstance(fin, tuple) else fin.numpy()
    return out.numpy(), fin


@pytest.mark.parametrize("lengths", [None, LENGTHS], ids=["full", "lengths"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_from_torch_matches_torch(case, lengths):
    module = make(case)
    model = rnn.NumpyRNN.from_torch(module)
    D = 2 if module.bidirectional else 1
    L = module.num_layers
    rng = np.random.default_rng(1)
    x = rand(rng, B, T, I) if module.batch_first else rand(rng, T, B, I)
    out_size = module.proj_size if getattr(module, "proj_size", 0) else H
    if isinstance(module, torch.nn.LSTM):
        hx = (rand(rng, D * L, B, out_size), rand(rng, D * L, B, H))
    else:
        hx = rand(rng, D * L, B, H)
    ours_out, ours_fin = model(x, hx, lengths=lengths)
    ref_out, ref_fin = torch_run(module, x, hx, lengths)
    assert ours_out.shape == ref_out.shape
    assert_close(ours_out, ref_out, f"{case}: output", rtol=2e-5)
    ours_fin = ours_fin if isinstance(ours_fin, tuple) else (ours_fin,)
    ref_fin = ref_fin if isinstance(ref_fin, tuple) else (ref_fin,)
    for k, (a, b) in enumerate(zip(ours_fin, ref_fin)):
        assert a.shape == b.shape
        assert_close(a, b, f"{case}: final state #{k}", rtol=2e-5)


@pytest.mark.parametrize("case", sorted(CASES))
def test_state_dict_round_trip(case):
    module = make(case)
    model = rnn.NumpyRNN.from_torch(module)
    sd = model.state_dict()
    assert list(sd) == list(module.state_dict())
    for k, v in module.state_dict().items():
        np.testing.assert_array_equal(sd[k], v.numpy())
    fresh = CASES[case]()
    fresh.load_state_dict(model.state_dict(torch=True))  # strict: the names match exactly
    back = model.to_torch()
    assert type(back) is type(module)
    for k, v in module.state_dict().items():
        assert torch.equal(back.state_dict()[k], v)


def test_float64_module():
    module = make("gru_3l").double()
    model = rnn.NumpyRNN.from_torch(module)
    assert model.dtype == "float64"
    x = np.random.default_rng(2).standard_normal((T, B, I))
    ours, _ = model(x)
    ref, _ = torch_run(module, x, None, None)
    assert_close(ours, ref, "float64 output", rtol=1e-10)


def test_load_state_dict_accepts_torch_tensors():
    module = make("lstm_2l_bi")
    model = rnn.NumpyRNN(rnn.zoo.lstm, I, H, num_layers=2, bidirectional=True)
    model.load_state_dict(module.state_dict())
    np.testing.assert_array_equal(model.param("U", 1, reverse=True),
                                  module.weight_hh_l1_reverse.detach().numpy())
