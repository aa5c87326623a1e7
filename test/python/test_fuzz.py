"""The mutation fuzzer (scripts/fuzz.py) for a bounded run: 2,000 mutated inputs from the
repository's rnn IR through rnn-opt (rnn-optimize, rnn-differentiate), and every tenth that
rnn-opt accepts through rnn-compile; none may crash or hang. Seeded: the same inputs every
run, in four shards of 500 (seeds 0 to 3, one process each) that pytest-xdist spreads over its
workers like any other test. A longer run: `scripts/fuzz.py --seconds 3600 --seed N`."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SHARDS, INPUTS_PER_SHARD = 4, 500


@pytest.mark.parametrize("seed", range(SHARDS))
def test_fuzz_shard(tmp_path, seed):
    out = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "fuzz.py"), "--inputs", str(INPUTS_PER_SHARD),
         "--seed", str(seed), "--jobs", "1", "--crashes", str(tmp_path / "crashes")],
        capture_output=True, text=True, timeout=1200,
        env={**os.environ, "RNN_BUILD_DIR": os.environ.get("RNN_BUILD_DIR",
                                                            str(REPO / "build"))})
    assert out.stdout.strip().splitlines()[-1] == \
        f"fuzz: {INPUTS_PER_SHARD} inputs, 0 crashes, 0 hangs", out.stdout + out.stderr
