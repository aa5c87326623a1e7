"""The compile cache: a compiled library per (emitted IR, options, compiler build).

The key is the sha256 of the MLIR text, the compile options and the identity of the
rnn-compile binary and of the device library it links into CUDA models (path, size and
modification time of each, so that rebuilding either invalidates what the old one made). Libraries live in `RNN_CACHE_DIR` (default
`~/.cache/rnn`) as `<key>.so`, with the IR beside them as `<key>.mlir`. Writes go through
a temporary file and a rename, so concurrent processes never see a partial library.
"""

import hashlib
import json
import os
import tempfile
from pathlib import Path

from . import runtime as _runtime

__all__ = ["cache_dir", "cache_key", "compile_cached", "clear_cache", "stats"]

FORMAT = 1

# Counters for this process (tests and curious users): compiles run, hits.
stats = {"compiles": 0, "hits": 0}


def cache_dir():
    """The cache directory: $RNN_CACHE_DIR, else ~/.cache/rnn."""
    env = os.environ.get("RNN_CACHE_DIR")
    return Path(env) if env else Path.home() / ".cache" / "rnn"


def _compiler_identity():
    try:
        path = _runtime.compiler_path()
    except _runtime.CompileError:
        return None
    identity = []
    # rnn-compile, and the device library it finds in ../lib (CUDA models link it).
    library = Path(path).resolve().parent.parent / "lib" / "rnn_device_library.bc"
    for file in (path, library):
        if os.path.exists(file):
            st = os.stat(file)
            identity += [os.path.realpath(file), st.st_size, st.st_mtime_ns]
    return identity


def cache_key(ir, options):
    """sha256 over the IR text, the options (a JSON-able dict) and the compiler's identity."""
    blob = json.dumps({"format": FORMAT, "options": options, "compiler": _compiler_identity(),
                       "ir": ir}, sort_keys=True)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def compile_cached(ir, optimize=True, extra_args=()):
    """The path of the library compiled from `ir` (compiling it unless it is cached) and
    whether it came from the cache: (path, hit)."""
    options = {"optimize": bool(optimize), "extra_args": [str(a) for a in extra_args]}
    key = cache_key(ir, options)
    d = cache_dir()
    path = d / f"{key}.so"
    if path.is_file():
        stats["hits"] += 1
        return str(path), True
    d.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{key[:16]}-", suffix=".so", dir=d)
    os.close(fd)
    try:
        stats["compiles"] += 1
        _runtime.compile_mlir(ir, tmp, optimize=optimize, extra_args=extra_args)
        ir_tmp = tmp[:-3] + ".mlir"
        with open(ir_tmp, "w") as f:
            f.write(ir)
        os.replace(ir_tmp, d / f"{key}.mlir")
        os.replace(tmp, path)
    finally:
        for p in (tmp, tmp[:-3] + ".mlir"):
            try:
                os.unlink(p)
            except FileNotFoundError:
                pass
    return str(path), False


def clear_cache():
    """Removes every cached library and IR file from the cache directory."""
    d = cache_dir()
    if not d.is_dir():
        return 0
    n = 0
    for p in d.iterdir():
        if p.suffix in (".so", ".mlir") and p.is_file():
            p.unlink()
            n += 1
    return n
