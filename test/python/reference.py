"""Independent float64 numpy references for the examples (examples/*.mlir).

Written from the equations in /work/shared/design/cells.md and each example's header
comment (parameter layout, argument and result order), not from our IR. Each `<example>`
function takes the example func's arguments in the same order and returns what the func
returns, as a tuple of float64 arrays. Weights are [out, in] (PyTorch), so W x is x @ W.T.

`scan` runs a cell over a [T, B, I] sequence, optionally reversed and with per-sequence
lengths (PyTorch packed-sequence semantics: at t >= len[b] row b's state is unchanged and
its outputs are zero; a reverse scan starts row b at len[b] - 1).
"""

import numpy as np

LN_EPS = 1e-5  # the epsilon of every rnn.layer_norm in examples/layernorm_lstm.mlir


def f64(a):
    return np.asarray(a, dtype=np.float64)


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def relu(x):
    return np.maximum(x, 0.0)


def layer_norm(x, eps=LN_EPS):
    """(x - mean) / sqrt(var + eps) over the last axis, biased variance."""
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps)


def linear(x, W, b=None):
    """W x (+ b) for a batch of rows x [B, in] and W [out, in]."""
    y = x @ W.T
    return y if b is None else y + b


def scan(cell, xs, states, reverse=False, lengths=None):
    """Applies `cell(x [B, I], states) -> (outputs, new_states)` over xs [T, B, I].

    `outputs` and `states` are tuples of [B, N] arrays. Returns (output sequences [T, B, N]
    as a list, final states as a list). With `lengths` ([B] ints), positions t >= lengths[b]
    leave row b's states unchanged and write zero outputs; in reverse that makes row b start
    at lengths[b] - 1.
    """
    xs = f64(xs)
    T, B = xs.shape[:2]
    states = [f64(s).copy() for s in states]
    lens = None if lengths is None else np.asarray(lengths).astype(np.int64).reshape(B)
    outs = None
    steps = range(T - 1, -1, -1) if reverse else range(T)
    for t in steps:
        step_outs, new_states = cell(xs[t], tuple(states))
        if outs is None:
            outs = [np.zeros((T,) + np.shape(o), dtype=np.float64) for o in step_outs]
        if lens is None:
            states = [f64(s) for s in new_states]
            for seq, o in zip(outs, step_outs):
                seq[t] = o
        else:
            live = (t < lens)[:, None]
            states = [np.where(live, n, s) for n, s in zip(new_states, states)]
            for seq, o in zip(outs, step_outs):
                seq[t] = np.where(live, o, 0.0)
    if outs is None:  # T == 0: no step ran; output widths are unknown here
        outs = []
    return outs, states


# --------------------------------------------------------------------------------------------
# Cells: cell(x, states) -> (outputs tuple, new states tuple), float64.
# --------------------------------------------------------------------------------------------

def rnn_tanh_cell(W, U, b_W, b_U):
    W, U, b_W, b_U = map(f64, (W, U, b_W, b_U))

    def cell(x, states):
        (h,) = states
        h_new = np.tanh(linear(x, W, b_W) + linear(h, U, b_U))
        return (h_new,), (h_new,)
    return cell


def lstm_cell(W, U, b_W, b_U):
    W, U, b_W, b_U = map(f64, (W, U, b_W, b_U))

    def cell(x, states):
        h, c = states
        gates = linear(x, W, b_W) + linear(h, U, b_U)
        i, f, g, o = np.split(gates, 4, axis=-1)
        c_new = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
        h_new = sigmoid(o) * np.tanh(c_new)
        return (h_new,), (h_new, c_new)
    return cell


def gru_cell(W, U, b_W, b_U):
    """Reset-after (PyTorch / cuDNN), gates r, z, n."""
    W, U, b_W, b_U = map(f64, (W, U, b_W, b_U))

    def cell(x, states):
        (h,) = states
        x_r, x_z, x_n = np.split(linear(x, W, b_W), 3, axis=-1)
        h_r, h_z, h_n = np.split(linear(h, U, b_U), 3, axis=-1)
        r = sigmoid(x_r + h_r)
        z = sigmoid(x_z + h_z)
        n = np.tanh(x_n + r * h_n)
        h_new = (1.0 - z) * n + z * h
        return (h_new,), (h_new,)
    return cell


