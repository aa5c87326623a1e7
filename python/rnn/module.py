"""rnn.NumpyRNN: a recurrent network (layers x directions of one cell) compiled to a library
and called on numpy arrays (inference only; rnn.RNN, in nn.py, is the torch.nn.Module that
trains).

    model = rnn.NumpyRNN(rnn.zoo.lstm, input_size=10, hidden_size=20, num_layers=2,
                    bidirectional=True)
    output, (h_n, c_n) = model(x)          # x: numpy [T, B, 10]

PyTorch's conventions: `output` is [T, B, D*H_out] ([B, T, ...] with batch_first), final
states are stacked [D*num_layers, B, size] (index layer*D + direction). The module emits one
`func.func` that chains `rnn.scan`s (a cell per distinct input width), compiles it with
rnn-compile through the compile cache, and calls it through the runtime's C ABI.
"""

import json
import os
import re
import shutil
from pathlib import Path

import numpy as np

from . import cache as _cache
from . import runtime as _runtime
from .dsl import (Cell, CellError, ShapeError, DTYPE_LONG, normalize_dtype, _shape_str,
                  Location)

__all__ = ["NumpyRNN", "load", "CellCompileError"]

MANIFEST = "manifest.json"
FORMAT = "rnn-model"
FORMAT_VERSION = 1
_NP_DTYPES = {"f32": np.dtype(np.float32), "f64": np.dtype(np.float64)}
FUNC = "forward"
FUNC_LENGTHS = "forward_lengths"


class CellCompileError(_runtime.CompileError):
    """rnn-compile rejected a model built from a DSL cell. The message maps each diagnostic
    back to the user's Python line (the IR carries the lines as MLIR locations);
    `diagnostics` is a list of (file, line, col, severity, message), `location` the first
    one in user code (a dsl.Location) or None."""

    def __init__(self, message, diagnostics, location, stderr="", returncode=None,
                 command=None):
        super().__init__(message, stderr=stderr, returncode=returncode, command=command)
        self.diagnostics = diagnostics
        self.location = location


_DIAG_RE = re.compile(r"^(?P<file>.+?):(?P<line>\d+):(?P<col>\d+): "
                      r"(?P<sev>error|warning|note|remark): (?P<msg>.*)$")
_STATE_RE = re.compile(r"new state #(\d+)")


def _map_compile_error(err, ir, traced, what):
    """A CellCompileError for `err` (a CompileError of compiling `ir`)."""
    diags = []
    lines = [f"rnn-compile rejected {what}:"]
    ir_lines = ir.splitlines()
    user_loc = None
    for raw in (err.stderr or "").splitlines():
        m = _DIAG_RE.match(raw)
        if not m:
            continue
        file, line, col = m["file"], int(m["line"]), int(m["col"])
        sev, msg = m["sev"], m["msg"]
        diags.append((file, line, col, sev, msg))
        if os.path.basename(file) == "input.mlir":  # compile_mlir's copy of our IR
            lines.append(f"  in the emitted IR, line {line}: {sev}: {msg}")
            if 0 < line <= len(ir_lines):
                lines.append(f"    {ir_lines[line - 1].strip()}")
            continue
        loc = Location(file, line, col)
        if user_loc is None and sev == "error":
            user_loc = loc
        lines.append(f"  {file}:{line}:{col}: {sev}: {msg}")
        src = loc.source_line().strip()
        if src:
            lines.append(f"    {line} | {src}")
        sm = _STATE_RE.search(msg)
        if sm and traced is not None:
            for t in traced:
                k = int(sm.group(1))
                if k < len(t.state_names) and t.yield_location is not None and \
                        t.yield_location.line == line:
                    shape, dtype = t.returned_state_types[k]
                    lines.append(
                        f"  note: state #{k} of cell {t.name} is {t.state_names[k]!r}, "
                        f"declared {_shape_str((None, t.state_sizes[k]))} {t.dtype}; the cell "
                        f"returns {_shape_str(shape)} {dtype} for it (a state keeps its shape "
                        "and dtype across the step)")
                    break
    if not diags:
        lines.append("  " + (err.stderr or str(err)).strip().replace("\n", "\n  "))
    return CellCompileError("\n".join(lines), diags, user_loc, stderr=err.stderr,
                            returncode=err.returncode, command=err.command)


def _param_key(name, layer, reverse):
    return f"{name}_l{layer}" + ("_reverse" if reverse else "")


def _to_numpy(v):
    """numpy array of `v` (numpy, list, or a torch tensor, without importing torch)."""
    if hasattr(v, "detach") and hasattr(v, "cpu"):  # a torch tensor
        t = v.detach().cpu()
        if str(t.dtype) in ("torch.bfloat16", "torch.float16"):
            t = t.float()
        return t.numpy()
    return np.asarray(v)


def _normalize_device(device):
    """'cpu', 'cuda' or 'cuda:N' from a string or a torch.device."""
    d = str(device)
    if d == "cpu" or re.fullmatch(r"cuda(:\d+)?", d):
        return d
    raise NotImplementedError(f"device {device!r}: the backends are 'cpu' and 'cuda' "
                              "(or 'cuda:N')")


_TORCH = []


def _torch_cuda():
    """torch, when it imports and sees a GPU; else None. Imported on first need only."""
    if not _TORCH:
        try:
            import torch
            _TORCH.append(torch if torch.cuda.is_available() else None)
        except ImportError:
            _TORCH.append(None)
    return _TORCH[0]


def _is_torch_tensor(v):
    return type(v).__module__.startswith("torch") and hasattr(v, "data_ptr")


_TORCH_DT = {"torch.float32": "f32", "torch.float64": "f64", "torch.int64": "i64",
             "torch.int32": "i32", "torch.float16": "f16", "torch.bfloat16": "bf16"}


