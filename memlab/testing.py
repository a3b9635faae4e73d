"""check_strategy and check_retriever: the generic checks every strategy and every
retriever must pass (built-in or user-written).

Run them on a fresh instance::

    from memlab.testing import check_retriever, check_strategy
    check_strategy(MyStrategy(alpha=0.3))
    check_retriever(MyRetriever(k1=1.2))

Besides the checks every one runs, some are chosen by what the subject declares in
``capabilities()`` (as scikit-learn's estimator checks by tags): a strategy whose asking
changes nothing answers a second time the same; one with ``query_time_params`` switched by
``set_query_params`` behaves as one built with the value; an ``exact_search`` retriever's
top k is the top of any deeper search.

Each check raises ``AssertionError`` with the check's name; on success the names of the
checks that ran are returned.

Two test doubles with hand-computable outputs are here too: ``WordCounter`` (one token per
word) and ``KeywordEmbedder`` (counts of a fixed vocabulary), for exact budget and
similarity arithmetic in tests.
"""

from __future__ import annotations

import inspect
import pickle
import re
from typing import Any, Callable, Iterator

import numpy as np

from .base import Component
from .capabilities import capabilities_of
from .embeddings.base import Embedder
from .records import MemoryRecord, Role
from .retrieval.base import Retriever
from .strategy import Context, Strategy
from .tokens import TokenCounter


class WordCounter(TokenCounter):
    """One token per whitespace-separated word, so budgets are exact arithmetic."""

    def _count(self, text: str) -> int:
        return len(text.split())


class KeywordEmbedder(Embedder):
    """Counts of fixed vocabulary words: cosine similarities are computable by hand."""

    def __init__(self, vocab: tuple[str, ...] = ("apple", "banana", "cherry")):
        self.vocab = vocab

    @property
    def dim(self) -> int:
        return len(self.vocab)

    def _embed(self, texts: list[str]) -> np.ndarray:
        words = [re.findall(r"\w+", t.lower()) for t in texts]
        return np.array([[w.count(v) for v in self.vocab] for w in words], dtype=np.float32)

#: A short dialogue used by the checks: facts, distractors, a change of preference.
CHECK_TURNS: list[tuple[str, str]] = [
    ("user", "Hi, I am planning a trip to Japan next spring."),
    ("assistant", "Lovely! Which cities are you considering for the trip?"),
    ("user", "Kyoto and Osaka. My budget is about 2000 dollars."),
    ("assistant", "That budget works well for Kyoto and Osaka in spring."),
    ("user", "I like coffee in the morning, strong and black."),
    ("assistant", "Noted: strong black coffee in the morning."),
    ("user", "My sister lives in Osaka, so I can stay with her."),
    ("assistant", "Staying with your sister will save on hotels."),
    ("user", "Actually I switched from coffee to green tea last month."),
    ("assistant", "Green tea it is. Kyoto has wonderful tea houses."),
    ("user", "Please book a window seat on the flight."),
    ("assistant", "A window seat is noted for your flight to Osaka."),
]
CHECK_QUERIES = ["What does the user drink in the morning?", "Where does the sister live?",
                 "What is the budget?", "zzzz unknown words qqqq", ""]
T0 = 1_700_000_000.0


def check_records() -> list[MemoryRecord]:
    return [MemoryRecord(role=Role.parse(role), content=text, id=f"D1:{i + 1}",
                         timestamp=T0 + 3600.0 * i, metadata={"session_id": "S1"})
            for i, (role, text) in enumerate(CHECK_TURNS)]


def _fingerprint(strategy: Strategy, k: int = 5) -> list[Any]:
    out: list[Any] = []
    for q in CHECK_QUERIES:
        hits = strategy.retrieve(q, k, now=T0 + 3600.0 * len(CHECK_TURNS))
        out.append([(h.id, round(float(h.score), 12), h.rank) for h in hits])
    return out


def _feed(strategy: Strategy) -> Strategy:
    for record in check_records():
        strategy.observe(record)
    return strategy


