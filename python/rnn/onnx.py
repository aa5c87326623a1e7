"""rnn.onnx: importing ONNX models whose recurrent layers are LSTM, GRU or RNN operators.

    model = rnn.onnx.load("model.onnx")        # or an onnx.ModelProto, or a saved directory
    y, y_h = model(x)                           # numpy arrays in, numpy arrays out
    y, y_h = model(x_cuda)                      # torch CUDA tensors: runs on the GPU

Every LSTM, GRU and RNN node becomes a cell written with the DSL (its gate order, its
activations with their alpha and beta, clip, input_forget, linear_before_reset, peepholes,
biases or none) and a function that scans it in each direction: the function takes the
node's inputs and returns its outputs in ONNX's shapes (layout 0 or 1) with dynamic sequence
length and batch, through rnn.transpose / rnn.reshape / rnn.concat (docs/onnx.md). Each
node is compiled with rnn-compile (through the compile cache). The graph's other nodes run
in numpy (or torch, for torch tensors) around the compiled ones; a node that is neither
raises UnsupportedNodeError at load, naming it.

Needs the `onnx` package (pip install onnx) to read models; a directory written by
`model.save(dir)` loads without the compiler.
"""

import json
import os
import pickle
import shutil
from pathlib import Path

import numpy as np

from . import cache as _cache
from . import dsl as _dsl
from . import runtime as _runtime
from .dsl import (H, I, cell, exp, log, maximum, minimum, param, relu, sigmoid, split, tanh,
                  where)

__all__ = ["load", "OnnxModel", "UnsupportedNodeError", "OnnxImportError", "to_mlir",
           "ACTIVATIONS", "RECURRENT_OPS"]

RECURRENT_OPS = ("LSTM", "GRU", "RNN")
FORMAT = "rnn-onnx"
FORMAT_VERSION = 1


class OnnxImportError(ValueError):
    """An ONNX model that cannot be imported: names the node (and the attribute or input)."""


class UnsupportedNodeError(OnnxImportError):
    """A node of an operator (or with an attribute value) that rnn.onnx neither compiles nor
    runs."""


def _onnx():
    try:
        import onnx
    except ImportError as e:
        raise ImportError("rnn.onnx reads models with the onnx package (pip install onnx)") \
            from e
    return onnx


# ------------------------------------------------------------------------------------------
# Activations: the operators' list, with the alpha and beta they take
# ------------------------------------------------------------------------------------------

def _affine(x, a, b): return a * x + b
def _leaky_relu(x, a, b): return where(x >= 0, x, a * x)
def _thresholded_relu(x, a, b): return where(x >= a, x, 0.0)
def _scaled_tanh(x, a, b): return a * tanh(b * x)
def _hard_sigmoid(x, a, b): return minimum(maximum(a * x + b, 0.0), 1.0)
def _elu(x, a, b): return where(x >= 0, x, a * (exp(x) - 1))
def _softsign(x, a, b): return x / (1 + maximum(x, -x))


def _softplus(x, a, b):
    # log(1 + e^x) written so that it does not overflow: max(x, 0) + log(1 + e^-|x|).
    return maximum(x, 0.0) + log(1 + exp(-maximum(x, -x)))


# name -> (function of (x, alpha, beta), default alpha or None, default beta or None). An
# activation with a default takes that parameter (and consumes a value of activation_alpha
# or activation_beta). The defaults are the ONNX operators' (LeakyRelu 0.01,
# ThresholdedRelu 1.0, HardSigmoid 0.2 and 0.5, Elu 1.0); Affine and ScaledTanh have no
# operator today: their defaults make them the identity and tanh.
ACTIVATIONS = {
    "Relu": (lambda x, a, b: relu(x), None, None),
    "Tanh": (lambda x, a, b: tanh(x), None, None),
    "Sigmoid": (lambda x, a, b: sigmoid(x), None, None),
    "Affine": (_affine, 1.0, 0.0),
    "LeakyRelu": (_leaky_relu, 0.01, None),
    "ThresholdedRelu": (_thresholded_relu, 1.0, None),
    "ScaledTanh": (_scaled_tanh, 1.0, 1.0),
    "HardSigmoid": (_hard_sigmoid, 0.2, 0.5),
    "Elu": (_elu, 1.0, None),
    "Softsign": (_softsign, None, None),
    "Softplus": (_softplus, None, None),
}
_ACTIVATION_NAMES = {k.lower(): k for k in ACTIVATIONS}

# Per operator: gates, activations per direction (and their defaults), inputs in order.
_OPS = {
    "LSTM": {"gates": 4, "acts": ("Sigmoid", "Tanh", "Tanh"), "states": ("h", "c"),
             "inputs": ("X", "W", "R", "B", "sequence_lens", "initial_h", "initial_c", "P"),
             "attrs": {"activation_alpha", "activation_beta", "activations", "clip",
                       "direction", "hidden_size", "input_forget", "layout"}},
    "GRU": {"gates": 3, "acts": ("Sigmoid", "Tanh"), "states": ("h",),
            "inputs": ("X", "W", "R", "B", "sequence_lens", "initial_h"),
            "attrs": {"activation_alpha", "activation_beta", "activations", "clip",
                      "direction", "hidden_size", "layout", "linear_before_reset"}},
    "RNN": {"gates": 1, "acts": ("Tanh",), "states": ("h",),
            "inputs": ("X", "W", "R", "B", "sequence_lens", "initial_h"),
            "attrs": {"activation_alpha", "activation_beta", "activations", "clip",
                      "direction", "hidden_size", "layout"}},
}


class _Activation:
    __slots__ = ("name", "alpha", "beta")

    def __init__(self, name, alpha, beta):
        self.name, self.alpha, self.beta = name, alpha, beta

    def __call__(self, x, clip):
        if clip is not None:
            x = minimum(maximum(x, -clip), clip)
        fn = ACTIVATIONS[self.name][0]
        return fn(x, self.alpha, self.beta)

    def __repr__(self):
        extra = "".join(f", {k}={v}" for k, v in (("alpha", self.alpha), ("beta", self.beta))
                        if v is not None)
        return f"{self.name}({extra[2:]})"


