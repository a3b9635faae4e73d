"""Merging similar long-term memories into one: ``Merger`` (offline) and ``LLMMerger``.

Both group the same way and differ only in how the merged text is written. Grouping,
oldest memory first: an active memory ``m`` of ``memory_types`` (not an abstraction, not
already grouped) searches long-term memory with its own content (``candidates`` deep, same
user, no reinforcement); every other such memory whose cosine similarity is at least
``threshold`` joins its group, most similar first, up to ``max_group`` memories. Groups of
two or more are merged with ``LongTermMemory.consolidate``: the merged memory supersedes
the originals (marked outdated, not deleted) and keeps all their source turns.
"""

from __future__ import annotations

from ...base import Component, Param
from ...llm.base import LLM, LLMProgram, LLMUsage, UsesLLM
from ...llm.prompts import merge_prompt
from ...text import merge_sentences
from ...records import MEMORY_TYPES_PARAM, MemoryRecord
from .long_term import LongTermMemory

class Merger(Component):
    """Offline merge: the originals' sentences, oldest first, without repeats.

    The merged text keeps every distinct sentence; a sentence is dropped when its stemmed
    content terms are a subset of those of a sentence already kept or still to come
    (longer sentences win; equal sets keep the first). So it shortens the store only when
    memories repeat one another; it cannot rephrase or reconcile them (``LLMMerger`` can).
    """

    constraints = {
        "threshold": Param(float, ge=-1.0, le=1.0),
        "max_group": Param(int, ge=2),
        "candidates": Param(int, ge=2),
        "memory_types": MEMORY_TYPES_PARAM,
    }

    def __init__(self, threshold: float = 0.5, max_group: int = 4, candidates: int = 10,
                 memory_types: tuple[str, ...] = ("fact", "preference")):
        self.threshold = threshold
        self.max_group = max_group
        self.candidates = candidates
        self.memory_types = memory_types
        self._on_params_changed()

    # -- grouping (shared) -------------------------------------------------------------------
    def groups(self, long_term: LongTermMemory, user_id: str = "") -> list[list[MemoryRecord]]:
        """The groups to merge now (see the module docstring), each oldest first.

        Every pass searches from every memory of the pool (one search each): a pair missed
        earlier, when other memories (summaries, abstractions) filled the ``candidates``,
        is found once they are gone.
        """
        derived = set(long_term.abstractions())
        pool = [r for r in long_term.records(where={"user_id": user_id}, include_outdated=False)
                if r.metadata["memory_type"] in self.memory_types and r.id not in derived]
        allowed = {r.id for r in pool}
        taken: set[str] = set()
        out: list[list[MemoryRecord]] = []
        where = {"user_id": user_id} if user_id else None  # "" everywhere: no filter to evaluate
        for m in pool:
            if m.id in taken:
                continue
            hits = long_term.search(m.content, self.candidates, where=where, reinforce="none")
            close = [h.record for h in hits if h.id != m.id and h.id in allowed and h.id not in taken
                     and h.components["vector"]["score"] >= self.threshold]
            group = [m] + close[:self.max_group - 1]
            if len(group) >= 2:
                taken.update(r.id for r in group)
                out.append(sorted(group, key=lambda r: (r.timestamp, pool.index(r))))
        return out

    def merge(self, long_term: LongTermMemory, user_id: str = "") -> list[MemoryRecord]:
        """Merge every group (``groups``); returns the merged memories written."""
        return [long_term.consolidate([r.id for r in g], self.merged_text(g)) for g in self.groups(long_term, user_id)]

    # -- writing (what the subclasses change) ------------------------------------------------
    def merged_text(self, group: list[MemoryRecord]) -> str:
        """``memlab.text.merge_sentences`` of the contents (the newest one if that is empty)."""
        return merge_sentences([r.content for r in group]) or group[-1].content

    @property
    def usage(self) -> LLMUsage:
        return LLMUsage()

    def reset_usage(self) -> None:
        pass


class LLMMerger(UsesLLM, Merger):
    """Ask ``llm`` for one memory that says everything the group says (newest wins on a
    conflict), capped at ``max_tokens``; grouping as in ``Merger``. One call per group."""

    constraints = {"llm": Param(LLM), "max_tokens": Param(int, ge=8)}

    def __init__(self, llm: LLM, threshold: float = 0.5, max_group: int = 4, candidates: int = 10,
                 memory_types: tuple[str, ...] = ("fact", "preference"), max_tokens: int = 120):
        self.llm = llm
        self.max_tokens = max_tokens
        super().__init__(threshold=threshold, max_group=max_group, candidates=candidates,
                         memory_types=memory_types)

    def _merged_text(self, group: list[MemoryRecord]) -> LLMProgram:
        text = (yield merge_prompt([r.content for r in group]), {"max_tokens": self.max_tokens}).strip()
        # an empty answer must not lose the memories: fall back to the offline merge
        return text if text else Merger.merged_text(self, group)

    def merged_text(self, group: list[MemoryRecord]) -> str:
        return self.run_program(self._merged_text(group))