def _param_snapshot(component: Component) -> dict[str, str]:
    return {k: repr(v) for k, v in component.get_params(deep=True).items()
            if not isinstance(v, Component)}


def check_strategy(strategy: Strategy, k: int = 3) -> list[str]:
    """Run every generic check on (clones of) ``strategy``; return the names of the checks."""
    checks: list[tuple[str, Callable[[Strategy], None]]] = [
        ("is_strategy", _check_is_strategy),
        ("parts_are_parameters", _check_parts),
        ("clone_round_trip", _check_clone),
        ("empty_store", _check_empty),
        ("at_most_k_sorted_ranked", lambda s: _check_results(s, k)),
        ("params_unchanged_by_use", _check_params_unchanged),
        ("reset_is_fresh", _check_reset),
        ("deterministic", _check_deterministic),
        ("picklable", _check_pickle),
        ("context", _check_context),
    ]
    # further checks chosen by what the strategy declares (``capabilities()``)
    caps = capabilities_of(strategy)
    if caps.asking_changes_nothing:
        checks.append(("asking_changes_nothing", _check_asking_changes_nothing))
    if caps.query_time_params:
        checks.append(("query_time_params_switch", _check_query_time_params))
    return _run_checks(strategy, checks)


# -- parts are parameters ---------------------------------------------------------------
def hidden_parts(component: Component) -> list[str]:
    """The parts ``component`` (or any component in its configuration) holds without exposing
    them as parameters, so that ``get_params``, ``clone`` and ``set_params`` cannot see them;
    one line each, e.g. ``"NextTurn.inner holds a BM25Retriever (public attribute, not a
    parameter)"``. Empty when every part is a parameter.

    A part is a Component held in an attribute (directly or in a list, tuple or dict). It is
    fine when it is one of the parameters' components. Otherwise:

    - held in a public attribute: hidden (the contract: public attributes are the
      constructor arguments, derived state lives in ``_``-attributes);
    - a ``Retriever`` or ``Strategy`` in a private attribute: hidden unless it is derived,
      i.e. it stands in for a parameter that is None (built by ``_resolve``, or accepted by
      that parameter's ``constraints``), wraps a component of the parameters (a chain
      around the retriever) or is built from the owner's parameters: each of its own parameters is at its default or equals the
      owner's parameter of the same name, and at least one is passed that way (so
      ``set_params`` of that name rebuilds it). A retriever built with its defaults only,
      or with a value typed into ``__init__``, is a hidden part: make it a parameter.

    Other private parts (token counters, context builders) are derived state.
    """
    problems: list[str] = []
    for owner in [component, *component.components()]:
        params = owner._param_names()
        reach = {id(owner)} | {id(c) for c in owner.components()}
        # defaults Component._resolve built for None parameters
        reach |= {id(c) for _, c in _held(vars(owner).get("_defaults", {}), "_defaults")}
        for attr, value in vars(owner).items():
            if attr in params or attr == "_defaults":
                continue
            for where, part in _held(value, attr):
                if id(part) in reach:
                    continue
                if not attr.startswith("_"):
                    problems.append(f"{type(owner).__name__}.{where} holds a {type(part).__name__} "
                                    f"(public attribute, not a parameter)")
                elif isinstance(part, (Retriever, Strategy)) and not (
                        _stands_in(owner, value) or any(id(c) in reach for c in part.components())
                        or _built_from_params(owner, part)):
                    problems.append(f"{type(owner).__name__}.{where} holds a {type(part).__name__} "
                                    f"built in __init__, not from its parameters")
    return problems


def _held(value: Any, name: str, depth: int = 0) -> Iterator[tuple[str, Component]]:
    if isinstance(value, Component):
        yield name, value
    elif depth < 2 and isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            yield from _held(item, f"{name}[{i}]", depth + 1)
    elif depth < 2 and isinstance(value, dict):
        for key, item in value.items():
            yield from _held(item, f"{name}[{key!r}]", depth + 1)


