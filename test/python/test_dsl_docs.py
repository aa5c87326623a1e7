"""Runs every ```python block of docs/python.md, in order, in one namespace (as a reader
would paste them), so that the tutorial cannot rot; a line `print(...)  # text` promises
that the output has the line `text` (in order). Each block is compiled with the docs
file as its file name and its own line numbers, so a failure (and every DSL location)
points at the line of docs/python.md."""

import re
from pathlib import Path

import pytest

import test_dsl_common  # noqa: F401  (a session cache dir for the compiled models)

DOC = Path(__file__).resolve().parents[2] / "docs" / "python.md"
PROMISE = re.compile(r"^\s*print\(.*\)\s+#\s?(?P<text>.*?)\s*$")
FENCE = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.S | re.M)


def python_blocks(text):
    """[(first line number, source)] of the ```python blocks."""
    return [(text.count("\n", 0, m.start(1)) + 1, m.group(1)) for m in FENCE.finditer(text)]


def test_docs_have_python_blocks():
    blocks = python_blocks(DOC.read_text())
    assert len(blocks) >= 8
    # The tutorial's main example: a custom cell of at most 15 lines.
    first = blocks[0][1]
    cell = first[first.index("@rnn.cell"):first.index("model = ")].strip().splitlines()
    assert len(cell) <= 15, cell


def test_docs_python_blocks_run(capsys):
    namespace = {"__name__": "docs_python_md"}
    for line, source in python_blocks(DOC.read_text()):
        code = compile("\n" * (line - 1) + source, str(DOC), "exec")
        try:
            exec(code, namespace)
        except Exception as e:
            pytest.fail(f"the python block at {DOC}:{line} failed: {type(e).__name__}: {e}")
    out = capsys.readouterr().out
    # `print(...)  # text` promises `text` as a whole line of the output, in order.
    lines = out.splitlines()
    pos = 0
    for _, source in python_blocks(DOC.read_text()):
        for m in filter(None, map(PROMISE.match, source.splitlines())):
            want = m.group("text")
            while pos < len(lines) and lines[pos].strip() != want:
                pos += 1
            assert pos < len(lines), f"docs/python.md promises the output line {want!r}"
            pos += 1
    assert "input: expected [T, B, 8] (input_size=8), got [5, 3, 12]" in out
    assert f"{DOC}:" in out  # the compile error points into docs/python.md
    # The error shown on the page (a ```text block) has the line the run reports.
    shown = re.search(r"docs/python\.md:(\d+):5: error", DOC.read_text())
    assert shown and f"{DOC}:{shown.group(1)}:5: error" in out, "update the line in the page"
