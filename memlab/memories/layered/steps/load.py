"""The load step: the context handed to the model (memories, short-term turns, budget)."""

from __future__ import annotations

import dataclasses
import datetime as _dt
from typing import Any

from ....base import ConfigError, Param
from ....context import ScoreBasedContextCreator
from ....llm.counting import TOKEN_COUNTER, resolve_counter
from ....records import ContextRecord, Hit, MemoryRecord, Role
from ....strategy import Context
from ....tokens import REPLY_PRIMING_TOKENS, TokenCounter
from .state import Layers, Step, WorkingState


DEFAULT_SYSTEM_PROMPT = (
    "You are a helpful assistant with a memory of earlier conversations. Use the memories "
    "below when they help. If they contradict each other, trust the newest and most specific "
    "one, and say so if it matters.")
MEMORY_HEADER = "Relevant memories (oldest first):"
#: What ``Load(conflict_instruction=...)`` usually says (the seed's "prefer the newest information").
CONFLICT_INSTRUCTION = "If memories disagree, prefer the newest information (the later date)."


class Load(Step):
    """Assemble the memory's context and the agent prompt around it.

    ``state.context`` (what ``LayeredMemory.build_context`` returns, see
    ``memlab.strategy.Context``) holds what the memory contributes, in order:
    ``system_prompt`` when one is given, the selected memories as one marked system message
    (``MEMORY_HEADER``, one ``- [date] content`` line each, oldest first; the date is the
    memory's UTC day when ``include_dates``), and the short-term messages (summary and
    turns). Never the question: whoever answers adds it. With ``conflict_instruction``
    (e.g. ``CONFLICT_INSTRUCTION``) that line follows the header, so whoever answers is
    told to prefer the newest memory; it is part of the context. ``token_count`` counts exactly
    these messages with ``token_counter`` (memlab's default counter when None).

    ``state.messages`` is the agent prompt the ``Answer`` step sends: a system prompt
    (``system_prompt``, or ``DEFAULT_SYSTEM_PROMPT`` when it is None), the memory and
    short-term messages, then the question as the final user message. ``system_prompt=""``
    leaves out the system prompt in both.

    ``token_limit=None`` (the default) keeps everything. With a ``token_limit`` L the context
    always has ``token_count <= L``, chosen by ``ScoreBasedContextCreator`` (the one budgeted
    context builder every memory uses) with this step's counter, which must then be a
    ``memlab.tokens.TokenCounter`` (the creator counts message by message). The rule: the
    conversation under way ranks above every memory, and memories fill what is left by score.

    1. Short-term first: ``ScoreBasedContextCreator(counter, token_limit=L).select`` over the
       configured system prompt (a non-empty ``system_prompt``: the protected first record;
       if ``count_messages([it]) > L``, ``ContextBudgetError`` names both numbers) and every
       short-term record (summary and turns), each scored ``float("inf")``: the newest are
       kept first (the creator's tie rule), a tool call stays with its results, and a
       leading summary is not protected (``protect_first`` only with a system prompt).
    2. Then memories: ``header = count_message({"role": "system", "content": MEMORY_HEADER
       [+ "\n" + conflict_instruction]})``, what the memory message costs without lines. The
       creator with ``token_limit=L - header`` selects among the records kept in 1 (scored
       inf, so walked first) and one record per selected memory: score = the hit's score,
       timestamp = the memory's, cost = ``line_tokens(hit) = count(memory_line(hit) + "\n")``
       (its line, not a message of its own). Memories are kept highest score first (ties:
       the newer), each one that still fits. If the header does not fit beside the records
       kept in 1, no memory is shown (a memory never displaces a short-term message).
    3. The kept lines make the memory message (oldest first, as without a limit), the kept
       short-term records keep their order. The result is recounted exactly; while it
       exceeds L (BPE may join a line to its neighbour), the kept memory with the lowest
       score (ties: the older) is dropped. No memory kept: no memory message.

    Memories dropped for the budget are removed from ``state.selected`` (so
    ``LayeredMemory`` does not reinforce memories the model never saw); ``record_ids`` and
    ``source_ids`` list what was kept, and the trace says how many were dropped.
    """

    constraints = {
        "system_prompt": Param(str, none=True),
        "include_dates": Param(bool),
        "conflict_instruction": Param(str, none=True),
        "token_counter": TOKEN_COUNTER,
        "token_limit": Param(int, ge=1, none=True),
    }

    def __init__(self, system_prompt: str | None = None, include_dates: bool = True,
                 token_counter: Any = None, conflict_instruction: str | None = None,
                 token_limit: int | None = None):
        self.system_prompt = system_prompt
        self.include_dates = include_dates
        self.token_counter = token_counter
        self.conflict_instruction = conflict_instruction
        self.token_limit = token_limit
        self._on_params_changed()

    def _on_params_changed(self) -> None:
        self._counter = resolve_counter(self.token_counter)
        if self.token_limit is not None and not isinstance(self._counter, TokenCounter):
            raise ConfigError(f"Load parameter 'token_counter': expected a memlab.tokens.TokenCounter when "
                              f"token_limit is set (the budget counts message by message), "
                              f"got {type(self._counter).__name__}")

    def memory_message(self, hits: list[Hit]) -> dict[str, Any] | None:
        if not hits:
            return None
        lines = self._header_lines()
        lines += [self.memory_line(h) for h in sorted(hits, key=lambda h: (h.record.timestamp, h.rank))]
        return {"role": "system", "content": "\n".join(lines)}

    def _header_lines(self) -> list[str]:
        return [MEMORY_HEADER] + ([self.conflict_instruction] if self.conflict_instruction else [])

    def memory_line(self, hit: Hit) -> str:
        """How one memory is shown in the memory message: ``- [date] content``."""
        date = ""
        if self.include_dates and hit.record.timestamp > 0:
            day = _dt.datetime.fromtimestamp(hit.record.timestamp, _dt.timezone.utc).date()
            date = f"[{day.isoformat()}] "
        return f"- {date}{' '.join(hit.record.content.split())}"

    def line_tokens(self, hit: Hit) -> int:
        """Tokens of ``memory_line(hit)`` plus its line break, in this step's counter."""
        return int(self._counter.count(self.memory_line(hit) + "\n"))

    def run(self, state: WorkingState, layers: Layers) -> WorkingState:
        short = layers.short_term.records()
        budget = ""
        if self.token_limit is not None:
            hits, kept_short = self._fit(list(state.selected), short)
            budget = (f"; token_limit={self.token_limit} dropped {len(state.selected) - len(hits)} of "
                      f"{len(state.selected)} memories and {len(short) - len(kept_short)} of {len(short)} "
                      f"short-term messages")
            state.selected, short = hits, kept_short
        memory = self._memory(state.selected, short)
        configured = self._configured()
        agent = self.system_prompt if self.system_prompt is not None else DEFAULT_SYSTEM_PROMPT
        context = configured + memory
        state.messages = ([{"role": "system", "content": agent}] if agent else []) + memory \
            + [{"role": "user", "content": state.question}]
        state.context = Context.of([h.record for h in state.selected] + short, self._counter, messages=context)
        state.trace.append(f"load: {len(context)} context message(s), {state.context.token_count} tokens{budget}")
        return state

    def _configured(self) -> list[dict[str, Any]]:
        return [{"role": "system", "content": self.system_prompt}] if self.system_prompt else []

    def _memory(self, hits: list[Hit], short: list[MemoryRecord]) -> list[dict[str, Any]]:
        """The memory message (if any hit) followed by the short-term messages."""
        selected = self.memory_message(hits)
        return ([selected] if selected is not None else []) + [r.to_openai() for r in short]

    # -- the token budget (see the class doc) ----------------------------------------------
    def _fit(self, hits: list[Hit], short: list[MemoryRecord]) -> tuple[list[Hit], list[MemoryRecord]]:
        """The hits (in their given order) and short-term records kept within ``token_limit``."""
        limit = int(self.token_limit)  # type: ignore[arg-type]
        counter = self._counter
        head: list[ContextRecord] = []
        if self.system_prompt:
            system = MemoryRecord(Role.SYSTEM, self.system_prompt, id="s", timestamp=0.0)
            head = [ContextRecord(system, float("inf"), 0.0)]
        # fresh ids ("t<i>", "m<i>"): a memory and a turn sharing an id are still two
        # candidates (the creator dedupes by id), and kept ids map back to positions
        turns = [ContextRecord(dataclasses.replace(r, id=f"t{i}"), float("inf"), r.timestamp)
                 for i, r in enumerate(short)]
        lines = [ContextRecord(MemoryRecord(Role.SYSTEM, self.memory_line(h), id=f"m{i}",
                                            timestamp=h.record.timestamp), float(h.score), h.record.timestamp)
                 for i, h in enumerate(hits)]
        costs = {c.id: self.line_tokens(h) for c, h in zip(lines, hits)}

        def cost(record: ContextRecord) -> int:
            if record.id in costs:
                return costs[record.id]
            return int(counter.count_message(record.memory_record.to_openai()))

        # protect_first rather than roles that cannot be protected: the short-term summary
        # is truly a system message, and without a configured system prompt neither it
        # nor a memory line may take the protected place (and raise ContextBudgetError)
        protect = bool(head)
        # 1. the conversation under way, within the whole limit, as if there were no memories
        base = ScoreBasedContextCreator(token_counter=counter, token_limit=limit)
        kept = {c.id for c in base.select(head + turns, protect_first=protect)}
        kept_short = [r for c, r in zip(turns, short) if c.id in kept]
        turns = [c for c in turns if c.id in kept]
        header = int(counter.count_message({"role": "system", "content": "\n".join(self._header_lines())}))
        floor = (counter.count_message(head[0].memory_record.to_openai()) + REPLY_PRIMING_TOKENS) if head else 1
        if not lines or limit - header < floor:
            return [], kept_short
        # 2. the same records (scored inf, so walked first) and the memory lines, in what is
        #    left once the memory message's header is paid for
        creator = ScoreBasedContextCreator(token_counter=counter, token_limit=limit - header)
        chosen = {c.id for c in creator.select(head + turns + lines, protect_first=protect, cost=cost)}
        if not kept <= chosen:
            return [], kept_short  # the header would push out a turn: turns rank above memories
        kept_hits = [h for c, h in zip(lines, hits) if c.id in chosen]
        # exact recount: BPE may join a line with its neighbour; drop the weakest line
        while kept_hits and counter.count_messages(
                self._configured() + self._memory(kept_hits, kept_short)) > limit:
            weakest = min(kept_hits, key=lambda h: (float(h.score), h.record.timestamp))
            kept_hits = [h for h in kept_hits if h is not weakest]
        return kept_hits, kept_short
