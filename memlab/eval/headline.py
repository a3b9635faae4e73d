"""Rankings and verdicts phrased from computed values, never typed.

A comparison is stated from a paired, dialogue-clustered test (``memlab.eval.compare``):

- ``phrase_comparison(row)``: one sentence from a ``compare`` / ``pairwise`` row:
  "a 0.960 vs b 0.935 on recall@256tok (diff +0.025, 95% CI [+0.000, +0.062], p = 1.000,
  71 probes in 9 dialogues, 3 wins / 68 ties / 0 losses): no significant difference".
  A difference is called significant when its p-value (``p_holm`` when the row has it) is
  below ``alpha``; the sign of ``diff`` names the higher side.
- ``headline(results, metric)``: the strategies ranked by the mean of ``metric`` with their
  cluster-bootstrap CIs, every pair of ranked strategies compared (``pairwise``, Holm-adjusted),
  the pairs that differ, and a plain sentence when the data cannot separate them. Reference
  strategies (``BOUNDS``: the retrieval ceiling and the everything-in-context cost) are
  listed apart and left out of the pairs: they bound the others, they do not compete.
- ``headline_metric(columns)``: the token-matched metric a headline ranks by.

With C dialogues the exact sign-flip test cannot give p below 2 / 2^C, so with m pairs Holm's
smallest adjusted p is at least m * 2 / 2^C; when that is not below ``alpha`` the headline says
that no pair can be separated on this data, and why.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from ..base import MemlabError
from . import stats

#: Strategies that bound the others (ceiling of retrieval, cost of handing over everything).
BOUNDS = ("oracle", "full_context")
ALPHA = 0.05
#: Above this many ranked strategies the headline compares the leader with each other one only.
MAX_ALL_PAIRS = 20


def headline_metric(columns: Iterable[str], metric: str = "recall") -> str:
    """``<metric>@Btok`` at the middle token budget (budgets sorted, index (n - 1) // 2: 256 of
    128 / 256 / 512); without budget columns ``<metric>@5``, else the largest ``<metric>@k``."""
    cols = [str(c) for c in columns]
    budgets = sorted(int(m.group(1)) for c in cols if (m := re.fullmatch(rf"{re.escape(metric)}@(\d+)tok", c)))
    if budgets:
        return f"{metric}@{budgets[(len(budgets) - 1) // 2]}tok"
    ks = sorted(int(m.group(1)) for c in cols if (m := re.fullmatch(rf"{re.escape(metric)}@(\d+)", c)))
    if not ks:
        raise MemlabError(f"headline: no {metric}@Btok or {metric}@k column; columns: {', '.join(cols)}")
    return f"{metric}@5" if 5 in ks else f"{metric}@{ks[-1]}"


def _get(row: Any, key: str) -> Any:
    return row[key] if isinstance(row, Mapping) or isinstance(row, pd.Series) else getattr(row, key)


def _has(row: Any, key: str) -> bool:
    if isinstance(row, Mapping):
        return key in row
    if isinstance(row, pd.Series):
        return key in row.index
    return hasattr(row, key)


def significant(row: Any, alpha: float = ALPHA) -> bool:
    """Whether a comparison row's p-value (``p_holm`` when present) is below ``alpha``."""
    p = float(_get(row, "p_holm") if _has(row, "p_holm") else _get(row, "p_value"))
    return not math.isnan(p) and p < alpha


def verdict(row: Any, alpha: float = ALPHA) -> str:
    """"<a> higher" / "<b> higher" when significant, else "no significant difference"."""
    if not significant(row, alpha):
        return "no significant difference"
    return f"{_get(row, 'a') if float(_get(row, 'diff')) > 0 else _get(row, 'b')} higher"


def _dialogues(n: int) -> str:
    return "1 dialogue" if n == 1 else f"{n} dialogues"


def phrase_comparison(row: Any, alpha: float = ALPHA, digits: int = 3) -> str:
    """One sentence stating a paired comparison row (a ``Comparison``, a ``compare`` /
    ``pairwise`` row or a mapping with the same keys) and its verdict at ``alpha``."""
    f = f".{digits}f"
    p_key = "p_holm" if _has(row, "p_holm") else "p_value"
    p_name = "Holm-adjusted p" if p_key == "p_holm" else "p"
    parts = [f"diff {float(_get(row, 'diff')) + 0.0:+{f}}",  # + 0.0: no "-0.000" from a negated zero
             f"95% CI [{float(_get(row, 'ci_low')) + 0.0:+{f}}, {float(_get(row, 'ci_high')) + 0.0:+{f}}]",
             f"{p_name} = {float(_get(row, p_key)):.3f}",
             f"{int(_get(row, 'n_probes'))} probes in {_dialogues(int(_get(row, 'n_dialogues')))}"]
    if _has(row, "wins"):
        parts.append(f"{int(_get(row, 'wins'))} wins / {int(_get(row, 'ties'))} ties / "
                     f"{int(_get(row, 'losses'))} losses")
    return (f"{_get(row, 'a')} {float(_get(row, 'mean_a')):{f}} vs {_get(row, 'b')} "
            f"{float(_get(row, 'mean_b')):{f}} on {_get(row, 'metric')} ({', '.join(parts)}): "
            f"{verdict(row, alpha)}")


