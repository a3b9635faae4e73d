"""Time-aware query expansion: dates and relative times in a question, resolved against the
time it is asked, boost the records dated inside the resolved range.

``time_ranges(query, now)`` reads a question's time expressions (rules, no model) and
returns half-open UTC ranges ``[start, end)`` in epoch seconds; ``TimeBoostRetriever`` wraps
a retriever and lifts the candidates whose timestamp (a turn's session date) falls in one.

Expressions read (case-insensitive unless said; "now" is the search's ``now``, else the
newest record's timestamp; day/week/month/year are UTC calendar units, weeks from Monday):

=======================================  ===============================================
``today``, ``tonight``                   the day of now
``yesterday``                            the day before
``the day before yesterday``             two days before
``last|past|previous week|month|year``   the calendar unit before the current one
``this week|month|year``                 the current calendar unit up to now
``past|last N days|weeks|months|years``  [now - N units, now] (N a digit, a number word,
                                         ``few`` = 3, ``couple of`` = 2)
``past few days|weeks|months``           idem, N = 3
``N days|weeks|months|years ago``        the day N units before now, +- half a unit
``last weekend``                         the last Saturday and Sunday before today
``last <weekday>``                       the last such day before today
``<Month> [day] [year]``, ``[day] <Month> [year]``   that day or month; without a year
                                         the latest one not after now ("may" only
                                         capitalised or next to a day or year)
``in|during <year>``                     that year
``YYYY-MM-DD``, ``YYYY/MM/DD``           that day
=======================================  ===============================================
"""

from __future__ import annotations

import calendar
import datetime as _dt
import re

from ..base import Param
from ..filters import Where
from ..records import Hit
from .base import Retriever, WrapperRetriever

DAY = 86400.0
_UNITS = {"day": 1, "week": 7, "month": 30.4375, "year": 365.25}
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
            "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "few": 3, "couple of": 2,
            "a couple of": 2, "a few": 3, "several": 3}
_MONTHS = {m.lower(): i for i, m in enumerate(calendar.month_name) if m}
_WEEKDAYS = {d.lower(): i for i, d in enumerate(calendar.day_name)}

_NUM = r"(\d+|a couple of|couple of|a few|few|several|an|a|one|two|three|four|five|six|seven|eight|nine|ten|" \
       r"eleven|twelve)"
_UNIT = r"(day|week|month|year)s?"
_MONTH_RE = "|".join(sorted(_MONTHS, key=len, reverse=True))
_PATTERNS = [
    ("before_yesterday", re.compile(r"\bthe day before yesterday\b", re.I)),
    ("yesterday", re.compile(r"\byesterday\b", re.I)),
    ("today", re.compile(r"\b(today|tonight)\b", re.I)),
    ("span", re.compile(rf"\b(?:past|last|previous)\s+{_NUM}\s+{_UNIT}\b", re.I)),
    ("ago", re.compile(rf"\b{_NUM}\s+{_UNIT}\s+ago\b", re.I)),
    ("last_unit", re.compile(r"\b(?:last|past|previous)\s+(week|month|year)\b", re.I)),
    ("this_unit", re.compile(r"\bthis\s+(week|month|year)\b", re.I)),
    ("weekend", re.compile(r"\blast\s+weekend\b", re.I)),
    ("weekday", re.compile(r"\blast\s+(" + "|".join(_WEEKDAYS) + r")\b", re.I)),
    ("iso", re.compile(r"\b((?:19|20)\d\d)[-/](\d{1,2})[-/](\d{1,2})\b")),
    ("month_day", re.compile(rf"\b({_MONTH_RE})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?\b(?:,?\s+((?:19|20)\d\d))?", re.I)),
    ("day_month", re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({_MONTH_RE})\b(?:,?\s+((?:19|20)\d\d))?",
                             re.I)),
    ("month", re.compile(rf"\b({_MONTH_RE})\b(?:,?\s+((?:19|20)\d\d))?", re.I)),
    ("year", re.compile(r"\b(?:in|during|of|since)\s+((?:19|20)\d\d)\b", re.I)),
]


def _utc(ts: float) -> _dt.datetime:
    return _dt.datetime.fromtimestamp(float(ts), tz=_dt.timezone.utc)


def _epoch(d: _dt.datetime | _dt.date) -> float:
    if not isinstance(d, _dt.datetime):
        d = _dt.datetime(d.year, d.month, d.day, tzinfo=_dt.timezone.utc)
    return d.timestamp()


def _month_range(year: int, month: int) -> tuple[float, float]:
    start = _dt.date(year, month, 1)
    end = _dt.date(year + (month == 12), month % 12 + 1, 1)
    return _epoch(start), _epoch(end)


def _count(word: str) -> float:
    word = word.lower()
    return float(word) if word.isdigit() else float(_NUMBERS[word])


def time_ranges(query: str, now: float) -> list[tuple[float, float]]:
    """The UTC ranges ``[start, end)`` (epoch seconds) the time expressions of ``query`` name,
    resolved against ``now`` (see the module docstring); [] when it names none. Each part
    of the query is read once: a longer expression is matched before the ones inside it."""
    today = _utc(now).date()
    t0 = _epoch(today)
    out: list[tuple[float, float]] = []
    taken: list[tuple[int, int]] = []
    for kind, pattern in _PATTERNS:
        for m in pattern.finditer(query):
            if any(a < m.end() and m.start() < b for a, b in taken):
                continue
            found = _resolve(kind, m, now, today, t0)
            if found is not None:
                out.append(found)
                taken.append((m.start(), m.end()))
    return out


