"""The cell DSL: a recurrent cell is a Python function over symbolic tensors.

    from rnn import cell, param, split, sigmoid, tanh, H, I

    @cell(states=("h", "c"))
    def lstm(x, h, c):
        W = param("W", (4 * H, I))
        U = param("U", (4 * H, H))
        b = param("b", (4 * H,))
        i, f, g, o = split(x @ W.T + h @ U.T + b, 4)
        c = sigmoid(f) * c + sigmoid(i) * tanh(g)
        h = sigmoid(o) * tanh(c)
        return h, c

Calling `lstm.trace(input_size, hidden_size)` runs the function once on symbolic tensors
(`x` is `[B, I]`, each state `[B, size]`) and records one `rnn` dialect op per primitive,
each with the MLIR location of the Python line that called it. The result, a `TracedCell`,
holds the `rnn.cell` text and the parameters the body declared. `rnn.RNN` (module.py) wraps
it in a function that scans it over a sequence, compiles and runs it.

Shapes are checked while tracing (numpy's broadcasting rule, matmul contraction sizes,
split sizes); a mistake raises `ShapeError` naming the user's line. What only the compiler
checks (a state that changes type, for instance) comes back as a `CompileError` whose
message points at the same lines (module.py maps the diagnostics back).
"""

import importlib
import inspect
import linecache
import math
import os
import pickle
import re
import sys
import threading

import numpy as np

__all__ = [
    "Dim", "I", "H", "P", "size", "Tensor", "cell", "Cell", "TracedCell", "ParamSpec",
    "param", "constant", "matmul", "linear", "headwise", "sigmoid", "tanh", "relu", "exp", "log",
    "sqrt", "rsqrt", "neg", "minimum", "maximum", "where", "eq", "ne", "lt", "le", "gt", "ge",
    "Comparison", "split", "concat", "layer_norm", "reduce_sum",
    "reduce_mean", "reduce_max", "cast", "ShapeError", "CellError", "Location",
    "normalize_dtype", "mlir_dtype",
]


# ------------------------------------------------------------------------------------------
# Errors and source locations
# ------------------------------------------------------------------------------------------

class Location:
    """A place in the user's Python source: file, line, column (1-based)."""

    __slots__ = ("file", "line", "col")

    def __init__(self, file, line, col=1):
        self.file, self.line, self.col = file, int(line), max(1, int(col or 1))

    def mlir(self):
        return f'loc("{_mlir_escape(self.file)}":{self.line}:{self.col})'

    def source_line(self):
        return linecache.getline(self.file, self.line).rstrip("\n")

    def __str__(self):
        return f"{self.file}:{self.line}"

    def __repr__(self):
        return f"Location({self.file!r}, {self.line}, {self.col})"


def _mlir_escape(s):
    out = []
    for ch in s:
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif " " <= ch <= "~":
            out.append(ch)
        else:
            out.extend(f"\\{b:02X}" for b in ch.encode("utf-8"))
    return "".join(out)


def _describe_location(loc):
    if loc is None:
        return ""
    text = loc.source_line().strip()
    return f"\n  at {loc}" + (f":\n    {loc.line} | {text}" if text else "")


class ShapeError(ValueError):
    """A shape that does not fit: names the argument, the expected and the actual shape.
    `location` is the user's source line when the error comes from a cell's body."""

    def __init__(self, message, location=None):
        self.location = location
        self.bare_message = message
        super().__init__(message + _describe_location(location))


class CellError(TypeError):
    """A DSL cell used wrongly (not a shape problem): a bad return, an unknown dtype, a
    tensor from another trace, a primitive called outside a cell..."""

    def __init__(self, message, location=None):
        self.location = location
        self.bare_message = message
        super().__init__(message + _describe_location(location))


_THIS_FILE = os.path.normcase(os.path.abspath(__file__))
_positions_cache = {}


