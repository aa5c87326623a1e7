"""The training examples, shortened, on the CPU: examples/train_ddp.py under torchrun with two
processes (gloo): DDP's gradients equal one process's on the whole batch; and
examples/train_char_lm.py: rnn.RNN(zoo.lstm) and torch.nn.LSTM from the same weights give
the same loss curve."""

import os
import shutil
import subprocess
import sys

import pytest

pytest.importorskip("torch")

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _run(cmd, timeout=300):
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=REPO)
    assert out.returncode == 0, f"{' '.join(cmd)}\n{out.stdout}\n{out.stderr}"
    return out.stdout


def test_ddp_two_processes_equal_one():
    torchrun = shutil.which("torchrun")
    cmd = ([torchrun] if torchrun else [sys.executable, "-m", "torch.distributed.run"]) + [
        "--nproc_per_node=2", "--master_port=29517", "examples/train_ddp.py", "--T", "12",
        "--batch", "6", "--input-size", "8", "--hidden", "16", "--steps", "2"]
    stdout = _run(cmd)
    assert "DDP over 2 process(es): gradients after one step within" in stdout
    assert "tokens/s" in stdout


def test_char_lm_curves_agree():
    stdout = _run([sys.executable, "examples/train_char_lm.py", "--steps", "15", "--batch",
                   "8", "--seq", "32", "--hidden", "32", "--tolerance", "1e-4"])
    assert ": agree" in stdout
