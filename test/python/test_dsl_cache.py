"""The compile cache (building the same model twice runs rnn-compile once) and the
ahead-of-time artifacts: model.save(dir) then rnn.load(dir) in a fresh process that has no
compiler (RNN_COMPILE points nowhere) and no repository (the package is copied elsewhere)."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from test_dsl_common import rand, randomize, rnn

import rnn.runtime as rt


@pytest.fixture
def count_compiles(monkeypatch, tmp_path):
    """A fresh cache dir, and a list that records every rnn-compile subprocess."""
    monkeypatch.setenv("RNN_CACHE_DIR", str(tmp_path / "cache"))
    calls = []
    real_run = rt.subprocess.run

    def run(cmd, *args, **kwargs):
        if "rnn-compile" in os.path.basename(str(cmd[0])):
            calls.append(cmd)
        return real_run(cmd, *args, **kwargs)

    monkeypatch.setattr(rt.subprocess, "run", run)
    return calls


def test_second_build_does_not_compile(count_compiles, tmp_path):
    a = rnn.NumpyRNN(rnn.zoo.indrnn, 6, 7)
    assert len(count_compiles) == 1 and not a.from_cache
    cached = sorted(p.name for p in (tmp_path / "cache").iterdir())
    assert [c.split(".")[1] for c in cached] == ["mlir", "sha256", "so"], cached
    assert (tmp_path / "cache" / cached[0]).read_text() == a.mlir
    mtime = os.stat(a.library).st_mtime_ns

    b = rnn.NumpyRNN(rnn.zoo.indrnn, 6, 7, seed=1)  # same IR: parameters are not part of it
    assert len(count_compiles) == 1, "the second build ran rnn-compile"
    assert b.from_cache and b.library == a.library
    assert os.stat(b.library).st_mtime_ns == mtime
    x = np.ones((3, 2, 6), np.float32)
    b(x)

    rnn.NumpyRNN(rnn.zoo.indrnn, 6, 7, optimize=False)  # other options: another entry
    rnn.NumpyRNN(rnn.zoo.indrnn, 6, 8)  # other IR
    assert len(count_compiles) == 3
    assert rnn.cache_dir() == tmp_path / "cache"
    assert rnn.clear_cache() == 9
    rnn.NumpyRNN(rnn.zoo.indrnn, 6, 7)
    assert len(count_compiles) == 4


@pytest.mark.parametrize("damage", ["truncated", "another model's library"])
def test_damaged_entry_is_compiled_again(count_compiles, tmp_path, damage):
    """A cache entry that is not the library written under its key (cut short, or another
    model's library put there) is dropped and compiled again, and the model is right."""
    x = np.random.default_rng(0).standard_normal((4, 2, 6)).astype(np.float32)
    a = rnn.NumpyRNN(rnn.zoo.indrnn, 6, 7, seed=3)
    want = a(x)[0]
    other = rnn.NumpyRNN(rnn.zoo.rnn_tanh, 6, 7)
    data = open(a.library, "rb").read()
    bad = tmp_path / "bad.so"  # replaced, not rewritten: `a` keeps its mapping
    bad.write_bytes(data[:4096] if damage == "truncated" else open(other.library, "rb").read())
    os.replace(bad, a.library)
    assert len(count_compiles) == 2
    b = rnn.NumpyRNN(rnn.zoo.indrnn, 6, 7, seed=3)
    assert len(count_compiles) == 3 and not b.from_cache
    np.testing.assert_array_equal(b(x)[0], want)


def test_clear_cache_leaves_compiles_in_flight(tmp_path, monkeypatch):
    monkeypatch.setenv("RNN_CACHE_DIR", str(tmp_path / "cache"))
    d = tmp_path / "cache"
    d.mkdir()
    for name in (".0123456789abcdef-x1.so", ".0123456789abcdef-x1.so.tmp-abc", "k.so",
                 "k.mlir", "k.sha256"):
        (d / name).write_text("x")
    assert rnn.clear_cache() == 3
    assert sorted(p.name for p in d.iterdir()) == [".0123456789abcdef-x1.so",
                                                     ".0123456789abcdef-x1.so.tmp-abc"]


def test_save_and_load_without_compiler(tmp_path):
    model = randomize(rnn.NumpyRNN(rnn.zoo.lstm, 5, 6, num_layers=2, bidirectional=True,
                              batch_first=True), seed=21)
    rng = np.random.default_rng(0)
    x = rand(rng, 3, 4, 5)
    lengths = np.array([4, 2, 3])
    ys, (h, c) = model(x, lengths=lengths)
    out = tmp_path / "saved"
    model.save(out)
    for name in ("model.so", "librnn_runtime.so", "params.npz", "manifest.json", "model.mlir"):
        assert (out / name).is_file(), name
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["spec"]["num_layers"] == 2 and manifest["spec"]["batch_first"] is True
    np.save(tmp_path / "x.npy", x)

    # A machine without the compiler or the repository: the package alone, elsewhere.
    site = tmp_path / "site"
    shutil.copytree(Path(rnn.__file__).parent, site / "rnn",
                    ignore=shutil.ignore_patterns("__pycache__"))
    script = tmp_path / "run.py"
    script.write_text(
        "import sys, numpy as np\n"
        "import rnn, rnn.runtime\n"
        f"m = rnn.load({str(out)!r})\n"
        f"x = np.load({str(tmp_path / 'x.npy')!r})\n"
        "ys, (h, c) = m(x, lengths=np.array([4, 2, 3]))\n"
        f"np.savez({str(tmp_path / 'result.npz')!r}, ys=ys, h=h, c=c)\n"
        "print('runtime', rnn.runtime.loaded_runtime_path())\n"
        "print('maps', sorted({l.split()[-1] for l in open('/proc/self/maps') if 'librnn_runtime' in l}))\n"
        "try:\n"
        "    rnn.NumpyRNN(rnn.zoo.lstm, 5, 6)\n"
        "except rnn.CompileError as e:\n"
        "    print('no compiler:', e)\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("RNN_")}
    env.update(RNN_COMPILE=str(tmp_path / "nonexistent" / "rnn-compile"),
               RNN_CACHE_DIR=str(tmp_path / "empty-cache"), PYTHONPATH=str(site))
    r = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert f"runtime {out / 'librnn_runtime.so'}" in r.stdout
    assert f"maps {[str(out / 'librnn_runtime.so')]}" in r.stdout  # that copy only
    assert "no compiler: rnn-compile not found" in r.stdout
    res = np.load(tmp_path / "result.npz")
    np.testing.assert_array_equal(res["ys"], ys)
    np.testing.assert_array_equal(res["h"], h)
    np.testing.assert_array_equal(res["c"], c)


def test_load_in_process(tmp_path):
    model = randomize(rnn.NumpyRNN(rnn.zoo.sru, 6, 6), seed=2)
    model.save(tmp_path / "m")
    loaded = rnn.load(tmp_path / "m")
    assert loaded.state_names == ("c",) and loaded.input_size == 6
    x = np.ones((2, 3, 6), np.float32)
    np.testing.assert_array_equal(loaded(x)[0], model(x)[0])
    assert list(loaded.state_dict()) == list(model.state_dict())
    with pytest.raises(rnn.ShapeError, match=r"input: expected \[T, B, 6\]"):
        loaded(np.ones((2, 3, 5), np.float32))
    with pytest.raises(FileNotFoundError, match="not a directory written by NumpyRNN.save"):
        rnn.load(tmp_path)


def test_build_dir_is_honoured(tmp_path):
    """RNN_BUILD_DIR, which the scripts take, tells the package where rnn-compile and the
    runtime are (RNN_COMPILE and RNN_RUNTIME_LIB still win)."""
    script = ("from rnn import runtime; print(runtime.compiler_path()); "
              "print(runtime.runtime_path())")
    env = {k: v for k, v in os.environ.items() if k not in ("RNN_COMPILE", "RNN_RUNTIME_LIB")}
    build = Path(rt.compiler_path()).resolve().parents[1]
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         env={**env, "RNN_BUILD_DIR": str(build),
                              "PYTHONPATH": str(Path(rnn.__file__).parents[1])})
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [str(build / "bin" / "rnn-compile"),
                                  str(build / "lib" / "librnn_runtime.so")]
    missing = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                             env={**env, "RNN_BUILD_DIR": str(tmp_path),
                                  "PYTHONPATH": str(Path(rnn.__file__).parents[1])})
    assert "rnn-compile not found" in missing.stderr and str(tmp_path) in missing.stderr


def test_long_compile_says_so(tmp_path, monkeypatch, capsys):
    """A compile that takes longer than PROGRESS_AFTER_S says on stderr what it builds."""
    from rnn import cache
    monkeypatch.setenv("RNN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("RNN_QUIET", raising=False)
    monkeypatch.setattr(cache, "PROGRESS_AFTER_S", 0.0)
    rnn.NumpyRNN(rnn.zoo.mgu, 5, 7)
    err = capsys.readouterr().err
    assert "rnn: compiling a model of cell(s) mgu_i5 with rnn-compile" in err
