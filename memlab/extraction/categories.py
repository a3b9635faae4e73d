"""Subjects shared by the English and Chinese rules: objects whose preference is exclusive."""

from __future__ import annotations

import re
from typing import Callable

#: Objects whose preference is exclusive (a newer one replaces the older): word -> subject.
CATEGORY_KEYWORDS: dict[str, str] = {
    **{w: "beverage_preference" for w in (
        "coffee tea latte espresso cappuccino mocha americano juice beer wine milk soda cola "
        "smoothie matcha cocoa 咖啡 茶 奶茶 绿茶 红茶 果汁 啤酒 红酒 葡萄酒 牛奶 可乐 拿铁").split()},
    **{w: "diet" for w in "vegetarian vegan pescatarian 素食者 素食主义者 素食".split()},
    **{w: "occupation" for w in (
        "teacher engineer doctor nurse student developer programmer designer lawyer writer "
        "artist counselor manager scientist chef accountant researcher photographer musician "
        "老师 教师 工程师 医生 护士 学生 程序员 设计师 律师 作家 厨师 会计 经理").split()},
}


def category(obj: str, default: str) -> str:
    """The subject ``CATEGORY_KEYWORDS`` gives ``obj`` (its last listed word; Chinese: the
    longest listed suffix), else ``default``."""
    words = obj.lower().split() if not re.search(r"[\u4e00-\u9fff]", obj) else [obj]
    for w in reversed(words):
        if w in CATEGORY_KEYWORDS:
            return CATEGORY_KEYWORDS[w]
    for key in sorted(CATEGORY_KEYWORDS, key=lambda k: (-len(k), k)):  # Chinese: longest match
        if re.search(r"[\u4e00-\u9fff]", key) and obj.endswith(key):
            return CATEGORY_KEYWORDS[key]
    return default


# A rule: (pattern, builder(match, who, obj) -> (memory_type, subject, content) or None)
Rule = tuple[re.Pattern[str], Callable[[re.Match[str], str, str], "tuple[str, str, str] | None"]]
#: (memory_type, subject, content)
Statement = tuple[str, str, str]