def gru_reset_before_cell(W, U, b_W, b_U):
    """Reset-before (Cho v3): n = tanh(W_n x + b_Wn + U_n (r * h) + b_Un)."""
    W, U, b_W, b_U = map(f64, (W, U, b_W, b_U))
    H = U.shape[1]
    U_r, U_z, U_n = U[:H], U[H:2 * H], U[2 * H:]
    b_Ur, b_Uz, b_Un = b_U[:H], b_U[H:2 * H], b_U[2 * H:]

    def cell(x, states):
        (h,) = states
        x_r, x_z, x_n = np.split(linear(x, W, b_W), 3, axis=-1)
        r = sigmoid(x_r + linear(h, U_r, b_Ur))
        z = sigmoid(x_z + linear(h, U_z, b_Uz))
        n = np.tanh(x_n + linear(r * h, U_n, b_Un))
        h_new = (1.0 - z) * n + z * h
        return (h_new,), (h_new,)
    return cell


def peephole_lstm_cell(W, U, b_W, b_U, p_i, p_f, p_o):
    W, U, b_W, b_U, p_i, p_f, p_o = map(f64, (W, U, b_W, b_U, p_i, p_f, p_o))

    def cell(x, states):
        h, c = states
        gates = linear(x, W, b_W) + linear(h, U, b_U)
        gi, gf, gg, go = np.split(gates, 4, axis=-1)
        i = sigmoid(gi + p_i * c)
        f = sigmoid(gf + p_f * c)
        g = np.tanh(gg)
        c_new = f * c + i * g
        o = sigmoid(go + p_o * c_new)
        h_new = o * np.tanh(c_new)
        return (h_new,), (h_new, c_new)
    return cell


def cifg_lstm_cell(W, U, b_W, b_U):
    """Rows i, g, o; f = 1 - sigmoid(i)."""
    W, U, b_W, b_U = map(f64, (W, U, b_W, b_U))

    def cell(x, states):
        h, c = states
        gi, gg, go = np.split(linear(x, W, b_W) + linear(h, U, b_U), 3, axis=-1)
        i = sigmoid(gi)
        f = 1.0 - i
        c_new = f * c + i * np.tanh(gg)
        h_new = sigmoid(go) * np.tanh(c_new)
        return (h_new,), (h_new, c_new)
    return cell


def lstmp_cell(W, U, b_W, b_U, W_hr):
    """States r [B, P], c [B, H]; output r."""
    W, U, b_W, b_U, W_hr = map(f64, (W, U, b_W, b_U, W_hr))

    def cell(x, states):
        r, c = states
        gi, gf, gg, go = np.split(linear(x, W, b_W) + linear(r, U, b_U), 4, axis=-1)
        c_new = sigmoid(gf) * c + sigmoid(gi) * np.tanh(gg)
        h = sigmoid(go) * np.tanh(c_new)
        r_new = linear(h, W_hr)
        return (r_new,), (r_new, c_new)
    return cell


def mgu_cell(W, U, b):
    """Rows f, h; one bias."""
    W, U, b = map(f64, (W, U, b))
    H = U.shape[1]
    W_f, W_h = W[:H], W[H:]
    U_f, U_h = U[:H], U[H:]
    b_f, b_h = b[:H], b[H:]

    def cell(x, states):
        (h,) = states
        f = sigmoid(linear(x, W_f, b_f) + linear(h, U_f))
        h_hat = np.tanh(linear(x, W_h, b_h) + linear(f * h, U_h))
        h_new = (1.0 - f) * h + f * h_hat
        return (h_new,), (h_new,)
    return cell


def sru_cell(W, b, v_f, v_r):
    """Rows x~, f, r; state c; output h (needs I == H)."""
    W, b, v_f, v_r = map(f64, (W, b, v_f, v_r))

    def cell(x, states):
        (c,) = states
        xt, fx, rx = np.split(linear(x, W, b), 3, axis=-1)
        f = sigmoid(fx + v_f * c)
        r = sigmoid(rx + v_r * c)
        c_new = f * c + (1.0 - f) * xt
        h = r * c_new + (1.0 - r) * x
        return (h,), (c_new,)
    return cell


def indrnn_cell(W, u, b):
    W, u, b = map(f64, (W, u, b))

    def cell(x, states):
        (h,) = states
        h_new = relu(linear(x, W, b) + u * h)
        return (h_new,), (h_new,)
    return cell


def layernorm_lstm_cell(W, U, gamma_x, beta_x, gamma_h, beta_h, b, gamma_c, beta_c):
    W, U, gamma_x, beta_x, gamma_h, beta_h, b, gamma_c, beta_c = map(
        f64, (W, U, gamma_x, beta_x, gamma_h, beta_h, b, gamma_c, beta_c))

    def cell(x, states):
        h, c = states
        gates = (layer_norm(linear(x, W)) * gamma_x + beta_x
                 + layer_norm(linear(h, U)) * gamma_h + beta_h + b)
        gi, gf, gg, go = np.split(gates, 4, axis=-1)
        c_new = sigmoid(gf) * c + sigmoid(gi) * np.tanh(gg)
        h_new = sigmoid(go) * np.tanh(layer_norm(c_new) * gamma_c + beta_c)
        return (h_new,), (h_new, c_new)
    return cell


