"""ONNX's LSTM, GRU and RNN operators in float64 numpy, read from the operator spec
(onnx.defs.get_schema(op).doc) for the tests of rnn.onnx: every attribute (direction,
activations with alpha and beta, clip, input_forget, layout, linear_before_reset) and every
input (B, sequence_lens, initial_h, initial_c, P). onnx.reference.ReferenceEvaluator
implements a subset of them; where both apply, test_onnx.py checks that they agree.

Semantics taken from the spec's text, where it leaves room:
  * clip bounds the input of every activation (h's input C_t included), not the states;
  * input_forget couples the gates as f_t = 1 - i_t;
  * activation_alpha / activation_beta are consumed in order by the activations that take
    them; missing values take the ONNX operators' defaults;
  * sequence_lens: row b runs its first sequence_lens[b] steps (the reverse direction starts
    at sequence_lens[b] - 1); Y is 0 past a row's length; Y_h / Y_c are the states after the
    row's last step.
"""

import numpy as np

# name: (function, default alpha, default beta); None = the activation takes no such value.
ACTIVATIONS = {
    "Relu": (lambda x, a, b: np.maximum(x, 0), None, None),
    "Tanh": (lambda x, a, b: np.tanh(x), None, None),
    "Sigmoid": (lambda x, a, b: 1 / (1 + np.exp(-x)), None, None),
    "Affine": (lambda x, a, b: a * x + b, 1.0, 0.0),
    "LeakyRelu": (lambda x, a, b: np.where(x >= 0, x, a * x), 0.01, None),
    "ThresholdedRelu": (lambda x, a, b: np.where(x >= a, x, 0.0), 1.0, None),
    "ScaledTanh": (lambda x, a, b: a * np.tanh(b * x), 1.0, 1.0),
    "HardSigmoid": (lambda x, a, b: np.minimum(np.maximum(a * x + b, 0), 1), 0.2, 0.5),
    "Elu": (lambda x, a, b: np.where(x >= 0, x, a * (np.exp(np.minimum(x, 0)) - 1)), 1.0,
            None),
    "Softsign": (lambda x, a, b: x / (1 + np.abs(x)), None, None),
    "Softplus": (lambda x, a, b: np.logaddexp(0, x), None, None),
}
DEFAULT_ACTS = {"LSTM": ["Sigmoid", "Tanh", "Tanh"], "GRU": ["Sigmoid", "Tanh"],
                "RNN": ["Tanh"]}
GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}


def _activations(op, attrs, D):
    names = attrs.get("activations") or DEFAULT_ACTS[op] * D
    alphas = list(attrs.get("activation_alpha", []))
    betas = list(attrs.get("activation_beta", []))
    clip = attrs.get("clip")
    fns = []
    for n in names:
        fn, da, db = ACTIVATIONS[n]
        a = (alphas.pop(0) if alphas else da) if da is not None else None
        b = (betas.pop(0) if betas else db) if db is not None else None

        def act(x, fn=fn, a=a, b=b):
            if clip is not None:
                x = np.clip(x, -clip, clip)
            return fn(x, a, b)
        fns.append(act)
    k = len(DEFAULT_ACTS[op])
    return [fns[d * k:(d + 1) * k] for d in range(D)]


def _step(op, attrs, acts, x, states, W, R, Wb, Rb, P):
    H = R.shape[-1]
    if op == "LSTM":
        f, g, h = acts
        hp, cp = states
        gates = x @ W.T + hp @ R.T + Wb + Rb
        gi, go, gf, gc = (gates[:, k * H:(k + 1) * H] for k in range(4))
        pi, po, pf = (P[k * H:(k + 1) * H] for k in range(3))
        i = f(gi + pi * cp)
        ft = 1 - i if attrs.get("input_forget", 0) else f(gf + pf * cp)
        c = ft * cp + i * g(gc)
        o = f(go + po * c)
        return [o * h(c), c]
    if op == "GRU":
        f, g = acts
        (hp,) = states
        xw = x @ W.T + Wb
        z = f(xw[:, :H] + hp @ R[:H].T + Rb[:H])
        r = f(xw[:, H:2 * H] + hp @ R[H:2 * H].T + Rb[H:2 * H])
        if attrs.get("linear_before_reset", 0):
            n = g(xw[:, 2 * H:] + r * (hp @ R[2 * H:].T + Rb[2 * H:]))
        else:
            n = g(xw[:, 2 * H:] + (r * hp) @ R[2 * H:].T + Rb[2 * H:])
        return [(1 - z) * n + z * hp]
    (f,) = acts
    (hp,) = states
    return [f(x @ W.T + Wb + hp @ R.T + Rb)]


def run(op, attrs, X, W, R, B=None, sequence_lens=None, initial_h=None, initial_c=None,
        P=None):
    """The node's outputs (Y, Y_h[, Y_c]) in float64, in the layout the attributes say."""
    f64 = lambda a: None if a is None else np.asarray(a, np.float64)  # noqa: E731
    X, W, R, B, initial_h, initial_c, P = map(f64, (X, W, R, B, initial_h, initial_c, P))
    direction = attrs.get("direction", "forward")
    D = 2 if direction == "bidirectional" else 1
    layout = attrs.get("layout", 0)
    if layout:
        X = X.transpose(1, 0, 2)
        initial_h = None if initial_h is None else initial_h.transpose(1, 0, 2)
        initial_c = None if initial_c is None else initial_c.transpose(1, 0, 2)
    T, Bn, _ = X.shape
    H = R.shape[-1]
    G = GATES[op]
    if B is None:
        B = np.zeros((D, 2 * G * H))
    if P is None:
        P = np.zeros((D, 3 * H))
    lens = [T] * Bn if sequence_lens is None else [int(v) for v in sequence_lens]
    n_states = 2 if op == "LSTM" else 1
    inits = [initial_h, initial_c][:n_states]
    inits = [np.zeros((D, Bn, H)) if s is None else s for s in inits]
    acts = _activations(op, attrs, D)
    Y = np.zeros((T, D, Bn, H))
    finals = [np.zeros((D, Bn, H)) for _ in range(n_states)]
    for d in range(D):
        reverse = direction == "reverse" or d == 1
        for b in range(Bn):
            states = [s[d, b:b + 1] for s in inits]
            steps = range(lens[b] - 1, -1, -1) if reverse else range(lens[b])
            for t in steps:
                states = _step(op, attrs, acts[d], X[t, b:b + 1], states, W[d], R[d],
                               B[d, :G * H], B[d, G * H:], P[d])
                Y[t, d, b] = states[0][0]
            for k in range(n_states):
                finals[k][d, b] = states[k][0]
    if layout:
        Y = Y.transpose(2, 0, 1, 3)
        finals = [s.transpose(1, 0, 2) for s in finals]
    return [Y] + finals
