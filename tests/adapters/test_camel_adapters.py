"""camel_chat_history and camel_longterm: CAMEL's memories driven as its agent drives them."""

from __future__ import annotations

import pickle
import subprocess
import sys

import pytest

from memlab import ConfigError, strategies
from memlab.records import MemoryRecord, Role
from memlab.testing import check_records, check_strategy
from memlab.testing.doubles import KeywordEmbedder, WordCounter

CHECKS = ["is_strategy", "parts_are_parameters", "clone_round_trip", "empty_store", "at_most_k_sorted_ranked",
          "params_unchanged_by_use", "reset_is_fresh", "deterministic", "picklable", "context"]


def test_importing_memlab_imports_no_peer_library() -> None:
    code = ("import sys, memlab, memlab.strategies, memlab.adapters\n"
            "names = memlab.strategies.names()\n"
            "assert {'camel_chat_history', 'camel_longterm', 'langchain_ensemble', 'http_memory'} <= set(names)\n"
            "print(sorted(m for m in ('camel', 'qdrant_client', 'langchain_core', 'langchain_community') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_missing_extra_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "camel", None)  # import camel now raises ImportError
    with pytest.raises(ConfigError, match=r"camel_longterm needs the 'camel' extra .* pip install 'memlab\[camel\]'"):
        strategies.get("camel_longterm")


camel = pytest.importorskip("camel", reason="the camel extra is not installed: pip install 'memlab[camel]'")


@pytest.mark.parametrize("name", ["camel_chat_history", "camel_longterm"])
def test_camel_strategies_pass_the_check_suite(name: str) -> None:
    strategy = strategies.get(name)
    # CAMEL's long-term memory writes the question into qdrant and takes it out: declared
    # as changing on search, so the suite does not ask it twice
    assert check_strategy(strategy) == CHECKS + ["asking_changes_nothing"] * (name == "camel_chat_history")


def _fed(strategy):
    for record in check_records():
        strategy.observe(record)
    return strategy


def test_chat_history_reproduces_camel_scores_and_window() -> None:
    s = _fed(strategies.get("camel_chat_history", window_size=4, keep_rate=0.5))
    hits = s.retrieve("ignored", 10)
    # the question takes one of the 4 window places and scores 0.5; the turns 0.25, 0.125, ...
    assert [(h.id, h.score) for h in hits] == [("D1:12", 0.25), ("D1:11", 0.125), ("D1:10", 0.0625)]
    ctx = s.build_context("What is the budget?")
    assert ctx.record_ids == ["D1:10", "D1:11", "D1:12"]
    assert [m["role"] for m in ctx.messages] == ["assistant", "user", "assistant"]
    assert ctx.messages[1] == {"role": "user", "content": "Please book a window seat on the flight."}
    # the question was rolled back: the memory holds the dialogue only
    with pytest.warns(UserWarning, match=r"window size limit \(4\) reached"):  # CAMEL's own warning
        assert len(s._camel().retrieve()) == 4
    assert s.retrieve("x", 1)[0].id == "D1:12"


def test_camel_context_ignores_token_limit() -> None:
    counter = WordCounter()
    s = _fed(strategies.get("camel_chat_history", window_size=None, token_limit=5,
                            token_counter=counter))
    ctx = s.build_context("What is the budget?")
    assert len(ctx.record_ids) == 12
    expected = counter.count_messages(ctx.messages)
    assert ctx.token_count == expected and expected > 5 * 10


def test_longterm_self_recall_and_duplicate_question() -> None:
    vocab = ("tea", "coffee", "osaka", "budget")
    s = strategies.get("camel_longterm", retrieve_limit=2, embedder=KeywordEmbedder(vocab=vocab))
    _fed(s)
    question = "Is it tea or coffee?"
    ctx = s.build_context(question)
    texts = [m["content"] for m in ctx.messages]
    # CAMEL's memory recalls the question itself (one of the 2 recall slots) and puts it in
    # the context; the answer step appends it once more, as CAMEL's agent sends it
    assert texts[-1] == question and texts.count(question) == 1
    # the other slot: the nearest turn (cosine with [1, 1, 0, 0]) appears twice (recall + history)
    real = s.retrieve(question, 1)[0]
    assert real.id == "D1:9"  # "switched from coffee to green tea": tea 1, coffee 1 -> cosine 1.0
    assert real.score == pytest.approx(1.0, abs=1e-6)
    assert texts.count("Actually I switched from coffee to green tea last month.") == 2
    assert len(ctx.messages) == 12 + 2  # whole history (no budget) + 2 recalls, question's history copy out
    assert ctx.record_ids == [r.id for r in check_records()]


def test_longterm_retrieve_matches_memlab_longterm_ranking() -> None:
    # memlab's vector-recall LongtermStrategy (the ``longterm`` built-in recalls with a hybrid instead)
    from memlab.embeddings.hashing import HashingEmbedder
    from memlab.strategies.memory import LongtermStrategy

    theirs = _fed(strategies.get("camel_longterm"))
    ours = _fed(LongtermStrategy(embedder=HashingEmbedder()))
    for query in ["Where does the sister live?", "What is the budget?", "coffee in the morning"]:
        a, b = theirs.retrieve(query, 5), ours.retrieve(query, 5)
        assert [h.score for h in a] == pytest.approx([h.score for h in b], abs=1e-5)
        assert [h.id for h in a][:2] == [h.id for h in b][:2]


def test_pickled_strategy_rebuilds_camel_lazily() -> None:
    s = _fed(strategies.get("camel_longterm"))
    before = s.build_context("Where does the sister live?")
    restored = pickle.loads(pickle.dumps(s))
    assert restored._memory is None
    after = restored.build_context("Where does the sister live?")
    assert after.messages == before.messages and after.token_count == before.token_count


def test_bad_parameters_are_named() -> None:
    with pytest.raises(ValueError, match=r"CamelLongtermStrategy parameter 'keep_rate': expected a number >= 0 and <= 1, got 1.5"):
        strategies.get("camel_longterm", keep_rate=1.5)
    with pytest.raises(ConfigError, match=r"CamelChatHistoryStrategy parameter 'window_size': expected an int >= 0 or None, got -1"):
        strategies.get("camel_chat_history", window_size=-1)
    with pytest.raises(ConfigError, match=r"CamelLongtermStrategy parameter 'retrieve_limit': expected an int >= 0, got 'x'"):
        strategies.get("camel_longterm", retrieve_limit="x")


def test_tool_turns_are_refused_with_the_record_named() -> None:
    s = strategies.get("camel_longterm")
    with pytest.raises(Exception, match=r"record 't' has role 'tool'"):
        s.observe(MemoryRecord(Role.TOOL, "42", id="t", tool_call_id="c1"))