def _caller_location():
    """The location of the first frame outside this file (the user's line)."""
    frame = sys._getframe(1)
    while frame is not None and os.path.normcase(
            os.path.abspath(frame.f_code.co_filename)) == _THIS_FILE:
        frame = frame.f_back
    if frame is None:
        return None
    code = frame.f_code
    line, col = frame.f_lineno, 1
    try:
        positions = _positions_cache.get(code)
        if positions is None:
            positions = list(code.co_positions())
            if len(_positions_cache) > 4096:
                _positions_cache.clear()
            _positions_cache[code] = positions
        pline, _, pcol, _ = positions[frame.f_lasti // 2]
        if pline is not None:
            line = pline
        if pcol is not None:
            col = pcol + 1
    except (AttributeError, IndexError, ValueError):
        pass
    return Location(code.co_filename, line, col)


# ------------------------------------------------------------------------------------------
# Symbolic sizes
# ------------------------------------------------------------------------------------------

class Dim:
    """A size in terms of the model's sizes: `I` (input size), `H` (hidden size), or any
    named size (`Dim("P")`, bound by `rnn.RNN(..., sizes={"P": 12})`), and integer
    arithmetic on them (`4 * H`, `H + P`, `H // 2`). Inside a cell, `int(d)` (or `size(d)`)
    gives its value for the model being traced."""

    __slots__ = ("_op", "_args")

    def __init__(self, name=None, _op="sym", _args=None):
        if _op == "sym":
            if not isinstance(name, str) or not name.isidentifier():
                raise CellError(f"Dim name must be an identifier, got {name!r}")
            _args = (name,)
        self._op, self._args = _op, tuple(_args)

    @staticmethod
    def _wrap(v):
        if isinstance(v, Dim):
            return v
        if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
            return Dim(_op="const", _args=(int(v),))
        return NotImplemented

    def _bin(self, other, op, swap=False):
        other = Dim._wrap(other)
        if other is NotImplemented:
            return NotImplemented
        a, b = (other, self) if swap else (self, other)
        return Dim(_op=op, _args=(a, b))

    def __add__(self, o): return self._bin(o, "+")
    def __radd__(self, o): return self._bin(o, "+", True)
    def __sub__(self, o): return self._bin(o, "-")
    def __rsub__(self, o): return self._bin(o, "-", True)
    def __mul__(self, o): return self._bin(o, "*")
    def __rmul__(self, o): return self._bin(o, "*", True)
    def __floordiv__(self, o): return self._bin(o, "//")
    def __rfloordiv__(self, o): return self._bin(o, "//", True)

    def symbols(self):
        if self._op == "sym":
            return {self._args[0]}
        if self._op == "const":
            return set()
        return self._args[0].symbols() | self._args[1].symbols()

    def evaluate(self, env):
        """The value for the sizes in `env` (a dict name -> int)."""
        if self._op == "const":
            return self._args[0]
        if self._op == "sym":
            name = self._args[0]
            if name not in env:
                known = ", ".join(f"{k}={v}" for k, v in sorted(env.items()))
                raise CellError(f"size {name} is not bound (known sizes: {known}); pass it "
                                f"as rnn.RNN(..., sizes={{{name!r}: ...}})")
            return int(env[name])
        a, b = self._args[0].evaluate(env), self._args[1].evaluate(env)
        if self._op == "+":
            return a + b
        if self._op == "-":
            return a - b
        if self._op == "*":
            return a * b
        if b == 0:
            raise CellError(f"size {self}: division by zero")
        return a // b

    def __index__(self):
        b = _current_builder()
        if b is None:
            raise CellError(f"size {self} has a value only while a cell is traced "
                            "(inside the cell's function)")
        return self.evaluate(b.env)

    __int__ = __index__

    def __repr__(self):
        if self._op == "sym":
            return self._args[0]
        if self._op == "const":
            return str(self._args[0])

        def inner(d):
            s = repr(d)
            return f"({s})" if d._op in ("+", "-") else s
        a, b = self._args
        if self._op in ("+", "-"):
            return f"{a!r} {self._op} {b!r}" if self._op == "+" else f"{a!r} - {inner(b)}"
        return f"{inner(a)}{self._op}{inner(b)}"

    def __hash__(self):
        return hash((self._op, self._args))

    def __eq__(self, other):
        return isinstance(other, Dim) and (self._op, self._args) == (other._op, other._args)


I = Dim("I")
H = Dim("H")
P = Dim("P")


def _eval_size(d, env, what):
    if isinstance(d, Dim):
        v = d.evaluate(env)
    elif isinstance(d, (int, np.integer)) and not isinstance(d, bool):
        v = int(d)
    else:
        raise CellError(f"{what}: a size must be an int or an rnn.Dim, got {d!r}")
    if v < 0:
        raise ShapeError(f"{what}: size {d!r} evaluates to {v}, which is negative")
    return v


def size(d):
    """The value of a size (an int or a Dim) for the cell being traced."""
    b = _builder("size")
    return _eval_size(d, b.env, "size")


# ------------------------------------------------------------------------------------------
# Element types
# ------------------------------------------------------------------------------------------

_DTYPE_ALIASES = {
    "float32": "f32", "f32": "f32", "float": "f32", "single": "f32",
    "float64": "f64", "f64": "f64", "double": "f64",
    "float16": "f16", "f16": "f16", "half": "f16",
    "bfloat16": "bf16", "bf16": "bf16",
}
DTYPE_LONG = {"f32": "float32", "f64": "float64", "f16": "float16", "bf16": "bfloat16"}


def normalize_dtype(dtype):
    """The dialect's spelling (f32, f64, f16, bf16) of a dtype given as a string, a numpy
    dtype or a torch dtype; TypeError for anything else."""
    if isinstance(dtype, str):
        key = dtype.lower()
        if key.startswith("torch."):
            key = key[6:]
    else:
        key = str(dtype).lower()
        if key.startswith("torch."):
            key = key[6:]
        else:
            try:
                key = np.dtype(dtype).name
            except TypeError:
                pass
    if key not in _DTYPE_ALIASES:
        raise TypeError(f"unsupported dtype {dtype!r}: expected one of float32, float64, "
                        "float16, bfloat16")
    return _DTYPE_ALIASES[key]


def mlir_dtype(dtype):
    return normalize_dtype(dtype)


def _float_lit(v):
    """An MLIR float literal: repr with a decimal point before any exponent (1.0e-05)."""
    s = repr(float(v))
    mant, e, exp = s.partition("e")
    if "." not in mant:
        mant += ".0"
    return mant + e + exp


def _type_str(shape, dtype):
    dims = "".join(("?" if d is None else str(d)) + "x" for d in shape)
    return f"tensor<{dims}{dtype}>"


def _shape_str(shape):
    return "[" + ", ".join("B" if d is None else str(d) for d in shape) + "]"


# ------------------------------------------------------------------------------------------
# The trace
# ------------------------------------------------------------------------------------------

_tls = threading.local()


def _current_builder():
    return getattr(_tls, "builder", None)


def _builder(what):
    b = _current_builder()
    if b is None:
        raise CellError(f"rnn.{what}() can only be called inside a cell's function while it "
                        "is traced (decorate it with @rnn.cell and use it in rnn.RNN)",
                        _caller_location())
    return b


class ParamSpec:
    """A parameter declared by a cell: name, concrete shape, initialiser, declared shape
    (with Dims), and where it was declared."""

    __slots__ = ("name", "shape", "init", "decl", "location")

    def __init__(self, name, shape, init, decl, location):
        self.name, self.shape, self.init, self.decl, self.location = (
            name, tuple(shape), init, decl, location)

    def __repr__(self):
        return f"ParamSpec({self.name!r}, {list(self.shape)})"


class _Builder:
    def __init__(self, env, dtype):
        self.env = dict(env)
        self.dtype = dtype
        self.lines = []  # op text (without indentation), each ending with its loc
        self.count = 0
        self.params = {}  # name -> (ParamSpec, Tensor)
        self.consts = {}  # (value, dtype, shape) -> Tensor
        self.reserved = set()

    def fresh(self):
        name = f"%{self.count}"
        self.count += 1
        return name

    def emit(self, text, loc):
        self.lines.append(text + (" " + loc.mlir() if loc is not None else ""))


def _check_tensor(v, what, b, loc):
    if isinstance(v, _Transposed):
        raise CellError(f"{what}: W.T can only be the right operand of @ (a matmul); it is "
                        "not a tensor of its own", loc)
    if not isinstance(v, Tensor):
        raise CellError(f"{what}: expected an rnn tensor, got {type(v).__name__}", loc)
    if v._b is not b:
        raise CellError(f"{what}: the tensor belongs to another trace (a tensor kept from an "
                        "earlier call of a cell cannot be reused)", loc)
    return v


def _is_scalar(v):
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)


