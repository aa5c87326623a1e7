"""The mutation fuzzer (scripts/fuzz.py) for a bounded run: 2,000 mutated inputs from the
repository's rnn IR through rnn-opt (rnn-optimize, rnn-differentiate), and every tenth that
rnn-opt accepts through rnn-compile; none may crash or hang. Seeded: the same inputs every
run. A longer run: `scripts/fuzz.py --seconds 3600 --seed N`."""

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_fuzz_2000_inputs(tmp_path):
    out = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "fuzz.py"), "--inputs", "2000", "--seed", "0",
         "--jobs", "2", "--crashes", str(tmp_path / "crashes")],
        capture_output=True, text=True, timeout=1200,
        env={**os.environ, "RNN_BUILD_DIR": os.environ.get("RNN_BUILD_DIR",
                                                            str(REPO / "build"))})
    assert out.stdout.strip().splitlines()[-1] == "fuzz: 2000 inputs, 0 crashes, 0 hangs", \
        out.stdout + out.stderr
