"""ScoreBasedContextCreator: scored records in, a token-budgeted OpenAI message list out."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .base import Component, MemlabError, Param
from .records import ContextRecord, Role
from .tokens import REPLY_PRIMING_TOKENS, TiktokenCounter, TokenCounter


class ContextBudgetError(MemlabError):
    """The records that must be kept (the leading system message) exceed the token limit."""


@dataclass
class _Unit:
    """Messages kept or dropped together: one record, or a tool call with its results."""

    positions: list[int] = field(default_factory=list)  # chronological positions of members
    tokens: int = 0
    score: float = float("-inf")


class ScoreBasedContextCreator(Component):
    """Builds the context from scored records within ``token_limit`` tokens.

    ``create_context(records)`` (CAMEL's June-2025 algorithm, with memlab's fixes):

    1. Deduplicate by record id, keeping the entry with the higher score (ties: the first).
    2. If the first record given is SYSTEM/DEVELOPER (and ``protect_first``, the default) it
       is protected: it goes first whatever its timestamp (a system prompt written today before turns replayed with older
       dialogue times stays in front). The others are ordered chronologically by their own
       timestamps, ties by input order.
    3. The protected system record is always kept; if
       ``count_messages([system]) > token_limit`` raise ContextBudgetError naming both numbers.
    4. If ``count_messages(all) <= token_limit`` return all of them.
    5. Otherwise group the rest into units: an assistant message with tool calls together
       with the TOOL messages answering those calls (matched by ``tool_call_id``) is one
       unit, every other record its own unit. A unit's score is the max of its members',
       its cost the sum of its records' costs (a record's cost is ``count_message`` of its
       message, or ``cost(record)`` when ``select`` is given ``cost``). Walk the units by score,
       highest first (ties: the unit whose newest member is newer first) and keep each one
       whose cost still fits in ``token_limit - 3 - system tokens`` (the 3 prime the reply);
       a unit that does not fit is skipped and smaller ones may still fit.
    6. Return the kept messages in chronological order and ``count_messages(messages)``
       (which is <= token_limit); no records -> ``([], 0)``.

    ``protect_first=False`` (keyword of ``select`` and ``create_context``) protects nothing:
    a leading system record is then one more candidate, walked by its score like the rest
    (for callers whose first record is not a system prompt, e.g. a short-term summary or a
    memory line with no system prompt configured). ``select(..., cost=f)`` charges each
    record ``f(record)`` tokens instead of its own message's, for records shown inside a
    shared message (a memory line of ``Load``'s memory message); steps 3, 4 and 5 use those
    costs, so only ``select`` takes it (``create_context`` counts real messages).

    ``token_counter=None`` uses ``TiktokenCounter()`` (o200k_base, offline).
    """

    def __init__(self, token_counter: TokenCounter | None = None, token_limit: int = 4096):
        self.token_counter = token_counter
        self.token_limit = token_limit
        self._on_params_changed()

    constraints = {
        "token_counter": Param(TokenCounter, none=True),
        "token_limit": Param(int, ge=1),
    }

    def _on_params_changed(self) -> None:
        # the default counter is kept when another parameter changes (a sweep switching
        # token_limit at every probe): a new one would start with an empty count cache
        default = self.__dict__.get("_default_counter")
        if self.token_counter is None and default is None:
            default = self._default_counter = TiktokenCounter()
        self._counter = self.token_counter if self.token_counter is not None else default

    @property
    def counter(self) -> TokenCounter:
        """The token counter in use (the default one when ``token_counter`` is None)."""
        return self._counter

    def create_context(self, records: Sequence[ContextRecord], *, protect_first: bool = True
                       ) -> tuple[list[dict[str, Any]], int]:
        """The budgeted messages, chronological, and their token count (see the class doc)."""
        kept = self.select(records, protect_first=protect_first)
        messages = [r.memory_record.to_openai() for r in kept]
        return messages, (self._counter.count_messages(messages) if messages else 0)

    def select(self, records: Sequence[ContextRecord], *, protect_first: bool = True,
               cost: Callable[[ContextRecord], int] | None = None) -> list[ContextRecord]:
        """The records ``create_context`` keeps, chronological: which memories the model sees."""
        unique = _dedupe(records)
        if not unique:
            return []
        head = unique[:1] if protect_first and unique[0].memory_record.role.is_system else []
        ordered = head + _chronological(unique[len(head):])
        if cost is None:
            costs = [self._counter.count_message(r.memory_record.to_openai()) for r in ordered]
        else:
            costs = [int(cost(r)) for r in ordered]
        system = len(head)
        if system:
            needed = costs[0] + REPLY_PRIMING_TOKENS
            if needed > self.token_limit:
                raise ContextBudgetError(
                    f"the system message alone needs {needed} tokens, more than "
                    f"token_limit={self.token_limit}")
        if sum(costs) + REPLY_PRIMING_TOKENS <= self.token_limit:
            return ordered

        room = self.token_limit - REPLY_PRIMING_TOKENS - sum(costs[:system])
        kept = list(range(system))
        units = _units(ordered, costs, system)
        for unit in sorted(units, key=lambda u: (-u.score, -max(u.positions))):
            if unit.tokens <= room:
                kept.extend(unit.positions)
                room -= unit.tokens
        return [ordered[i] for i in sorted(kept)]


def _dedupe(records: Sequence[ContextRecord]) -> list[ContextRecord]:
    """One entry per record id, at its first position, carrying the highest score seen."""
    best: dict[str, ContextRecord] = {}
    order: list[str] = []
    for rec in records:
        if not isinstance(rec, ContextRecord):
            raise TypeError(f"create_context expects ContextRecord items, got {type(rec).__name__}")
        if rec.id not in best:
            order.append(rec.id)
            best[rec.id] = rec
        elif rec.score > best[rec.id].score:
            best[rec.id] = rec
    return [best[i] for i in order]


def _chronological(records: list[ContextRecord]) -> list[ContextRecord]:
    # sorted() is stable, so equal timestamps keep input order
    return sorted(records, key=lambda r: r.memory_record.timestamp)


def _units(ordered: list[ContextRecord], costs: list[int], start: int) -> list[_Unit]:
    """Group positions ``start..`` into units; tool results join their assistant's unit.

    A TOOL message whose call is not among the records is a unit of its own.
    """
    units: list[_Unit] = []
    unit_of_call: dict[str, _Unit] = {}
    for pos in range(start, len(ordered)):
        rec = ordered[pos].memory_record
        unit = None
        if rec.role is Role.TOOL and rec.tool_call_id is not None:
            unit = unit_of_call.get(rec.tool_call_id)
        if unit is None:
            unit = _Unit()
            units.append(unit)
        if rec.role is Role.ASSISTANT:
            for call in rec.tool_calls:
                unit_of_call.setdefault(call.id, unit)
        unit.positions.append(pos)
        unit.tokens += costs[pos]
        unit.score = max(unit.score, float(ordered[pos].score))
    return units
