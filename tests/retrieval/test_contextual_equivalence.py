"""The linked-list contextual index equals the scanning one it replaced, bit for bit.

``ReferenceContextualRetriever`` below is the implementation ``ContextualRetriever`` had
before its sessions became linked lists (commit 3a3fa31): it found neighbours by scanning the
insertion order for same-session records, O(N) per lookup at a session's first turns. The
tests compare the two on random add / remove / re-add / set_params sequences (hypothesis:
index texts, what the wrapped retriever holds and in which order, search results) and on
whole replays of every built-in strategy that indexes contextually, on the shipped datasets
and a LoCoMo conversation (every row column but latency_ms).
"""

from __future__ import annotations

import math

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import memlab.retrieval
from memlab.base import Param
from memlab.records import Hit, MemoryRecord
from memlab.retrieval import BM25Retriever, ContextualRetriever, Tokenizer
from memlab.retrieval.base import Retriever, WrapperRetriever
from memlab.retrieval.contextual import format_date
from memlab.filters import Where


class ReferenceContextualRetriever(WrapperRetriever):
    """The scanning implementation, kept verbatim as the reference (see the module docstring)."""

    name = "contextual"

    constraints = {
        "before": Param(int, ge=0),
        "after": Param(int, ge=0),
        "own_weight": Param(int, ge=1),
        "neighbour_weight": Param(int, ge=0),
        "date": Param(bool),
        "same_session": Param(bool),
        # added after the reference was kept: the cap is off (None) here, so that the reference
        # has ContextualRetriever's parameters; the cap itself is tested in test_contextual.py
        "neighbour_words": Param(type(None), none=True),
    }

    def __init__(self, retriever: Retriever, before: int = 1, after: int = 1, own_weight: int = 2,
                 neighbour_weight: int = 1, date: bool = True, same_session: bool = True,
                 neighbour_words: None = None):
        super().__init__()
        self.neighbour_words = neighbour_words
        self.retriever = retriever
        self.before = before
        self.after = after
        self.own_weight = own_weight
        self.neighbour_weight = neighbour_weight
        self.date = date
        self.same_session = same_session
        self._order_ids: list[str] = []
        self._texts: dict[str, str] = {}
        self._on_params_changed()

    def _on_params_changed(self) -> None:
        self._sync([self.retriever])
        if self._records:
            self._texts = {}
            self._reindex(list(self._order_ids))

    def _session(self, id: str) -> object:
        return self._records[id].metadata.get("session_id") if self.same_session else None

    def _neighbours(self, pos: int) -> tuple[list[str], list[str]]:
        ids, session = self._order_ids, self._session(self._order_ids[pos])
        prev, nxt = [], []
        j = pos - 1
        while len(prev) < self.before and j >= 0:
            if self._session(ids[j]) == session:
                prev.append(ids[j])
            j -= 1
        j = pos + 1
        while len(nxt) < self.after and j < len(ids):
            if self._session(ids[j]) == session:
                nxt.append(ids[j])
            j += 1
        return prev[::-1], nxt

    def _text(self, pos: int) -> str:
        record = self._records[self._order_ids[pos]]
        prev, nxt = self._neighbours(pos)
        lines = [record.content] * self.own_weight
        for n in prev + nxt:
            lines.extend([self._records[n].content] * self.neighbour_weight)
        if self.date:
            lines.append(format_date(record.timestamp))
        return "\n".join(lines)

    def index_text(self, id: str) -> str:
        try:
            return self._texts[str(id)]
        except KeyError:
            raise KeyError(f"ContextualRetriever has no record with id {id!r}") from None

    def _affected(self, positions: set[int]) -> set[int]:
        n, reach = len(self._order_ids), max(self.before, self.after)
        out: set[int] = set()
        for p in positions:
            lo = p
            found, j = 0, p - 1
            while j >= 0 and found < reach:
                if self._session(self._order_ids[j]) == self._session(self._order_ids[p]):
                    found += 1
                    lo = j
                j -= 1
            hi, found, j = p, 0, p + 1
            while j < n and found < reach:
                if self._session(self._order_ids[j]) == self._session(self._order_ids[p]):
                    found += 1
                    hi = j
                j += 1
            out.update(range(lo, hi + 1))
        return out

    def _positions(self) -> dict[str, int]:
        pos = self.__dict__.get("_pos_cache")
        if pos is None or len(pos) > len(self._order_ids):
            pos = self.__dict__["_pos_cache"] = {}
        order = self._order_ids
        for p in range(len(pos), len(order)):
            pos[order[p]] = p
        return pos

    def _reindex(self, ids: list[str]) -> None:
        where = self._positions()
        changed = []
        for i in ids:
            text = self._text(where[i])
            if self._texts.get(i) != text or i not in self.retriever:
                self._texts[i] = text
                r = self._records[i]
                changed.append(MemoryRecord(role=r.role, content=text, id=r.id, timestamp=r.timestamp,
                                            metadata=r.metadata, tool_calls=r.tool_calls))
        if changed:
            self.retriever.add(changed)

    def _add(self, records: list[MemoryRecord]) -> None:
        start = len(self._order_ids)
        self._order_ids.extend(r.id for r in records)
        touched = self._affected(set(range(start, len(self._order_ids))))
        self._reindex([self._order_ids[p] for p in sorted(touched)])

    def _adopted(self, records: list[MemoryRecord]) -> None:
        self._order_ids.extend(r.id for r in records)

    def _remove(self, ids: list[str]) -> None:
        gone = set(ids)
        where = self._positions()
        around = self._affected({where[i] for i in ids})
        neighbours = [self._order_ids[p] for p in sorted(around) if self._order_ids[p] not in gone]
        self.retriever.remove(ids)
        self._order_ids = [i for i in self._order_ids if i not in gone]
        self.__dict__["_pos_cache"] = None
        for i in ids:
            self._texts.pop(i, None)
        self._reindex(neighbours)

    def _clear(self) -> None:
        self.retriever.reset()
        self._order_ids = []
        self.__dict__["_pos_cache"] = None
        self._texts = {}

    def search(self, query: str, k: int = 5, *, where: Where | None = None,
               now: float | None = None) -> list[Hit]:
        k = self._check_search(k, where)
        if k == 0 or not self._records:
            return []
        inner = [h for h in self.retriever.search(query, k, where=where, now=now) if h.id in self._records]
        ranked = self._order([(h.id, h.score) for h in inner])[:k]
        found = {h.id: h for h in inner}
        return self._hits(ranked, [found[i].components for i, _ in ranked])


