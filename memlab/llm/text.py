"""Small deterministic text helpers shared by the offline LLM and the layered memory."""

from __future__ import annotations

import re

from ..text import HAN

_CJK_CHAR = HAN
_CJK = re.compile(f"[{_CJK_CHAR}]")
_WORD = re.compile(r"\w+", re.UNICODE)
_SENTENCE_END = re.compile(r"(?<=[.!?。！？；;])\s*|\n+")

#: Function words ignored when comparing texts (English and common Chinese particles).
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


def stem(word: str) -> str:
    """Porter stem of an ASCII word (memlab's tokenizer's); other words unchanged."""
    from ..retrieval.tokenize import porter_stem

    return porter_stem(word) if word.isascii() and word.isalpha() else word


def overlap(query: str, text: str) -> int:
    """Number of distinct stemmed content terms of ``query`` that occur in ``text``."""
    have = {stem(t) for t in terms(text)}
    return sum(1 for t in unique([stem(t) for t in terms(query)]) if t in have)
