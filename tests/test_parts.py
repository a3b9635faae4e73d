"""Parts of a composite: set_params on a live object reaches the parts built in __init__, and
check_retriever / check_strategy catch a composite that hides its parts."""

from __future__ import annotations

from pathlib import Path

import pytest

from memlab.base import ConfigError, Param
from memlab.eval import load_any
from memlab.records import MemoryRecord
from memlab.retrieval import BM25Retriever, Retriever
from memlab.strategies import RetrievalStrategy
from memlab.testing import check_retriever, check_strategy, hidden_parts

ROOT = Path(__file__).resolve().parents[1]


class BM25Built(Retriever):
    """BM25 built in ``__init__`` from this retriever's own k1 and b (a derived part)."""

    name = "bm25_built"
    constraints = {"k1": Param(float, ge=0), "b": Param(float, ge=0, le=1)}

    def __init__(self, k1: float = 1.5, b: float = 0.75):
        super().__init__()
        self.k1 = k1
        self.b = b
        self._bm25 = BM25Retriever(k1=k1, b=b)

    def _add(self, records):
        self._bm25.add(records)

    def _remove(self, ids):
        self._bm25.remove(ids)

    def _clear(self):
        self._bm25.reset()

    def search(self, query, k=5, *, where=None, now=None):
        k = self._check_search(k, where)
        hits = self._bm25.search(query, k, where=where, now=now)
        return self._hits([(h.id, h.score) for h in hits], [h.components for h in hits])


class HidesItsRetriever(BM25Built):
    """Deliberately bad: the BM25 it builds takes nothing from its parameters, so its k1 is
    out of reach of get_params, clone and set_params."""

    name = "hides"

    def __init__(self, k1: float = 1.5, b: float = 0.75):
        super().__init__(k1=k1, b=b)
        self._bm25 = BM25Retriever(k1=0.9)  # typed in: not the parameter k1


class ExposesPublicly(BM25Built):
    """Deliberately bad too: a public attribute holding a part that is not a parameter."""

    def __init__(self, k1: float = 1.5, b: float = 0.75):
        super().__init__(k1=k1, b=b)
        self.inner = BM25Retriever()


def _answers(strategy, dialogue):
    """Observe the dialogue's turns on ``strategy`` itself (no clone) and return its hits for
    every probe question at the end."""
    for turn in dialogue.turns():
        strategy.observe(turn.to_record(dialogue.id))
    return [[(h.id, h.score) for h in strategy.retrieve(p.query, 5)] for p in dialogue.probes]


def test_set_params_on_a_live_strategy_reaches_the_part_built_in_init():
    dialogues = load_any(ROOT / "datasets").dialogues
    live = RetrievalStrategy(retriever=BM25Built())
    _answers(live, dialogues[0])  # in use, then reconfigured in place
    live.set_params(retriever__k1=0.3, retriever__b=0.2)
    assert (live.retriever._bm25.k1, live.retriever._bm25.b) == (0.3, 0.2)  # rebuilt, not stale
    for dialogue in dialogues:  # now it ranks exactly as one built with those values
        live.reset()
        got = _answers(live, dialogue)
        assert got == _answers(RetrievalStrategy(retriever=BM25Built(k1=0.3, b=0.2)), dialogue), dialogue.id
    # and not as the old values did (the part really changed)
    assert any(_answers(RetrievalStrategy(retriever=BM25Built()), d) != _answers(
        RetrievalStrategy(retriever=BM25Built(k1=0.3, b=0.2)), d) for d in dialogues)


def test_set_params_rebuilds_a_used_retriever_afresh_with_its_new_part():
    r = BM25Built()
    r.add([MemoryRecord("user", "green tea every morning", id="a"), MemoryRecord("user", "tea", id="b")])
    before = r._bm25
    r.set_params(k1=2.0)
    assert r._bm25 is not before and r._bm25.k1 == 2.0
    assert len(r) == 0 and r.search("tea") == []  # it starts afresh, like a strategy after set_params
    r.add([MemoryRecord("user", "green tea every morning", id="a"), MemoryRecord("user", "tea", id="b")])
    fresh = BM25Built(k1=2.0)
    fresh.add([MemoryRecord("user", "green tea every morning", id="a"), MemoryRecord("user", "tea", id="b")])
    assert [(h.id, h.score) for h in r.search("tea", 2)] == [(h.id, h.score) for h in fresh.search("tea", 2)]


def test_a_failed_set_params_leaves_the_part_as_it_was():
    r = BM25Built(k1=1.2)
    with pytest.raises(ConfigError, match=r"^BM25Built parameter 'b': expected a number >= 0 and <= 1, got 7.0$"):
        r.set_params(k1=2.0, b=7.0)
    assert (r.k1, r._bm25.k1, r._bm25.b) == (1.2, 1.2, 0.75)


def test_a_part_built_from_the_parameters_is_not_hidden():
    assert hidden_parts(BM25Built()) == []
    assert check_retriever(BM25Built())[1] == "parts_are_parameters"
    assert check_strategy(RetrievalStrategy(retriever=BM25Built()))[1] == "parts_are_parameters"


def test_check_retriever_fails_a_composite_that_hides_its_part():
    assert hidden_parts(HidesItsRetriever()) == [
        "HidesItsRetriever._bm25 holds a BM25Retriever built in __init__, not from its parameters"]
    with pytest.raises(AssertionError, match=(
            r"^HidesItsRetriever failed check 'parts_are_parameters': HidesItsRetriever._bm25 holds a "
            r"BM25Retriever built in __init__, not from its parameters: get_params, clone and set_params "
            r"cannot see it; take each part as a constructor argument stored under its own name$")):
        check_retriever(HidesItsRetriever())


def test_check_strategy_fails_a_strategy_whose_retriever_hides_its_part():
    with pytest.raises(AssertionError, match=r"^RetrievalStrategy failed check 'parts_are_parameters': "
                                             r"HidesItsRetriever._bm25 holds a BM25Retriever"):
        check_strategy(RetrievalStrategy(retriever=HidesItsRetriever()))


def test_a_public_part_that_is_no_parameter_is_hidden():
    assert hidden_parts(ExposesPublicly()) == [
        "ExposesPublicly.inner holds a BM25Retriever (public attribute, not a parameter)"]
    with pytest.raises(AssertionError, match="parts_are_parameters"):
        check_retriever(ExposesPublicly())
