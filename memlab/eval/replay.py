"""Replay dialogues into a strategy and record what it recalls at each probe.

For every dialogue the strategy is reset (a fresh clone; a persistent store gets a namespace
named after the dialogue id), its turns are fed in order
with their dialogue timestamps, and each probe is asked at its position, at the time of
the turn it follows. One row per probe records:

- identity: strategy (label), dialogue_id, probe_id, category, query, answer, gold,
  position (turns observed), probe_time;
- retrieval view: retrieved_ids, retrieved_source_ids, retrieved_scores (ranked, k_max
  deep), retrieved_tokens (each hit's tokens as the context would show it,
  ``Strategy.hit_tokens``); with token budgets, and for a probe with gold sessions, the
  list goes deeper, see ``replay``;
- sessions: gold_sessions (the probe's evidence sessions, ``gold_sessions``) and
  retrieved_sessions (per ranked hit, the sessions of its source turns; ids that are no
  turn of the dialogue map to none), read by the session metrics
  (``memlab.eval.metrics.sessions``); gold_turn_sessions (the sessions holding the gold
  turns) and retrieved_source_sessions (per ranked hit, the session of each source turn,
  None for an id that is no turn), read by LongMemEval's metrics
  (``memlab.eval.metrics.longmemeval``);
- context view: context_ids (source turns in the built context), context_record_ids,
  context_tokens;
- lifecycle: stale_evidence (the probe's superseded turns), store_size (records the
  strategy holds when asked; None if it does not say), and the per-probe metrics
  ``stale_in_context`` / ``stale_only`` (``memlab.eval.lifecycle``);
- faults: ``error`` (None, or why the probe's LLM step failed for good -- after the client's
  retries, or an extractor's last unreadable answer; a failure while reading turns is
  reported on the next probe) and ``llm_format_errors`` (answers without the asked format,
  counted like the cost below). A failed probe's metrics are NaN; ``replay`` stops with one
  LLMError when more than ``max_failures`` probes failed;
- cost: llm_prompt_tokens, llm_completion_tokens, llm_calls, llm_cached_calls: the
  strategy's own LLM calls made for this probe and since the previous one (summaries and
  extractions made while reading are charged to the next probe); a call answered from a
  response cache counts at its original cost and also in llm_cached_calls, so the numbers
  do not depend on the cache's state; latency_ms (wall time of retrieve + build_context:
  the only column that is not reproducible bit for bit);
- configuration: every parameter of the strategy (``param:<name>`` columns, deep), the
  dataset name and hash, and provenance (memlab version, git commit).

Why over 400 lines: it is one job, replaying, and most of it is the row of a probe -- the
retrieval, budget, session, context and answer columns listed above -- with the failure
limit and the shared replay of variants that differ only in what replaying reads.
"""

from __future__ import annotations

import math
import os
import time
from typing import Any, Callable, Sequence, cast

import pandas as pd

from ..base import MemlabError
from ..strategy import Strategy
from .configuration import add_configuration, strategy_label
from .dataset import Dataset, Dialogue, Probe, Turn
from .lifecycle import add_stale_metrics
from .progress import progress_bar
from .rows import ANSWER_COLUMNS as _ANSWER_COLUMNS, ROW_COLUMNS as _ROW_COLUMNS
from ..llm.base import LLMError
from .metrics import compute_metrics, metric_columns
from .workers import die_with_parent

#: The deepest list ``replay`` asks for when filling a token budget or reaching ``k_max``
#: distinct sessions.
MAX_BUDGET_DEPTH = 1024


