"""The cell zoo, written in the DSL: the equations and parameter layouts of
/work/shared/design/cells.md and examples/*.mlir (PyTorch's [out, in] weights, gate order
as PyTorch where PyTorch has the cell). x is [B, I]; states are [B, H] unless noted.

| cell | states | params (shapes) |
|---|---|---|
| rnn_tanh, rnn_relu | h | W [H, I], U [H, H], b_W [H], b_U [H] |
| lstm | h, c | W [4H, I], U [4H, H], b_W [4H], b_U [4H] (rows i, f, g, o) |
| gru (reset-after) | h | W [3H, I], U [3H, H], b_W [3H], b_U [3H] (rows r, z, n) |
| gru_reset_before | h | as gru |
| peephole_lstm | h, c | as lstm, plus p_i, p_f, p_o [H] |
| cifg_lstm | h, c | W [3H, I], U [3H, H], b_W, b_U [3H] (rows i, g, o) |
| lstmp | r [P], c | as lstm with U [4H, P], plus W_hr [P, H] |
| mgu | h | W [2H, I], U [2H, H], b [2H] (rows f, h) |
| sru | c (output h) | W [3H, I], b [3H] (rows x~, f, r), v_f, v_r [H]; needs I = H |
| indrnn | h | W [H, I], u [H], b [H] |
| layernorm_lstm | h, c | W [4H, I], U [4H, H], gamma_x, beta_x, gamma_h, beta_h, b [4H], gamma_c, beta_c [H] |
| headwise_lstm | h, c | W [4H, I], R [NH, 4D, D], b_W [4H], b_U [4H] (rows i, f, g, o; D = H/NH) |
| headwise_gru | h | W [3H, I], R [NH, 3D, D], b_W [3H], b_U [3H] (rows r, z, n) |
| slstm | h, c, n, m | W [4H, I], R [NH, 4D, D], b [4H] (rows i, f, z, o) |

The head-wise cells take the number of heads as the named size NH
(`rnn.RNN(rnn.zoo.slstm, I, H, sizes={"NH": 4})`); their recurrent matrix is block-diagonal,
one [out, in] matrix per head (`rnn.headwise`), whose gate rows are gate-major in the result
as with a dense U, so the gates split the same way.
"""

from .dsl import (H, I, P, CellError, Dim, cell, exp, headwise, layer_norm, maximum, param,
                  relu, sigmoid, size, split, tanh)

__all__ = ["rnn_tanh", "rnn_relu", "lstm", "gru", "gru_reset_before", "peephole_lstm",
           "cifg_lstm", "lstmp", "mgu", "sru", "indrnn", "layernorm_lstm", "headwise_lstm",
           "headwise_gru", "slstm", "CELLS"]

NH = Dim("NH")  # heads of the head-wise cells

_TORCH4 = {"W": "weight_ih", "U": "weight_hh", "b_W": "bias_ih", "b_U": "bias_hh"}


@cell(states=("h",), torch={"module": "RNN", "nonlinearity": "tanh", "names": _TORCH4})
def rnn_tanh(x, h):
    """Elman RNN (torch.nn.RNN, tanh): h = tanh(W x + b_W + U h + b_U)."""
    W = param("W", (H, I))
    U = param("U", (H, H))
    b_W = param("b_W", (H,))
    b_U = param("b_U", (H,))
    return tanh((x @ W.T + b_W) + (h @ U.T + b_U))


@cell(states=("h",), torch={"module": "RNN", "nonlinearity": "relu", "names": _TORCH4})
def rnn_relu(x, h):
    """Elman RNN (torch.nn.RNN, relu): h = relu(W x + b_W + U h + b_U)."""
    W = param("W", (H, I))
    U = param("U", (H, H))
    b_W = param("b_W", (H,))
    b_U = param("b_U", (H,))
    return relu((x @ W.T + b_W) + (h @ U.T + b_U))


@cell(states=("h", "c"), torch={"module": "LSTM", "names": _TORCH4})
def lstm(x, h, c):
    """LSTM as torch.nn.LSTM (gates i, f, g, o)."""
    W = param("W", (4 * H, I))
    U = param("U", (4 * H, H))
    b_W = param("b_W", (4 * H,))
    b_U = param("b_U", (4 * H,))
    i, f, g, o = split((x @ W.T + b_W) + (h @ U.T + b_U), 4)
    c = sigmoid(f) * c + sigmoid(i) * tanh(g)
    h = sigmoid(o) * tanh(c)
    return h, c


@cell(states=("h",), torch={"module": "GRU", "names": _TORCH4})
def gru(x, h):
    """GRU as torch.nn.GRU and cuDNN (reset gate after the recurrent matmul; gates r, z, n)."""
    W = param("W", (3 * H, I))
    U = param("U", (3 * H, H))
    b_W = param("b_W", (3 * H,))
    b_U = param("b_U", (3 * H,))
    x_r, x_z, x_n = split(x @ W.T + b_W, 3)
    h_r, h_z, h_n = split(h @ U.T + b_U, 3)
    r = sigmoid(x_r + h_r)
    z = sigmoid(x_z + h_z)
    n = tanh(x_n + r * h_n)
    return (1 - z) * n + z * h


