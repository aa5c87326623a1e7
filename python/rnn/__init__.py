"""rnn: a compiler for recurrent cells, from Python.

* The DSL (rnn.dsl): a cell is a Python function over symbolic tensors,
  `@rnn.cell(states=("h", "c"))`, with `rnn.param("W", (4 * rnn.H, rnn.I))`, `@`, `+ - * /`,
  `rnn.sigmoid`, `rnn.split`, ... It emits the `rnn` MLIR dialect.
* rnn.RNN (needs PyTorch): layers and directions of a cell as a torch.nn.Module with
  torch.nn.LSTM's arguments and call convention, compiled with rnn-compile --training
  (through a cache in $RNN_CACHE_DIR, default ~/.cache/rnn); autograd runs the derived
  backward (docs/training.md).
* rnn.NumpyRNN: the same network called on numpy arrays, inference only, without PyTorch;
  `model.save(dir)` / `rnn.load(dir)` for running without the compiler.
* The zoo (rnn.zoo): rnn_tanh, rnn_relu, lstm, gru, gru_reset_before, peephole_lstm,
  cifg_lstm, lstmp, mgu, sru, indrnn, layernorm_lstm.
* rnn.onnx: ONNX models whose recurrent layers are LSTM, GRU or RNN operators, imported,
  compiled and run (docs/onnx.md); `rnn-import-onnx` writes their rnn IR.
* The low-level binding (rnn.runtime): `compile_mlir` runs rnn-compile, `Model` loads and runs
  the library it makes through librnn_runtime's C ABI (ctypes).

See docs/python.md.
"""

from .runtime import Model, RNNError, CompileError, compile_mlir
from .dsl import (Dim, I, H, P, size, Tensor, Cell, TracedCell, ParamSpec, cell, param,
                  constant, matmul, linear, headwise, sigmoid, tanh, relu, exp, log, sqrt, rsqrt,
                  neg, minimum, maximum, where, eq, ne, lt, le, gt, ge, Comparison, split, concat,
                  layer_norm, reduce_sum, reduce_mean, reduce_max, cast, ShapeError, CellError)
from .module import NumpyRNN, load, CellCompileError
from .cache import cache_dir, clear_cache
from . import zoo

__version__ = "0.1.0"


def __getattr__(name):
    # rnn.onnx (importing ONNX models) needs the onnx package to read models: imported on
    # first use.
    if name == "onnx":
        import importlib
        return importlib.import_module(".onnx", __name__)
    # rnn.RNN imports torch, on first use only: the numpy API works without it.
    if name == "RNN":
        try:
            from .nn import RNN
        except ImportError as e:
            if e.name != "torch":
                raise
            raise ImportError("rnn.RNN is a torch.nn.Module and needs PyTorch (pip install "
                              "torch); without it, rnn.NumpyRNN runs the same network on numpy "
                              "arrays") from e
        return RNN
    raise AttributeError(f"module 'rnn' has no attribute {name!r}")
