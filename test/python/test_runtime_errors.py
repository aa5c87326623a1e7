"""Every error the runtime reports for a real compiled model (examples/gru.mlir), seen through
the Python binding (and through the C API with ctypes where the binding cannot produce the
call, e.g. result buffers it allocates itself), plus rnn-compile's errors as CompileError.

The model is compiled with --no-optimize: these tests are about the runtime's checks, which
read the model's manifest; the optimised build is covered by test_examples.py."""

import ctypes
import os
import subprocess
import sys

import numpy as np
import pytest

import rnn
from rnn import runtime
from conftest import EXAMPLES_DIR, REPO

FUNC = "gru_seq"
T, B, I, H = 4, 3, 10, 20


@pytest.fixture(scope="module")
def model(load):
    return load(EXAMPLES_DIR / "gru.mlir", False)


@pytest.fixture
def args():
    rng = np.random.default_rng(0)
    f = lambda *s: rng.standard_normal(s).astype(np.float32)
    return [f(T, B, I), f(B, H), f(3 * H, I), f(3 * H, H), f(3 * H), f(3 * H)]


def expect(fn, status_name, *fragments):
    with pytest.raises(rnn.RNNError) as info:
        fn()
    e = info.value
    assert e.status_name == status_name, str(e)
    assert e.status == STATUS[status_name]
    for frag in fragments:
        assert frag in e.message, f"{frag!r} not in {e.message!r}"
    assert e.status_name in str(e) and e.message in str(e)
    return e


STATUS = {
    "RNN_ERROR_INVALID_ARGUMENT": 1,
    "RNN_ERROR_SHAPE_MISMATCH": 2,
    "RNN_ERROR_DTYPE_MISMATCH": 3,
    "RNN_ERROR_NOT_FOUND": 4,
    "RNN_ERROR_LOAD_FAILED": 5,
    "RNN_ERROR_BAD_MODEL": 6,
    "RNN_ERROR_UNSUPPORTED": 7,
    "RNN_ERROR_OUT_OF_MEMORY": 9,
}


# -- the binding's happy path ------------------------------------------------------------------

def test_binding_basics(model, args):
    assert model.functions == [FUNC]
    sig_args, sig_results = model.signature(FUNC)
    assert sig_args[0] == ("f32", (None, None, I)) and sig_args[1] == ("f32", (None, H))
    assert sig_results == [("f32", (None, None, H)), ("f32", (None, H))]
    assert model.result_shapes(FUNC, *args) == [("f32", (T, B, H)), ("f32", (B, H))]
    ys, hT = model(FUNC, *args)
    assert ys.shape == (T, B, H) and hT.shape == (B, H) and ys.dtype == np.float32
    np.testing.assert_array_equal(ys[-1], hT)
    # Non-contiguous inputs are made contiguous (dtype kept) and give the same results.
    xs_f = np.asfortranarray(args[0])
    ys2, _ = model(FUNC, xs_f, *args[1:])
    np.testing.assert_array_equal(ys, ys2)


def test_close_and_context_manager(compiled, args):
    path = compiled(EXAMPLES_DIR / "gru.mlir", False)
    with rnn.Model(path) as m:
        assert m.handle is not None
        m(FUNC, *args)
    assert m.handle is None
    m.close()  # twice is fine
    with pytest.raises(ValueError, match="closed"):
        m(FUNC, *args)
    m2 = rnn.Model(path)
    del m2  # unloads in __del__


# -- call checks -------------------------------------------------------------------------------

def test_unknown_function(model, args):
    expect(lambda: model("lstm_seq", *args), "RNN_ERROR_NOT_FOUND", "'lstm_seq'", FUNC)
    expect(lambda: model.signature("nope"), "RNN_ERROR_NOT_FOUND", "'nope'", FUNC)


def test_wrong_arg_count(model, args):
    expect(lambda: model(FUNC, *args[:-1]), "RNN_ERROR_INVALID_ARGUMENT",
           FUNC, "expected 6 arguments, got 5")
    expect(lambda: model(FUNC, *args, args[-1]), "RNN_ERROR_INVALID_ARGUMENT",
           FUNC, "expected 6 arguments, got 7")
    expect(lambda: model.result_shapes(FUNC, *args[:2]), "RNN_ERROR_INVALID_ARGUMENT",
           FUNC, "got 2")


