"""The prompts memlab sends to a model, and the parsers for their answers.

Every task prompt starts its system message with ``memlab-task: <task>`` and puts
its inputs in ``## <Section>`` blocks of the user message. A real model reads them as
ordinary instructions; ``OfflineLLM`` uses the same markers to recognise the task and
read its inputs back, so the offline stand-in answers exactly what memlab asks.

Why over 400 lines: most of them are the prompt texts themselves (the judge prompt sets byte
for byte, each step's instructions), kept in one file so a changed word is one diff and its
version digest; the parsers beside them read exactly those prompts' answers.
"""

from __future__ import annotations

import hashlib
import json
import re
import string
from dataclasses import dataclass
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
#: A lenient LLM-as-judge (the kind mem0's evaluation uses): generous about wording and length.
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

#: The one-word forms (``lenient@v2``, ``strict@v2``): the same words, but the reply is one word.
#: Why a new version: under a grammar that lets it write only the word, Qwen2.5-Coder-1.5B
#: labelled 8 of 8 pairs WRONG when the prompt asked for JSON, and 8 of 8 right when it asked for
#: the word (measured); a JSON reply costs ~7 generated tokens where the word costs 1-2.
_JSON_REPLY = 'Reply with JSON only: {{"label": "CORRECT"}} or {{"label": "WRONG"}}.'
_WORD_REPLY = "Reply with one word: CORRECT or WRONG."
LENIENT_JUDGE_PROMPT_WORD = LENIENT_JUDGE_PROMPT.replace(_JSON_REPLY, _WORD_REPLY)
STRICT_JUDGE_PROMPT_WORD = STRICT_JUDGE_PROMPT.replace(_JSON_REPLY, _WORD_REPLY)
assert _WORD_REPLY in LENIENT_JUDGE_PROMPT_WORD and _WORD_REPLY in STRICT_JUDGE_PROMPT_WORD

#: The answer both judge prompts ask for: ``{"label": "CORRECT"}`` or ``{"label": "WRONG"}``.
JUDGE_SCHEMA: dict[str, Any] = _object({"label": {"type": "string", "enum": ["CORRECT", "WRONG"]}}, "memlab_judge")

#: The judge prompts an answer-level run compares (``memlab.eval.answers.judge_rows``).
JUDGE_PROMPTS: dict[str, str] = {"lenient": LENIENT_JUDGE_PROMPT_WORD, "strict": STRICT_JUDGE_PROMPT_WORD}


# -- judge prompt sets: named, versioned, one template per question type ---------------------
# A judge result is only comparable with another made by the same words: every answer-level
# table names the set that made it as ``name@version`` (``JudgePromptSet.id``). A set's text
# never changes under its version; a changed text is a new version (tests pin each digest).

#: LongMemEval's judge prompts, byte for byte as LongMemEval's own evaluation code
#: (``get_anscheck_prompt``, commit 9e0b455f1ef0) writes them; every word is below. Fields are
#: positional: ``template.format(question, answer, response)``. Lines are split for reading only.
# single-session-user, single-session-assistant, multi-session
_LME_BASIC = (  # single-session-user/-assistant and multi-session
    "I will give you a question, a correct answer, and a response from a model. "
    "Please answer yes if the response contains the correct answer. Otherwise, answer no. "
    "If the response is equivalent to the correct answer or contains all the intermediate steps to get the correct answer, you should also answer yes. "
    "If the response only contains a subset of the information required by the answer, answer no. \n\n"
    "Question: {}\n\nCorrect Answer: {}\n\nModel Response: {}\n\n"
    "Is the model response correct? Answer yes or no only.")
# temporal-reasoning: off-by-one day counts are not penalised
_LME_TEMPORAL = (  # temporal-reasoning: off-by-one day counts tolerated
    "I will give you a question, a correct answer, and a response from a model. "
    "Please answer yes if the response contains the correct answer. Otherwise, answer no. "
    "If the response is equivalent to the correct answer or contains all the intermediate steps to get the correct answer, you should also answer yes. "
    "If the response only contains a subset of the information required by the answer, answer no. "
    "In addition, do not penalize off-by-one errors for the number of days. "
    "If the question asks for the number of days/weeks/months, etc., and the model makes off-by-one errors (e.g., predicting 19 days when the answer is 18), the model's response is still correct. "
    "\n\nQuestion: {}\n\nCorrect Answer: {}\n\nModel Response: {}\n\n"
    "Is the model response correct? Answer yes or no only.")
