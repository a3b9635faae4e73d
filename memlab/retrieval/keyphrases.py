"""Keyphrase-augmented keys, offline: names, numbers and rule-found nouns of a record are
added to the text it is indexed under (the record itself is returned unchanged).

``keyphrases(text)`` finds, by rule (no model):

- names: capitalised words that do not start a sentence (nor follow an opening quote),
  and runs of them ("New York", "Golden Gate Bridge") as one phrase;
- numbers: tokens holding a digit ("3", "2023", "5k", "10:30");
- nouns by suffix: lower-case words of six letters or more ending in -tion, -sion, -ment,
  -ness, -ity, -ship, -ism, -ist, -ence, -ance, -ery, -ogy.

Each phrase once, in order of first appearance.
"""

from __future__ import annotations

import re

from ..base import Param
from ..records import MemoryRecord
from .base import RekeyedRetriever, Retriever

_WORD = re.compile(r"[A-Za-z][A-Za-z'\-]*|\S*\d\S*")
#: a word after one of these (spaces between) starts a sentence, a line or a quote
_STARTERS = frozenset(".!?:;\"\u201c\u201d([\n")
_NOUN = re.compile(r"^[a-z]{2,}(tion|sion|ment|ness|ity|ship|ism|ist|ence|ance|ery|ogy)s?$")
_SKIP = frozenset({"I", "I'm", "I've", "I'll", "I'd", "OK", "Ok", "Oh", "Hey", "Hi", "Yes", "No", "Yeah", "Wow",
                   "Thanks", "Thank", "Sure", "Well", "So", "And", "But"})


def keyphrases(text: str) -> list[str]:
    """Names, numbers and suffix-nouns of ``text`` (see the module docstring)."""
    out: dict[str, None] = {}
    run: list[str] = []

    def close() -> None:
        if run:
            out[" ".join(run)] = None
            run.clear()

    for m in _WORD.finditer(text):
        word = m.group().strip(".,!?;:\"'()[]")
        if not word:
            close()
            continue
        j = m.start() - 1
        while j >= 0 and text[j] in " \t":
            j -= 1
        start = j < 0 or text[j] in _STARTERS
        gap = text[m.start() - 1] if m.start() else " "
        if run and gap not in " -":
            close()
        if any(c.isdigit() for c in word):
            close()
            out[word] = None
        elif word[0].isupper() and not start and word not in _SKIP:
            run.append(word)
        else:
            close()
            if _NOUN.match(word) and len(word) >= 6:
                out[word] = None
    close()
    return list(out)


class KeyphraseRetriever(RekeyedRetriever):
    """Indexes each record under its text plus its keyphrases ``weight`` times:

        index text = content + ("\\n" + " ".join(keyphrases(content))) * weight   (content alone when none)

    so with BM25 a name, number or suffix-noun counts ``1 + weight`` times. Search returns
    the records themselves. Cost: one regular-expression pass per record when it is added;
    nothing per query.
    """

    name = "keyphrases"

    constraints = {"retriever": Param(Retriever), "weight": Param(int, ge=0)}

    def __init__(self, retriever: Retriever, weight: int = 1):
        super().__init__()
        self.retriever = retriever
        self.weight = weight
        self._on_params_changed()

    def _on_params_changed(self) -> None:
        self._rekey()

    def index_text(self, content: str) -> str:
        """The text a record of ``content`` is indexed under."""
        phrases = " ".join(keyphrases(content))
        if not phrases or not self.weight:
            return content
        return content + "\n" + "\n".join([phrases] * self.weight)

    def key_text(self, record: MemoryRecord) -> str:
        return self.index_text(record.content)