# The replays' configuration columns and strategy label name every component by its class name:
# the reference answers to the same one, so that every column can be compared.
ReferenceContextualRetriever.__name__ = ReferenceContextualRetriever.__qualname__ = "ContextualRetriever"


def state(r) -> dict:
    """What a contextual retriever's results depend on: its records in insertion order, each
    index text, and what the wrapped retriever holds, in its order (it breaks score ties)."""
    inner = r.retriever
    return {"records": [x.id for x in r.records()],
            "texts": {x.id: r.index_text(x.id) for x in r.records()},
            "inner": [(x.id, x.content) for x in sorted(inner.records(), key=lambda x: inner.position(x.id))]}


def hits(r, query: str) -> list[tuple]:
    return [(h.id, h.score, h.rank, {k: dict(v) for k, v in h.components.items()}) for h in r.search(query, 50)]


# -- random sequences ------------------------------------------------------------------------

WORDS = ["hiking", "alps", "sister", "paris", "coffee", "tea", "dog", "moved", "job", "paint", "yes", "last"]
# session values: strings, missing, equal numbers of three types (1 == 1.0 == True: one session),
# NaN (equal to nothing, itself included: no neighbours) and an unhashable list (equal to another
# list with the same items)
SESSIONS = ["s1", "s2", "s3", None, "missing", 1, 1.0, True, 0, float("nan"), ["l"]]
QUERIES = ["hiking alps", "coffee sister", "dog moved job", "paint yes last tea", "paris"]