_LME_KNOWLEDGE_UPDATE = (  # knowledge-update: the updated answer counts
    "I will give you a question, a correct answer, and a response from a model. "
    "Please answer yes if the response contains the correct answer. Otherwise, answer no. "
    "If the response contains some previous information along with an updated answer, the response should be considered as correct as long as the updated answer is the required answer.\n\n"
    "Question: {}\n\nCorrect Answer: {}\n\nModel Response: {}\n\n"
    "Is the model response correct? Answer yes or no only.")
# single-session-preference: the gold is a rubric
_LME_PREFERRED = (  # single-session-preference: a rubric, not an answer
    "I will give you a question, a rubric for desired personalized response, and a response from a model. "
    "Please answer yes if the response satisfies the desired response. Otherwise, answer no. "
    "The model does not need to reflect all the points in the rubric. "
    "The response is correct as long as it recalls and utilizes the user's personal information correctly.\n\n"
    "Question: {}\n\nRubric: {}\n\nModel Response: {}\n\n"
    "Is the model response correct? Answer yes or no only.")
# abstention (a question id containing '_abs', whatever its type): the gold is an explanation
_LME_ABSTENTION = (  # abstention: saying it is unknown is correct
    "I will give you an unanswerable question, an explanation, and a response from a model. "
    "Please answer yes if the model correctly identifies the question as unanswerable. "
    "The model could say that the information is incomplete, or some other information is given but the asked information is not.\n\n"
    "Question: {}\n\nExplanation: {}\n\nModel Response: {}\n\n"
    "Does the model correctly identify the question as unanswerable? Answer yes or no only.")

#: The protocols a judge reply is read by: ``label`` (memlab's: ``{"label": "CORRECT" | "WRONG"}``,
#: ``memlab.eval.answers.parse_judgement``) and ``yes/no`` (LongMemEval's: 1.0 when "yes" is in the
#: lower-cased reply, else 0.0, ``parse_yes_no``).
JUDGE_PROTOCOLS = ("label", "yes/no")
#: How a set's prompts ask for the reply: ``json`` (``{"label": ...}``) or ``word`` (the label alone).
JUDGE_REPLIES = ("json", "word")
#: The words a reply of each protocol is made of (``LLMJudge`` sends them as ``one_of`` for a
#: ``word`` set: ``LocalLLM`` then decodes under a grammar of exactly these words).
PROTOCOL_LABELS = {"label": ("CORRECT", "WRONG"), "yes/no": ("yes", "no")}
#: The template key of a set with one template for every question type.
ANY_TYPE = "*"
#: The template key LongMemEval uses for abstention questions, chosen by the question id.
ABSTENTION = "abstention"
#: What marks an abstention question in a LongMemEval question id (``'_abs' in question_id``).
ABSTENTION_MARK = "_abs"

#: The answer a yes/no judge prompt asks for under structured output: ``{"answer": "yes" | "no"}``
#: (read as LongMemEval reads a reply: "yes" in the lower-cased text; "answer" holds no "yes").
YES_NO_SCHEMA: dict[str, Any] = _object({"answer": {"type": "string", "enum": ["yes", "no"]}}, "memlab_judge_yes_no")

_SET_NAME = re.compile(r"^[a-z][a-z0-9_-]*$")
_LABEL_FIELDS = ("{question}", "{gold}", "{prediction}")


