"""``LLMExtractor``: ask a model for memories as JSON, validate, retry with the error."""

from __future__ import annotations

import json

import jsonschema

from ..base import MemlabError, Param
from ..llm.base import LLM, LLMError, LLMProgram, UsesLLM
from ..llm.prompts import EXTRACTION_SCHEMA, extract_prompt, extract_schema, strip_fences
from ..records import MemoryRecord
from ..text import json_problem
from .base import ExtractedMemory, Extractor


def parse_extraction(text: str, default_source_ids: list[str]) -> list[ExtractedMemory]:
    """Validate a model's extraction answer against ``EXTRACTION_SCHEMA``.

    Accepts ``{"memories": [...]}`` or a bare list. Raises MemlabError saying what is wrong.
    """
    try:
        data = json.loads(strip_fences(text))
    except json.JSONDecodeError as exc:
        raise MemlabError(f"extraction answer is not JSON ({json_problem(exc)} at char {exc.pos}): {text[:200]!r}") from None
    if isinstance(data, dict):
        if "memories" not in data:
            raise MemlabError(f"extraction answer must have a 'memories' list, got keys {sorted(data)}")
        data = data["memories"]
    try:
        jsonschema.validate(data, EXTRACTION_SCHEMA)
    except jsonschema.ValidationError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "(top level)"
        raise MemlabError(f"extraction answer invalid at {where}: {exc.message}") from None
    return [ExtractedMemory(item["content"].strip(), item["memory_type"], item["subject"].strip(),
                            [str(s) for s in item.get("source_ids") or default_source_ids])
            for item in data]


class LLMExtractor(UsesLLM, Extractor):
    """Ask ``llm`` for memories as JSON; on invalid output, show it the error and ask again.

    Up to ``max_attempts`` calls per ``extract``; after the last invalid answer a
    MemlabError is raised, or, with ``on_failure="skip"``, nothing is extracted and
    ``failures`` counts it. Source ids the model names that are not among the turns
    are dropped (all the turns are used if none remains).
    """

    constraints = {
        "max_attempts": Param(int, ge=1),
        "on_failure": Param(choices=("raise", "skip")),
    }

    def __init__(self, llm: LLM, max_attempts: int = 3, on_failure: str = "raise"):
        self.llm = llm
        self.max_attempts = max_attempts
        self.on_failure = on_failure
        self._on_params_changed()

    def _on_params_changed(self) -> None:
        self._failures = 0

    @property
    def failures(self) -> int:
        """Extractions given up (``on_failure="skip"``) since construction or ``reset_usage``."""
        return self._failures

    def reset_usage(self) -> None:
        super().reset_usage()
        self._failures = 0

    def _extract(self, records: list[MemoryRecord]) -> LLMProgram:
        if not records:
            return []
        messages, error = extract_prompt(records), ""
        schema = {"schema": extract_schema([r.id for r in records])}  # for a client with structured output
        for _ in range(self.max_attempts):
            found, messages, error = self._read((yield messages, schema), records, messages)
            if found is not None:
                return found
        return self._give_up(error)

    def extract(self, records: list[MemoryRecord]) -> list[ExtractedMemory]:
        return self.run_program(self._extract(records))

    async def aextract(self, records: list[MemoryRecord]) -> list[ExtractedMemory]:
        return await self.arun_program(self._extract(records))

    def _read(self, answer: str, records: list[MemoryRecord], messages: list[dict[str, str]]
              ) -> tuple[list[ExtractedMemory] | None, list[dict[str, str]], str]:
        """(memories, messages, "") for a valid answer; else (None, the retry conversation, error)."""
        try:
            return self._clean(parse_extraction(answer, _ids(records)), records), messages, ""
        except MemlabError as exc:
            self._format_error()
            error = str(exc)
            retry = messages + [{"role": "assistant", "content": answer},
                                {"role": "user", "content": _retry_note(error)}]
            return None, retry, error

    def _give_up(self, error: str) -> list[ExtractedMemory]:
        self._failures += 1
        if self.on_failure == "skip":
            return []
        raise LLMError(f"LLMExtractor: no valid answer after {self.max_attempts} attempt(s); "
                          f"last problem: {error}")

    @staticmethod
    def _clean(items: list[ExtractedMemory], records: list[MemoryRecord]) -> list[ExtractedMemory]:
        known = _ids(records)
        turn_ids = {r.id for r in records}
        for item in items:
            # a model may cite the turn ids it saw; map them to the turns' own source ids
            by_turn = [s for r in records if r.id in item.source_ids for s in r.source_ids]
            kept = [s for s in item.source_ids if s in known and s not in turn_ids]
            item.source_ids = list(dict.fromkeys(by_turn + kept)) or known
        return items


def _ids(records: list[MemoryRecord]) -> list[str]:
    return list(dict.fromkeys(s for r in records for s in r.source_ids))


def _retry_note(error: str) -> str:
    return (f"That answer could not be used: {error}. Reply again with JSON only, in the form "
            '{"memories": [{"content": ..., "memory_type": ..., "subject": ..., "source_ids": [...]}]}.')