# --------------------------------------------------------------------------------------------
# The examples' funcs (same argument order, same results).
# --------------------------------------------------------------------------------------------

def _seq(cell, xs, states, reverse=False, lengths=None):
    outs, finals = scan(cell, xs, states, reverse=reverse, lengths=lengths)
    return tuple(outs) + tuple(finals)


def rnn_tanh(xs, h0, W, U, b_W, b_U):
    """@rnn_tanh_seq -> (ys, hT)"""
    return _seq(rnn_tanh_cell(W, U, b_W, b_U), xs, (h0,))


def lstm(xs, h0, c0, W, U, b_W, b_U):
    """@lstm_seq -> (ys, hT, cT)"""
    return _seq(lstm_cell(W, U, b_W, b_U), xs, (h0, c0))


def gru(xs, h0, W, U, b_W, b_U):
    """@gru_seq -> (ys, hT)"""
    return _seq(gru_cell(W, U, b_W, b_U), xs, (h0,))


def gru_reset_before(xs, h0, W, U, b_W, b_U):
    """@gru_reset_before_seq -> (ys, hT)"""
    return _seq(gru_reset_before_cell(W, U, b_W, b_U), xs, (h0,))


def peephole_lstm(xs, h0, c0, W, U, b_W, b_U, p_i, p_f, p_o):
    """@peephole_lstm_seq -> (ys, hT, cT)"""
    return _seq(peephole_lstm_cell(W, U, b_W, b_U, p_i, p_f, p_o), xs, (h0, c0))


def cifg_lstm(xs, h0, c0, W, U, b_W, b_U):
    """@cifg_lstm_seq -> (ys, hT, cT)"""
    return _seq(cifg_lstm_cell(W, U, b_W, b_U), xs, (h0, c0))


def lstmp(xs, r0, c0, W, U, b_W, b_U, W_hr):
    """@lstmp_seq -> (ys [T, B, P], rT, cT)"""
    return _seq(lstmp_cell(W, U, b_W, b_U, W_hr), xs, (r0, c0))


def mgu(xs, h0, W, U, b):
    """@mgu_seq -> (ys, hT)"""
    return _seq(mgu_cell(W, U, b), xs, (h0,))


def sru(xs, c0, W, b, v_f, v_r):
    """@sru_seq -> (hs, cT)"""
    return _seq(sru_cell(W, b, v_f, v_r), xs, (c0,))


def indrnn(xs, h0, W, u, b):
    """@indrnn_seq -> (ys, hT)"""
    return _seq(indrnn_cell(W, u, b), xs, (h0,))


def layernorm_lstm(xs, h0, c0, W, U, gamma_x, beta_x, gamma_h, beta_h, b, gamma_c, beta_c):
    """@layernorm_lstm_seq -> (ys, hT, cT)"""
    cell = layernorm_lstm_cell(W, U, gamma_x, beta_x, gamma_h, beta_h, b, gamma_c, beta_c)
    return _seq(cell, xs, (h0, c0))


def lstm_2layer(xs, h0_0, c0_0, h0_1, c0_1, W_0, U_0, b_W_0, b_U_0, W_1, U_1, b_W_1, b_U_1):
    """@lstm_2layer -> (ys_1, hT_0, cT_0, hT_1, cT_1)"""
    (ys_0,), (hT_0, cT_0) = scan(lstm_cell(W_0, U_0, b_W_0, b_U_0), xs, (h0_0, c0_0))
    (ys_1,), (hT_1, cT_1) = scan(lstm_cell(W_1, U_1, b_W_1, b_U_1), ys_0, (h0_1, c0_1))
    return ys_1, hT_0, cT_0, hT_1, cT_1


def bigru(xs, h0_fwd, h0_bwd, W_fwd, U_fwd, b_W_fwd, b_U_fwd, W_bwd, U_bwd, b_W_bwd, b_U_bwd):
    """@bigru -> (concat(ys_fwd, ys_bwd) [T, B, 2H], hT_fwd, hT_bwd)"""
    (ys_f,), (hT_f,) = scan(gru_cell(W_fwd, U_fwd, b_W_fwd, b_U_fwd), xs, (h0_fwd,))
    (ys_b,), (hT_b,) = scan(gru_cell(W_bwd, U_bwd, b_W_bwd, b_U_bwd), xs, (h0_bwd,),
                            reverse=True)
    return np.concatenate([ys_f, ys_b], axis=-1), hT_f, hT_b