def test_wrong_dtype(model, args):
    args[0] = args[0].astype(np.float64)
    expect(lambda: model(FUNC, *args), "RNN_ERROR_DTYPE_MISMATCH",
           FUNC, "arg #0", "f64", "f32")


def test_dtype_numpy_has_but_abi_does_not(model, args):
    args[2] = args[2].astype(np.int8)
    expect(lambda: model(FUNC, *args), "RNN_ERROR_DTYPE_MISMATCH", FUNC, "arg #2", "f32")


def test_wrong_rank(model, args):
    args[0] = args[0][0]  # [B, I] instead of [T, B, I]
    expect(lambda: model(FUNC, *args), "RNN_ERROR_SHAPE_MISMATCH",
           FUNC, "arg #0", "rank 2", "rank 3")


def test_rank_above_max(model, args):
    args[4] = np.zeros((1,) * 9, np.float32)
    expect(lambda: model(FUNC, *args), "RNN_ERROR_SHAPE_MISMATCH", FUNC, "arg #4", "rank 9")


def test_wrong_static_size(model, args):
    args[2] = np.zeros((3 * H, I + 1), np.float32)
    expect(lambda: model(FUNC, *args), "RNN_ERROR_SHAPE_MISMATCH",
           FUNC, "arg #2", "[60, 11]", "[60, 10]")
    args[2] = np.zeros((3 * H, I), np.float32)
    args[1] = np.zeros((B, H + 1), np.float32)
    expect(lambda: model(FUNC, *args), "RNN_ERROR_SHAPE_MISMATCH", FUNC, "arg #1", "21")


def test_batch_mismatch(model, args):
    args[1] = np.zeros((B + 2, H), np.float32)
    e = expect(lambda: model(FUNC, *args), "RNN_ERROR_SHAPE_MISMATCH",
               FUNC, "arg #1", f"[{B + 2}, 20]", f"dim 0 is {B + 2}, not {B}", "arg #0 dim 1")
    # result_shapes checks the arguments the same way.
    expect(lambda: model.result_shapes(FUNC, *args), "RNN_ERROR_SHAPE_MISMATCH",
           FUNC, "arg #1")
    assert e.status == 2


def test_error_does_not_poison_later_calls(model, args):
    bad = list(args)
    bad[0] = bad[0].astype(np.float64)
    with pytest.raises(rnn.RNNError):
        model(FUNC, *bad)
    ys, hT = model(FUNC, *args)
    assert ys.shape == (T, B, H)


# -- result buffers, through the C API directly -----------------------------------------------

def c_tensors(arrays, n=None):
    n = len(arrays) if n is None else n
    ts = (runtime.RnnTensor * max(1, n))()
    for t, a in zip(ts, arrays):
        t.data = a.ctypes.data
        t.dtype = {np.dtype(np.float32): 0, np.dtype(np.float64): 1}[a.dtype]
        t.rank = a.ndim
        for d, s in enumerate(a.shape):
            t.shape[d] = s
    return ts


def c_run(model, arrays, results, name=FUNC, stream=None, num_results=None):
    lib = runtime.load_runtime()
    a = c_tensors(arrays)
    r = c_tensors(results)
    n = len(results) if num_results is None else num_results
    status = lib.rnn_model_run(model.handle, name.encode(), a, len(arrays), r, n, stream)
    if status == 0:
        return
    raise rnn.RNNError(status, lib.rnn_status_name(status).decode(),
                       lib.rnn_last_error().decode())


def test_c_api_happy_path(model, args):
    ys = np.empty((T, B, H), np.float32)
    hT = np.empty((B, H), np.float32)
    c_run(model, args, [ys, hT])
    want = model(FUNC, *args)
    np.testing.assert_array_equal(ys, want[0])
    np.testing.assert_array_equal(hT, want[1])


