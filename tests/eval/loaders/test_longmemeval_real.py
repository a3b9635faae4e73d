"""LongMemEval loading, streaming and label hiding on small slices cut from the shared files.

The slices are written to a temporary folder at test time (the files are never copied into
the repository); the S file is streamed, never loaded whole. Skipped without ../shared.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from memlab.eval.dataset import DatasetError, LoadReport
from memlab.eval.loaders import (
    iter_longmemeval, load_dataset, neutral_session_id, parse_longmemeval_date, sniff_format,
)
from memlab.eval.loaders.checks import iter_json_array
from memlab.eval.paths import LONGMEMEVAL_ORACLE, LONGMEMEVAL_S, longmemeval_path
from memlab.eval import load_any, replay
from memlab.eval.streaming import StreamedDataset, open_dataset, replay_stream
from memlab.records import MemoryRecord
from memlab.strategies import get
from memlab.strategies.retrieval import RetrievalStrategy

ORACLE = longmemeval_path(LONGMEMEVAL_ORACLE)
S = longmemeval_path(LONGMEMEVAL_S)
pytestmark = pytest.mark.skipif(ORACLE is None or S is None, reason="../shared/datasets/longmemeval absent")


def cut(source: Path, indexes: list[int]) -> list[dict]:
    """The questions at these positions of a shared file (streamed up to the last one)."""
    wanted, out = set(indexes), {}
    for i, q in enumerate(iter_json_array(str(source))):
        if i in wanted:
            out[i] = q
        if i >= max(indexes):
            break
    return [out[i] for i in indexes]


def write(tmp_path: Path, name: str, questions: list[dict]) -> Path:
    path = tmp_path / name
    data = json.dumps(questions).encode("utf-8")
    path.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    return path


@pytest.fixture(scope="module")
def oracle_q():
    return cut(ORACLE, list(range(8)))      # questions 1, 3, 4, 6, 7 are dated before their last session


@pytest.fixture(scope="module")
def s_q():
    return cut(S, [0, 3, 4, 51])              # 3 and 4 list a session twice; 51 is an abstention question


def test_gzip_and_plain_json_load_the_same(tmp_path, oracle_q):
    plain, packed = write(tmp_path, "o.json", oracle_q), write(tmp_path, "o.json.gz", oracle_q)
    assert packed.read_bytes()[:2] == b"\x1f\x8b"
    a, b = load_dataset(str(plain)), load_dataset(str(packed))
    assert sniff_format(str(packed)) == "longmemeval"
    assert a.hash == b.hash and len(a) == 8
    folder = tmp_path / "folder"
    folder.mkdir()
    write(folder, "a.json", oracle_q[:3]), write(folder, "b.json.gz", oracle_q[3:])
    assert load_any(folder, format="longmemeval").hash == a.hash   # a folder takes .json.gz too


def test_gzip_for_every_loader(tmp_path):
    from ..conftest import tiny_doc

    path = tmp_path / "tiny.json.gz"
    path.write_bytes(gzip.compress(json.dumps(tiny_doc()).encode()))
    assert load_dataset(str(path)).n_probes == 4
    bad = tmp_path / "bad.json.gz"
    bad.write_bytes(gzip.compress(b"[1, 2")[:-4])
    with pytest.raises(DatasetError, match="bad.json.gz: not a valid gzip file"):
        load_dataset(str(bad), format="longmemeval")


def test_questions_dated_before_their_last_session_are_asked_after_it(tmp_path, oracle_q):
    ds = load_dataset(str(write(tmp_path, "o.json", oracle_q)))
    early = [e["probe"] for e in ds.report.of_kind("question_before_last_turn")]
    expected = [q["question_id"] for q in oracle_q
                if parse_longmemeval_date(q["question_date"]) < max(map(parse_longmemeval_date, q["haystack_dates"]))]
    assert early == expected and len(early) == 5
    for d in ds:
        p, q = d.probes[0], next(q for q in oracle_q if q["question_id"] == d.id)
        last = d.turns()[-1].timestamp
        assert p.metadata["question_date"] == q["question_date"]
        assert p.timestamp == max(parse_longmemeval_date(q["question_date"]), last)
        assert p.metadata.get("dated_before_last_turn", False) == (d.id in early)


def test_identical_duplicate_sessions_are_kept_once(tmp_path, s_q):
    ds = load_dataset(str(write(tmp_path, "s.json.gz", s_q)))
    dropped = ds.report.of_kind("duplicate_session_dropped")
    assert sorted({e["dialogue"] for e in dropped}) == sorted([s_q[1]["question_id"], s_q[2]["question_id"]])
    for d, q in zip(ds, s_q):
        assert len(d.sessions) == len(set(q["haystack_session_ids"]))
    changed = json.loads(json.dumps(s_q[1:2]))
    ids = changed[0]["haystack_session_ids"]
    twice = next(s for s in ids if ids.count(s) == 2)
    changed[0]["haystack_sessions"][len(ids) - 1 - ids[::-1].index(twice)][0]["content"] += " (edited)"
    with pytest.raises(DatasetError, match=rf"session '{twice}': duplicate session id with different content"):
        load_dataset(str(write(tmp_path, "bad.json", changed)))


def test_abstention_is_unscored_at_both_levels(tmp_path, s_q):
    ds = load_dataset(str(write(tmp_path, "s.json", s_q)))
    p = ds.dialogue(s_q[3]["question_id"]).probes[0]
    assert s_q[3]["question_id"].endswith("_abs")
    assert p.evidence == [] and p.metadata["evidence_sessions"] == [] and p.metadata["abstention"]
    assert ds.report.counts()["abstention_unscored"] == 1
    scored = ds.dialogue(s_q[0]["question_id"]).probes[0]
    assert scored.metadata["evidence_sessions"] == [neutral_session_id(s) for s in s_q[0]["answer_session_ids"]]


def test_user_turns_only(tmp_path, oracle_q):
    path = str(write(tmp_path, "o.json", oracle_q))
    every, users = load_dataset(path, roles=None), load_dataset(path)
    assert {t.role for d in users for t in d.turns()} == {"user"}
    assert [t.id for d in users for t in d.turns()] == [t.id for d in every for t in d.turns() if t.role == "user"]
    assert [p.evidence for d in users for p in d.probes] == [p.evidence for d in every for p in d.probes]
    with pytest.raises(DatasetError, match="roles must be a non-empty list of roles"):
        load_dataset(path, roles=("bot",))


class Spy(RetrievalStrategy):
    """bm25 that writes down every record, hit and context it is given or builds."""

    ids: list[str] = []     # record / hit / context ids and metadata
    texts: list[str] = []   # turn texts and context messages

    def observe(self, record: MemoryRecord) -> None:
        Spy.ids += [record.id, json.dumps(record.metadata)]
        Spy.texts.append(record.content)
        super().observe(record)

    def retrieve(self, query, k=5, **kw):
        hits = super().retrieve(query, k, **kw)
        Spy.ids += [h.id + json.dumps(h.memory_record.metadata) for h in hits]
        return hits

    def build_context(self, query, **kw):
        ctx = super().build_context(query, **kw)
        Spy.ids += [json.dumps(ctx.record_ids), json.dumps(ctx.source_ids)]
        Spy.texts.append(json.dumps(ctx.messages))
        return ctx


def test_no_published_session_id_reaches_a_strategy(tmp_path, oracle_q, s_q):
    questions = oracle_q + s_q[1:2]
    raw_ids = {s for q in questions for s in q["haystack_session_ids"]}
    assert sum(s.startswith("answer_") for s in raw_ids) >= 8
    ds = load_dataset(str(write(tmp_path, "mix.json", questions)))
    Spy.ids, Spy.texts = [], []
    rows = replay(Spy(), ds, ks=(5,))
    replay(Spy(retriever=get("bm25_plus").retriever), ds, ks=(5,))     # contextual index texts
    assert len(Spy.ids) > 1000
    for text in Spy.ids:   # ids and metadata: not even the word
        assert "answer" not in text and not any(r in text for r in raw_ids), text[:200]
    for text in Spy.texts:  # turn texts may say "answer"; no published id may appear
        assert "answer_" not in text and not any(r in text for r in raw_ids if len(r) > 8), text[:200]
    turn_ids = [t.id for d in ds for t in d.turns()] + [i for g in rows["gold"] for i in g]
    assert not any("answer" in i for i in turn_ids)
    for d in ds:   # what a reference strategy could see of a probe holds no published id either
        meta = json.dumps(d.probes[0].metadata)
        assert "answer" not in meta and not any(r in meta for r in raw_ids)


def test_streamed_replay_equals_a_full_load(tmp_path, oracle_q, s_q):
    path = str(write(tmp_path, "mix.json.gz", oracle_q[:3] + s_q[:2]))
    streamed = open_dataset(path)
    assert isinstance(streamed, StreamedDataset)
    ds = load_dataset(path)
    a = replay(get("bm25_plus"), ds, ks=(1, 5), budgets=(512,), provenance={})
    b = replay_stream(get("bm25_plus"), streamed, ks=(1, 5), budgets=(512,), provenance={})
    assert streamed.hash == ds.hash and len(streamed) == 5 and streamed.n_probes == 5
    assert streamed.report.counts() == ds.report.counts()
    assert a.drop(columns=["latency_ms"]).equals(b.drop(columns=["latency_ms"]))
    two = replay_stream(get("bm25_plus"), open_dataset(path), ks=(1, 5), budgets=(512,), provenance={}, n_jobs=2)
    assert two.drop(columns=["latency_ms"]).equals(b.drop(columns=["latency_ms"]))
    one = open_dataset(path).subset(categories=["temporal-reasoning"])
    assert set(replay_stream(get("bm25"), one)["category"]) == {"temporal-reasoning"}
    with pytest.raises(DatasetError, match=r"unknown categories \['typo'\]"):
        replay_stream(get("bm25"), open_dataset(path).subset(categories=["typo"]))
    ids = [d.id for d in ds.dialogues]
    kept = open_dataset(path).subset(dialogues=[ids[3], ids[1]])
    rows = replay_stream(get("bm25"), kept)    # file order, as a full load cut the same way
    assert list(rows["dialogue_id"]) == [ids[1], ids[3]] and len(kept) == 2
    assert kept.hash == ds.subset(dialogues=[ids[1], ids[3]]).hash
    with pytest.raises(DatasetError, match=r"has no dialogue 'zzz'"):
        replay_stream(get("bm25"), open_dataset(path).subset(dialogues=[ids[0], "zzz"]))


def test_the_loader_holds_one_question_at_a_time():
    it = iter_longmemeval(str(S), report=LoadReport())
    first = next(it)
    assert len(first.probes) == 1 and 30 <= len(first.sessions) <= 70
    it.close()


def test_sessions_as_units_cover_their_turns(tmp_path, oracle_q):
    ds = load_dataset(str(write(tmp_path, "o.json", oracle_q[:4])), roles=("user",))
    rows = replay(get("bm25_sessions"), ds, ks=(1, 5), budgets=(2048,))
    d = ds.dialogues[0]
    by_session = {s.id: [t.id for t in s.turns] for s in d.sessions}
    first = rows.iloc[0]
    assert [i.split(":", 1)[1] for i in first["retrieved_ids"]] == [
        next(s for s, t in by_session.items() if t == src) for src in first["retrieved_source_ids"]]
    s = get("bm25_sessions")
    for t in d.turns():
        s.observe(t.to_record(d.id))
    hit = s.retrieve(d.probes[0].query, 1)[0]
    sid = hit.memory_record.metadata["session_id"]
    session = next(x for x in d.sessions if x.id == sid)
    assert hit.memory_record.timestamp == session.timestamp
    assert hit.memory_record.content.splitlines()[1:] == [f"user: {t.text}" for t in session.turns]
    from memlab.strategy import _default_counter
    assert s.hit_tokens([hit]) == [_default_counter().count_message(s.session_record(sid).to_openai())]


def test_the_readme_command_runs_as_written_on_a_slice(tmp_path, s_q):
    import re
    import shlex

    from memlab.cli import main

    readme = (Path(__file__).resolve().parents[3] / "docs" / "results.md").read_text(encoding="utf-8")
    line = re.search(r"^\.venv/bin/memlab eval \.\./shared/datasets/longmemeval/longmemeval_s_cleaned\.dev\.json\.gz .*$",
                     readme, flags=re.M)
    assert line, "docs/results.md shows the LongMemEval command"
    args = shlex.split(line.group(0))[1:]
    args[1] = str(write(tmp_path, "longmemeval_s_slice.json.gz", s_q))   # the same file format, 4 questions
    import contextlib
    import io
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(args) == 0
    result = json.loads(out.getvalue())
    assert result["n_probes"] == 4 and result["n_scored"] == 3     # the abstention question is left out
    for name in ("session_hit_rate@5", "session_recall_all@5", "recall@5", "hit_rate@5"):
        assert 0 <= result[name] <= 1 and len(result["ci"][name]) == 2
    assert result["dataset_report"]["counts"]["duplicate_session_dropped"] == 2


def test_session_dates_reach_contextual_indexing_and_decay(tmp_path, oracle_q):
    from memlab.retrieval.contextual import format_date

    ds = load_dataset(str(write(tmp_path, "o.json", oracle_q[:2])))
    d = ds.dialogues[0]
    strategy = get("bm25_plus")
    for t in d.turns():
        strategy.observe(t.to_record(d.id))
    for s in d.sessions:
        for t in s.turns:
            # turn i of a session is said at the session's date + i seconds: the date line is the session's
            assert strategy.retriever.index_text(t.id).splitlines()[-1] == format_date(s.timestamp)
            assert t.to_record().timestamp - s.timestamp < 60
    decayed = get("hybrid_decay", embedder="hashing")
    rows = replay(decayed, ds, ks=(5,))
    assert rows["recall@5"].notna().all()
