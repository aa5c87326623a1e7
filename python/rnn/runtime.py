"""ctypes binding of the rnn runtime's C ABI (include/rnn/Runtime/rnn_runtime.h).

`compile_mlir` runs `rnn-compile` on MLIR text or a .mlir file; `Model` loads the
shared library it makes and calls its functions on numpy arrays. The runtime
checks every call (counts, dtypes, ranks, sizes) and errors come back as
`RNNError`, with the runtime's status code, its name and its message.

Where things are found:
  * rnn-compile: env RNN_COMPILE, else <build>/bin/rnn-compile;
  * librnn_runtime.so: env RNN_RUNTIME_LIB, else <build>/lib/librnn_runtime.so;
where <build> is env RNN_BUILD_DIR (as scripts/build.sh takes it), else <repo>/build, and
<repo> is two levels above this file's directory (python/rnn/ -> repo).
"""

import ctypes
import os
import subprocess
import tempfile
import threading
from array import array
from pathlib import Path
from typing import NamedTuple, Tuple

import numpy as np

__all__ = ["Model", "RNNError", "CompileError", "compile_mlir", "TrainingInfo",
           "RnnTensor", "CallPlan", "load_runtime", "MAX_RANK"]

REPO_ROOT = Path(__file__).resolve().parents[2]

MAX_RANK = 8  # RNN_MAX_RANK

# rnn_status
RNN_OK = 0

# rnn_dtype values and their names (the manifest's spelling).
DTYPE_NAMES = {0: "f32", 1: "f64", 2: "bf16", 3: "f16", 4: "i32", 5: "i64"}
DTYPE_CODES = {name: code for code, name in DTYPE_NAMES.items()}
# numpy dtypes of the rnn dtypes numpy has (bf16 has none).
_NUMPY_DTYPES = {
    "f32": np.dtype(np.float32),
    "f64": np.dtype(np.float64),
    "f16": np.dtype(np.float16),
    "i32": np.dtype(np.int32),
    "i64": np.dtype(np.int64),
}
# A dtype code outside rnn_dtype, passed for numpy dtypes the ABI has no code
# for, so that the runtime reports them as RNN_ERROR_DTYPE_MISMATCH.
_UNKNOWN_DTYPE_CODE = 0x7FFF


class RNNError(Exception):
    """A failed runtime call: `status` (int), `status_name`, `message`."""

    def __init__(self, status, status_name, message):
        self.status = int(status)
        self.status_name = status_name
        self.message = message
        super().__init__(status, status_name, message)

    def __str__(self):
        return f"{self.status_name}: {self.message}"


class CompileError(Exception):
    """rnn-compile failed (or could not be found); `stderr` holds its output."""

    def __init__(self, message, stderr="", returncode=None, command=None):
        self.stderr = stderr
        self.returncode = returncode
        self.command = command
        super().__init__(message)


class _RnnTrainingInfo(ctypes.Structure):
    _fields_ = [("train_function", ctypes.c_char_p), ("backward_function", ctypes.c_char_p),
                ("num_saved", ctypes.c_int32), ("num_gradients", ctypes.c_int32),
                ("gradient_args", ctypes.POINTER(ctypes.c_int32))]


class TrainingInfo(NamedTuple):
    """How a function compiled with --training is trained (rnn_model_training_info)."""
    train_function: str          # same arguments; returns the results, then the saved tensors
    backward_function: str       # arguments, results, saved, result gradients -> gradients
    num_saved: int
    gradient_args: Tuple[int, ...]  # the argument of each gradient the backward returns


class RnnTensor(ctypes.Structure):
    """struct rnn_tensor."""

    _fields_ = [
        ("data", ctypes.c_void_p),
        ("dtype", ctypes.c_int),  # rnn_dtype, a C enum
        ("rank", ctypes.c_int32),
        ("shape", ctypes.c_int64 * MAX_RANK),
    ]


_runtime = None
_runtime_lock = threading.Lock()


def _build_dir():
    """$RNN_BUILD_DIR (as the scripts take it), else <repo>/build."""
    env = os.environ.get("RNN_BUILD_DIR")
    return Path(env).absolute() if env else REPO_ROOT / "build"


