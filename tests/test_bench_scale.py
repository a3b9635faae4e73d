"""bench/scale.py's cycled-sessions workload is the reviewer's: sessions of 50 cycled turns,
probes spread evenly with evidence 5 turns back; it runs on the shipped turns without LoCoMo."""

from __future__ import annotations

import math
from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def scale(bench_script):
    return bench_script("scale.py", "bench_scale")


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


# -- beam-concat: BEAM conversations joined into one history of N tokens -----------------------

def _beam_chat(n: int) -> list[dict]:
    """One batch of ``n`` user/assistant messages, ids 0..n-1, a time anchor on the first."""
    messages = [{"role": "user" if i % 2 == 0 else "assistant", "id": i,
                 "content": f"message {i} about the garden, the budget and the trip to Lisbon"} for i in range(n)]
    messages[0]["time_anchor"] = "March-15-2024"
    return [{"batch_number": 1, "time_anchor": None, "turns": [messages[i:i + 2] for i in range(0, n, 2)]}]


def _beam_questions() -> dict:
    return {"information_extraction": [{"question": "Where is the trip?", "answer": "Lisbon", "source_chat_ids": [1]},
                                       {"question": "What about the garden?", "answer": "it grows",
                                        "source_chat_ids": [2, 9]}],
            "abstention": [{"question": "What did my manager say?", "ideal_response": "No information.",
                            "plan_reference": "Batch 1, Bullet 1"}]}


def _write_beam(root: Path) -> None:
    import gzip
    import json

    for size, n in (("100K", "1"), ("100K", "2"), ("500K", "1"), ("1M", "1")):
        folder = root / size / n
        (folder / "probing_questions").mkdir(parents=True)
        (folder / "chat.json.gz").write_bytes(gzip.compress(json.dumps(_beam_chat(10)).encode()))
        (folder / "probing_questions" / "probing_questions.json.gz").write_bytes(
            gzip.compress(json.dumps(_beam_questions()).encode()))


def _check_beam_concat(dataset, info, target):
    from memlab.eval.loaders.checks import check_dataset
    from memlab.tokens import TiktokenCounter

    (d,) = dataset.dialogues
    check_dataset(dataset.dialogues, "beam-concat")  # times never go back, ids and evidence resolve
    turns = d.turns()
    ids = [t.id for t in turns]
    assert len(set(ids)) == len(ids)
    assert len({s.id for s in d.sessions}) == len(d.sessions) and len({p.id for p in d.probes}) == len(d.probes)
    counter = TiktokenCounter()
    counts = [counter.count(t.text) for t in turns]
    # at least the target, and the last message is the one that reached it
    assert info["history_tokens"] == sum(counts) >= target > sum(counts[:-1])
    held = set(ids)
    assert d.probes and all(p.evidence and set(p.evidence) <= held and set(p.stale_evidence) <= held
                            for p in d.probes)  # every probe is scoreable
    assert all(p.after_turn is None for p in d.probes)  # asked after the last message
    return d


def test_beam_concat_joins_conversations_with_fresh_ids(scale, tmp_path, monkeypatch):
    from memlab.eval.loaders.beam import iter_beam
    from memlab.tokens import TiktokenCounter

    _write_beam(tmp_path)
    monkeypatch.setenv("MEMLAB_BEAM", str(tmp_path))
    assert [f"{f.parent.name}-{f.name}" for f in scale.beam_folders()] == ["100K-1", "100K-2", "500K-1", "1M-1"]
    (first,) = iter_beam(str(tmp_path / "100K" / "1"), **scale.BEAM_OPTIONS)
    per_message = [TiktokenCounter().count(t.text) for t in first.turns()]
    # all of the first conversation and the first two messages of the second
    target = sum(per_message) + per_message[0] + 1
    dataset, info = scale.build_beam_concat(target)
    d = _check_beam_concat(dataset, info, target)
    assert info["conversations"] == ["100K-1", "100K-2"] and d.n_turns == 12
    assert [t.id for t in d.turns()][9:] == ["100K-1/9", "100K-2/0", "100K-2/1"]
    # the first conversation's two scoreable questions; the second's first (evidence: message 1), not the one
    # whose evidence (message 9) was cut off; abstention (no evidence) is not asked
    assert [p.id for p in d.probes] == ["100K-1/information_extraction-1", "100K-1/information_extraction-2",
                                        "100K-2/information_extraction-1"]
    assert d.probes[2].evidence == ["100K-2/1"] and info["probes_dropped"] == 1
    times = [t.timestamp for t in d.turns()]
    assert times[10] - times[9] == scale.BEAM_GAP  # the next conversation starts a day after
    assert len(info["files"]) == 4  # chat and questions of the two conversations read


def test_beam_concat_on_beam_at_5k_tokens(scale):
    from memlab.eval.paths import beam_path

    if beam_path() is None:
        pytest.skip("BEAM is not beside the repository (../shared/datasets/beam)")
    dataset, info = scale.build_beam_concat(5000)
    d = _check_beam_concat(dataset, info, 5000)
    assert info["conversations"] == ["100K-1"] and d.turns()[0].id == "100K-1/0"
    point = scale.one_beam_concat("bm25", 5000)
    assert point["history_tokens"] == info["history_tokens"] and point["probes"] == len(d.probes)
    assert point["query_ms_p50"] <= point["query_ms_p95"] and point["append_seconds"] > 0
    assert 0.0 <= point["recall@10"] <= 1.0


def test_beam_concat_slopes_read_the_history_tokens(scale):
    pts = [{"tokens": t, "history_tokens": t, "append_seconds": t / 1e4, "seconds": (t / 1e4) ** 1.5,
            "cpu_seconds": t / 1e4, "held_mb": 10 + 50 * t / 1e6} for t in (10_000, 100_000, 1_000_000)]
    s = scale.beam_concat_slopes(pts)
    assert s["append"] == pytest.approx(1.0) and s["total"] == pytest.approx(1.5)
    assert s["mb_per_mtok"] == pytest.approx(50.0)
    assert s["append_steps"] == {"10000-100000": pytest.approx(1.0), "100000-1000000": pytest.approx(1.0)}
