"""Seeded random-cell generator for the rnn dialect.

`generate(seed)` builds a random, valid `rnn.cell` from the dialect's primitive
ops plus a `func.func @cell_seq` that scans it, and returns

    (mlir_text, reference_fn, shapes)

* `mlir_text`: the module (cell + func).
* `reference_fn(*args)`: evaluates the same graph in float64 numpy, looping over
  time (it walks the generator's own graph; it never parses MLIR). `args` are
  the func's arguments in order; it returns the func's results (output
  sequences, then final states).
* `shapes`: a `CellShapes` (the func name, every argument's shape with 'T'/'B'
  for the dynamic sizes and the range its values are drawn from, the result
  shapes, I, H, reverse). `make_args(shapes, T, B, rng)` draws float32 arguments.

`generate(seed, family="extended")` draws from a second family (ExtendedCellGen):
cells shaped as variations of the LSTM and the GRU, with gate feedback, second
recurrent stages, pointwise functions of the states before matmuls and input-only
pointwise chains, whose recurrent products are planned to 2-8 H*H multiply-adds per
row and step (bench/cell_speed.py times them). The default family's cells do not
depend on it.

Every value carries a conservative interval [lo, hi] that holds for all its
elements, given the ranges the arguments are drawn from (inputs in [-1, 1],
states in [-S, S] where the new state is checked to stay inside [-S, S], weights
in [-g/sqrt(K), g/sqrt(K)], ...). The intervals guard the ops that can blow up
or lose precision: exp only of values <= 3, log of values >= 0.5, sqrt of
values >= 0.1, rsqrt of values >= 0.25, division only by values bounded away
from 0 by 0.5, and no intermediate exceeds |CAP|. That keeps every step finite
and well conditioned for any number of steps, so float32 results can be compared
with a float64 reference at 1e-5.
"""

import math
import random
from dataclasses import dataclass, field

import numpy as np

CAP = 30.0  # bound on |any intermediate|


# ----------------------------------------------------------------------------
# Values, nodes, types
# ----------------------------------------------------------------------------

class Value:
    """An SSA value: name, shape (None = the dynamic batch), interval."""

    __slots__ = ("name", "shape", "lo", "hi")

    def __init__(self, name, shape, lo, hi):
        self.name = name
        self.shape = tuple(shape)
        self.lo = float(lo)
        self.hi = float(hi)

    @property
    def iv(self):
        return (self.lo, self.hi)

    @property
    def mag(self):
        return max(abs(self.lo), abs(self.hi))

    def __repr__(self):
        return f"{self.name}:{self.shape}[{self.lo:.3g},{self.hi:.3g}]"


class Node:
    __slots__ = ("op", "operands", "results", "attrs")

    def __init__(self, op, operands, results, attrs=None):
        self.op = op
        self.operands = list(operands)
        self.results = list(results)
        self.attrs = attrs or {}


def ttype(shape):
    dims = ["?" if d is None else str(d) for d in shape]
    return "tensor<" + "x".join(dims + ["f32"]) + ">"


def fmt_float(v):
    return f"{v:.6e}"


def bshape(a, b):
    """The dialect's (numpy's) broadcasting rule; None is the dynamic batch."""
    n = max(len(a), len(b))
    a = (1,) * (n - len(a)) + tuple(a)
    b = (1,) * (n - len(b)) + tuple(b)
    out = []
    for x, y in zip(a, b):
        if x == y:
            out.append(x)
        elif x == 1:
            out.append(y)
        elif y == 1:
            out.append(x)
        else:
            raise ValueError(f"shapes {a} and {b} do not broadcast")
    return tuple(out)


# ----------------------------------------------------------------------------
# Interval arithmetic
# ----------------------------------------------------------------------------

def _sig(x):
    if x < -700:
        return 0.0
    return 1.0 / (1.0 + math.exp(-x))


def iv_binary(op, a, b, same=False):
    (al, ah), (bl, bh) = a, b
    if op == "add":
        return al + bl, ah + bh
    if op == "sub":
        if same:
            return 0.0, 0.0
        return al - bh, ah - bl
    if op == "mul":
        if same:
            if al >= 0:
                return al * al, ah * ah
            if ah <= 0:
                return ah * ah, al * al
            return 0.0, max(al * al, ah * ah)
        c = [al * bl, al * bh, ah * bl, ah * bh]
        return min(c), max(c)
    if op == "div":
        assert bl > 0 or bh < 0, (a, b)
        c = [al / bl, al / bh, ah / bl, ah / bh]
        return min(c), max(c)
    if op == "max":
        return max(al, bl), max(ah, bh)
    if op == "min":
        return min(al, bl), min(ah, bh)
    raise KeyError(op)


def iv_unary(op, a):
    lo, hi = a
    if op == "neg":
        return -hi, -lo
    if op == "sigmoid":
        return _sig(lo), _sig(hi)
    if op == "tanh":
        return math.tanh(lo), math.tanh(hi)
    if op == "relu":
        return max(lo, 0.0), max(hi, 0.0)
    if op == "exp":
        return math.exp(max(lo, -700)), math.exp(hi)
    if op == "log":
        return math.log(lo), math.log(hi)
    if op == "sqrt":
        return math.sqrt(lo), math.sqrt(hi)
    if op == "rsqrt":
        return 1.0 / math.sqrt(hi), 1.0 / math.sqrt(lo)
    raise KeyError(op)


BINARY = ("add", "sub", "mul", "div", "max", "min")
UNARY = ("neg", "sigmoid", "tanh", "relu", "exp", "log", "sqrt", "rsqrt")
REDUCE = ("reduce_sum", "reduce_mean", "reduce_max")


# ----------------------------------------------------------------------------
# Numpy evaluation of one node (float64)
# ----------------------------------------------------------------------------

def _np_unary(op, x):
    if op == "neg":
        return -x
    if op == "sigmoid":
        return 1.0 / (1.0 + np.exp(-x))
    if op == "tanh":
        return np.tanh(x)
    if op == "relu":
        return np.maximum(x, 0.0)
    if op == "exp":
        return np.exp(x)
    if op == "log":
        return np.log(x)
    if op == "sqrt":
        return np.sqrt(x)
    if op == "rsqrt":
        return 1.0 / np.sqrt(x)
    raise KeyError(op)


def _np_binary(op, a, b):
    if op == "add":
        return a + b
    if op == "sub":
        return a - b
    if op == "mul":
        return a * b
    if op == "div":
        return a / b
    if op == "max":
        return np.maximum(a, b)
    if op == "min":
        return np.minimum(a, b)
    raise KeyError(op)