def _runtime_path():
    env = os.environ.get("RNN_RUNTIME_LIB")
    if env:
        return env
    return str(_build_dir() / "lib" / "librnn_runtime.so")


def load_runtime():
    """The librnn_runtime ctypes.CDLL (loaded once, with its prototypes set)."""
    global _runtime
    with _runtime_lock:
        if _runtime is not None:
            return _runtime
        path = _runtime_path()
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            raise OSError(f"cannot load the rnn runtime {path!r} (set RNN_RUNTIME_LIB): {e}") from e
        vp, cp, i32 = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int32
        status = ctypes.c_int
        tensor_p = ctypes.POINTER(RnnTensor)
        protos = {
            "rnn_model_load": (status, [cp, ctypes.POINTER(vp)]),
            "rnn_model_unload": (None, [vp]),
            "rnn_model_num_functions": (i32, [vp]),
            "rnn_model_function_name": (cp, [vp, i32]),
            "rnn_model_signature": (status, [vp, cp, ctypes.POINTER(i32), ctypes.POINTER(i32)]),
            "rnn_model_arg_info": (status, [vp, cp, i32, tensor_p]),
            "rnn_model_result_info": (status, [vp, cp, i32, tensor_p]),
            "rnn_model_result_shapes": (status, [vp, cp, tensor_p, i32, tensor_p, i32]),
            "rnn_model_run": (status, [vp, cp, tensor_p, i32, tensor_p, i32, vp]),
            "rnn_model_training_info": (status, [vp, cp, ctypes.POINTER(_RnnTrainingInfo)]),
            "rnn_last_error": (cp, []),
            "rnn_status_name": (cp, [status]),
        }
        for fname, (restype, argtypes) in protos.items():
            fn = getattr(lib, fname)
            fn.restype = restype
            fn.argtypes = argtypes
        _runtime = lib
        return lib


def _decode(b):
    return b.decode("utf-8", "replace") if b is not None else ""


def _error(lib, status):
    return RNNError(status, _decode(lib.rnn_status_name(status)), _decode(lib.rnn_last_error()))


def _check(lib, status):
    if status != RNN_OK:
        raise _error(lib, status)


def _numpy_dtype(name):
    if name == "bf16":
        raise TypeError("bf16 tensors are not supported: numpy has no bfloat16 dtype")
    try:
        return _NUMPY_DTYPES[name]
    except KeyError:
        raise TypeError(f"unknown rnn dtype {name!r}") from None


def _dtype_code(dtype):
    for name, npdt in _NUMPY_DTYPES.items():
        if dtype == npdt:
            return DTYPE_CODES[name]
    return _UNKNOWN_DTYPE_CODE


def _tensor_info(t):
    """(dtype_str, shape_tuple) of a filled rnn_tensor; -1 sizes read as None."""
    rank = int(t.rank)
    shape = tuple(None if s < 0 else int(s) for s in t.shape[: max(0, min(rank, MAX_RANK))])
    return DTYPE_NAMES.get(int(t.dtype), f"<dtype {int(t.dtype)}>"), shape


def _as_arrays(arrays):
    # C-contiguous, dtype kept; order='C' (unlike np.ascontiguousarray) keeps 0-d arrays 0-d.
    return [np.asarray(a, order="C") for a in arrays]


def _arg_tensors(arrays, name="?"):
    tensors = (RnnTensor * max(1, len(arrays)))()
    for i, (t, a) in enumerate(zip(tensors, arrays)):
        t.data = a.ctypes.data if a.size else None
        t.dtype = _dtype_code(a.dtype)
        if t.dtype == _UNKNOWN_DTYPE_CODE and a.dtype.kind not in "fiub":
            raise TypeError(f"{name}: argument #{i} has numpy dtype {a.dtype}, which no "
                            f"model takes (the runtime's dtypes: "
                            f"{', '.join(str(d) for d in _NUMPY_DTYPES.values())}, bf16)")
        t.rank = a.ndim
        for d, s in enumerate(a.shape[:MAX_RANK]):
            t.shape[d] = s
    return tensors


