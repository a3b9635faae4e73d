"""The prompts memlab sends to a model, and the parsers for their answers.

Every task prompt starts its system message with ``memlab-task: <task>`` and puts
its inputs in ``## <Section>`` blocks of the user message. A real model reads them as
ordinary instructions; ``OfflineLLM`` uses the same markers to recognise the task and
read its inputs back, so the offline stand-in answers exactly what memlab asks.
"""

from __future__ import annotations

import json
import re
from typing import Any, Iterable

from ..base import MemlabError
from ..records import MEMORY_TYPES, MemoryRecord

TASK_MARKER = "memlab-task:"
SUMMARIZE, EXTRACT, REWRITE, EXPAND, HYDE, FILTER = (
    "summarize", "extract", "rewrite", "expand", "hyde", "filter")
MERGE, ABSTRACT, GIST = "merge", "abstract", "gist"  # the layered memory's lifecycle parts

#: JSON schema of one extracted memory (``source_ids`` optional).
MEMORY_ITEM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["content", "memory_type", "subject"],
    "properties": {
        "content": {"type": "string", "minLength": 1},
        "memory_type": {"enum": list(MEMORY_TYPES)},
        "subject": {"type": "string"},
        "source_ids": {"type": "array", "items": {"type": "string"}},
    },
}
EXTRACTION_SCHEMA: dict[str, Any] = {"type": "array", "items": MEMORY_ITEM_SCHEMA}


# -- request schemas (structured output) ------------------------------------------------
# What a step asking for JSON sends with its request (``complete(..., schema=...)``), for a client
# that constrains its answer to it (``memlab.llm.base``). They describe the answer each prompt asks
# for, within the subset every such client reads (llama.cpp's schema-to-grammar converter, OpenAI's
# strict ``json_schema``): objects list every property as required and allow no other; arrays may
# bound their length; numbers and ids are enums of what the prompt listed. ``title`` names the
# schema (OpenAI's ``json_schema.name``). The answers are still validated by the step's own parser.
def _object(properties: dict[str, Any], title: str | None = None) -> dict[str, Any]:
    head = {"title": title} if title else {}
    return {**head, "type": "object", "properties": properties, "required": list(properties),
            "additionalProperties": False}


def _numbers(n: int) -> dict[str, Any]:
    return {"type": "integer", "enum": list(range(1, n + 1))}


def extract_schema(turn_ids: list[str]) -> dict[str, Any]:
    """The answer ``extract_prompt`` asks for: ``{"memories": [...]}``, at most one memory per
    turn shown (``len(turn_ids)``, unbounded when none is given), each with a
    ``memory_type`` among ``MEMORY_TYPES`` and at most ``len(turn_ids)`` ``source_ids`` among the
    ids of the turns shown (``turn_ids``; any strings when none is given)."""
    ids = list(dict.fromkeys(str(i) for i in turn_ids))
    sources: dict[str, Any] = {"type": "array", "items": {"type": "string"}}
    if ids:  # each id once at most: a bound that also stops a model repeating them
        sources = {"type": "array", "items": {"type": "string", "enum": ids}, "maxItems": len(ids)}
    item = _object({"content": {"type": "string"}, "memory_type": {"type": "string", "enum": list(MEMORY_TYPES)},
                    "subject": {"type": "string"}, "source_ids": sources})
    memories: dict[str, Any] = {"type": "array", "items": item}
    if ids:  # at most one memory per turn shown: without a bound a small model copies the example on
        memories["maxItems"] = len(ids)
    return _object({"memories": memories}, "memlab_extract")


def filter_schema(n_items: int, max_items: int) -> dict[str, Any]:
    """The answer ``filter_prompt`` asks for: ``{"relevant": [numbers]}``, numbers from 1 to
    ``n_items``, at most ``max_items`` of them (a bound that also stops a model counting on)."""
    if n_items < 1 or max_items < 1:
        raise MemlabError(f"filter_schema needs n_items >= 1 and max_items >= 1, got {n_items}, {max_items}")
    return _object({"relevant": {"type": "array", "items": _numbers(n_items),
                                 "maxItems": min(max_items, n_items)}}, "memlab_filter")


