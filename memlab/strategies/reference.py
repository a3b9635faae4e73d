"""Reference strategies that bound what a memory can achieve: ``oracle`` and ``full_context``.

They are not memories to deploy; they make answer-level runs (answerer + judge) say where
a strategy loses a fact:

- ``oracle`` shows the model exactly the gold evidence turns observed so far, in dialogue
  order. Its answer score is what reading alone achieves: a wrong answer with the gold
  in front of the model is a **read** loss.
- ``full_context`` shows every turn observed, dropping the oldest ones until the rest fit
  in ``token_limit``. Against ``oracle`` it measures what the distraction of the whole
  dialogue costs the reader.
- a strategy whose context holds the gold (``context_recall`` = 1) but answers wrong lost
  the fact when reading; one whose context misses gold that its store still holds lost it
  when **retrieving**; one that never stored it (a summary that dropped it) lost it when
  **writing**.

``oracle`` reads the probe's gold: it sets ``uses_gold = True``, and the replay harness
then calls ``see_probe(probe)`` before asking each probe (no global state). Both report
ranked retrieval too: ``oracle`` the gold turns (score 1.0, in dialogue order);
``full_context`` the turns of its context, newest first (score 1.0: no ranking).
"""

from __future__ import annotations

from typing import Any

from ..base import Param
from ..records import Hit, MemoryRecord
from ..filters import Where, filter_view, matches
from ..tokens import REPLY_PRIMING_TOKENS, TiktokenCounter, TokenCounter
from ..strategy import Context, Strategy


def _counter(counter: TokenCounter | None) -> TokenCounter:
    return counter if counter is not None else TiktokenCounter()


def _hits(records: list[MemoryRecord], k: int, where: Where | None) -> list[Hit]:
    kept = [r for r in records if matches(filter_view(r), where)][:k]
    return [Hit(r, 1.0, r.timestamp, rank=n, components={}) for n, r in enumerate(kept, start=1)]


class OracleStrategy(Strategy):
    """The gold evidence turns observed so far, in dialogue order, as the context.

    An upper bound for retrieval and the reference for reading (see the module docstring).
    ``token_counter`` counts the context (memlab's default tiktoken counter when None).
    """

    uses_gold = True
    constraints = {"token_counter": Param(TokenCounter, none=True)}

    def __init__(self, token_counter: TokenCounter | None = None):
        self.token_counter = token_counter
        self._on_params_changed()

    def _on_params_changed(self) -> None:
        self._counter = _counter(self.token_counter)
        self.reset()

    def reset(self) -> None:
        self._records: list[MemoryRecord] = []
        self._gold: set[str] = set()
        # id or source id -> positions of the records carrying it: a probe reads its gold
        # records through this instead of scanning everything observed (quadratic replay)
        self._positions: dict[str, list[int]] = {}

    def see_probe(self, probe: Any) -> None:
        self._gold = {str(e) for e in probe.evidence}

    def observe(self, record: MemoryRecord) -> None:
        position = len(self._records)
        self._records.append(record)
        for key in {record.id, *record.source_ids}:
            self._positions.setdefault(key, []).append(position)

    def _gold_records(self) -> list[MemoryRecord]:
        """Records whose id or a source id is gold, in observed order."""
        found = {p for g in self._gold for p in self._positions.get(g, ())}
        return [self._records[p] for p in sorted(found)]

    def retrieve(self, query: str, k: int = 5, *, where: Where | None = None,
                 now: float | None = None) -> list[Hit]:
        return _hits(self._gold_records(), k, where) if k > 0 else []

    def build_context(self, query: str, *, now: float | None = None) -> Context:
        return Context.of(self._gold_records(), self._counter)


class FullContextStrategy(Strategy):
    """Every turn observed, in order, truncated from the oldest to ``token_limit`` tokens.

    Walking back from the newest turn, turns are kept while
    ``sum(count_message(turn)) + 3`` (the reply priming) stays <= ``token_limit``; the
    first turn that would overflow and every older one are dropped.
    """

    constraints = {"token_limit": Param(int, ge=1), "token_counter": Param(TokenCounter, none=True)}

    def __init__(self, token_limit: int = 16384, token_counter: TokenCounter | None = None):
        self.token_limit = token_limit
        self.token_counter = token_counter
        self._on_params_changed()

    def _on_params_changed(self) -> None:
        self._counter = _counter(self.token_counter)
        self.reset()

    def reset(self) -> None:
        self._records: list[MemoryRecord] = []

    def observe(self, record: MemoryRecord) -> None:
        self._records.append(record)

    def _kept(self) -> list[MemoryRecord]:
        room = self.token_limit - REPLY_PRIMING_TOKENS
        kept: list[MemoryRecord] = []
        for record in reversed(self._records):
            cost = self._counter.count_message(record.to_openai())
            if cost > room:
                break
            room -= cost
            kept.append(record)
        return kept[::-1]

    def retrieve(self, query: str, k: int = 5, *, where: Where | None = None,
                 now: float | None = None) -> list[Hit]:
        return _hits(self._kept()[::-1], k, where) if k > 0 else []

    def build_context(self, query: str, *, now: float | None = None) -> Context:
        return Context.of(self._kept(), self._counter)