def test_result_wrong_shape(model, args):
    ys = np.empty((T, B, H), np.float32)
    expect(lambda: c_run(model, args, [ys, np.empty((B + 1, H), np.float32)]),
           "RNN_ERROR_SHAPE_MISMATCH", FUNC, "result #1", f"dim 0 is {B + 1}, not {B}")
    expect(lambda: c_run(model, args, [np.empty((T + 1, B, H), np.float32),
                                       np.empty((B, H), np.float32)]),
           "RNN_ERROR_SHAPE_MISMATCH", FUNC, "result #0", f"[{T + 1}, {B}, 20]")
    expect(lambda: c_run(model, args, [np.empty((T, B, H + 1), np.float32),
                                       np.empty((B, H), np.float32)]),
           "RNN_ERROR_SHAPE_MISMATCH", FUNC, "result #0")


def test_result_wrong_rank_and_dtype(model, args):
    hT = np.empty((B, H), np.float32)
    expect(lambda: c_run(model, args, [np.empty((T * B, H), np.float32), hT]),
           "RNN_ERROR_SHAPE_MISMATCH", FUNC, "result #0", "rank 2")
    expect(lambda: c_run(model, args, [np.empty((T, B, H), np.float64), hT]),
           "RNN_ERROR_DTYPE_MISMATCH", FUNC, "result #0", "f64", "f32")


def test_result_count_and_null_data(model, args):
    ys = np.empty((T, B, H), np.float32)
    expect(lambda: c_run(model, args, [ys]), "RNN_ERROR_INVALID_ARGUMENT", FUNC, "1")
    lib = runtime.load_runtime()
    a = c_tensors(args)
    r = c_tensors([ys, np.empty((B, H), np.float32)])
    r[1].data = None
    status = lib.rnn_model_run(model.handle, FUNC.encode(), a, len(args), r, 2, None)
    assert lib.rnn_status_name(status).decode() == "RNN_ERROR_INVALID_ARGUMENT"
    assert "result #1" in lib.rnn_last_error().decode()
    # A null args array with a nonzero count.
    status = lib.rnn_model_run(model.handle, FUNC.encode(), None, len(args), r, 2, None)
    assert lib.rnn_status_name(status).decode() == "RNN_ERROR_INVALID_ARGUMENT"
    assert FUNC in lib.rnn_last_error().decode()


def test_stream_on_cpu_model(model, args):
    ys, hT = np.empty((T, B, H), np.float32), np.empty((B, H), np.float32)
    expect(lambda: c_run(model, args, [ys, hT], stream=ctypes.c_void_p(1)),
           "RNN_ERROR_UNSUPPORTED", FUNC)


def test_null_name_and_model(model, args):
    lib = runtime.load_runtime()
    a = c_tensors(args)
    r = c_tensors([np.empty((T, B, H), np.float32), np.empty((B, H), np.float32)])
    status = lib.rnn_model_run(model.handle, None, a, len(args), r, 2, None)
    assert lib.rnn_status_name(status).decode() == "RNN_ERROR_INVALID_ARGUMENT"
    status = lib.rnn_model_run(None, FUNC.encode(), a, len(args), r, 2, None)
    assert lib.rnn_status_name(status).decode() == "RNN_ERROR_INVALID_ARGUMENT"


# -- loading -----------------------------------------------------------------------------------

def test_load_missing_file(tmp_path):
    missing = tmp_path / "no_such_model.so"
    e = expect(lambda: rnn.Model(missing), "RNN_ERROR_LOAD_FAILED", str(missing))
    assert "No such file" in e.message


def test_load_non_model_library():
    lib_path = runtime._runtime_path()
    expect(lambda: rnn.Model(lib_path), "RNN_ERROR_BAD_MODEL", lib_path, "rnn_manifest")


def test_load_not_a_library(tmp_path):
    bogus = tmp_path / "bogus.so"
    bogus.write_text("not an ELF file\n")
    expect(lambda: rnn.Model(bogus), "RNN_ERROR_LOAD_FAILED", str(bogus))