def eval_node(node, env, batch):
    ins = [env[v.name] for v in node.operands]
    op = node.op
    if op == "constant":
        shp = node.results[0].shape
        return [np.full(shp, node.attrs["value"], dtype=np.float64)]
    if op == "matmul":
        a, w = ins
        return [a @ w if node.attrs.get("wio") else a @ w.T]
    if op in BINARY:
        return [_np_binary(op, ins[0], ins[1])]
    if op in UNARY:
        return [_np_unary(op, ins[0])]
    if op == "reduce_sum":
        return [ins[0].sum(axis=-1, keepdims=True)]
    if op == "reduce_mean":
        return [ins[0].mean(axis=-1, keepdims=True)]
    if op == "reduce_max":
        return [ins[0].max(axis=-1, keepdims=True)]
    if op == "layer_norm":
        x = ins[0]
        eps = node.attrs.get("eps")
        eps = 1e-5 if eps is None else eps
        m = x.mean(axis=-1, keepdims=True)
        var = ((x - m) ** 2).mean(axis=-1, keepdims=True)
        return [(x - m) / np.sqrt(var + eps)]
    if op == "split":
        x = ins[0]
        outs, off = [], 0
        for r in node.results:
            n = r.shape[-1]
            outs.append(x[..., off:off + n])
            off += n
        return outs
    if op == "concat":
        # Operands may broadcast-free differ only on the last axis.
        return [np.concatenate(ins, axis=-1)]
    raise KeyError(op)


def emit_node(node):
    r = ", ".join(v.name for v in node.results)
    op = node.op
    o = node.operands
    if op == "constant":
        return f"{r} = rnn.constant {fmt_float(node.attrs['value'])} : {ttype(node.results[0].shape)}"
    if op == "matmul":
        wio = " weight_in_out" if node.attrs.get("wio") else ""
        return (f"{r} = rnn.matmul {o[0].name}, {o[1].name}{wio} : {ttype(o[0].shape)}, "
                f"{ttype(o[1].shape)} -> {ttype(node.results[0].shape)}")
    if op in BINARY:
        return f"{r} = rnn.{op} {o[0].name}, {o[1].name} : {ttype(o[0].shape)}, {ttype(o[1].shape)}"
    if op in UNARY or op in REDUCE:
        return f"{r} = rnn.{op} {o[0].name} : {ttype(o[0].shape)}"
    if op == "layer_norm":
        eps = node.attrs.get("eps")
        attr = "" if eps is None else f" {{epsilon = {fmt_float(eps)} : f64}}"
        return f"{r} = rnn.layer_norm {o[0].name}{attr} : {ttype(o[0].shape)}"
    if op == "split":
        return (f"{r} = rnn.split {o[0].name} : {ttype(o[0].shape)} -> "
                + ", ".join(ttype(v.shape) for v in node.results))
    if op == "concat":
        return (f"{r} = rnn.concat " + ", ".join(v.name for v in o) + " : "
                + ", ".join(ttype(v.shape) for v in o) + f" -> {ttype(node.results[0].shape)}")
    raise KeyError(op)


# ----------------------------------------------------------------------------
# The shapes a caller needs
# ----------------------------------------------------------------------------

@dataclass
class ArgSpec:
    name: str         # SSA name without '%'
    shape: tuple      # ints, 'T' and 'B' for the dynamic sizes
    lo: float         # values drawn uniformly from [lo, hi]
    hi: float
    role: str         # 'input', 'state' or 'param'
    dist: str = "uniform"  # or 'ramp': linspace(lo, hi, N) (a 1-D parameter)


@dataclass
class CellShapes:
    func: str
    I: int
    H: int
    reverse: bool
    args: list = field(default_factory=list)      # ArgSpec
    results: list = field(default_factory=list)   # shapes with 'T'/'B'
    num_outputs: int = 1
    num_states: int = 1
    num_ops: int = 0
    ops: dict = field(default_factory=dict)       # op name -> count
    family: str = "default"
    # Multiply-adds per row and step of the matmuls whose left operand depends on a
    # state and whose result reaches a result (`recurrent_macs`).
    recurrent_macs: int = 0


def make_args(shapes, T, B, rng):
    """float32 arguments for `shapes.func` (a numpy Generator `rng`)."""
    out = []
    for a in shapes.args:
        shp = tuple(T if d == "T" else B if d == "B" else d for d in a.shape)
        if a.role == "lengths":
            out.append(rng.integers(0, T + 1, size=shp).astype(np.int64))
        elif a.dist == "ramp":
            out.append(np.linspace(a.lo, a.hi, shp[-1]).astype(np.float32))
        else:
            out.append(rng.uniform(a.lo, a.hi, size=shp).astype(np.float32))
    return out


# ----------------------------------------------------------------------------
# The generator
# ----------------------------------------------------------------------------

SCALARS = (0.5, 1.0, 2.0, -1.0, 0.25, 1.5, -0.5, 3.0, 0.75)


