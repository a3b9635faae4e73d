"""Text helpers at the bottom of memlab, shared by every layer: character classes, stop
words, Porter stemming, and the small deterministic rules (sentences, content terms,
overlap, merging, cutting, recurring terms) the offline stand-ins and the layered memory use.

Chinese and Japanese are written without spaces, so each tokenizer splits these scripts
itself (characters, bigrams or jieba words) instead of relying on whitespace.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

#: Han ideographs: CJK unified (and extension A) and compatibility ideographs.
HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
#: Han ideographs outside the basic plane (extensions B to F).
HAN_SUPPLEMENTARY = "\U00020000-\U0002ebef"
#: Hiragana and katakana.
KANA = "\u3040-\u30ff"


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


_STEMMERS: dict[str, Any] = {}


def snowball_stemmer(algorithm: str) -> Any:
    """A snowballstemmer stemmer, built once per algorithm ("porter" or "english")."""
    stemmer = _STEMMERS.get(algorithm)
    if stemmer is None:
        import snowballstemmer

        stemmer = _STEMMERS[algorithm] = snowballstemmer.stemmer(algorithm)
    return stemmer


def porter_stem(word: str) -> str:
    """The Porter (1980) stem of a lower-case word, by snowballstemmer's "porter" algorithm.

    Words of one or two letters are left alone, as in Porter's reference implementation
    (Snowball's version would turn "is" into "i").
    """
    return word if len(word) <= 2 else snowball_stemmer("porter").stemWord(word)


_CJK_CHAR = HAN
_CJK = re.compile(f"[{_CJK_CHAR}]")
_WORD = re.compile(r"\w+", re.UNICODE)
_SENTENCE_END = re.compile(r"(?<=[.!?。！？；;])\s*|\n+")

#: Function words ``terms`` ignores when the offline stand-ins and the layered memory compare
#: texts (English, chat fillers and common Chinese particles). The BM25 tokenizer's list is
#: ``ENGLISH_STOPWORDS`` above; the two differ on purpose (results depend on each as it is).
STOPWORDS = frozenset("""
a an the and or but if then than so of to in on at by for with from about as into over after
before is are was were be been being am do does did doing have has had having i me my mine we
us our you your yours he him his she her they them their it its this that these those there
here what which who whom whose when where why how can could would should will shall may might
must not no yes just very really too also any some all each every more most much many such
only own same other again further once up down out off s t don doesn didn isn wasn aren
remember recall tell know think please hey hi hello ok okay oh well yeah thanks thank let now
的 了 吗 呢 吧 啊 是 我 你 他 她 它 们 在 和 就 都 也 很 还 又 这 那 个 一 有 没 不 什么 怎么
""".split())


def sentences(text: str) -> list[str]:
    """Split on sentence punctuation (Latin and CJK) and newlines; empty pieces dropped."""
    return [s.strip() for s in _SENTENCE_END.split(text or "") if s and s.strip()]


def terms(text: str) -> list[str]:
    """Lower-cased content terms in order: words minus stopwords; CJK runs as character bigrams."""
    out: list[str] = []
    for word in _WORD.findall((text or "").lower()):
        if _CJK.search(word):
            for run in re.findall(f"[{_CJK_CHAR}]+", word):
                chars = [c for c in run]
                grams = [a + b for a, b in zip(chars, chars[1:])] or chars
                out.extend(g for g in grams if g not in STOPWORDS)
            out.extend(w for w in re.split(f"[{_CJK_CHAR}]+", word) if w and w not in STOPWORDS)
        elif word not in STOPWORDS:
            out.append(word)
    return out


def unique(items: list[str]) -> list[str]:
    """Items without repeats, first occurrence kept."""
    return list(dict.fromkeys(items))


@lru_cache(maxsize=1 << 16)  # pure, and the same words come back turn after turn
def stem(word: str) -> str:
    """Porter stem of an ASCII word (memlab's tokenizer's); other words unchanged."""
    return porter_stem(word) if word.isascii() and word.isalpha() else word


def overlap(query: str, text: str) -> int:
    """Number of distinct stemmed content terms of ``query`` that occur in ``text``."""
    have = {stem(t) for t in terms(text)}
    return sum(1 for t in unique([stem(t) for t in terms(query)]) if t in have)


# -- rules shared by the lifecycle parts and the offline stand-in (memlab.memories.layered) ----
_HAN_CHAR = re.compile(f"[{_CJK_CHAR}]")
_ENDS = (".", "!", "?", "。", "！", "？")


def merge_sentences(texts: list[str]) -> str:
    """The texts' sentences, in order, without repeats: a sentence is dropped when its stemmed
    content terms are a subset of another sentence's (a proper subset, or an equal set of an
    earlier sentence). Each kept sentence ends with punctuation; "" when there is none."""
    parts = [s for t in texts for s in sentences(t)]
    keys = [frozenset(stem(w) for w in terms(s)) for s in parts]
    kept = []
    for i, (s, k) in enumerate(zip(parts, keys)):
        if not any((k < other) or (k == other and j < i) for j, other in enumerate(keys) if j != i):
            kept.append(s if s.endswith(_ENDS) else s + ".")
    return " ".join(kept)


def cut_words(text: str, max_words: int) -> str:
    """At most ``max_words`` words, "…" marking a cut; mostly-Chinese text (no spaces) is cut
    at ``2 * max_words`` characters."""
    if len(_HAN_CHAR.findall(text)) > len(text) / 2:
        limit = 2 * max_words
        return text if len(text) <= limit else text[:limit] + "…"
    words = text.split()
    return text if len(words) <= max_words else " ".join(words[:max_words]) + "…"


def first_sentence(text: str, max_words: int) -> str:
    """The first sentence of ``text`` (the whole text when it has none), cut to ``max_words``."""
    return cut_words((sentences(text) or [text.strip()])[0], max_words)


def recurring_terms(texts: list[str], min_support: int, max_share: float = 0.5,
                    max_patterns: int = 3) -> list[tuple[str, str, list[int]]]:
    """Lexical recurrence: (stemmed term, its most frequent surface form, indices of the texts).

    A content term (``terms``; numbers and Latin words under 3 letters left out) counts when
    it occurs in at least ``min_support`` texts and at most ``max_share * len(texts)``; terms
    are taken by support (most first, ties by term), skipping one whose texts are a subset
    of a term already taken, at most ``max_patterns``.
    """
    where: dict[str, list[int]] = {}
    surface: dict[str, dict[str, int]] = {}
    for i, text in enumerate(texts):
        for word in dict.fromkeys(terms(text)):
            if word.isdigit() or (word.isascii() and len(word) < 3):
                continue
            key = stem(word)
            if i not in where.setdefault(key, []):
                where[key].append(i)
            forms = surface.setdefault(key, {})
            forms[word] = forms.get(word, 0) + 1
    limit = max_share * len(texts)
    found = sorted(((k, ix) for k, ix in where.items() if min_support <= len(ix) <= limit),
                   key=lambda x: (-len(x[1]), x[0]))
    out: list[tuple[str, str, list[int]]] = []
    for key, ix in found:
        if any(set(ix) <= set(taken) for _, _, taken in out):
            continue
        word = sorted(surface[key].items(), key=lambda x: (-x[1], x[0]))[0][0]
        out.append((key, word, ix))
        if len(out) == max_patterns:
            break
    return out


def recurring_topic(word: str, n: int, first_day: str, last_day: str) -> str:
    """How a lexical pattern is written: ``Recurring topic '<word>': <n> memories from <first> to <last>.``"""
    return f"Recurring topic '{word}': {n} memories from {first_day} to {last_day}."


def json_problem(exc: Any) -> str:
    """A ``json.JSONDecodeError``'s message without the trailing " at" some of them end with
    ("Invalid control character at"), so that a caller's own " at <where>" reads once."""
    msg = str(getattr(exc, "msg", exc))
    return msg[:-3] if msg.endswith(" at") else msg
