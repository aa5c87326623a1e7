"""pytest setup for the Python tests: imports `rnn` from <repo>/python without installing it,
and compiles models once per session (cached by source and optimize flag)."""

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TEST_DIR = Path(__file__).resolve().parent
for p in (str(REPO / "python"), str(TEST_DIR)):
    if p not in sys.path:
        sys.path.insert(0, p)

import rnn  # noqa: E402

EXAMPLES_DIR = REPO / "examples"
MODELS_DIR = TEST_DIR / "models"
# The build under test: $RNN_BUILD_DIR, as scripts/test.sh and the rnn package take it, else
# <repo>/build. $RNN_OPT names another rnn-opt.
BUILD_DIR = Path(os.environ.get("RNN_BUILD_DIR") or REPO / "build").absolute()
RNN_OPT = os.environ.get("RNN_OPT", str(BUILD_DIR / "bin" / "rnn-opt"))


@pytest.fixture(scope="session")
def compiled(tmp_path_factory):
    """compiled(source_path, optimize) -> path of the compiled .so, compiled once per session.

    A compile failure is cached too and raised again (as the same CompileError) by every
    test that asks for that model, without running rnn-compile again."""
    out_dir = tmp_path_factory.mktemp("models")
    cache = {}

    def get(source, optimize=True):
        key = (os.fspath(source), bool(optimize))
        if key not in cache:
            stem = Path(source).stem + ("" if optimize else "-noopt")
            try:
                cache[key] = rnn.compile_mlir(Path(source), out_dir / f"{stem}.so",
                                              optimize=optimize)
            except rnn.CompileError as e:
                cache[key] = e
        result = cache[key]
        if isinstance(result, Exception):
            raise result
        return result

    return get


@pytest.fixture(scope="session")
def load(compiled):
    """load(source_path, optimize) -> an rnn.Model, loaded once per session."""
    models = {}

    def get(source, optimize=True):
        path = compiled(source, optimize)
        if path not in models:
            models[path] = rnn.Model(path)
        return models[path]

    yield get
    for m in models.values():
        m.close()