class Tensor:
    """A symbolic tensor inside a cell: `shape` (a tuple, `None` for the batch dimension)
    and `dtype` (f32, f64, f16 or bf16). Arithmetic operators emit rnn dialect ops."""

    __slots__ = ("_b", "name", "shape", "dtype")
    __array_ufunc__ = None  # numpy scalars defer to our reflected operators

    def __init__(self, builder, name, shape, dtype):
        self._b, self.name, self.shape, self.dtype = builder, name, tuple(shape), dtype

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def type(self):
        return _type_str(self.shape, self.dtype)

    @property
    def T(self):
        if self.ndim != 2:
            raise ShapeError(f".T: only a 2-D weight can be transposed, this tensor is "
                             f"{_shape_str(self.shape)}", _caller_location())
        return _Transposed(self)

    def __repr__(self):
        return f"<rnn.Tensor {self.name} {_shape_str(self.shape)} {self.dtype}>"

    def __bool__(self):
        raise CellError("a symbolic tensor has no truth value (cells have no data-dependent "
                        "control flow; use minimum/maximum/relu instead)", _caller_location())

    def __len__(self):
        raise CellError("a symbolic tensor has no len(); use .shape", _caller_location())

    def __iter__(self):
        raise CellError("a symbolic tensor cannot be iterated; use rnn.split(t, n) to cut "
                        "it into pieces", _caller_location())

    def __add__(self, o): return _binary("add", self, o)
    def __radd__(self, o): return _binary("add", o, self)
    def __sub__(self, o): return _binary("sub", self, o)
    def __rsub__(self, o): return _binary("sub", o, self)
    def __mul__(self, o): return _binary("mul", self, o)
    def __rmul__(self, o): return _binary("mul", o, self)
    def __truediv__(self, o): return _binary("div", self, o)
    def __rtruediv__(self, o): return _binary("div", o, self)
    def __neg__(self): return _unary("neg", self)
    def __pos__(self): return self

    # Comparisons make a Comparison for rnn.where (`where(x > 0, x, 0.1 * x)`). `==` and
    # `!=` stay identity (tensors are hashable); rnn.eq / rnn.ne compare values.
    def __lt__(self, o): return _compare("lt", self, o)
    def __le__(self, o): return _compare("le", self, o)
    def __gt__(self, o): return _compare("gt", self, o)
    def __ge__(self, o): return _compare("ge", self, o)

    def __matmul__(self, o):
        return _matmul(self, o, loc=_caller_location())

    def __rmatmul__(self, o):
        return _matmul(o, self, loc=_caller_location())

    def __pow__(self, exponent):
        loc = _caller_location()
        if exponent == 0.5:
            return _unary("sqrt", self, loc)
        if exponent == -0.5:
            return _unary("rsqrt", self, loc)
        if exponent == -1:
            return _binary("div", 1.0, self, loc)
        if isinstance(exponent, (int, np.integer)) and 1 <= exponent <= 8:
            out = self
            for _ in range(int(exponent) - 1):
                out = _binary("mul", out, self, loc)
            return out
        raise CellError(f"x ** {exponent!r}: only the powers 1..8, 0.5, -0.5 and -1 have "
                        "rnn ops", loc)


class _Transposed:
    """`W.T`: a weight used in the other layout; only valid as the right operand of @."""

    __slots__ = ("base",)
    __array_ufunc__ = None

    def __init__(self, base):
        self.base = base

    @property
    def T(self):
        return self.base

    @property
    def shape(self):
        return tuple(reversed(self.base.shape))

    def __rmatmul__(self, lhs):
        return _matmul(lhs, self, loc=_caller_location())

    def __repr__(self):
        return f"<{self.base!r}.T>"

    def _not_a_tensor(self, *args):
        raise CellError("W.T can only be the right operand of @ (a matmul); it is not a "
                        "tensor of its own", _caller_location())

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _not_a_tensor
    __truediv__ = __rtruediv__ = __neg__ = __pow__ = __matmul__ = _not_a_tensor


def _to_tensor(v, b, like_dtype, what, loc):
    if isinstance(v, Tensor) or isinstance(v, _Transposed):
        return _check_tensor(v, what, b, loc)
    if _is_scalar(v):
        return _constant(b, float(v), like_dtype or b.dtype, (), loc)
    raise CellError(f"{what}: expected an rnn tensor or a Python number, got "
                    f"{type(v).__name__}", loc)


def _constant(b, value, dtype, shape, loc):
    if not math.isfinite(value):
        raise CellError(f"constant {value!r} is not finite", loc)
    key = (value, dtype, tuple(shape))
    t = b.consts.get(key)
    if t is None:
        t = Tensor(b, b.fresh(), shape, dtype)
        b.emit(f"{t.name} = rnn.constant {_float_lit(value)} : {t.type}", loc)
        b.consts[key] = t
    return t


def _broadcast(a, b, what, loc):
    ra, rb = len(a), len(b)
    n = max(ra, rb)
    pa = (1,) * (n - ra) + tuple(a)
    pb = (1,) * (n - rb) + tuple(b)
    out = []
    for x, y in zip(pa, pb):
        if x == y:
            out.append(x)
        elif x == 1:
            out.append(y)
        elif y == 1:
            out.append(x)
        else:
            raise ShapeError(
                f"{what}: shapes {_shape_str(a)} and {_shape_str(b)} do not broadcast "
                "(aligned at the trailing dimension, each pair of sizes must be equal or one "
                "of them 1; B, the batch, only matches B or 1)", loc)
    return tuple(out)


_BINARY_SYMBOL = {"add": "+", "sub": "-", "mul": "*", "div": "/", "max": "maximum",
                  "min": "minimum"}


def _binary(op, lhs, rhs, loc=None):
    loc = loc or _caller_location()
    b = _builder(_BINARY_SYMBOL.get(op, op))
    dtype = None
    for v in (lhs, rhs):
        if isinstance(v, Tensor):
            dtype = v.dtype
    if dtype is None:
        raise CellError(f"{op}: at least one operand must be an rnn tensor", loc)
    lhs = _to_tensor(lhs, b, dtype, op, loc)
    rhs = _to_tensor(rhs, b, dtype, op, loc)
    if lhs.dtype != rhs.dtype:
        raise CellError(f"{op}: element types differ ({lhs.dtype} and {rhs.dtype}); convert "
                        "one with rnn.cast", loc)
    shape = _broadcast(lhs.shape, rhs.shape, op, loc)
    out = Tensor(b, b.fresh(), shape, lhs.dtype)
    b.emit(f"{out.name} = rnn.{op} {lhs.name}, {rhs.name} : {lhs.type}, {rhs.type}", loc)
    return out


