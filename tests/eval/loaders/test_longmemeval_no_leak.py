"""No published LongMemEval session id, nor anything carrying its label, reaches a strategy.

LongMemEval's evidence sessions have ids starting ``answer_`` (its own code marks gold that
way), so an index or a prompt that saw them could rank by id: on S dev, sorting the turns by
their published session id puts every answer session first (recall_all@5 near 1). memlab's
loader replaces each id by a neutral hash. These tests look at everything a strategy is shown
(every field of every record it observes, every query, with the real S dev data) and rank by
those strings to show they carry no label.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from memlab.eval import replay
from memlab.eval.loaders import load_dataset
from memlab.eval.loaders.checks import iter_json_array
from memlab.eval.paths import LONGMEMEVAL_S, longmemeval_path
from memlab.records import Hit, MemoryRecord
from memlab.strategy import Context, Strategy

N_QUESTIONS = 25


class ShownStrings(Strategy):
    """Ranks the turns it observed by every string it was shown about them (ids, metadata):
    a strategy that reads labels wherever they are, and keeps what it saw."""

    seen: list[str] = []   # class-level: the replay clones the strategy

    def __init__(self, descending: bool = False):
        self.descending = descending
        self.reset()

    def reset(self) -> None:
        self._records: list[tuple[str, MemoryRecord]] = []

    def observe(self, record: MemoryRecord) -> None:
        self._records.append((self._key(record), record))
        ShownStrings.seen.append(json.dumps({"id": record.id, "metadata": record.metadata, "role": str(record.role),
                                             "content": record.content}, default=str))

    def _key(self, r: MemoryRecord) -> str:
        return json.dumps({"id": r.id, "metadata": r.metadata}, sort_keys=True, default=str)

    def retrieve(self, query: str, k: int = 5, *, where: Any = None, now: float | None = None) -> list[Hit]:
        ShownStrings.seen.append(query)
        # LongMemEval's own gold rule ("answer" in the id) first, then the strings in order
        ranked = [r for _, r in sorted(sorted(self._records, key=lambda kr: kr[0], reverse=self.descending),
                                       key=lambda kr: "answer" not in kr[0])[:k]]
        return [Hit(r, 1.0, r.timestamp, rank=n, components={}) for n, r in enumerate(ranked, start=1)]

    def build_context(self, query: str, *, now: float | None = None) -> Context:
        return Context.of([], None)


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    path = longmemeval_path(LONGMEMEVAL_S)
    if path is None:
        pytest.skip("LongMemEval S dev is not here (../shared/datasets/longmemeval or MEMLAB_LONGMEMEVAL)")
    entries = []
    for entry in iter_json_array(str(path)):
        entries.append(entry)
        if len(entries) == N_QUESTIONS:
            break
    out = tmp_path_factory.mktemp("leak") / "s.json"
    out.write_text(json.dumps(entries), encoding="utf-8")
    return entries, load_dataset(str(out), format="longmemeval")


def test_ranking_by_published_ids_would_find_every_answer_session(sample):
    """The leak is real: ranked by LongMemEval's gold rule on the published session id alone
    ("answer" in it), every answer session comes first."""
    entries, _ = sample
    found = []
    for e in entries:
        if e["question_id"].endswith("_abs"):
            continue
        first = sorted(dict.fromkeys(e["haystack_session_ids"]), key=lambda sid: "answer" not in sid)[:5]
        found.append(set(e["answer_session_ids"]) <= set(first))
    assert sum(found) / len(found) > 0.9


@pytest.mark.parametrize("descending", [False, True])
def test_no_published_session_id_reaches_a_strategy_and_ids_carry_no_label(sample, descending):
    entries, dataset = sample
    ShownStrings.seen = []
    rows = replay(ShownStrings(descending=descending), dataset, ks=(5,))
    published = {sid for e in entries for sid in e["haystack_session_ids"]}
    shown = "\n".join(ShownStrings.seen)
    assert ShownStrings.seen and "answer_" not in shown and "noans" not in shown
    # no id, nor its tail after the prefix (answer_4be1b6b4_2 -> 4be1b6b4_2), appears anywhere shown
    tails = {sid.split("_", 1)[1] for sid in published if "_" in sid}
    assert not [s for s in published | tails if len(s) >= 8 and s in shown]
    # ranked by every string it was shown, a strategy finds answer sessions no better than the
    # lexical baseline does, far from the ~0.99 a leak gives
    assert rows["lme_recall_all@5"].mean() < 0.5