@cell(states=("h",))
def gru_reset_before(x, h):
    """GRU with the reset gate before the recurrent matmul (Cho v3, Keras
    reset_after=False): n = tanh(W_n x + b_Wn + U_n (r * h) + b_Un). torch.nn.GRU's layout."""
    W = param("W", (3 * H, I))
    U = param("U", (3 * H, H))
    b_W = param("b_W", (3 * H,))
    b_U = param("b_U", (3 * H,))
    U_rz, U_n = split(U, [2 * H, H], axis=0)
    b_Urz, b_Un = split(b_U, [2 * H, H])
    x_r, x_z, x_n = split(x @ W.T + b_W, 3)
    h_r, h_z = split(h @ U_rz.T + b_Urz, 2)
    r = sigmoid(x_r + h_r)
    z = sigmoid(x_z + h_z)
    n = tanh(x_n + ((r * h) @ U_n.T + b_Un))
    return (1 - z) * n + z * h


@cell(states=("h", "c"))
def peephole_lstm(x, h, c):
    """Peephole LSTM (Gers & Schmidhuber): lstm's layout plus diagonal p_i, p_f, p_o [H];
    o looks at the new c."""
    W = param("W", (4 * H, I))
    U = param("U", (4 * H, H))
    b_W = param("b_W", (4 * H,))
    b_U = param("b_U", (4 * H,))
    p_i = param("p_i", (H,))
    p_f = param("p_f", (H,))
    p_o = param("p_o", (H,))
    gi, gf, gg, go = split((x @ W.T + b_W) + (h @ U.T + b_U), 4)
    i = sigmoid(gi + p_i * c)
    f = sigmoid(gf + p_f * c)
    c = f * c + i * tanh(gg)
    o = sigmoid(go + p_o * c)
    return o * tanh(c), c


@cell(states=("h", "c"))
def cifg_lstm(x, h, c):
    """Coupled input-forget gate LSTM: rows i, g, o; f = 1 - sigmoid(i)."""
    W = param("W", (3 * H, I))
    U = param("U", (3 * H, H))
    b_W = param("b_W", (3 * H,))
    b_U = param("b_U", (3 * H,))
    gi, gg, go = split((x @ W.T + b_W) + (h @ U.T + b_U), 3)
    i = sigmoid(gi)
    c = (1 - i) * c + i * tanh(gg)
    h = sigmoid(go) * tanh(c)
    return h, c


@cell(states={"r": P, "c": H},
      torch={"module": "LSTM", "names": dict(_TORCH4, W_hr="weight_hr"), "proj": "P"})
def lstmp(x, r, c):
    """LSTM with a projection (torch.nn.LSTM with proj_size = P): the recurrent state is
    r = W_hr (o * tanh(c)), [B, P]; U is [4H, P]."""
    W = param("W", (4 * H, I))
    U = param("U", (4 * H, P))
    b_W = param("b_W", (4 * H,))
    b_U = param("b_U", (4 * H,))
    W_hr = param("W_hr", (P, H))
    i, f, g, o = split((x @ W.T + b_W) + (r @ U.T + b_U), 4)
    c = sigmoid(f) * c + sigmoid(i) * tanh(g)
    r = (sigmoid(o) * tanh(c)) @ W_hr.T
    return r, c


@cell(states=("h",))
def mgu(x, h):
    """Minimal gated unit (Zhou et al. 2016): rows f, h; one bias."""
    W = param("W", (2 * H, I))
    U = param("U", (2 * H, H))
    b = param("b", (2 * H,))
    U_f, U_h = split(U, 2, axis=0)
    x_f, x_h = split(x @ W.T + b, 2)
    f = sigmoid(x_f + h @ U_f.T)
    h_hat = tanh(x_h + (f * h) @ U_h.T)
    return (1 - f) * h + f * h_hat


@cell(states=("c",), outputs=("h",))
def sru(x, c):
    """Simple recurrent unit (Lei et al. 2018): no recurrent matmul; the state is c and the
    step output h = r * c + (1 - r) * x (so input_size must equal hidden_size)."""
    if size(I) != size(H):
        raise CellError(f"sru needs input_size == hidden_size (its highway adds x to h), got "
                        f"input_size={size(I)}, hidden_size={size(H)}")
    W = param("W", (3 * H, I))
    b = param("b", (3 * H,))
    v_f = param("v_f", (H,))
    v_r = param("v_r", (H,))
    xt, fx, rx = split(x @ W.T + b, 3)
    f = sigmoid(fx + v_f * c)
    r = sigmoid(rx + v_r * c)
    c = f * c + (1 - f) * xt
    h = r * c + (1 - r) * x
    return h, c