class CellGen:
    FAMILY = "default"

    def __init__(self, seed, I=None, H=None, lengths=False):
        self.seed = seed
        self.sizes = (I, H)        # overrides of the drawn sizes (None: keep the drawn one)
        self.lengths = lengths     # the func takes per-row sequence lengths
        self.rng = random.Random(seed)
        self.nodes = []
        self.count = 0
        self.params = []       # Values; their ranges are their intervals
        self.dist = {}         # param name -> 'uniform' or 'ramp'
        self.consts = {}
        self.pool = []         # [B, H] values
        self.stats = []        # [B, 1] values
        self.vecs = []         # [H] values (params or param-only)

    # -- basics ------------------------------------------------------------
    def fresh(self, shape, lo, hi, prefix="v"):
        self.count += 1
        return Value(f"%{prefix}{self.count}", shape, lo, hi)

    def add(self, op, operands, results, **attrs):
        self.nodes.append(Node(op, operands, results, attrs))
        return results

    def param(self, shape, lo, hi, prefix="p", dist="uniform"):
        v = self.fresh(shape, lo, hi, prefix)
        self.params.append(v)
        self.dist[v.name] = dist
        return v

    def const(self, value, shape=()):
        key = (value, shape)
        if key in self.consts and self.rng.random() < 0.8:
            return self.consts[key]
        v = self.fresh(shape, value, value, "cst")
        self.add("constant", [], [v], value=value)
        self.consts[key] = v
        return v

    def unary(self, op, a):
        lo, hi = iv_unary(op, a.iv)
        v = self.fresh(a.shape, lo, hi)
        self.add(op, [a], [v])
        return v

    def binary(self, op, a, b, iv=None):
        lo, hi = iv if iv is not None else iv_binary(op, a.iv, b.iv, same=a is b)
        v = self.fresh(bshape(a.shape, b.shape), lo, hi)
        self.add(op, [a, b], [v])
        return v

    def binary_ok(self, op, a, b):
        if op == "div" and not (b.lo >= 0.5 or b.hi <= -0.5):
            return False
        lo, hi = iv_binary(op, a.iv, b.iv, same=a is b)
        return max(abs(lo), abs(hi)) <= CAP

    def reduce(self, op, a):
        n = a.shape[-1]
        lo, hi = (a.lo * n, a.hi * n) if op == "reduce_sum" else a.iv
        v = self.fresh(a.shape[:-1] + (1,), lo, hi)
        self.add(op, [a], [v])
        return v

    def layer_norm(self, a):
        """layer_norm(a), kept well conditioned: its error gain is 1/sqrt(var + eps),
        so a small epsilon (the default 1e-5, or 1e-3) is only used on a row
        whose variance is bounded below: tanh(a) plus a ramp parameter
        (linspace(-3, 3, N)), whose ends differ by >= 4, so var >= 16 / (2N)."""
        n = a.shape[-1]
        if n >= 2 and self.rng.random() < 0.4:
            t = self.unary("tanh", a) if a.mag > 1.0 else a
            ramp = self.param((n,), -3.0, 3.0, "ramp", dist="ramp")
            a = self.binary("add", t, ramp) if self.rng.random() < 0.5 else self.binary("add", ramp, t)
            eps = self.rng.choice([None, None, 1e-3])  # None: the default, 1e-5
        else:
            eps = self.rng.choice([1e-2, 0.1, 1.0])
        e = 1e-5 if eps is None else eps
        m = min(math.sqrt(max(n - 1, 0)), (a.hi - a.lo) / math.sqrt(e))
        v = self.fresh(a.shape, -m, m)
        self.add("layer_norm", [a], [v], eps=eps)
        return v

    def weight(self, n_out, k, gain=None):
        """A weight for a [.., k] -> [.., n_out] matmul; returns (W, wio, bound a)."""
        g = gain if gain is not None else self.rng.choice([0.5, 1.0, 1.0, 1.5])
        a = g / math.sqrt(k)
        wio = self.rng.random() < 0.25
        shape = (k, n_out) if wio else (n_out, k)
        W = self.param(shape, -a, a, "W")
        return W, wio, a

    def matmul(self, lhs, n_out, gain=None):
        k = lhs.shape[-1]
        W, wio, a = self.weight(n_out, k, gain)
        b = k * a * lhs.mag
        v = self.fresh(lhs.shape[:-1] + (n_out,), -b, b)
        self.add("matmul", [lhs, W], [v], wio=wio)
        return v

    def bias(self, n, lo=-0.5, hi=0.5):
        return self.param((n,), lo, hi, "b")

    def split(self, a, sizes):
        res = [self.fresh(a.shape[:-1] + (s,), a.lo, a.hi) for s in sizes]
        self.add("split", [a], res)
        return res

    def concat(self, vals):
        n = sum(v.shape[-1] for v in vals)
        lo = min(v.lo for v in vals)
        hi = max(v.hi for v in vals)
        r = self.fresh(vals[0].shape[:-1] + (n,), lo, hi)
        self.add("concat", vals, [r])
        return r

    # -- picking -----------------------------------------------------------
    def pick(self, cands=None, recent=True):
        cands = self.pool if cands is None else cands
        if recent and len(cands) > 3 and self.rng.random() < 0.6:
            return self.rng.choice(cands[-4:])
        return self.rng.choice(cands)

    def squash_small(self, v):
        """v itself if it is moderate, else tanh(v)."""
        if v.mag <= 4.0:
            return v
        return self.unary(self.rng.choice(["tanh", "sigmoid"]), v)

    def vec(self):
        """An [H] vector: a parameter, a param-only derived vector, or a splat constant."""
        H = self.H
        r = self.rng.random()
        if self.vecs and r < 0.35:
            return self.rng.choice(self.vecs)
        if r < 0.75:
            kind = self.rng.random()
            if kind < 0.12:
                v = self.param((1, H), -1.0, 1.0, "p")  # sometimes [1, H]
            elif kind < 0.6:
                v = self.param((H,), -1.0, 1.0, "p")
            else:
                v = self.param((H,), 0.5, 1.5, "g")  # positive (gains)
            self.vecs.append(v)
            return v
        if r < 0.9:
            # Param-only derived vector: computed from parameters alone.
            p = self.param((H,), -1.0, 1.0, "p")
            op = self.rng.choice(["sigmoid", "tanh", "exp", "neg", "mul_c", "add_c"])
            if op == "mul_c":
                v = self.binary("mul", p, self.const(self.rng.choice(SCALARS)))
            elif op == "add_c":
                v = self.binary("add", self.const(self.rng.choice(SCALARS)), p)
            else:
                v = self.unary(op, p)
            self.vecs.append(v)
            return v
        return self.const(self.rng.choice(SCALARS), (H,))

    def stat(self):
        if self.stats and self.rng.random() < 0.4:
            return self.rng.choice(self.stats)
        v = self.pick()
        s = self.reduce(self.rng.choice(REDUCE), v)
        self.stats.append(s)
        return s

    def rhs(self):
        r = self.rng.random()
        if r < 0.4:
            return self.pick()
        if r < 0.65:
            return self.vec()
        if r < 0.85:
            return self.const(self.rng.choice(SCALARS))
        return self.stat()

    def positive(self):
        """A fresh [B, H] value bounded below by >= 0.5."""
        v = self.pick()
        k = self.rng.randrange(5)
        if k == 0:
            s = self.unary("sigmoid", v)
            return self.binary("add", self.const(1.0), s)
        if k == 1:
            t = self.unary("tanh", v)
            return self.unary("exp", t)
        if k == 2:
            t = self.unary("tanh", v)
            e = self.unary("exp", t)
            return self.binary("add", e, self.const(1.0))
        if k == 3:
            r = self.unary("relu", self.squash_small(v))
            return self.binary("add", r, self.const(self.rng.choice([0.5, 1.0, 2.0])))
        s = self.unary("sigmoid", v)
        return self.binary("add", s, self.const(0.5, (self.H,)))

    def push(self, v):
        assert v.shape == (None, self.H), v
        assert v.mag <= CAP + 1e-9 or True
        self.pool.append(v)
        return v

    # -- actions -------------------------------------------------------------
    def act_unary(self):
        v = self.pick()
        op = self.rng.choice(["sigmoid", "tanh", "relu", "neg", "tanh", "sigmoid"])
        return self.push(self.unary(op, v))

    def act_binary(self):
        for _ in range(8):
            a = self.pick()
            b = self.rhs()
            op = self.rng.choice(["add", "sub", "mul", "max", "min", "add", "mul"])
            if self.rng.random() < 0.3 and op in ("sub", "add", "mul", "max", "min"):
                a, b = b, a
            if bshape(a.shape, b.shape) != (None, self.H):
                continue
            if self.binary_ok(op, a, b):
                return self.push(self.binary(op, a, b))
        return None

    def act_exp(self):
        cands = [v for v in self.pool if v.hi <= 3.0 and v.lo >= -30]
        if cands and self.rng.random() < 0.7:
            v = self.pick(cands)
        else:
            v = self.unary(self.rng.choice(["tanh", "sigmoid"]), self.pick())
        return self.push(self.unary("exp", v))

    def act_log(self):
        cands = [v for v in self.pool if v.lo >= 0.5]
        v = self.pick(cands) if cands and self.rng.random() < 0.5 else self.positive()
        return self.push(self.unary("log", v))

    def act_sqrt(self):
        op = self.rng.choice(["sqrt", "rsqrt"])
        floor = 0.1 if op == "sqrt" else 0.25
        cands = [v for v in self.pool if v.lo >= floor]
        v = self.pick(cands) if cands and self.rng.random() < 0.5 else self.positive()
        return self.push(self.unary(op, v))

    def act_div(self):
        for _ in range(6):
            num = self.pick()
            r = self.rng.random()
            if r < 0.6:
                den = self.positive()
                if self.rng.random() < 0.25:
                    den = self.unary("neg", den)
            elif r < 0.8:
                den = self.param((self.H,), 0.5, 1.5, "g")
            else:
                cands = [v for v in self.pool if v.lo >= 0.5 or v.hi <= -0.5]
                if not cands:
                    continue
                den = self.pick(cands)
            if self.rng.random() < 0.15 and den.shape == (None, self.H):
                num = self.const(self.rng.choice([1.0, 0.5, -1.0]))
            if self.binary_ok("div", num, den):
                return self.push(self.binary("div", num, den))
        return None

    def act_matmul_dep(self):
        """A dependent stage: a matmul on a pointwise value."""
        v = self.squash_small(self.pick())
        m = self.rng.choice([1, 1, 2, 3])
        y = self.matmul(v, m * self.H)
        if self.rng.random() < 0.5:
            y = self.binary("add", y, self.bias(m * self.H))
        if y.mag > CAP:
            y = self.unary("tanh", y)
        pieces = self.split(y, [self.H] * m) if m > 1 else [y]
        for p in pieces:
            self.push(p)
        return pieces[-1]

    def act_concat_matmul(self):
        a = self.squash_small(self.pick())
        b = self.squash_small(self.pick(self.pool + self.states + self.extra_inputs))
        cat = self.concat([a, b])
        m = self.rng.choice([1, 2])
        y = self.matmul(cat, m * self.H)
        if y.mag > CAP:
            y = self.unary("tanh", y)
        pieces = self.split(y, [self.H] * m) if m > 1 else [y]
        for p in pieces:
            self.push(p)
        return pieces[-1]

    def act_reduce(self):
        for _ in range(6):
            s = self.stat()
            a = self.vec() if self.rng.random() < 0.2 else self.pick()
            op = self.rng.choice(["sub", "add", "mul", "sub", "div"])
            if op == "div" and not (s.lo >= 0.5 or s.hi <= -0.5):
                op = "sub"
            if self.rng.random() < 0.3 and op != "div":
                a, s = s, a
            if self.binary_ok(op, a, s):
                return self.push(self.binary(op, a, s))
        return None

    def act_softmax(self):
        v = self.pick()
        if v.hi - v.lo > 20:
            v = self.unary("tanh", v)
        m = self.reduce("reduce_max", v)
        d = self.binary("sub", v, m, iv=(v.lo - v.hi, 0.0))
        e = self.unary("exp", d)
        s = self.reduce("reduce_sum", e)
        s.lo = max(s.lo, 1.0)  # the max element contributes exp(0) = 1
        p = self.binary("div", e, s, iv=(0.0, 1.0))
        return self.push(p)

    def act_layer_norm(self):
        v = self.pick()
        y = self.layer_norm(v)
        if self.rng.random() < 0.5:
            y = self.binary("mul", y, self.param((self.H,), 0.5, 1.5, "g"))
        if self.rng.random() < 0.5:
            y = self.binary("add", y, self.bias(self.H))
        return self.push(y)

    def act_rmsnorm(self):
        v = self.squash_small(self.pick())
        sq = self.binary("mul", v, v)
        ms = self.reduce("reduce_mean", sq)
        c = self.rng.choice([0.1, 0.5, 1.0])
        den = self.binary("add", ms, self.const(c))
        r = self.unary("rsqrt", den)
        n = self.H
        m = min(math.sqrt(n), v.mag / math.sqrt(c))
        y = self.binary("mul", v, r, iv=(-m, m))
        return self.push(y)

    def act_input_matmul(self):
        """Another independent matmul on an input or a state."""
        src = self.rng.choice([self.x] + self.states + self.extra_inputs)
        y = self.matmul(src, self.H)
        if self.pool and self.rng.random() < 0.6:
            a = self.pick()
            if self.binary_ok("add", a, y):
                y = self.binary("add", a, y)
        if y.mag > CAP:
            y = self.unary("tanh", y)
        return self.push(y)

    def blend(self, z, a, b):
        """z*a + (1-z)*b for z in [0, 1]: the result lies in hull(a, b)."""
        assert z.lo >= 0 and z.hi <= 1
        one = self.const(1.0)
        za = self.binary("mul", z, a)
        omz = self.binary("sub", one, z)
        zb = self.binary("mul", omz, b)
        return self.binary("add", za, zb, iv=(min(a.lo, b.lo), max(a.hi, b.hi)))

    def act_blend(self):
        z = self.unary("sigmoid", self.pick())
        a, b = self.pick(), self.pick()
        return self.push(self.blend(z, a, b))

    ACTIONS = [
        ("unary", 4), ("binary", 6), ("exp", 1.5), ("log", 1), ("sqrt", 1), ("div", 1.5),
        ("matmul_dep", 1.2), ("concat_matmul", 0.8), ("reduce", 1.2), ("softmax", 0.5),
        ("layer_norm", 1), ("rmsnorm", 0.5), ("input_matmul", 0.7), ("blend", 1),
    ]

    # -- bounded squashes for the new states ----------------------------------
    def squash_to(self, v, S):
        """A [B, H] value built from v with interval inside [-S, S]."""
        opts = ["tanh", "tanh", "sigmoid", "clip", "ln"]
        while True:
            k = self.rng.choice(opts)
            if k == "tanh":
                return self.unary("tanh", v)
            if k == "sigmoid":
                return self.unary("sigmoid", v)
            if k == "clip":
                c = self.rng.choice([0.5, 1.0]) * S
                hi = self.binary("min", v, self.const(c))
                return self.binary("max", hi, self.const(-c))
            if k == "ln":
                y = self.layer_norm(v)
                if y.mag <= S:
                    return y
                opts = ["tanh", "sigmoid", "clip"]

    def combine_recent(self):
        """The sum of 1-3 recent pool values, within CAP."""
        v = self.pick()
        for _ in range(self.rng.randrange(3)):
            w = self.pick()
            op = self.rng.choice(["add", "sub"])
            if w is not v and self.binary_ok(op, v, w):
                v = self.binary(op, v, w)
        return v

    def new_state(self, s, S, c_new=None):
        r = self.rng.random()
        if c_new is not None and r < 0.5:
            # LSTM-style h = sigmoid(o) * tanh(c)
            o = self.unary("sigmoid", self.pick())
            y = self.binary("mul", o, self.unary("tanh", c_new))
            return y
        if r < 0.45:
            return self.squash_to(self.combine_recent(), S)
        if r < 0.75:
            # GRU-style blend of the old state and a bounded candidate.
            z = self.unary("sigmoid", self.pick())
            cand = self.squash_to(self.combine_recent(), S)
            if self.rng.random() < 0.5:
                return self.blend(z, s, cand)
            return self.blend(z, cand, s)
        # LSTM-style c = f*c + i*g, clipped (or squashed) back into [-S, S].
        f = self.unary("sigmoid", self.pick())
        i = self.unary("sigmoid", self.pick())
        g = self.unary("tanh", self.pick())
        fc = self.binary("mul", f, s)
        ig = self.binary("mul", i, g)
        c = self.binary("add", fc, ig)
        if self.rng.random() < 0.7:
            hi = self.binary("min", c, self.const(float(S)))
            return self.binary("max", hi, self.const(-float(S)))
        return self.unary("tanh", c)

    # -- the whole cell ------------------------------------------------------
    def build(self):
        rng = self.rng
        seed = self.seed
        # Sizes: make sure 1 and small odd sizes appear regularly.
        special = [1, 1, 3, 5, 7, 13]
        self.I = I = rng.choice(special) if rng.random() < 0.35 else rng.randint(1, 13)
        self.H = H = rng.choice(special) if rng.random() < 0.35 else rng.randint(1, 13)
        # Overridden sizes replace the drawn ones after the draws, so that the
        # rest of the cell draws the same random choices.
        self.I = I = self.sizes[0] or I
        self.H = H = self.sizes[1] or H
        self.reverse = (seed % 4 == 3)
        nstates = 2 if rng.random() < 0.45 else 1
        has_x2 = rng.random() < 0.3

        self.x = Value("%x", (None, I), -1.0, 1.0)
        self.extra_inputs = [Value("%x2", (None, H), -1.0, 1.0)] if has_x2 else []
        self.inputs = [self.x] + self.extra_inputs
        self.Sbound = [rng.choice([1.0, 4.0]) for _ in range(nstates)]
        names = ["%h", "%c"]
        self.states = [Value(names[i], (None, H), -self.Sbound[i], self.Sbound[i])
                       for i in range(nstates)]

        # Stage 1: gate pre-activations from the inputs and states.
        k = rng.choice([1, 2, 3, 4])
        srcs = [self.x]
        if rng.random() < 0.85:
            srcs.append(self.states[0])
        if has_x2 and rng.random() < 0.7:
            srcs.append(self.extra_inputs[0])
        if nstates > 1 and rng.random() < 0.4:
            srcs.append(self.states[1])
        mode = rng.choice(["fused", "separate", "concat"]) if len(srcs) > 1 else "fused"

        def split_gates(y):
            if k == 1:
                return [y]
            if k >= 3 and rng.random() < 0.25:  # nested split: [H, (k-1)H] then k-1
                first, rest = self.split(y, [H, (k - 1) * H])
                return [first] + self.split(rest, [H] * (k - 1))
            return self.split(y, [H] * k)

        def proj(src):
            y = self.matmul(src, k * H)
            if rng.random() < 0.6:
                y = self.binary("add", y, self.bias(k * H))
            return y

        def sum_all(ys):
            acc = ys[0]
            for y in ys[1:]:
                acc = self.binary("add", acc, y)
            return acc

        gates = []
        if mode == "concat":
            n = 3 if len(srcs) > 2 and rng.random() < 0.3 else 2
            cat = self.concat(srcs[:n])
            ys = [proj(cat)] + [proj(s) for s in srcs[n:]]
            gates = split_gates(sum_all(ys))
        elif mode == "fused":
            gates = split_gates(sum_all([proj(s) for s in srcs]))
        else:
            per_src = [split_gates(proj(s)) for s in srcs]
            for j in range(k):
                pieces = [p[j] for p in per_src]
                if rng.random() < 0.6:
                    gates.append(sum_all(pieces))
                else:
                    gates.extend(pieces)
        for g in gates:
            if g.mag > CAP:
                g = self.unary("tanh", g)
            self.push(g)
        # States and [B, H] inputs are pool values too (used pointwise directly).
        for s in self.states + self.extra_inputs:
            self.pool.insert(0, s)
        if I == H:
            self.pool.insert(0, self.x)

        # Stage 2: random pointwise / reduction / dependent-matmul actions.
        nacts = rng.randint(3, 12)
        names_, weights = zip(*self.ACTIONS)
        for _ in range(nacts):
            act = rng.choices(names_, weights)[0]
            getattr(self, "act_" + act)()

        # Stage 3: new states (c before h, so h may read the new c) and outputs.
        new_states = [None] * nstates
        c_new = None
        for i in reversed(range(nstates)):
            s = self.states[i]
            r = rng.random()
            other = self.states[1 - i] if nstates > 1 else None
            if r < 0.03:
                ns = s                                  # the state is left as is
            elif r < 0.08 and other is not None and other.mag <= self.Sbound[i]:
                ns = other                              # takes the other state's old value
            else:
                ns = self.new_state(s, self.Sbound[i], c_new if i == 0 else None)
            assert ns.shape == (None, H)
            assert -self.Sbound[i] - 1e-9 <= ns.lo and ns.hi <= self.Sbound[i] + 1e-9, (ns, i)
            new_states[i] = ns
            self.push(ns)
            if i == 1:
                c_new = ns
        nout = 2 if rng.random() < 0.35 else 1
        outs = [new_states[0]]
        while len(outs) < nout:
            r = rng.random()
            if r < 0.05:
                outs.append(self.states[0])          # the old state, as is
            elif r < 0.08 and self.extra_inputs:
                outs.append(self.extra_inputs[0])    # an input, as is
            elif r < 0.12:
                outs.append(outs[0])                 # the same value twice
            elif r < 0.35 and nstates > 1:
                outs.append(new_states[1])
            else:
                outs.append(self.pick())
        if rng.random() < 0.3:
            outs[0] = self.pick()
        self.outputs = outs
        self.new_states = new_states
        return self

    # -- text ------------------------------------------------------------------
    def mlir(self):
        H = self.H
        ind = "  "
        def args(vals):
            return ", ".join(f"{v.name}: {ttype(v.shape)}" for v in vals)
        out_types = ", ".join(ttype(v.shape) for v in self.outputs)
        lines = []
        family = "" if self.FAMILY == "default" else f" ({self.FAMILY})"
        lines.append(f"// cellgen seed {self.seed}{family}: I = {self.I}, H = {H}, "
                     f"{len(self.states)} state(s), {len(self.nodes)} ops"
                     + (", reverse" if self.reverse else ""))
        hdr = f"rnn.cell @cell inputs({args(self.inputs)}) states({args(self.states)})"
        if self.params:
            hdr += f"\n    params({args(self.params)})"
        hdr += f"\n    -> ({out_types}) {{"
        lines.append(hdr)
        for n in self.nodes:
            lines.append(ind + emit_node(n))
        lines.append(ind + "rnn.yield outputs(" + ", ".join(v.name for v in self.outputs)
                     + " : " + out_types + ")\n" + ind + "    states("
                     + ", ".join(v.name for v in self.new_states) + " : "
                     + ", ".join(ttype(v.shape) for v in self.new_states) + ")")
        lines.append("}")
        lines.append("")

        # The func.
        seq = lambda n: f"tensor<?x?x{n}xf32>"
        fargs = [("%xs", seq(self.I))]
        if self.extra_inputs:
            fargs.append(("%xs2", seq(H)))
        if self.lengths:
            fargs.append(("%len", "tensor<?xi64>"))
        init = [(f"{s.name}0", ttype(s.shape)) for s in self.states]
        fparams = [(p.name, ttype(p.shape)) for p in self.params]
        res_types = [seq(v.shape[-1]) for v in self.outputs] + [ttype(s.shape) for s in self.states]
        lines.append("func.func @cell_seq(" + ", ".join(f"{n}: {t}" for n, t in fargs + init + fparams)
                     + ")\n    -> (" + ", ".join(res_types) + ") {")
        ins = [a for a in fargs if a[0] != "%len"]
        scan = "  %r:" + str(len(res_types)) + " = rnn.scan @cell" + (" reverse" if self.reverse else "")
        scan += (" inputs(" + ", ".join(n for n, _ in ins) + " : " + ", ".join(t for _, t in ins) + ")")
        scan += ("\n      init(" + ", ".join(n for n, _ in init) + " : "
                 + ", ".join(t for _, t in init) + ")")
        if fparams:
            scan += ("\n      params(" + ", ".join(n for n, _ in fparams) + " : "
                     + ", ".join(t for _, t in fparams) + ")")
        if self.lengths:
            scan += "\n      lengths(%len : tensor<?xi64>)"
        scan += ("\n      -> outputs(" + ", ".join(seq(v.shape[-1]) for v in self.outputs)
                 + ") states(" + ", ".join(ttype(s.shape) for s in self.states) + ")")
        lines.append(scan)
        lines.append("  return " + ", ".join(f"%r#{i}" for i in range(len(res_types)))
                     + " : " + ", ".join(res_types))
        lines.append("}")
        return "\n".join(lines) + "\n"

    def shapes(self):
        sh = CellShapes(func="cell_seq", I=self.I, H=self.H, reverse=self.reverse,
                        num_outputs=len(self.outputs), num_states=len(self.states),
                        num_ops=len(self.nodes), family=self.FAMILY,
                        recurrent_macs=recurrent_macs(self))
        sh.args.append(ArgSpec("xs", ("T", "B", self.I), -1.0, 1.0, "input"))
        if self.extra_inputs:
            sh.args.append(ArgSpec("xs2", ("T", "B", self.H), -1.0, 1.0, "input"))
        if self.lengths:
            # Per-row lengths, drawn from 0..T (`make_args`).
            sh.args.append(ArgSpec("len", ("B",), 0, 0, "lengths"))
        for s in self.states:
            # Initial states in [-1, 1], inside every state's bound.
            sh.args.append(ArgSpec(s.name[1:] + "0", ("B", self.H), -1.0, 1.0, "state"))
        for p in self.params:
            sh.args.append(ArgSpec(p.name[1:], p.shape, p.lo, p.hi, "param", self.dist[p.name]))
        sh.results = ([("T", "B", v.shape[-1]) for v in self.outputs]
                      + [("B", self.H) for _ in self.states])
        for n in self.nodes:
            sh.ops[n.op] = sh.ops.get(n.op, 0) + 1
        return sh

    # -- the reference -----------------------------------------------------------
    def step(self, xs_t, states, params, batch):
        env = {}
        for v, a in zip(self.inputs, xs_t):
            env[v.name] = a
        for v, a in zip(self.states, states):
            env[v.name] = a
        for v, a in zip(self.params, params):
            env[v.name] = a
        for n in self.nodes:
            res = eval_node(n, env, batch)
            for v, a in zip(n.results, res):
                assert a.shape == tuple(batch if d is None else d for d in v.shape), (n.op, v, a.shape)
                env[v.name] = a
        outs = [np.broadcast_to(env[v.name], (batch, v.shape[-1])) for v in self.outputs]
        new = [env[v.name] for v in self.new_states]
        return outs, new

    def reference(self, *args, dtype=np.float64):
        """The func's results in `dtype`. With lengths (the dialect's semantics), row b
        takes steps t < lengths[b] only: its state stays and its outputs are zero after."""
        args = list(args)
        nin = len(self.inputs)
        lengths = np.asarray(args.pop(nin), dtype=np.int64) if self.lengths else None
        args = [np.asarray(a, dtype=dtype) for a in args]
        ns = len(self.states)
        seqs = args[:nin]
        states = args[nin:nin + ns]
        params = args[nin + ns:]
        assert len(params) == len(self.params)
        T, B = seqs[0].shape[0], seqs[0].shape[1]
        ys = [np.zeros((T, B, v.shape[-1]), dtype=dtype) for v in self.outputs]
        order = range(T - 1, -1, -1) if self.reverse else range(T)
        with np.errstate(over="raise", invalid="raise", divide="raise", under="ignore"):
            for t in order:
                outs, new = self.step([s[t] for s in seqs], states, params, B)
                live = (np.ones(B, dtype=bool) if lengths is None else t < lengths)[:, None]
                states = [np.where(live, n, s) for n, s in zip(new, states)]
                for y, o in zip(ys, outs):
                    y[t] = np.where(live, o, 0)
        return tuple(ys) + tuple(np.array(s, dtype=dtype) for s in states)