def _ranked(strategy: Strategy, query: str, k_max: int, budget: int, now: float,
            sessions: tuple[dict[str, str], int] | None = None) -> tuple[list[Any], list[int]]:
    """The ranked hits and their tokens; deep enough to overflow ``budget`` and to hold
    ``sessions[1]`` distinct sessions.

    The first call asks for ``k_max`` hits; it is the probe's own search, whose side effects
    (reinforcement of returned hits, an LLM's expansion or verdict) count. The later, deeper
    calls repeat the same query and time inside ``strategy.peek()``: a strategy that
    ``honours_peek`` then changes no state and reuses the first call's LLM products, so they
    cost no LLM call (``Strategy.peek``).

    Budget: while the hits' tokens still fit in ``budget`` and the strategy returned as
    many as asked, the depth doubles (up to ``MAX_BUDGET_DEPTH``) and the deeper list
    replaces the list.

    Sessions (``sessions = (session_of, wanted)``, ``session_of`` mapping turn ids to
    session ids): then, while the hits' source turns span fewer than ``wanted`` distinct
    sessions (``session_of`` of each hit's ``source_ids``) and the last call returned as
    many as asked, the depth doubles again (up to ``MAX_BUDGET_DEPTH``) and the list is
    extended by the deeper list's hits that are not in it yet, in the deeper list's order.
    The list before this step stays its prefix, hit for hit, so the turn-level metrics
    (@k for k <= ``k_max``, and @Btok) read what they read without it; when
    ``retrieve(n)[:m] == retrieve(m)`` (an exact search) the extended list is the deeper
    list itself. Each doubling is one more ``retrieve`` call: from depth d (``k_max``, or
    where the budget loop stopped) to depth D = d * 2^m (or the cap) the step makes m calls.
    """
    hits = strategy.retrieve(query, k_max, now=now)
    tokens = strategy.hit_tokens(hits)
    depth = k_max
    while budget and sum(tokens) <= budget and len(hits) == depth and depth < MAX_BUDGET_DEPTH:
        depth = min(2 * depth, MAX_BUDGET_DEPTH)
        with strategy.peek():
            hits = strategy.retrieve(query, depth, now=now)
        tokens = strategy.hit_tokens(hits)
    if sessions is None:
        return hits, tokens
    session_of, wanted = sessions
    spanned = {session_of[i] for h in hits for i in h.memory_record.source_ids if i in session_of}
    more = len(hits) == depth
    while more and len(spanned) < wanted and depth < MAX_BUDGET_DEPTH:
        depth = min(2 * depth, MAX_BUDGET_DEPTH)
        with strategy.peek():
            deeper = strategy.retrieve(query, depth, now=now)
        more = len(deeper) == depth
        held = {h.id for h in hits}
        new = []
        for h in deeper:
            if h.id not in held:
                held.add(h.id)
                new.append(h)
        hits = hits + new
        tokens = tokens + strategy.hit_tokens(new)
        spanned.update(session_of[i] for h in new for i in h.memory_record.source_ids if i in session_of)
    return hits, tokens