def lstm_bidir_lengths(xs, lengths, h0_f, c0_f, h0_b, c0_b,
                       W_f, U_f, b_W_f, b_U_f, W_b, U_b, b_W_b, b_U_b):
    """@lstm_bidir_lengths of test/python/models/lengths.mlir:
    -> (concat(ys_fwd, ys_bwd), hT_f, cT_f, hT_b, cT_b), with per-sequence lengths."""
    (ys_f,), (hT_f, cT_f) = scan(lstm_cell(W_f, U_f, b_W_f, b_U_f), xs, (h0_f, c0_f),
                                 lengths=lengths)
    (ys_b,), (hT_b, cT_b) = scan(lstm_cell(W_b, U_b, b_W_b, b_U_b), xs, (h0_b, c0_b),
                                 reverse=True, lengths=lengths)
    return np.concatenate([ys_f, ys_b], axis=-1), hT_f, cT_f, hT_b, cT_b


# example file stem -> (func name in the example, reference function)
EXAMPLES = {
    "rnn_tanh": ("rnn_tanh_seq", rnn_tanh),
    "lstm": ("lstm_seq", lstm),
    "gru": ("gru_seq", gru),
    "gru_reset_before": ("gru_reset_before_seq", gru_reset_before),
    "peephole_lstm": ("peephole_lstm_seq", peephole_lstm),
    "cifg_lstm": ("cifg_lstm_seq", cifg_lstm),
    "lstmp": ("lstmp_seq", lstmp),
    "mgu": ("mgu_seq", mgu),
    "sru": ("sru_seq", sru),
    "indrnn": ("indrnn_seq", indrnn),
    "layernorm_lstm": ("layernorm_lstm_seq", layernorm_lstm),
    "lstm_2layer": ("lstm_2layer", lstm_2layer),
    "bigru": ("bigru", bigru),
}


# --------------------------------------------------------------------------------------------
# Head-wise cells (rnn.zoo.headwise_lstm, headwise_gru, slstm)
# --------------------------------------------------------------------------------------------

def block_diagonal(R, gates):
    """The dense [gates*H, H] recurrent matrix that a head-wise R [NH, gates*N, K] stands
    for, built element by element: rows gate-major (gate g of every head, head by head),
    head k's block reading columns k*K .. k*K + K - 1."""
    R = f64(R)
    heads, rows, k = R.shape
    n = rows // gates
    U = np.zeros((gates * heads * n, heads * k))
    for h in range(heads):
        for g in range(gates):
            for j in range(n):
                U[g * heads * n + h * n + j, h * k:(h + 1) * k] = R[h, g * n + j, :]
    return U


def headwise_lstm(xs, h0, c0, W, R, b_W, b_U):
    """The LSTM with the block-diagonal recurrent matrix of R -> (ys, hT, cT)"""
    return lstm(xs, h0, c0, W, block_diagonal(R, 4), b_W, b_U)


def headwise_gru(xs, h0, W, R, b_W, b_U):
    """The GRU (reset-after) with the block-diagonal recurrent matrix of R -> (ys, hT)"""
    return gru(xs, h0, W, block_diagonal(R, 3), b_W, b_U)


def slstm(xs, h0, c0, n0, m0, W, R, b):
    """xLSTM's sLSTM with exponential input and forget gates, run unstabilised: the true
    c and n start at c0 * exp(m0), n0 * exp(m0) and follow c = f c + i z, n = f n + i with
    i = exp(i~), f = exp(f~); h = o c / n. Each head's recurrent product is computed per head
    and gate from R [NH, 4D, D]. The stabiliser m_t = max(f~ + m_{t-1}, i~) is computed
    alongside, and the final c, n are returned scaled by exp(-m), as the cell keeps them.
    -> (ys, hT, cT, nT, mT)"""
    xs, h, W, R, b, m = f64(xs), f64(h0), f64(W), f64(R), f64(b), f64(m0)
    c, n = f64(c0) * np.exp(m), f64(n0) * np.exp(m)
    heads, rows, d = R.shape
    H = heads * d
    ys = []
    for x in xs:
        pre = x @ W.T + b
        for k in range(heads):
            hk = h[:, k * d:(k + 1) * d]
            for g in range(4):
                pre[:, g * H + k * d:g * H + (k + 1) * d] += hk @ R[k, g * d:(g + 1) * d, :].T
        pi, pf, pz, po = np.split(pre, 4, axis=-1)
        i, f = np.exp(pi), np.exp(pf)
        c = f * c + i * np.tanh(pz)
        n = f * n + i
        m = np.maximum(pf + m, pi)
        h = sigmoid(po) * c / n
        ys.append(h)
    return np.stack(ys), h, c * np.exp(-m), n * np.exp(-m), m