def _unary(op, x, loc=None):
    loc = loc or _caller_location()
    b = _builder(op)
    x = _to_tensor(x, b, None, op, loc)
    out = Tensor(b, b.fresh(), x.shape, x.dtype)
    b.emit(f"{out.name} = rnn.{op} {x.name} : {x.type}", loc)
    return out


def _matmul_dtype(dtype):
    return "f32" if dtype in ("f16", "bf16") else dtype


def _matmul(lhs, rhs, weight_in_out=None, allow_tf32=False, loc=None):
    loc = loc or _caller_location()
    b = _builder("matmul")
    if isinstance(rhs, _Transposed):
        w, in_out = rhs.base, False
        wdesc = "W.T"
    else:
        w, in_out = rhs, True
        wdesc = "W"
    if weight_in_out is not None:  # explicit layout from matmul(x, W, weight_in_out=...)
        if isinstance(rhs, _Transposed):
            raise CellError("matmul: pass either W.T or weight_in_out, not both", loc)
        in_out = bool(weight_in_out)
    lhs = _to_tensor(lhs, b, None, "matmul", loc)
    w = _to_tensor(w, b, None, "matmul", loc)
    if lhs.ndim < 1:
        raise ShapeError("matmul: the left operand must have at least one dimension, got a "
                         "scalar", loc)
    if w.ndim != 2 or any(d is None for d in w.shape):
        raise ShapeError(f"matmul: the right operand must be a 2-D weight with static sizes, "
                         f"got {_shape_str(w.shape)}", loc)
    if lhs.dtype != w.dtype:
        raise CellError(f"matmul: element types differ ({lhs.dtype} and {w.dtype}); convert "
                        "one with rnn.cast", loc)
    k = lhs.shape[-1]
    if in_out:
        wk, n = w.shape
        if wk != k:
            hint = (" (a PyTorch [out, in] weight is used as x @ W.T)"
                    if w.shape[1] == k else "")
            raise ShapeError(f"matmul: x @ {wdesc}: x is {_shape_str(lhs.shape)} and {wdesc} is "
                             f"{_shape_str(w.shape)}; expected {wdesc} of shape [{k}, N]"
                             f"{hint}", loc)
    else:
        n, wk = w.shape
        if wk != k:
            hint = (" (a [in, out] weight is used as x @ W)" if w.shape[0] == k else "")
            raise ShapeError(f"matmul: x @ W.T: x is {_shape_str(lhs.shape)} and W is "
                             f"{_shape_str(w.shape)}; expected W of shape [N, {k}]{hint}",
                             loc)
    out = Tensor(b, b.fresh(), lhs.shape[:-1] + (n,), _matmul_dtype(lhs.dtype))
    attrs = (" weight_in_out" if in_out else "") + (" allow_tf32" if allow_tf32 else "")
    b.emit(f"{out.name} = rnn.matmul {lhs.name}, {w.name}{attrs} : {lhs.type}, {w.type} -> "
           f"{out.type}", loc)
    return out


# ------------------------------------------------------------------------------------------
# Primitives (module-level functions)
# ------------------------------------------------------------------------------------------

def param(name, shape, init=None):
    """Declares (or fetches, by name) a parameter of the cell. `shape` is a tuple of ints and
    Dims (`(4 * H, I)`); `init` is None (PyTorch's uniform(-1/sqrt(H), 1/sqrt(H))), "zeros",
    "ones", a number, or a function (rng, shape) -> array."""
    loc = _caller_location()
    b = _builder("param")
    if not isinstance(name, str) or not name.isidentifier():
        raise CellError(f"param: the name must be an identifier, got {name!r}", loc)
    if name in b.reserved:
        raise CellError(f"param {name!r}: the name is taken by an input or a state of the "
                        "cell", loc)
    if isinstance(shape, (int, Dim, np.integer)):
        shape = (shape,)
    try:
        decl = tuple(shape)
    except TypeError:
        raise CellError(f"param {name!r}: shape must be a tuple of sizes, got {shape!r}",
                        loc) from None
    concrete = tuple(_eval_size(d, b.env, f"param {name!r}") for d in decl)
    if init is not None and not (callable(init) or _is_scalar(init)
                                 or init in ("zeros", "ones", "uniform")):
        raise CellError(f"param {name!r}: init must be None, 'uniform', 'zeros', 'ones', a "
                        f"number or a function (rng, shape) -> array, got {init!r}", loc)
    if name in b.params:
        spec, t = b.params[name]
        if spec.shape != concrete:
            raise ShapeError(f"param {name!r} was declared with shape {list(spec.shape)} at "
                             f"{spec.location} and again with {list(concrete)}", loc)
        return t
    t = Tensor(b, f"%{name}", concrete, b.dtype)
    b.params[name] = (ParamSpec(name, concrete, init, decl, loc), t)
    return t


def constant(value, shape=(), dtype=None):
    """A splat constant (rank 0 by default: it broadcasts to any shape)."""
    loc = _caller_location()
    b = _builder("constant")
    if not _is_scalar(value):
        raise CellError(f"constant: value must be a number, got {value!r}", loc)
    dt = normalize_dtype(dtype) if dtype is not None else b.dtype
    shp = tuple(_eval_size(d, b.env, "constant") for d in
                ((shape,) if isinstance(shape, (int, Dim)) else shape))
    return _constant(b, float(value), dt, shp, loc)


def matmul(x, w, weight_in_out=False, allow_tf32=False):
    """`x [..., K]` times a weight. By default `w` is `[N, K]` (PyTorch's [out, in] layout,
    the same as `x @ w.T`); with `weight_in_out=True` it is `[K, N]` (the same as `x @ w`).
    `allow_tf32` lets a GPU use TF32 tensor cores for f32 operands."""
    loc = _caller_location()
    if isinstance(w, _Transposed):
        if weight_in_out:
            raise CellError("matmul: pass either W.T or weight_in_out, not both", loc)
        w = w.base
        weight_in_out = True
    return _matmul(x, w, weight_in_out=bool(weight_in_out), allow_tf32=allow_tf32, loc=loc)