def _stands_in(owner: Component, value: Any) -> bool:
    """``value`` (a part, or a list of parts) is the default of a parameter of ``owner`` that is
    None, declared in ``constraints`` as accepting it."""
    if not isinstance(value, (Component, list, tuple)):
        return False
    for name in owner._param_names():
        spec = type(owner)._constraints.get(name)
        if getattr(owner, name) is None and spec is not None and spec.kind is not None and spec.accepts(value):
            return True
    return False


def _same(a: Any, b: Any) -> bool:
    if a is b:
        return True
    try:
        return bool(a == b)
    except Exception:
        return False


def _built_from_params(owner: Component, part: Component) -> bool:
    mine = {name: getattr(owner, name) for name in owner._param_names()}
    defaults = inspect.signature(type(part).__init__).parameters
    passed = 0
    for name in part._param_names():
        value = getattr(part, name)
        if name in mine and _same(mine[name], value):
            passed += 1
        elif not (defaults[name].default is not inspect.Parameter.empty and _same(defaults[name].default, value)):
            return False
    return passed > 0


def _check_parts(c: Component) -> None:
    problems = hidden_parts(c)
    assert not problems, (f"{'; '.join(problems)}: get_params, clone and set_params cannot see "
                          f"{'it' if len(problems) == 1 else 'them'}; take each part as a constructor "
                          f"argument stored under its own name")


def _check_is_strategy(s: Strategy) -> None:
    assert isinstance(s, Strategy), f"{type(s).__name__} is not a memlab Strategy"


def _check_clone(s: Strategy) -> None:
    c = s.clone()
    assert type(c) is type(s), "clone has another type"
    assert repr(c) == repr(s), f"clone repr {c!r} != {s!r}"
    assert _param_snapshot(c) == _param_snapshot(s), "clone has other parameters"
    for name, value in s.get_params(deep=False).items():
        if isinstance(value, Component):
            assert c.get_params(deep=False)[name] is not value, f"clone shares component {name!r}"


def _check_empty(s: Strategy) -> None:
    for q in CHECK_QUERIES:
        hits = s.retrieve(q, 5)
        assert hits == [], f"a fresh strategy returned {len(hits)} hits for {q!r}"
    ctx = s.build_context("anything")
    assert isinstance(ctx, Context), "build_context must return a Context"


def _check_results(s: Strategy, k: int) -> None:
    _feed(s)
    known = {r.id for r in check_records()}
    for q in CHECK_QUERIES:
        for kk in (1, k, 50):
            hits = s.retrieve(q, kk)
            assert len(hits) <= kk, f"{len(hits)} hits for k={kk}"
            scores = [h.score for h in hits]
            assert all(a >= b for a, b in zip(scores, scores[1:])), f"scores not sorted: {scores}"
            assert [h.rank for h in hits] == list(range(1, len(hits) + 1)), "ranks must be 1..n"
            assert len({h.id for h in hits}) == len(hits), "duplicate ids in hits"
            for h in hits:
                assert set(h.memory_record.source_ids) <= known, \
                    f"hit {h.id} names unknown source ids {h.memory_record.source_ids}"
    assert s.retrieve(CHECK_QUERIES[0], 0) == [], "k=0 must return no hits"


def _check_params_unchanged(s: Strategy) -> None:
    before = _param_snapshot(s)
    _feed(s)
    for q in CHECK_QUERIES:
        s.retrieve(q, 5)
        s.build_context(q)
    assert _param_snapshot(s) == before, "using the strategy changed its parameters"


def _check_reset(s: Strategy) -> None:
    fresh = _fingerprint(_feed(s.clone()))
    _feed(s)
    s.retrieve(CHECK_QUERIES[0], 5)
    s.reset()
    assert all(s.retrieve(q, 5) == [] for q in CHECK_QUERIES), "reset left memories behind"
    assert _fingerprint(_feed(s)) == fresh, "after reset the strategy differs from a fresh clone"