def replay_dialogue(strategy: Strategy, dialogue: Dialogue, k_max: int = 10,
                    answerer: Any = None, judge: Any = None, budget: int = 0,
                    on_probe: Callable[[], None] | None = None,
                    on_failure: Callable[[str], None] | None = None,
                    variants: Sequence[dict[str, Any]] | None = None) -> Any:
    """Rows for one dialogue. ``strategy`` is reset first and used in place.

    ``budget``: the largest token budget to fill (0: none). A strategy whose ``uses_gold``
    is true (a reference strategy) is shown each probe with ``see_probe`` before it is
    asked. ``on_probe`` is called after each probe (progress bars), ``on_failure`` with the
    error of each failed probe (it may raise to stop the run).

    With ``variants`` (query-time parameter sets, ``replay_variants``) the dialogue is
    observed once and each probe is asked once per variant, its values set first; the
    result is then one list of rows per variant. Variants that differ only in the
    strategy's ``context_only_params`` (read by ``build_context``, not by ``retrieve``)
    share one ranked list per probe: it is searched for the first of them and reused by
    the others, whose rows then record that search's LLM usage and time as their own, as
    a separate replay would.
    """
    strategy.reset()
    settings = list(variants) if variants is not None else [None]
    per_variant: list[list[dict[str, Any]]] = [[] for _ in settings]
    charged = strategy.llm_usage()
    session_of = {t.id: s.id for s in dialogue.sessions for t in s.turns}
    session_ids = {s.id for s in dialogue.sessions}
    observed_sessions: set[str] = set()  # sessions with a turn observed so far
    # a second search of a stochastic strategy would draw again, and one of a strategy whose
    # search changes state and that cannot peek would change it again: their lists are not
    # deepened for sessions
    caps = strategy.capabilities()
    deepen = not caps.stochastic and (not caps.search_changes_state or caps.honours_peek)
    context_only = caps.context_only_params if variants is not None else frozenset()
    pending: str | None = None  # an LLM failure while reading turns: reported on the next probe
    for kind, item in dialogue.timeline():
        if kind == "turn":
            turn = cast(Turn, item)
            observed_sessions.add(session_of[turn.id])
            try:
                strategy.observe(turn.to_record(dialogue.id))
            except LLMError as exc:
                pending = pending or f"reading turn {turn.id!r}: {exc}"
            continue
        probe = cast(Probe, item)
        now = dialogue.probe_time(probe)
        if strategy.uses_gold:
            strategy.see_probe(probe)
        observed_error, pending = pending, None
        observed = strategy.llm_usage()  # what reading the turns since the last probe cost
        gold_s = gold_sessions(probe, session_of, session_ids)
        # session metrics rank sessions by first hit: a list holding k_max distinct sessions (or
        # every session observed) gives them the first k_max of the full ranking
        sessions = (session_of, min(k_max, len(observed_sessions))) if gold_s and deepen else None
        searched: dict[str, tuple[list[Any], list[int], float, dict[str, int]]] = {}  # this probe's shared lists
        for setting, rows in zip(settings, per_variant):
            if setting is not None:
                strategy.set_query_params(**setting)
            before = strategy.llm_usage()
            error = observed_error
            hits: list[Any] = []
            hit_tokens: list[int] = []
            context: Any = None
            # the values retrieve reads: variants equal in them get the same ranked list
            share = repr(sorted((k, repr(v)) for k, v in setting.items() if k not in context_only)) \
                if context_only and setting is not None else None
            reused: tuple[list[Any], list[int], float, dict[str, int]] | None = searched.get(share) \
                if share is not None else None
            start = time.perf_counter()
            try:
                if reused is not None:
                    hits, hit_tokens = list(reused[0]), list(reused[1])
                else:
                    hits, hit_tokens = _ranked(strategy, probe.query, k_max, budget, now, sessions)
                    if share is not None:
                        after = strategy.llm_usage()
                        searched[share] = (hits, hit_tokens, time.perf_counter() - start,
                                           {k: after.get(k, 0) - before.get(k, 0) for k in after})
                context = strategy.build_context(probe.query, now=now)
            except LLMError as exc:
                error = error or str(exc)
            latency = (time.perf_counter() - start + (reused[2] if reused is not None else 0.0)) * 1000.0
            usage = strategy.llm_usage()
            shared_usage = reused[3] if reused is not None else {}

            def cost(key: str) -> int:
                # the turns read since the last probe plus this variant's own asking (with a
                # shared search, what that search cost, as a separate replay would pay it)
                return (observed.get(key, 0) - charged.get(key, 0)) + (usage.get(key, 0) - before.get(key, 0)) \
                    + shared_usage.get(key, 0)

            rows.append({
                "dialogue_id": dialogue.id,
                "probe_id": probe.id,
                "category": probe.category,
                "query": probe.query,
                "answer": probe.answer,
                "gold": list(probe.evidence),
                "stale_evidence": list(probe.stale_evidence),
                "position": dialogue.probe_position(probe),
                "probe_time": float(now),
                "retrieved_ids": [h.id for h in hits],
                "retrieved_source_ids": [list(h.memory_record.source_ids) for h in hits],
                "retrieved_scores": [float(h.score) for h in hits],
                "retrieved_tokens": [int(t) for t in hit_tokens],
                "context_ids": list(context.source_ids) if context is not None else [],
                "context_record_ids": list(context.record_ids) if context is not None else [],
                "context_tokens": int(context.token_count) if context is not None else 0,
                "store_size": strategy.store_size(),
                "llm_prompt_tokens": cost("prompt_tokens"),
                "llm_completion_tokens": cost("completion_tokens"),
                "llm_calls": cost("calls"),
                "llm_cached_calls": cost("cached_calls"),
                "llm_format_errors": cost("format_errors"),
                "latency_ms": latency,
                "error": error,
                "gold_sessions": list(gold_s),
                "retrieved_sessions": [list(dict.fromkeys(session_of[i] for i in h.memory_record.source_ids
                                                          if i in session_of)) for h in hits],
                "gold_turn_sessions": list(dict.fromkeys(session_of[t] for t in probe.evidence
                                                         if t in session_of)),
                "retrieved_source_sessions": [[session_of.get(i) for i in h.memory_record.source_ids]
                                              for h in hits],
            })
            charged_after = usage  # the answerer's calls are counted apart, never as the strategy's
            if answerer is not None:
                answered = _failed_answer_columns()
                if error is None:
                    try:
                        answered = _answer_columns(answerer, judge, context.messages, probe)
                    except LLMError as exc:
                        rows[-1]["error"] = error = f"answering: {exc}"
                rows[-1].update(answered)
            if error is not None and on_failure is not None:
                on_failure(f"dialogue {dialogue.id!r}, probe {probe.id!r}: {error}")
        charged = charged_after
        if on_probe is not None:
            on_probe()
    return per_variant if variants is not None else per_variant[0]