@cell(states=("h",))
def indrnn(x, h):
    """Independently recurrent network (Li et al. 2018): h = relu(W x + b + u * h)."""
    W = param("W", (H, I))
    u = param("u", (H,))
    b = param("b", (H,))
    return relu((x @ W.T + b) + u * h)


@cell(states=("h", "c"))
def layernorm_lstm(x, h, c):
    """Layer-normalised LSTM (Ba et al. 2016; Haste's LayerNormLSTM): each LN has its own gain
    (initialised to 1) and bias (0)."""
    W = param("W", (4 * H, I))
    U = param("U", (4 * H, H))
    gamma_x = param("gamma_x", (4 * H,), init="ones")
    beta_x = param("beta_x", (4 * H,), init="zeros")
    gamma_h = param("gamma_h", (4 * H,), init="ones")
    beta_h = param("beta_h", (4 * H,), init="zeros")
    b = param("b", (4 * H,), init="zeros")
    gamma_c = param("gamma_c", (H,), init="ones")
    beta_c = param("beta_c", (H,), init="zeros")
    gates = (layer_norm(x @ W.T, weight=gamma_x, bias=beta_x)
             + layer_norm(h @ U.T, weight=gamma_h, bias=beta_h) + b)
    i, f, g, o = split(gates, 4)
    c = sigmoid(f) * c + sigmoid(i) * tanh(g)
    h = sigmoid(o) * tanh(layer_norm(c, weight=gamma_c, bias=beta_c))
    return h, c


def _head_size():
    """D = H / NH, the units of one head."""
    heads, hidden = size(NH), size(H)
    if heads < 1 or hidden % heads:
        raise CellError(f"the hidden size {hidden} is not a multiple of the heads NH = {heads}")
    return hidden // heads


@cell(states=("h", "c"))
def headwise_lstm(x, h, c):
    """LSTM (gates i, f, g, o) whose recurrent matrix is block-diagonal: NH heads of
    D = H / NH units, head k's gates reading only head k of h."""
    D = _head_size()
    W = param("W", (4 * H, I))
    R = param("R", (NH, 4 * D, D))
    b_W = param("b_W", (4 * H,))
    b_U = param("b_U", (4 * H,))
    i, f, g, o = split((x @ W.T + b_W) + (headwise(h, R, gates=4) + b_U), 4)
    c = sigmoid(f) * c + sigmoid(i) * tanh(g)
    h = sigmoid(o) * tanh(c)
    return h, c


@cell(states=("h",))
def headwise_gru(x, h):
    """GRU as torch.nn.GRU (reset gate after the recurrent product; gates r, z, n) with a
    block-diagonal recurrent matrix of NH heads."""
    D = _head_size()
    W = param("W", (3 * H, I))
    R = param("R", (NH, 3 * D, D))
    b_W = param("b_W", (3 * H,))
    b_U = param("b_U", (3 * H,))
    x_r, x_z, x_n = split(x @ W.T + b_W, 3)
    h_r, h_z, h_n = split(headwise(h, R, gates=3) + b_U, 3)
    r = sigmoid(x_r + h_r)
    z = sigmoid(x_z + h_z)
    n = tanh(x_n + r * h_n)
    return (1 - z) * n + z * h


@cell(states=("h", "c", "n", "m"))
def slstm(x, h, c, n, m):
    """The sLSTM of xLSTM (Beck et al. 2024) with exponential input and forget gates: NH
    heads with block-diagonal recurrent matrices, gates i, f, z, o,

        c = f c + i z,  n = f n + i,  h = o c / n,

    kept finite by the stabiliser state m: with the pre-activations i~ and f~ (log i and
    log f), m' = max(f~ + m, i~), and i, f are exp(i~ - m') and exp(f~ + m - m'), which never
    exceed 1, whatever i~ and f~ are. c and n are then the true ones scaled by exp(-m'),
    which h = o c / n does not see. The states start at zero (n = 0 is harmless: the first
    step's i is exp(i~ - m') > 0)."""
    D = _head_size()
    W = param("W", (4 * H, I))
    R = param("R", (NH, 4 * D, D))
    b = param("b", (4 * H,))
    pi, pf, pz, po = split((x @ W.T + b) + headwise(h, R, gates=4), 4)
    m_new = maximum(pf + m, pi)
    i = exp(pi - m_new)
    f = exp(pf + m - m_new)
    c = f * c + i * tanh(pz)
    n = f * n + i
    h = sigmoid(po) * (c / n)
    return h, c, n, m_new


CELLS = {c.name: c for c in (rnn_tanh, rnn_relu, lstm, gru, gru_reset_before, peephole_lstm,
                             cifg_lstm, lstmp, mgu, sru, indrnn, layernorm_lstm,
                             headwise_lstm, headwise_gru, slstm)}
