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

rnn.RNN calls them through `train_results` and `run_results`. Where nothing records or
transforms the call (eager mode: no torch.compile, torch.export or torch.jit.trace, no
dispatch or function mode but torch.device's, no functorch transform, plain tensors), those
call the same library functions, with the same autograd formula, without the dispatcher:
its custom-op machinery (pytree flattening, redispatch, the generated autograd.Function)
costs more host time than the call itself, and a step's first kernel waits for it.
"""

import threading

import torch

from . import runtime as _runtime

__all__ = ["run", "train", "model", "train_results", "run_results"]

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


# (library, function, ((dtype, shape) of each argument)) -> (rnn.CallPlan, [(torch dtype,
# shape) of each result]). A result's shape follows from the arguments' dtypes and shapes
# alone (its sizes are constants or those of an argument's symbols), so calls alike share one
# plan; the runtime still checks every call. Bounded: shapes that vary without end (T of
# every batch different) evict the oldest entries.
_PLAN_CACHE_SIZE = 1024
_plans = {}
_plans_lock = threading.Lock()


def _plan(m, library, function, args):
    key = (library, function, tuple([(a.dtype, a.shape) for a in args]))
    entry = _plans.get(key)
    if entry is None:
        plan = m.plan(function, [_descriptor(a) for a in args])
        entry = (plan, [(_TORCH_DTYPES[dt], shape) for dt, shape in plan.results])
        with _plans_lock:
            while len(_plans) >= _PLAN_CACHE_SIZE:
                del _plans[next(iter(_plans))]
            _plans[key] = entry
    return entry


_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)


def _call(library, function, args):
    device = _check_args(function, args)
    args = [a.contiguous() for a in args]
    m = model(library)
    plan, result_types = _plan(m, library, function, args)
    outs = [torch.empty(shape, dtype=dtype, device=device) for dtype, shape in result_types]
    arg_pointers = [a.data_ptr() if a.numel() else 0 for a in args]
    out_pointers = [o.data_ptr() if o.numel() else 0 for o in outs]
    if device.type == "cuda":
        with torch.cuda.device(device):
            # The raw cudaStream_t of torch.cuda.current_stream(device), without building
            # a torch.cuda.Stream object (where torch has that private function).
            stream = _raw_stream(device.index) if _raw_stream else \
                torch.cuda.current_stream(device).cuda_stream
            m.run_plan(plan, arg_pointers, out_pointers, stream)
    else:
        m.run_plan(plan, arg_pointers, out_pointers)
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
    # A result the loss does not use, and every saved tensor, gets None for its gradient,
    # not the zeros autograd would allocate (and fill) for each: the saved gates are the
    # size of the sequence. _gradients makes the zeros the backward function needs.
    ctx.set_materialize_grads(False)


def _gradients(ctx, grads):
    """The gradient of each argument (None where the backward function gives none), from
    `grads`: one per result first (None for a result that got none), then any others."""
    info = _training_info(ctx.library, ctx.function)
    saved = ctx.saved_tensors
    args, outs = saved[:ctx.num_args], saved[ctx.num_args:]
    num_results = len(outs) - info.num_saved
    grad_results = [torch.zeros_like(o) if g is None else g.contiguous()
                    for g, o in zip(grads[:num_results], outs[:num_results])]
    backward_args = [*args, *outs, *grad_results]
    # Under create_graph the backward goes through rnn::run, whose missing autograd formula
    # refuses a backward of the backward; traced, through rnn::run as well.
    if not torch.is_grad_enabled() and not torch.compiler.is_compiling() and \
            _untraced(backward_args):
        grads_out = _call(ctx.library, info.backward_function, backward_args)
    else:
        grads_out = run(ctx.library, info.backward_function, backward_args)
    by_arg = [None] * ctx.num_args
    for i, g in zip(info.gradient_args, grads_out):
        by_arg[i] = g
    return by_arg


def _backward(ctx, grads):
    return None, None, _gradients(ctx, grads)


train.register_autograd(_backward, setup_context=_setup_context)


def num_results(library, function):
    """How many results `function` returns (train returns these, then the saved tensors)."""
    return len(model(library).symbolic_signature(function)[1])


# -- calls that skip the dispatcher ---------------------------------------------------------

_PLAIN_TENSORS = (torch.Tensor, torch.nn.Parameter)


def _tracing_probes():
    """What _untraced asks torch: private functions (torch 2.x has them all). Where one is
    missing, None: every call then goes through the custom ops, which are always right."""
    try:
        from torch.utils._device import DeviceContext
        return (torch._C._len_torch_dispatch_stack, torch._C._are_functorch_transforms_active,
                torch._C._get_tracing_state, torch._C._is_torch_function_mode_enabled,
                torch.overrides._get_current_function_mode_stack, DeviceContext)
    except (ImportError, AttributeError):
        return None


_PROBES = _tracing_probes()


def _untraced(args):
    """Whether a call on `args` may skip the custom ops: nothing that sees operators
    (dispatch modes: fake, functional, proxy, ...; function modes other than torch.device's;
    functorch transforms; torch.jit.trace) is active, and `args` are plain tensors (not
    FakeTensors or other subclasses). The caller checks torch.compiler.is_compiling() first,
    so that Dynamo never traces this."""
    if _PROBES is None:
        return False
    (dispatch_stack, functorch_active, tracing_state, function_mode_enabled, function_modes,
     device_context) = _PROBES
    if dispatch_stack() or functorch_active() or tracing_state() is not None:
        return False
    if function_mode_enabled() and not all(isinstance(m, device_context)
                                           for m in function_modes()):
        return False
    return all(type(a) in _PLAIN_TENSORS for a in args)


class _Train(torch.autograd.Function):
    """rnn::train and its autograd formula as an autograd.Function over the arguments,
    for calls that skip the dispatcher (train_results). Its outputs are the results only:
    the saved tensors are saved, not returned, so autograd tracks nothing for them."""

    @staticmethod
    def forward(ctx, library, function, *args):
        info = _training_info(library, function)
        outs = _call(library, info.train_function, list(args))
        num_results = len(outs) - info.num_saved
        ctx.library, ctx.function, ctx.num_args = library, function, len(args)
        ctx.save_for_backward(*args, *outs)
        ctx.set_materialize_grads(False)  # as _setup_context
        return tuple(outs[:num_results])

    @staticmethod
    def backward(ctx, *grads):
        return None, None, *_gradients(ctx, grads)


def train_results(library, function, args):
    """The results of `function` (not its saved tensors), recording its derived backward
    for autograd: rnn::train, or _Train where nothing traces the call."""
    if not torch.compiler.is_compiling() and _untraced(args):
        return _Train.apply(library, function, *args)
    return train(library, function, args)[:num_results(library, function)]


def run_results(library, function, args):
    """The results of `function`, recording nothing for autograd: rnn::run, or the call
    itself where nothing traces it."""
    if not torch.compiler.is_compiling() and _untraced(args):
        return _call(library, function, args)
    return run(library, function, args)