def abstract_schema(n_memories: int, min_support: int, max_patterns: int) -> dict[str, Any]:
    """The answer ``abstract_prompt`` asks for: ``{"patterns": [{"abstraction", "evidence"}]}``,
    at most ``max_patterns`` patterns, each with ``min_support`` to ``n_memories`` evidence
    numbers from 1 to ``n_memories``."""
    if not 1 <= min_support <= n_memories or max_patterns < 1:
        raise MemlabError(f"abstract_schema needs 1 <= min_support <= n_memories and max_patterns >= 1, "
                          f"got min_support={min_support}, n_memories={n_memories}, max_patterns={max_patterns}")
    pattern = _object({"abstraction": {"type": "string"},
                       "evidence": {"type": "array", "items": _numbers(n_memories),
                                    "minItems": min_support, "maxItems": n_memories}})
    return _object({"patterns": {"type": "array", "items": pattern, "maxItems": max_patterns}}, "memlab_abstract")


# -- rendering and reading back ---------------------------------------------------------
def task_messages(task: str, instructions: str, sections: dict[str, str]) -> list[dict[str, str]]:
    return [{"role": "system", "content": f"{TASK_MARKER} {task}\n{instructions.strip()}"},
            {"role": "user", "content": render_sections(sections)}]


def task_of(messages: list[dict[str, Any]]) -> str | None:
    """The memlab task named in the first system message, or None for a plain chat."""
    for m in messages:
        if m.get("role") in ("system", "developer"):
            first = str(m.get("content") or "").split("\n", 1)[0].strip()
            if first.startswith(TASK_MARKER):
                return first[len(TASK_MARKER):].strip()
            return None
    return None


def render_sections(sections: dict[str, str]) -> str:
    return "\n\n".join(f"## {name}\n{body.strip()}" for name, body in sections.items())


