"""Abstraction: when memories recur around one topic, write an abstract memory whose
evidence lists them; and retrieval that returns the abstraction, its evidence, or both.

``Abstractor`` (offline) finds recurrence lexically; ``LLMAbstractor`` asks a model for
patterns. Both store what they find with ``LongTermMemory.add_abstraction``: the supporting
memories stay active, the abstraction's ``source_ids`` are theirs, and
``long_term.evidence(id)`` lists them.
"""

from __future__ import annotations

import datetime as _dt
import json
from typing import Any

from ...base import Component, Param
from ...llm.base import LLM, LLMProgram, LLMUsage, UsesLLM
from ...llm.prompts import abstract_prompt, abstract_schema, strip_fences
from ...text import recurring_terms, recurring_topic
from ...records import MEMORY_TYPES_PARAM, Hit, MemoryRecord
from .long_term import LongTermMemory
from .steps.retrieve import Retrieve
from .steps.state import Layers, WorkingState

SHOW = ("abstraction", "evidence", "both")


def _day(ts: float) -> str:
    return _dt.datetime.fromtimestamp(ts, _dt.timezone.utc).date().isoformat()


class Abstractor(Component):
    """Offline abstraction by lexical recurrence.

    Pool: the active memories of ``memory_types`` that are not abstractions (n of them).
    A stemmed content term (``memlab.text.terms``: words minus stop words, Chinese as
    character bigrams; numbers and Latin words under 3 letters left out) is a *pattern* when it occurs in at least
    ``min_support`` memories and in at most ``max_share * n`` (a term in most memories,
    such as the speaker's name, says nothing). Patterns are taken by support (most first,
    ties by term), at most ``max_patterns`` per pass, skipping one whose memories are a
    subset of a pattern already taken. Each becomes an abstraction with subject
    ``pattern:<term>`` and text ``Recurring topic '<word>': <k> memories from <first day>
    to <last day>.`` (the most frequent surface form of the term), evidence = its newest
    ``max_evidence`` memories. An abstraction with the same subject and the same evidence
    is not written again; one with new evidence replaces the old (outdated).

    What it cannot do: see that Paris, Lisbon and Prague are all European cities, or say
    *what* the pattern means -- it names the shared word, and a shared function word
    (a Chinese bigram such as 一家) counts like any other. ``LLMAbstractor`` can do better.
    Event summaries are left out by default: they mix topics.
    """

    constraints = {
        "min_support": Param(int, ge=2),
        "max_share": Param(float, gt=0.0, le=1.0),
        "max_patterns": Param(int, ge=1),
        "max_evidence": Param(int, ge=2),
        "memory_types": MEMORY_TYPES_PARAM,
    }

    def __init__(self, min_support: int = 3, max_share: float = 0.5, max_patterns: int = 3,
                 max_evidence: int = 8, memory_types: tuple[str, ...] = ("fact", "preference")):
        self.min_support = min_support
        self.max_share = max_share
        self.max_patterns = max_patterns
        self.max_evidence = max_evidence
        self.memory_types = memory_types
        self._on_params_changed()

    def pool(self, long_term: LongTermMemory, user_id: str = "") -> list[MemoryRecord]:
        derived = set(long_term.abstractions())
        return [r for r in long_term.records(where={"user_id": user_id}, include_outdated=False)
                if r.metadata["memory_type"] in self.memory_types and r.id not in derived]

    def patterns(self, memories: list[MemoryRecord]) -> list[tuple[str, str, list[MemoryRecord]]]:
        """(term, surface word, supporting memories oldest first) for each pattern found
        (``memlab.text.recurring_terms`` over the contents)."""
        found = recurring_terms([m.content for m in memories], self.min_support, self.max_share, self.max_patterns)
        return [(key, word, [memories[i] for i in ix]) for key, word, ix in found]

    def abstract(self, long_term: LongTermMemory, user_id: str = "") -> list[MemoryRecord]:
        """Write the abstractions found now; returns them."""
        existing = self._existing(long_term)
        written = []
        for key, word, support in self.patterns(self.pool(long_term, user_id)):
            evidence = support[-self.max_evidence:]
            subject = f"pattern:{key}"
            if existing.get(subject) == {m.id for m in evidence}:
                continue
            text = recurring_topic(word, len(support), _day(support[0].timestamp), _day(support[-1].timestamp))
            written.append(long_term.add_abstraction(text, [m.id for m in evidence], subject=subject))
        return written

    @staticmethod
    def _existing(long_term: LongTermMemory) -> dict[str, set[str]]:
        """Subject -> evidence ids of the active abstractions."""
        out = {}
        for i, evidence in long_term.abstractions().items():
            record = long_term.get(i)
            if record is not None and record.metadata["status"] == "active":
                out[record.metadata["subject"]] = set(evidence)
        return out

    @property
    def usage(self) -> LLMUsage:
        return LLMUsage()

    def reset_usage(self) -> None:
        pass


