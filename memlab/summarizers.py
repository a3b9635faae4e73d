"""Summarisers that fold old turns into the short-term memory's running summary."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from .base import Component, Param
from .llm.base import LLM, LLMProgram, LLMUsage, Op, UsesLLM, adrive, drive
from .llm.prompts import speaker_of, summarize_prompt
from .text import sentences, stem, terms, unique
from .records import MemoryRecord

#: One piece of a running summary: its text (a sentence, or the whole summary) and the
#: source ids of the dialogue turns that text draws on.
SummaryPiece = tuple[str, tuple[str, ...]]


class Summarizer(Component):
    """``summarize(turns, previous)`` returns the new running summary (replacing ``previous``).

    ``fold(turns, previous_pieces)`` does the same with attribution: the previous summary
    and the new one are lists of ``SummaryPiece`` (text, source ids), so that a summary
    names as its sources exactly the turns it still draws on. The default, for a summariser
    that rewrites freely (an LLM) and so cannot say what came from where, is one piece
    holding the whole new summary, attributed lexically: a folded turn (or a previous
    piece, with its sources) is credited when at least half of its distinct stemmed content
    terms occur in the new summary (``attributed``). Crediting every turn shown would make
    any summarising strategy's context recall 1.0 by construction; crediting none would
    hide what the summary kept. An empty summary is no piece and has no sources.
    """

    def summarize(self, records: list[MemoryRecord], previous: str = "") -> str:
        raise NotImplementedError

    async def asummarize(self, records: list[MemoryRecord], previous: str = "") -> str:
        return self.summarize(records, previous)

    # summarize_with_sources and fold written once, as programs driven sync or async
    def _with_sources(self, records: list[MemoryRecord], previous: str):
        text = (yield Op(self.summarize, self.asummarize, records, previous)).strip()
        return text, pieces_sources(attributed(text, records))

    def summarize_with_sources(self, records: list[MemoryRecord],
                               previous: str = "") -> tuple[str, list[str]]:
        """The summary and the source ids of the turns it draws on (lexical attribution;
        none when the summary is empty)."""
        return drive(self._with_sources(records, previous))

    async def asummarize_with_sources(self, records: list[MemoryRecord],
                                      previous: str = "") -> tuple[str, list[str]]:
        return await adrive(self._with_sources(records, previous))

    def _fold(self, records: list[MemoryRecord], previous: Sequence[SummaryPiece]):
        text = yield Op(self.summarize, self.asummarize, records, pieces_text(previous))
        return attributed(text, records, previous)

    def fold(self, records: list[MemoryRecord],
             previous: Sequence[SummaryPiece] = ()) -> list[SummaryPiece]:
        """The new summary as pieces (see the class docstring)."""
        return drive(self._fold(records, previous))

    async def afold(self, records: list[MemoryRecord],
                    previous: Sequence[SummaryPiece] = ()) -> list[SummaryPiece]:
        return await adrive(self._fold(records, previous))

    @property
    def usage(self) -> LLMUsage:
        return LLMUsage()

    def reset_usage(self) -> None:
        pass


_FIRST_PERSON = re.compile(r"\b(?:i|i'm|i've|i'd|i'll|my|me|mine|we|our|us)\b|我", re.I)
_CUE = re.compile(
    r"\b(?:will|going to|need to|have to|must|agreed?|decided?|plan(?:ned|s)?|deadline|tomorrow|"
    r"next week|todo|to-do|remind|promise[ds]?|live[sd]?|work(?:s|ed)?|like[sd]?|love[sd]?|"
    r"prefer(?:s|red)?|name|born|moved|bought|started|favou?rite)\b|约定|决定|需要|计划|明天|提醒|喜欢|住在|工作",
    re.I)
_SPEAKER = re.compile(r"^([^:\n]{1,40}): ")


def sentence_score(sentence: str) -> int:
    """Extractive score: 2 for a number, 2 for a first-person statement, 1 for a fact,
    decision or to-do cue word; 0 (dropped) for anything with fewer than 2 content terms."""
    body = _SPEAKER.sub("", sentence, count=1)
    if len(terms(body)) < 2:
        return 0
    return (2 * bool(re.search(r"\d", body)) + 2 * bool(_FIRST_PERSON.search(body))
            + bool(_CUE.search(body)))


class ExtractiveSummarizer(Summarizer):
    """Offline and deterministic: keep the most informative sentences, verbatim.

    Candidates are the previous summary's sentences and every sentence of the folded
    turns (written ``speaker: sentence``, the sentence cut to ``max_sentence_chars``
    after scoring). Each gets ``sentence_score``; those scoring above 0 compete for ``max_sentences`` places
    (higher score first, earlier first on ties) and are output in their original order,
    so the summary never grows beyond ``max_sentences`` sentences.

    Attribution is exact: each kept sentence is one piece whose sources are the turn it
    was taken from, and a sentence carried over from the previous summary keeps the
    sources it had (``fold``; a previous summary given as a plain string, as in
    ``summarize_with_sources``, has none). In ``fold`` the previous pieces are candidates
    as they are, never re-split.
    """

    constraints = {"max_sentences": Param(int, ge=1), "max_sentence_chars": Param(int, ge=1)}

    def __init__(self, max_sentences: int = 6, max_sentence_chars: int = 200):
        self.max_sentences = max_sentences
        self.max_sentence_chars = max_sentence_chars

    def summarize(self, records: list[MemoryRecord], previous: str = "") -> str:
        return self.summarize_with_sources(records, previous)[0]

    def summarize_with_sources(self, records: list[MemoryRecord],
                               previous: str = "") -> tuple[str, list[str]]:
        """The summary and the source ids of exactly the turns whose sentences it kept."""
        pieces = self.fold(records, [(s, ()) for s in sentences(previous)])
        return pieces_text(pieces), pieces_sources(pieces)

    async def asummarize_with_sources(self, records: list[MemoryRecord],
                                      previous: str = "") -> tuple[str, list[str]]:
        return self.summarize_with_sources(records, previous)

    def fold(self, records: list[MemoryRecord],
             previous: Sequence[SummaryPiece] = ()) -> list[SummaryPiece]:
        """The kept sentences, one piece each, with the sources they came from."""
        # (shown text, sources, score); a turn's sentence is scored whole, before the cut
        candidates: list[tuple[str, tuple[str, ...], int]] = [
            (text, tuple(ids), sentence_score(text)) for text, ids in previous]
        for record in records:
            ids = tuple(record.source_ids)
            for s in sentences(record.content):
                candidates.append((f"{speaker_of(record)}: {self._cut(s)}", ids,
                                   sentence_score(f"{speaker_of(record)}: {s}")))
        kept = sorted((i for i, c in enumerate(candidates) if c[2] > 0),
                      key=lambda i: (-candidates[i][2], i))[:self.max_sentences]
        return [(candidates[i][0], candidates[i][1]) for i in sorted(kept)]

    async def afold(self, records: list[MemoryRecord],
                    previous: Sequence[SummaryPiece] = ()) -> list[SummaryPiece]:
        return self.fold(records, previous)

    def _cut(self, s: str) -> str:
        return s if len(s) <= self.max_sentence_chars else s[:self.max_sentence_chars].rstrip() + "..."


class LLMSummarizer(UsesLLM, Summarizer):
    """Ask ``llm`` to fold turns into the summary, keeping stated facts, agreements/decisions
    and to-dos (see ``memlab.llm.prompts.summarize_prompt``); answers are capped at
    ``max_tokens`` and the prompt asks for at most ``0.75 * max_tokens`` words.

    The model rewrites freely, so which turns the summary still draws on is estimated
    lexically (``attributed``, see ``Summarizer``).
    """

    constraints = {"max_tokens": Param(int, ge=8)}

    def __init__(self, llm: LLM, max_tokens: int = 200):
        self.llm = llm
        self.max_tokens = max_tokens
        self._on_params_changed()

    def _prompt(self, records: list[MemoryRecord], previous: str) -> list[dict[str, str]]:
        return summarize_prompt(records, previous, max(1, int(self.max_tokens * 0.75)))

    def _summarize(self, records: list[MemoryRecord], previous: str) -> LLMProgram:
        return (yield self._prompt(records, previous), {"max_tokens": self.max_tokens}).strip()

    def summarize(self, records: list[MemoryRecord], previous: str = "") -> str:
        return self.run_program(self._summarize(records, previous))

    async def asummarize(self, records: list[MemoryRecord], previous: str = "") -> str:
        return await self.arun_program(self._summarize(records, previous))


def pieces_text(pieces: Sequence[SummaryPiece]) -> str:
    """The summary text: the pieces' texts joined by single spaces."""
    return " ".join(text for text, _ in pieces if text)


def pieces_sources(pieces: Sequence[SummaryPiece]) -> list[str]:
    """The source ids of all pieces, first occurrence first."""
    return list(dict.fromkeys(s for _, ids in pieces for s in ids))


def attributed(text: str, records: list[MemoryRecord], previous: Sequence[SummaryPiece] = (),
               min_share: float = 0.5) -> list[SummaryPiece]:
    """``text`` as one piece crediting the turns (and previous pieces) it lexically keeps.

    A source text with ``n`` distinct stemmed content terms is kept when at least
    ``max(1, ceil(min_share * n))`` of them occur in ``text``; a source with no content
    terms ("ok") is never credited.
    """
    text = text.strip()
    if not text:
        return []
    have = {stem(t) for t in terms(text)}

    def kept(source: str) -> bool:
        wanted = unique([stem(t) for t in terms(source)])
        found = sum(1 for t in wanted if t in have)
        return bool(wanted) and found >= max(1, math.ceil(min_share * len(wanted)))

    ids = [s for piece, piece_ids in previous if kept(piece) for s in piece_ids]
    ids += [s for r in records if kept(r.content) for s in r.source_ids]
    return [(text, tuple(dict.fromkeys(ids)))]