def gold_sessions(probe: Any, session_of: dict[str, str], sessions: set[str] | None = None) -> list[str]:
    """The probe's evidence sessions: ``probe.metadata["evidence_sessions"]`` when it has them
    (e.g. LongMemEval's answer sessions; only those that are ``sessions`` of the dialogue
    when given, as LongMemEval takes its gold from the haystack), else the distinct sessions
    of its gold turns in evidence order; [] for a probe without gold turns (unscored, like
    every metric)."""
    if not probe.evidence:
        return []
    given = probe.metadata.get("evidence_sessions") if probe.metadata else None
    if given:
        return [s for s in dict.fromkeys(str(s) for s in given) if sessions is None or s in sessions]
    return list(dict.fromkeys(session_of[t] for t in probe.evidence if t in session_of))


def _answer_columns(answerer: Any, judge: Any, messages: list[dict[str, Any]], probe: Any) -> dict[str, Any]:
    """prediction, answer_f1 and judge_correct (NaN without a gold answer or a judge), with their tokens."""
    from .answers import token_f1
    from .locomo_score import probe_locomo_f1

    completion = answerer.answer(messages, probe.query)
    gold = probe.answer
    out: dict[str, Any] = {
        "prediction": completion.text,
        "answer_f1": token_f1(completion.text, gold) if gold is not None else float("nan"),
        "locomo_f1": probe_locomo_f1(completion.text, probe),  # LoCoMo's own score; NaN off LoCoMo
        "judge_correct": float("nan"),
        "answer_prompt_tokens": completion.prompt_tokens,
        "answer_completion_tokens": completion.completion_tokens,
        "judge_tokens": 0,
    }
    if judge is not None and gold is not None:
        score, verdict = judge.judge(probe.query, gold, completion.text, probe.category, probe.id)
        out.update(judge.identity())  # judge_prompt_set (name@version) and judge_model
        out["judge_correct"] = score
        out["judge_tokens"] = verdict.prompt_tokens + verdict.completion_tokens
    return out


def _failed_answer_columns() -> dict[str, Any]:
    return {"prediction": None, "answer_f1": float("nan"), "judge_correct": float("nan"),
            "answer_prompt_tokens": 0, "answer_completion_tokens": 0, "judge_tokens": 0}


def _replay_one(strategy: Strategy, dialogue: Dialogue, k_max: int, answerer: Any = None,
                judge: Any = None, budget: int = 0, on_probe: Callable[[], None] | None = None,
                on_failure: Callable[[str], None] | None = None, parent_pid: int | None = None
                ) -> list[dict[str, Any]]:
    if parent_pid is not None:  # a process worker: never outlive the run (memlab.eval.workers)
        die_with_parent(parent_pid)
    # a strategy over a persistent store writes each dialogue to its own namespace (its id)
    return replay_dialogue(strategy.clone(scope=dialogue.id), dialogue, k_max, answerer, judge, budget,
                           on_probe, on_failure)