class Model:
    """A model compiled by rnn-compile, loaded through librnn_runtime."""

    def __init__(self, path):
        self._handle = None
        self._lib = load_runtime()
        self.path = os.fspath(path)
        handle = ctypes.c_void_p()
        _check(self._lib, self._lib.rnn_model_load(self.path.encode(), ctypes.byref(handle)))
        self._handle = handle
        n = self._lib.rnn_model_num_functions(handle)
        self.functions = [_decode(self._lib.rnn_model_function_name(handle, i)) for i in range(n)]
        self._signatures = {}

    # -- lifetime --------------------------------------------------------------------------

    def close(self):
        handle, self._handle = getattr(self, "_handle", None), None
        if handle is not None:
            lib = getattr(self, "_lib", None)
            if lib is not None:
                lib.rnn_model_unload(handle)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    @property
    def handle(self):
        """The rnn_model* (a ctypes.c_void_p), for calling the C API directly; None once closed."""
        return self._handle

    def _live(self):
        if self._handle is None:
            raise ValueError(f"model {self.path!r} is closed")
        return self._handle

    def __repr__(self):
        state = "closed" if self._handle is None else ", ".join(self.functions)
        return f"<rnn.Model {self.path!r}: {state}>"

    # -- signatures ------------------------------------------------------------------------

    def _counts(self, name):
        handle = self._live()
        nargs, nres = ctypes.c_int32(), ctypes.c_int32()
        _check(self._lib, self._lib.rnn_model_signature(
            handle, name.encode(), ctypes.byref(nargs), ctypes.byref(nres)))
        return nargs.value, nres.value

    def signature(self, name):
        """(args, results) of function `name`: lists of (dtype_str, shape_tuple), None = dynamic."""
        if name in self._signatures:
            self._live()
            return self._signatures[name]
        handle = self._live()
        nargs, nres = self._counts(name)
        info = RnnTensor()
        args, results = [], []
        for i in range(nargs):
            _check(self._lib, self._lib.rnn_model_arg_info(handle, name.encode(), i, ctypes.byref(info)))
            args.append(_tensor_info(info))
        for i in range(nres):
            _check(self._lib, self._lib.rnn_model_result_info(handle, name.encode(), i, ctypes.byref(info)))
            results.append(_tensor_info(info))
        sig = (args, results)
        self._signatures[name] = sig
        return sig

    def symbolic_signature(self, name):
        """(args, results) of function `name` as the manifest writes them: lists of
        (dtype_str, shape) where a dynamic size is the string "s<k>" of its symbol (sizes
        named by one symbol are equal; every symbol of a result appears in some argument)."""
        if not hasattr(self, "_manifest"):
            self._manifest = _parse_manifest(_manifest_text(self.path))
        self._live()
        if name not in self._manifest:
            raise RNNError(4, "RNN_ERROR_NOT_FOUND",
                           f"model {self.path!r} has no function {name!r}")
        return self._manifest[name]

    def _num_results(self, name):
        return self._counts(name)[1]

    def _result_tensors(self, name, arrays):
        handle = self._live()
        num_results = self._num_results(name)
        args = _arg_tensors(arrays, name)
        results = (RnnTensor * max(1, num_results))()
        _check(self._lib, self._lib.rnn_model_result_shapes(
            handle, name.encode(), args, len(arrays), results, num_results))
        return args, results, num_results

    def result_shapes(self, name, *arrays):
        """The results of `name` for these arguments: a list of (dtype_str, shape_tuple)."""
        arrays = _as_arrays(arrays)
        _, results, n = self._result_tensors(name, arrays)
        return [_tensor_info(results[i]) for i in range(n)]

    # -- running ---------------------------------------------------------------------------

    def __call__(self, name, *arrays):
        """Runs function `name` on `arrays`; returns its results as a tuple of numpy arrays."""
        arrays = _as_arrays(arrays)
        args, results, n = self._result_tensors(name, arrays)
        outs = []
        for i in range(n):
            dtype, shape = _tensor_info(results[i])
            out = np.empty(shape, dtype=_numpy_dtype(dtype))
            results[i].data = out.ctypes.data if out.size else None
            outs.append(out)
        _check(self._lib, self._lib.rnn_model_run(
            self._handle, name.encode(), args, len(arrays), results, n, None))
        return tuple(outs)


    # -- training (docs/training.md) -------------------------------------------------------

    def training_info(self, name):
        """The TrainingInfo of function `name`; raises RNNError (RNN_ERROR_NOT_FOUND) when the
        model was compiled without --training."""
        info = _RnnTrainingInfo()
        _check(self._lib, self._lib.rnn_model_training_info(
            self._live(), name.encode(), ctypes.byref(info)))
        return TrainingInfo(_decode(info.train_function), _decode(info.backward_function),
                            info.num_saved,
                            tuple(info.gradient_args[i] for i in range(info.num_gradients)))

    def train_forward(self, name, *arrays):
        """Runs the training forward of `name`: returns (results, saved), the results being
        those `name` returns and `saved` what `backward` needs (tuples of numpy arrays)."""
        info = self.training_info(name)
        outs = self(info.train_function, *arrays)
        n = len(outs) - info.num_saved
        return outs[:n], outs[n:]

    def backward(self, name, args, results, saved, grad_results):
        """Gradients of `name`'s arguments, given its arguments `args`, the `results` and
        `saved` tensors of `train_forward(name, *args)`, and one gradient per result (the
        gradient of the loss with respect to that result; zeros for a result the loss does not
        use). Returns a tuple with one entry per argument: its gradient, or None for an
        argument without one (integer arguments such as sequence lengths)."""
        info = self.training_info(name)
        args, results, saved = tuple(args), tuple(results), tuple(saved)
        grad_results = tuple(grad_results)
        if len(saved) != info.num_saved:
            raise ValueError(f"{name}: backward takes the {info.num_saved} saved tensors of "
                             f"train_forward, got {len(saved)}")
        grads = self(info.backward_function, *args, *results, *saved, *grad_results)
        by_arg = [None] * len(args)
        for arg, grad in zip(info.gradient_args, grads):
            by_arg[arg] = grad
        return tuple(by_arg)

    # -- device tensors (CUDA models) ------------------------------------------------------

    def result_descriptors(self, name, args):
        """The results of `name` for arguments given as descriptors (data pointer, dtype name,
        shape): a list of (dtype_str, shape_tuple). No data is read (device pointers are fine)."""
        descs = _desc_tensors(args)
        n = self._num_results(name)
        results = (RnnTensor * max(1, n))()
        _check(self._lib, self._lib.rnn_model_result_shapes(
            self._live(), name.encode(), descs, len(args), results, n))
        return [_tensor_info(results[i]) for i in range(n)]

    def plan(self, name, args):
        """A CallPlan of `name` for arguments of the dtypes and shapes of `args` (descriptors
        as result_descriptors takes them, checked as it checks them): the results' dtypes and
        shapes, for run_plan to run calls on arguments of those dtypes and shapes."""
        return CallPlan(name, _desc_tensors(args), len(args), self.result_descriptors(name, args))

    def run_plan(self, plan, arg_pointers, result_pointers, stream=None):
        """run_descriptors for arguments of the plan's dtypes and shapes and results of its
        `results`, given only their data pointers (0 for a tensor without elements). The
        runtime checks the call as it checks any (a wrong plan fails as a wrong descriptor
        does)."""
        _check(self._lib, self._lib.rnn_model_run(
            self._live(), plan.encoded_name, plan.arg_tensors(arg_pointers), plan.num_args,
            plan.result_tensors(result_pointers), plan.num_results,
            ctypes.c_void_p(stream) if stream else None))

    def run_descriptors(self, name, args, results, stream=None):
        """Runs `name` on descriptors (data pointer, dtype name, shape) for the arguments and
        the results (already allocated), on `stream` (an int CUstream / cudaStream_t, or None).
        For CUDA models the pointers are device pointers and the call only queues the work."""
        a = _desc_tensors(args)
        r = _desc_tensors(results)
        _check(self._lib, self._lib.rnn_model_run(
            self._live(), name.encode(), a, len(args), r, len(results),
            ctypes.c_void_p(stream) if stream else None))