def _desc(t):
    """(device pointer, rnn dtype name, shape) of a contiguous torch tensor."""
    return (t.data_ptr() if t.numel() else 0, _TORCH_DT.get(str(t.dtype), str(t.dtype)),
            tuple(t.shape))


# ------------------------------------------------------------------------------------------
# The emitted IR
# ------------------------------------------------------------------------------------------

def _ttype(shape, dtype):
    return "tensor<" + "".join(("?" if d is None else str(d)) + "x" for d in shape) + dtype + ">"


class _Spec:
    """Everything a call needs, from a trace or from a saved manifest."""

    FIELDS = ("cell_name", "input_size", "hidden_size", "num_layers", "bidirectional",
              "batch_first", "dtype", "sizes", "state_names", "state_sizes", "output_size",
              "param_names", "param_shapes", "param_inits", "torch")

    def __init__(self, **kw):
        for f in self.FIELDS:
            setattr(self, f, kw[f])

    @property
    def num_directions(self):
        return 2 if self.bidirectional else 1

    def to_json(self):
        d = {f: getattr(self, f) for f in self.FIELDS if f != "param_inits"}
        d["param_shapes"] = {str(k): v for k, v in self.param_shapes.items()}
        return d

    @classmethod
    def from_json(cls, d):
        d = dict(d)
        d["param_shapes"] = {int(k): [tuple(s) for s in v] for k, v in d["param_shapes"].items()}
        d["state_names"] = tuple(d["state_names"])
        d["state_sizes"] = tuple(d["state_sizes"])
        d["param_names"] = tuple(d["param_names"])
        d["param_inits"] = None
        return cls(**d)


def _emit_func(fname, spec, cells_by_layer, with_lengths, layers=None):
    """func.func @fname: the chain of scans over `layers` (a range, default all; a range that
    starts above 0 takes the outputs of the layer below as its input). cells_by_layer[l] is
    the TracedCell of layer l; a cell traced with zoneout makes the function take one mask
    sequence [T, B, sum of the state sizes] per layer and direction (after the initial
    states), concatenated to the scan's input."""
    dt = spec.dtype
    D = spec.num_directions
    layers = range(spec.num_layers) if layers is None else layers
    args, body = [], []
    xs_width = spec.input_size if layers.start == 0 else D * spec.output_size
    args.append(f"%xs: {_ttype((None, None, xs_width), dt)}")
    if with_lengths:
        args.append("%lengths: tensor<?xi64>")
    state_types = [_ttype((None, n), dt) for n in spec.state_sizes]
    for l in layers:
        for d in range(D):
            for s, t in zip(spec.state_names, state_types):
                args.append(f"%init_l{l}_d{d}_{s}: {t}")
    for l in layers:
        masks = cells_by_layer[l].zoneout_width
        for d in range(D if masks else 0):
            args.append(f"%zm_l{l}_d{d}: {_ttype((None, None, masks), dt)}")
    for l in layers:
        for d in range(D):
            for name, shape in zip(spec.param_names, spec.param_shapes[l]):
                args.append(f"%p_l{l}_d{d}_{name}: {_ttype(shape, dt)}")
    xs = "%xs"
    finals = []
    for l in layers:
        tc = cells_by_layer[l]
        out_t = _ttype((None, None, spec.output_size), dt)
        ys = []
        for d in range(D):
            outs = [f"%ys_l{l}_d{d}"] + [f"%fin_l{l}_d{d}_{s}" for s in spec.state_names]
            finals += outs[1:]
            init = ", ".join(f"%init_l{l}_d{d}_{s}" for s in spec.state_names)
            pnames = ", ".join(f"%p_l{l}_d{d}_{n}" for n in spec.param_names)
            ptypes = ", ".join(_ttype(s, dt) for s in spec.param_shapes[l])
            scan_in, scan_width = xs, xs_width
            if tc.zoneout_width:
                scan_in, scan_width = f"%xz_l{l}_d{d}", xs_width + tc.zoneout_width
                body.append(f"{scan_in} = rnn.concat {xs}, %zm_l{l}_d{d} : "
                            f"{_ttype((None, None, xs_width), dt)}, "
                            f"{_ttype((None, None, tc.zoneout_width), dt)} -> "
                            f"{_ttype((None, None, scan_width), dt)}")
            line = (f"{', '.join(outs)} = rnn.scan @{tc.name}{' reverse' if d else ''} "
                    f"inputs({scan_in} : {_ttype((None, None, scan_width), dt)}) "
                    f"init({init} : {', '.join(state_types)})")
            if spec.param_names:
                line += f" params({pnames} : {ptypes})"
            if with_lengths:
                line += " lengths(%lengths : tensor<?xi64>)"
            line += f" -> outputs({out_t}) states({', '.join(state_types)})"
            body.append(line)
            ys.append(outs[0])
        if D == 2:
            cat_t = _ttype((None, None, 2 * spec.output_size), dt)
            body.append(f"%ys_l{l} = rnn.concat {ys[0]}, {ys[1]} : {out_t}, {out_t} -> {cat_t}")
            xs = f"%ys_l{l}"
        else:
            xs = ys[0]
        xs_width = D * spec.output_size
    results = [_ttype((None, None, D * spec.output_size), dt)] + \
        state_types * (len(layers) * D)
    ret = [xs] + finals
    text = [f"func.func @{fname}({', '.join(args)})", f"    -> ({', '.join(results)}) {{"]
    text += ["  " + b for b in body]
    text.append(f"  return {', '.join(ret)} : {', '.join(results)}")
    text.append("}")
    return "\n".join(text) + "\n"


# ------------------------------------------------------------------------------------------
# The module
# ------------------------------------------------------------------------------------------

