"""Tokenizers for lexical retrieval: word tokens, Chinese segmentation, stop words, stemming.

The default ``Tokenizer()`` yields lower-cased ``\\w+`` tokens, which is the LoCoMo BM25
baseline (recall@5 45.8); keep it for parity. Runs of Chinese ideographs inside a token
are segmented (whitespace splitting is useless for Chinese): character bigrams by default,
single characters, both, or jieba words. English words are stemmed by the Snowball
implementations of Porter's algorithms (``snowballstemmer``), never a hand-written one.
A text mixing scripts gets both treatments: Latin words are stemmed, ideograph runs
segmented, so one tokenizer serves English, Chinese and code-switched dialogues.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from ..base import Component, ConfigError, Param
from ..text import ENGLISH_STOPWORDS, HAN, HAN_SUPPLEMENTARY, snowball_stemmer

_WORD = re.compile(r"\w+", re.UNICODE)
_HAN = HAN + HAN_SUPPLEMENTARY
_HAN_RUN = re.compile(f"[{_HAN}]+")
_HAN_ANY = re.compile(f"[{_HAN}]")
_ASCII_WORD = re.compile(r"[a-z]+")

CHINESE_MODES = ("bigram", "char", "char+bigram", "jieba")
STEMMERS = ("porter", "english")



class Tokenizer(Component):
    """Text to a list of tokens.

    Steps, in order: lower-case (if ``lowercase``); split into ``\\w+`` tokens; split each
    token into runs of Chinese ideographs and other characters, segmenting the ideograph
    runs with ``chinese`` ("bigram": overlapping character pairs, a lone character stays
    itself; "char": one token per character; "char+bigram": every character, then every
    pair; "jieba": jieba's precise mode); drop ``stopwords`` (None, "english" for
    ``ENGLISH_STOPWORDS``, or your own list, compared after lower-casing); stem with
    ``stemmer`` (None, "porter": Porter 1980, or "english": Porter2, both by
    ``snowballstemmer``; applied to ASCII letter tokens of three letters or more).
    """

    constraints = {
        "chinese": Param(choices=CHINESE_MODES),
        "stemmer": Param(choices=STEMMERS, none=True),
        "stopwords": Param(none=True, expected="None, 'english' or a list of words",
                           test=lambda v: v == "english" or isinstance(v, (list, tuple, set, frozenset))),
    }

    def __init__(self, lowercase: bool = True, stopwords: str | list[str] | None = None,
                 stemmer: str | None = None, chinese: str = "bigram"):
        self.lowercase = lowercase
        self.stopwords = stopwords
        self.stemmer = stemmer
        self.chinese = chinese
        self._on_params_changed()

    def _on_params_changed(self) -> None:
        if self.stopwords is None:
            self._stop: frozenset[str] = frozenset()
        elif self.stopwords == "english":
            self._stop = ENGLISH_STOPWORDS
        else:
            self._stop = frozenset(str(w).lower() for w in self.stopwords)
        self._stem_cache: dict[str, str] = {}

    def __call__(self, text: str) -> list[str]:
        if self.lowercase:
            text = text.lower()
        tokens = _WORD.findall(text)
        if _HAN_ANY.search(text):
            tokens = [piece for token in tokens for piece in self._split_han(token)]
        if self._stop:
            stop = self._stop
            tokens = [t for t in tokens if t.lower() not in stop]
        if self.stemmer is not None:
            tokens = [self._stem(t) for t in tokens]
        return tokens

    def _split_han(self, token: str) -> list[str]:
        if not _HAN_ANY.search(token):
            return [token]
        pieces: list[str] = []
        pos = 0
        for run in _HAN_RUN.finditer(token):
            if run.start() > pos:
                pieces.append(token[pos:run.start()])
            pieces.extend(segment_chinese(run.group(), self.chinese))
            pos = run.end()
        if pos < len(token):
            pieces.append(token[pos:])
        return pieces

    def _stem(self, token: str) -> str:
        stem = self._stem_cache.get(token)
        if stem is None:
            stem = snowball_stem(token, self.stemmer) if _ASCII_WORD.fullmatch(token) else token
            if len(self._stem_cache) < 200_000:  # bounded: a long replay has an open vocabulary
                self._stem_cache[token] = stem
        return stem


def segment_chinese(run: str, mode: str = "bigram") -> list[str]:
    """Segment a run of Chinese ideographs: "bigram", "char", "char+bigram" or "jieba"."""
    if mode == "char" or len(run) == 1:
        return list(run)
    if mode == "bigram":
        return [run[i:i + 2] for i in range(len(run) - 1)]
    if mode == "char+bigram":
        return list(run) + [run[i:i + 2] for i in range(len(run) - 1)]
    if mode == "jieba":
        return [w for w in _jieba().lcut(run) if w.strip()]
    raise ConfigError(f"chinese must be one of {', '.join(CHINESE_MODES)}, got {mode!r}")


_JIEBA: Any = None


def _jieba() -> Any:
    """jieba's default tokenizer, initialised once, quietly (its dictionary is packaged, no download)."""
    global _JIEBA
    if _JIEBA is None:
        import jieba

        jieba.setLogLevel(logging.WARNING)
        jieba.initialize()
        _JIEBA = jieba.dt
    return _JIEBA


def snowball_stem(word: str, algorithm: str = "porter") -> str:
    """``word`` stemmed by ``algorithm``: "porter" (Porter 1980) or "english" (Porter2)."""
    if algorithm not in STEMMERS:
        raise ConfigError(f"stemmer must be None or one of {', '.join(STEMMERS)}, got {algorithm!r}")
    return word if len(word) <= 2 else snowball_stemmer(algorithm).stemWord(word)
