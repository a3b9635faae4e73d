"""LongtermStrategy packs a whole history by walking it from the newest end: same contexts as the creator."""

import itertools
from pathlib import Path

import pytest

from memlab.eval import load_any
from memlab.records import MemoryRecord
from memlab.strategies import LongtermStrategy
from memlab.tokens import ApproxTokenCounter

DATASETS = Path(__file__).resolve().parents[2] / "datasets"


class Reference(LongtermStrategy):
    """Every context built the general way: the whole history through ScoreBasedContextCreator."""

    def _fast_context(self, query):
        raise AssertionError("the reference never takes the fast path")

    def build_context(self, query, *, now=None):
        self._plain = False
        return super().build_context(query, now=now)


def turns():
    records = [t.to_record("d") for d in load_any(DATASETS / "travel_advisor.json").dialogues for t in d.turns()]
    # short and repeated messages: equal costs and equal similarities exercise the ties
    extra = [MemoryRecord("user" if i % 2 else "assistant", text, id=f"x{i}", timestamp=1e9 + i)
             for i, text in enumerate(["ok", "Osaka", "ok", "my sister lives in Osaka", "yes", "ok"] * 4)]
    return records + extra


QUERIES = ["Where does my sister live?", "ok", "budget for the hotel in euros", "zzz unknown words"]


@pytest.mark.parametrize("keep_rate, token_limit, retrieve_limit", list(itertools.product(
    [0.0, 0.9, 1.0], [20, 120, 100000], [0, 3, 8])))
def test_fast_context_equals_the_creator(keep_rate, token_limit, retrieve_limit):
    params = dict(keep_rate=keep_rate, token_limit=token_limit, retrieve_limit=retrieve_limit,
                  token_counter=ApproxTokenCounter())
    fast, ref = LongtermStrategy(**params), Reference(**params)
    taken = []
    original = fast._fast_context
    fast._fast_context = lambda q: taken.append(q) or original(q)
    for n, record in enumerate(turns()):
        fast.observe(record)
        ref.observe(record)
        if n % 7 == 3:
            for query in QUERIES:
                assert fast.build_context(query) == ref.build_context(query)
                assert fast.retrieve(query, 5) == ref.retrieve(query, 5)
    assert len(taken) > 20


def test_tiktoken_counts_and_the_default_configuration():
    fast, ref = LongtermStrategy(), Reference()
    for n, record in enumerate(turns()):
        fast.observe(record)
        ref.observe(record)
        if n % 5 == 0:
            assert fast.build_context(QUERIES[n % 4]) == ref.build_context(QUERIES[n % 4])


@pytest.mark.parametrize("odd", ["system", "duplicate id", "older timestamp", "tool call"])
def test_histories_that_are_not_plain_take_the_general_path(odd):
    from memlab.records import ToolCall

    strategy = LongtermStrategy(token_limit=60, token_counter=ApproxTokenCounter())
    records = turns()[:12]
    bad = {"system": MemoryRecord("system", "be brief", id="sys", timestamp=records[-1].timestamp),
           "duplicate id": MemoryRecord("user", "again", id=records[3].id, timestamp=records[-1].timestamp),
           "older timestamp": MemoryRecord("user", "late", id="late", timestamp=records[0].timestamp - 5),
           "tool call": MemoryRecord("assistant", "", id="call", timestamp=records[-1].timestamp,
                                     tool_calls=[ToolCall("c1", "lookup", "{}")])}[odd]
    for record in records + [bad]:
        strategy.observe(record)
    strategy._fast_context = None  # would fail if called
    ref = Reference(token_limit=60, token_counter=ApproxTokenCounter())
    for record in records + [bad]:
        ref.observe(record)
    assert strategy.build_context("Osaka") == ref.build_context("Osaka")


@pytest.mark.parametrize("seed", range(40))
def test_select_equals_the_creator_with_ties(seed):
    """Raised scores equal to history scores (ties), equal costs, tight budgets: the same records kept."""
    import random

    from memlab.context import ScoreBasedContextCreator
    from memlab.records import ContextRecord
    from memlab.strategies.history_budget import HistoryBudget

    rng = random.Random(seed)
    counter = ApproxTokenCounter()
    keep_rate = rng.choice([0.0, 0.5, 0.8, 1.0])
    history = [MemoryRecord(rng.choice(["user", "assistant"]), "w" * rng.choice([1, 4, 8, 8, 30, 90]),
                            id=f"r{j}", timestamp=float(j // 3)) for j in range(rng.randint(1, 60))]
    n = len(history)
    scores = [float(keep_rate ** (n - 1 - j)) for j in range(n)]
    raised = {}
    for j in rng.sample(range(n), min(n, rng.randint(0, 6))):
        raised[j] = rng.choice([*scores, 1.0, 0.75, 0.5, 0.3, 0.05])
    raised = {j: s for j, s in raised.items() if s > scores[j]}
    limit = rng.choice([5, 12, 20, 40, 80, 200, 2000])
    budget = HistoryBudget(counter)
    kept = budget.select(history, keep_rate, limit, raised)
    records = [ContextRecord(r, raised.get(j, scores[j]), r.timestamp) for j, r in enumerate(history)]
    expected = ScoreBasedContextCreator(counter, token_limit=limit).select(records)
    assert [history[j].id for j in kept] == [c.id for c in expected]