def headwise(x, R, gates=1, allow_tf32=False):
    """The product of `x [..., NH*K]` with a block-diagonal matrix of `NH` heads:
    `R [NH, gates*N, K]` holds each head's `[out, in]` matrix (PyTorch's layout), and head
    `h` reads columns `h*K .. h*K+K-1` of `x`. The result is `[..., gates*NH*N]`, gate-major:
    column `g*NH*N + h*N + j` is unit `j` of gate `g` of head `h`, so `split(y, gates)` gives
    each gate for all heads, laid out head by head like `x`. In PyTorch terms::

        y = torch.einsum("bhk,hok->bho", x.view(B, NH, K), R)      # [B, NH, gates*N]
        y = y.view(B, NH, gates, N).transpose(1, 2).reshape(B, gates * NH * N)

    With one head it is `x @ R[0].T`. `allow_tf32` as for `matmul`."""
    loc = _caller_location()
    b = _builder("headwise")
    x = _to_tensor(x, b, None, "headwise", loc)
    R = _to_tensor(R, b, None, "headwise", loc)
    if not isinstance(gates, (int, np.integer)) or isinstance(gates, bool) or gates < 1:
        raise CellError(f"headwise: gates must be a positive int, got {gates!r}", loc)
    gates = int(gates)
    if x.ndim < 1:
        raise ShapeError("headwise: the left operand must have at least one dimension, got a "
                         "scalar", loc)
    if R.ndim != 3 or any(d is None for d in R.shape):
        raise ShapeError(f"headwise: R must be a 3-D weight [NH, gates*N, K] with static "
                         f"sizes, got {_shape_str(R.shape)}", loc)
    if x.dtype != R.dtype:
        raise CellError(f"headwise: element types differ ({x.dtype} and {R.dtype}); convert "
                        "one with rnn.cast", loc)
    heads, rows, k = R.shape
    if rows % gates:
        raise ShapeError(f"headwise: R is {_shape_str(R.shape)}; its {rows} rows per head are "
                         f"not a multiple of gates={gates}", loc)
    n = rows // gates
    if x.shape[-1] != heads * k:
        raise ShapeError(f"headwise: x is {_shape_str(x.shape)} and R is "
                         f"{_shape_str(R.shape)}; expected x's last size NH*K = {heads}*{k} = "
                         f"{heads * k}", loc)
    out = Tensor(b, b.fresh(), x.shape[:-1] + (gates * heads * n,), _matmul_dtype(x.dtype))
    attrs = " allow_tf32" if allow_tf32 else ""
    b.emit(f"{out.name} = rnn.headwise_matmul {x.name}, {R.name} gates {gates}{attrs} : "
           f"{x.type}, {R.type} -> {out.type}", loc)
    return out


def linear(x, w, b=None, allow_tf32=False):
    """PyTorch's F.linear: `x @ w.T + b` with `w` `[out, in]`."""
    loc = _caller_location()
    y = _matmul(x, w, weight_in_out=False, allow_tf32=allow_tf32, loc=loc)
    return y if b is None else _binary("add", y, b, loc)


def sigmoid(x): return _unary("sigmoid", x, _caller_location())
def tanh(x): return _unary("tanh", x, _caller_location())
def relu(x): return _unary("relu", x, _caller_location())
def exp(x): return _unary("exp", x, _caller_location())
def log(x): return _unary("log", x, _caller_location())
def sqrt(x): return _unary("sqrt", x, _caller_location())
def rsqrt(x): return _unary("rsqrt", x, _caller_location())
def neg(x): return _unary("neg", x, _caller_location())
def minimum(a, b): return _binary("min", a, b, _caller_location())
def maximum(a, b): return _binary("max", a, b, _caller_location())


class Comparison:
    """`a > b` (and <, <=, >=, rnn.eq, rnn.ne) on rnn tensors: not a tensor, only the
    condition of `rnn.where(cond, a, b)`, which emits one `rnn.select`."""

    __slots__ = ("predicate", "lhs", "rhs", "location")

    def __init__(self, predicate, lhs, rhs, location):
        self.predicate, self.lhs, self.rhs, self.location = predicate, lhs, rhs, location

    def __bool__(self):
        raise CellError("a comparison of symbolic tensors has no truth value (cells have no "
                        "data-dependent control flow); use it as rnn.where(cond, a, b)",
                        _caller_location())

    def __repr__(self):
        return f"<rnn.Comparison {self.lhs!r} {_COMPARE_SYMBOL[self.predicate]} {self.rhs!r}>"


_COMPARE_SYMBOL = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


def _compare(predicate, lhs, rhs, loc=None):
    loc = loc or _caller_location()
    symbol = _COMPARE_SYMBOL[predicate]
    b = _builder(symbol)
    if not any(isinstance(v, Tensor) for v in (lhs, rhs)):
        raise CellError(f"{symbol}: at least one operand must be an rnn tensor", loc)
    for v in (lhs, rhs):
        if not _is_scalar(v):
            _check_tensor(v, symbol, b, loc)
    return Comparison(predicate, lhs, rhs, loc)


def eq(a, b):
    """`a == b` elementwise, as the condition of rnn.where (false where either is NaN)."""
    return _compare("eq", a, b, _caller_location())


def ne(a, b):
    """`a != b` elementwise, as the condition of rnn.where (true where either is NaN)."""
    return _compare("ne", a, b, _caller_location())


def lt(a, b): return _compare("lt", a, b, _caller_location())
def le(a, b): return _compare("le", a, b, _caller_location())
def gt(a, b): return _compare("gt", a, b, _caller_location())
def ge(a, b): return _compare("ge", a, b, _caller_location())