# A data pointer in every _TENSOR_WORDS-th 64-bit word of an rnn_tensor array, from word 0.
_TENSOR_WORDS = ctypes.sizeof(RnnTensor) // 8
assert RnnTensor.data.offset == 0 and ctypes.sizeof(RnnTensor) % 8 == 0


class CallPlan:
    """What calls of one function on arguments of fixed dtypes and shapes share (Model.plan):
    `results`, the results' (dtype_str, shape_tuple), and the rnn_tensor arrays of the
    arguments and results but for their data pointers. Filling in the pointers costs a copy
    of bytes where building the arrays field by field through ctypes costs microseconds
    per tensor: this is the per-call path of the torch ops."""

    __slots__ = ("name", "encoded_name", "num_args", "num_results", "results", "_arg_type",
                 "_arg_bytes", "_result_type", "_result_bytes")

    def __init__(self, name, arg_tensors, num_args, results):
        self.name, self.encoded_name = name, name.encode()
        self.num_args, self.num_results = num_args, len(results)
        self.results = results
        self._arg_type, self._arg_bytes = _template(arg_tensors)
        self._result_type, self._result_bytes = _template(
            _desc_tensors([(0, dtype, shape) for dtype, shape in results]))

    def arg_tensors(self, pointers):
        return _filled(self._arg_type, self._arg_bytes, pointers)

    def result_tensors(self, pointers):
        return _filled(self._result_type, self._result_bytes, pointers)


