"""Turning dialogue turns into typed long-term memories.

``RuleBasedExtractor`` (offline) recognises plain first-person statements in English
and Chinese; ``LLMExtractor`` asks a model for JSON and validates it. Both return
``ExtractedMemory`` items: a self-contained sentence, its ``memory_type`` (fact,
preference or event_summary), a ``subject`` (the attribute it sets; two memories with
the same subject conflict, the newer superseding the older) and the ``source_ids`` of
the turns it came from.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

import jsonschema

from ...base import Component, ConfigError, MemlabError
from ...llm.base import LLM, LLMUsage, UsesLLM
from ...llm.prompts import EXTRACTION_SCHEMA, MEMORY_TYPES, extract_prompt, strip_fences
from ...llm.text import sentences
from ...records import MemoryRecord, Role


@dataclass
class ExtractedMemory:
    """One memory worth keeping, before it is stored."""

    content: str
    memory_type: str = "fact"
    subject: str = ""
    source_ids: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.memory_type not in MEMORY_TYPES:
            raise MemlabError(f"memory_type must be one of {', '.join(MEMORY_TYPES)}, "
                              f"got {self.memory_type!r}")
        if not isinstance(self.content, str) or not self.content.strip():
            raise MemlabError("ExtractedMemory.content must be a non-empty string")
        self.source_ids = [str(s) for s in self.source_ids]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class Extractor(Component):
    """Reads turns, returns memories. ``usage`` is the LLM cost (zero without an LLM)."""

    def extract(self, records: list[MemoryRecord]) -> list[ExtractedMemory]:
        raise NotImplementedError

    async def aextract(self, records: list[MemoryRecord]) -> list[ExtractedMemory]:
        return self.extract(records)

    @property
    def usage(self) -> LLMUsage:
        return LLMUsage()

    def reset_usage(self) -> None:
        pass


# -- rule-based ---------------------------------------------------------------------------
#: Objects whose preference is exclusive (a newer one replaces the older): word -> subject.
CATEGORY_KEYWORDS: dict[str, str] = {
    **{w: "beverage_preference" for w in (
        "coffee tea latte espresso cappuccino mocha americano juice beer wine milk soda cola "
        "smoothie matcha cocoa 咖啡 茶 奶茶 绿茶 红茶 果汁 啤酒 红酒 葡萄酒 牛奶 可乐 拿铁").split()},
    **{w: "diet" for w in "vegetarian vegan pescatarian 素食者 素食主义者 素食".split()},
    **{w: "occupation" for w in (
        "teacher engineer doctor nurse student developer programmer designer lawyer writer "
        "artist counselor manager scientist chef accountant researcher photographer musician "
        "老师 教师 工程师 医生 护士 学生 程序员 设计师 律师 作家 厨师 会计 经理").split()},
}
_FILLER_TAIL = re.compile(
    r"(?:\s+(?:now|these days|nowadays|a lot|very much|so much|too|anymore|lately|currently|"
    r"at the moment|instead))+$", re.I)
_CLAUSE_END = re.compile(r"[,.;!?:\"\u201c\u201d()]| but | because | since | although | though | so that | which |"
                         r" and (?=(?:i|i'm|i've|my|we|he|she|they)\b)", re.I)
_ZH_END = re.compile(r"[，。！？；、,.!?;:：\s\"“”（）()]")


def _english_object(text: str, max_words: int) -> str:
    obj = _CLAUSE_END.split(" " + text + " ", 1)[0].strip()
    obj = _FILLER_TAIL.sub("", obj).strip()
    words = obj.split()
    if not words or words[0].lower() in {"bit", "little", "lot", "very", "not"}:
        return ""
    if len(words) == 1 and words[0].lower() in {"it", "that", "this", "them", "you", "him", "her", "so"}:
        return ""  # a pronoun says nothing without the conversation around it
    return " ".join(words[:max_words])


def _chinese_object(text: str) -> str:
    obj = _ZH_END.split(text, 1)[0]
    return re.sub(r"[了啦呢哦吧啊]+$", "", obj)


def _category(obj: str, default: str) -> str:
    words = obj.lower().split() if not re.search(r"[\u4e00-\u9fff]", obj) else [obj]
    for w in reversed(words):
        if w in CATEGORY_KEYWORDS:
            return CATEGORY_KEYWORDS[w]
    for key in sorted(CATEGORY_KEYWORDS, key=lambda k: (-len(k), k)):  # Chinese: longest match
        if re.search(r"[\u4e00-\u9fff]", key) and obj.endswith(key):
            return CATEGORY_KEYWORDS[key]
    return default


def _norm(obj: str) -> str:
    return re.sub(r"^(?:to|a|an|the)\s+", "", obj.lower()).strip()


# A rule: (pattern, builder(match, who, obj) -> (memory_type, subject, content) or None)
Rule = tuple[re.Pattern[str], Callable[[re.Match[str], str, str], "tuple[str, str, str] | None"]]


def _en(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern + r"(?P<rest>.+)", re.I)


def _identity(m: re.Match[str], who: str, obj: str):
    cat = _category(obj, "")
    if cat == "":
        return None  # "I'm a bit tired": too vague to keep
    return "fact", cat, f"{who} is a {obj}"


_EN_RULES: list[Rule] = [
    (_en(r"\bmy name is "), lambda m, w, o: ("fact", "name", f"{w}'s name is {o}")),
    (_en(r"\b(?:i'm|i am) called "), lambda m, w, o: ("fact", "name", f"{w} is called {o}")),
    (_en(r"\bi (?:now |currently )?live in "), lambda m, w, o: ("fact", "location", f"{w} lives in {o}")),
    (_en(r"\bi(?:'ve| have)? (?:just )?moved to "), lambda m, w, o: ("fact", "location", f"{w} moved to {o}")),
    (_en(r"\bi work (?:at|for) "), lambda m, w, o: ("fact", "employer", f"{w} works at {o}")),
    (_en(r"\bi work as (?:a |an )?"), lambda m, w, o: ("fact", "occupation", f"{w} works as a {o}")),
    (re.compile(r"\b(?:i'm|i am) (?P<rest>\d+) years? old", re.I),
     lambda m, w, o: ("fact", "age", f"{w} is {o} years old")),
    (_en(r"\b(?:i'm|i am) (?:a |an )"), _identity),
    (_en(r"\bi (?:really |also |still )?(?:don't|do not|dont|no longer) (?:like|love|enjoy) "),
     lambda m, w, o: ("preference", f"opinion:{_norm(o)}", f"{w} doesn't like {o}")),
    (_en(r"\bi (?:really )?(?:hate|dislike) "),
     lambda m, w, o: ("preference", f"opinion:{_norm(o)}", f"{w} dislikes {o}")),
    (_en(r"\bi (?:really |also |still |now )?(?P<verb>like|love|enjoy|adore) "),
     lambda m, w, o: ("preference", _category(o, f"opinion:{_norm(o)}"), f"{w} {m['verb'].lower()}s {o}")),
    (_en(r"\bi (?:now )?prefer "),
     lambda m, w, o: ("preference", _category(o, f"prefers:{_norm(o)}"), f"{w} prefers {o}")),
    (_en(r"\bi(?:'ve| have)? (?:recently |just )?switched (?:from [\w' -]+? )?to "),
     lambda m, w, o: ("preference", _category(o, f"switched_to:{_norm(o)}"), f"{w} switched to {o}")),
]
_EN_MY = re.compile(r"\bmy (?P<key>(?:[\w']+ ){0,3}?[\w']+) (?:is|are) (?P<rest>.+)", re.I)

_ZH_RULES: list[tuple[re.Pattern[str], Callable[[re.Match[str], str, str], "tuple[str, str, str] | None"]]] = [
    (re.compile(r"我叫(?P<rest>.+)"), lambda m, w, o: ("fact", "name", f"{w}叫{o}")),
    (re.compile(r"我的名字是(?P<rest>.+)"), lambda m, w, o: ("fact", "name", f"{w}叫{o}")),
    (re.compile(r"我(?:现在|目前)?住在(?P<rest>.+)"), lambda m, w, o: ("fact", "location", f"{w}住在{o}")),
    (re.compile(r"我(?:已经)?搬到了?(?P<rest>.+)"), lambda m, w, o: ("fact", "location", f"{w}搬到了{o}")),
    (re.compile(r"我在(?P<rest>[^，。！？,.!?\s]{1,20}?)(?:工作|上班)"),
     lambda m, w, o: ("fact", "employer", f"{w}在{o}工作")),
    (re.compile(r"我是(?:一名|一个|一位|个|名)?(?P<rest>[^说在不，。！？,.!?\s][^，。！？,.!?\s]{0,9})"),
     lambda m, w, o: None if _category(o, "") == "" else ("fact", _category(o, ""), f"{w}是{o}")),
    (re.compile(r"我(?:一直|也|真的)?不(?:太|再)?喜欢(?P<verb>[喝吃看听玩])?(?P<rest>.+)"),
     lambda m, w, o: ("preference", f"opinion:{o}", f"{w}不喜欢{m['verb'] or ''}{o}")),
    (re.compile(r"我(?:很|非常|特别|最|更|比较|也|现在)?(?:喜欢|爱)(?P<verb>[喝吃看听玩])?(?P<rest>.+)"),
     lambda m, w, o: ("preference", _category(o, f"opinion:{o}"), f"{w}喜欢{m['verb'] or ''}{o}")),
    (re.compile(r"我(?:现在|最近)?(?:改|换)(?P<verb>成|喝|吃|用)了?(?P<rest>.+)"),
     lambda m, w, o: ("preference", _category(o, f"switched_to:{o}"), f"{w}现在改{m['verb']}{o}")),
]
_ZH_MY = re.compile(r"我的(?P<key>[^是，。！？,.!?\s]{1,10})是(?P<rest>.+)")


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

    def __init__(self, roles: tuple[str, ...] = ("user", "assistant"), max_object_words: int = 8):
        self.roles = roles
        self.max_object_words = max_object_words
        self._on_params_changed()

    def _on_params_changed(self) -> None:
        self._roles = {Role.parse(r) for r in self.roles}
        if not isinstance(self.max_object_words, int) or self.max_object_words < 1:
            raise ConfigError(f"max_object_words must be a positive int, got {self.max_object_words!r}")

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

    def statements(self, text: str, speaker: str | None = None) -> list[tuple[str, str, str]]:
        """(memory_type, subject, content) for each statement recognised in ``text``."""
        found: list[tuple[str, str, str]] = []
        for sentence in sentences(text):
            if sentence.endswith(("?", "？")):
                continue
            if re.search(r"[\u4e00-\u9fff]", sentence):
                found.extend(self._chinese(sentence, speaker or "用户"))
            found.extend(self._english(sentence, speaker or "User"))
        return found

    def _english(self, sentence: str, who: str) -> list[tuple[str, str, str]]:
        out = []
        taken: list[tuple[int, int]] = []
        for pattern, build in _EN_RULES:
            for m in pattern.finditer(sentence):
                if any(a <= m.start() < b for a, b in taken):
                    continue  # the same words already matched a more specific rule
                obj = _english_object(m["rest"], self.max_object_words)
                item = build(m, who, obj) if obj else None
                if item:
                    out.append(item)
                    taken.append((m.start(), m.start("rest") + len(obj)))
        for m in _EN_MY.finditer(sentence):
            obj = _english_object(m["rest"], self.max_object_words)
            key = m["key"].lower()
            if obj and not any(a <= m.start() < b for a, b in taken):
                kind = "preference" if re.search(r"favou?rite", key) else "fact"
                out.append((kind, key, f"{who}'s {key} is {obj}"))
        return out

    def _chinese(self, sentence: str, who: str) -> list[tuple[str, str, str]]:
        out = []
        taken: list[int] = []
        for pattern, build in _ZH_RULES:
            for m in pattern.finditer(sentence):
                if m.start() in taken:
                    continue
                obj = _chinese_object(m["rest"])
                item = build(m, who, obj) if obj else None
                if item:
                    out.append(item)
                    taken.append(m.start())
        for m in _ZH_MY.finditer(sentence):
            obj = _chinese_object(m["rest"])
            if obj:
                kind = "preference" if "最喜欢" in m["key"] else "fact"
                out.append((kind, m["key"], f"{who}的{m['key']}是{obj}"))
        return out


# -- LLM-based ---------------------------------------------------------------------------
def parse_extraction(text: str, default_source_ids: list[str]) -> list[ExtractedMemory]:
    """Validate a model's extraction answer against ``EXTRACTION_SCHEMA``.

    Accepts ``{"memories": [...]}`` or a bare list. Raises MemlabError saying what is wrong.
    """
    try:
        data = json.loads(strip_fences(text))
    except json.JSONDecodeError as exc:
        raise MemlabError(f"extraction answer is not JSON ({exc.msg} at char {exc.pos}): {text[:200]!r}") from None
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

    def __init__(self, llm: LLM, max_attempts: int = 3, on_failure: str = "raise"):
        self.llm = llm
        self.max_attempts = max_attempts
        self.on_failure = on_failure
        self._on_params_changed()

    def _on_params_changed(self) -> None:
        if not isinstance(self.max_attempts, int) or self.max_attempts < 1:
            raise ConfigError(f"max_attempts must be an int >= 1, got {self.max_attempts!r}")
        if self.on_failure not in ("raise", "skip"):
            raise ConfigError(f"on_failure must be 'raise' or 'skip', got {self.on_failure!r}")
        self._failures = 0

    @property
    def failures(self) -> int:
        """Extractions given up (``on_failure="skip"``) since construction or ``reset_usage``."""
        return self._failures

    def reset_usage(self) -> None:
        super().reset_usage()
        self._failures = 0

    def extract(self, records: list[MemoryRecord]) -> list[ExtractedMemory]:
        if not records:
            return []
        messages, error = extract_prompt(records), ""
        for _ in range(self.max_attempts):
            found, messages, error = self._read(self._call(self.llm, messages).text, records, messages)
            if found is not None:
                return found
        return self._give_up(error)

    async def aextract(self, records: list[MemoryRecord]) -> list[ExtractedMemory]:
        if not records:
            return []
        messages, error = extract_prompt(records), ""
        for _ in range(self.max_attempts):
            found, messages, error = self._read((await self._acall(self.llm, messages)).text, records, messages)
            if found is not None:
                return found
        return self._give_up(error)

    def _read(self, answer: str, records: list[MemoryRecord], messages: list[dict[str, str]]
              ) -> tuple[list[ExtractedMemory] | None, list[dict[str, str]], str]:
        """(memories, messages, "") for a valid answer; else (None, the retry conversation, error)."""
        try:
            return self._clean(parse_extraction(answer, _ids(records)), records), messages, ""
        except MemlabError as exc:
            error = str(exc)
            retry = messages + [{"role": "assistant", "content": answer},
                                {"role": "user", "content": _retry_note(error)}]
            return None, retry, error

    def _give_up(self, error: str) -> list[ExtractedMemory]:
        self._failures += 1
        if self.on_failure == "skip":
            return []
        raise MemlabError(f"LLMExtractor: no valid answer after {self.max_attempts} attempt(s); "
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
