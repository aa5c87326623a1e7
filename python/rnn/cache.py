"""The compile cache: a compiled library per (emitted IR, options, compiler build).

The key is the sha256 of the MLIR text, the compile options and the identity of the
rnn-compile binary and of the device library it links into CUDA models (path, size and
modification time of each, so that rebuilding either invalidates what the old one made).
Libraries live in `RNN_CACHE_DIR` (default `~/.cache/rnn`) as `<key>.so`, with the IR
beside them as `<key>.mlir` and the sha256 of the library's bytes as `<key>.sha256`.
Writes go through temporary files (names starting with a dot) and renames, the hash
first, so concurrent processes never see a partial library; a hit is checked against its
hash, and an entry that does not match (truncated, or another library put under the key)
is dropped and compiled again.
"""

import hashlib
import json
import os
import re
import sys
import tempfile
import threading
import time
from pathlib import Path

from . import runtime as _runtime

__all__ = ["cache_dir", "cache_key", "compile_cached", "clear_cache", "stats"]

FORMAT = 1

# Counters for this process (tests and curious users): compiles run, hits, damaged entries
# dropped.
stats = {"compiles": 0, "hits": 0, "dropped": 0}


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


PROGRESS_AFTER_S = 5.0


def _say_compiling(ir, extra_args, start):
    if os.environ.get("RNN_QUIET"):
        return
    cells = ", ".join(dict.fromkeys(re.findall(r"rnn\.cell @(\w+)", ir))) or "?"
    print(f"rnn: compiling a model of cell(s) {cells} with rnn-compile "
          f"{' '.join(map(str, extra_args))} ({time.monotonic() - start:.0f} s so far; "
          "large cells and many layers take longer, and the result is cached; "
          "RNN_QUIET=1 hides this)", file=sys.stderr, flush=True)


def _digest(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _valid_entry(path, digest_path):
    """Whether the cached library matches the hash recorded when it was written."""
    try:
        return digest_path.read_text().strip() == _digest(path)
    except OSError:
        return False


def compile_cached(ir, optimize=True, extra_args=()):
    """The path of the library compiled from `ir` (compiling it unless it is cached) and
    whether it came from the cache: (path, hit)."""
    options = {"optimize": bool(optimize), "extra_args": [str(a) for a in extra_args]}
    key = cache_key(ir, options)
    d = cache_dir()
    path, digest_path = d / f"{key}.so", d / f"{key}.sha256"
    if path.is_file():
        if _valid_entry(path, digest_path):
            stats["hits"] += 1
            return str(path), True
        stats["dropped"] += 1  # a damaged or foreign entry: compiled again below
    d.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{key[:16]}-", suffix=".so", dir=d)
    os.close(fd)
    side = [tmp[:-3] + ".mlir", tmp[:-3] + ".sha256"]
    try:
        stats["compiles"] += 1
        # A long build says what it is doing (once, on stderr) rather than nothing.
        notice = threading.Timer(PROGRESS_AFTER_S, _say_compiling,
                                 args=(ir, extra_args, time.monotonic()))
        notice.daemon = True
        notice.start()
        try:
            _runtime.compile_mlir(ir, tmp, optimize=optimize, extra_args=extra_args)
        except _runtime.CompileError as e:
            if e.returncode == 0:  # rnn-compile succeeded, its output is gone
                raise _runtime.CompileError(
                    f"the compile cache's temporary file {tmp} disappeared while rnn-compile "
                    f"wrote it (was {d} cleared or removed meanwhile?); building again will "
                    "recompile") from None
            raise
        finally:
            notice.cancel()
        with open(side[0], "w") as f:
            f.write(ir)
        with open(side[1], "w") as f:
            f.write(_digest(tmp) + "\n")
        os.replace(side[0], d / f"{key}.mlir")
        os.replace(side[1], digest_path)
        os.replace(tmp, path)
    finally:
        for p in [tmp] + side:
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
        # Names starting with a dot are other processes' compiles in flight: left alone.
        if p.suffix in (".so", ".mlir", ".sha256") and p.is_file() and \
                not p.name.startswith("."):
            try:
                p.unlink()
                n += 1
            except FileNotFoundError:
                pass
    return n
