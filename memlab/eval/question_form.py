"""The form of a probe's question (``question_type``), to group misses by it. The module is named
apart from its function: a submodule ``question_type`` would shadow it on ``memlab.eval``.

``question_type(query)`` is the question's form: the first of its words that is one of
what / when / where / who / which / why / how (``whom`` and ``whose`` count as who), else
``yes/no`` when it opens with an auxiliary verb (is, did, would, ...), else ``other``.
A question with Chinese characters is read by the first of these markers it contains:
为什么 why; 什么时候, 何时, 哪年, 哪天 when; 哪里, 哪儿 where; 谁 who; 哪 which;
怎么, 如何, 多少, 几 how; 什么 what; 吗 yes/no; else ``other``.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["question_type"]

_WH = {"what": "what", "when": "when", "where": "where", "who": "who", "whom": "who", "whose": "who",
       "which": "which", "why": "why", "how": "how"}
_AUX = {"is", "are", "was", "were", "do", "does", "did", "can", "could", "would", "will", "has", "have",
        "had", "should", "shall", "may", "might", "am"}
_WORD = re.compile(r"[A-Za-z]+")
_CHINESE = (("为什么", "why"), ("什么时候", "when"), ("何时", "when"), ("哪年", "when"), ("哪天", "when"),
            ("哪里", "where"), ("哪儿", "where"), ("谁", "who"), ("哪", "which"), ("怎么", "how"), ("如何", "how"),
            ("多少", "how"), ("几", "how"), ("什么", "what"), ("吗", "yes/no"))
_HAN = re.compile(r"[\u4e00-\u9fff]")


def question_type(query: Any) -> str:
    """The question's form (module docstring): a wh-word, ``yes/no`` or ``other``."""
    text = str(query or "")
    if _HAN.search(text):
        return next((kind for marker, kind in _CHINESE if marker in text), "other")
    words = [w.lower() for w in _WORD.findall(text)]
    for w in words:
        if w in _WH:
            return _WH[w]
    return "yes/no" if words and words[0] in _AUX else "other"
