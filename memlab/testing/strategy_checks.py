"""``check_strategy``: the generic checks every strategy must pass (built-in or user-written),
the short dialogue they replay (``CHECK_TURNS``, ``check_records``), and ``run_checks``, the
runner the retriever checks share."""

from __future__ import annotations

import pickle
from typing import Any, Callable

from ..base import Component
from ..capabilities import capabilities_of
from ..records import MemoryRecord, Role
from ..strategy import Context, Strategy
from .parts import check_parts


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
        ("parts_are_parameters", check_parts),
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
    return run_checks(strategy, checks)


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


def run_checks(subject: Any, checks: list[tuple[str, Any]]) -> list[str]:
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


__all__ = ["CHECK_QUERIES", "CHECK_TURNS", "T0", "check_records", "check_strategy", "run_checks"]