def _check_deterministic(s: Strategy) -> None:
    a = _fingerprint(_feed(s.clone()))
    b = _fingerprint(_feed(s.clone()))
    assert a == b, "two identical runs gave different results"


def _check_pickle(s: Strategy) -> None:
    _feed(s)
    restored = pickle.loads(pickle.dumps(s))
    assert _fingerprint(restored) == _fingerprint(s), "an unpickled strategy behaves differently"


def _check_context(s: Strategy) -> None:
    _feed(s)
    ctx = s.build_context(CHECK_QUERIES[0])
    assert isinstance(ctx.messages, list) and ctx.token_count >= 0
    assert all(isinstance(m, dict) and "role" in m for m in ctx.messages), "messages must be dicts"
    known = {r.id for r in check_records()}
    assert set(ctx.source_ids) <= known, f"context names unknown turns {set(ctx.source_ids) - known}"


def _check_asking_changes_nothing(s: Strategy) -> None:
    _feed(s)
    first = _fingerprint(s)
    contexts = [s.build_context(q).messages for q in CHECK_QUERIES]
    assert _fingerprint(s) == first, "asking again answered differently (declare stochastic or " \
        "search_changes_state in capabilities())"
    assert [s.build_context(q).messages for q in CHECK_QUERIES] == contexts, "a second context differs"


def _other_value(value: Any) -> Any:
    """A second valid-looking value of a numeric query-time parameter (None: none found)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return max(1, value // 2)
    if isinstance(value, float):
        return value / 2 if value else 0.5
    return None


def _check_query_time_params(s: Strategy) -> None:
    declared = s.capabilities().query_time_params
    names = set(type(s)._param_names())
    assert set(declared) <= names, f"query_time_params {sorted(set(declared) - names)} are not parameters"
    _feed(s)
    for name in sorted(declared):
        value = _other_value(getattr(s, name))
        if value is None:
            continue
        fresh = s.clone()
        fresh.set_params(**{name: value})
        _feed(fresh)
        s.set_query_params(**{name: value})
        assert getattr(s, name) == value, f"set_query_params({name}=...) did not set it"
        assert _fingerprint(s) == _fingerprint(fresh), \
            f"after set_query_params({name}={value!r}) hits differ from a strategy built with it"
        assert [s.build_context(q).messages for q in CHECK_QUERIES] == \
            [fresh.build_context(q).messages for q in CHECK_QUERIES], \
            f"after set_query_params({name}={value!r}) contexts differ from a strategy built with it"


# -- retrievers ------------------------------------------------------------------------
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
    every part it holds is a parameter (``hidden_parts``).
    """
    checks: list[tuple[str, Callable[[Retriever], None]]] = [
        ("is_retriever", _check_is_retriever),
        ("parts_are_parameters", _check_parts),
        ("hits_obey_the_contract", _check_hits),
        ("records_are_honest", _check_records),
        ("deterministic", lambda r: _check_same(_run(r.clone()), _run(r.clone()), "two identical runs differ")),
        ("reset_is_fresh", _check_retriever_reset),
        ("picklable", lambda r: _check_same(_run(pickle.loads(pickle.dumps(r))), _run(r.clone()),
                                            "an unpickled retriever behaves differently")),
        ("params_unchanged_by_use", _check_retriever_params),
    ]
    if capabilities_of(retriever).exact_search:  # chosen by what the retriever declares
        checks.append(("exact_search_is_a_prefix", _check_exact_prefix))
    return _run_checks(retriever, checks)


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


def _run_checks(subject: Any, checks: list[tuple[str, Any]]) -> list[str]:
    """Run ``checks`` in order, each on a fresh clone (the first, the type check, on ``subject``
    itself); the first failure raises AssertionError naming the class and the check."""
    done = []
    for n, (name, check) in enumerate(checks):
        try:
            check(subject.clone() if n else subject)
        except AssertionError as exc:
            raise AssertionError(f"{type(subject).__name__} failed check {name!r}: {exc}") from None
        done.append(name)
    return done
