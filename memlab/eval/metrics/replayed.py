"""Metrics whose columns the replay writes itself (``compute_metrics`` does not compute
them), registered so that summaries, comparisons, sweeps and plots know them.

- ``stale_in_context``, ``stale_only``: ``memlab.eval.lifecycle`` (NaN for a probe naming
  no stale turn);
- ``answer_f1``, ``judge_correct``: ``memlab.eval.answers``, when the replay is given an
  answerer (and a judge);
- ``locomo_f1``: LoCoMo's official score (``memlab.eval.locomo_score``), beside ``answer_f1``
  for probes with a LoCoMo category; adversarial (category 5) questions are scored by
  LoCoMo's rule: 1 when the answer contains "not mentioned" or "no information available".
"""

from __future__ import annotations

from .registry import register_metric, registered

for _name, _unscored in (("stale_in_context", "only probes that name stale evidence are scored"),
                         ("stale_only", "only probes that name stale evidence are scored")):
    register_metric(_name, view="lifecycle", computed_by="memlab.eval.lifecycle", unscored=_unscored)
register_metric("answer_f1", view="answer", computed_by="memlab.eval.answers",
                unscored="needs --answer-llm and a probe with a gold answer")
register_metric("locomo_f1", view="answer", computed_by="memlab.eval.locomo_score",
                unscored="needs --answer-llm and a LoCoMo question (category 1..5; 1..4 with a gold answer)",
                doc="LoCoMo's official QA score (task_eval/evaluation.py); category 5 (adversarial): 1 when the "
                    "answer contains 'not mentioned' or 'no information available', else 0")
register_metric("judge_correct", view="answer", computed_by="memlab.eval.answers",
                unscored="needs --judge-llm and a probe with a gold answer",
                doc="1 when the LLM judge labels the answer CORRECT against the gold answer, 0 when WRONG "
                    "(the judge's prompt set and model are recorded beside it; memlab eval calibrates the "
                    "judge first and refuses one that fails the gate)")

#: Stale-fact columns the replay adds (``memlab.eval.lifecycle``; NaN for probes naming no stale turn).
LIFECYCLE_METRICS = tuple(m.name for m in registered(view="lifecycle"))
#: Answer-quality columns the replay adds when it is given an answerer (memlab.eval.answers).
ANSWER_METRICS = tuple(m.name for m in registered(view="answer"))
