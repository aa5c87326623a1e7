"""rnn.RNN: a network of any cell as a torch.nn.Module that trains (docs/training.md).

    model = rnn.RNN(rnn.zoo.lstm, input_size=10, hidden_size=20, num_layers=2)
    output, (h_n, c_n) = model(x)            # x: a torch tensor [T, B, 10]
    output.sum().backward()                  # gradients of every parameter, x and hx

The network is emitted as `rnn` IR (module.py's emitter), compiled with
`rnn-compile --training` for the parameters' device (and precision) through the compile
cache, and called through _torch_ops.py (its custom ops where torch.compile, torch.export
or another tracer sees the call, the same functions without the dispatcher in plain eager
mode): the training forward and the derived backward when a gradient is needed, the plain
forward otherwise.
"""

import hashlib
import math
import os
import pickle
import warnings
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.rnn import PackedSequence, pack_padded_sequence, pad_packed_sequence

from . import _torch_ops as _ops
from . import cache as _cache
from . import runtime as _runtime
from .dsl import DTYPE_LONG, Cell, CellError, Dim, ShapeError
from .module import (_Spec, _check_sizes, _emit_func, _lengths_array, _map_compile_error,
                     _param_key)

__all__ = ["RNN"]

_MODEL_DTYPES = {torch.float32: "f32", torch.float64: "f64"}
_HALF = {torch.float16: "f16", torch.bfloat16: "bf16"}


def _function_name(layers, lengths, zoneout):
    return ("zoneout_" if zoneout else "") + layers + ("_lengths" if lengths else "")


def _as(t, dtype):
    # t.to(dtype), without the call where it would return t itself (the common case: each
    # costs about a microsecond of host time, and a forward has one per state and parameter).
    return t if t.dtype == dtype else t.to(dtype)