session_value = st.sampled_from(range(len(SESSIONS)))
new_record = st.tuples(session_value, st.lists(st.sampled_from(WORDS), min_size=0, max_size=4))
op = st.one_of(
    st.tuples(st.just("add"), st.lists(new_record, min_size=1, max_size=4)),
    st.tuples(st.just("remove"), st.lists(st.integers(0, 10_000), min_size=1, max_size=3)),
    st.tuples(st.just("readd"), st.lists(st.tuples(st.integers(0, 10_000), new_record), min_size=1, max_size=2)),
    st.tuples(st.just("params"), st.fixed_dictionaries({}, optional={
        "before": st.integers(0, 3), "after": st.integers(0, 3), "same_session": st.booleans(),
        "own_weight": st.integers(1, 2), "neighbour_weight": st.integers(0, 2), "date": st.booleans()})),
)


def make(i: int, session: int, words: list[str]) -> MemoryRecord:
    value = SESSIONS[session]
    if isinstance(value, list):
        value = list(value)  # a fresh, equal list: equality, not identity, makes the session
    meta = {} if value == "missing" else {"session_id": value}
    return MemoryRecord("user" if i % 2 else "assistant", " ".join(words), id=f"r{i}",
                        timestamp=1_683_504_000.0 + 3600.0 * (i % 70), metadata=meta)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(params=st.fixed_dictionaries({"before": st.integers(0, 3), "after": st.integers(0, 3),
                                     "same_session": st.booleans(), "own_weight": st.integers(1, 2),
                                     "neighbour_weight": st.integers(0, 2), "date": st.booleans()}),
       ops=st.lists(op, min_size=1, max_size=12), prefill=st.lists(new_record, max_size=3))
def test_random_sequences_give_the_reference_state(params, ops, prefill):
    counter = iter(range(1_000_000))
    # a filled wrapped retriever (records adopted, then indexed in context) as the starting point
    filled = [make(next(counter), s, w) for s, w in prefill]
    retrievers = []
    for cls in (ContextualRetriever, ReferenceContextualRetriever):
        inner = BM25Retriever(tokenizer=Tokenizer(), variant="lucene")
        inner.add(filled)
        retrievers.append(cls(inner, **params))
    new, ref = retrievers
    assert state(new) == state(ref)
    for kind, arg in ops:
        ids = [x.id for x in ref.records()]
        if kind == "add":
            batch = [make(next(counter), s, w) for s, w in arg]
            new.add(batch)
            ref.add(batch)
        elif kind == "remove":
            if not ids:
                continue
            gone = [ids[j % len(ids)] for j in arg]
            new.remove(gone)
            ref.remove(gone)
        elif kind == "readd":  # an upsert: the id leaves its place and joins the end
            if not ids:
                continue
            again = {ids[j % len(ids)]: (s, w) for j, (s, w) in arg}
            batch = [MemoryRecord("user", " ".join(w), id=i, timestamp=1_683_504_000.0,
                                  metadata={"session_id": SESSIONS[s]} if SESSIONS[s] != "missing" else {})
                     for i, (s, w) in again.items()]
            new.add(batch)
            ref.add(batch)
        else:
            new.set_params(**arg)
            ref.set_params(**arg)
        assert state(new) == state(ref), (kind, arg)
        for q in QUERIES:
            assert hits(new, q) == hits(ref, q), q


def test_a_session_start_does_not_scan_the_history():
    """Many sessions: the links find a first turn's (absent) neighbours without a scan; a
    removal in the middle of a session joins its neighbours; equal to the reference."""
    made = [MemoryRecord("user", f"turn {i} word{i % 7}", id=f"t{i}", timestamp=float(i),
                         metadata={"session_id": f"s{i // 5}"}) for i in range(200)]
    new, ref = ContextualRetriever(BM25Retriever(), before=2), ReferenceContextualRetriever(BM25Retriever(), before=2)
    for r in made:
        new.add([r])
        ref.add([r])
    new.remove(["t102", "t7"])
    ref.remove(["t102", "t7"])
    assert state(new) == state(ref)
    assert new._neighbours("t103") == (["t100", "t101"], ["t104"])
    assert new._neighbours("t105") == ([], ["t106"])


