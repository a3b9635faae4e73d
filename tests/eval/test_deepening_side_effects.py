"""Deepening a probe's ranked list (``memlab.eval.replay._ranked``: the token-budget doubling
and the session step) must not repeat a query's LLM work nor move the memory's state, and
the LLM steps of a ``RetrievalStrategy`` (query expansion, relevance filter) are charged to
the rows.

"Deepening off" is ``MAX_BUDGET_DEPTH = k_max``: no list goes deeper than the first
``retrieve(k_max)``. The LLM is the real ``OpenAIChat`` client talking HTTP to the loopback
server, which answers memlab's prompts like ``OfflineLLM``; calls and tokens are counted
at the server.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import Any, Callable

import pytest

from memlab import strategies
from memlab.decay import Ebbinghaus
from memlab.eval import load_any
from memlab.eval.replay import replay, replay_dialogue
from memlab.llm import OpenAIChat
from memlab.memories.layered import LongTermMemory
from memlab.llm.cache import ResponseCache
from memlab.offline.loopback import LoopbackServer, OfflineChat, ScriptedChat
from memlab.offline.loopback import _approx_tokens
from memlab.records import MemoryRecord
from memlab.retrieval import (BM25Retriever, DecayRetriever, HyDEExpander, LLMQueryRewriter,
                              LLMRelevanceFilter, MultiQueryExpander)
from memlab.strategies.retrieval import RetrievalStrategy

ROOT = Path(__file__).resolve().parents[2]
K_MAX = 5
BUDGET = 512
# the module, not the function ``memlab.eval.replay`` that ``memlab.eval`` exports under its name
REPLAY = sys.modules["memlab.eval.replay"]


class RecordingChat:
    """Answers like OfflineLLM (or as scripted) and keeps every answer, to count its tokens."""

    def __init__(self) -> None:
        self.scripted = ScriptedChat(fallback=OfflineChat())
        self.answers: list[str] = []

    def __call__(self, request: dict[str, Any]) -> str:
        answer = self.scripted(request)
        self.answers.append(answer)
        return answer


@pytest.fixture(scope="module")
def loopback():
    with LoopbackServer(chat=RecordingChat()) as server:
        yield server


@pytest.fixture()
def server(loopback):
    loopback.requests.clear()
    loopback.chat.answers.clear()
    loopback.chat.scripted.answers.clear()
    return loopback


@pytest.fixture(scope="module")
def dataset():
    return load_any(ROOT / "datasets")


def _llm(server: Any, cache: ResponseCache | None = None) -> OpenAIChat:
    return OpenAIChat(model="loop", base_url=server.base_url, api_key="k", backoff=0.001, timeout=5.0,
                      cache=cache)


def _chat_requests(server: Any) -> list[dict[str, Any]]:
    return [r for r in server.requests if r["path"].endswith("/chat/completions")]


def _deepening(monkeypatch: pytest.MonkeyPatch, on: bool) -> None:
    monkeypatch.setattr(REPLAY, "MAX_BUDGET_DEPTH", 1024 if on else K_MAX)


# candidates=0: the strategy asks its retriever for k hits, so every deeper call is a new search
def multi_query(llm: Any) -> Any:
    return RetrievalStrategy(retriever=BM25Retriever(), expansion=MultiQueryExpander(llm), candidates=0)


def hyde(llm: Any) -> Any:
    return RetrievalStrategy(retriever=BM25Retriever(), expansion=HyDEExpander(llm), candidates=0)


def llm_filter(llm: Any) -> Any:
    return RetrievalStrategy(retriever=BM25Retriever(), selection=LLMRelevanceFilter(llm), candidates=0)


def decayed_multi_query(llm: Any) -> Any:
    # reinforcement bumps the strategy's version between retrieve and build_context
    return RetrievalStrategy(retriever=BM25Retriever(), expansion=MultiQueryExpander(llm), candidates=0,
                             decay=Ebbinghaus(), reinforce="returned")


def layered(llm: Any) -> Any:
    s = strategies.get("layered", llm=llm, embedder=None)
    s.set_params(retrieve_step__expander=MultiQueryExpander(llm),
                 retrieve_step__query_rewriter=LLMQueryRewriter(llm))
    return s


RETRIEVAL_LLM = [multi_query, hyde, llm_filter, decayed_multi_query]


def _replay(server: Any, make: Callable[[Any], Any], dataset: Any, monkeypatch: pytest.MonkeyPatch,
            deep: bool) -> tuple[Any, int]:
    _deepening(monkeypatch, deep)
    server.requests.clear()
    frame = replay(make(_llm(server)), dataset, k_max=K_MAX, ks=(1, K_MAX), budgets=(BUDGET,))
    return frame, len(_chat_requests(server))


@pytest.mark.parametrize("make", RETRIEVAL_LLM, ids=lambda f: f.__name__)
def test_deepening_makes_no_llm_call_of_its_own(server, dataset, monkeypatch, make):
    deep, deep_calls = _replay(server, make, dataset, monkeypatch, deep=True)
    flat, flat_calls = _replay(server, make, dataset, monkeypatch, deep=False)
    assert flat_calls > 0
    assert deep_calls == flat_calls
    # the rows say the same: the calls were made by the same steps for the same probes
    assert deep["llm_calls"].tolist() == flat["llm_calls"].tolist()
    assert deep["llm_prompt_tokens"].tolist() == flat["llm_prompt_tokens"].tolist()


@pytest.mark.parametrize("make", [multi_query, hyde], ids=lambda f: f.__name__)
def test_a_query_is_expanded_once_and_its_list_still_deepened(server, dataset, monkeypatch, make):
    frame, calls = _replay(server, make, dataset, monkeypatch, deep=True)
    assert calls == len(frame)  # one expansion per probe, whatever depth the metrics asked for
    assert frame["retrieved_ids"].map(len).max() > K_MAX  # the deeper calls did run (without the LLM)


@pytest.mark.parametrize("make", RETRIEVAL_LLM, ids=lambda f: f.__name__)
def test_rows_charge_what_the_server_answered(server, dataset, monkeypatch, make):
    frame, calls = _replay(server, make, dataset, monkeypatch, deep=True)
    requests = _chat_requests(server)
    prompt = sum(_approx_tokens(str(m.get("content") or "")) for r in requests for m in r["body"]["messages"])
    completion = sum(_approx_tokens(a) for a in server.chat.answers)
    assert calls > 0
    assert int(frame["llm_calls"].sum()) == calls
    assert int(frame["llm_prompt_tokens"].sum()) == prompt
    assert int(frame["llm_completion_tokens"].sum()) == completion
    assert int(frame["llm_cached_calls"].sum()) == 0


def test_cached_calls_are_counted_at_their_cost(server, dataset, monkeypatch, tmp_path):
    _deepening(monkeypatch, True)
    cache = str(tmp_path / "responses.sqlite3")
    cold = replay(multi_query(_llm(server, ResponseCache(cache))), dataset, k_max=K_MAX, ks=(1, K_MAX))
    server.requests.clear()
    warm = replay(multi_query(_llm(server, ResponseCache(cache))), dataset, k_max=K_MAX, ks=(1, K_MAX))
    assert _chat_requests(server) == []  # every answer came from the cache
    assert warm["llm_calls"].tolist() == cold["llm_calls"].tolist()
    assert warm["llm_prompt_tokens"].tolist() == cold["llm_prompt_tokens"].tolist()
    assert warm["llm_cached_calls"].tolist() == cold["llm_calls"].tolist()
    assert int(cold["llm_cached_calls"].sum()) == 0 and int(cold["llm_calls"].sum()) > 0


def test_filter_format_errors_reach_the_rows(server, dataset, monkeypatch):
    _deepening(monkeypatch, True)
    server.chat.scripted.push("no numbers here, sorry", "still not JSON 2")
    frame = replay(llm_filter(_llm(server)), dataset, k_max=K_MAX, ks=(1, K_MAX))
    assert int(frame["llm_format_errors"].sum()) == 2


# -- state ---------------------------------------------------------------------------------------
def _decay_state(s: RetrievalStrategy) -> dict[str, tuple[float, float, int]]:
    holder = s.retriever if isinstance(s.retriever, DecayRetriever) else s._decay
    return {r.id: tuple(holder.memory_state(r.id).values()) for r in holder.records()}


def _layered_state(s: Any) -> dict[str, tuple[Any, ...]]:
    return {r.id: (r.metadata["access_count"], r.metadata["last_accessed"], r.metadata["strength"])
            for r in s.layers.long_term.records()}


def _states(make: Callable[[], Any], read: Callable[[Any], Any], dataset: Any,
            monkeypatch: pytest.MonkeyPatch, deep: bool) -> tuple[list[Any], int, list[int]]:
    """Per dialogue, the strategy's state after its replay; the longest list; each row's llm_calls."""
    _deepening(monkeypatch, deep)
    states, longest, calls = [], 0, []
    for dialogue in dataset.dialogues:
        s = make().clone(scope=dialogue.id)
        rows = replay_dialogue(s, dialogue, k_max=K_MAX, budget=BUDGET)
        longest = max([longest, *(len(r["retrieved_ids"]) for r in rows)])
        calls += [r["llm_calls"] for r in rows]
        states.append(read(s))
    return states, longest, calls


def user_decay() -> RetrievalStrategy:
    # a retriever that reinforces every hit it returns, handed in by the user
    return RetrievalStrategy(retriever=DecayRetriever(BM25Retriever(), Ebbinghaus(), reinforce="returned"))


def builtin_decay() -> RetrievalStrategy:
    return RetrievalStrategy(retriever=BM25Retriever(), decay=Ebbinghaus(forget_threshold=0.2),
                             reinforce="returned", candidates=0)


@pytest.mark.parametrize("make", [user_decay, builtin_decay], ids=lambda f: f.__name__)
def test_deepening_moves_no_decay_state(dataset, monkeypatch, make):
    deep, longest, _ = _states(make, _decay_state, dataset, monkeypatch, deep=True)
    flat, _, _ = _states(make, _decay_state, dataset, monkeypatch, deep=False)
    assert longest > K_MAX  # the lists were deepened
    assert deep == flat     # strengths, last recalls and access counts as without it


def test_layered_deepening_makes_no_llm_call_and_moves_no_state(server, dataset, monkeypatch):
    """The layered memory with an LLM everywhere (summaries, extraction, rewrite, expansion,
    filter): the same calls at the server, the same rows' cost, the same long-term memory
    (access counts, last access, strengths) with deepening as without."""
    def make() -> Any:
        s = layered(_llm(server))
        s.set_params(long_term=LongTermMemory(decay=Ebbinghaus()))  # touches move strengths too
        return s

    server.requests.clear()
    deep, longest, deep_rows = _states(make, _layered_state, dataset, monkeypatch, deep=True)
    deep_calls = len(_chat_requests(server))
    server.requests.clear()
    flat, _, flat_rows = _states(make, _layered_state, dataset, monkeypatch, deep=False)
    flat_calls = len(_chat_requests(server))
    assert longest > K_MAX
    assert flat_calls > 0 and deep_calls == flat_calls
    assert deep_rows == flat_rows and sum(deep_rows) == deep_calls
    assert deep == flat


# -- peek itself ---------------------------------------------------------------------------------
def _kiwi_turns() -> list[MemoryRecord]:
    return [MemoryRecord("user", f"kiwi note {i} " + "kiwi " * (i % 4), id=f"t{i}", timestamp=1000.0 + 60 * i)
            for i in range(12)]


def test_peek_reinforces_nothing_and_draws_nothing():
    s = RetrievalStrategy(retriever=DecayRetriever(BM25Retriever(), Ebbinghaus(), reinforce="returned"),
                          decay=Ebbinghaus(stochastic=True, seed=7, time_unit=60.0), reinforce="returned")
    for turn in _kiwi_turns():
        s.observe(turn)
    before = (_decay_state(s), s._decay.memory_state("t0"), s.decay._rng.bit_generator.state)
    with s.peek():
        assert s.peeking
        with s.peek():  # nests
            s.retrieve("kiwi", 8, now=5000.0)
        assert s.peeking
        s.retrieve("kiwi", 4, now=5000.0)
    assert not s.peeking
    assert (_decay_state(s), s._decay.memory_state("t0"), s.decay._rng.bit_generator.state) == before
    s.retrieve("kiwi", 4, now=5000.0)  # the plain call reinforces, as before
    assert _decay_state(s) != before[0]


def test_a_strategy_that_cannot_peek_is_not_deepened_for_sessions():
    class Reinforcing(RetrievalStrategy):
        def capabilities(self):  # says its search changes state, and nothing about peek
            return dataclasses.replace(super().capabilities(), search_changes_state=True, honours_peek=False)

    s = Reinforcing(retriever=BM25Retriever())
    dialogue = load_any(ROOT / "datasets").dialogues[0]
    assert max(len(r["retrieved_ids"]) for r in replay_dialogue(s, dialogue, k_max=2)) <= 2
    assert max(len(r["retrieved_ids"]) for r in replay_dialogue(RetrievalStrategy(), dialogue, k_max=2)) > 2


def test_layered_peek_reads_no_buffered_turn_and_keeps_the_probe_memo():
    s = strategies.get("layered", embedder=None)
    s.set_params(update_step__extract_every=100)  # turns wait in the buffer until a plain retrieve
    for turn in _kiwi_turns():
        s.observe(turn)
    assert s._update.pending
    with s.peek():
        s.retrieve("kiwi", 3)
    assert s._update.pending and s._memo is None
    first = [h.id for h in s.retrieve("kiwi", 3)]
    assert not s._update.pending
    memo = s._memo
    with s.peek():
        deeper = [h.id for h in s.retrieve("kiwi", 30)]
    assert s._memo is memo and deeper[:3] == first