class LLMAbstractor(UsesLLM, Abstractor):
    """Ask ``llm`` which patterns the memories show (one call per pass, over the newest
    ``max_memories`` of the pool); each pattern needs ``min_support`` memories as evidence.

    The answer must be JSON ``{"patterns": [{"abstraction": "...", "evidence": [1, 4, 7]}]}``
    (numbers as listed in the prompt); an answer that does not parse, or a pattern with too
    little or unknown evidence, is skipped and counted in ``failures``. A pattern whose
    evidence equals an active abstraction's is not written again; one whose evidence
    contains an active abstraction's replaces it (marked outdated). ``max_share`` is not
    used (the model judges what is informative).
    """

    constraints = {"llm": Param(LLM), "max_memories": Param(int, ge=2), "max_tokens": Param(int, ge=16)}

    def __init__(self, llm: LLM, min_support: int = 3, max_patterns: int = 3, max_evidence: int = 8,
                 memory_types: tuple[str, ...] = ("fact", "preference"),
                 max_memories: int = 40, max_tokens: int = 300):
        self.llm = llm
        self.max_memories = max_memories
        self.max_tokens = max_tokens
        super().__init__(min_support=min_support, max_patterns=max_patterns, max_evidence=max_evidence,
                         memory_types=memory_types)

    def _on_params_changed(self) -> None:
        super()._on_params_changed()
        self.failures = 0

    def abstract(self, long_term: LongTermMemory, user_id: str = "") -> list[MemoryRecord]:
        return self.run_program(self._abstract(long_term, user_id))

    def _abstract(self, long_term: LongTermMemory, user_id: str) -> LLMProgram:
        memories = self.pool(long_term, user_id)[-self.max_memories:]
        if len(memories) < self.min_support:
            return []
        listed = [(_day(m.timestamp), m.content) for m in memories]
        answer = yield abstract_prompt(listed, self.min_support), {
            "max_tokens": self.max_tokens, "schema": abstract_schema(len(memories), self.min_support, self.max_patterns)}
        existing = self._active_abstractions(long_term)
        written = []
        for text, evidence in self._parse(answer, memories)[:self.max_patterns]:
            ids = [m.id for m in evidence][-self.max_evidence:]
            if frozenset(ids) in existing.values():
                continue
            # an abstraction resting on a subset of this evidence is the same pattern, seen earlier
            older = [i for i, ev in existing.items() if ev < frozenset(ids)]
            record = long_term.add_abstraction(text, ids, replaces=older)
            for i in older:
                existing.pop(i)
            existing[record.id] = frozenset(ids)
            written.append(record)
        return written

    @staticmethod
    def _active_abstractions(long_term: LongTermMemory) -> dict[str, frozenset[str]]:
        out = {}
        for i, evidence in long_term.abstractions().items():
            record = long_term.get(i)
            if record is not None and record.metadata["status"] == "active":
                out[i] = frozenset(evidence)
        return out

    def _parse(self, answer: str, memories: list[MemoryRecord]) -> list[tuple[str, list[MemoryRecord]]]:
        body = strip_fences(answer)
        try:
            items = json.loads(body)["patterns"]
            assert isinstance(items, list)
        except (ValueError, KeyError, TypeError, AssertionError):
            self.failures += 1
            return []
        out = []
        for item in items:
            try:
                text = str(item["abstraction"]).strip()
                numbers = sorted({int(n) for n in item["evidence"]})
            except (KeyError, TypeError, ValueError):
                self.failures += 1
                continue
            if not text or len(numbers) < self.min_support or not all(1 <= n <= len(memories) for n in numbers):
                self.failures += 1
                continue
            out.append((text, [memories[n - 1] for n in numbers]))
        return out


class AbstractionRetrieve(Retrieve):
    """``Retrieve`` that decides what an abstraction hit brings into the result.

    ``show``: "abstraction" -- the abstraction stands for its evidence (evidence hits are
    dropped: fewer, shorter memories); "evidence" -- the abstraction is replaced by its
    supporting memories (at its rank and score, oldest first); "both" -- the abstraction,
    then its evidence. Duplicates are removed (first place kept) and the first ``k`` kept.
    Other arguments as ``Retrieve``.
    """

    constraints = {"show": Param(str, choices=SHOW)}

    def __init__(self, show: str = "both", query_rewriter: Any = None, expander: Any = None, k: int = 10,
                 candidates: int = 20, fusion: Any = None):
        self.show = show
        super().__init__(query_rewriter=query_rewriter, expander=expander, k=k, candidates=candidates,
                         fusion=fusion)

    def _search(self, state: WorkingState, layers: Layers) -> None:
        k = state.k if state.k is not None else self.k
        super()._search(state, layers)
        abstractions = layers.long_term.abstractions()
        hits = state.retrieved
        if not abstractions or not any(h.id in abstractions for h in hits):
            return
        covered = {e for h in hits if h.id in abstractions for e in abstractions[h.id]}
        out: list[Hit] = []
        for h in hits:
            if h.id not in abstractions:
                if not (self.show == "abstraction" and h.id in covered):
                    out.append(h)
                continue
            if self.show in ("abstraction", "both"):
                out.append(h)
            if self.show in ("evidence", "both"):
                for e in abstractions[h.id]:
                    record = layers.long_term.get(e)
                    if record is not None and record.metadata["status"] == "active":
                        evidence_of = {"evidence_of": {"score": h.score, "rank": h.rank}}
                        out.append(Hit(memory_record=record, score=h.score, timestamp=record.timestamp,
                                       rank=h.rank, components={**h.components, **evidence_of}))
        seen: set[str] = set()
        unique = [h for h in out if not (h.id in seen or seen.add(h.id))][:k]
        for rank, h in enumerate(unique, 1):
            h.rank = rank
        state.retrieved = unique
        state.trace.append(f"retrieve: abstractions shown as {self.show!r}, {len(unique)} hit(s)")
