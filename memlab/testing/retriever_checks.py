"""``check_retriever``: the generic checks every retriever must pass (built-in or user-written),
and the records they index (``retriever_records``)."""

from __future__ import annotations

import pickle
from typing import Any, Callable

from ..capabilities import capabilities_of
from ..records import MemoryRecord
from ..retrieval.base import Retriever
from .parts import check_parts
from .strategy_checks import T0, run_checks


#: Records the retriever checks index: turns, a blank one, repeated words, a session each.
RETRIEVER_TEXTS = ["I planned a trip to Japan", "Kyoto and Osaka in spring", "my sister lives in Osaka",
                   "strong black coffee", "switched from coffee to green tea", "a window seat please",
                   "coffee coffee coffee", "", "Osaka Osaka trip"]
RETRIEVER_QUERIES = ["coffee", "Osaka trip", "where does the sister live", "zzz unknown", "", "   "]


def retriever_records() -> list[MemoryRecord]:
    return [MemoryRecord("user" if i % 2 == 0 else "assistant", t, id=f"D1:{i + 1}",
                         timestamp=T0 + 3600.0 * i, metadata={"session": i // 3})
            for i, t in enumerate(RETRIEVER_TEXTS)]


def _run(retriever: Retriever, k: int = 4) -> list[Any]:
    retriever.add(retriever_records())
    return [[(h.id, h.score, h.rank, h.components) for h in retriever.search(q, k)] for q in RETRIEVER_QUERIES]


def check_retriever(retriever: Retriever) -> list[str]:
    """Run every generic check on (clones of) ``retriever``; return the names of the checks.

    The contract: at most ``k`` hits, ranks 1..n, scores non-increasing, no repeated id,
    ``components[name]`` holding the hit's own score and rank, ``hit.record`` the record
    ``get_record`` returns; an empty index finds nothing; ``reset``, ``clone`` and
    ``pickle`` give a retriever that behaves as a fresh one, bit for bit; using it leaves
    its parameters unchanged; ``records``, ``len`` and ``in`` agree with what was added;
    ``search(q, k)`` is the first ``k`` of ``search(q, search_depth(k))``;
    every part it holds is a parameter (``hidden_parts``).
    """
    checks: list[tuple[str, Callable[[Retriever], None]]] = [
        ("is_retriever", _check_is_retriever),
        ("parts_are_parameters", check_parts),
        ("hits_obey_the_contract", _check_hits),
        ("records_are_honest", _check_records),
        ("deterministic", lambda r: _check_same(_run(r.clone()), _run(r.clone()), "two identical runs differ")),
        ("reset_is_fresh", _check_retriever_reset),
        ("picklable", lambda r: _check_same(_run(pickle.loads(pickle.dumps(r))), _run(r.clone()),
                                            "an unpickled retriever behaves differently")),
        ("params_unchanged_by_use", _check_retriever_params),
        ("search_depth_serves_its_prefix", _check_search_depth),
    ]
    if capabilities_of(retriever).exact_search:  # chosen by what the retriever declares
        checks.append(("exact_search_is_a_prefix", _check_exact_prefix))
    return run_checks(retriever, checks)


def _check_is_retriever(r: Retriever) -> None:
    assert isinstance(r, Retriever), f"{type(r).__name__} is not a memlab Retriever"


def _check_hits(r: Retriever) -> None:
    assert r.search("coffee") == [], "an empty index returned hits"
    r.add(retriever_records())
    for q in RETRIEVER_QUERIES:
        for k in (0, 1, 3, 20):
            hits = r.search(q, k)
            assert len(hits) <= k, f"{len(hits)} hits for k={k}"
            assert [h.rank for h in hits] == list(range(1, len(hits) + 1)), "ranks must be 1..n"
            scores = [h.score for h in hits]
            assert scores == sorted(scores, reverse=True), f"scores not sorted: {scores}"
            assert len({h.id for h in hits}) == len(hits), "duplicate ids in hits"
            for h in hits:
                own = h.components.get(r.name)
                assert own is not None and own.get("score") == h.score and own.get("rank") == h.rank, \
                    f"components[{r.name!r}] must hold the hit's score and rank, got {own!r}"
                assert h.record is r.get_record(h.id), "hit.record must be the record get_record returns"
                assert h.timestamp == h.record.timestamp, "hit.timestamp must be the record's"
    assert r.search("coffee", 1) != [], "a query sharing words with the records found nothing"


def _check_records(r: Retriever) -> None:
    records = retriever_records()
    r.add(records)
    held = [x.id for x in r.records()]
    assert held == [x.id for x in records if x.id in r], "records() must list what is held, in order"
    assert len(r) == len(held) and all(r.get_record(i).id == i for i in held)
    r.remove([held[0]])
    assert held[0] not in r and len(r) == len(held) - 1, "remove must forget the id"
    assert all(h.id != held[0] for q in RETRIEVER_QUERIES for h in r.search(q, 20)), "a removed id was found"


def _check_exact_prefix(r: Retriever) -> None:
    r.add(retriever_records())
    for q in RETRIEVER_QUERIES:
        deep = [(h.id, h.score, h.rank) for h in r.search(q, 20)]
        for k in (1, 2, 3):
            assert [(h.id, h.score, h.rank) for h in r.search(q, k)] == deep[:k], \
                f"declares exact_search but search({q!r}, {k}) is not the top of a deeper search"


def _check_search_depth(r: Retriever) -> None:
    def first_search(q: str, n: int) -> list[tuple]:
        # each search on a fresh filled clone: a search that changes state (a forgetting
        # draw) must not make the two differ
        fresh = r.clone()
        fresh.add(retriever_records())
        return [(h.id, h.score, h.rank, h.components) for h in fresh.search(q, n)]

    for q in RETRIEVER_QUERIES:
        for k in (1, 3, 20):
            depth = r.search_depth(k)
            assert isinstance(depth, int) and depth >= k, f"search_depth({k}) = {depth!r}, expected an int >= {k}"
            assert first_search(q, k) == first_search(q, depth)[:k], \
                f"search({q!r}, {k}) is not the top of search({q!r}, search_depth({k}) = {depth})"


def _check_same(a: Any, b: Any, message: str) -> None:
    assert a == b, message


def _check_retriever_reset(r: Retriever) -> None:
    first = _run(r)
    r.reset()
    assert len(r) == 0 and r.search("coffee") == [], "reset left records behind"
    assert _run(r) == first, "after reset the retriever differs from its first run"


def _check_retriever_params(r: Retriever) -> None:
    before = repr(r.get_params())
    _run(r)
    assert repr(r.get_params()) == before, "using the retriever changed its parameters"


__all__ = ["RETRIEVER_QUERIES", "RETRIEVER_TEXTS", "check_retriever", "retriever_records"]