# -- whole replays of the built-ins ----------------------------------------------------------

#: (name, parameters): every built-in that indexes through ContextualRetriever, offline embedders
CONTEXTUAL_BUILTINS = [
    ("bm25_plus", {}),
    ("hybrid_plus", {"embedders": ["hashing"]}),
    ("hybrid_decay", {"embedder": "hashing"}),
    ("longterm", {"embedder": None}),
    ("longterm", {"embedder": "hashing"}),
    ("layered", {"embedder": "hashing"}),
]
PROVENANCE = {"packages": {"memlab": "test"}, "git_commit": "0" * 40}  # no git call per replay


def _uses(strategy, cls) -> bool:
    return any(type(c) is cls for c in strategy.components())


def _replay_both(name: str, params: dict, dataset, monkeypatch) -> tuple[pd.DataFrame, pd.DataFrame]:
    from memlab import strategies
    from memlab.eval import replay

    strategy = strategies.get(name, **params)
    assert _uses(strategy, ContextualRetriever), f"{name} no longer indexes contextually"
    new = replay(strategy, dataset, ks=(1, 5, 10), k_max=10, budgets=(512,), provenance=PROVENANCE)
    with monkeypatch.context() as m:
        # the parts look ContextualRetriever up in memlab.retrieval when they build a strategy
        m.setattr(memlab.retrieval, "ContextualRetriever", ReferenceContextualRetriever)
        reference = strategies.get(name, **params)
    assert _uses(reference, ReferenceContextualRetriever) and not _uses(reference, ContextualRetriever)
    ref = replay(reference, dataset, ks=(1, 5, 10), k_max=10, budgets=(512,), provenance=PROVENANCE)
    return new, ref


def _assert_rows_equal(new: pd.DataFrame, ref: pd.DataFrame) -> None:
    assert list(new.columns) == list(ref.columns)
    assert len(new) == len(ref) > 0
    pd.testing.assert_frame_equal(new.drop(columns=["latency_ms"]), ref.drop(columns=["latency_ms"]),
                                  check_exact=True)
    # every retrieved list was compared element by element, scores as floats, exactly
    for a, b in zip(new["retrieved_scores"], ref["retrieved_scores"]):
        assert len(a) == len(b) and all(x == y or (math.isnan(x) and math.isnan(y)) for x, y in zip(a, b))


@pytest.fixture(scope="module")
def shipped():
    from memlab.eval import load_any
    from pathlib import Path

    return load_any(Path(__file__).resolve().parents[2] / "datasets")


@pytest.fixture(scope="module")
def locomo_conversation():
    from memlab.eval import load_any
    from memlab.eval.dataset import Dataset
    from memlab.eval.paths import locomo_path

    path = locomo_path()
    if path is None:
        pytest.skip("LoCoMo is not beside the repository (../shared/datasets/locomo/locomo10.json)")
    locomo = load_any(path, "locomo")
    return Dataset(name="locomo-conv0", dialogues=locomo.dialogues[:1])


@pytest.mark.parametrize("name, params", CONTEXTUAL_BUILTINS, ids=[f"{n}{p}" for n, p in CONTEXTUAL_BUILTINS])
def test_replay_rows_on_the_shipped_datasets_equal_the_reference(name, params, shipped, monkeypatch):
    _assert_rows_equal(*_replay_both(name, params, shipped, monkeypatch))


@pytest.mark.slow
@pytest.mark.parametrize("name, params", CONTEXTUAL_BUILTINS, ids=[f"{n}{p}" for n, p in CONTEXTUAL_BUILTINS])
def test_replay_rows_on_a_locomo_conversation_equal_the_reference(name, params, locomo_conversation, monkeypatch):
    _assert_rows_equal(*_replay_both(name, params, locomo_conversation, monkeypatch))