#: Share of the probes that may fail (LLM errors) before ``replay`` stops, at least MIN_FAILURES.
FAILURE_FRACTION = 0.05
MIN_FAILURES = 3


def default_max_failures(n_probes: int) -> int:
    """``max(MIN_FAILURES, ceil(FAILURE_FRACTION * n_probes))``: failures tolerated by default."""
    return max(MIN_FAILURES, math.ceil(FAILURE_FRACTION * n_probes))


class _FailureLimit:
    """Counts failed probes; raises one LLMError naming the first failure past the limit."""

    def __init__(self, limit: int) -> None:
        self.limit, self.count, self.first = limit, 0, ""

    def __call__(self, error: str) -> None:
        self.count += 1
        self.first = self.first or error
        if self.count > self.limit:
            raise LLMError(f"{self.count} probes failed, more than max_failures={self.limit} "
                           f"(--max-failures); stopped. First failure: {self.first}")


def replay(strategy: Strategy, dataset: Dataset, *, k_max: int = 10, ks: Sequence[int] = (1, 5, 10),
           label: str | None = None, n_jobs: int = 1, progress: bool = False,
           provenance: dict[str, Any] | None = None, answerer: Any = None,
           judge: Any = None, budgets: Sequence[int] = (), max_failures: int | None = None) -> pd.DataFrame:
    """Replay every dialogue of ``dataset``; a tidy DataFrame, one row per probe, with metrics.

    ``budgets`` (token budgets, e.g. ``(256, 512, 1024)``) adds the token-matched metrics
    ``recall@<B>tok``, ``hit_rate@<B>tok`` and ``tokens@<B>tok`` (``memlab.eval.metrics``).
    Each probe's ranked list is then retrieved deep enough to overflow the largest budget
    (k doubles from ``k_max`` while the hits still fit, up to ``MAX_BUDGET_DEPTH``), so
    ``retrieved_ids`` may hold more than ``k_max`` hits; metrics @k only read the first k.

    The session metrics (``session_hit_rate@k``, ...) rank sessions by their first hit in
    the whole ranked list, as LongMemEval does; so a probe with gold sessions gets a list
    deep enough to hold min(``k_max``, sessions observed) distinct sessions (the depth
    doubles on, up to ``MAX_BUDGET_DEPTH``, until it does or the strategy returns fewer
    hits than asked; the deeper hits are appended, the list before them kept as it was:
    ``_ranked``). session_*@k for k <= ``k_max`` thus read the first k sessions of the full
    ranking, whatever ``k_max`` is, and the turn-level metrics are those of the list before
    (the first k hits). The deeper lists are asked inside ``Strategy.peek()``, so they cost
    no LLM call and change no state in a strategy that ``honours_peek``. Not for a
    ``stochastic`` strategy (``capabilities()``), whose second search would draw again, nor
    for one whose search changes state and that does not honour peek: their session
    metrics read the list as retrieved.

    With an ``answerer`` (``memlab.eval.answers.Answerer``) each probe is also answered from
    its built context and scored by token F1 against the gold answer (``answer_f1``), and,
    with a ``judge`` (``LLMJudge``), by the judge (``judge_correct``: 1.0 / 0.0). Answer
    tokens are counted apart from the strategy's own (``answer_*_tokens``, ``judge_tokens``).

    ``progress`` draws a per-probe bar on stderr (and one for the embedding-cache warm-up).
    ``n_jobs`` > 1 replays dialogues in parallel with joblib (each worker gets a clone);
    any joblib backend works, e.g. ``with joblib.parallel_config(backend="dask"): ...``.
    Rows come back in dataset order whatever the backend, so results are identical.

    A probe whose LLM step fails for good (``LLMError``) is a row with ``error`` set and NaN
    metrics; past ``max_failures`` failed probes (default ``default_max_failures``: 5% of
    the probes, at least 3) the run stops with one LLMError naming the first failure.
    """
    if not isinstance(strategy, Strategy):
        raise MemlabError(f"replay needs a memlab Strategy, got {type(strategy).__name__}")
    n_probes = sum(len(d.probes) for d in dataset.dialogues)
    if max_failures is None:
        max_failures = default_max_failures(n_probes)
    if isinstance(max_failures, bool) or not isinstance(max_failures, int) or max_failures < 0:
        raise MemlabError(f"max_failures must be an int >= 0, got {max_failures!r}")
    failed = _FailureLimit(max_failures)
    budgets = sorted({_check_budget(b) for b in budgets})
    if k_max < max(ks, default=1):
        k_max = max(ks)
    budget = max(budgets, default=0)
    dialogues = list(dataset.dialogues)
    name = label or type(strategy).__name__
    warm_embedding_caches(strategy, dataset, progress=progress)
    bar = progress_bar(sum(len(d.probes) for d in dialogues), name, "probe", progress)
    try:
        if n_jobs == 1:
            tick = bar.update if bar is not None else None
            per_dialogue = [_replay_one(strategy, d, k_max, answerer, judge, budget, tick, failed)
                            for d in dialogues]
        else:
            from joblib import Parallel, delayed

            per_dialogue = []
            # a generator keeps dataset order and lets the bar move as dialogues finish
            for rows in Parallel(n_jobs=n_jobs, return_as="generator")(
                    delayed(_replay_one)(strategy, d, k_max, answerer, judge, budget, parent_pid=os.getpid())
                    for d in dialogues):
                per_dialogue.append(rows)
                for row in rows:  # workers cannot share the count: checked as dialogues finish
                    if row["error"] is not None:
                        failed(f"dialogue {row['dialogue_id']!r}, probe {row['probe_id']!r}: {row['error']}")
                if bar is not None:
                    bar.update(len(rows))
    finally:
        if bar is not None:
            bar.close()
    return _frame([row for rows in per_dialogue for row in rows], strategy, dataset, label, ks, budgets,
                  provenance, answerer is not None)