def _lengths_array(lengths, T, B, unbatched):
    """lengths as a contiguous int64 [B] array, each in [0, T], or a TypeError / ShapeError
    that says what is wrong with it (the values are compared before any conversion, so
    huge or unsigned values are reported as they are)."""
    if isinstance(lengths, (str, bytes)):
        raise TypeError(f"lengths: expected integers, got {type(lengths).__name__} "
                        f"{lengths!r}")
    lens = _to_numpy(lengths) if hasattr(lengths, "detach") else np.asarray(lengths)
    if unbatched:
        lens = lens.reshape(-1)
    if lens.ndim != 1 or lens.shape[0] != B:
        raise ShapeError(f"lengths: expected [{B}] (one length per batch row), got "
                         f"{list(lens.shape)}")
    kind = lens.dtype.kind
    if kind == "f" and lens.size and np.all(np.mod(lens, 1) == 0):
        kind = "i"
    elif kind == "O" and all(isinstance(v, (int, np.integer)) and not isinstance(v, bool)
                             for v in lens.tolist()):
        kind = "i"  # Python ints beyond int64
    if kind not in "iu":
        raise TypeError(f"lengths: expected integers, got dtype {lens.dtype}")
    for b0, v in enumerate(lens.tolist()):
        if not 0 <= int(v) <= T:
            raise ShapeError(f"lengths: every length must be in [0, T={T}], got {int(v)} at "
                             f"row {b0}")
    return np.ascontiguousarray(lens.astype(np.int64))


def _check_parameter_memory(spec):
    """A ValueError, before anything is compiled or allocated, when the parameters alone
    would not fit in this machine's memory."""
    count = sum(int(np.prod(shape, dtype=object)) for l in range(spec.num_layers)
                for shape in spec.param_shapes[l]) * spec.num_directions
    need = count * _NP_DTYPES[spec.dtype].itemsize
    try:
        have = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return
    if need > have:
        raise ValueError(f"the parameters would take {need / 2**30:.1f} GiB ({count} values: "
                         f"input_size={spec.input_size}, hidden_size={spec.hidden_size}, "
                         f"num_layers={spec.num_layers}), more than this machine's "
                         f"{have / 2**30:.1f} GiB of memory")


def _check_sizes(input_size, hidden_size, num_layers):
    for nm, v in (("input_size", input_size), ("hidden_size", hidden_size),
                  ("num_layers", num_layers)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"{nm} must be a positive int, got {v!r}")


