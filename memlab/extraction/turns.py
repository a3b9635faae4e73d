"""``TurnExtractor``: every turn of the chosen roles becomes one memory (offline).

The rule-based extractor keeps only the statements its patterns recognise; a lifecycle
study needs the turns it misses too ("I cooked pad thai for friends"), or merging and
abstraction have nothing to work on.
"""

from __future__ import annotations

from ..base import Param
from ..records import MemoryRecord, Role
from .base import ExtractedMemory, Extractor
from .rules import RuleBasedExtractor


class TurnExtractor(Extractor):
    """One memory per turn whose role is in ``roles``: ``"<speaker>: <text>"``.

    ``memory_type`` and ``subject`` come from ``rules`` (default ``RuleBasedExtractor()``)
    when it recognises exactly one statement in the turn (so "I moved to Denver" gets the
    subject ``location`` and supersedes an older location), else ``"fact"`` and no
    subject. Turns with no text are skipped. Nothing is rephrased: recall is as good as
    the search over the raw turns, conflicts are found only where the rules find them.
    """

    constraints = {"rules": Param(RuleBasedExtractor, none=True)}

    def __init__(self, roles: tuple[str, ...] = ("user",), rules: RuleBasedExtractor | None = None):
        self.roles = roles
        self.rules = rules
        self._on_params_changed()

    def _on_params_changed(self) -> None:
        self._roles = {Role.parse(r) for r in self.roles}
        self._rules = self.rules if self.rules is not None else RuleBasedExtractor()

    def extract(self, records: list[MemoryRecord]) -> list[ExtractedMemory]:
        out = []
        for record in records:
            text = " ".join(record.content.split())
            if record.role not in self._roles or not text:
                continue
            speaker = record.name or record.metadata.get("speaker") or record.role.value
            found = self._rules.statements(text, speaker)
            memory_type, subject = (found[0][0], found[0][1]) if len(found) == 1 else ("fact", "")
            out.append(ExtractedMemory(f"{speaker}: {text}", memory_type, subject, list(record.source_ids)))
        return out