def _template(tensors):
    for t in tensors:
        t.data = None
    return type(tensors), bytes(tensors)


def _filled(array_type, template, pointers):
    buf = bytearray(template)
    if pointers:
        memoryview(buf).cast("Q")[::_TENSOR_WORDS] = array("Q", pointers)
    return array_type.from_buffer(buf)


def _manifest_text(path):
    """The `rnn_manifest` string of a model library (docs/runtime.md)."""
    lib = ctypes.CDLL(os.fspath(path))
    text = ctypes.cast(ctypes.addressof(ctypes.c_char.in_dll(lib, "rnn_manifest")),
                       ctypes.c_char_p).value
    return text.decode()


def _parse_manifest(text):
    """{function: (args, results)} from a manifest the runtime has already validated."""
    functions, current = {}, None
    for line in text.splitlines():
        tok = line.split()
        if not tok:
            continue
        if tok[0] == "function":
            current = ([], [])
            functions[tok[1]] = current
        elif tok[0] in ("arg", "result") and current is not None:
            rank = int(tok[3])
            dims = tuple(d if d.startswith("s") else int(d) for d in tok[4:4 + rank])
            current[0 if tok[0] == "arg" else 1].append((tok[2], dims))
    return functions


def _desc_tensors(descs):
    tensors = (RnnTensor * max(1, len(descs)))()
    for t, (ptr, dtype, shape) in zip(tensors, descs):
        t.data = ptr or None
        t.dtype = DTYPE_CODES.get(dtype, _UNKNOWN_DTYPE_CODE)
        t.rank = len(shape)
        for d, s in enumerate(tuple(shape)[:MAX_RANK]):
            t.shape[d] = s
    return tensors


def _compiler_path():
    env = os.environ.get("RNN_COMPILE")
    path = env or str(_build_dir() / "bin" / "rnn-compile")
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        where = (f"{path!r} (from RNN_COMPILE)" if env else
                 f"{path!r} (set RNN_COMPILE, or RNN_BUILD_DIR, to override)")
        raise CompileError(f"rnn-compile not found: looked for {where}")
    return path


def _is_path(source):
    if isinstance(source, os.PathLike):
        return True
    if isinstance(source, bytes):
        source = source.decode()
    return "\n" not in source and (source.endswith(".mlir") or os.path.isfile(source))


