"""Tokenizers for lexical retrieval: word tokens, Chinese segmentation, stop words, stemming.

The default ``Tokenizer()`` yields lower-cased ``\\w+`` tokens, which is what the LoCoMo
BM25 baseline in the reference notes uses (recall@5 45.8); keep it for parity.
Runs of Chinese ideographs inside a token are segmented (whitespace splitting is useless
for Chinese): character bigrams by default, jieba words, or single characters.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from ..base import Component, ConfigError
from ..text import HAN, HAN_SUPPLEMENTARY

_WORD = re.compile(r"\w+", re.UNICODE)
_HAN = HAN + HAN_SUPPLEMENTARY
_HAN_RUN = re.compile(f"[{_HAN}]+")
_HAN_ANY = re.compile(f"[{_HAN}]")
_ASCII_WORD = re.compile(r"[a-z]+")

CHINESE_MODES = ("bigram", "jieba", "char")
STEMMERS = ("porter",)

#: A common English stop list (the NLTK list of 2019, 179 words).
ENGLISH_STOPWORDS = frozenset([
    "i", "me", "my", "myself", "we", "our", "ours", "ourselves", "you", "you're", "you've",
    "you'll", "you'd", "your", "yours", "yourself", "yourselves", "he", "him", "his",
    "himself", "she", "she's", "her", "hers", "herself", "it", "it's", "its", "itself",
    "they", "them", "their", "theirs", "themselves", "what", "which", "who", "whom", "this",
    "that", "that'll", "these", "those", "am", "is", "are", "was", "were", "be", "been",
    "being", "have", "has", "had", "having", "do", "does", "did", "doing", "a", "an", "the",
    "and", "but", "if", "or", "because", "as", "until", "while", "of", "at", "by", "for",
    "with", "about", "against", "between", "into", "through", "during", "before", "after",
    "above", "below", "to", "from", "up", "down", "in", "out", "on", "off", "over", "under",
    "again", "further", "then", "once", "here", "there", "when", "where", "why", "how",
    "all", "any", "both", "each", "few", "more", "most", "other", "some", "such", "no",
    "nor", "not", "only", "own", "same", "so", "than", "too", "very", "s", "t", "can",
    "will", "just", "don", "don't", "should", "should've", "now", "d", "ll", "m", "o", "re",
    "ve", "y", "ain", "aren", "aren't", "couldn", "couldn't", "didn", "didn't", "doesn",
    "doesn't", "hadn", "hadn't", "hasn", "hasn't", "haven", "haven't", "isn", "isn't", "ma",
    "mightn", "mightn't", "mustn", "mustn't", "needn", "needn't", "shan", "shan't",
    "shouldn", "shouldn't", "wasn", "wasn't", "weren", "weren't", "won", "won't", "wouldn",
    "wouldn't"
])


class Tokenizer(Component):
    """Text to a list of tokens.

    Steps, in order: lower-case (if ``lowercase``); split into ``\\w+`` tokens; split each
    token into runs of Chinese ideographs and other characters, segmenting the ideograph
    runs with ``chinese`` ("bigram": overlapping character pairs, a lone character stays
    itself; "jieba": jieba's precise mode; "char": one token per character); drop
    ``stopwords`` (None, "english" for ``ENGLISH_STOPWORDS``, or your own list, compared
    after lower-casing); stem with ``stemmer`` (None or "porter", applied to ASCII letter
    tokens only).
    """

    def __init__(self, lowercase: bool = True, stopwords: str | list[str] | None = None,
                 stemmer: str | None = None, chinese: str = "bigram"):
        self.lowercase = lowercase
        self.stopwords = stopwords
        self.stemmer = stemmer
        self.chinese = chinese
        self._on_params_changed()

    def _on_params_changed(self) -> None:
        if self.chinese not in CHINESE_MODES:
            raise ConfigError(f"chinese must be one of {', '.join(CHINESE_MODES)}, got {self.chinese!r}")
        if self.stemmer is not None and self.stemmer not in STEMMERS:
            raise ConfigError(f"stemmer must be None or one of {', '.join(STEMMERS)}, got {self.stemmer!r}")
        if self.stopwords is None:
            self._stop: frozenset[str] = frozenset()
        elif self.stopwords == "english":
            self._stop = ENGLISH_STOPWORDS
        elif isinstance(self.stopwords, (list, tuple, set, frozenset)):
            self._stop = frozenset(str(w).lower() for w in self.stopwords)
        else:
            raise ConfigError(f"stopwords must be None, 'english' or a list of words, got {self.stopwords!r}")
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
        if self.stemmer == "porter":
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
            stem = porter_stem(token) if _ASCII_WORD.fullmatch(token) else token
            if len(self._stem_cache) < 200_000:  # bounded: a long replay has an open vocabulary
                self._stem_cache[token] = stem
        return stem


def segment_chinese(run: str, mode: str = "bigram") -> list[str]:
    """Segment a run of Chinese ideographs: "bigram", "jieba" or "char"."""
    if mode == "char" or len(run) == 1:
        return list(run)
    if mode == "bigram":
        return [run[i:i + 2] for i in range(len(run) - 1)]
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


# ----------------------------------------------------------------------------------------
# Porter stemmer: the original algorithm of M. F. Porter, "An algorithm for suffix
# stripping", Program 14(3), 1980, including its step-2 rule ABLI -> ABLE. Words of one
# or two letters are left alone, as in Porter's reference implementation.

_VOWELS = frozenset("aeiou")


def _is_consonant(word: str, i: int) -> bool:
    ch = word[i]
    if ch in _VOWELS:
        return False
    if ch == "y":
        return i == 0 or not _is_consonant(word, i - 1)
    return True


def _measure(stem: str) -> int:
    """m in [C](VC)^m[V]: the number of vowel-consonant sequences."""
    m = 0
    prev_vowel = False
    for i in range(len(stem)):
        cons = _is_consonant(stem, i)
        if cons and prev_vowel:
            m += 1
        prev_vowel = not cons
    return m


def _has_vowel(stem: str) -> bool:
    return any(not _is_consonant(stem, i) for i in range(len(stem)))


def _double_consonant(word: str) -> bool:
    return len(word) >= 2 and word[-1] == word[-2] and _is_consonant(word, len(word) - 1)


def _cvc(word: str) -> bool:
    """*o: ends consonant-vowel-consonant, the last not w, x or y."""
    if len(word) < 3:
        return False
    n = len(word)
    return (_is_consonant(word, n - 3) and not _is_consonant(word, n - 2)
            and _is_consonant(word, n - 1) and word[-1] not in "wxy")


def _replace_longest(word: str, rules: tuple[tuple[str, str], ...], min_m: int) -> str:
    """Apply the rule with the longest matching suffix if the stem's measure exceeds min_m - 1."""
    for suffix, repl in rules:  # rules are listed longest suffix first within each ending
        if word.endswith(suffix):
            stem = word[:-len(suffix)]
            return stem + repl if _measure(stem) >= min_m else word
    return word


_STEP2 = tuple(sorted((
    ("ational", "ate"), ("tional", "tion"), ("enci", "ence"), ("anci", "ance"),
    ("izer", "ize"), ("abli", "able"), ("alli", "al"), ("entli", "ent"), ("eli", "e"),
    ("ousli", "ous"), ("ization", "ize"), ("ation", "ate"), ("ator", "ate"),
    ("alism", "al"), ("iveness", "ive"), ("fulness", "ful"), ("ousness", "ous"),
    ("aliti", "al"), ("iviti", "ive"), ("biliti", "ble"),
), key=lambda r: -len(r[0])))
_STEP3 = tuple(sorted((
    ("icate", "ic"), ("ative", ""), ("alize", "al"), ("iciti", "ic"), ("ical", "ic"),
    ("ful", ""), ("ness", ""),
), key=lambda r: -len(r[0])))
_STEP4 = tuple(sorted((
    "al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment", "ent",
    "ion", "ou", "ism", "ate", "iti", "ous", "ive", "ize",
), key=lambda s: -len(s)))


def porter_stem(word: str) -> str:
    """The Porter (1980) stem of a lower-case word."""
    if len(word) <= 2:
        return word
    # step 1a
    if word.endswith(("sses", "ies")):
        word = word[:-2]
    elif word.endswith("ss"):
        pass
    elif word.endswith("s"):
        word = word[:-1]
    # step 1b
    extra = False
    if word.endswith("eed"):
        if _measure(word[:-3]) > 0:
            word = word[:-1]
    elif word.endswith("ed") and _has_vowel(word[:-2]):
        word, extra = word[:-2], True
    elif word.endswith("ing") and _has_vowel(word[:-3]):
        word, extra = word[:-3], True
    if extra:
        if word.endswith(("at", "bl", "iz")):
            word += "e"
        elif _double_consonant(word) and word[-1] not in "lsz":
            word = word[:-1]
        elif _measure(word) == 1 and _cvc(word):
            word += "e"
    # step 1c
    if word.endswith("y") and _has_vowel(word[:-1]):
        word = word[:-1] + "i"
    # steps 2 and 3
    word = _replace_longest(word, _STEP2, 1)
    word = _replace_longest(word, _STEP3, 1)
    # step 4
    for suffix in _STEP4:
        if word.endswith(suffix):
            stem = word[:-len(suffix)]
            if _measure(stem) > 1 and (suffix != "ion" or stem.endswith(("s", "t"))):
                word = stem
            break
    # step 5a
    if word.endswith("e"):
        stem = word[:-1]
        m = _measure(stem)
        if m > 1 or (m == 1 and not _cvc(stem)):
            word = stem
    # step 5b
    if _measure(word) > 1 and _double_consonant(word) and word.endswith("l"):
        word = word[:-1]
    return word