# ------------------------------------------------------------------------------------------
# A recurrent node: attributes, checked
# ------------------------------------------------------------------------------------------

def _describe(node, index):
    name = f"{node.name!r} " if node.name else ""
    return f"node #{index} {name}({node.op_type})"


class _RecurrentNode:
    """An LSTM / GRU / RNN node of the graph with its attributes read and checked."""

    def __init__(self, node, index, shapes, dtypes):
        self.node, self.index, self.op = node, index, node.op_type
        self.what = _describe(node, index)
        spec = _OPS[self.op]
        attrs = node.attrs
        for name in attrs:
            if name not in spec["attrs"]:
                raise UnsupportedNodeError(f"{self.what}: unknown attribute {name!r} (the "
                                           f"operator has {', '.join(sorted(spec['attrs']))})")

        def text(v):
            return v.decode() if isinstance(v, bytes) else v

        self.direction = text(attrs.get("direction", "forward"))
        if self.direction not in ("forward", "reverse", "bidirectional"):
            raise UnsupportedNodeError(f"{self.what}: attribute direction={self.direction!r}; "
                                       "it must be forward, reverse or bidirectional")
        self.D = 2 if self.direction == "bidirectional" else 1
        self.layout = int(attrs.get("layout", 0))
        if self.layout not in (0, 1):
            raise UnsupportedNodeError(f"{self.what}: attribute layout={self.layout}; it must "
                                       "be 0 ([T, B, ...]) or 1 ([B, T, ...])")
        self.input_forget = int(attrs.get("input_forget", 0))
        if self.input_forget not in (0, 1):
            raise UnsupportedNodeError(f"{self.what}: attribute input_forget="
                                       f"{self.input_forget}; it must be 0 or 1")
        self.linear_before_reset = int(attrs.get("linear_before_reset", 0)) != 0
        clip = attrs.get("clip")
        if clip is not None and not float(clip) > 0:
            raise UnsupportedNodeError(f"{self.what}: attribute clip={clip}; a clip threshold "
                                       "must be positive")
        self.clip = None if clip is None else float(clip)

        # Activations: the operator's per direction, alpha and beta consumed in order by
        # the activations that take them.
        per_dir = len(spec["acts"])
        names = attrs.get("activations")
        if names is None:
            names = list(spec["acts"]) * self.D
        else:
            names = [text(n) for n in names]
            if len(names) != per_dir * self.D:
                raise UnsupportedNodeError(
                    f"{self.what}: attribute activations has {len(names)} entries "
                    f"{names}; {self.op} with direction={self.direction} takes "
                    f"{per_dir * self.D} ({per_dir} per direction)")
        alphas = [float(v) for v in attrs.get("activation_alpha", [])]
        betas = [float(v) for v in attrs.get("activation_beta", [])]
        acts = []
        for n in names:
            canonical = _ACTIVATION_NAMES.get(str(n).lower())
            if canonical is None:
                raise UnsupportedNodeError(f"{self.what}: activation {n!r} is not one of the "
                                           f"operator's ({', '.join(ACTIVATIONS)})")
            _, da, db = ACTIVATIONS[canonical]
            a = (alphas.pop(0) if alphas else da) if da is not None else None
            b = (betas.pop(0) if betas else db) if db is not None else None
            acts.append(_Activation(canonical, a, b))
        for what, left in (("activation_alpha", alphas), ("activation_beta", betas)):
            if left:
                raise UnsupportedNodeError(
                    f"{self.what}: attribute {what} has {len(left)} value(s) more than the "
                    f"activations {names} take (each activation that has the parameter "
                    "consumes one value, in order)")
        self.activations = [acts[d * per_dir:(d + 1) * per_dir] for d in range(self.D)]

        # Inputs present (an empty name is an absent optional input).
        ins = list(node.input)
        self.inputs = {}
        for k, role in enumerate(spec["inputs"]):
            if k < len(ins) and ins[k]:
                self.inputs[role] = ins[k]
        if len(ins) > len(spec["inputs"]):
            raise OnnxImportError(f"{self.what}: {len(ins)} inputs, the operator takes at "
                                  f"most {len(spec['inputs'])}")
        for role in ("X", "W", "R"):
            if role not in self.inputs:
                raise OnnxImportError(f"{self.what}: input {role} is required")
        outs = list(node.output)
        self.outputs = [o for o in outs]  # "" = not produced
        n_out = 1 + len(spec["states"])
        if len(outs) > n_out:
            raise OnnxImportError(f"{self.what}: {len(outs)} outputs, the operator has at "
                                  f"most {n_out}")

        # Sizes from the weights' shapes (initializers or typed graph inputs).
        G = spec["gates"]
        W_shape = shapes.get(self.inputs["W"])
        R_shape = shapes.get(self.inputs["R"])
        for role, shape in (("W", W_shape), ("R", R_shape)):
            if shape is None or len(shape) != 3 or any(not isinstance(d, int) for d in shape):
                raise OnnxImportError(
                    f"{self.what}: the shape of input {role} ({self.inputs[role]!r}) must be "
                    f"known and static when the model is loaded (an initializer, or a graph "
                    f"input with a static shape); got {shape}")
        D_w, GH, self.input_size = W_shape
        if D_w != self.D:
            raise OnnxImportError(f"{self.what}: W is {list(W_shape)}: its first dimension "
                                  f"must be num_directions={self.D} (direction="
                                  f"{self.direction})")
        if GH % G:
            raise OnnxImportError(f"{self.what}: W is {list(W_shape)}: dimension 1 must be "
                                  f"{G} * hidden_size")
        self.hidden_size = GH // G
        if "hidden_size" in attrs and int(attrs["hidden_size"]) != self.hidden_size:
            raise OnnxImportError(f"{self.what}: attribute hidden_size={attrs['hidden_size']} "
                                  f"but W is {list(W_shape)} ({G} gates of "
                                  f"{self.hidden_size})")
        Hs = self.hidden_size
        expect = {"R": [self.D, G * Hs, Hs], "B": [self.D, 2 * G * Hs], "P": [self.D, 3 * Hs]}
        for role, want in expect.items():
            if role not in self.inputs:
                continue
            got = shapes.get(self.inputs[role])
            if got is not None and all(isinstance(d, int) for d in got) and list(got) != want:
                raise OnnxImportError(f"{self.what}: input {role} is {list(got)}, expected "
                                      f"{want} (num_directions, {self.op} sizes for "
                                      f"hidden_size={Hs}, input_size={self.input_size})")
        dtype = dtypes.get(self.inputs["W"])
        if dtype not in (np.float32, np.float64):
            raise UnsupportedNodeError(f"{self.what}: W has element type {dtype}; the "
                                       "importer compiles float32 and float64 models")
        self.dtype = np.dtype(dtype)
        self.has_bias = "B" in self.inputs
        self.has_peepholes = "P" in self.inputs
        self.has_lengths = "sequence_lens" in self.inputs
        self.n_states = len(spec["states"])
        self.fname = f"node{index}"

    # -- the cell --------------------------------------------------------------------------

    def make_cell(self, d):
        """The rnn.Cell of direction d (0 forward, 1 the reverse of a bidirectional node)."""
        acts, clip = self.activations[d], self.clip
        has_bias, op = self.has_bias, self.op
        G = _OPS[op]["gates"]

        def bias():
            if not has_bias:
                return None, None
            return split(param("B", (2 * G * H,)), 2)

        def plus(v, b):
            return v if b is None else v + b

        if op == "LSTM":
            f, g, h_act = acts
            peep, input_forget = self.has_peepholes, self.input_forget

            def lstm(x, h, c):
                W = param("W", (4 * H, I))
                R = param("R", (4 * H, H))
                wb, rb = bias()
                gi, go, gf, gc = split(plus(x @ W.T, wb) + plus(h @ R.T, rb), 4)
                if peep:
                    p_i, p_o, p_f = split(param("P", (3 * H,)), 3)
                    gi = gi + p_i * c
                    gf = gf + p_f * c
                i = f(gi, clip)
                ft = 1 - i if input_forget else f(gf, clip)
                c = ft * c + i * g(gc, clip)
                if peep:
                    go = go + p_o * c
                h = f(go, clip) * h_act(c, clip)
                return h, c
            return cell(lstm, states=("h", "c"), name=f"{self.fname}_lstm_d{d}")

        if op == "GRU":
            f, g = acts
            before = self.linear_before_reset

            def gru(x, h):
                W = param("W", (3 * H, I))
                R = param("R", (3 * H, H))
                wb, rb = bias()
                xz, xr, xh = split(plus(x @ W.T, wb), 3)
                if before:
                    hz, hr, hh = split(plus(h @ R.T, rb), 3)
                    z = f(xz + hz, clip)
                    r = f(xr + hr, clip)
                    n = g(xh + r * hh, clip)
                else:
                    R_zr, R_h = split(R, [2 * H, H], axis=0)
                    rb_zr, rb_h = (None, None) if rb is None else split(rb, [2 * H, H])
                    hz, hr = split(plus(h @ R_zr.T, rb_zr), 2)
                    z = f(xz + hz, clip)
                    r = f(xr + hr, clip)
                    n = g(xh + plus((r * h) @ R_h.T, rb_h), clip)
                return (1 - z) * n + z * h
            return cell(gru, states=("h",), name=f"{self.fname}_gru_d{d}")

        (f,) = acts

        def elman(x, h):
            W = param("W", (H, I))
            R = param("R", (H, H))
            wb, rb = bias()
            return f(plus(x @ W.T, wb) + plus(h @ R.T, rb), clip)
        return cell(elman, states=("h",), name=f"{self.fname}_rnn_d{d}")

    # -- the function ----------------------------------------------------------------------

    def arg_roles(self):
        """The compiled function's arguments, in order: the node's inputs present, with the
        initial states always there (zeros when the node has none)."""
        roles = ["X", "W", "R"]
        if self.has_bias:
            roles.append("B")
        if self.has_lengths:
            roles.append("sequence_lens")
        roles.append("initial_h")
        if self.op == "LSTM":
            roles.append("initial_c")
            if self.has_peepholes:
                roles.append("P")
        return roles

    def mlir(self):
        """The rnn.cells and the func.func of this node."""
        dt = _dsl.normalize_dtype(self.dtype)
        D, Hs, Is, G = self.D, self.hidden_size, self.input_size, _OPS[self.op]["gates"]
        traced = [self.make_cell(d).trace(Is, Hs, dtype=dt) for d in range(D)]
        lay = self.layout

        def tt(shape):
            return "tensor<" + "".join(("?" if s is None else str(s)) + "x"
                                       for s in shape) + dt + ">"

        def seq(n):  # [T, B, n] or [B, T, n]
            return (None, None, n)

        def states_t(n):  # initial / final states as ONNX has them
            return (D, None, n) if lay == 0 else (None, D, n)

        lines, args = [], []
        types = {"X": tt(seq(Is)), "W": tt((D, G * Hs, Is)), "R": tt((D, G * Hs, Hs)),
                 "B": tt((D, 2 * G * Hs)), "sequence_lens": "tensor<?xi32>",
                 "initial_h": tt(states_t(Hs)), "initial_c": tt(states_t(Hs)),
                 "P": tt((D, 3 * Hs))}
        for role in self.arg_roles():
            args.append(f"%{role}: {types[role]}")
        counter = [0]

        def fresh(stem):
            counter[0] += 1
            return f"%{stem}{counter[0]}"

        def per_direction(value, shape, lead_axis):
            """Splits `value` (num_directions along lead_axis) and drops that axis."""
            whole = list(shape)
            piece = list(shape)
            piece[lead_axis] = 1
            core = [s for k, s in enumerate(shape) if k != lead_axis]
            if D == 1:
                pieces = [value]
            else:
                pieces = [fresh("part"), fresh("part")]
                axis = f" axis {lead_axis}"
                lines.append(f"{pieces[0]}, {pieces[1]} = rnn.split {value}{axis} : "
                             f"{tt(whole)} -> {tt(piece)}, {tt(piece)}")
            out = []
            for p in pieces:
                r = fresh("dir")
                lines.append(f"{r} = rnn.reshape {p} : {tt(piece)} -> {tt(core)}")
                out.append(r)
            return out

        xs = "%X"
        if lay == 1:
            xs = fresh("xs")
            lines.append(f"{xs} = rnn.transpose %X permutation [1, 0, 2] : {tt(seq(Is))} -> "
                         f"{tt(seq(Is))}")
        weights = {"W": per_direction("%W", (D, G * Hs, Is), 0),
                   "R": per_direction("%R", (D, G * Hs, Hs), 0)}
        if self.has_bias:
            weights["B"] = per_direction("%B", (D, 2 * G * Hs), 0)
        if self.has_peepholes:
            weights["P"] = per_direction("%P", (D, 3 * Hs), 0)
        state_roles = ["initial_h"] + (["initial_c"] if self.op == "LSTM" else [])
        inits = {}
        for role in state_roles:
            v = f"%{role}"
            if lay == 1:
                t = fresh("init")
                lines.append(f"{t} = rnn.transpose {v} permutation [1, 0, 2] : "
                             f"{tt(states_t(Hs))} -> {tt((D, None, Hs))}")
                v = t
            inits[role] = per_direction(v, (D, None, Hs), 0)
        row = tt((None, Hs))
        ys, finals = [], [[] for _ in state_roles]
        for d in range(D):
            tc = traced[d]
            outs = [fresh("ys")] + [fresh("fin") for _ in state_roles]
            params = [weights[p.name][d] for p in tc.params]
            ptypes = [tt(p.shape) for p in tc.params]
            reverse = " reverse" if self.direction == "reverse" or d == 1 else ""
            line = (f"{', '.join(outs)} = rnn.scan @{tc.name}{reverse} inputs({xs} : "
                    f"{tt(seq(Is))}) init({', '.join(inits[r][d] for r in state_roles)} : "
                    f"{', '.join(row for _ in state_roles)}) params({', '.join(params)} : "
                    f"{', '.join(ptypes)})")
            if self.has_lengths:
                line += " lengths(%sequence_lens : tensor<?xi32>)"
            line += (f" -> outputs({tt(seq(Hs))}) states("
                     f"{', '.join(row for _ in state_roles)})")
            lines.append(line)
            ys.append(outs[0])
            for k, v in enumerate(outs[1:]):
                finals[k].append(v)

        def stack(values, piece_shape, axis, whole_shape):
            """[piece] values with a unit axis inserted at `axis`, concatenated along it."""
            expanded_shape = list(piece_shape)
            expanded_shape.insert(axis, 1)
            expanded = []
            for v in values:
                e = fresh("unit")
                lines.append(f"{e} = rnn.reshape {v} : {tt(piece_shape)} -> "
                             f"{tt(expanded_shape)}")
                expanded.append(e)
            if len(expanded) == 1:
                return expanded[0]
            r = fresh("stacked")
            lines.append(f"{r} = rnn.concat {', '.join(expanded)} axis {axis} : "
                         f"{', '.join(tt(expanded_shape) for _ in expanded)} -> "
                         f"{tt(whole_shape)}")
            return r

        Y = stack(ys, (None, None, Hs), 1, (None, D, None, Hs))   # [T, D, B, H]
        results = []
        if lay == 0:
            results.append((Y, tt((None, D, None, Hs))))
        else:
            Yt = fresh("y")
            lines.append(f"{Yt} = rnn.transpose {Y} permutation [2, 0, 1, 3] : "
                         f"{tt((None, D, None, Hs))} -> {tt((None, None, D, Hs))}")
            results.append((Yt, tt((None, None, D, Hs))))
        for k in range(len(state_roles)):
            S = stack(finals[k], (None, Hs), 0, (D, None, Hs))     # [D, B, H]
            if lay == 1:
                St = fresh("state")
                lines.append(f"{St} = rnn.transpose {S} permutation [1, 0, 2] : "
                             f"{tt((D, None, Hs))} -> {tt((None, D, Hs))}")
                S = St
            results.append((S, tt(states_t(Hs))))
        head = (f"func.func @{self.fname}({', '.join(args)})\n"
                f"    -> ({', '.join(t for _, t in results)}) {{")
        body = "\n".join("  " + ln for ln in lines)
        ret = (f"  return {', '.join(v for v, _ in results)} : "
               f"{', '.join(t for _, t in results)}")
        func = "\n".join([head, body, ret, "}"]) + "\n"
        return "\n".join([tc.text for tc in traced] + [func])


