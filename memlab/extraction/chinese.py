"""Chinese first-person statements (我叫, 我住在, 我喜欢, 我的X是Y)."""

from __future__ import annotations

import re

from .categories import Rule, Statement
from .categories import category as _category

_ZH_END = re.compile(r"[，。！？；、,.!?;:：\s\"“”（）()]")


def _chinese_object(text: str) -> str:
    obj = _ZH_END.split(text, 1)[0]
    return re.sub(r"[了啦呢哦吧啊]+$", "", obj)


_ZH_RULES: list[Rule] = [
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


def chinese_statements(sentence: str, who: str) -> list[Statement]:
    """(memory_type, subject, content) for each Chinese statement in ``sentence``."""
    out: list[Statement] = []
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
