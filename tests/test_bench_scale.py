"""bench/scale.py's cycled-sessions workload is the reviewer's: sessions of 50 cycled turns,
probes spread evenly with evidence 5 turns back; it runs on the shipped turns without LoCoMo."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def scale():
    sys.path.insert(0, str(REPO / "bench"))  # scale.py imports its sibling _common
    try:
        spec = importlib.util.spec_from_file_location("bench_scale", REPO / "bench" / "scale.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.path.remove(str(REPO / "bench"))


def _check(dataset, n, probes):
    (d,) = dataset.dialogues
    assert d.n_turns == n
    assert [len(s.turns) for s in d.sessions] == [50] * (n // 50) + ([n % 50] if n % 50 else [])
    assert all(t.session_id == s.id for s in d.sessions for t in s.turns)
    assert len({s.id for s in d.sessions}) == len(d.sessions)
    assert len(d.probes) == probes
    positions = d.turn_positions()
    after = [positions[p.after_turn] for p in d.probes]
    assert after == [(j + 1) * n // probes - 1 for j in range(probes)] and after[-1] == n - 1
    # a probe asked before the sixth turn has no turn 5 back: unscored
    assert all(p.evidence == ([f"t{i - 5}"] if i >= 5 else []) for p, i in zip(d.probes, after))
    times = [t.timestamp for t in d.turns()]
    assert all(b - a == 60.0 for a, b in zip(times, times[1:]))


def test_cycled_sessions_on_the_shipped_turns_without_locomo(scale, monkeypatch, capsys):
    monkeypatch.setattr("memlab.eval.paths.locomo_path", lambda *a, **k: None)
    files, source = scale.source_files()
    assert source == "shipped" and files and all(f.parent.name == "datasets" for f in files)
    dataset = scale.build_cycled_sessions(1030, 200)
    assert "cycling the turns of the shipped datasets" in capsys.readouterr().err
    _check(dataset, 1030, 200)
    # the turns are the shipped ones, cycled
    source_turns, _ = scale.load_source()
    turns = dataset.dialogues[0].turns()
    assert [t.text for t in turns[:3]] == [t.text for t in source_turns[:3]]
    assert turns[len(source_turns)].text == source_turns[0].text


def test_cycled_sessions_on_locomo(scale):
    from memlab.eval.paths import locomo_path

    if locomo_path() is None:
        pytest.skip("LoCoMo is not beside the repository")
    _check(scale.build_cycled_sessions(2000), 2000, scale.CYCLED_PROBES)


def test_step_slope_is_the_log_log_slope(scale):
    a, b = {"turns": 2000, "seconds": 1.0, "cpu_seconds": 1.0}, {"turns": 8000, "seconds": 4.0, "cpu_seconds": 16.0}
    assert scale.step_slope(a, b) == pytest.approx(1.0)
    assert scale.step_slope(a, b, "cpu_seconds") == pytest.approx(2.0)
    assert math.isnan(scale.step_slope(a, {"turns": 2000, "seconds": 2.0}))