# ------------------------------------------------------------------------------------------
# The other nodes: numpy (or torch) around the compiled ones
# ------------------------------------------------------------------------------------------

def _is_torch(v):
    return type(v).__module__.startswith("torch") and hasattr(v, "data_ptr")


class _Backend:
    """Array operations on numpy arrays, or on torch tensors of one device."""

    def __init__(self, device=None):
        self.device = device  # None: numpy
        if device is not None:
            import torch
            self.torch = torch

    def asarray(self, v, dtype=None):
        if self.device is None:
            if _is_torch(v):
                v = v.detach().cpu().numpy()
            return np.asarray(v, dtype=dtype)
        t = self.torch
        if not _is_torch(v):
            v = t.from_numpy(np.ascontiguousarray(np.asarray(v, dtype=dtype)))
        return v.to(self.device)

    def to_numpy(self, v):
        return v.detach().cpu().numpy() if _is_torch(v) else np.asarray(v)


_NP_OF_ONNX = {1: np.float32, 2: np.uint8, 3: np.int8, 5: np.int16, 6: np.int32, 7: np.int64,
               9: np.bool_, 10: np.float16, 11: np.float64, 12: np.uint32, 13: np.uint64}


def _ints(v):
    return [int(x) for x in np.asarray(v).reshape(-1)]