class NumpyRNN:
    """A recurrent network of `num_layers` layers of `cell`, forward or bidirectional,
    compiled for the CPU and called on numpy arrays.

    Arguments:
      cell: an rnn.Cell (`@rnn.cell` function, or one of rnn.zoo's).
      input_size, hidden_size: I and H of the cell's sizes.
      num_layers, bidirectional, batch_first: as torch.nn.LSTM.
      dtype: "float32" (default) or "float64".
      device: "cpu" (numpy arrays in and out) or "cuda" / "cuda:N": compiled with
        rnn-compile --target=cuda, called with torch CUDA tensors, zero-copy, on the current
        stream (outputs are new torch CUDA tensors; the call does not synchronise). The
        parameters are torch CUDA tensors where torch sees a GPU (numpy until the first call
        otherwise). Float32 matmuls are exact fp32 (no TF32).
      sizes: other sizes the cell uses, by Dim name (e.g. {"P": 12}).
      proj_size: PyTorch's name for sizes={"P": proj_size} (rnn.zoo.lstmp).
      optimize: run the rnn-optimize pipeline (default True).
      matmul_dtype: None (default: matmuls in the model's dtype), or "bfloat16" /
        "float16" for a float32 model: every matmul reads its operands rounded to that
        type and accumulates in float32 (rnn-compile --matmul-type); states, outputs and
        the pointwise math stay float32. Parameters are still given in float32.
      seed: seed of the parameter initialisation (PyTorch's uniform(-1/sqrt(H), 1/sqrt(H))).

    Calling it: `output, h_n = model(x, hx=None, lengths=None)`; with several states
    `h_n` is a tuple of arrays in the cell's state order (an LSTM gives (h_n, c_n)).
    """

    def __init__(self, cell, input_size, hidden_size, num_layers=1, bidirectional=False,
                 batch_first=False, dtype="float32", device="cpu", sizes=None, proj_size=0,
                 optimize=True, seed=None, matmul_dtype=None):
        if not isinstance(cell, Cell):
            raise TypeError(f"cell must be an rnn.Cell (a function decorated with @rnn.cell), "
                            f"got {type(cell).__name__}")
        _check_sizes(input_size, hidden_size, num_layers)
        dt = normalize_dtype(dtype)
        if dt not in _NP_DTYPES:
            raise TypeError(f"dtype {DTYPE_LONG[dt]} is not supported by the CPU backend "
                            "(numpy has no bfloat16 and the CPU cells compute in float32 or "
                            "float64); use float32 or float64")
        device = _normalize_device(device)
        matmul_type = None if matmul_dtype is None else normalize_dtype(matmul_dtype)
        if matmul_type == dt:
            matmul_type = None
        if matmul_type is not None and (matmul_type not in ("bf16", "f16") or dt != "f32"):
            raise TypeError(f"matmul_dtype {DTYPE_LONG[matmul_type]} with dtype "
                            f"{DTYPE_LONG[dt]}: reduced-precision matmuls are bfloat16 or "
                            "float16 in a float32 model")
        self._matmul_type = matmul_type
        sizes = dict(sizes or {})
        if proj_size:
            sizes["P"] = int(proj_size)
        D = 2 if bidirectional else 1
        self._device = device
        self._optimize = bool(optimize)
        self._torch_bias = True

        # Trace one cell per distinct input width.
        traced_by_width = {}
        cells_by_layer = []
        width = int(input_size)
        out_size = None
        for l in range(int(num_layers)):
            if width not in traced_by_width:
                name = f"{cell.name}_i{width}"
                traced_by_width[width] = cell.trace(width, hidden_size, dtype=dt, sizes=sizes,
                                                    name=name)
            tc = traced_by_width[width]
            if len(tc.output_names) != 1:
                raise CellError(f"rnn.RNN needs a cell with one step output; cell {cell.name} "
                                f"has {len(tc.output_names)} ({', '.join(tc.output_names)})")
            if tc.output_dtypes[0] != dt:
                raise CellError(f"cell {cell.name}: its output is {tc.output_dtypes[0]} but "
                                f"the model's dtype is {dt}")
            out_size = tc.output_sizes[0]
            cells_by_layer.append(tc)
            width = D * out_size
        first = cells_by_layer[0]
        for tc in cells_by_layer[1:]:
            if [p.name for p in tc.params] != [p.name for p in first.params]:
                raise CellError(f"cell {cell.name} declares different parameters for input "
                                f"width {tc.input_size} than for {first.input_size}")
        self._spec = _Spec(
            cell_name=cell.name, input_size=int(input_size), hidden_size=int(hidden_size),
            num_layers=int(num_layers), bidirectional=bool(bidirectional),
            batch_first=bool(batch_first), dtype=dt, sizes=sizes,
            state_names=tuple(first.state_names), state_sizes=tuple(first.state_sizes),
            output_size=int(out_size), param_names=tuple(p.name for p in first.params),
            param_shapes={l: [tuple(p.shape) for p in tc.params]
                          for l, tc in enumerate(cells_by_layer)},
            param_inits={l: [p.init for p in tc.params] for l, tc in enumerate(cells_by_layer)},
            torch=cell.torch)
        _check_parameter_memory(self._spec)
        self.cell = cell
        self._traced = list(traced_by_width.values())

        # The IR: the cells, then the function with and without lengths.
        parts = [tc.text for tc in self._traced]
        parts.append(_emit_func(FUNC, self._spec, cells_by_layer, False))
        parts.append(_emit_func(FUNC_LENGTHS, self._spec, cells_by_layer, True))
        self.mlir = "\n".join(parts)

        what = (f"the model of cell {cell.name} (input_size={input_size}, "
                f"hidden_size={hidden_size}, num_layers={num_layers}, "
                f"bidirectional={bool(bidirectional)}, dtype={DTYPE_LONG[dt]})")
        extra = ("--target=cuda",) if self.is_cuda else ()
        if self._matmul_type:
            extra += (f"--matmul-type={self._matmul_type}",)
        try:
            path, hit = _cache.compile_cached(self.mlir, optimize=self._optimize,
                                              extra_args=extra)
        except _runtime.CompileError as e:
            if e.returncode is None:  # no compiler: nothing to map
                raise
            raise _map_compile_error(e, self.mlir, self._traced, what) from None
        self.library = path
        self.from_cache = hit
        self._model = None
        if self.is_cuda:
            # Loaded at the first call: the build machine may have no CUDA driver.
            self._init_params(seed)
            return
        try:
            self._model = _runtime.Model(path)
        except _runtime.RNNError as e:
            # A library that does not load is a compiler bug: keep it out of the cache.
            for p in (path, path[:-3] + ".mlir"):
                try:
                    os.unlink(p)
                except OSError:
                    pass
            raise _runtime.CompileError(
                f"rnn-compile made a library for {what} that does not load (removed from the "
                f"cache): {e}") from e
        self._init_params(seed)

    # -- parameters ------------------------------------------------------------------------

    def _keys(self):
        s = self._spec
        for l in range(s.num_layers):
            for d in range(s.num_directions):
                for name, shape in zip(s.param_names, s.param_shapes[l]):
                    yield _param_key(name, l, d == 1), name, l, d, shape

    def _init_params(self, seed):
        rng = np.random.default_rng(seed)
        s = self._spec
        k = 1.0 / np.sqrt(s.hidden_size)
        npdt = _NP_DTYPES[s.dtype]
        self.params = {}
        for key, name, l, d, shape in self._keys():
            init = s.param_inits[l][s.param_names.index(name)]
            if init is None or init == "uniform":
                a = rng.uniform(-k, k, size=shape)
            elif init == "zeros":
                a = np.zeros(shape)
            elif init == "ones":
                a = np.ones(shape)
            elif callable(init):
                a = np.asarray(init(rng, shape))
                if a.shape != tuple(shape):
                    raise ShapeError(f"init of parameter {name!r} returned shape "
                                     f"{list(a.shape)}, expected {list(shape)}")
            else:
                a = np.full(shape, float(init))
            self.params[key] = np.array(a, dtype=npdt, order="C")  # keeps rank 0
        self._place_params()

    # -- CUDA ------------------------------------------------------------------------------

    def explain(self):
        """What a call launches, and why (rnn-compile --explain): for the forward function
        and its variant with lengths, the GEMMs and kernels before the step loop, in each
        step and after it, each with the rewrite that put it there. An LSTM runs one GEMM
        and one fused kernel per step; a cell that runs more shows here which stage adds
        them. A CUDA model's report also says which time loops run as one kernel (a block
        kernel, or the grid-wide persistent kernel) and which step by step, and why."""
        extra = (f"--matmul-type={self._matmul_type}",) if self._matmul_type else ()
        if self.is_cuda:
            extra += ("--target=cuda",)
        return _runtime.explain_mlir(self.mlir, optimize=self._optimize is not False,
                                     extra_args=extra)

    @property
    def device(self):
        return self._device

    @property
    def is_cuda(self):
        return self._device.startswith("cuda")

    def _place_params(self):
        """CUDA models: moves numpy parameters to torch CUDA tensors when torch and a GPU are
        there (otherwise they stay numpy and are uploaded at the first call)."""
        if not self.is_cuda:
            return
        torch = _torch_cuda()
        if torch is None:
            return
        for k, v in list(self.params.items()):
            if isinstance(v, np.ndarray):
                self.params[k] = torch.from_numpy(v).to(self._device)

    def _cuda_model(self):
        if self._model is None:
            try:
                self._model = _runtime.Model(self.library)
            except _runtime.RNNError as e:
                raise _runtime.RNNError(
                    e.status, e.status_name,
                    f"{e.message} (loading the CUDA model {self.library}: it needs "
                    "librnn_runtime_cuda.so, libcuda.so.1 and libcublas.so.13 on the library "
                    "path)") from e
        return self._model

    def param(self, name, layer=0, reverse=False):
        """The parameter array `name` of `layer` (the reverse direction's with reverse=True);
        the live array: writing into it changes the model."""
        key = _param_key(name, layer, reverse)
        if key not in self.params:
            raise KeyError(f"no parameter {key!r}; the model has {', '.join(self.params)}")
        return self.params[key]

    def named_parameters(self):
        """[(key, array)] in the function's argument order; keys as `W_l0`, `W_l0_reverse`."""
        return [(key, self.params[key]) for key, *_ in self._keys()]

    def _torch_names(self):
        t = self._spec.torch
        return dict(t["names"]) if t else None

    def state_dict(self, torch=False):
        """The parameters as a dict of copies. For cells with a PyTorch counterpart (rnn_tanh,
        rnn_relu, lstm, lstmp, gru) the keys are PyTorch's (weight_ih_l0, bias_hh_l1_reverse,
        ...); otherwise our keys (W_l0, ...). torch=True gives torch tensors."""
        names = self._torch_names()
        out = {}
        for key, name, l, d, _ in self._keys():
            if names is not None:
                tname = names[name]
                if not self._torch_bias and tname.startswith("bias"):
                    continue
                key = _param_key(tname, l, d == 1)
            out[key] = _to_numpy(self.params[_param_key(name, l, d == 1)]).copy()
        if torch:
            import torch as _torch
            out = {k: _torch.from_numpy(v) for k, v in out.items()}
        return out

    def load_state_dict(self, state_dict, strict=True):
        """Copies parameters in from a dict of arrays (numpy or torch tensors), keyed as
        state_dict() gives them (PyTorch's names where the cell has them, or our own W_l0
        keys). Values are converted to the model's dtype; shapes must match exactly. With
        strict, missing and unexpected keys are errors."""
        names = self._torch_names()
        expected = {}
        for key, name, l, d, shape in self._keys():
            if names is not None:
                expected[_param_key(names[name], l, d == 1)] = (key, shape)
            expected.setdefault(key, (key, shape))
        seen, unexpected, problems = set(), [], []
        npdt = _NP_DTYPES[self._spec.dtype]
        staged = {}
        for k, v in state_dict.items():
            if k not in expected:
                unexpected.append(k)
                continue
            ours, shape = expected[k]
            a = _to_numpy(v)
            if tuple(a.shape) != tuple(shape):
                problems.append(f"{k}: expected shape {list(shape)}, got {list(a.shape)}")
                continue
            if ours in seen:
                problems.append(f"{k}: parameter {ours} given twice")
                continue
            seen.add(ours)
            staged[ours] = np.array(a, dtype=npdt, order="C")
        missing = []
        for key, name, l, d, _ in self._keys():
            if key not in seen:
                tkey = _param_key(names[name], l, d == 1) if names else key
                if names and not self._torch_bias and names[name].startswith("bias"):
                    continue
                missing.append(tkey)
        if problems or (strict and (missing or unexpected)):
            msg = ["load_state_dict: the state dict does not fit the model"]
            msg += [f"  {p}" for p in problems]
            if strict and missing:
                msg.append(f"  missing keys: {', '.join(missing)}")
            if strict and unexpected:
                msg.append(f"  unexpected keys: {', '.join(unexpected)}")
            raise ShapeError("\n".join(msg))
        for ours, a in staged.items():
            self.params[ours] = a
        self._place_params()
        return {"missing_keys": missing, "unexpected_keys": unexpected}

    @classmethod
    def from_torch(cls, module, dtype=None, optimize=True):
        """An RNN with the architecture and weights of a torch.nn.LSTM (with or without
        proj_size), torch.nn.GRU or torch.nn.RNN (tanh or relu)."""
        from .torch_interop import from_torch
        return from_torch(cls, module, dtype=dtype, optimize=optimize)

    def to_torch(self):
        """A torch.nn.LSTM / GRU / RNN with this model's architecture and weights (float32 or
        float64 as the model), for cells that PyTorch has."""
        from .torch_interop import to_torch
        return to_torch(self)

    # -- calling ---------------------------------------------------------------------------

    @property
    def input_size(self):
        return self._spec.input_size

    @property
    def hidden_size(self):
        return self._spec.hidden_size

    @property
    def num_layers(self):
        return self._spec.num_layers

    @property
    def bidirectional(self):
        return self._spec.bidirectional

    @property
    def batch_first(self):
        return self._spec.batch_first

    @property
    def dtype(self):
        return DTYPE_LONG[self._spec.dtype]

    @property
    def state_names(self):
        return self._spec.state_names

    def __repr__(self):
        s = self._spec
        extra = "".join(f", {k}={v}" for k, v in s.sizes.items())
        return (f"rnn.NumpyRNN({s.cell_name}, input_size={s.input_size}, "
                f"hidden_size={s.hidden_size}{extra}, num_layers={s.num_layers}, "
                f"bidirectional={s.bidirectional}, batch_first={s.batch_first}, "
                f"dtype={self.dtype}{self._matmul_repr()})")

    def _matmul_repr(self):
        mm = getattr(self, "_matmul_type", None)
        return f", matmul_dtype={DTYPE_LONG[mm]}" if mm else ""

    def _check_params(self):
        if self.is_cuda:
            return self._cuda_params()
        npdt = _NP_DTYPES[self._spec.dtype]
        arrays = []
        for key, name, l, d, shape in self._keys():
            a = self.params.get(key)
            if a is None:
                raise KeyError(f"parameter {key!r} is missing from model.params")
            if not isinstance(a, np.ndarray):
                raise TypeError(f"parameter {key!r}: expected a numpy array, got "
                                f"{type(a).__name__}")
            if tuple(a.shape) != tuple(shape):
                raise ShapeError(f"parameter {key!r}: expected {list(shape)}, got "
                                 f"{list(a.shape)}")
            if a.dtype != npdt:
                raise TypeError(f"parameter {key!r}: expected dtype {self.dtype}, got "
                                f"{a.dtype} (assign arrays of the model's dtype, or use "
                                "load_state_dict, which converts)")
            arrays.append(a)
        return arrays

    def __call__(self, input, hx=None, lengths=None):
        """Runs the network. input: [T, B, I] ([B, T, I] with batch_first, or [T, I]
        unbatched). hx: initial states (an array [D*num_layers, B, size] for a one-state
        cell, a tuple in state order, or a dict by state name; None or a None entry means
        zeros). lengths: [B] valid lengths (PyTorch's packed sequences; positions past a
        row's length give zero outputs and leave its state alone). Returns (output,
        final states) in the structure of hx."""
        if self.is_cuda:
            return self._call_cuda(input, hx, lengths)
        s = self._spec
        D, L = s.num_directions, s.num_layers
        npdt = _NP_DTYPES[s.dtype]
        if isinstance(input, (str, bytes)):
            raise TypeError(f"input: expected a numpy array of {self.dtype}, got "
                            f"{type(input).__name__}")
        if isinstance(input, (list, tuple)):
            input = np.asarray(input)
        if not isinstance(input, np.ndarray):
            input = _to_numpy(input) if hasattr(input, "detach") else np.asarray(input)
        x = input
        if x.dtype.kind not in "fiu":
            raise TypeError(f"input: expected a numpy array of {self.dtype}, got dtype "
                            f"{x.dtype}")
        layout = "[B, T, {}]" if s.batch_first else "[T, B, {}]"
        expect = layout.format(s.input_size) + f" (input_size={s.input_size})"
        if x.ndim == 2:
            unbatched = True
        elif x.ndim == 3:
            unbatched = False
        else:
            raise ShapeError(f"input: expected {expect} or unbatched [T, {s.input_size}], got "
                             f"{list(x.shape)}")
        if x.shape[-1] != s.input_size:
            exp = f"[T, {s.input_size}] (input_size={s.input_size})" if unbatched else expect
            raise ShapeError(f"input: expected {exp}, got {list(x.shape)}")
        if x.dtype != npdt:
            raise TypeError(f"input: expected dtype {self.dtype}, got {x.dtype}")
        if unbatched:
            x = x[:, None, :]
        elif s.batch_first:
            x = x.transpose(1, 0, 2)
        x = np.ascontiguousarray(x)
        T, B = x.shape[0], x.shape[1]

        # Initial states.
        n_states = len(s.state_names)
        if hx is None:
            given = [None] * n_states
        elif isinstance(hx, dict):
            unknown = set(hx) - set(s.state_names)
            if unknown:
                raise KeyError(f"hx: unknown state(s) {sorted(unknown)}; the cell's states are "
                               f"{list(s.state_names)}")
            given = [hx.get(n) for n in s.state_names]
        elif isinstance(hx, tuple) or (isinstance(hx, list) and n_states > 1):
            if len(hx) != n_states:
                raise ShapeError(f"hx: expected {n_states} initial state(s) "
                                 f"({', '.join(s.state_names)}), got {len(hx)}")
            given = list(hx)
        else:
            if n_states != 1:
                raise ShapeError(f"hx: the cell has {n_states} states "
                                 f"({', '.join(s.state_names)}); pass a tuple")
            given = [hx]
        inits = []  # per state: [D*L, B, n]
        for name, n, h in zip(s.state_names, s.state_sizes, given):
            if h is None:
                inits.append(np.zeros((D * L, B, n), dtype=npdt))
                continue
            h = _to_numpy(h) if hasattr(h, "detach") else np.asarray(h)
            want = (D * L, n) if unbatched else (D * L, B, n)
            if tuple(h.shape) != want:
                wdesc = (f"[{D * L}, {n}]" if unbatched else f"[{D * L}, {B}, {n}]")
                raise ShapeError(
                    f"initial state {name!r}: expected {wdesc} (num_directions*num_layers="
                    f"{D * L}{'' if unbatched else f', batch={B}'}, {name} size={n}), got "
                    f"{list(h.shape)}")
            if h.dtype != npdt:
                raise TypeError(f"initial state {name!r}: expected dtype {self.dtype}, got "
                                f"{h.dtype}")
            if unbatched:
                h = h[:, None, :]
            inits.append(h)
        state_args = []
        for l in range(L):
            for d in range(D):
                for k in range(n_states):
                    state_args.append(np.ascontiguousarray(inits[k][l * D + d]))

        # Lengths.
        args = [x]
        fname = FUNC
        if lengths is not None:
            lens = _lengths_array(lengths, T, B, unbatched)
            args.append(np.ascontiguousarray(lens))
            fname = FUNC_LENGTHS
        args += state_args
        args += self._check_params()
        outs = self._model(fname, *args)
        ys, finals = outs[0], outs[1:]
        stacked = []
        for k in range(n_states):
            st = np.stack([finals[(l * D + d) * n_states + k]
                           for l in range(L) for d in range(D)], axis=0)
            stacked.append(st[:, 0, :] if unbatched else st)
        if unbatched:
            ys = ys[:, 0, :]
        elif s.batch_first:
            ys = np.ascontiguousarray(ys.transpose(1, 0, 2))
        if isinstance(hx, dict):
            return ys, dict(zip(s.state_names, stacked))
        return ys, (stacked[0] if n_states == 1 else tuple(stacked))

    # -- calling a CUDA model --------------------------------------------------------------

    def _need_cuda_tensor(self, what, v):
        """v as a torch CUDA tensor on the model's device, or a clear TypeError."""
        if not _is_torch_tensor(v):
            raise TypeError(f"{what}: this model runs on CUDA (device={self._device!r}) and "
                            f"takes torch CUDA tensors, got {type(v).__module__}."
                            f"{type(v).__name__} (move it with torch.as_tensor(...).cuda(), or "
                            "build the model with device='cpu' for numpy arrays)")
        if not v.is_cuda:
            raise TypeError(f"{what}: this model runs on CUDA (device={self._device!r}); got a "
                            f"tensor on {v.device} (move it with .cuda())")
        return v

    def _cuda_params(self):
        """The parameters as contiguous torch CUDA tensors, uploading numpy ones (once)."""
        torch = _torch_cuda()
        if torch is None:
            raise RuntimeError("a CUDA model needs PyTorch with a visible GPU to run")
        out = []
        tdt = torch.float64 if self._spec.dtype == "f64" else torch.float32
        for key, name, l, d, shape in self._keys():
            a = self.params.get(key)
            if a is None:
                raise KeyError(f"parameter {key!r} is missing from model.params")
            if isinstance(a, np.ndarray):
                a = torch.from_numpy(np.array(a, order="C")).to(self._device)
                self.params[key] = a
            elif not _is_torch_tensor(a):
                raise TypeError(f"parameter {key!r}: expected a torch CUDA tensor (or a numpy "
                                f"array), got {type(a).__name__}")
            self._need_cuda_tensor(f"parameter {key!r}", a)
            if tuple(a.shape) != tuple(shape):
                raise ShapeError(f"parameter {key!r}: expected {list(shape)}, got "
                                 f"{list(a.shape)}")
            if a.dtype != tdt:
                raise TypeError(f"parameter {key!r}: expected dtype {self.dtype}, got "
                                f"{a.dtype} (use load_state_dict, which converts)")
            out.append(a.contiguous())
        return out

    def _call_cuda(self, input, hx, lengths):
        s = self._spec
        D, L = s.num_directions, s.num_layers
        x = self._need_cuda_tensor("input", input)
        torch = _torch_cuda()
        dev = x.device
        tdt = torch.float64 if s.dtype == "f64" else torch.float32
        layout = "[B, T, {}]" if s.batch_first else "[T, B, {}]"
        expect = layout.format(s.input_size) + f" (input_size={s.input_size})"
        if x.dim() not in (2, 3):
            raise ShapeError(f"input: expected {expect} or unbatched [T, {s.input_size}], got "
                             f"{list(x.shape)}")
        unbatched = x.dim() == 2
        if x.shape[-1] != s.input_size:
            exp = f"[T, {s.input_size}] (input_size={s.input_size})" if unbatched else expect
            raise ShapeError(f"input: expected {exp}, got {list(x.shape)}")
        if x.dtype != tdt:
            raise TypeError(f"input: expected dtype {self.dtype}, got {x.dtype}")
        if unbatched:
            x = x[:, None, :]
        elif s.batch_first:
            x = x.transpose(0, 1)
        x = x.contiguous()
        T, B = int(x.shape[0]), int(x.shape[1])

        n_states = len(s.state_names)
        if hx is None:
            given = [None] * n_states
        elif isinstance(hx, dict):
            unknown = set(hx) - set(s.state_names)
            if unknown:
                raise KeyError(f"hx: unknown state(s) {sorted(unknown)}; the cell's states are "
                               f"{list(s.state_names)}")
            given = [hx.get(n) for n in s.state_names]
        elif isinstance(hx, (tuple, list)) and not _is_torch_tensor(hx):
            if n_states == 1 and isinstance(hx, list) and len(hx) != 1:
                raise ShapeError("hx: pass the initial state as one tensor")
            if len(hx) != n_states:
                raise ShapeError(f"hx: expected {n_states} initial state(s) "
                                 f"({', '.join(s.state_names)}), got {len(hx)}")
            given = list(hx)
        else:
            if n_states != 1:
                raise ShapeError(f"hx: the cell has {n_states} states "
                                 f"({', '.join(s.state_names)}); pass a tuple")
            given = [hx]
        inits = []
        for name, n, h in zip(s.state_names, s.state_sizes, given):
            if h is None:
                inits.append(torch.zeros((D * L, B, n), dtype=tdt, device=dev))
                continue
            h = self._need_cuda_tensor(f"initial state {name!r}", h)
            want = (D * L, n) if unbatched else (D * L, B, n)
            if tuple(h.shape) != want:
                wdesc = (f"[{D * L}, {n}]" if unbatched else f"[{D * L}, {B}, {n}]")
                raise ShapeError(
                    f"initial state {name!r}: expected {wdesc} (num_directions*num_layers="
                    f"{D * L}{'' if unbatched else f', batch={B}'}, {name} size={n}), got "
                    f"{list(h.shape)}")
            if h.dtype != tdt:
                raise TypeError(f"initial state {name!r}: expected dtype {self.dtype}, got "
                                f"{h.dtype}")
            if h.device != dev:
                raise TypeError(f"initial state {name!r}: on {h.device}, the input on {dev}")
            inits.append((h[:, None, :] if unbatched else h).contiguous())
        args = [x]
        fname = FUNC
        if lengths is not None:
            # Validated on the host (a small copy; a CUDA tensor synchronises here).
            lens = _lengths_array(lengths, T, B, unbatched)
            args.append(torch.from_numpy(lens).to(dev))
            fname = FUNC_LENGTHS
        for l in range(L):
            for d in range(D):
                for k in range(n_states):
                    args.append(inits[k][l * D + d])
        params = self._cuda_params()
        for p in params:
            if p.device != dev:
                raise TypeError(f"input: on {dev}, the model's parameters on {p.device}")
        args += params
        model = self._cuda_model()
        descs = [_desc(a) for a in args]
        shapes = model.result_descriptors(fname, descs)
        ys = torch.empty(shapes[0][1], dtype=tdt, device=dev)
        # The final states are written straight into the stacked [D*L, B, n] tensors.
        finals = [torch.empty((D * L, B, n), dtype=tdt, device=dev) for n in s.state_sizes]
        results = [ys] + [finals[k][l * D + d] for l in range(L) for d in range(D)
                          for k in range(n_states)]
        with torch.cuda.device(dev):
            stream = torch.cuda.current_stream(dev).cuda_stream
            # Temporaries (copies, zeros, lengths) were allocated on this stream, so the
            # caching allocator reuses their memory only after the queued work.
            model.run_descriptors(fname, descs, [_desc(r) for r in results], stream)
        if unbatched:
            ys = ys[:, 0, :]
            finals = [f[:, 0, :] for f in finals]
        elif s.batch_first:
            ys = ys.transpose(0, 1).contiguous()
        if isinstance(hx, dict):
            return ys, dict(zip(s.state_names, finals))
        return ys, (finals[0] if n_states == 1 else tuple(finals))

    forward = __call__

    # -- ahead-of-time artifacts -----------------------------------------------------------

    def save(self, directory):
        """Writes a self-contained model to `directory`: model.so (the compiled library),
        librnn_runtime.so (found by the library's $ORIGIN run path), params.npz,
        manifest.json and model.mlir (the IR it was compiled from). `rnn.load(directory)`
        runs it without the compiler."""
        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(self.library, out / "model.so")
        rt = _runtime.loaded_runtime_path() or _runtime.runtime_path()
        shutil.copyfile(rt, out / "librnn_runtime.so")
        if self.is_cuda:
            rt_cuda = Path(rt).resolve().parent / "librnn_runtime_cuda.so"
            if not rt_cuda.is_file():
                rt_cuda = Path(_runtime.runtime_path()).resolve().parent / \
                    "librnn_runtime_cuda.so"
            if not rt_cuda.is_file():
                raise FileNotFoundError(f"{rt_cuda} not found: a CUDA model needs "
                                        "librnn_runtime_cuda.so (build rnn_runtime_cuda)")
            shutil.copyfile(rt_cuda, out / "librnn_runtime_cuda.so")
        np.savez(out / "params.npz", **{k: _to_numpy(a) for k, a in self.named_parameters()})
        if getattr(self, "mlir", None):
            (out / "model.mlir").write_text(self.mlir)
        manifest = {
            "format": FORMAT, "version": FORMAT_VERSION, "library": "model.so",
            "runtime": "librnn_runtime.so",
            **({"runtime_cuda": "librnn_runtime_cuda.so", "target": "cuda"}
               if self.is_cuda else {}),
            "params": "params.npz", "ir": "model.mlir",
            "functions": {"forward": FUNC, "forward_lengths": FUNC_LENGTHS},
            "device": self._device, "torch_bias": self._torch_bias,
            "matmul_dtype": getattr(self, "_matmul_type", None),
            "spec": self._spec.to_json(),
            "param_keys": [k for k, *_ in self._keys()],
        }
        (out / MANIFEST).write_text(json.dumps(manifest, indent=2, default=_json_default) + "\n")
        return str(out)


