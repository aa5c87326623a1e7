"""The compiled functions of a model library as PyTorch custom operators.

Two operators, registered once for every model (the library and the function are string
arguments, so that torch.compile and torch.export see one opaque op per call, whatever the
cell):

  rnn::run(library, function, args) -> results
      calls `function` of the library at path `library` on `args` (contiguous tensors, all
      on one device) and returns its results; no autograd (the inference forward, and the
      backward functions themselves).
  rnn::train(library, function, args) -> results + saved
      calls the training forward of `function` (rnn-compile --training) and returns its
      results followed by the tensors it saves; its autograd formula calls the derived
      backward of `function` through rnn::run.

Both have fake implementations that read the result shapes from the library's manifest
(sizes named by a symbol follow the argument that has it), so T and B may be symbolic.
The work runs on the current CUDA stream of the tensors' device (or on the CPU).
"""

import threading

import torch

from . import runtime as _runtime

__all__ = ["run", "train", "model"]

_TORCH_DTYPES = {"f32": torch.float32, "f64": torch.float64, "f16": torch.float16,
                 "bf16": torch.bfloat16, "i32": torch.int32, "i64": torch.int64}
_RNN_DTYPES = {v: k for k, v in _TORCH_DTYPES.items()}

_models = {}
_lock = threading.Lock()


def model(library):
    """The loaded rnn.Model of the library at path `library` (loaded once per process)."""
    m = _models.get(library)
    if m is None:
        with _lock:
            m = _models.get(library)
            if m is None:
                m = _runtime.Model(library)
                _models[library] = m
    return m


def _descriptor(t):
    return (t.data_ptr() if t.numel() else 0, _RNN_DTYPES.get(t.dtype, str(t.dtype)),
            tuple(t.shape))


def _check_args(function, args):
    if not args:
        raise ValueError(f"rnn::run {function}: no arguments")
    device = args[0].device
    for i, a in enumerate(args):
        if a.device != device:
            raise ValueError(f"{function}: argument #{i} is on {a.device}, argument #0 on "
                             f"{device} (a model runs on one device)")
    return device


def _call(library, function, args):
    device = _check_args(function, args)
    args = [a.contiguous() for a in args]
    m = model(library)
    descs = [_descriptor(a) for a in args]
    shapes = m.result_descriptors(function, descs)
    outs = [torch.empty(shape, dtype=_TORCH_DTYPES[dt], device=device) for dt, shape in shapes]
    if device.type == "cuda":
        with torch.cuda.device(device):
            stream = torch.cuda.current_stream(device).cuda_stream
            m.run_descriptors(function, descs, [_descriptor(o) for o in outs], stream)
    else:
        m.run_descriptors(function, descs, [_descriptor(o) for o in outs])
    return outs


def _fake_results(library, function, args):
    arg_sig, result_sig = model(library).symbolic_signature(function)
    if len(arg_sig) != len(args):
        raise ValueError(f"{function}: takes {len(arg_sig)} arguments, got {len(args)}")
    sizes = {}
    for (_, dims), a in zip(arg_sig, args):
        for k, d in enumerate(dims):
            if isinstance(d, str) and k < a.dim():
                sizes.setdefault(d, a.shape[k])
    return [args[0].new_empty([sizes[d] if isinstance(d, str) else d for d in dims],
                              dtype=_TORCH_DTYPES[dt])
            for dt, dims in result_sig]


@torch.library.custom_op("rnn::run", mutates_args=())
def run(library: str, function: str, args: list[torch.Tensor]) -> list[torch.Tensor]:
    return _call(library, function, args)


@run.register_fake
def _run_fake(library, function, args):
    return _fake_results(library, function, args)


_training = {}


def _training_info(library, function):
    key = (library, function)
    info = _training.get(key)
    if info is None:
        info = model(library).training_info(function)
        _training[key] = info
    return info


@torch.library.custom_op("rnn::train", mutates_args=())
def train(library: str, function: str, args: list[torch.Tensor]) -> list[torch.Tensor]:
    return _call(library, _training_info(library, function).train_function, args)


@train.register_fake
def _train_fake(library, function, args):
    return _fake_results(library, _training_info(library, function).train_function, args)


def _setup_context(ctx, inputs, output):
    library, function, args = inputs
    ctx.library, ctx.function, ctx.num_args = library, function, len(args)
    ctx.save_for_backward(*args, *output)


def _backward(ctx, grads):
    info = _training_info(ctx.library, ctx.function)
    saved = ctx.saved_tensors
    args, outs = saved[:ctx.num_args], saved[ctx.num_args:]
    num_results = len(outs) - info.num_saved
    grad_results = [torch.zeros_like(o) if g is None else g.contiguous()
                    for g, o in zip(grads[:num_results], outs[:num_results])]
    grads_out = run(ctx.library, info.backward_function, [*args, *outs, *grad_results])
    by_arg = [None] * ctx.num_args
    for i, g in zip(info.gradient_args, grads_out):
        by_arg[i] = g
    return None, None, by_arg


train.register_autograd(_backward, setup_context=_setup_context)


def num_results(library, function):
    """How many results `function` returns (train returns these, then the saved tensors)."""
    return len(model(library).symbolic_signature(function)[1])