def parse_sections(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    name = None
    lines: list[str] = []
    for line in (text or "").split("\n"):
        if line.startswith("## "):
            if name is not None:
                out[name] = "\n".join(lines).strip()
            name, lines = line[3:].strip(), []
        elif name is not None:
            lines.append(line)
    if name is not None:
        out[name] = "\n".join(lines).strip()
    return out


def speaker_of(record: MemoryRecord) -> str:
    return record.name or str(record.metadata.get("speaker") or record.role.value)


def render_turns(records: Iterable[MemoryRecord]) -> str:
    """One line per turn: ``[id] speaker: text`` (newlines inside a turn become spaces)."""
    return "\n".join(f"[{r.id}] {speaker_of(r)}: {' '.join(r.content.split())}" for r in records)


_TURN = re.compile(r"^\[(?P<id>[^\]]*)\] (?P<speaker>[^:]*): ?(?P<text>.*)$")


def parse_turns(text: str) -> list[tuple[str, str, str]]:
    """(id, speaker, text) for every line written by ``render_turns``."""
    out = []
    for line in (text or "").split("\n"):
        m = _TURN.match(line.strip())
        if m:
            out.append((m["id"], m["speaker"], m["text"]))
    return out


def render_numbered(items: list[str]) -> str:
    return "\n".join(f"[{i}] {' '.join(t.split())}" for i, t in enumerate(items, 1))


def parse_numbered(text: str) -> list[str]:
    return [m.group(1) for m in re.finditer(r"^\[\d+\] (.*)$", text or "", re.M)]


# -- task prompts -------------------------------------------------------------------
def summarize_prompt(turns: list[MemoryRecord], previous: str, max_words: int) -> list[dict[str, str]]:
    return task_messages(SUMMARIZE, f"""
You condense the oldest part of a conversation into a running summary that replaces it.
Keep: facts the speakers stated about themselves, agreements and decisions reached, and
open to-dos (who will do what, when). Keep names, numbers and dates exactly. Drop
greetings, small talk and anything already in the previous summary unless it changed.
Write plain sentences, at most {max_words} words. Output only the summary.""",
                         {"Previous summary": previous or "(none)", "Conversation": render_turns(turns)})


def extract_prompt(turns: list[MemoryRecord]) -> list[dict[str, str]]:
    return task_messages(EXTRACT, """
Extract what is worth keeping in long-term memory from the conversation below: lasting
facts about the speakers (name, location, job, family, possessions), stated preferences
and habits, and summaries of notable events. Each memory is one short self-contained
sentence naming the person. Ignore greetings, questions and passing remarks.
Answer with JSON only, exactly in this form:
{"memories": [{"content": "...", "memory_type": "fact" | "preference" | "event_summary",
  "subject": "short attribute key, e.g. location, employer, beverage_preference",
  "source_ids": ["ids of the turns it came from"]}]}
Use {"memories": []} when there is nothing to keep.""", {"Conversation": render_turns(turns)})


def rewrite_prompt(question: str, history: list[MemoryRecord]) -> list[dict[str, str]]:
    return task_messages(REWRITE, """
Rewrite the question into one standalone search query for a memory store: resolve
pronouns and references using the recent conversation, keep names, places and dates,
drop filler words. Output only the query.""",
                         {"Recent conversation": render_turns(history) or "(none)", "Question": question})


def expand_prompt(question: str, n: int) -> list[dict[str, str]]:
    return task_messages(EXPAND, f"""
Write {n} different search queries that would find memories relevant to the question,
each phrased differently (synonyms, related terms, a more specific and a more general
form). One query per line, no numbering, nothing else.""", {"Question": question, "Count": str(n)})


def hyde_prompt(question: str) -> list[dict[str, str]]:
    return task_messages(HYDE, """
Write a short passage (one or two sentences) that a memory store would contain if it
held the answer to the question, stated as a plain fact. Invent plausible details if
needed; it is used only for searching. Output only the passage.""", {"Question": question})


def filter_prompt(question: str, memories: list[str], max_items: int) -> list[dict[str, str]]:
    return task_messages(FILTER, f"""
You select information for answering a question. Below are numbered memories retrieved
from a knowledge store. Choose the ones directly relevant and reliable for the question,
at most {max_items}, most relevant first; ignore vague, outdated or unrelated ones.
Answer with JSON only: {{"relevant": [numbers]}} (an empty list if none is relevant).""",
                         {"Question": question, "Memories": render_numbered(memories),
                          "Max": str(max_items)})


def merge_prompt(memories: list[str]) -> list[dict[str, str]]:
    return task_messages(MERGE, """
Merge the memories below, which are about the same thing, into ONE self-contained memory
sentence (or two) that keeps every detail: names, numbers, places, dates. If they
disagree, keep the newest (they are listed oldest first). Output only the merged memory.""",
                         {"Memories": render_numbered(memories)})


def abstract_prompt(memories: list[tuple[str, str]], min_support: int) -> list[dict[str, str]]:
    """``memories``: (day, text) pairs, listed as ``[n] (day) text``."""
    listed = "\n".join(f"[{i}] ({day}) {' '.join(text.split())}" for i, (day, text) in enumerate(memories, 1))
    return task_messages(ABSTRACT, f"""
Find patterns in the memories below: a habit, a recurring interest or a general trait that
{min_support} or more of them support (e.g. several trips to European cities -> "keen on
European city travel"). Write each pattern as one short sentence naming the person, and
list the numbers of the memories that support it. Answer with JSON only, exactly:
{{"patterns": [{{"abstraction": "...", "evidence": [1, 2, 3]}}]}}
Use {{"patterns": []}} when nothing recurs.""", {"Memories": listed, "Minimum support": str(min_support)})


def parse_dated(text: str) -> list[tuple[str, str]]:
    """(day, text) for every line written by ``abstract_prompt``."""
    return [(m.group(1), m.group(2)) for m in re.finditer(r"^\[\d+\] \(([^)]*)\) (.*)$", text or "", re.M)]


def gist_prompt(memories: list[str], max_words: int) -> list[dict[str, str]]:
    return task_messages(GIST, f"""
Rewrite each memory below as ONE sentence of at most {max_words} words that keeps its key
fact (names, numbers, places, dates). Answer with one line per memory, numbered as given:
[1] ...
[2] ...""", {"Memories": render_numbered(memories), "Max words": str(max_words)})


# -- parsing answers -------------------------------------------------------------------
def strip_fences(text: str) -> str:
    """Remove a surrounding Markdown code fence (models often add one around JSON)."""
    m = re.match(r"^\s*```[\w-]*\s*\n(.*?)\n?```\s*$", text or "", re.S)
    return m.group(1) if m else (text or "").strip()


def parse_lines(text: str, n: int) -> list[str]:
    """Up to ``n`` distinct non-empty lines, with list numbering or bullets removed."""
    out: list[str] = []
    for line in strip_fences(text).split("\n"):
        line = re.sub(r"^\s*(?:[-*\u2022]|\d+[.)]|\[\d+\])\s*", "", line).strip().strip('"')
        if line and line not in out:
            out.append(line)
    return out[:n]


def is_selection_json(text: str) -> bool:
    """True when a filter answer has the asked format: JSON ``{"relevant": [...]}`` or a list."""
    try:
        raw = json.loads(strip_fences(text))
    except json.JSONDecodeError:
        return False
    return isinstance(raw, list) or (isinstance(raw, dict) and isinstance(raw.get("relevant"), list))


def parse_selection(text: str, n_items: int) -> list[int]:
    """0-based indices chosen by a filter answer (JSON ``{"relevant": [...]}`` or bare numbers)."""
    raw: Any
    try:
        raw = json.loads(strip_fences(text))
        if isinstance(raw, dict):
            raw = raw.get("relevant", [])
    except json.JSONDecodeError:
        raw = re.findall(r"\d+", text or "")
    if not isinstance(raw, list):
        raise MemlabError(f"relevance filter answer must list item numbers, got {text[:200]!r}")
    out: list[int] = []
    for item in raw:
        try:
            i = int(item) - 1
        except (TypeError, ValueError):
            continue
        if 0 <= i < n_items and i not in out:
            out.append(i)
    return out


# -- judge prompts (memlab.eval.answers.LLMJudge) ------------------------------------------
#: The mem0 paper's LLM-as-judge: generous about wording and length.
LENIENT_JUDGE_PROMPT = """Your task is to label an answer to a question as "CORRECT" or "WRONG".
You are given a question, a gold (ground truth) answer, and a generated answer.
Be generous: if the generated answer mentions the same topic or fact as the gold answer,
even in other words or with more detail, it is CORRECT. Dates and times in another format
that refer to the same moment are CORRECT.

Question: {question}
Gold answer: {gold}
Generated answer: {prediction}

Reply with JSON only: {{"label": "CORRECT"}} or {{"label": "WRONG"}}."""

#: A strict judge: every fact of the gold answer must be stated, nothing may contradict it,
#: and hedges, refusals or several alternatives are WRONG.
STRICT_JUDGE_PROMPT = """Label the generated answer "CORRECT" or "WRONG" against the gold answer.
It is CORRECT only if it states every fact in the gold answer (names, numbers, dates, places)
and says nothing that contradicts it. It is WRONG if it misses any part of the gold answer,
adds a conflicting fact, offers several alternatives, or says it does not know.

Question: {question}
Gold answer: {gold}
Generated answer: {prediction}

Reply with JSON only: {{"label": "CORRECT"}} or {{"label": "WRONG"}}."""

#: The answer both judge prompts ask for: ``{"label": "CORRECT"}`` or ``{"label": "WRONG"}``.
JUDGE_SCHEMA: dict[str, Any] = _object({"label": {"type": "string", "enum": ["CORRECT", "WRONG"]}}, "memlab_judge")

#: The judge prompts an answer-level run compares (``memlab.eval.answers.judge_rows``).
JUDGE_PROMPTS: dict[str, str] = {"lenient": LENIENT_JUDGE_PROMPT, "strict": STRICT_JUDGE_PROMPT}
