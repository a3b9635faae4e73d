"""Reference strategies: oracle (the gold evidence as context) and full_context (truncated from the oldest)."""

from __future__ import annotations

import pytest

from memlab import strategies
from memlab.base import ConfigError
from memlab.eval.replay import replay
from memlab.records import MemoryRecord, Role
from memlab.testing import check_strategy
from memlab.tokens import ApproxTokenCounter


@pytest.mark.parametrize("name", ["oracle", "full_context"])
def test_reference_strategies_pass_the_generic_checks(name):
    assert "context" in check_strategy(strategies.get(name))


def test_oracle_context_is_the_gold_seen_so_far(tiny):
    rows = replay(strategies.get("oracle"), tiny, ks=(1, 5)).set_index("probe_id")
    # every scored probe: its gold, and nothing else, already observed
    assert rows["context_ids"].to_dict() == {"p_mid": ["t1"], "p_end": ["t5"], "p_none": [], "p1": ["t3"]}
    assert rows.loc[["p_mid", "p_end", "p1"], ["recall@1", "context_recall", "context_relevance_ratio"]] \
        .to_numpy().tolist() == [[1.0, 1.0, 1.0]] * 3
    assert rows.loc["p_none", "context_tokens"] == 0


def test_the_harness_shows_the_probe_only_to_strategies_that_use_gold(tiny):
    seen = []

    class Spy(type(strategies.get("bm25"))):
        def see_probe(self, probe):
            seen.append(probe.id)

    replay(Spy(), tiny, ks=(1,))
    assert seen == []                         # uses_gold is False: never shown the gold
    Spy.uses_gold = True
    replay(Spy(), tiny, ks=(1,))
    assert seen == ["p_mid", "p_end", "p_none", "p1"]


def _turns(*texts):
    return [MemoryRecord(Role.USER, t, id=f"t{i}", timestamp=float(i)) for i, t in enumerate(texts)]


def test_full_context_truncates_from_the_oldest():
    # one token per character: each turn costs 3 + len("user") + len(text) = 7 + len(text)
    s = strategies.get("full_context", token_limit=3 + 3 * 10, token_counter=ApproxTokenCounter(chars_per_token=1))
    for record in _turns("aaa", "bbb", "cccccccccccccccccccc", "ddd", "eee"):
        s.observe(record)
    ctx = s.build_context("q")
    assert ctx.record_ids == ["t3", "t4"]     # t2 (27) overflows the 16 left: it and all older go
    assert ctx.token_count == 3 + 10 + 10
    assert [h.id for h in s.retrieve("q", 5)] == ["t4", "t3"]   # newest first
    roomy = s.clone().set_params(token_limit=1000)
    for record in _turns("aaa", "bbb"):
        roomy.observe(record)
    assert roomy.build_context("q").record_ids == ["t0", "t1"]
    with pytest.raises(ConfigError, match="FullContextStrategy parameter 'token_limit': expected an int >= 1, got 0"):
        strategies.get("full_context", token_limit=0)