def p_floor(n_dialogues: int, n_resamples: int = 10_000) -> float:
    """The smallest two-sided p-value the dialogue sign-flip test can give: 2 / 2^C (exact,
    C <= ``stats.EXACT_MAX_CLUSTERS``), else 1 / (1 + n_resamples)."""
    if n_dialogues <= stats.EXACT_MAX_CLUSTERS:
        return 2.0 / 2 ** n_dialogues if n_dialogues >= 1 else 1.0
    return 1.0 / (1 + n_resamples)


def rank(results: pd.DataFrame, metric: str, strategy_col: str = "strategy",
         references: Sequence[str] = BOUNDS, cluster: str = "dialogue_id",
         n_resamples: int = stats.N_RESAMPLES, confidence: float = stats.CONFIDENCE,
         seed: int = stats.SEED) -> pd.DataFrame:
    """One row per strategy: ``rank`` (1 = highest mean; "ref" for a reference), strategy,
    ``metric`` mean, ``ci_low`` / ``ci_high`` (cluster bootstrap over ``cluster``), n_scored.
    Ranked strategies by mean descending (ties by name), then the references."""
    from .metrics import summarize

    summary = summarize(results, by=[strategy_col], metrics=[metric], ci=True, cluster=cluster,
                        n_resamples=n_resamples, confidence=confidence, seed=seed)
    table = pd.DataFrame({"strategy": summary[strategy_col].astype(str), metric: summary[metric].astype(float),
                          "ci_low": summary[f"{metric}_ci_low"].astype(float),
                          "ci_high": summary[f"{metric}_ci_high"].astype(float),
                          "n_scored": summary["n_scored"].astype(int)})
    table["_ref"] = table["strategy"].isin(list(references))
    table["_key"] = -table[metric].fillna(-math.inf)
    table = table.sort_values(["_ref", "_key", "strategy"], kind="stable").reset_index(drop=True)
    ranks = []
    n = 0
    for is_ref in table["_ref"]:
        n += 0 if is_ref else 1
        ranks.append("ref" if is_ref else str(n))
    table.insert(0, "rank", ranks)
    return table.drop(columns=["_ref", "_key"])


@dataclass
class Headline:
    """A ranked headline: ``ranking`` (``rank``), ``pairs`` (``pairwise`` rows with ``p_holm``)."""

    metric: str
    ranking: pd.DataFrame
    pairs: pd.DataFrame
    alpha: float = ALPHA

    @property
    def different(self) -> pd.DataFrame:
        """The pairs whose Holm-adjusted p is below ``alpha``, oriented higher side first."""
        if self.pairs.empty:
            return self.pairs
        rows = []
        for _, row in self.pairs[self.pairs["p_holm"] < self.alpha].iterrows():
            if row["diff"] < 0:
                row = row.rename({"a": "b", "b": "a", "mean_a": "mean_b", "mean_b": "mean_a",
                                  "wins": "losses", "losses": "wins", "ci_low": "ci_high", "ci_high": "ci_low"})
                row["diff"], row["ci_low"], row["ci_high"] = -row["diff"], -row["ci_low"], -row["ci_high"]
            rows.append(row)
        return pd.DataFrame(rows, columns=self.pairs.columns).reset_index(drop=True)

    def sentences(self) -> list[str]:
        """The headline in plain sentences, from the computed values."""
        ranked = self.ranking[self.ranking["rank"] != "ref"]
        if ranked.empty:
            return [f"No strategy to rank on {self.metric}."]
        leader = ranked.iloc[0]
        top = ranked[ranked[self.metric] == leader[self.metric]]
        if len(top) == 1:
            out = [f"Highest mean {self.metric}: {leader['strategy']} {leader[self.metric]:.3f} "
                   f"(95% CI [{leader['ci_low']:.3f}, {leader['ci_high']:.3f}])."]
        else:
            out = [f"Highest mean {self.metric}, shared by {len(top)} strategies: "
                   + ", ".join(f"{r['strategy']} {r[self.metric]:.3f} (95% CI [{r['ci_low']:.3f}, {r['ci_high']:.3f}])"
                               for _, r in top.iterrows()) + "."]
        m = len(self.pairs)
        if m == 0:
            return out
        different = self.different
        if different.empty:
            n_dialogues = int(self.pairs["n_dialogues"].min())
            floor = p_floor(n_dialogues)
            text = (f"No pair of strategies differs on {self.metric} after Holm correction over {m} "
                    f"paired comparisons (alpha {self.alpha:g}): the data cannot separate them")
            if m * floor >= self.alpha:
                text += (f"; with {n_dialogues} dialogues the smallest possible p is 2/2^{n_dialogues} = "
                         f"{floor:.4f}, so after Holm over {m} pairs none could reach {self.alpha:g}: "
                         f"separating them needs more dialogues")
            raw = int((self.pairs["p_value"] < self.alpha).sum())
            if raw:
                text += f" (before correction, {raw} of the {m} pairs have p < {self.alpha:g})"
            out.append(text + ".")
            return out
        out.append(f"{len(different)} of {m} pairs differ on {self.metric} after Holm correction "
                   f"(alpha {self.alpha:g}): "
                   + "; ".join(f"{r['a']} > {r['b']} (diff {r['diff']:+.3f}, p_holm {r['p_holm']:.3f})"
                               for _, r in different.iterrows()) + ".")
        tied = [str(s) for s in ranked["strategy"].iloc[1:]
                if not ((different["a"] == leader["strategy"]) & (different["b"] == s)).any()]
        if tied:
            out.append(f"The data cannot separate {leader['strategy']} from {', '.join(tied)}.")
        else:
            out.append(f"{leader['strategy']} is above every other ranked strategy.")
        return out

    def to_markdown(self) -> str:
        """The ranking table, the sentences, and the pairs that differ (if any)."""
        from .compare import to_markdown

        lines = [f"## Headline: {self.metric}", "",
                 f"Strategies ranked by mean {self.metric} (95% dialogue-clustered bootstrap CI); "
                 f"rank \"ref\": a reference ({', '.join(BOUNDS)}), not compared.", "",
                 to_markdown(self.ranking), ""]
        lines += [f"- {s}" for s in self.sentences()]
        different = self.different
        if not different.empty:
            lines += ["", to_markdown(different[["a", "b", "mean_a", "mean_b", "diff", "ci_low", "ci_high",
                                                 "p_value", "p_holm"]])]
        return "\n".join(lines)


