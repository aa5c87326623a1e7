"""The cell-speed harness (bench/cell_speed.py) on the CPU: cellgen's extended family
draws its patterns often and keeps its recurrent work in range, the FLOP counter on the
optimised IR agrees with the generator's, and the check path (worker, timing in rounds,
statistics, report) runs end to end on two tiny cells built for the CPU. The timings
themselves mean something only on the GPU (bench/cell-speed-run.sh)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(HERE))

import cell_speed  # noqa: E402
import cellgen  # noqa: E402
from conftest import RNN_OPT  # noqa: E402


def test_extended_family_patterns():
    """Each pattern of issue 28 in a good share of the cells, the recurrent work between
    2 and 8 H*H per row and step (as planned, and as counted on the live graph)."""
    n = 200
    seen = {"pre": 0, "feedback": 0, "stage2": 0, "inputs": 0, "layer_norm": 0, "states>1": 0}
    for seed in range(n):
        g = cellgen.ExtendedCellGen(seed).build()
        p = g.plan_
        seen["pre"] += p["pre"] or p["src"] != "one"
        seen["feedback"] += bool(p["feedback"])
        seen["stage2"] += bool(p["stage2"])
        seen["inputs"] += bool(p["inputs"])
        seen["layer_norm"] += p["layer_norm"]
        seen["states>1"] += len(g.states) > 1
        macs = g.shapes().recurrent_macs
        assert macs == g.units * g.H * g.H, (seed, macs, g.units, g.H)
        assert 2 <= g.units <= 8, (seed, g.units)
    for what, count in seen.items():
        assert count >= 0.2 * n, f"{what} in {count} of {n} cells"


def test_extended_sizes():
    """I = H = 1024 for the speed test: the same structure, the work scaled by H*H."""
    text, _, shapes = cellgen.generate(3, I=1024, H=1024, family="extended")
    small = cellgen.ExtendedCellGen(3).build()
    assert shapes.I == shapes.H == 1024
    assert shapes.recurrent_macs == small.units * 1024 * 1024
    assert "tensor<?x1024xf32>" in text


@pytest.mark.parametrize("example, macs", [("lstm", 20 * 80), ("gru_reset_before", 20 * 40 + 20 * 20),
                                           ("mgu", 2 * 20 * 20)])
def test_ir_recurrent_macs(example, macs):
    """The products left in the cell after rnn-optimize, input projections excluded."""
    ir = subprocess.run([RNN_OPT, str(ROOT / "examples" / f"{example}.mlir"), "--rnn-optimize"],
                        check=True, stdout=subprocess.PIPE, text=True).stdout
    assert cell_speed.ir_recurrent_macs(ir) == macs


def test_summary_statistics():
    meta = {"family": "extended", "target": "cuda", "size": 2,
            "cases": [{"name": f"cell{i}", "explain": f"explain {i}"} for i in range(7)]}
    scores = [1.0, 1.2, 0.9, 1.6, 1.1, 1.05, 1.3]
    recs = [{"name": f"cell{i}", "seed": i, "ok": True, "score": s, "cell_ms": s,
             "lstm_ms": 1.0, "recurrent_macs": 16, "ir_recurrent_macs": 16 if i else 12}
            for i, s in enumerate(scores)]
    recs.append({"name": "cell7", "ok": False, "error": "worker died"})
    summary, worst = cell_speed.summarize(meta, recs, 1.0)
    assert summary["timed"] == 7 and summary["failed"] == 1
    assert summary["score"]["median"] == pytest.approx(1.1)
    assert summary["score"]["max"] == 1.6 and summary["score"]["min"] == 0.9
    assert summary["over_1.15"] == 3 and summary["over_1.5"] == 1
    assert summary["macs_differ"] == ["cell0"]
    assert not summary["targets_met"]
    assert [w["name"] for w in worst] == ["cell3", "cell6", "cell1", "cell4", "cell5"]
    assert worst[0]["explain"] == "explain 3" and worst[0]["units"] == 4


def test_build_and_check_on_cpu(tmp_path):
    """Two tiny extended cells through build and check: the FLOP counts agree, every cell
    matches float64 and gets a score, and the report names the worst with its explain."""
    d = tmp_path / "cases"
    assert cell_speed.build(str(d), cells=2, first=0, target="cpu", size=8, jobs=1) == 0
    meta = json.loads((d / "cases.json").read_text())
    assert meta["reference"]["ir_recurrent_macs"] == meta["reference"]["recurrent_macs"] == 4 * 64
    assert len(meta["cases"]) == 2
    for c in meta["cases"]:
        assert c["ir_recurrent_macs"] == c["recurrent_macs"], c["name"]
        assert 2 * 64 <= c["recurrent_macs"] <= 8 * 64
        assert "rnn.cell @cell" in c["optimized_mlir"] and "scan @cell" in c["explain"]
    out = tmp_path / "report.json"
    p = subprocess.run([sys.executable, str(ROOT / "bench" / "cell_speed.py"), "check", str(d),
                        "--json", str(out), "--T", "6", "--batch", "3", "--rounds", "2",
                        "--repeats", "3"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True)
    assert p.returncode == 0, p.stdout[-3000:]
    rep = json.loads(out.read_text())
    assert rep["summary"]["timed"] == 2 and rep["summary"]["failed"] == 0
    assert rep["summary"]["macs_differ"] == []
    for r in rep["results"]:
        assert r["ok"] and r["vs_ref"] <= cell_speed.TOL["cpu"] and r["score"] > 0
    assert len(rep["worst"]) == 2 and "scan @cell" in rep["worst"][0]["explain"]
    assert "the 2 worst cells" in p.stdout