def where(condition, a, b):
    """torch.where: `a` where `condition` holds, else `b`, elementwise, with broadcasting.
    `condition` is a comparison of tensors or numbers (`x > 0`, `rnn.ge(x, y)`); the four
    values broadcast together. One rnn.select."""
    loc = _caller_location()
    bld = _builder("where")
    if isinstance(condition, Tensor):
        raise CellError("where: the condition must be a comparison (x > 0, rnn.eq(x, y), "
                        "...), not a tensor; write `where(rnn.ne(t, 0), a, b)` for a tensor t", loc)
    if not isinstance(condition, Comparison):
        raise CellError(f"where: the condition must be a comparison (x > 0, rnn.eq(x, y), "
                        f"...), got {type(condition).__name__}", loc)
    values = [condition.lhs, condition.rhs, a, b]
    dtype = next((v.dtype for v in values if isinstance(v, Tensor)), None)
    if dtype is None:
        raise CellError("where: at least one operand must be an rnn tensor", loc)
    names = ("the comparison's left operand", "the comparison's right operand", "a", "b")
    ts = [_to_tensor(v, bld, dtype, f"where: {n}", loc) for v, n in zip(values, names)]
    for t, n in zip(ts, names):
        if t.dtype != dtype:
            raise CellError(f"where: element types differ ({n} is {t.dtype}, another operand "
                            f"{dtype}); convert one with rnn.cast", loc)
    shape = ts[0].shape
    for t in ts[1:]:
        shape = _broadcast(shape, t.shape, "where", loc)
    out = Tensor(bld, bld.fresh(), shape, dtype)
    bld.emit(f"{out.name} = rnn.select {condition.predicate} "
             f"{', '.join(t.name for t in ts)} : {', '.join(t.type for t in ts)}", loc)
    return out


def _axis(axis, ndim, what, loc):
    if not isinstance(axis, (int, np.integer)) or not -ndim <= axis < ndim:
        raise ShapeError(f"{what}: axis {axis!r} is out of range for a rank-{ndim} tensor", loc)
    return int(axis) % ndim


