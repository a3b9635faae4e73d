"""OfflineLLM: a deterministic stand-in for a chat model, for offline runs and tests.

It is not a language model. It recognises the task prompts memlab itself sends
(``memlab.llm.prompts``: the ``memlab-task:`` marker and ``## Section`` inputs) and
answers each with a fixed rule:

- ``summarize``: the ``ExtractiveSummarizer`` summary of the turns;
- ``extract``: ``RuleBasedExtractor`` memories as ``{"memories": [...]}`` JSON;
- ``rewrite``: the question's content terms (plus, when the question leans on a pronoun,
  the content terms of the last turn);
- ``expand``: up to ``n`` distinct lexical variants: content terms, their Porter stems,
  their inflections, terms and inflections together;
- ``hyde``: a passage made of the content terms and their inflections;
- ``filter``: ``{"relevant": [...]}`` listing memories sharing at least one stemmed
  content term with the question, most shared terms first (ties by position), at most ``Max``;
- ``merge``: the memories' sentences without repeats (``text.merge_sentences``);
- ``abstract``: the lexical patterns of ``text.recurring_terms`` (max_share 0.5) as
  ``{"patterns": [...]}``, each written by ``text.recurring_topic``;
- ``gist``: each memory's first sentence cut to ``Max words`` (``text.first_sentence``);
- anything else is answered as a question. The question is the last user message, or
  only the text after its last ``Question:`` when it has one (an instruction before it,
  as ``memlab.eval.answers.Answerer`` writes, is not part of the question). The answer
  is the sentence (bullets, ``[n]`` and ``[date]`` marks stripped) sharing most distinct
  stemmed content terms with the question, the earliest on ties, taken from every message
  but the last user message, skipping any message whose content equals the question
  and any sentence equal to or contained in the question (compared lower-cased, spaces
  collapsed); "I don't know." when no sentence shares a term.

Token counts come from ``token_counter`` (prompt: ``count_messages``; answer: ``count``)
so that offline runs report token costs the same way real ones do. ``params`` such as
``max_tokens`` are accepted and ignored.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..llm.base import LLM, Completion, Message
from ..llm.counting import TOKEN_COUNTER, resolve_counter
from ..llm.prompts import (
    ABSTRACT,
    EXPAND,
    EXTRACT,
    FILTER,
    GIST,
    HYDE,
    MERGE,
    REWRITE,
    SUMMARIZE,
    parse_dated,
    parse_numbered,
    parse_sections,
    parse_turns,
    task_of,
)
from ..text import (
    first_sentence,
    merge_sentences,
    overlap,
    recurring_terms,
    recurring_topic,
    sentences,
    stem,
    terms,
    unique,
)

_PRONOUN = re.compile(r"\b(?:it|that|this|there|they|them|he|she|him|her|those|these)\b|它|那|这|他|她", re.I)


def inflect(word: str) -> str:
    """A plural / third-person form of an English word ('live' -> 'lives')."""
    if not word.isascii() or not word.isalpha():
        return word
    if word.endswith(("s", "x", "sh", "ch")):
        return word + "es"
    return word + "s"


class OfflineLLM(LLM):
    """Deterministic rule-based answers to memlab's own prompts; see the module docstring."""

    constraints = {"token_counter": TOKEN_COUNTER}

    def __init__(self, token_counter: Any = None, model: str = "memlab-offline"):
        self.token_counter = token_counter
        self.model = model
        self._on_params_changed()

    def _on_params_changed(self) -> None:
        self._counter = resolve_counter(self.token_counter)

    def _complete(self, messages: list[Message], **params: Any) -> Completion:
        task = task_of(messages)
        user = next((str(m.get("content") or "") for m in reversed(messages) if m.get("role") == "user"), "")
        sections = parse_sections(user)
        handler = {SUMMARIZE: self._summarize, EXTRACT: self._extract, REWRITE: self._rewrite,
                   EXPAND: self._expand, HYDE: self._hyde, FILTER: self._filter,
                   MERGE: self._merge, ABSTRACT: self._abstract, GIST: self._gist}.get(task or "")
        text = handler(sections) if handler else self._answer(messages)
        return Completion(text=text, prompt_tokens=int(self._counter.count_messages(messages)),
                          completion_tokens=int(self._counter.count(text)), model=self.model)

    # -- task handlers ----------------------------------------------------------------
    @staticmethod
    def _records(sections: dict[str, str]) -> list:
        from ..records import MemoryRecord, Role

        roles = {r.value for r in Role}
        return [MemoryRecord(role=Role.parse(speaker if speaker in roles else "user"), content=text, id=tid,
                             name=None if speaker in roles else speaker)
                for tid, speaker, text in parse_turns(sections.get("Conversation", ""))]

    def _summarize(self, sections: dict[str, str]) -> str:
        from ..summarizers import ExtractiveSummarizer

        previous = sections.get("Previous summary", "")
        previous = "" if previous == "(none)" else previous
        return ExtractiveSummarizer().summarize(self._records(sections), previous)

    def _extract(self, sections: dict[str, str]) -> str:
        from ..extraction import RuleBasedExtractor

        found = RuleBasedExtractor(roles=("user", "assistant")).extract(self._records(sections))
        return json.dumps({"memories": [m.to_dict() for m in found]}, ensure_ascii=False)

    def _rewrite(self, sections: dict[str, str]) -> str:
        question = sections.get("Question", "")
        words = terms(question)
        turns = parse_turns(sections.get("Recent conversation", ""))
        if turns and _PRONOUN.search(question):
            words += terms(turns[-1][2])[:5]
        return " ".join(unique(words)) or question.strip()

    def _expand(self, sections: dict[str, str]) -> str:
        question = sections.get("Question", "")
        try:
            n = max(1, int(sections.get("Count", "3")))
        except ValueError:
            n = 3
        words = unique(terms(question))
        stems, forms = unique([stem(w) for w in words]), unique([inflect(w) for w in words])
        variants = [" ".join(words), " ".join(stems), " ".join(forms), " ".join(unique(words + forms))]
        out = [v for v in unique(variants) if v]
        return "\n".join(out[:n]) or question.strip()

    def _hyde(self, sections: dict[str, str]) -> str:
        words = unique(terms(sections.get("Question", "")))
        return " ".join(unique(words + [inflect(w) for w in words])) + "." if words else ""

    def _filter(self, sections: dict[str, str]) -> str:
        question = sections.get("Question", "")
        memories = parse_numbered(sections.get("Memories", ""))
        try:
            limit = int(sections.get("Max", str(len(memories))))
        except ValueError:
            limit = len(memories)
        scored = [(overlap(question, m), i) for i, m in enumerate(memories)]
        chosen = sorted((s for s in scored if s[0] > 0), key=lambda s: (-s[0], s[1]))[:limit]
        return json.dumps({"relevant": [i + 1 for _, i in chosen]})

    @staticmethod
    def _merge(sections: dict[str, str]) -> str:
        memories = parse_numbered(sections.get("Memories", ""))
        return merge_sentences(memories) or (memories[-1] if memories else "")

    @staticmethod
    def _abstract(sections: dict[str, str]) -> str:
        dated = parse_dated(sections.get("Memories", ""))
        try:
            support = int(sections.get("Minimum support", "3"))
        except ValueError:
            support = 3
        found = recurring_terms([text for _, text in dated], support)
        return json.dumps({"patterns": [
            {"abstraction": recurring_topic(word, len(ix), dated[ix[0]][0], dated[ix[-1]][0]),
             "evidence": [i + 1 for i in ix]} for _, word, ix in found]}, ensure_ascii=False)

    @staticmethod
    def _gist(sections: dict[str, str]) -> str:
        try:
            max_words = int(sections.get("Max words", "20"))
        except ValueError:
            max_words = 20
        return "\n".join(f"[{i}] {first_sentence(m, max_words)}"
                         for i, m in enumerate(parse_numbered(sections.get("Memories", "")), 1))

    def _answer(self, messages: list[Message]) -> str:
        last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
        if last_user < 0:
            return "I don't know."
        question = question_of(str(messages[last_user].get("content") or ""))
        asked = _flat(question)
        best, best_score = "", 0
        for i, m in enumerate(messages):
            if i == last_user:
                continue
            content = str(m.get("content") or "")
            if _flat(content) == asked:  # the question itself, loaded into the context
                continue
            for s in sentences(content):
                s = re.sub(r"^(?:[-*]\s*)?(?:\[[^\]]*\]\s*)?", "", s).strip()  # bullets, [n], [date]
                if not s or _flat(s) in asked:  # never echo (part of) the question
                    continue
                score = overlap(question, s)
                if score > best_score:  # strict: the earliest best sentence wins ties
                    best, best_score = s, score
        return best or "I don't know."


def question_of(text: str) -> str:
    """The question in a user message: the text after its last ``Question:``, else all of it."""
    _, marker, tail = text.rpartition("Question:")
    return tail.strip() if marker else text.strip()


def _flat(text: str) -> str:
    return " ".join(text.lower().split())