def _json_default(o):
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, tuple):
        return list(o)
    raise TypeError(f"cannot write {o!r} to the manifest")


def load(directory):
    """Loads a model written by NumpyRNN.save(directory): no compiler needed, only the
    directory (and OpenBLAS, which librnn_runtime.so links to). Returns an rnn.NumpyRNN."""
    d = Path(directory)
    mpath = d / MANIFEST
    if not mpath.is_file():
        raise FileNotFoundError(f"{mpath} not found: not a directory written by NumpyRNN.save()")
    manifest = json.loads(mpath.read_text())
    if manifest.get("format") != FORMAT or manifest.get("version") != FORMAT_VERSION:
        raise ValueError(f"{mpath}: not an rnn model manifest of version {FORMAT_VERSION}")
    if "RNN_RUNTIME_LIB" not in os.environ:
        _runtime.load_runtime_from(d / manifest["runtime"])
    m = NumpyRNN.__new__(NumpyRNN)
    m._spec = _Spec.from_json(manifest["spec"])
    m._device = manifest.get("device", "cpu")
    m._optimize = None
    m._torch_bias = manifest.get("torch_bias", True)
    m._matmul_type = manifest.get("matmul_dtype")
    m.cell = None
    m._traced = []
    ir = d / manifest.get("ir", "model.mlir")
    m.mlir = ir.read_text() if ir.is_file() else None
    m.library = str((d / manifest["library"]).resolve())
    m.from_cache = False
    m._model = None
    npdt = _NP_DTYPES[m._spec.dtype]
    with np.load(d / manifest["params"]) as z:
        m.params = {k: np.array(z[k], dtype=npdt, order="C") for k in manifest["param_keys"]}
    if m.is_cuda:
        m._place_params()
        if _torch_cuda() is not None:
            m._cuda_model()  # load now where it can run, so that errors come early
    else:
        m._model = _runtime.Model(m.library)
        m._check_params()
    return m