@pytest.mark.parametrize("keep", ["4096", "half", "one byte short"])
def test_load_truncated_library(compiled, tmp_path, keep):
    """A model library cut short is refused before dlopen maps it (which faulted): the ELF
    header, program headers and every loaded segment must lie inside the file."""
    data = open(compiled(EXAMPLES_DIR / "gru.mlir"), "rb").read()
    n = {"4096": 4096, "half": len(data) // 2, "one byte short": len(data) - 1}[keep]
    cut = tmp_path / "cut.so"
    cut.write_bytes(data[:n])
    e = expect(lambda: rnn.Model(cut), "RNN_ERROR_BAD_MODEL", str(cut))
    assert "truncated" in e.message or "past the end" in e.message, e.message


def test_load_damaged_elf_header(compiled, tmp_path):
    data = bytearray(open(compiled(EXAMPLES_DIR / "gru.mlir"), "rb").read())
    data[18] ^= 0xFF  # e_machine
    bad = tmp_path / "other_machine.so"
    bad.write_bytes(bytes(data))
    expect(lambda: rnn.Model(bad), "RNN_ERROR_BAD_MODEL", "another architecture")


OUT_OF_MEMORY_SCRIPT = r"""
import ctypes, sys
import numpy as np
import rnn
model = rnn.Model(sys.argv[1])
# An Elman RNN with I = 1, H = 4096 over T = 2**26 steps of one row: its input projection
# [T*B, H] in float32 is 1 TiB, an allocation no machine here gives. The results' buffers
# are address space reserved without access (PROT_NONE): the call must fail before it
# writes them.
T, B, I, H = 2**26, 1, 1, 4096
x = np.ones((T, B, I), np.float32)
h0 = np.zeros((B, H), np.float32)
params = [np.zeros((H, I), np.float32), np.zeros((H, H), np.float32),
          np.zeros(H, np.float32), np.zeros(H, np.float32)]
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                      ctypes.c_int, ctypes.c_long]
size = T * B * H * 4 + (1 << 20)
MAP_PRIVATE, MAP_ANONYMOUS, MAP_NORESERVE, PROT_NONE = 0x02, 0x20, 0x4000, 0
reserved = libc.mmap(None, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                     -1, 0)
assert reserved not in (None, ctypes.c_void_p(-1).value), ctypes.get_errno()
args = [x, h0] + params
descs = [(a.ctypes.data, "f32", a.shape) for a in args]
results = [(reserved, "f32", (T, B, H)), (reserved + T * B * H * 4, "f32", (B, H))]
try:
    model.run_descriptors("forward", descs, results)
except rnn.RNNError as e:
    print(e.status_name, e.message)
    # The call freed what it had allocated and the model still runs.
    print(model("forward", x[:3], h0, *params)[0].shape)
"""


def test_out_of_memory_is_a_status(tmp_path):
    """A compiled CPU model whose allocation fails returns RNN_ERROR_OUT_OF_MEMORY (it used
    the null pointer and crashed); run in a subprocess, so that a crash fails this test and
    nothing else."""
    path = rnn.NumpyRNN(rnn.zoo.rnn_tanh, 1, 4096).library
    out = subprocess.run([sys.executable, "-c", OUT_OF_MEMORY_SCRIPT, path],
                         capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(REPO / "python")})
    assert out.returncode == 0, out.stderr
    assert "RNN_ERROR_OUT_OF_MEMORY forward: out of memory: an allocation of" in out.stdout, \
        out.stdout
    assert "(3, 1, 4096)" in out.stdout


# -- rnn-compile -------------------------------------------------------------------------------

VERIFIER_ERROR = """\
func.func @f(%a: tensor<2xf32>) -> tensor<3xf32> {
  return %a : tensor<2xf32>
}
"""


def test_compile_verifier_error_file(tmp_path):
    src = tmp_path / "bad.mlir"
    src.write_text(VERIFIER_ERROR)
    with pytest.raises(rnn.CompileError) as info:
        rnn.compile_mlir(src, tmp_path / "bad.so")
    e = info.value
    assert "doesn't match function result type" in e.stderr
    assert "bad.mlir:2:3: error:" in e.stderr
    assert "rnn-compile: error:" in e.stderr
    assert "doesn't match function result type" in str(e)
    assert not (tmp_path / "bad.so").exists()


