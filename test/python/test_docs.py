"""Every ```python block of docs/compiling.md, docs/training.md and docs/torch.md runs, so
that the documentation cannot rot.

A line `print(...)  # text` promises that the print writes `text`: the output must
contain each such text, in order, as a whole line (`...` in the text stands for anything).

Each block runs on its own, in a fresh temporary directory that stands in for the
repository root (examples/ is linked into it, so paths like "examples/gru.mlir" work as
they do for a reader at the root, and what the block writes stays in the temporary
directory), with <repo>/python on sys.path."""

import re
import runpy
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCS = [REPO / "docs" / "compiling.md", REPO / "docs" / "training.md",
        REPO / "docs" / "torch.md"]

# A fence of three or more backticks, "python" as the info string, up to the matching fence.
BLOCK = re.compile(r"^(?P<fence>`{3,})python[ \t]*\n(?P<code>.*?)^(?P=fence)[ \t]*$",
                   re.MULTILINE | re.DOTALL)


def python_blocks(doc):
    text = doc.read_text()
    return [(text.count("\n", 0, m.start()) + 1, m.group("code")) for m in BLOCK.finditer(text)]


# `print(...)` followed by a comment: the comment is the output it promises.
PROMISE = re.compile(r"^\s*print\(.*\)\s+#\s?(?P<text>.*?)\s*$")


def promised_lines(code):
    return [m.group("text") for m in map(PROMISE.match, code.splitlines()) if m]


@pytest.mark.parametrize("doc", DOCS, ids=lambda d: d.name)
def test_the_doc_has_python_blocks(doc):
    assert python_blocks(doc), f"{doc} has no ```python block"


@pytest.mark.parametrize("doc,line,code", [
    pytest.param(doc, line, code, id=f"{doc.stem}-line{line}")
    for doc in DOCS for line, code in python_blocks(doc)])
def test_python_block_runs(doc, line, code, tmp_path, monkeypatch, capsys):
    (tmp_path / "examples").symlink_to(REPO / "examples", target_is_directory=True)
    script = tmp_path / f"{doc.stem}_md_line{line}.py"
    # Blank lines keep the block's line numbers in tracebacks.
    script.write_text("\n" * line + code)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(REPO / "python"))
    monkeypatch.setattr(sys, "argv", [str(script)])
    runpy.run_path(str(script), run_name="__main__")
    out = capsys.readouterr().out.splitlines()
    pos = 0
    for text in promised_lines(code):
        pattern = re.compile(".*".join(map(re.escape, text.split("..."))) + r"\s*")
        hits = [i for i in range(pos, len(out)) if pattern.fullmatch(out[i])]
        assert hits, (f"docs/{doc.name} line {line}: no output line after output line {pos} "
                      f"reads {text!r}; the block printed:\n" + "\n".join(out))
        pos = hits[0] + 1