def recurrent_macs(gen):
    """Multiply-adds per row and step of `gen`'s recurrent matmuls: those whose left
    operand depends on a state (the products a step must wait for), counted only where
    the result reaches an output or a new state, since the compiler drops the rest."""
    dep = {s.name for s in gen.states}
    for n in gen.nodes:
        if any(o.name in dep for o in n.operands):
            dep.update(r.name for r in n.results)
    live = {v.name for v in gen.outputs + gen.new_states}
    total = 0
    for n in reversed(gen.nodes):
        if not any(r.name in live for r in n.results):
            continue
        live.update(o.name for o in n.operands)
        if n.op == "matmul" and n.operands[0].name in dep:
            total += n.operands[0].shape[-1] * n.results[0].shape[-1]
    return total


class ExtendedCellGen(CellGen):
    """Cells shaped as a researcher varies an LSTM or a GRU, with the patterns the zoo
    lacks (issue 28), each drawn often:

    * pointwise functions of the states before the first recurrent matmul
      (`tanh(h)·Uᵀ`, `(h⊙c)·Uᵀ`, `(σ(c)⊙h)·Uᵀ`), or the states concatenated along K;
    * gate feedback: a gate computed in this step read by the next one through a matrix
      of its own (`b = tanh(W_b x + U_b h + R_b a)`), sometimes in a chain of two;
    * a second recurrent stage on a gated state (`(r⊙h)·U_nᵀ`, the GRU with the reset
      gate first);
    * input-only pointwise chains feeding gates (`σ(W_z x + b_z)`, `tanh(x)`,
      `x⊙σ(W_z x + b_z)`, `tanh(x)·Wᵀ`);
    * LayerNorm on the gate pre-activations, one to three states, and a few random
      pointwise and row-reduction ops (the default family's actions, no matmuls).

    The recurrent matmuls are planned first so that they come to between MIN_UNITS
    and MAX_UNITS times H·H multiply-adds per row and step (an LSTM: 4), which keeps
    a FLOP-scaled LSTM a meaningful reference for their time (bench/cell_speed.py).
    Every gate is read by a state update, so no recurrent product is dead code.

    The draws come from a random stream of their own: seed N of this family has
    nothing to do with seed N of the default family."""

    FAMILY = "extended"
    STATE_NAMES = ("%h", "%c", "%m")
    MIN_UNITS = 2
    MAX_UNITS = 8

    def __init__(self, seed, I=None, H=None, lengths=False):
        super().__init__(seed, I, H, lengths)
        self.rng = random.Random(f"cellgen-extended-{seed}")
        self.unused = []     # gate values no state update has read yet
        self.units = 0       # planned recurrent multiply-adds, in units of H*H

    # -- the plan ----------------------------------------------------------------
    def plan(self, nstates):
        """The recurrent structure, redrawn until its multiply-adds are in range."""
        rng = self.rng
        while True:
            p = {"pre": rng.random() < 0.5,
                 "src": (rng.choice(["one", "one", "concat", "two"]) if nstates > 1
                         else "one"),
                 "k1": rng.randint(1, 4),
                 "feedback": [rng.random() < 0.5 for _ in range(rng.choice([0, 0, 1, 1, 2]))],
                 "stage2": rng.choice([0, 0, 1, 1, 2]),
                 "inputs": (rng.sample(["sigmoid", "tanh_x", "gated_x", "tanh_proj"],
                                       rng.choice([1, 1, 2]))
                            if rng.random() < 0.6 else []),
                 "layer_norm": rng.random() < 0.25,
                 "extras": rng.choice([0, 0, 1, 2, 3])}
            # Stage 1 reads H columns per gate and source (2H for the concatenation);
            # a feedback product is one unit, plus its own U on stage 1's operand.
            width = 2 if p["src"] == "concat" else 1
            units = p["k1"] * (1 if p["src"] == "one" else 2)
            units += sum(1 + (width if own else 0) for own in p["feedback"]) + p["stage2"]
            if self.MIN_UNITS <= units <= self.MAX_UNITS:
                self.units = units
                return p

    # -- helpers -------------------------------------------------------------------
    def gate(self, terms, kind=None):
        """act(sum(terms) + b): a gate, sigmoid or tanh, recorded as not yet read."""
        pre = terms[0]
        for t in terms[1:]:
            pre = self.binary("add", pre, t)
        if self.rng.random() < 0.7:
            pre = self.binary("add", pre, self.bias(self.H))
        return self.activate(pre, kind)

    def activate(self, pre, kind=None):
        kind = kind or self.rng.choice(["sigmoid", "sigmoid", "tanh"])
        g = self.unary(kind, pre)
        self.pool.append(g)
        self.unused.append(g)
        return g

    def take(self, unit=False):
        """A gate for a state update, preferring one nothing has read yet; with `unit`,
        one in [0, 1] (a sigmoid of it if need be), else one in [-1, 1]."""
        fits = (lambda v: v.lo >= 0 and v.hi <= 1) if unit else (lambda v: v.mag <= 1)
        cands = [v for v in self.unused if fits(v)] or self.unused
        if cands:
            v = self.rng.choice(cands)
            self.unused.remove(v)
        else:
            v = self.pick()
        if not fits(v):
            v = self.unary("sigmoid" if unit else "tanh", v)
        return v

    def state_pointwise(self):
        """A pointwise function of the states that a recurrent matmul reads."""
        h = self.states[0]
        other = self.states[1] if len(self.states) > 1 else None
        k = self.rng.choice(["tanh", "relu", "mul", "gate", "add"] if other else
                            ["tanh", "tanh", "relu", "sigmoid"])
        if k in ("tanh", "relu", "sigmoid"):
            return self.unary(k, h)
        if k == "mul":
            return self.binary("mul", h, other)
        if k == "gate":
            return self.binary("mul", self.unary("sigmoid", other), h)
        return self.binary("add", h, other)

    def input_chains(self, kinds):
        """Input-only values: gates to read (returned) and pre-activation terms (kept in
        self.input_terms for the gates built later)."""
        I, H = self.I, self.H
        for kind in kinds:
            if kind == "sigmoid" or (kind in ("tanh_x", "gated_x") and I != H):
                z = self.unary("sigmoid", self.binary("add", self.matmul(self.x, H),
                                                      self.bias(H)))
                if kind == "gated_x" and I != H:
                    z = self.binary("mul", z, self.unary("tanh", self.matmul(self.x, H)))
                self.pool.append(z)
                self.unused.append(z)
            elif kind == "tanh_x":
                t = self.unary("tanh", self.x)
                self.pool.append(t)
                self.unused.append(t)
            elif kind == "gated_x":
                z = self.unary("sigmoid", self.binary("add", self.matmul(self.x, H),
                                                      self.bias(H)))
                g = self.binary("mul", self.x, z)
                self.pool.append(g)
                self.unused.append(g)
            else:  # tanh_proj: tanh(x)·Wᵀ, added to a gate's pre-activation
                self.input_terms.append(self.matmul(self.unary("tanh", self.x), H))

    def input_term(self):
        """x·Wᵀ (its own matmul: rnn-hoist-input-projection moves it out), or a waiting
        input-only term."""
        if self.input_terms and self.rng.random() < 0.7:
            return self.input_terms.pop()
        return self.matmul(self.x, self.H)

    # -- the whole cell ------------------------------------------------------------
    def build(self):
        rng = self.rng
        special = [1, 1, 3, 5, 7, 13]
        I = rng.choice(special) if rng.random() < 0.3 else rng.randint(1, 13)
        H = rng.choice(special) if rng.random() < 0.3 else rng.randint(1, 13)
        self.I = I = self.sizes[0] or I
        self.H = H = self.sizes[1] or H
        self.reverse = rng.random() < 0.25
        nstates = rng.choice([1, 2, 2, 3])
        plan = self.plan(nstates)
        self.plan_ = plan

        self.x = Value("%x", (None, I), -1.0, 1.0)
        self.extra_inputs = []
        self.inputs = [self.x]
        self.Sbound = [rng.choice([1.0, 4.0]) for _ in range(nstates)]
        self.states = [Value(self.STATE_NAMES[i], (None, H), -self.Sbound[i], self.Sbound[i])
                       for i in range(nstates)]
        self.pool = list(self.states)
        self.input_terms = []
        self.input_chains(plan["inputs"])

        # Stage 1: k1 gates from the states (or a function of them) and the input.
        k1 = plan["k1"]
        lhs = self.state_pointwise() if plan["pre"] else self.states[0]
        if plan["src"] == "concat":
            lhs = self.concat([lhs, self.states[1]] if rng.random() < 0.5
                              else [self.states[1], lhs])
        terms = [self.matmul(lhs, k1 * H), self.matmul(self.x, k1 * H)]
        if plan["src"] == "two":
            terms.insert(1, self.matmul(self.states[1], k1 * H))
        pre = terms[0]
        for t in terms[1:]:
            pre = self.binary("add", pre, t)
        if rng.random() < 0.7:
            pre = self.binary("add", pre, self.bias(k1 * H))
        pieces = self.split(pre, [H] * k1) if k1 > 1 else [pre]
        stage1 = []
        for p in pieces:
            if self.input_terms and rng.random() < 0.5:
                p = self.binary("add", p, self.input_terms.pop())
            if plan["layer_norm"]:
                p = self.layer_norm(p)
                if rng.random() < 0.5:
                    p = self.binary("mul", p, self.param((H,), 0.5, 1.5, "g"))
            stage1.append(self.activate(p))

        # Gate feedback: a gate of this step read through a matrix of its own, added to
        # the next gate's pre-activation (with U·lhs on stage 1's operand, sometimes).
        last = None
        for own in plan["feedback"]:
            src = last if last is not None and rng.random() < 0.6 else rng.choice(stage1)
            terms = [self.matmul(src, H), self.input_term()]
            if own:
                terms.insert(1, self.matmul(lhs, H))
            last = self.gate(terms)

        # A second recurrent stage on a gated state: (r⊙s)·Uᵀ, r in [0, 1].
        m2 = plan["stage2"]
        if m2:
            sig = [v for v in self.pool if v.lo >= 0 and v.hi <= 1 and v in self.unused]
            r = rng.choice(sig) if sig else self.unary("sigmoid", rng.choice(stage1))
            if r in self.unused and rng.random() < 0.5:
                self.unused.remove(r)   # read only through the stage, as GRU's r
            s = rng.choice(self.states)
            if rng.random() < 0.3:
                s = self.unary("tanh", s)
            y = self.matmul(self.binary("mul", r, s), m2 * H)
            for p in (self.split(y, [H] * m2) if m2 > 1 else [y]):
                self.gate([p, self.input_term()], rng.choice(["tanh", "tanh", "sigmoid"]))

        # A few ops of the default family's kinds (pointwise and row reductions).
        for _ in range(plan["extras"]):
            act = rng.choice(["unary", "binary", "blend", "reduce", "exp", "rmsnorm",
                              "softmax"])
            v = getattr(self, "act_" + act)()
            if v is not None:
                self.unused.append(v)
        # An input-only term no gate has taken makes an input-only gate of its own.
        while self.input_terms:
            self.gate([self.input_terms.pop()])

        # New states (c before h, so that h may read the new c), then outputs.
        new_states = [None] * nstates
        c_new = None
        for i in reversed(range(nstates)):
            s, S = self.states[i], self.Sbound[i]
            r = rng.random()
            if i == 0 and c_new is not None and r < 0.5:
                ns = self.binary("mul", self.take(unit=True), self.unary("tanh", c_new))
            elif r < 0.5:
                # c' = f⊙c + i⊙g, clipped (or squashed) back into [-S, S].
                fc = self.binary("mul", self.take(unit=True), s)
                ig = self.binary("mul", self.take(unit=True), self.take())
                c = self.binary("add", fc, ig)
                if rng.random() < 0.7:
                    ns = self.binary("max", self.binary("min", c, self.const(S)),
                                     self.const(-S))
                else:
                    ns = self.unary("tanh", c)
            else:
                # s' = z⊙s + (1-z)⊙cand, a blend of the old state and a candidate.
                z = self.take(unit=True)
                cand = self.take()
                ns = self.blend(z, s, cand) if rng.random() < 0.5 else self.blend(z, cand, s)
            new_states[i] = ns
            if i == 1:
                c_new = ns
        # Gates no update has read scale the first state's new value (by a sigmoid,
        # which keeps it inside its bound).
        if self.unused:
            acc = self.unused[0]
            for v in self.unused[1:]:
                acc = self.binary("add", acc, v)
            self.unused = []
            new_states[0] = self.binary("mul", new_states[0], self.unary("sigmoid", acc))
        for i, ns in enumerate(new_states):
            assert ns.shape == (None, H)
            assert -self.Sbound[i] - 1e-9 <= ns.lo and ns.hi <= self.Sbound[i] + 1e-9, (ns, i)
        outs = [new_states[0]]
        if rng.random() < 0.3:
            outs.append(new_states[-1] if nstates > 1 and rng.random() < 0.5 else self.pick())
        self.outputs = outs
        self.new_states = new_states
        return self


FAMILIES = {"default": CellGen, "extended": ExtendedCellGen}


def generate(seed, I=None, H=None, lengths=False, family="default"):
    """(mlir_text, reference_fn, shapes) for one seed; `I` and `H` replace the drawn sizes,
    `lengths` gives the func a per-row lengths argument (after the inputs), `family` picks
    the generator: "default" (CellGen) or "extended" (ExtendedCellGen)."""
    g = FAMILIES[family](seed, I, H, lengths).build()
    return g.mlir(), g.reference, g.shapes()


if __name__ == "__main__":
    import argparse
    ap = argparse.ArgumentParser(description="Prints the random cell of one seed.")
    ap.add_argument("seed", type=int, nargs="?", default=0)
    ap.add_argument("--family", choices=sorted(FAMILIES), default="default")
    ap.add_argument("--size", type=int, help="I = H = SIZE instead of the drawn sizes")
    a = ap.parse_args()
    print(generate(a.seed, I=a.size, H=a.size, family=a.family)[0], end="")
