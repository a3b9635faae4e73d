"""What a component declares about itself, read instead of guessed from its type.

A strategy, retriever, vector store or decay model answers ``capabilities()`` with a
``Capabilities``; the harness, the sweeps and the check suites of ``memlab.testing`` read
it (as scikit-learn's estimator checks read an estimator's tags), so a user's class that
declares the same gets the same treatment as a built-in one.

The defaults are the safe ones: no query-time parameter, approximate search, no gold,
nothing drawn at random, nothing changed by a search.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable


@dataclass(frozen=True)
class Capabilities:
    """Declared behaviour of one component (or of a composite, ``combine``).

    - ``query_time_params``: parameters read only when asked (``retrieve``,
      ``build_context``), never by ``observe``; switched by ``set_query_params(**params)``
      keeping what was observed, so a sweep over them observes each dialogue once.
    - ``exact_search``: a search ranks exactly and stably (ties by insertion order), so the
      best ``n`` of a deeper search at the same state are its first ``n``; a shorter request
      may be served from a longer one. False for approximate indexes (HNSW) and re-rankers.
    - ``uses_gold``: a reference strategy that reads the probe's gold (``see_probe``).
    - ``stochastic``: draws random numbers (from a seed) when used, so asking the same
      question twice may answer differently; same seed, same sequence.
    - ``search_changes_state``: a search itself changes what later searches see
      (reinforcement on recall).
    - ``structured_output``: an LLM client that constrains an answer to the JSON schema its
      request carries (``complete(..., schema=...)``: ``memlab.llm.base``), so a step asking
      for JSON gets JSON of that shape (or an answer cut short by its token limit).
    - ``honours_peek``: a strategy whose ``retrieve`` inside ``Strategy.peek()`` changes no
      state (no reinforcement, no access count, no forgetting draw) and makes no LLM call the
      same query's first ``retrieve`` did not make (it reuses that call's expansions and
      verdicts), so the replay may ask it again, deeper, for the metrics' sake
      (``memlab.eval.replay._ranked``). A strategy whose search changes state and does not
      declare it gets no deeper list for the session metrics (the token-budget one is still
      asked for: the @Btok metrics need it).
    - ``context_only_params``: the ``query_time_params`` that ``retrieve`` does not read (only
      ``build_context`` does): points of a sweep differing only in them get the same ranked
      list at each probe, so the replay searches once for all of them
      (``memlab.eval.replay.replay_dialogue``). Empty by default: every query-time parameter
      is assumed to change the ranking.
    """

    query_time_params: frozenset[str] = field(default_factory=frozenset)
    exact_search: bool = False
    uses_gold: bool = False
    stochastic: bool = False
    search_changes_state: bool = False
    structured_output: bool = False
    honours_peek: bool = False
    context_only_params: frozenset[str] = field(default_factory=frozenset)

    @property
    def asking_changes_nothing(self) -> bool:
        """True when a search or a context build leaves every later answer as it was."""
        return not (self.stochastic or self.search_changes_state)


def capabilities_of(component: Any) -> Capabilities:
    """``component.capabilities()`` when it declares them; else the defaults, stochastic when
    the component has an attribute ``stochastic`` that is True (a user's decay model)."""
    method = getattr(component, "capabilities", None)
    if callable(method):
        return method()
    return Capabilities(stochastic=getattr(component, "stochastic", False) is True)


def any_part(parts: Iterable[Any]) -> Capabilities:
    """What the parts of a composite declare together: stochastic or changing state on search
    if any part is (query-time parameters, exactness and gold belong to the composite)."""
    found = [capabilities_of(p) for p in parts]
    return Capabilities(stochastic=any(c.stochastic for c in found),
                        search_changes_state=any(c.search_changes_state for c in found))
