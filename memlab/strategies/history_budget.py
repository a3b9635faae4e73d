"""Packing a whole, growing chat history into a token budget without reading all of it.

``ScoreBasedContextCreator`` walks every record by score, highest first, keeping each one
that still fits. When the records are a plain chat history (user and assistant messages
only, unique ids, timestamps in order) scored ``keep_rate ** i`` from the newest, that
walk visits the history newest first, so ``HistoryBudget.select`` can do the same walk
from the newest end and jump over the records that cannot fit (an index of positions by
token cost) instead of visiting them: a probe costs about the number of records kept,
not the length of the history. A few records whose score was raised (vector recalls in
``LongtermAgentMemory``) are merged into the walk at their place in the score order. The
result is exactly what ``ScoreBasedContextCreator.select`` returns for the same records;
``tests/strategies/test_history_budget.py`` pins that equality.
"""

from __future__ import annotations

from bisect import bisect_right, insort
from collections.abc import Mapping

from ..records import MemoryRecord, Role
from ..tokens import REPLY_PRIMING_TOKENS, TokenCounter


def is_plain(record: MemoryRecord) -> bool:
    """A user or assistant message without tool calls: one unit of its own, never protected."""
    return record.role in (Role.USER, Role.ASSISTANT) and not record.tool_calls


class HistoryBudget:
    """Token costs of a chat history's records, indexed by cost, kept up to date on append.

    ``history`` is the list the chat history block keeps (read, never changed here);
    call ``select`` with its current length-n prefix. Costs are counted once per record.
    """

    def __init__(self, counter: TokenCounter):
        self._counter = counter
        self._costs: list[int] = []
        self._total = 0
        self._by_cost: dict[int, list[int]] = {}  # cost -> positions with that cost, ascending
        self._values: list[int] = []              # distinct costs, ascending

    def _extend(self, history: list[MemoryRecord]) -> None:
        count = self._counter.count_message
        for j in range(len(self._costs), len(history)):
            cost = count(history[j].to_openai())
            self._costs.append(cost)
            self._total += cost
            positions = self._by_cost.get(cost)
            if positions is None:
                self._by_cost[cost] = positions = []
                insort(self._values, cost)
            positions.append(j)

    def select(self, history: list[MemoryRecord], keep_rate: float, token_limit: int,
               raised: Mapping[int, float]) -> list[int]:
        """Positions kept (ascending) by ``ScoreBasedContextCreator(token_limit).select``.

        The records are ``history`` (plain, unique ids, timestamps non-decreasing), the
        one at position j scored ``keep_rate ** (n - 1 - j)``, except positions in
        ``raised`` (position -> higher score). Units are visited by (score desc, newer
        first) and kept while their cost fits in ``token_limit - 3``.
        """
        n = len(history)
        if n == 0:
            return []
        self._extend(history)
        costs = self._costs
        if self._total + REPLY_PRIMING_TOKENS <= token_limit:
            return list(range(n))
        room = token_limit - REPLY_PRIMING_TOKENS

        def key(j: int, score: float) -> tuple[float, int]:
            return (-score, -j)

        def history_score(j: int) -> float:
            return float(keep_rate ** (n - 1 - j))

        boosted = sorted(raised.items(), key=lambda item: key(item[0], item[1]))
        kept: list[int] = []
        b = 0
        j = n - 1
        while True:
            j = self._next_fitting(j, room, raised)
            # raised records that come before position j in the score order
            while b < len(boosted) and (j < 0 or key(*boosted[b]) < key(j, history_score(j))):
                pos = boosted[b][0]
                if costs[pos] <= room:
                    kept.append(pos)
                    room -= costs[pos]
                b += 1
            if j < 0:
                break
            if costs[j] <= room:
                kept.append(j)
                room -= costs[j]
            j -= 1
        kept.sort()
        return kept

    def _next_fitting(self, j: int, room: int, raised: Mapping[int, float]) -> int:
        """The largest position <= j, not raised, whose cost is <= room; -1 if none."""
        if j < 0:
            return -1
        if self._costs[j] <= room and j not in raised:
            return j
        best = -1
        for cost in self._values:
            if cost > room:
                break
            positions = self._by_cost[cost]
            p = bisect_right(positions, j) - 1
            while p >= 0 and positions[p] in raised:
                p -= 1
            if p >= 0 and positions[p] > best:
                best = positions[p]
        return best