def split(x, sections, axis=-1):
    """Cuts `x` along `axis` (the last by default) into `sections` equal pieces (an int) or
    pieces of the given sizes (a list of ints and Dims). Returns a tuple."""
    loc = _caller_location()
    b = _builder("split")
    x = _to_tensor(x, b, None, "split", loc)
    if x.ndim < 1:
        raise ShapeError("split: cannot split a scalar", loc)
    ax = _axis(axis, x.ndim, "split", loc)
    total = x.shape[ax]
    if total is None:
        raise ShapeError("split: cannot split along the batch dimension", loc)
    if isinstance(sections, (int, np.integer)) and not isinstance(sections, bool):
        n = int(sections)
        if n < 1 or total % n:
            raise ShapeError(f"split: a size of {total} (axis {ax} of "
                             f"{_shape_str(x.shape)}) does not split into {n} equal pieces",
                             loc)
        sizes = [total // n] * n
    elif isinstance(sections, Dim):
        raise CellError("split: give the number of pieces as an int, or the sizes as a list "
                        f"(got the Dim {sections!r}; did you mean [{sections!r}, ...]?)", loc)
    else:
        sizes = [_eval_size(s, b.env, "split") for s in sections]
        if sum(sizes) != total or not sizes:
            raise ShapeError(f"split: piece sizes {sizes} add up to {sum(sizes)}, but axis "
                             f"{ax} of {_shape_str(x.shape)} has size {total}", loc)
    if len(sizes) == 1:
        return (x,)
    outs = []
    for s in sizes:
        shape = list(x.shape)
        shape[ax] = s
        outs.append(Tensor(b, b.fresh(), shape, x.dtype))
    axis_attr = "" if ax == x.ndim - 1 else f" axis {ax}"
    b.emit(f"{', '.join(o.name for o in outs)} = rnn.split {x.name}{axis_attr} : {x.type} -> "
           f"{', '.join(o.type for o in outs)}", loc)
    return tuple(outs)


def concat(tensors, axis=-1):
    """Joins tensors along `axis` (the last by default); every other dimension must agree."""
    loc = _caller_location()
    b = _builder("concat")
    ts = [_to_tensor(t, b, None, "concat", loc) for t in tensors]
    if not ts:
        raise CellError("concat: needs at least one tensor", loc)
    if len(ts) == 1:
        return ts[0]
    ndim = ts[0].ndim
    if ndim < 1:
        raise ShapeError("concat: cannot concatenate scalars", loc)
    ax = _axis(axis, ndim, "concat", loc)
    for k, t in enumerate(ts):
        if t.dtype != ts[0].dtype:
            raise CellError(f"concat: tensor #{k} is {t.dtype}, tensor #0 is {ts[0].dtype}",
                            loc)
        if t.ndim != ndim or any(t.shape[d] != ts[0].shape[d] for d in range(ndim) if d != ax):
            raise ShapeError(f"concat: tensor #{k} is {_shape_str(t.shape)} but tensor #0 is "
                             f"{_shape_str(ts[0].shape)}; all dimensions but axis {ax} must "
                             "agree", loc)
    if any(t.shape[ax] is None for t in ts):
        raise ShapeError("concat: cannot concatenate along the batch dimension", loc)
    shape = list(ts[0].shape)
    shape[ax] = sum(t.shape[ax] for t in ts)
    out = Tensor(b, b.fresh(), shape, ts[0].dtype)
    axis_attr = "" if ax == ndim - 1 else f" axis {ax}"
    b.emit(f"{out.name} = rnn.concat {', '.join(t.name for t in ts)}{axis_attr} : "
           f"{', '.join(t.type for t in ts)} -> {out.type}", loc)
    return out


def _reduce(op, x, axis, loc):
    b = _builder(op)
    x = _to_tensor(x, b, None, op, loc)
    if x.ndim < 1:
        raise ShapeError(f"{op}: cannot reduce a scalar", loc)
    if axis not in (-1, x.ndim - 1):
        raise ShapeError(f"{op}: only the last axis can be reduced (got axis {axis} of a "
                         f"rank-{x.ndim} tensor)", loc)
    out = Tensor(b, b.fresh(), x.shape[:-1] + (1,), x.dtype)
    b.emit(f"{out.name} = rnn.{op} {x.name} : {x.type}", loc)
    return out


def reduce_sum(x, axis=-1):
    """The sum of each row (the last axis), kept as a size-1 axis: [B, N] -> [B, 1]."""
    return _reduce("reduce_sum", x, axis, _caller_location())


def reduce_mean(x, axis=-1):
    """The mean of each row (the last axis), kept as a size-1 axis: [B, N] -> [B, 1]."""
    return _reduce("reduce_mean", x, axis, _caller_location())


def reduce_max(x, axis=-1):
    """The maximum of each row (the last axis), kept as a size-1 axis: [B, N] -> [B, 1]."""
    return _reduce("reduce_max", x, axis, _caller_location())


def layer_norm(x, eps=1e-5, weight=None, bias=None):
    """(x - mean) / sqrt(var + eps) over the last axis (biased variance, as
    torch.nn.LayerNorm), then `* weight` and `+ bias` when given."""
    loc = _caller_location()
    b = _builder("layer_norm")
    x = _to_tensor(x, b, None, "layer_norm", loc)
    if x.ndim < 1:
        raise ShapeError("layer_norm: cannot normalise a scalar", loc)
    if not _is_scalar(eps) or not eps >= 0:
        raise CellError(f"layer_norm: eps must be a non-negative number, got {eps!r}", loc)
    out = Tensor(b, b.fresh(), x.shape, x.dtype)
    b.emit(f"{out.name} = rnn.layer_norm {x.name} {{epsilon = {_float_lit(eps)} : f64}} : "
           f"{x.type}", loc)
    if weight is not None:
        out = _binary("mul", out, weight, loc)
    if bias is not None:
        out = _binary("add", out, bias, loc)
    return out


def cast(x, dtype):
    """Converts the element type (float32, float64, float16, bfloat16)."""
    loc = _caller_location()
    b = _builder("cast")
    x = _to_tensor(x, b, None, "cast", loc)
    try:
        dt = normalize_dtype(dtype)
    except TypeError as e:
        raise CellError(f"cast: {e}", loc) from None
    if dt == x.dtype:
        return x
    out = Tensor(b, b.fresh(), x.shape, dt)
    b.emit(f"{out.name} = rnn.cast {x.name} : {x.type} to {out.type}", loc)
    return out


# ------------------------------------------------------------------------------------------
# Cells
# ------------------------------------------------------------------------------------------

class TracedCell:
    """A cell traced for concrete sizes and a dtype: the `rnn.cell` text and its signature.

    name, text (the rnn.cell op), input_size, dtype, env (the sizes), state_names,
    state_sizes, output_names, output_sizes, params (list of ParamSpec), locations
    (the user's source lines of the ops, by MLIR line within `text`)."""

    def __init__(self, **kw):
        self.__dict__.update(kw)

    def __repr__(self):
        return (f"<TracedCell @{self.name}: x [B, {self.input_size}], states "
                f"{dict(zip(self.state_names, self.state_sizes))}, params "
                f"{[(p.name, list(p.shape)) for p in self.params]}>")


_SYMBOL_RE = re.compile(r"[^A-Za-z0-9_]")


def _symbol_name(name):
    s = _SYMBOL_RE.sub("_", name) or "cell"
    if not (s[0].isalpha() or s[0] == "_"):
        s = "c_" + s
    return s


class Cell:
    """A recurrent cell defined by a Python function (see the module docstring). Made by the
    `@rnn.cell(...)` decorator; `trace(input_size, hidden_size, ...)` records it."""

    def __init__(self, fn, states=("h",), outputs=None, name=None, torch=None, doc=None):
        self.fn = fn
        self.name = _symbol_name(name or getattr(fn, "__name__", "cell"))
        if isinstance(states, str):
            states = (states,)
        if isinstance(states, dict):
            items = list(states.items())
        else:
            items = [(s, H) for s in states]
        if not items:
            raise CellError(f"cell {self.name}: a cell needs at least one state")
        for s, sz in items:
            if not isinstance(s, str) or not s.isidentifier():
                raise CellError(f"cell {self.name}: state names must be identifiers, got {s!r}")
            if not isinstance(sz, (int, Dim)):
                raise CellError(f"cell {self.name}: the size of state {s!r} must be an int or "
                                f"an rnn.Dim, got {sz!r}")
        self.state_names = tuple(s for s, _ in items)
        self.state_decl = tuple(sz for _, sz in items)
        if len(set(self.state_names)) != len(self.state_names):
            raise CellError(f"cell {self.name}: duplicate state names {self.state_names}")
        if isinstance(outputs, str):
            outputs = (outputs,)
        self.output_names = tuple(outputs) if outputs is not None else None
        # torch: optional interop description: {"kind": "LSTM"/"GRU"/"RNN_TANH"/..., "names":
        # {our param name: torch's prefix}}.
        self.torch = torch
        self.__doc__ = doc or getattr(fn, "__doc__", None)
        self.__name__ = self.name
        self.__wrapped__ = fn
        try:
            sig = inspect.signature(fn)
        except (TypeError, ValueError):
            sig = None
        self.input_name = "x"
        if sig is not None:
            npos = [p for p in sig.parameters.values()
                    if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
            has_var = any(p.kind == p.VAR_POSITIONAL for p in sig.parameters.values())
            if npos:
                self.input_name = npos[0].name
            if not has_var and len(npos) != 1 + len(self.state_names):
                raise CellError(
                    f"cell {self.name}: the function must take the input then one argument "
                    f"per state ({', '.join(('x',) + self.state_names)}), but it takes "
                    f"{len(npos)} ({', '.join(p.name for p in npos)})")
        if not self.input_name.isidentifier() or self.input_name in self.state_names:
            self.input_name = "x"

    def __repr__(self):
        return f"<rnn.Cell {self.name} states={list(self.state_names)}>"

    def __reduce__(self):
        # A cell pickles by reference, as a function does: the module-level name the
        # decorator bound (its function's name is that Cell, not the function).
        fn = inspect.unwrap(self.fn)
        module, qualname = getattr(fn, "__module__", None), getattr(fn, "__qualname__", "")
        obj = sys.modules.get(module)
        for part in qualname.split("."):
            obj = getattr(obj, part, None)
        if obj is not self:
            raise pickle.PicklingError(
                f"cell {self.name} cannot be pickled: it is not reachable as "
                f"{module}.{qualname} (define cells at module level with @rnn.cell)")
        return _cell_by_name, (module, qualname)

    def __deepcopy__(self, memo):
        return self

    def __call__(self, *args, **kwargs):
        """Calls the function directly: inside another cell's trace this inlines the cell
        (its params are declared in the caller's trace)."""
        return self.fn(*args, **kwargs)

    def _def_location(self):
        fn = inspect.unwrap(self.fn)
        code = getattr(fn, "__code__", None)
        if code is None:
            return None
        return Location(code.co_filename, code.co_firstlineno, 1)

    def _zone_out(self, result, states, masks):
        """`result` of the cell's function with each new state s' replaced by
        m * s + (1 - m) * s' (result left as it is when it has the wrong arity: the trace
        reports that)."""
        values = list(result) if isinstance(result, (tuple, list)) else [result]
        first = len(self.output_names or ())
        if len(values) != first + len(states):
            return result
        for k, (old, m) in enumerate(zip(states, masks)):
            values[first + k] = m * old + (1 - m) * values[first + k]
        return tuple(values)

    def trace(self, input_size, hidden_size, dtype="float32", sizes=None, name=None,
              zoneout=False):
        """Records the cell for `x [B, input_size]`, the sizes `H = hidden_size` and
        `sizes` (other Dims by name) and the dtype. Returns a TracedCell.

        With `zoneout`, the traced cell takes the zoneout masks of its states after x in its
        input, `[x, m_1, ..., m_k]` (width input_size plus the state sizes), and returns
        `m_k * s_k + (1 - m_k) * s'_k` for each new state s'_k (a mask of 1 keeps the old
        state); a cell without declared outputs outputs its first state after zoneout."""
        dtype = normalize_dtype(dtype)
        env = {"I": int(input_size), "H": int(hidden_size)}
        for k, v in (sizes or {}).items():
            if k in ("I", "H"):
                raise CellError(f"sizes: {k} is set by input_size/hidden_size")
            env[k] = int(v)
        def_loc = self._def_location()
        state_sizes = tuple(_eval_size(d, env, f"state {s!r}")
                            for s, d in zip(self.state_names, self.state_decl))
        b = _Builder(env, dtype)
        in_name = self.input_name
        b.reserved = {in_name, *self.state_names}
        masks_width = sum(state_sizes) if zoneout else 0
        x = Tensor(b, f"%{in_name}", (None, env["I"] + masks_width), dtype)
        states = [Tensor(b, f"%{s}", (None, n), dtype)
                  for s, n in zip(self.state_names, state_sizes)]

        fn = inspect.unwrap(self.fn)
        fn_code = getattr(fn, "__code__", None)
        return_loc = []
        old_profile = sys.getprofile()

        def profiler(frame, event, arg):
            if event == "return" and frame.f_code is fn_code:
                return_loc.append(Location(fn_code.co_filename, frame.f_lineno, 5))
            if old_profile is not None:
                old_profile(frame, event, arg)

        prev = _current_builder()
        _tls.builder = b
        if fn_code is not None:
            sys.setprofile(profiler)
        try:
            if zoneout:
                x_in, *masks = split(x, [env["I"], *state_sizes])
                result = self._zone_out(self.fn(x_in, *states), states, masks)
            else:
                result = self.fn(x, *states)
        except (ShapeError, CellError) as e:
            prefix = f"cell {self.name}: "
            if e.bare_message.startswith(prefix):
                raise
            raise type(e)(prefix + e.bare_message, e.location).with_traceback(
                e.__traceback__) from None
        finally:
            if fn_code is not None:
                sys.setprofile(old_profile)
            _tls.builder = prev
        yield_loc = return_loc[-1] if return_loc else def_loc

        # The result: outputs then new states (declared outputs), or the new states alone.
        n_states = len(self.state_names)
        if isinstance(result, list):
            result = tuple(result)
        if not isinstance(result, tuple):
            result = (result,)
        if self.output_names is not None:
            expect = len(self.output_names) + n_states
            what = (f"the outputs ({', '.join(self.output_names)}) then the new states "
                    f"({', '.join(self.state_names)})")
        else:
            expect = n_states
            what = f"the new states ({', '.join(self.state_names)})"
        if len(result) != expect:
            raise CellError(f"cell {self.name} returned {len(result)} value(s); it must return "
                            f"{what}", yield_loc)
        for k, v in enumerate(result):
            _check_tensor(v, f"cell {self.name}: returned value #{k}", b, yield_loc)
        if self.output_names is not None:
            outs = list(result[:len(self.output_names)])
            new_states = list(result[len(self.output_names):])
            output_names = self.output_names
        else:
            new_states = list(result)
            outs = [new_states[0]]
            output_names = (self.state_names[0],)
        for o, nm in zip(outs, output_names):
            if o.ndim != 2 or o.shape[0] is not None:
                raise ShapeError(f"cell {self.name}: output {nm!r} must be [B, N], got "
                                 f"{_shape_str(o.shape)}", yield_loc)

        # Text.
        params = [spec for spec, _ in b.params.values()]
        sym = _symbol_name(name or self.name)
        head = f"rnn.cell @{sym} inputs(%{in_name}: {x.type})"
        head += " states(" + ", ".join(f"{s.name}: {s.type}" for s in states) + ")"
        if params:
            head += " params(" + ", ".join(f"{t.name}: {t.type}" for _, t in b.params.values()) + ")"
        head += " -> (" + ", ".join(o.type for o in outs) + ") {"
        body = ["  " + ln for ln in b.lines]
        y = "  rnn.yield"
        y += " outputs(" + ", ".join(o.name for o in outs) + " : " + \
             ", ".join(o.type for o in outs) + ")"
        y += " states(" + ", ".join(s.name for s in new_states) + " : " + \
             ", ".join(s.type for s in new_states) + ")"
        if yield_loc is not None:
            y += " " + yield_loc.mlir()
        tail = "}" + (" " + def_loc.mlir() if def_loc is not None else "")
        text = "\n".join([head] + body + [y, tail]) + "\n"
        return TracedCell(
            name=sym, cell=self, text=text, input_size=env["I"], hidden_size=env["H"],
            zoneout_width=masks_width,
            dtype=dtype, env=env, state_names=self.state_names, state_sizes=state_sizes,
            output_names=tuple(output_names), output_sizes=tuple(o.shape[1] for o in outs),
            output_dtypes=tuple(o.dtype for o in outs),
            returned_state_types=tuple((s.shape, s.dtype) for s in new_states),
            params=params, yield_location=yield_loc, def_location=def_loc)


def _cell_by_name(module, qualname):
    obj = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def cell(fn=None, *, states=("h",), outputs=None, name=None, torch=None):
    """Decorator: makes a Cell of a function `f(x, *states)`.

    `states`: the state names (each of size H), or a dict name -> size (`{"r": P, "c": H}`).
    The function returns the new states in order (one tensor for one state); the step
    output is then the first new state. With `outputs=("y",)` it returns the outputs first,
    then the new states (as `rnn.yield` does)."""
    def make(f):
        return Cell(f, states=states, outputs=outputs, name=name, torch=torch)
    return make(fn) if fn is not None else make