class RNN(nn.Module):
    r"""Layers and directions of a recurrent cell, as a :class:`torch.nn.Module`, with the
    arguments and call convention of :class:`torch.nn.LSTM`.

    Args:
        cell: an :class:`rnn.Cell` (``@rnn.cell`` function, or one of ``rnn.zoo``'s).
        input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
        proj_size, device, dtype: as :class:`torch.nn.LSTM`. ``bias=False`` is for cells
            whose biases are known (those with PyTorch's parameter names: rnn_tanh,
            rnn_relu, lstm, lstmp, gru); ``proj_size`` binds the size ``P`` and is an
            error for a cell that does not use it.
        zoneout: probability that a state unit keeps its previous value at a step, in
            training mode (Krueger et al.; Haste's semantics: masks from torch's RNG, no
            zoneout in eval mode), for every state of the cell.
        sizes: other sizes the cell uses, by name (``{"P": 12}``).
        optimize: run the ``rnn-optimize`` pipeline (default True).
        save: what the training forward saves for the backward: ``"gates"`` (default) or
            ``"states"`` (less memory; the backward recomputes the gates).

    Parameters are registered under PyTorch's names for cells that PyTorch has
    (``weight_ih_l0``, ``bias_hh_l1_reverse``, ...) and under the cell's own names
    otherwise (``W_l0``, ``U_l0_reverse``, ...).

    Precision: float32 and float64 parameters run the model in that precision.
    Under :func:`torch.autocast` (float16 or bfloat16) with float32 parameters, and with
    float16 or bfloat16 parameters (``.half()``, ``.bfloat16()``), the matmuls take
    operands in that type and accumulate in float32, while the states and the pointwise
    math stay float32; outputs come back in that type.
    """

    def __init__(self, cell, input_size, hidden_size, num_layers=1, bias=True,
                 batch_first=False, dropout=0.0, bidirectional=False, proj_size=0, device=None,
                 dtype=None, *, zoneout=0.0, sizes=None, optimize=True, save="gates"):
        super().__init__()
        if not isinstance(cell, Cell):
            raise TypeError(f"cell must be an rnn.Cell (a function decorated with @rnn.cell), "
                            f"got {type(cell).__name__}")
        _check_sizes(input_size, hidden_size, num_layers)
        for name, p in (("dropout", dropout), ("zoneout", zoneout)):
            if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 <= p <= 1:
                raise ValueError(f"{name} should be a number in range [0, 1] representing "
                                 f"the probability of an element being zeroed, got {p!r}")
        if dropout and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so "
                          f"non-zero dropout expects num_layers greater than 1, but got "
                          f"dropout={dropout} and num_layers={num_layers}", stacklevel=2)
        if save not in ("gates", "states"):
            raise ValueError(f"save must be 'gates' or 'states', got {save!r}")
        dtype = torch.get_default_dtype() if dtype is None else dtype
        if dtype not in _MODEL_DTYPES and dtype not in _HALF:
            raise TypeError(f"dtype {dtype}: rnn.RNN's parameters are float32, float64, "
                            "float16 or bfloat16")
        self.cell = cell
        self.input_size, self.hidden_size = int(input_size), int(hidden_size)
        self.num_layers = int(num_layers)
        self.bias, self.batch_first = bool(bias), bool(batch_first)
        self.dropout, self.zoneout = float(dropout), float(zoneout)
        self.bidirectional = bool(bidirectional)
        self.proj_size = int(proj_size)
        self.optimize, self.save = bool(optimize), save
        self.sizes = dict(sizes or {})
        if proj_size:
            if proj_size < 0:
                raise ValueError(f"proj_size should be a positive integer or zero, got "
                                 f"{proj_size}")
            if proj_size >= hidden_size:
                raise ValueError("proj_size has to be smaller than hidden_size")
            self.sizes["P"] = self.proj_size
        self._ir = {}         # model dtype -> (IR text, spec)
        self._libraries = {}  # (device type, model dtype, matmul type) -> library path
        spec = self._spec_for("f32")
        if self.proj_size and "P" not in self._used_sizes:
            raise ValueError(f"proj_size={proj_size}: cell {cell.name} has no projection (it "
                             "does not use the size P); use a cell that does, such as "
                             "rnn.zoo.lstmp")
        torch_names = (cell.torch or {}).get("names")
        if not self.bias and torch_names is None:
            raise ValueError(f"bias=False: cell {cell.name} does not say which parameters are "
                             "its biases (only cells with PyTorch's parameter names do: "
                             "rnn_tanh, rnn_relu, lstm, lstmp, gru); write the cell without "
                             "biases instead")
        # (attribute, our name, layer, direction, shape, init, is a bias left out)
        self._param_table = []
        for l in range(spec.num_layers):
            for d in range(spec.num_directions):
                for name, shape, init in zip(spec.param_names, spec.param_shapes[l],
                                             spec.param_inits[l]):
                    tname = torch_names[name] if torch_names else name
                    dropped = not self.bias and tname.startswith("bias")
                    attr = _param_key(tname, l, d == 1)
                    self._param_table.append((attr, name, l, d, tuple(shape), init, dropped))
        for ir_spec in self._ir.values():
            ir_spec[1].param_inits = None  # kept in the table only
        factory = {"device": device, "dtype": dtype}
        for attr, _, _, _, shape, _, dropped in self._param_table:
            if dropped:
                self.register_buffer(attr, torch.zeros(shape, **factory), persistent=False)
            else:
                self.register_parameter(attr, nn.Parameter(torch.empty(shape, **factory)))
        self.reset_parameters()

    # -- the IR and the libraries ------------------------------------------------------------

    def _spec_for(self, model_dtype):
        """(IR, spec) of the network in `model_dtype` ("f32" or "f64"), traced once."""
        if model_dtype in self._ir:
            return self._ir[model_dtype][1]
        if self.cell is None:
            raise RuntimeError(f"this rnn.RNN was unpickled without its cell (it was not "
                               f"importable by name), so it cannot be rebuilt in "
                               f"{DTYPE_LONG[model_dtype]}; it runs in "
                               f"{', '.join(DTYPE_LONG[k] for k in self._ir)}")
        cell, D = self.cell, 2 if self.bidirectional else 1
        traced, by_layer = {}, {False: [], True: []}
        width = self.input_size
        for l in range(self.num_layers):
            for zone in (False, True) if self.zoneout else (False,):
                key = (width, zone)
                if key not in traced:
                    name = f"{cell.name}_i{width}" + ("_zoneout" if zone else "")
                    traced[key] = cell.trace(width, self.hidden_size, dtype=model_dtype,
                                             sizes=self.sizes, name=name, zoneout=zone)
                by_layer[zone].append(traced[key])
            tc = by_layer[False][l]
            if len(tc.output_names) != 1:
                raise CellError(f"rnn.RNN needs a cell with one step output; cell {cell.name} "
                                f"has {len(tc.output_names)} ({', '.join(tc.output_names)})")
            width = D * tc.output_sizes[0]
        cells = by_layer[False]
        first = cells[0]
        for tc in cells[1:]:
            if [p.name for p in tc.params] != [p.name for p in first.params]:
                raise CellError(f"cell {cell.name} declares different parameters for input "
                                f"width {tc.input_size} than for {first.input_size}")
        used = {s for p in first.params for d in p.decl if isinstance(d, Dim)
                for s in d.symbols()}
        used |= {s for d in cell.state_decl if isinstance(d, Dim) for s in d.symbols()}
        self._used_sizes = used
        spec = _Spec(
            cell_name=cell.name, input_size=self.input_size, hidden_size=self.hidden_size,
            num_layers=self.num_layers, bidirectional=self.bidirectional, batch_first=False,
            dtype=model_dtype, sizes=self.sizes, state_names=tuple(first.state_names),
            state_sizes=tuple(first.state_sizes), output_size=int(first.output_sizes[0]),
            param_names=tuple(p.name for p in first.params),
            param_shapes={l: [tuple(p.shape) for p in tc.params] for l, tc in enumerate(cells)},
            param_inits={l: [p.init for p in tc.params] for l, tc in enumerate(cells)},
            torch=cell.torch)
        parts = [tc.text for tc in traced.values()]
        L = self.num_layers
        layer_sets = [("forward", range(L))]
        if self.dropout and L > 1:
            layer_sets += [("layer_first", range(0, 1)), ("layer_rest", range(1, 2))]
        for zone in (False, True) if self.zoneout else (False,):
            for layers_name, layers in layer_sets:
                for lengths in (False, True):
                    parts.append(_emit_func(_function_name(layers_name, lengths, zone), spec,
                                            by_layer[zone], lengths, layers))
        if self._ir:
            spec.param_inits = None
        self._ir[model_dtype] = ("\n".join(parts), spec)
        return spec

    @property
    def _spec(self):
        """The network's layout (states, parameters, sizes): the same in every dtype."""
        return next(iter(self._ir.values()))[1]

    def _library(self, device_type, model_dtype, matmul_type):
        key = (device_type, model_dtype, matmul_type)
        path = self._libraries.get(key) or self._library_file(key)
        if path is not None:
            self._libraries[key] = path
            return path
        self._spec_for(model_dtype)
        ir = self._ir[model_dtype][0]
        extra = ["--training", f"--save={self.save}"]
        if device_type == "cuda":
            extra.append("--target=cuda")
        elif device_type != "cpu":
            raise NotImplementedError(f"device type {device_type!r}: rnn.RNN runs on 'cpu' "
                                      "and 'cuda'")
        if matmul_type:
            extra.append(f"--matmul-type={matmul_type}")
        what = (f"the model of cell {self.cell.name if self.cell else '?'} "
                f"({self.extra_repr()}, {DTYPE_LONG[model_dtype]}, {device_type})")
        try:
            path, _ = _cache.compile_cached(ir, optimize=self.optimize, extra_args=extra)
        except _runtime.CompileError as e:
            if e.returncode is None:
                raise
            raise _map_compile_error(e, ir, None, what) from None
        self._libraries[key] = path
        return path

    # -- parameters ----------------------------------------------------------------------

    def reset_parameters(self):
        """PyTorch's initialisation, uniform(-1/sqrt(H), 1/sqrt(H)), from torch's RNG, for
        parameters declared without an init; `init=` of rnn.param otherwise."""
        k = 1.0 / math.sqrt(self.hidden_size)
        with torch.no_grad():
            for attr, name, l, d, shape, init, dropped in self._param_table:
                t = getattr(self, attr)
                if dropped:
                    t.zero_()
                elif init is None or init == "uniform":
                    t.uniform_(-k, k)
                elif init == "zeros":
                    t.zero_()
                elif init == "ones":
                    t.fill_(1.0)
                elif callable(init):
                    rng = np.random.default_rng(int(torch.randint(0, 2**31 - 1, ()).item()))
                    a = np.asarray(init(rng, shape))
                    if a.shape != shape:
                        raise ShapeError(f"init of parameter {name!r} returned shape "
                                         f"{list(a.shape)}, expected {list(shape)}")
                    t.copy_(torch.from_numpy(a))
                else:
                    t.fill_(float(init))

    def _flat_params(self, model_dtype):
        """The parameters in the compiled function's argument order, as `model_dtype`."""
        tdt = torch.float64 if model_dtype == "f64" else torch.float32
        return [_as(getattr(self, attr), tdt) for attr, *_ in self._param_table]

    def _layer_params(self, flat, layers):
        D = 2 if self.bidirectional else 1
        n = len(self._spec.param_names)
        return flat[layers.start * D * n:layers.stop * D * n]

    @property
    def state_names(self):
        return self._spec.state_names

    # -- calling -------------------------------------------------------------------------

    def _precision(self, x):
        """(model dtype, matmul type, output dtype) of a call."""
        # next(self.parameters()) is the first of the module's own parameters when it has
        # one; reading that directly skips the generators of named_parameters.
        p = next((t for t in self._parameters.values() if t is not None), None)
        if p is None:
            p = next(self.parameters(), None)
        pdt = p.dtype if p is not None else x.dtype
        dev = x.device.type
        if pdt in _HALF:
            return "f32", _HALF[pdt], pdt
        if pdt == torch.float32 and torch.is_autocast_enabled(dev):
            adt = torch.get_autocast_dtype(dev)
            if adt in _HALF:
                return "f32", _HALF[adt], adt
        if pdt == torch.float32 and dev == "cuda" and torch.backends.cudnn.allow_tf32:
            return "f32", "tf32", pdt
        return _MODEL_DTYPES[pdt], None, pdt

    def forward(self, input, hx=None, lengths=None):
        """Runs the network. input: [T, B, input_size] ([B, T, ...] with batch_first,
        [T, input_size] unbatched) or a PackedSequence. hx: the initial states: a tensor
        [D*num_layers, B, size] for a one-state cell, a tuple in the cell's state order (an
        LSTM: (h_0, c_0)); None means zeros. lengths: [B] valid lengths (outputs past a
        row's length are zero and leave its state alone), as PackedSequence gives them.
        Returns (output, h_n) as torch.nn.LSTM / GRU: h_n a tensor for a one-state cell,
        a tuple in state order otherwise."""
        spec = self._spec
        D, L = 2 if self.bidirectional else 1, self.num_layers
        packed = isinstance(input, PackedSequence)
        if packed:
            if lengths is not None:
                raise ValueError("lengths: a PackedSequence carries its own lengths")
            sorted_indices, unsorted_indices = input.sorted_indices, input.unsorted_indices
            input, lengths = pad_packed_sequence(input)  # lengths on the CPU: checked there
        if not torch.is_tensor(input):
            raise TypeError(f"input: expected a torch tensor or a PackedSequence, got "
                            f"{type(input).__name__} (for numpy arrays use rnn.NumpyRNN)")
        if input.dim() not in (2, 3) or input.shape[-1] != self.input_size:
            layout = "[B, T, {}]" if self.batch_first and not packed else "[T, B, {}]"
            expect = layout.format(self.input_size)
            if input.dim() not in (2, 3):
                raise ShapeError(f"input: expected {expect} or unbatched "
                                 f"[T, {self.input_size}], got {list(input.shape)}")
            raise ShapeError(f"input: expected {expect} (input_size={self.input_size}), got "
                             f"{list(input.shape)}")
        if not input.is_floating_point():
            raise TypeError(f"input: expected a floating-point tensor, got {input.dtype}")
        unbatched = input.dim() == 2
        model_dtype, matmul_type, out_dtype = self._precision(input)
        tdt = torch.float64 if model_dtype == "f64" else torch.float32
        x = input.unsqueeze(1) if unbatched else input
        if self.batch_first and not packed and not unbatched:
            x = x.transpose(0, 1)
        x = _as(x, tdt)
        T, B = x.shape[0], x.shape[1]
        inits = self._initial_states(hx, B, unbatched, x)
        if lengths is not None:
            lengths = self._check_lengths(lengths, T, B, unbatched, x.device)
        library = _library_of(self, x.device.type, model_dtype, matmul_type)
        params = self._flat_params(model_dtype)
        zone = self.training and self.zoneout > 0
        per_layer = self.training and self.dropout > 0 and L > 1
        runs = [(range(l, l + 1), "layer_first" if l == 0 else "layer_rest")
                for l in range(L)] if per_layer else [(range(L), "forward")]
        finals = []
        ys = x
        for layers, fname in runs:
            if layers.start > 0:
                ys = F.dropout(ys, self.dropout, training=True)
            args = [ys] + ([lengths] if lengths is not None else [])
            args += [inits[k][l * D + d] for l in layers for d in range(D)
                     for k in range(len(inits))]
            if zone:
                width = sum(spec.state_sizes)
                keep = torch.full((T, B, width), self.zoneout, dtype=tdt, device=x.device)
                args += [torch.bernoulli(keep) for _ in layers for _ in range(D)]
            args += self._layer_params(params, layers)
            outs = self._apply_function(library, _function_name(fname, lengths is not None,
                                                                  zone), args)
            ys, finals = outs[0], finals + list(outs[1:])
        n = len(spec.state_names)
        h_n = [torch.stack([finals[(l * D + d) * n + k] for l in range(L) for d in range(D)])
               for k in range(n)]
        ys, h_n = _as(ys, out_dtype), [_as(h, out_dtype) for h in h_n]
        if packed:
            # In the input's order of rows (its sorted_indices), as torch.nn.LSTM returns it.
            order = sorted_indices if sorted_indices is not None else \
                torch.arange(B, device=lengths.device)
            order = order.to(ys.device)
            p = pack_padded_sequence(ys.index_select(1, order), lengths.index_select(
                0, order).cpu(), enforce_sorted=True)
            ys = PackedSequence(p.data, p.batch_sizes, sorted_indices, unsorted_indices)
        elif unbatched:
            ys, h_n = ys.squeeze(1), [h.squeeze(1) for h in h_n]
        elif self.batch_first:
            ys = ys.transpose(0, 1)
        return ys, (h_n[0] if n == 1 else tuple(h_n))

    def _apply_function(self, library, function, args):
        if torch.is_grad_enabled() and any(a.requires_grad for a in args):
            return _ops.train_results(library, function, args)
        return _ops.run_results(library, function, args)

    def _initial_states(self, hx, B, unbatched, x):
        """Per state, its D*L rows [B, size] (layer-major, direction-minor) in the model's
        dtype."""
        spec = self._spec
        D, L, n = 2 if self.bidirectional else 1, self.num_layers, len(spec.state_names)
        if hx is None:
            given = [None] * n
        elif torch.is_tensor(hx):
            if n != 1:
                raise ShapeError(f"hx: the cell has {n} states ({', '.join(spec.state_names)});"
                                 " pass a tuple")
            given = [hx]
        elif isinstance(hx, (tuple, list)):
            if len(hx) != n:
                raise ShapeError(f"hx: expected {n} initial state(s) "
                                 f"({', '.join(spec.state_names)}), got {len(hx)}")
            given = list(hx)
        else:
            raise TypeError(f"hx: expected a tensor or a tuple of tensors, got "
                            f"{type(hx).__name__}")
        inits = []
        for name, size, h in zip(spec.state_names, spec.state_sizes, given):
            if h is None:
                inits.append(None)  # zeros, made below
                continue
            if not torch.is_tensor(h):
                raise TypeError(f"initial state {name!r}: expected a tensor, got "
                                f"{type(h).__name__}")
            want = (D * L, size) if unbatched else (D * L, B, size)
            if tuple(h.shape) != want:
                raise ShapeError(
                    f"initial state {name!r}: expected {list(want)} (num_directions*"
                    f"num_layers={D * L}{'' if unbatched else f', batch={B}'}, {name} "
                    f"size={size}), got {list(h.shape)}")
            if h.device != x.device:
                raise ValueError(f"initial state {name!r} is on {h.device}, the input on "
                                 f"{x.device}")
            inits.append(_as(h.unsqueeze(1) if unbatched else h, x.dtype).unbind(0))
        missing = [k for k, h in enumerate(inits) if h is None]
        if not missing:
            return inits
        if torch.compiler.is_compiling() or not _ops._untraced([x]):
            for k in missing:
                inits[k] = torch.zeros((D * L, B, spec.state_sizes[k]), dtype=x.dtype,
                                       device=x.device).unbind(0)
            return inits
        # Eager (a traced graph has its own allocator and fusion): one allocation and one
        # fill for all of them, where each torch.zeros costs host time and a kernel launch.
        # Each state's [D*L, B, size] starts at a 512-byte boundary, as the allocation of
        # its own did, so that every row is as aligned as before (the GEMMs pick their
        # kernels by alignment). The model only reads them.
        align = max(1, 512 // x.element_size())
        starts, total = {}, 0
        for k in missing:
            starts[k] = total
            total += -(-D * L * B * spec.state_sizes[k] // align) * align
        zeros = torch.zeros(total, dtype=x.dtype, device=x.device)
        for k in missing:
            size = spec.state_sizes[k]
            inits[k] = [zeros.as_strided((B, size), (size, 1), starts[k] + i * B * size)
                        for i in range(D * L)]
        return inits

    def _check_lengths(self, lengths, T, B, unbatched, device):
        if not torch.is_tensor(lengths):  # checked as given: huge, unsigned, strings
            return torch.from_numpy(_lengths_array(lengths, T, B, unbatched)).to(device)
        if lengths.is_floating_point() or lengths.is_complex() or lengths.dtype == torch.bool:
            raise TypeError(f"lengths: expected integers, got {lengths.dtype}")
        lengths = lengths.reshape(-1) if unbatched else lengths
        if lengths.dim() != 1 or lengths.shape[0] != B:
            raise ShapeError(f"lengths: expected [{B}] (one length per batch row), got "
                             f"{list(lengths.shape)}")
        if not torch.compiler.is_compiling():
            bad = ((lengths < 0) | (lengths > T)).nonzero()
            if bad.numel():
                b0 = int(bad[0, 0])
                raise ShapeError(f"lengths: every length must be in [0, T={T}], got "
                                 f"{int(lengths[b0])} at row {b0}")
        return lengths.to(device=device, dtype=torch.int64)

    # -- PyTorch interop -----------------------------------------------------------------

    @classmethod
    def from_torch(cls, module, optimize=True):
        """An rnn.RNN with the architecture and weights of a torch.nn.LSTM (with or without
        proj_size), GRU or RNN (tanh or relu), on its device and dtype."""
        from .torch_interop import cell_for_torch
        cell, extra = cell_for_torch(module)
        p = next(module.parameters())
        model = cls(cell, module.input_size, module.hidden_size,
                    num_layers=module.num_layers, bias=module.bias,
                    batch_first=module.batch_first, bidirectional=module.bidirectional,
                    dropout=module.dropout, device=p.device, dtype=p.dtype,
                    optimize=optimize, **extra)
        model.load_state_dict(module.state_dict())
        return model

    def extra_repr(self):
        s = f"{self.cell.name if self.cell else '?'}, {self.input_size}, {self.hidden_size}"
        for name, default in (("num_layers", 1), ("bias", True), ("batch_first", False),
                              ("dropout", 0.0), ("bidirectional", False), ("proj_size", 0),
                              ("zoneout", 0.0)):
            v = getattr(self, name)
            if v != default:
                s += f", {name}={v}"
        return s

    # -- pickling ------------------------------------------------------------------------

    def build(self, device="cpu", dtype=torch.float32, matmul_dtype=None):
        """Compiles (or finds in the cache) the library that calls on `device` with
        parameters of `dtype` run, without running it, and returns its path. `matmul_dtype`:
        torch.float16 / torch.bfloat16 for the autocast variants, "tf32" for float32 on CUDA
        with TF32 products. A module pickled afterwards carries the library: built here, it
        runs on a machine without the compiler."""
        device_type = torch.device(device).type
        if dtype in _HALF:
            return self._library(device_type, "f32", _HALF[dtype])
        if dtype not in _MODEL_DTYPES:
            raise TypeError(f"dtype {dtype}: float32, float64, float16 or bfloat16")
        matmul = _HALF.get(matmul_dtype, matmul_dtype)
        if matmul not in (None, "f16", "bf16", "tf32"):
            raise TypeError(f"matmul_dtype {matmul_dtype!r}: torch.float16, torch.bfloat16, "
                            "'tf32' or None")
        return self._library(device_type, _MODEL_DTYPES[dtype], matmul)

    def explain(self, dtype=torch.float32, matmul_dtype=None):
        """What the compiled module launches, and why (rnn-compile --explain): for the
        forward, the training forward and the backward, the GEMMs and kernels before each
        step loop, in each step and after it, each with the rewrite that put it there."""
        if dtype not in _MODEL_DTYPES and dtype not in _HALF:
            raise TypeError(f"dtype {dtype}: float32, float64, float16 or bfloat16")
        model_dtype = "f32" if dtype in _HALF else _MODEL_DTYPES[dtype]
        matmul = _HALF.get(dtype) or _HALF.get(matmul_dtype, matmul_dtype)
        self._spec_for(model_dtype)
        extra = [f"--matmul-type={matmul}"] if matmul else []
        return _runtime.explain_mlir(self._ir[model_dtype][0], optimize=self.optimize,
                                     extra_args=extra, training=True, save=self.save)

    def _library_file(self, key):
        """The path of a library this module carried through pickling, written into the
        compile cache under the hash of its bytes (None when it carried none for `key`)."""
        blob = getattr(self, "_library_blobs", {}).get(key)
        if blob is None:
            return None
        path = _cache.cache_dir() / f"carried-{hashlib.sha256(blob).hexdigest()}.so"
        if not path.is_file() or path.stat().st_size != len(blob):
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_bytes(blob)
            os.replace(tmp, path)
        return str(path)

    def __getstate__(self):
        state = self.__dict__.copy()
        # The libraries travel as bytes: the copy runs where the compiler is not (and
        # finds them in its cache by their hash); self's paths are this machine's.
        blobs = dict(getattr(self, "_library_blobs", {}))
        for key, path in self._libraries.items():
            blobs[key] = Path(path).read_bytes()
        state["_library_blobs"] = blobs
        state["_libraries"] = {}
        # A parameter's init function that does not pickle is left out: reset_parameters()
        # of the copy uses PyTorch's uniform initialisation for that parameter.
        state["_param_table"] = [row[:5] + ((row[5] if _pickles(row[5]) else None),) + row[6:]
                                 for row in self._param_table]
        return state


@torch.compiler.assume_constant_result
def _library_of(module, device_type, model_dtype, matmul_type):
    # Under torch.compile the path is a constant of the graph: compiling the model (a
    # subprocess) happens while tracing, not in the graph.
    return module._library(device_type, model_dtype, matmul_type)


def _pickles(value):
    try:
        pickle.dumps(value)
        return True
    except Exception:
        return False
