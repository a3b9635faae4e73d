"""``RuleBasedExtractor``: offline extraction of first-person statements (English, Chinese)."""

from __future__ import annotations

import re

from ..base import Param
from ..text import sentences
from ..records import MemoryRecord, Role
from .base import ExtractedMemory, Extractor
from .categories import Statement
from .chinese import chinese_statements
from .english import english_statements


class RuleBasedExtractor(Extractor):
    """Offline extraction of plain first-person statements (English and Chinese).

    Recognised (per sentence, questions skipped): name ("my name is", "我叫"), location
    ("I live in", "I moved to", "我住在"), employer ("I work at/for", "我在X工作"),
    occupation/diet ("I'm a teacher", "I work as", "我是老师"), age, likes and dislikes
    ("I like/love/enjoy", "I don't like", "我喜欢", "我不喜欢"), preferences ("I prefer",
    "I switched to", "我改喝"), and "my X is Y" / "我的X是Y" (subject X). Subjects come
    from ``CATEGORY_KEYWORDS`` when the object is listed there (so "I switched to tea"
    replaces "I love coffee": both are ``beverage_preference``), else from the statement
    ("opinion:sushi" for liking or disliking sushi). Content names the speaker (the
    record's ``name`` or ``metadata["speaker"]``, else "User"/"用户"). Only turns whose
    role is in ``roles`` are read; assistant turns are included by default because in
    replayed human-human dialogues (LoCoMo) both speakers are people; use
    ``roles=("user",)`` for agent transcripts.
    """

    constraints = {
        "max_object_words": Param(int, ge=1),
    }

    def __init__(self, roles: tuple[str, ...] = ("user", "assistant"), max_object_words: int = 8):
        self.roles = roles
        self.max_object_words = max_object_words
        self._on_params_changed()

    def _on_params_changed(self) -> None:
        self._roles = {Role.parse(r) for r in self.roles}

    def extract(self, records: list[MemoryRecord]) -> list[ExtractedMemory]:
        out: list[ExtractedMemory] = []
        seen: set[tuple[str, str]] = set()
        for record in records:
            if record.role not in self._roles:
                continue
            speaker = record.name or record.metadata.get("speaker")
            for memory_type, subject, content in self.statements(record.content, speaker):
                if (subject, content) in seen:
                    continue
                seen.add((subject, content))
                out.append(ExtractedMemory(content, memory_type, subject, list(record.source_ids)))
        return out

    def statements(self, text: str, speaker: str | None = None) -> list[Statement]:
        """(memory_type, subject, content) for each statement recognised in ``text``."""
        found: list[Statement] = []
        for sentence in sentences(text):
            if sentence.endswith(("?", "？")):
                continue
            if re.search(r"[\u4e00-\u9fff]", sentence):
                found.extend(chinese_statements(sentence, speaker or "用户"))
            found.extend(english_statements(sentence, speaker or "User", self.max_object_words))
        return found