class _Interpreter:
    """Runs the non-recurrent nodes. Shape computations (Shape, and what reads it) stay in
    numpy int64 on the host; data tensors follow the call's backend."""

    OPS = ("Identity", "Constant", "Shape", "Gather", "Unsqueeze", "Squeeze", "Concat",
           "ConstantOfShape", "Slice", "Transpose", "Reshape", "Cast", "Add", "Sub", "Mul",
           "Div", "Neg", "Relu", "Tanh", "Sigmoid", "Exp", "MatMul", "Split", "Expand",
           "Flatten")

    @staticmethod
    def check(node, index):
        attrs = node.attrs
        if node.op_type not in _Interpreter.OPS or node.domain not in ("", "ai.onnx"):
            dom = f" of domain {node.domain!r}" if node.domain else ""
            raise UnsupportedNodeError(
                f"{_describe(node, index)}: operator {node.op_type}{dom} is not supported: "
                f"rnn.onnx compiles {', '.join(RECURRENT_OPS)} and runs "
                f"{', '.join(_Interpreter.OPS)} around them")
        allowed = {"Constant": {"value"}, "Shape": {"start", "end"}, "Gather": {"axis"},
                   "Unsqueeze": {"axes"}, "Squeeze": {"axes"}, "Concat": {"axis"},
                   "ConstantOfShape": {"value"}, "Transpose": {"perm"},
                   "Reshape": {"allowzero"}, "Cast": {"to", "saturate"},
                   "Split": {"axis", "split", "num_outputs"}, "Flatten": {"axis"}}
        for name in attrs:
            if name not in allowed.get(node.op_type, set()):
                raise UnsupportedNodeError(f"{_describe(node, index)}: attribute {name!r} is "
                                           f"not supported for {node.op_type}")
        if node.op_type == "Constant" and "value" not in attrs:
            raise UnsupportedNodeError(f"{_describe(node, index)}: only Constant's 'value' "
                                       "attribute (a tensor) is supported")

    @staticmethod
    def run(node, ins, be):
        op, attrs = node.op_type, node.attrs
        torch = getattr(be, "torch", None)

        def data(v):
            return be.asarray(v)

        def is_t(v):
            return _is_torch(v)

        if op == "Identity":
            return [ins[0]]
        if op == "Constant":
            return [attrs["value"]]
        if op == "Shape":
            shape = np.array(list(ins[0].shape), dtype=np.int64)
            start, end = attrs.get("start", 0), attrs.get("end", None)
            return [shape[start:end]]
        if op == "Gather":
            x, idx = ins
            axis = attrs.get("axis", 0)
            if is_t(x):
                ix = torch.as_tensor(np.asarray(be.to_numpy(idx)), device=x.device).long()
                ix = torch.where(ix < 0, ix + x.shape[axis], ix)
                out = torch.index_select(x, axis, ix.reshape(-1))
                return [out.reshape(list(x.shape[:axis]) + list(ix.shape) +
                                    list(x.shape[axis + 1:]))]
            return [np.take(np.asarray(x), np.asarray(be.to_numpy(idx)), axis=axis)]
        if op in ("Unsqueeze", "Squeeze"):
            x = ins[0]
            axes = attrs.get("axes")
            if axes is None and len(ins) > 1 and ins[1] is not None:
                axes = _ints(be.to_numpy(ins[1]))
            rank = x.ndim + (len(axes) if op == "Unsqueeze" and axes else 0)
            if op == "Unsqueeze":
                shape = list(x.shape)
                for a in sorted(a % rank for a in axes):
                    shape.insert(a, 1)
            else:
                if axes is None:
                    shape = [s for s in x.shape if s != 1]
                else:
                    drop = {a % x.ndim for a in axes}
                    shape = [s for k, s in enumerate(x.shape) if k not in drop]
            return [x.reshape(shape)]
        if op == "Concat":
            axis = attrs["axis"]
            if any(is_t(v) for v in ins):
                return [torch.cat([data(v) for v in ins], dim=axis)]
            return [np.concatenate([np.asarray(v) for v in ins], axis=axis)]
        if op == "ConstantOfShape":
            shape = _ints(be.to_numpy(ins[0]))
            value = attrs.get("value", np.zeros(1, np.float32))
            out = np.full(shape, np.asarray(value).reshape(-1)[0], dtype=np.asarray(value).dtype)
            return [data(out) if out.dtype.kind == "f" else out]
        if op == "Slice":
            x = ins[0]
            starts, ends = _ints(be.to_numpy(ins[1])), _ints(be.to_numpy(ins[2]))
            axes = _ints(be.to_numpy(ins[3])) if len(ins) > 3 and ins[3] is not None else \
                list(range(len(starts)))
            steps = _ints(be.to_numpy(ins[4])) if len(ins) > 4 and ins[4] is not None else \
                [1] * len(starts)
            index = [slice(None)] * x.ndim
            for s, e, a, st in zip(starts, ends, axes, steps):
                n = x.shape[a]
                if st <= 0:
                    raise UnsupportedNodeError(f"{node.op_type} {node.name!r}: step {st}; "
                                               "only positive steps are supported")
                s = max(0, min(n, s + n if s < 0 else s))
                e = max(0, min(n, e + n if e < 0 else e))
                index[a % x.ndim] = slice(s, e, st)
            return [x[tuple(index)]]
        if op == "Transpose":
            x = ins[0]
            perm = attrs.get("perm", list(reversed(range(x.ndim))))
            return [x.permute(*perm) if is_t(x) else np.transpose(x, perm)]
        if op == "Reshape":
            x, shape = ins[0], _ints(be.to_numpy(ins[1]))
            if not attrs.get("allowzero", 0):
                shape = [x.shape[k] if s == 0 else s for k, s in enumerate(shape)]
            return [x.reshape(shape)]
        if op == "Flatten":
            x = ins[0]
            axis = attrs.get("axis", 1) % (x.ndim + 1) if x.ndim else 0
            lead = int(np.prod(x.shape[:axis], dtype=np.int64))
            return [x.reshape(lead, -1)]
        if op == "Cast":
            to = _NP_OF_ONNX.get(attrs["to"])
            if to is None:
                raise UnsupportedNodeError(f"Cast {node.name!r}: target type {attrs['to']} is "
                                           "not supported")
            x = ins[0]
            if is_t(x):
                return [x.to(getattr(torch, np.dtype(to).name if to is not np.bool_
                                     else "bool"))]
            return [np.asarray(x).astype(to)]
        if op in ("Add", "Sub", "Mul", "Div", "MatMul"):
            a, b = ins
            if is_t(a) or is_t(b):
                a, b = data(a), data(b)
            if op == "Add":
                return [a + b]
            if op == "Sub":
                return [a - b]
            if op == "Mul":
                return [a * b]
            if op == "MatMul":
                return [a @ b]
            if not is_t(a) and np.asarray(a).dtype.kind in "iu":
                return [np.asarray(a) // np.asarray(b)]
            return [a / b]
        if op == "Neg":
            return [-ins[0]]
        if op in ("Relu", "Tanh", "Sigmoid", "Exp"):
            x = ins[0]
            if is_t(x):
                return [{"Relu": torch.relu, "Tanh": torch.tanh, "Sigmoid": torch.sigmoid,
                         "Exp": torch.exp}[op](x)]
            x = np.asarray(x)
            if op == "Relu":
                return [np.maximum(x, 0).astype(x.dtype)]
            if op == "Tanh":
                return [np.tanh(x)]
            if op == "Exp":
                return [np.exp(x)]
            return [(1 / (1 + np.exp(-x))).astype(x.dtype)]
        if op == "Split":
            x = ins[0]
            axis = attrs.get("axis", 0) % x.ndim
            sizes = attrs.get("split")
            if sizes is None and len(ins) > 1 and ins[1] is not None:
                sizes = _ints(be.to_numpy(ins[1]))
            if sizes is None:
                n = attrs.get("num_outputs", len(node.output))
                sizes = [x.shape[axis] // n] * n
            outs, start = [], 0
            for s in sizes:
                index = [slice(None)] * x.ndim
                index[axis] = slice(start, start + s)
                outs.append(x[tuple(index)])
                start += s
            return outs
        if op == "Expand":
            x, shape = ins[0], _ints(be.to_numpy(ins[1]))
            target = np.broadcast_shapes(tuple(x.shape), tuple(shape))
            if is_t(x):
                return [x.expand(*target)]
            return [np.broadcast_to(x, target).copy()]
        raise UnsupportedNodeError(f"operator {op} is not supported")  # pragma: no cover


# ------------------------------------------------------------------------------------------
# The model
# ------------------------------------------------------------------------------------------

class _Node:
    """A graph node without the onnx package: op_type, name, domain, input and output names
    ("" for an absent optional one), attributes as Python values (tensors as numpy arrays,
    strings as str)."""

    __slots__ = ("op_type", "name", "domain", "input", "output", "attrs")

    def __init__(self, op_type, name, domain, input, output, attrs):
        self.op_type, self.name, self.domain = op_type, name, domain
        self.input, self.output, self.attrs = list(input), list(output), dict(attrs)

    def __getstate__(self):
        return {k: getattr(self, k) for k in self.__slots__}

    def __setstate__(self, state):
        for k, v in state.items():
            setattr(self, k, v)


def _attribute_value(attribute):
    """An attribute as a Python value: tensors as numpy arrays, strings as str (subgraphs
    and the like as they are: no operator that rnn.onnx runs has them)."""
    onnx = _onnx()
    v = onnx.helper.get_attribute_value(attribute)
    if isinstance(v, onnx.TensorProto):
        return onnx.numpy_helper.to_array(v)
    if isinstance(v, bytes):
        return v.decode()
    if isinstance(v, list):
        return [x.decode() if isinstance(x, bytes) else x for x in v]
    return v


def _describe_graph(proto):
    """The graph as rnn.onnx uses it: names, initializers (numpy), nodes (_Node), and the
    static shapes and numpy dtypes known by value name (from the inputs, outputs,
    value_info, initializers and Constant nodes)."""
    onnx = _onnx()
    graph = proto.graph
    initializers = {i.name: onnx.numpy_helper.to_array(i) for i in graph.initializer}
    nodes = [_Node(n.op_type, n.name, n.domain, n.input, n.output,
                   {a.name: _attribute_value(a) for a in n.attribute}) for n in graph.node]
    shapes, dtypes = {}, {}
    for vi in list(graph.input) + list(graph.value_info) + list(graph.output):
        if not vi.type.HasField("tensor_type"):
            continue
        t = vi.type.tensor_type
        dtypes[vi.name] = _NP_OF_ONNX.get(t.elem_type)
        if t.HasField("shape"):
            shapes[vi.name] = tuple(d.dim_value if d.HasField("dim_value") else None
                                    for d in t.shape.dim)
    for name, value in initializers.items():
        shapes[name] = tuple(value.shape)
        dtypes[name] = value.dtype.type
    for node in nodes:
        value = node.attrs.get("value")
        if node.op_type == "Constant" and isinstance(value, np.ndarray):
            shapes[node.output[0]] = tuple(value.shape)
            dtypes[node.output[0]] = value.dtype.type
    return {"inputs": [i.name for i in graph.input], "outputs": [o.name for o in graph.output],
            "initializers": initializers, "nodes": nodes, "shapes": shapes, "dtypes": dtypes}


def _read_model(source):
    onnx = _onnx()
    if isinstance(source, onnx.ModelProto):
        return source
    path = os.fspath(source)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path}: no such ONNX model file")
    return onnx.load(path)


class OnnxModel:
    """An imported ONNX model: `outputs = model(*inputs)` (see rnn.onnx.load)."""

    def __init__(self, graph, device="cpu", _libraries=None):
        self.graph = graph
        self.initializers = graph["initializers"]
        self.input_names = [n for n in graph["inputs"] if n not in self.initializers]
        # Graph inputs with an initializer (IR < 4 lists them all) may be overridden.
        self.optional_input_names = [n for n in graph["inputs"] if n in self.initializers]
        self.output_names = list(graph["outputs"])
        self.nodes = []  # (kind, _Node, _RecurrentNode or None)
        for k, node in enumerate(graph["nodes"]):
            if node.op_type in RECURRENT_OPS and node.domain in ("", "ai.onnx"):
                self.nodes.append(("rnn", node, _RecurrentNode(node, k, graph["shapes"],
                                                               graph["dtypes"])))
                continue
            _Interpreter.check(node, k)
            self.nodes.append(("op", node, None))
        self.recurrent = [r for kind, _, r in self.nodes if kind == "rnn"]
        # Compiled libraries per node and device ("cpu" / "cuda"): paths, loaded lazily.
        self._libraries = dict(_libraries or {})
        self._models = {}
        self._on_device = {}
        self.from_cache = True
        devices = (device,) if isinstance(device, str) else tuple(device)
        for dev in devices:
            kind = "cuda" if str(dev).startswith("cuda") else "cpu"
            if kind not in ("cpu", "cuda"):
                raise ValueError(f"device {dev!r}: 'cpu' or 'cuda'")
            for r in self.recurrent:
                if (r.index, kind) not in self._libraries:
                    self._compile(r, kind)
        self._devices = devices

    def __repr__(self):
        ops = ", ".join(f"{r.op}({r.direction}, H={r.hidden_size})" for r in self.recurrent)
        return (f"<rnn.onnx.OnnxModel: inputs {self.input_names}, outputs "
                f"{self.output_names}, compiled {ops or 'nothing'}>")

    # -- compiling -------------------------------------------------------------------------

    def mlir(self, node=None):
        """The MLIR of one recurrent node (a _RecurrentNode, or its index among them), or of
        all of them in one module."""
        if node is None:
            return "\n".join(r.mlir() for r in self.recurrent)
        r = self.recurrent[node] if isinstance(node, int) else node
        return r.mlir()

    def _compile(self, r, kind):
        ir = r.mlir()
        extra = ("--target=cuda",) if kind == "cuda" else ()
        try:
            path, hit = _cache.compile_cached(ir, extra_args=extra)
        except _runtime.CompileError as e:
            raise _runtime.CompileError(
                f"rnn-compile rejected the function of {r.what}:\n{e.stderr or e}",
                stderr=e.stderr, returncode=e.returncode, command=e.command) from None
        self.from_cache = self.from_cache and hit
        self._libraries[(r.index, kind)] = path

    def _model(self, r, kind):
        key = (r.index, kind)
        m = self._models.get(key)
        if m is None:
            if key not in self._libraries:
                try:
                    _runtime.compiler_path()
                except Exception:
                    raise RuntimeError(
                        f"{r.what} has no {kind} library and rnn-compile is not here: load "
                        f"the model with device='{kind}' where the compiler is and save() "
                        "it") from None
                self._compile(r, kind)
            m = self._models[key] = _runtime.Model(self._libraries[key])
        return m

    # -- calling ---------------------------------------------------------------------------

    def __call__(self, *inputs, **named):
        """Runs the graph. `inputs` in the graph's input order (numpy arrays, or torch
        tensors), or by name; graph inputs that have an initializer may be left out (the
        initializer is used). Returns the graph's outputs in order, as a list: numpy arrays,
        or torch tensors on the inputs' device."""
        names = self.input_names + self.optional_input_names
        if len(inputs) > len(names):
            raise TypeError(f"the model takes at most {len(names)} inputs ({names}), got "
                            f"{len(inputs)}")
        given = dict(zip(names, inputs))
        for k, v in named.items():
            if k not in names:
                raise TypeError(f"unknown input {k!r}; the model's inputs are {names}")
            if k in given:
                raise TypeError(f"input {k!r} given twice")
            given[k] = v
        missing = [n for n in self.input_names if given.get(n) is None]
        if missing:
            raise TypeError(f"missing input(s) {missing}; the model's inputs are "
                            f"{self.input_names} (in this order)")
        cuda = next((v.device for v in given.values()
                     if _is_torch(v) and v.device.type == "cuda"), None)
        torch_out = any(_is_torch(v) for v in given.values())
        be = _Backend(cuda) if cuda is not None else _Backend(None)
        if cuda is None:
            values = dict(self.initializers)
        else:  # the initializers on the device, copied there once
            cached = self._on_device.get(str(cuda))
            if cached is None:
                cached = self._on_device[str(cuda)] = {
                    n: be.asarray(v) for n, v in self.initializers.items()}
            values = dict(cached)
        for n, v in given.items():
            if v is None:
                continue
            values[n] = be.asarray(v) if (cuda is not None or _is_torch(v)) else np.asarray(v)
        for k, (kind, node, info) in enumerate(self.nodes):
            for n in node.input:
                if n and n not in values:
                    raise OnnxImportError(f"{_describe(node, k)}: input {n!r} is not computed "
                                          "before it (the graph must be sorted)")
            ins = [values[n] if n else None for n in node.input]
            if kind == "rnn":
                outs = self._run_recurrent(info, dict(zip(node.input, ins)), be, cuda)
            else:
                outs = _Interpreter.run(node, ins, be)
            for name, v in zip(node.output, outs):
                if name:
                    values[name] = v
        result = []
        for n in self.output_names:
            v = values[n]
            if cuda is None:
                v = np.asarray(v)
                if torch_out:
                    import torch
                    v = torch.from_numpy(np.ascontiguousarray(v))
            result.append(v)
        return result

    def _run_recurrent(self, r, by_name, be, cuda):
        args = []
        X = by_name[r.inputs["X"]]
        if X.ndim != 3:
            raise _dsl.ShapeError(f"{r.what}: input X must be 3-D ([T, B, I] with layout 0, "
                                  f"[B, T, I] with layout 1), got {list(X.shape)}")
        B = int(X.shape[1] if r.layout == 0 else X.shape[0])
        for role in r.arg_roles():
            if role in r.inputs:
                v = by_name[r.inputs[role]]
            else:  # an initial state the node does not give: zeros
                shape = (r.D, B, r.hidden_size) if r.layout == 0 else (B, r.D, r.hidden_size)
                v = np.zeros(shape, r.dtype)
            want = np.int32 if role == "sequence_lens" else r.dtype
            if cuda is None:
                v = be.to_numpy(v)
                if v.dtype != want:
                    if role == "sequence_lens" and v.dtype.kind in "iu":
                        v = v.astype(np.int32)
                    else:
                        raise TypeError(f"{r.what}: input {role} has dtype {v.dtype}, the "
                                        f"node was compiled for {np.dtype(want)}")
                args.append(np.ascontiguousarray(v))
            else:
                v = be.asarray(v)
                tw = getattr(be.torch, np.dtype(want).name)
                if v.dtype != tw:
                    if role == "sequence_lens":
                        v = v.to(tw)
                    else:
                        raise TypeError(f"{r.what}: input {role} has dtype {v.dtype}, the "
                                        f"node was compiled for {np.dtype(want)}")
                args.append(v.contiguous())
        if cuda is None:
            outs = list(self._model(r, "cpu")(r.fname, *args))
        else:
            outs = self._run_cuda(r, args, cuda)
        return outs[:len(r.outputs)]

    def _run_cuda(self, r, args, device):
        from .module import _desc
        torch = __import__("torch")
        model = self._model(r, "cuda")
        descs = [_desc(a) for a in args]
        shapes = model.result_descriptors(r.fname, descs)
        results = [torch.empty(shape, dtype=args[0].dtype, device=device)
                   for _, shape in shapes]
        with torch.cuda.device(device):
            stream = torch.cuda.current_stream(device).cuda_stream
            model.run_descriptors(r.fname, descs, [_desc(t) for t in results], stream)
        return results

    # -- saving ----------------------------------------------------------------------------

    def save(self, directory):
        """Writes the model and its compiled libraries to `directory`: graph.pkl (the graph
        as rnn.onnx reads it: nodes, initializers, shapes), one library per recurrent node
        and device, the runtime libraries, manifest.json. rnn.onnx.load(directory) runs it
        without the compiler and without the onnx package."""
        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        with open(out / "graph.pkl", "wb") as f:
            pickle.dump(self.graph, f, protocol=4)
        libs = {}
        for (index, kind), path in sorted(self._libraries.items()):
            name = f"node{index}.{kind}.so"
            shutil.copyfile(path, out / name)
            libs[f"{index}:{kind}"] = name
        rt = _runtime.loaded_runtime_path() or _runtime.runtime_path()
        shutil.copyfile(rt, out / "librnn_runtime.so")
        if any(kind == "cuda" for _, kind in self._libraries):
            cuda_rt = Path(rt).resolve().parent / "librnn_runtime_cuda.so"
            if not cuda_rt.is_file():
                cuda_rt = Path(_runtime.runtime_path()).resolve().parent / \
                    "librnn_runtime_cuda.so"
            shutil.copyfile(cuda_rt, out / "librnn_runtime_cuda.so")
        manifest = {"format": FORMAT, "version": FORMAT_VERSION, "graph": "graph.pkl",
                    "runtime": "librnn_runtime.so", "libraries": libs}
        (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
        return str(out)


def load(source, device="cpu"):
    """Imports an ONNX model: a path to a .onnx file, an onnx.ModelProto, or a directory
    written by OnnxModel.save (which needs neither the compiler nor the onnx package).
    `device` ("cpu", "cuda", or both as a tuple) says which libraries to compile now; a
    call with torch CUDA tensors compiles the CUDA ones on first use where the compiler
    is. Returns an OnnxModel: `outputs = model(*inputs)`."""
    if not isinstance(source, (str, os.PathLike)) or not os.path.isdir(source):
        return OnnxModel(_describe_graph(_read_model(source)), device=device)
    d = Path(source)
    manifest_path = d / "manifest.json"
    if not manifest_path.is_file():
        raise FileNotFoundError(f"{manifest_path} not found: not a directory written by "
                                "OnnxModel.save()")
    manifest = json.loads(manifest_path.read_text())
    if manifest.get("format") != FORMAT or manifest.get("version") != FORMAT_VERSION:
        raise ValueError(f"{manifest_path}: not an rnn.onnx manifest of version "
                         f"{FORMAT_VERSION}")
    if "RNN_RUNTIME_LIB" not in os.environ:
        _runtime.load_runtime_from(d / manifest["runtime"])
    libs = {}
    for key, name in manifest["libraries"].items():
        index, kind = key.split(":")
        libs[(int(index), kind)] = str((d / name).resolve())
    with open(d / manifest["graph"], "rb") as f:
        graph = pickle.load(f)
    return OnnxModel(graph, device=(), _libraries=libs)


def to_mlir(source):
    """The MLIR module of a model's recurrent nodes (rnn.cells and one func.func per node,
    @node<k> for the graph's node #k), as rnn-import-onnx writes it."""
    model = OnnxModel(_describe_graph(_read_model(source)), device=())
    return model.mlir()