def compile_mlir(source, output, optimize=True, extra_args=(), training=False, save=None):
    """Compiles `source` (MLIR text, or the path of a .mlir file) into the shared library `output`.

    With `training`, every public function also gets its training forward and backward
    (rnn-compile --training; `save` picks what the forward saves: "gates", the default, or
    "states"); see Model.train_forward and Model.backward. Returns the output path (str).
    Raises CompileError with rnn-compile's stderr on failure.
    """
    compiler = _compiler_path()
    output = os.fspath(output)
    with tempfile.TemporaryDirectory(prefix="rnn-compile-") as tmp:
        if _is_path(source):
            input_path = os.fspath(source)
        else:
            text = source.decode() if isinstance(source, bytes) else source
            input_path = os.path.join(tmp, "input.mlir")
            with open(input_path, "w") as f:
                f.write(text)
        cmd = [compiler, input_path, "-o", output]
        if not optimize:
            cmd.append("--no-optimize")
        if training:
            cmd.append("--training")
        if save is not None:
            if not training:
                raise ValueError("compile_mlir: save= only applies with training=True")
            cmd.append(f"--save={save}")
        cmd.extend(str(a) for a in extra_args)
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              errors="replace")
    stderr = proc.stderr
    if proc.returncode != 0:
        how = (f"killed by signal {-proc.returncode}" if proc.returncode < 0
               else f"exit status {proc.returncode}")
        raise CompileError(f"rnn-compile failed ({how}) on {input_path}:\n{stderr.strip()}",
                           stderr=stderr, returncode=proc.returncode, command=cmd)
    if not os.path.isfile(output):
        raise CompileError(f"rnn-compile succeeded but wrote no {output!r}", stderr=stderr,
                           returncode=proc.returncode, command=cmd)
    return output


def explain_mlir(source, optimize=True, extra_args=(), training=False, save=None):
    """What `source` (MLIR text or a .mlir path) launches, and why: rnn-compile --explain's
    report, for every public function, of the GEMMs and kernels before, in (per step) and
    after each step loop, each with the rewrite that put it there. The arguments are those of
    compile_mlir. Raises CompileError with rnn-compile's stderr on failure."""
    compiler = _compiler_path()
    with tempfile.TemporaryDirectory(prefix="rnn-explain-") as tmp:
        if _is_path(source):
            input_path = os.fspath(source)
        else:
            text = source.decode() if isinstance(source, bytes) else source
            input_path = os.path.join(tmp, "input.mlir")
            with open(input_path, "w") as f:
                f.write(text)
        cmd = [compiler, input_path, "--explain"]
        if not optimize:
            cmd.append("--no-optimize")
        if training:
            cmd.append("--training")
        if save is not None:
            cmd.append(f"--save={save}")
        cmd.extend(str(a) for a in extra_args)
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              errors="replace")
    if proc.returncode != 0:
        raise CompileError(f"rnn-compile --explain failed on {input_path}:\n"
                           f"{proc.stderr.strip()}", stderr=proc.stderr,
                           returncode=proc.returncode, command=cmd)
    return proc.stdout


def load_runtime_from(path):
    """Loads librnn_runtime from `path`, unless a runtime is loaded already (then that one is
    kept: a process has one runtime). Returns the ctypes.CDLL. Used by rnn.load() to run a
    saved model with the copy of the runtime saved beside it."""
    if _runtime is not None:
        return _runtime
    saved = os.environ.get("RNN_RUNTIME_LIB")
    os.environ["RNN_RUNTIME_LIB"] = os.fspath(path)
    try:
        return load_runtime()
    finally:
        if saved is None:
            os.environ.pop("RNN_RUNTIME_LIB", None)
        else:
            os.environ["RNN_RUNTIME_LIB"] = saved


def loaded_runtime_path():
    """The path librnn_runtime was loaded from, or None while it is not loaded."""
    return None if _runtime is None else _runtime._name


def compiler_path():
    """The rnn-compile that compile_mlir would run (RNN_COMPILE or <repo>/build/bin); raises
    CompileError when there is none."""
    return _compiler_path()


def runtime_path():
    """The librnn_runtime.so that load_runtime would load (RNN_RUNTIME_LIB or <repo>/build/lib)."""
    return _runtime_path()