def headline(results: pd.DataFrame, metric: str | None = None, strategy_col: str = "strategy",
             references: Sequence[str] = BOUNDS, alpha: float = ALPHA,
             n_resamples: int = stats.N_RESAMPLES, seed: int = stats.SEED,
             max_all_pairs: int = MAX_ALL_PAIRS) -> Headline:
    """Rank the strategies of per-probe ``results`` on ``metric`` (default ``headline_metric``)
    and compare them pairwise (every pair up to ``max_all_pairs`` ranked strategies, else the
    leader with each other one), Holm-adjusted over the pairs compared."""
    from dataclasses import asdict

    from .compare import Comparison, compare_pair

    metric = metric or headline_metric(results.columns)
    ranking = rank(results, metric, strategy_col, references, n_resamples=n_resamples, seed=seed)
    names = ranking.loc[(ranking["rank"] != "ref") & ranking[metric].notna(), "strategy"].tolist()
    if len(names) <= max_all_pairs:
        pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1:]]
    else:
        pairs = [(names[0], b) for b in names[1:]]
    rows = [asdict(compare_pair(results, a, b, metric, strategy_col, n_resamples=n_resamples, seed=seed))
            for a, b in pairs]
    table = pd.DataFrame(rows, columns=list(Comparison.__dataclass_fields__))
    table.insert(table.columns.get_loc("p_value") + 1, "p_holm", stats.holm(table["p_value"].tolist()))
    return Headline(metric=metric, ranking=ranking, pairs=table, alpha=alpha)


def ranked_summary(summary: pd.DataFrame, metric: str, columns: Sequence[str] = (),
                   strategy_col: str = "strategy", references: Sequence[str] = BOUNDS,
                   ci: Sequence[str] | None = None, digits: int = 3) -> pd.DataFrame:
    """A summary table (``summarize(..., ci=True)``) ranked by ``metric`` (references last):
    ``rank``, strategy, ``metric`` and the other ``columns``; each metric in ``ci`` (default:
    ``metric``) is followed by its interval as a ``<metric> 95% CI`` text column."""
    ci = [metric] if ci is None else list(ci)
    frame = summary.copy()
    ref = frame[strategy_col].astype(str).isin(list(references))
    frame = frame.assign(_ref=ref, _key=-frame[metric].astype(float).fillna(-math.inf))
    frame = frame.sort_values(["_ref", "_key", strategy_col], kind="stable").reset_index(drop=True)
    counter = iter(range(1, len(frame) + 1))
    frame.insert(0, "rank", ["ref" if r else str(next(counter)) for r in frame["_ref"]])
    out = frame[["rank", strategy_col]].copy()
    for col in [metric, *[c for c in columns if c != metric]]:
        if col not in frame.columns:
            continue
        out[col] = frame[col]
        if col in ci and f"{col}_ci_low" in frame.columns:
            out[f"{col} 95% CI"] = [f"[{lo:.{digits}f}, {hi:.{digits}f}]" for lo, hi in
                                    zip(frame[f"{col}_ci_low"].astype(float), frame[f"{col}_ci_high"].astype(float))]
    return out


__all__ = ["ALPHA", "Headline", "BOUNDS", "headline", "headline_metric", "p_floor", "phrase_comparison",
           "rank", "ranked_summary", "significant", "verdict"]