def _frame(rows: list[dict[str, Any]], strategy: Strategy, dataset: Dataset, label: str | None,
           ks: Sequence[int], budgets: Sequence[int], provenance: dict[str, Any] | None,
           answers: bool) -> pd.DataFrame:
    """The replay's table from its rows: metrics, stale metrics, configuration columns."""
    frame = pd.DataFrame(rows, columns=_ROW_COLUMNS + (_ANSWER_COLUMNS if answers else []))
    frame.insert(0, "strategy", label or strategy_label(strategy))
    frame = add_stale_metrics(compute_metrics(frame, ks=ks, budgets=budgets))
    failed_rows = frame["error"].notna()
    if failed_rows.any():  # nothing was measured for a failed probe: no 0 that looks like a miss
        frame.loc[failed_rows, metric_columns(frame)] = float("nan")
    return add_configuration(frame, strategy, dataset, provenance)


def shares_observation(strategy: Strategy) -> frozenset[str]:
    """The strategy's declared ``query_time_params`` (``capabilities()``, validated), or an
    empty set (also for a strategy that reads gold or whose asking changes state).

    A strategy may declare ``query_time_params``: parameters read only by ``retrieve`` and
    ``build_context``, never by ``observe``, on a strategy whose asking changes no state
    (no reinforcement, no forgetting, no LLM call), with a ``set_query_params(**params)``
    that switches them keeping what was observed. ``replay_variants`` relies on it.
    """
    caps = strategy.capabilities()
    declared = caps.query_time_params
    if not declared:
        return frozenset()
    names = set(type(strategy)._param_names())
    if not isinstance(declared, (set, frozenset)) or not set(declared) <= names \
            or not callable(getattr(strategy, "set_query_params", None)):
        raise MemlabError(f"{type(strategy).__name__}.query_time_params must be a set of its parameters "
                          f"({sorted(names)}) with a set_query_params method, got {declared!r}")
    return frozenset(declared) if not caps.uses_gold and caps.asking_changes_nothing else frozenset()


