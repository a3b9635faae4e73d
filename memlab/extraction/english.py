"""English first-person statements ("my name is", "I live in", "I like", "my X is Y")."""

from __future__ import annotations

import re

from .categories import Rule, Statement
from .categories import category as _category

_FILLER_TAIL = re.compile(
    r"(?:\s+(?:now|these days|nowadays|a lot|very much|so much|too|anymore|lately|currently|"
    r"at the moment|instead))+$", re.I)
_CLAUSE_END = re.compile(r"[,.;!?:\"\u201c\u201d()]| but | because | since | although | though | so that | which |"
                         r" and (?=(?:i|i'm|i've|my|we|he|she|they)\b)", re.I)


def _english_object(text: str, max_words: int) -> str:
    obj = _CLAUSE_END.split(" " + text + " ", 1)[0].strip()
    obj = _FILLER_TAIL.sub("", obj).strip()
    words = obj.split()
    if not words or words[0].lower() in {"bit", "little", "lot", "very", "not"}:
        return ""
    if len(words) == 1 and words[0].lower() in {"it", "that", "this", "them", "you", "him", "her", "so"}:
        return ""  # a pronoun says nothing without the conversation around it
    return " ".join(words[:max_words])


def _norm(obj: str) -> str:
    return re.sub(r"^(?:to|a|an|the)\s+", "", obj.lower()).strip()


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


def english_statements(sentence: str, who: str, max_words: int) -> list[Statement]:
    """(memory_type, subject, content) for each English statement in ``sentence``; an
    object keeps at most ``max_words`` words; a rule never re-reads words a more specific
    (earlier) rule already matched."""
    out: list[Statement] = []
    taken: list[tuple[int, int]] = []
    for pattern, build in _EN_RULES:
        for m in pattern.finditer(sentence):
            if any(a <= m.start() < b for a, b in taken):
                continue  # the same words already matched a more specific rule
            obj = _english_object(m["rest"], max_words)
            item = build(m, who, obj) if obj else None
            if item:
                out.append(item)
                taken.append((m.start(), m.start("rest") + len(obj)))
    for m in _EN_MY.finditer(sentence):
        obj = _english_object(m["rest"], max_words)
        key = m["key"].lower()
        if obj and not any(a <= m.start() < b for a, b in taken):
            kind = "preference" if re.search(r"favou?rite", key) else "fact"
            out.append((kind, key, f"{who}'s {key} is {obj}"))
    return out
