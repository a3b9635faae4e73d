"""The replay's list is deep enough for the session metrics (``memlab.eval.replay._ranked``):
session_*@k rank sessions by their first hit in the whole ranked list (LongMemEval's
recall_any@k), so they must not depend on how many turn hits ``--k`` asks for, while the
turn-level metrics stay those of the first k hits."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from memlab import strategies
from memlab.decay import Ebbinghaus
from memlab.eval.dataset import Dataset, Dialogue, Probe, Session, Turn
from memlab.eval import load_any
from memlab.eval.replay import _ranked, replay, replay_dialogue

ROOT = Path(__file__).resolve().parents[2]

# One query word, "kiwi", in 11 of 29 turns, each 12 words long: BM25 ranks them by how
# often "kiwi" appears (11 times first, ..., once last); the 18 other turns never match.
# The sessions of the 11 hits, in rank order:
RANKED_SESSIONS = ["s1", "s1", "s1", "s2", "s2", "s3", "s3", "s4", "s5", "s2", "s6"]
GOLD_RANKS = (9, 11)  # the evidence turns: ranks 9 (session s5) and 11 (session s6)


def _dialogue() -> Dialogue:
    by_session: dict[str, list[tuple[str, str]]] = {f"s{n}": [] for n in range(1, 7)}
    for rank, sid in enumerate(RANKED_SESSIONS, start=1):
        tf = 12 - rank
        by_session[sid].append((f"r{rank}", " ".join(["kiwi"] * tf + ["zebra"] * (12 - tf))))
    sessions = []
    clock = 0.0
    for n, (sid, kiwis) in enumerate(by_session.items()):
        fillers = [(f"{sid}f{i}", f"the weather in town {sid} was grey on day {i}") for i in range(3)]
        turns = []
        for tid, text in fillers[:2] + kiwis + fillers[2:]:
            clock += 60.0
            turns.append(Turn(tid, "u", "user", text, clock, sid))
        sessions.append(Session(sid, turns[0].timestamp, turns))
    probe = Probe("p", None, "kiwi", evidence=[f"r{r}" for r in GOLD_RANKS])
    return Dialogue("d", sessions, [probe])


def _rank(turn_id: str) -> int:
    return int(turn_id[1:])


def test_bm25_ranks_the_kiwi_turns_as_designed():
    s = strategies.get("bm25")
    for t in _dialogue().turns():
        s.observe(t.to_record("d"))
    assert [h.id for h in s.retrieve("kiwi", 11)] == [f"r{r}" for r in range(1, 12)]


def test_five_turn_hits_span_two_sessions_the_list_goes_on_to_five():
    """k_max = 5: the first 5 hits hold sessions s1, s2 only; doubling to 10 hits gives
    s1, s2, s3, s4, s5 (five distinct sessions), and the replay stops there."""
    s = strategies.get("bm25")
    calls = []
    retrieve = s.retrieve
    s.retrieve = lambda query, k=5, **kw: calls.append(k) or retrieve(query, k, **kw)  # type: ignore[method-assign]
    (row,) = replay_dialogue(s, _dialogue(), k_max=5)
    assert calls[:2] == [5, 10]                       # one extra retrieve call (then build_context's own)
    assert [_rank(i) for i in row["retrieved_ids"]] == list(range(1, 11))
    assert [x[0] for x in row["retrieved_sessions"]] == RANKED_SESSIONS[:10]
    assert row["gold_sessions"] == ["s5", "s6"]


def test_session_metrics_hand_worked_and_independent_of_k():
    # R = s1, s2, s3, s4, s5, s6 (first hits at ranks 1, 4, 6, 8, 9, 11); gold {s5, s6}: G = 2
    ds = Dataset("kiwi", [_dialogue()])
    at5 = replay(strategies.get("bm25"), ds, ks=(1, 5), k_max=5).iloc[0]
    assert at5["session_hit_rate@1"] == 0.0
    assert at5["session_hit_rate@5"] == 1.0          # s5 is the 5th distinct session (from 5 hits it read 0.0)
    assert at5["session_recall@5"] == 0.5            # s6 is the 6th
    assert at5["session_recall_all@5"] == 0.0
    # DCG_5 = 1 / log2(5 + 1); IDCG_5 = 1 + 1 / log2(3)
    assert at5["session_ndcg@5"] == (1 / math.log2(6)) / (1 + 1 / math.log2(3))
    # turn level: the first 5 hits (ranks 1-5) hold no evidence turn
    assert at5["hit_rate@5"] == 0.0 and at5["recall@5"] == 0.0
    deeper = replay(strategies.get("bm25"), ds, ks=(1, 5, 10), k_max=10).iloc[0]
    budget = replay(strategies.get("bm25"), ds, ks=(1, 5, 10), k_max=10, budgets=(64,)).iloc[0]
    for row in (deeper, budget):
        for m in ("session_hit_rate", "session_recall", "session_recall_all", "session_ndcg"):
            for k in (1, 5):
                assert row[f"{m}@{k}"] == at5[f"{m}@{k}"], (m, k)
    # k_max = 10 wants min(10, 6 sessions) = 6: the list reaches rank 11 (s6)
    assert deeper["session_recall@10"] == 1.0 and deeper["session_recall_all@10"] == 1.0
    assert deeper["recall@10"] == 0.5 and deeper["hit_rate@10"] == 1.0  # rank 9 in, rank 11 out


def test_turn_level_list_is_kept_as_the_prefix():
    """The session step only appends: the list without it is the prefix, hit for hit."""
    d = _dialogue()
    session_of = {t.id: t.session_id for t in d.turns()}
    for name in ("bm25", "bm25_plus", "vector", "hybrid", "bm25_sessions"):
        s = strategies.get(name)
        for t in d.turns():
            s.observe(t.to_record("d"))
        plain, plain_tokens = _ranked(s, "kiwi", 3, 0, 1e9)
        deep, deep_tokens = _ranked(s, "kiwi", 3, 0, 1e9, (session_of, 6))
        assert [h.id for h in deep[:len(plain)]] == [h.id for h in plain], name
        assert deep_tokens[:len(plain)] == plain_tokens, name
        assert len({h.id for h in deep}) == len(deep), name


def test_the_extra_searches_do_not_reinforce_again():
    """reinforce="returned": the first search's hits (k_max of them) are recalled once; the
    deeper searches at the same query and time reinforce nothing."""
    s = strategies.get("bm25")
    s.set_params(decay=Ebbinghaus(), reinforce="returned")
    (row,) = replay_dialogue(s, _dialogue(), k_max=5)
    assert len(row["retrieved_ids"]) == 10
    counts = {t.id: s._decay.memory_state(t.id)["access_count"] for t in _dialogue().turns()}
    assert {i for i, c in counts.items() if c} == set(row["retrieved_ids"][:5])
    assert sum(counts.values()) == 5


def test_a_stochastic_strategy_is_not_deepened():
    s = strategies.get("bm25")
    s.set_params(decay=Ebbinghaus(stochastic=True, seed=1))
    assert s.capabilities().stochastic
    (row,) = replay_dialogue(s, _dialogue(), k_max=5)
    assert len(row["retrieved_ids"]) <= 5


def test_no_gold_session_no_extra_search():
    d = _dialogue()
    d.probes = [Probe("p", None, "kiwi", evidence=[])]
    s = strategies.get("bm25")
    calls = []
    retrieve = s.retrieve
    s.retrieve = lambda query, k=5, **kw: calls.append(k) or retrieve(query, k, **kw)  # type: ignore[method-assign]
    (row,) = replay_dialogue(s, d, k_max=5)
    assert calls[0] == 5 and 10 not in calls and len(row["retrieved_ids"]) == 5


@pytest.mark.parametrize("name", ["bm25", "bm25_plus", "bm25_sessions"])
def test_shipped_session_hit_rate_does_not_depend_on_k(name):
    ds = load_any(ROOT / "datasets")
    at5 = replay(strategies.get(name), ds, ks=(1, 5), k_max=5)
    at10 = replay(strategies.get(name), ds, ks=(1, 5, 10), k_max=10, budgets=(512,))
    for m in ("session_hit_rate@5", "session_recall@5", "session_ndcg@5", "recall@5", "hit_rate@5", "mrr@5"):
        assert at5[m].equals(at10[m]), m


def test_the_readme_command_output_is_the_bench_row():
    """bench/results/longmemeval_cli_bm25_s.json (the README's ``memlab eval ... --k 5 --json`` on
    the full S dev) agrees with the bench's ``bm25`` row on S dev (bench/results/longmemeval.json,
    six decimals), LongMemEval's metrics included: both read lists deep enough for k."""
    import json

    cli = json.loads((ROOT / "bench" / "results" / "longmemeval_cli_bm25_s.json").read_text())
    bench = json.loads((ROOT / "bench" / "results" / "longmemeval.json").read_text())["s"]["bm25"]
    assert cli["n_scored"] == bench["n_scored"]
    assert cli["provenance"]["status"] == "complete" and cli["provenance"]["command"][:2] == ["memlab", "eval"]
    for m in ("lme_recall_any@5", "lme_recall_all@5", "lme_turn_recall_any@5", "session_hit_rate@5",
              "session_recall_all@5", "recall@5", "hit_rate@5"):
        assert round(cli[m], 6) == bench[m], m