def replay_variants(variants: Sequence[tuple[Strategy, str | None]], dataset: Dataset, *, k_max: int = 10,
                    ks: Sequence[int] = (1, 5, 10), budgets: Sequence[int] = (),
                    provenance: dict[str, Any] | None = None) -> list[pd.DataFrame]:
    """``replay`` of each ``(strategy, label)`` variant, observing each dialogue once.

    The variants differ only in query-time parameters (``shares_observation``): the first
    one's clone observes the dialogue, and at each probe every variant's values are set
    (``set_query_params``) before its retrieve and build_context. Tables are those of
    separate replays (same rows and values; ``latency_ms`` times each variant's own asking).
    """
    first = variants[0][0]
    params = variant_params([strategy for strategy, _ in variants])
    budgets = sorted({_check_budget(b) for b in budgets})
    if k_max < max(ks, default=1):
        k_max = max(ks)
    warm_embedding_caches(first, dataset)
    per_variant: list[list[dict[str, Any]]] = [[] for _ in variants]
    failed = _FailureLimit(default_max_failures(sum(len(d.probes) for d in dataset.dialogues)))
    for dialogue in dataset.dialogues:
        for rows, out in zip(replay_dialogue(first.clone(scope=dialogue.id), dialogue, k_max,
                                             budget=max(budgets, default=0), on_failure=failed,
                                             variants=params), per_variant):
            out.extend(rows)
    return [_frame(rows, strategy, dataset, label, ks, budgets, provenance, False)
            for rows, (strategy, label) in zip(per_variant, variants)]


def variant_params(variants: Sequence[Strategy]) -> list[dict[str, Any]]:
    """Each variant's query-time values (``set_query_params`` arguments), checked: one strategy
    class declaring ``query_time_params``, differing in nothing else."""
    first = variants[0]
    shared = shares_observation(first)
    params = []
    for strategy in variants:
        if type(strategy) is not type(first) or not shared:
            raise MemlabError("replay_variants needs variants of one strategy class declaring query_time_params")
        own = strategy.get_params(deep=False)
        base = first.get_params(deep=False)
        if any(repr(own[k]) != repr(base[k]) for k in own if k not in shared):
            raise MemlabError("replay_variants: variants may differ only in query_time_params "
                              f"{sorted(shared)}")
        params.append({k: own[k] for k in sorted(shared)})
    return params


def _check_budget(b: Any) -> int:
    if isinstance(b, bool) or not isinstance(b, int) or b < 1:
        raise MemlabError(f"token budgets must be positive integers, got {b!r}")
    return b


def warm_embedding_caches(strategy: Strategy, dataset: Dataset, batch_size: int = 2048,
                          progress: bool = False) -> int:
    """``strategy.warm`` with every turn text and, as queries, every question of ``dataset``
    (distinct, in order, ``batch_size`` at a time: large, so that an embedder packing texts into
    big matmuls gets thousands of tokens per call, small enough for a progress bar): a replay feeds turns one at a time, so a strategy may prepare
    in bulk first (a ``CachedEmbedder`` with a file embeds in batches, and every clone, per
    dialogue, sweep point or worker, reads the vectors back). Returns the texts prepared."""
    texts = list(dict.fromkeys(t.retrieval_text for d in dataset.dialogues for t in d.turns()))
    queries = list(dict.fromkeys(p.query for d in dataset.dialogues for p in d.probes))
    bar = progress_bar(len(texts) + len(queries), "warming", "text", progress)
    done = 0
    try:
        # turns as stored texts, questions as queries (e5/bge-style models embed them differently)
        for items, as_query in ((texts, False), (queries, True)):
            for start in range(0, len(items), batch_size):
                batch = items[start:start + batch_size]
                done += strategy.warm([], batch) if as_query else strategy.warm(batch)
                if bar is not None:
                    bar.update(len(batch))
    finally:
        if bar is not None:
            bar.close()
    return done
