"""The metric registry: every per-probe metric is one ``Metric`` object, registered by name.

A metric has a name, a *view* (what it looks at), whether it is bounded in [0, 1], the
kind of parameter its column names carry, and a per-row function:

- ``param=None``:   one column, ``<name>``                     (``context_recall``)
- ``param="k"``:    one column per cut-off, ``<name>@<k>``     (``recall@5``)
- ``param="tok"``:  one column per token budget, ``<name>@<B>tok`` (``recall@512tok``)

Views: ``retrieval`` (the ranked list, @k), ``budget`` (the ranked list cut by tokens,
@Btok), ``context`` (the built context), ``answer`` (the answer to the probe), ``lifecycle``
(stale facts). A column name is parsed once (``parse_column``: the metric and its k or B),
and everything that lists metric columns -- ``compute_metrics``, ``metric_columns``,
summaries and their intervals, ``memlab compare``, sweep checks and did-you-mean, the CLI,
plot axes -- asks this registry, so a metric registered here is found everywhere.

A user metric is one function and one call (see ``experiments/f1_metric.py``)::

    def f1_at_k(row: RowView, k: int) -> float:
        ...
    register_metric("f1", f1_at_k, view="retrieval", param="k", bounded=True)

``row`` is the probe's ``RowView``: its distinct gold turn ids, ranked items (each a list
of source turn ids), item tokens, context ids, gold and retrieved sessions and the raw
row. Return NaN for a probe the metric does not score (means skip it).

The built-in metrics come in blocks (``batch="turns"``, ...) that share their arithmetic: a
block registers, beside its metrics' per-row functions, one batch function
(``register_batch(name, fill)``) that ``compute_metrics`` calls once per row to fill every
column of the block. Both call the same scoring function of the block's module, so the
arithmetic is written once; tests pin the columns to the per-row functions. A metric whose
block has no batch function (a user metric) is computed by calling its ``fn`` on each row.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...base import MemlabError
from .cuts import budget_prefix

VIEWS = ("retrieval", "budget", "context", "answer", "lifecycle")
PARAMS = (None, "k", "tok")
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


@dataclass(frozen=True)
class RowView:
    """One probe row as a metric function sees it (lists already parsed; the row schema is
    ``memlab.eval.rows.ProbeRow``).

    ``items`` are the ranked items, each the list of turn ids it stands for (its source
    ids); ``tokens`` their tokens (empty when the row has none); ``context`` the distinct
    source turn ids of the built context; ``gold_turn_sessions`` the sessions of the gold
    turns; ``source_sessions`` the session of each item's each source turn (aligned with
    ``items``; None for an id that is no turn); ``row`` every column of the row.
    """

    gold: list[str]
    items: list[list[str]] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)
    context: list[str] = field(default_factory=list)
    gold_sessions: list[str] = field(default_factory=list)
    retrieved_sessions: list[list[str]] = field(default_factory=list)
    gold_turn_sessions: list[str] = field(default_factory=list)
    source_sessions: list[list[Any]] = field(default_factory=list)
    row: Mapping[str, Any] = field(default_factory=dict)

    def kept(self, budget: int) -> int:
        """How many leading items fit in ``budget`` tokens (``budget_prefix``)."""
        return budget_prefix(self.tokens, budget)


@dataclass(frozen=True)
class Metric:
    """One registered metric (module docstring).

    ``fn(row, value)`` computes it for one probe: ``value`` is k, B or None (``param``).
    ``needs``: row columns without which it is not computed (session metrics need
    ``gold_sessions`` and ``retrieved_sessions``); ``unscored``: when a probe gets NaN,
    in words (said when a mean is NaN); ``brief``: shown in the short terminal tables;
    ``batch``: the block it belongs to, whose batch function (``register_batch``) fills it
    in ``compute_metrics`` (the built-ins), None for a metric computed by calling ``fn`` row
    by row; ``computed_by``:
    who writes its column when ``compute_metrics`` does not (the replay's lifecycle and
    answer steps).
    """

    name: str
    fn: Callable[[RowView, Any], float] | None
    view: str
    param: str | None = None
    bounded: bool = True
    needs: tuple[str, ...] = ()
    unscored: str = "a probe without gold evidence is unscored"
    brief: bool = False
    batch: str | None = None
    computed_by: str | None = None
    doc: str = ""

    @property
    def key(self) -> str:
        """The registry key: ``recall@k``, ``recall@Btok`` or ``context_recall``."""
        return self.name + {None: "", "k": "@k", "tok": "@Btok"}[self.param]

    def column(self, value: int | None = None) -> str:
        """The column name for k or B (``recall@5``, ``recall@512tok``, ``context_recall``)."""
        if self.param is None:
            return self.name
        if value is None:
            raise MemlabError(f"metric {self.key!r} needs a {'k' if self.param == 'k' else 'token budget'}")
        return f"{self.name}@{value}" + ("tok" if self.param == "tok" else "")

    def columns(self, ks: Sequence[int] = (), budgets: Sequence[int] = ()) -> list[str]:
        values = {None: [None], "k": list(ks), "tok": list(budgets)}[self.param]
        return [self.column(v) for v in values]


@dataclass(frozen=True)
class MetricColumn:
    """A parsed column name: the metric and its parameter value (k, B or None)."""

    column: str
    metric: Metric
    value: int | None

    @property
    def k(self) -> int | None:
        return self.value if self.metric.param == "k" else None

    @property
    def budget(self) -> int | None:
        return self.value if self.metric.param == "tok" else None


_REGISTRY: dict[str, Metric] = {}
_PARSED: dict[str, MetricColumn | None] = {}
_COLUMN = re.compile(r"^(?P<name>[a-z][a-z0-9_]*?)(?:@(?P<value>\d+)(?P<tok>tok)?)?$")


def register_metric(name: str, fn: Callable[[RowView, Any], float] | None = None, *, view: str = "retrieval",
                    param: str | None = None, bounded: bool = True, needs: Iterable[str] = (),
                    unscored: str | None = None, brief: bool = False, batch: str | None = None,
                    computed_by: str | None = None, doc: str | None = None,
                    replace: bool = False) -> Metric:
    """Register a metric (``Metric`` fields) and return it; its columns are known from now on.

    Registering a key again (``recall@k``) is an error unless ``replace`` (a re-imported
    user file registers the same function again: allowed when it is the same code).
    """
    if not isinstance(name, str) or not _NAME.match(name):
        raise MemlabError(f"metric name must be lower-case letters, digits and '_', got {name!r}")
    if view not in VIEWS:
        raise MemlabError(f"metric {name!r}: view must be one of {', '.join(VIEWS)}, got {view!r}")
    if param not in PARAMS:
        raise MemlabError(f"metric {name!r}: param must be None, 'k' or 'tok', got {param!r}")
    if fn is None and computed_by is None:
        raise MemlabError(f"metric {name!r}: give its per-row function (fn)")
    if fn is not None and not callable(fn):
        raise MemlabError(f"metric {name!r}: fn must be callable, got {fn!r}")
    metric = Metric(name=name, fn=fn, view=view, param=param, bounded=bool(bounded), needs=tuple(needs),
                    unscored=unscored or Metric.unscored, brief=brief, batch=batch, computed_by=computed_by,
                    doc=doc if doc is not None else ((fn.__doc__ or "").strip().split("\n")[0] if fn else ""))
    old = _REGISTRY.get(metric.key)
    if old is not None and not replace and not _same_code(old, metric):
        raise MemlabError(f"metric {metric.key!r} is already registered; pass replace=True to replace it")
    _REGISTRY[metric.key] = metric
    _PARSED.clear()
    return metric


def _same_code(a: Metric, b: Metric) -> bool:
    code = [getattr(m.fn, "__code__", None) for m in (a, b)]
    return code[0] is not None and code[1] is not None and code[0].co_code == code[1].co_code \
        and a.fn.__qualname__ == b.fn.__qualname__ and (a.view, a.param, a.bounded) == (b.view, b.param, b.bounded)


#: A block's batch function: ``fill(columns, row, ks, budgets)`` appends the row's value of every
#: column of the block's metrics (at each k and budget) to ``columns[column]``.
BatchFill = Callable[[dict[str, list[float]], RowView, Sequence[int], Sequence[int]], None]
_BATCHES: dict[str, BatchFill] = {}


def register_batch(name: str, fill: BatchFill | None = None) -> Any:
    """Register the batch function of the metrics registered with ``batch=name`` (module
    docstring); ``compute_metrics`` calls it instead of their per-row functions. Without
    ``fill``, a decorator: ``@register_batch("turns")``."""
    if fill is None:
        return lambda f: register_batch(name, f)
    if not callable(fill):
        raise MemlabError(f"batch {name!r}: fill must be callable, got {fill!r}")
    _BATCHES[name] = fill
    return fill


def batch_fill(name: str | None) -> BatchFill | None:
    """The batch function registered for block ``name``; None when it has none."""
    return _BATCHES.get(name) if name is not None else None


def unregister_metric(key: str) -> None:
    """Remove a registered metric by key (``recall@k``); for tests and interactive sessions."""
    if key not in _REGISTRY:
        raise MemlabError(f"no metric {key!r}; registered: {', '.join(_REGISTRY)}")
    del _REGISTRY[key]
    _PARSED.clear()


def metrics_snapshot() -> dict[str, Metric]:
    """The registered metrics now, for ``restore_metrics`` (``Registry.snapshot``'s twin)."""
    return dict(_REGISTRY)


def restore_metrics(snapshot: Mapping[str, Metric]) -> None:
    """Back to ``snapshot``: metrics registered since are gone, replaced ones come back."""
    _REGISTRY.clear()
    _REGISTRY.update(snapshot)
    _PARSED.clear()  # parsed column names may name a metric that is gone


def get_metric(key: str) -> Metric:
    """The metric registered as ``key`` (``recall@k``, ``recall@Btok``, ``context_recall``)."""
    try:
        return _REGISTRY[key]
    except KeyError:
        import difflib

        close = difflib.get_close_matches(key, list(_REGISTRY), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise MemlabError(f"no metric {key!r}{hint}") from None


#: Table order of the built-in blocks; then the metrics the replay writes, then user metrics.
_BLOCK_ORDER = {"turn_budget": 0, "turns": 1, "context": 2, "sessions": 3, "longmemeval": 4}


def _rank(metric: Metric) -> int:
    if metric.batch in _BLOCK_ORDER:
        return _BLOCK_ORDER[metric.batch]
    return len(_BLOCK_ORDER) + (0 if metric.computed_by is not None else 1)


def registered(view: str | Iterable[str] | None = None, param: Any = "any",
               batch: Any = "any") -> list[Metric]:
    """Registered metrics in table order (the built-in blocks -- token-matched, @k, context,
    sessions --, the replay's own, then the others in registration order), optionally only
    those of some views / param / batch."""
    views = None if view is None else ({view} if isinstance(view, str) else set(view))
    ordered = sorted(_REGISTRY.values(), key=_rank)  # stable: registration order within a block
    return [m for m in ordered if (views is None or m.view in views)
            and (param == "any" or m.param == param) and (batch == "any" or m.batch == batch)]


def parse_column(column: Any) -> MetricColumn | None:
    """The metric a column name spells, with its k or B; None when it is no metric column."""
    if not isinstance(column, str):
        return None
    if column in _PARSED:
        return _PARSED[column]
    parsed = None
    m = _COLUMN.match(column)
    if m is not None:
        value = m.group("value")
        param = None if value is None else ("tok" if m.group("tok") else "k")
        metric = _REGISTRY.get(m.group("name") + {None: "", "k": "@k", "tok": "@Btok"}[param])
        if metric is not None and (value is None or int(value) >= 1):
            parsed = MetricColumn(column, metric, None if value is None else int(value))
    _PARSED[column] = parsed
    return parsed


def is_metric_column(column: Any) -> bool:
    return parse_column(column) is not None


def is_bounded(column: Any) -> bool:
    """Whether a metric column lies in [0, 1] (plots draw such axes from 0 to 1)."""
    parsed = parse_column(column)
    return parsed is not None and parsed.metric.bounded


class _Bounded:
    """``BOUNDED.match(column)``: the registry's ``is_bounded``, under the old regex's name."""

    def match(self, column: Any) -> bool:
        return is_bounded(column)


BOUNDED = _Bounded()


def expand(metrics: Sequence[Metric], ks: Sequence[int] = (), budgets: Sequence[int] = ()) -> list[str]:
    """Column names of ``metrics`` in table order: consecutive metrics of one batch and
    parameter kind form a block; a @k block lists each metric's ks in turn (``recall@1,
    recall@5, mrr@1``...), a @Btok block each budget's metrics in turn (``recall@512tok,
    hit_rate@512tok, recall@1024tok``...), the order the tables have always had."""
    out: list[str] = []
    blocks: list[list[Metric]] = []
    for m in metrics:
        if blocks and (blocks[-1][0].batch, blocks[-1][0].param) == (m.batch, m.param) and m.batch is not None:
            blocks[-1].append(m)
        else:
            blocks.append([m])
    for block in blocks:
        if block[0].param == "tok":
            out += [m.column(b) for b in budgets for m in block]
        else:
            out += [c for m in block for c in m.columns(ks, budgets)]
    return out


def report_columns(columns: Iterable[Any], brief: bool = False) -> list[str]:
    """The metric columns among ``columns`` in table order (``expand`` over the registry);
    with ``brief``, only those of metrics marked ``brief`` (the short terminal tables)."""
    present = [p for p in (parse_column(c) for c in columns) if p is not None]
    ks = sorted({p.value for p in present if p.metric.param == "k"})
    budgets = sorted({p.value for p in present if p.metric.param == "tok"})
    have = {p.column for p in present}
    metrics = [m for m in registered() if not brief or m.brief]
    return [c for c in expand(metrics, ks, budgets) if c in have]  # type: ignore[arg-type]


def close_metric_columns(name: str, known: Iterable[str], n: int = 1) -> list[str]:
    """Did-you-mean candidates for a metric column name among ``known``."""
    import difflib

    return difflib.get_close_matches(str(name), list(known), n=n)


def nan_reason(column: str) -> str:
    """Why a probe gets no value of ``column``, in words (for notes beside a NaN mean)."""
    parsed = parse_column(column)
    return parsed.metric.unscored if parsed is not None else "no probe has a value"