def test_compile_verifier_error_text(tmp_path):
    with pytest.raises(rnn.CompileError) as info:
        rnn.compile_mlir(VERIFIER_ERROR, tmp_path / "bad.so", optimize=False)
    assert "doesn't match function result type" in info.value.stderr


def test_compile_rnn_verifier_error(tmp_path):
    """A verifier error of our dialect: a cell whose yield does not match its result type."""
    text = (EXAMPLES_DIR / "rnn_tanh.mlir").read_text().replace(
        "rnn.yield outputs(%h_new : tensor<?x20xf32>) states(%h_new : tensor<?x20xf32>)",
        "rnn.yield outputs(%s : tensor<?x20xf32>) states(%h_new, %h_new : tensor<?x20xf32>, tensor<?x20xf32>)")
    with pytest.raises(rnn.CompileError) as info:
        rnn.compile_mlir(text, tmp_path / "bad.so")
    assert "'rnn.yield' op yields 2 new states but cell @rnn_tanh carries 1" in info.value.stderr


def test_compile_missing_input(tmp_path):
    missing = tmp_path / "missing.mlir"
    with pytest.raises(rnn.CompileError) as info:
        rnn.compile_mlir(missing, tmp_path / "out.so")
    assert "rnn-compile: error: cannot open input file" in info.value.stderr
    assert str(missing) in info.value.stderr
    assert "No such file or directory" in info.value.stderr


def test_compile_text_and_no_optimize(tmp_path):
    text = (EXAMPLES_DIR / "indrnn.mlir").read_text()
    out = rnn.compile_mlir(text, tmp_path / "indrnn.so", optimize=False)
    assert out == str(tmp_path / "indrnn.so")
    with rnn.Model(out) as m:
        assert m.functions == ["indrnn_seq"]


def test_compiler_not_found(tmp_path, monkeypatch):
    monkeypatch.setenv("RNN_COMPILE", str(tmp_path / "no-rnn-compile"))
    with pytest.raises(rnn.CompileError) as info:
        rnn.compile_mlir(EXAMPLES_DIR / "gru.mlir", tmp_path / "gru.so")
    assert str(tmp_path / "no-rnn-compile") in str(info.value)


def test_default_tool_locations(monkeypatch):
    """With nothing set, the tools are looked for in <repo>/build (which need not exist:
    the suite may run on a build elsewhere, named by RNN_BUILD_DIR)."""
    monkeypatch.delenv("RNN_COMPILE", raising=False)
    monkeypatch.delenv("RNN_RUNTIME_LIB", raising=False)
    monkeypatch.delenv("RNN_BUILD_DIR", raising=False)
    assert runtime.REPO_ROOT == REPO
    compiler = str(REPO / "build" / "bin" / "rnn-compile")
    try:
        assert runtime._compiler_path() == compiler
    except rnn.CompileError as e:
        assert f"looked for {compiler!r}" in str(e), str(e)
    assert runtime._runtime_path() == str(REPO / "build" / "lib" / "librnn_runtime.so")


def test_results_must_not_overlap(model, args):
    """A call writes its results while it reads its arguments: a result that shares memory
    with an argument or another result is refused before anything runs."""
    ys = np.empty((T, B, H), np.float32)
    hT = np.empty((B, H), np.float32)
    h0 = args[1]
    expect(lambda: c_run(model, args, [ys, h0]),
           "RNN_ERROR_INVALID_ARGUMENT", FUNC, "result #1 shares memory with arg #1")
    expect(lambda: c_run(model, args, [ys, ys[1]]),
           "RNN_ERROR_INVALID_ARGUMENT", FUNC, "result #1 shares memory with result #0")
    before = h0.copy()
    c_run(model, args, [ys, hT])  # apart: fine, and the argument is untouched
    np.testing.assert_array_equal(h0, before)