@dataclass(frozen=True, eq=False)
class JudgePromptSet:
    """A named, versioned set of judge prompts (``memlab.eval.answers.LLMJudge``).

    ``templates`` maps a question type (a probe's ``category``) to its template; ``ANY_TYPE``
    (``"*"``) serves every type; ``ABSTENTION`` serves any probe whose id contains
    ``ABSTENTION_MARK`` when the set has it (LongMemEval's rule). ``protocol`` says how the
    template is filled and the reply read: ``label`` templates name their fields
    (``{question}``, ``{gold}``, ``{prediction}``) and ask for a CORRECT/WRONG label;
    ``yes/no`` templates have three positional fields (question, gold, answer) and ask for
    yes or no. ``max_tokens`` is the reply's budget; ``source`` says where the words come from;
    ``reply`` how the prompts ask for it: ``json`` or ``word`` (the label alone; yes/no prompts
    always ask for the word). ``id`` is ``name@version``, the name every judge result carries."""

    name: str
    version: str
    templates: dict[str, str]
    protocol: str = "label"
    max_tokens: int = 16
    source: str = "memlab"
    reply: str = "json"

    def __post_init__(self) -> None:
        where = "JudgePromptSet"
        if not isinstance(self.name, str) or not _SET_NAME.match(self.name):
            raise MemlabError(f"{where} parameter 'name': expected lower-case letters, digits, '_' or '-', "
                              f"got {self.name!r}")
        if not isinstance(self.version, str) or not self.version or "@" in self.version:
            raise MemlabError(f"{where} parameter 'version': expected a non-empty string without '@', "
                              f"got {self.version!r}")
        if self.reply not in JUDGE_REPLIES:
            raise MemlabError(f"{where} parameter 'reply': expected one of {', '.join(JUDGE_REPLIES)}, "
                              f"got {self.reply!r}")
        if self.protocol not in JUDGE_PROTOCOLS:
            raise MemlabError(f"{where} parameter 'protocol': expected one of {', '.join(JUDGE_PROTOCOLS)}, "
                              f"got {self.protocol!r}")
        if not isinstance(self.templates, dict) or not self.templates or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in self.templates.items()):
            raise MemlabError(f"{where} parameter 'templates': expected a non-empty dict of question type -> "
                              f"template text, got {self.templates!r}"[:300])
        if isinstance(self.max_tokens, bool) or not isinstance(self.max_tokens, int) or self.max_tokens < 1:
            raise MemlabError(f"{where} parameter 'max_tokens': expected an int >= 1, got {self.max_tokens!r}")
        for key, text in self.templates.items():
            if self.protocol == "label":
                missing = [f for f in _LABEL_FIELDS if f not in text]
                if missing:
                    raise MemlabError(f"{where} {self.name!r} parameter 'templates' [{key!r}]: a judge prompt "
                                      f"must contain {', '.join(missing)}, got {text[:120]!r}")
            else:
                fields = [f for _, f, _, _ in string.Formatter().parse(text) if f is not None]
                if fields != ["", "", ""]:
                    raise MemlabError(f"{where} {self.name!r} parameter 'templates' [{key!r}]: a yes/no prompt "
                                      f"must have three positional fields {{}} (question, gold, answer), got "
                                      f"{fields!r}")

    @property
    def id(self) -> str:
        """``name@version``: what judge results record as ``judge_prompt_set``."""
        return f"{self.name}@{self.version}"

    @property
    def schema(self) -> dict[str, Any]:
        """The structured-output schema of the reply: ``JUDGE_SCHEMA`` or ``YES_NO_SCHEMA``."""
        return JUDGE_SCHEMA if self.protocol == "label" else YES_NO_SCHEMA

    @property
    def labels(self) -> tuple[str, str]:
        """The two words of a reply: (positive, negative), ``PROTOCOL_LABELS[protocol]``."""
        return PROTOCOL_LABELS[self.protocol]

    @property
    def question_types(self) -> list[str]:
        """The question types with a template of their own (none for a set serving any type)."""
        return [k for k in self.templates if k not in (ANY_TYPE, ABSTENTION)]

    @property
    def digest(self) -> str:
        """sha256 of the protocol and templates (canonical JSON): the text a version stands for."""
        body = json.dumps([self.protocol, self.templates], sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(body.encode("utf-8")).hexdigest()

    def template_for(self, category: Any = None, probe_id: Any = None) -> str:
        """The template for a probe: the abstention one for an id containing ``ABSTENTION_MARK``
        (when the set has one), else its category's, else ``ANY_TYPE``'s."""
        if ABSTENTION in self.templates and isinstance(probe_id, str) and ABSTENTION_MARK in probe_id:
            return self.templates[ABSTENTION]
        if isinstance(category, str) and category in self.templates:
            return self.templates[category]
        if ANY_TYPE in self.templates:
            return self.templates[ANY_TYPE]
        raise MemlabError(f"judge prompt set {self.id!r} parameter 'category': expected a question type among "
                          f"{', '.join(self.question_types)} (or a probe id containing {ABSTENTION_MARK!r}), "
                          f"got {category!r} (probe {probe_id!r})")

    def render(self, question: str, gold: Any, prediction: str, category: Any = None, probe_id: Any = None) -> str:
        """The judge's user message for one answer."""
        template = self.template_for(category, probe_id)
        if self.protocol == "label":
            return template.format(question=question, gold=gold, prediction=prediction)
        return template.format(question, gold, prediction)


LENIENT_JUDGE_V1 = JudgePromptSet("lenient", "v1", {ANY_TYPE: LENIENT_JUDGE_PROMPT},
                                  source="memlab's wording of a lenient LLM-as-judge, after mem0's")
STRICT_JUDGE_V1 = JudgePromptSet("strict", "v1", {ANY_TYPE: STRICT_JUDGE_PROMPT}, source="memlab")
LENIENT_JUDGE = JudgePromptSet("lenient", "v2", {ANY_TYPE: LENIENT_JUDGE_PROMPT_WORD}, reply="word",
                               source="memlab's wording of a lenient LLM-as-judge, after mem0's, one-word reply")
STRICT_JUDGE = JudgePromptSet("strict", "v2", {ANY_TYPE: STRICT_JUDGE_PROMPT_WORD}, reply="word",
                              source="memlab, one-word reply")
LONGMEMEVAL_JUDGE = JudgePromptSet(
    "longmemeval", "v1",
    {"single-session-user": _LME_BASIC, "single-session-assistant": _LME_BASIC, "multi-session": _LME_BASIC,
     "temporal-reasoning": _LME_TEMPORAL, "knowledge-update": _LME_KNOWLEDGE_UPDATE,
     "single-session-preference": _LME_PREFERRED, ABSTENTION: _LME_ABSTENTION},
    protocol="yes/no", max_tokens=10, reply="word",  # LongMemEval's evaluation asks for 10 tokens
    source="LongMemEval's own judge prompts (its get_anscheck_prompt, commit 9e0b455f1ef0), byte for byte")

#: The judge prompt sets memlab knows, by name: each name's current version (``judge_prompt_set``).
JUDGE_PROMPT_SETS: dict[str, JudgePromptSet] = {s.name: s for s in (LENIENT_JUDGE, STRICT_JUDGE, LONGMEMEVAL_JUDGE)}
#: Every version memlab knows, by ``name@version`` (earlier versions stay usable by their id).
JUDGE_PROMPT_VERSIONS: dict[str, JudgePromptSet] = {
    s.id: s for s in (LENIENT_JUDGE_V1, STRICT_JUDGE_V1, LENIENT_JUDGE, STRICT_JUDGE, LONGMEMEVAL_JUDGE)}


def judge_prompt_set(value: Any, where: str = "parameter 'prompt_set'") -> JudgePromptSet:
    """The ``JudgePromptSet`` ``value`` names: a set itself, a name (``"longmemeval"``: its
    current version) or ``name@version`` (``"lenient@v1"``). Anything else is a MemlabError
    saying ``where``, what came and the known names."""
    if isinstance(value, JudgePromptSet):
        return value
    if isinstance(value, str):
        found = JUDGE_PROMPT_SETS.get(value) if "@" not in value else JUDGE_PROMPT_VERSIONS.get(value)
        if found is not None:
            return found
    known = ", ".join(JUDGE_PROMPT_SETS)
    ids = ", ".join(JUDGE_PROMPT_VERSIONS)
    raise MemlabError(f"{where}: expected a judge prompt set name among {known} (or name@version: {ids}), "
                      f"got {value!r}")


def template_prompt_set(template: str, name: str = "custom") -> JudgePromptSet:
    """The set of one label template: the registered set with exactly that text (so
    ``JUDGE_PROMPTS["lenient"]`` is ``lenient@v2``), else a set ``name`` whose version is
    ``sha-`` + the first 10 hex digits of the template's sha256 (the text is the version)."""
    for known in JUDGE_PROMPT_VERSIONS.values():
        if known.templates == {ANY_TYPE: template}:
            return known
    digest = hashlib.sha256(str(template).encode("utf-8")).hexdigest()[:10]
    return JudgePromptSet(name, f"sha-{digest}", {ANY_TYPE: template})