def _resolve(kind: str, m: re.Match, now: float, today: _dt.date, t0: float) -> tuple[float, float] | None:
    if kind == "before_yesterday":
        return t0 - 2 * DAY, t0 - DAY
    if kind == "yesterday":
        return t0 - DAY, t0
    if kind == "today":
        return t0, t0 + DAY
    if kind == "span":
        return now - _count(m.group(1)) * _UNITS[m.group(2).lower()] * DAY, now + DAY
    if kind == "ago":
        unit = _UNITS[m.group(2).lower()] * DAY
        centre = now - _count(m.group(1)) * unit
        half = max(unit / 2, DAY)
        return centre - half, centre + half
    if kind in ("last_unit", "this_unit"):
        unit, last = m.group(1).lower(), kind == "last_unit"
        if unit == "week":
            monday = t0 - today.weekday() * DAY
            return (monday - 7 * DAY, monday) if last else (monday, now + DAY)
        if unit == "month":
            y, mo = (today.year, today.month - 1) if last else (today.year, today.month)
            if mo == 0:
                y, mo = y - 1, 12
            start, end = _month_range(y, mo)
            return (start, end) if last else (start, now + DAY)
        y = today.year - last
        return _epoch(_dt.date(y, 1, 1)), (_epoch(_dt.date(y + 1, 1, 1)) if last else now + DAY)
    if kind == "weekend":
        back = (today.weekday() - 5) % 7 or 7  # days back to the last Saturday before today
        sat = t0 - back * DAY
        return sat, sat + 2 * DAY
    if kind == "weekday":
        back = (today.weekday() - _WEEKDAYS[m.group(1).lower()]) % 7 or 7
        return t0 - back * DAY, t0 - (back - 1) * DAY
    if kind == "iso":
        try:
            d = _dt.date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
        except ValueError:
            return None
        return _epoch(d), _epoch(d) + DAY
    if kind in ("month_day", "day_month", "month"):
        if kind == "month_day":
            name, day, year = m.group(1), m.group(2), m.group(3)
        elif kind == "day_month":
            day, name, year = m.group(1), m.group(2), m.group(3)
        else:
            name, day, year = m.group(1), None, m.group(2)
        if name.lower() == "may" and name != "May" and day is None and year is None:
            return None  # the verb
        if name == "May" and day is None and year is None and not _after_preposition(m):
            return None  # "May I ..."
        month = _MONTHS[name.lower().rstrip(".")]
        if year is not None:
            y = int(year)
        else:  # the latest such month not after now
            y = today.year if month <= today.month else today.year - 1
        if day is not None:
            try:
                d = _dt.date(y, month, int(day))
            except ValueError:
                return None
            return _epoch(d), _epoch(d) + DAY
        return _month_range(y, month)
    if kind == "year":
        y = int(m.group(1))
        return _epoch(_dt.date(y, 1, 1)), _epoch(_dt.date(y + 1, 1, 1))
    return None


def _after_preposition(m: re.Match) -> bool:
    before = m.string[:m.start()].rstrip().lower()
    return before.endswith(("in", "during", "of", "since", "early", "late", "mid", "until", "by", "last", "this"))


class TimeBoostRetriever(WrapperRetriever):
    """Lifts candidates dated inside the time range a question names (``time_ranges``).

    Asks the wrapped retriever for ``candidates`` hits. When the query names no time, they
    are returned as they are (the first k). Otherwise, with ``s_max`` the best candidate's
    score and R the ranges, each widened by ``slack_days`` on both sides,

        score(r) = s(r) + weight * s_max * [timestamp(r) in some range of R]

    and the candidates are re-ranked by it (ties: the wrapped rank). A turn's timestamp is
    its session's date (LoCoMo, LongMemEval), so the boost marks the sessions the question
    points at. ``hit.components["time"]`` holds ``in_range`` (0/1). Cost: one regular
    expression pass over the query and one comparison per candidate.
    """

    name = "time"

    constraints = {
        "weight": Param(float, ge=0),
        "slack_days": Param(float, ge=0),
        "candidates": Param(int, ge=1),
    }

    def __init__(self, retriever: Retriever, weight: float = 0.3, slack_days: float = 1.0, candidates: int = 50):
        super().__init__(retriever, weight=weight, slack_days=slack_days, candidates=candidates)

    def _on_params_changed(self) -> None:
        self._sync([self.retriever])

    def _search(self, query: str, k: int, *, where: Where | None, now: float | None) -> list[Hit]:
        when = now if now is not None else self.newest_timestamp
        ranges = time_ranges(query, when) if when is not None and self.weight > 0 else []
        if not ranges:
            inner = self.retriever.search(query, k, where=where, now=now)
            return self._hits([(h.id, h.score) for h in inner], [h.components for h in inner],
                              [{"in_range": 0.0}] * len(inner))
        inner = self.retriever.search(query, max(k, self.candidates), where=where, now=now)
        if not inner:
            return []
        slack = self.slack_days * DAY
        top = max(h.score for h in inner)
        lift = self.weight * (top if top > 0 else 1.0)
        scored = []
        for rank, h in enumerate(inner):
            t = h.memory_record.timestamp
            inside = any(a - slack <= t < b + slack for a, b in ranges)
            scored.append((h.score + lift * inside, rank, h, inside))
        scored.sort(key=lambda x: (-x[0], x[1]))
        scored = scored[:k]
        return self._hits([(h.id, s) for s, _, h, _ in scored], [h.components for _, _, h, _ in scored],
                          [{"in_range": float(inside)} for *_, inside in scored])
