"""The working-memory steps: expanders (also as retrieval-layer QueryExpanders), Retrieve,
Filter, Load, Answer and Update; offline and through the loopback server."""

from __future__ import annotations

import asyncio

import pytest

from memlab.base import ConfigError
from memlab.offline import OfflineLLM
from memlab.memories.layered import (
    Answer,
    Filter,
    HyDEExpander,
    Layers,
    LLMQueryRewriter,
    LLMRelevanceFilter,
    Load,
    LongTermMemory,
    LongTermRetriever,
    MultiQueryExpander,
    Retrieve,
    RuleBasedExtractor,
    ShortTermMemory,
    Update,
    WorkingState,
)
from memlab.memories.layered.steps.load import DEFAULT_SYSTEM_PROMPT, MEMORY_HEADER
from memlab.records import MemoryRecord
from memlab.retrieval.bm25 import BM25Retriever
from memlab.retrieval.expansion import ExpansionRetriever, PseudoRelevanceFeedback, QueryExpander
from memlab.retrieval.selection import MMRSelector
from memlab.tokens import ApproxTokenCounter

DAY = 86400.0


def layers(*memories: tuple[str, float, list[str]]) -> Layers:
    ltm = LongTermMemory()
    for content, ts, sources in memories:
        ltm.add(content, timestamp=ts, source_ids=sources)
    return Layers(ShortTermMemory(token_counter=ApproxTokenCounter()), ltm, RuleBasedExtractor())


MEMS = (("Ann lives in Paris", DAY, ["D1:1"]), ("Ann loves green tea", 2 * DAY, ["D1:2"]),
        ("Bob plays chess", 3 * DAY, ["D1:3"]))


def test_llm_expanders_are_query_expanders_for_the_retrieval_layer():
    llm = OfflineLLM(token_counter=ApproxTokenCounter())
    multi, hyde = MultiQueryExpander(llm, n=3), HyDEExpander(llm)
    assert isinstance(multi, QueryExpander) and isinstance(hyde, QueryExpander)
    retriever = ExpansionRetriever(BM25Retriever(), multi)
    retriever.add([MemoryRecord("user", "Ann lives in Paris", id="a"), MemoryRecord("user", "Bob likes chess", id="b")])
    assert retriever.queries("Where does Ann live?") == \
        ["Where does Ann live?", "ann live", "anns lives", "ann live anns lives"]
    assert [h.id for h in retriever.search("Where does Ann live?", 2)] == ["a"]
    assert hyde.expand("Where does Ann live?", retriever) == ["Where does Ann live?", "ann live anns lives."]
    # retriever.search reuses the expansion queries() made: one LLM call per query
    assert multi.usage.calls == 1 and hyde.usage.calls == 1
    retriever.add([MemoryRecord("user", "Cy lives in Rome", id="c")])  # a new index: expanded anew
    assert [h.id for h in retriever.search("Where does Ann live?", 2)][0] == "a"
    assert multi.usage.calls == 2


def test_multi_query_parsing_through_loopback(server, chat_llm):
    server.chat.push("1. alpha\n2. beta\nWhere is it?\n- beta\n3. gamma\n4. delta")
    multi = MultiQueryExpander(chat_llm, n=3)
    assert multi.expand("Where is it?") == ["Where is it?", "alpha", "beta", "gamma"]
    body = server.requests[0]["body"]["messages"]
    assert body[0]["content"].startswith("memlab-task: expand") and "## Count\n3" in body[1]["content"]
    server.chat.push("Ann lives in Paris.")
    assert asyncio.run(HyDEExpander(chat_llm).aexpand("q")) == ["q", "Ann lives in Paris."]


def test_retrieve_is_skipped_without_llm_calls_when_long_term_is_empty(server, chat_llm):
    step = Retrieve(query_rewriter=LLMQueryRewriter(chat_llm), expander=MultiQueryExpander(chat_llm))
    state = step.run(WorkingState("Where does Ann live?"), layers())
    assert state.retrieved == [] and state.trace == ["retrieve: skipped (long-term memory empty)"]
    assert server.requests == [] and step.usage.calls == 0


def test_retrieve_rewrites_expands_and_fuses_with_rrf(server, chat_llm):
    lay = layers(*MEMS)
    server.chat.push("Ann tea", "chess\nParis")  # rewrite, then two expansions
    step = Retrieve(query_rewriter=LLMQueryRewriter(chat_llm), expander=MultiQueryExpander(chat_llm, n=2), k=3)
    state = step.run(WorkingState("What does she drink?", now=3 * DAY), lay)
    assert state.query == "Ann tea" and state.queries == ["Ann tea", "chess", "Paris"]
    # per-query ranks: "Ann tea" -> tea 1, Paris 2; "chess" -> chess 1; "Paris" -> Paris 1
    # RRF (k=60): Paris 1/62 + 1/61, tea 1/61, chess 1/61 (ties: first seen)
    assert [h.record.content for h in state.retrieved] == ["Ann lives in Paris", "Ann loves green tea",
                                                           "Bob plays chess"]
    assert [h.score for h in state.retrieved] == pytest.approx([1 / 62 + 1 / 61, 1 / 61, 1 / 61])
    top = state.retrieved[0].components
    assert top["query_2"]["rank"] == 1 and top["fusion"]["rank"] == 1
    assert step.usage.calls == 2
    assert lay.long_term.get(state.retrieved[0].id).metadata["access_count"] == 0  # retrieval does not reinforce


def test_retrieve_accepts_retrieval_layer_expanders():
    lay = layers(*MEMS)
    step = Retrieve(expander=PseudoRelevanceFeedback(fb_docs=1, fb_terms=4))
    state = step.run(WorkingState("Ann Paris"), lay)
    assert len(state.queries) == 2 and state.retrieved[0].record.content == "Ann lives in Paris"
    assert len(LongTermRetriever(lay.long_term)) == 3


class TwoQueries(QueryExpander):
    def expand(self, query, retriever, *, where=None, now=None):
        return [query, "chess"]


def test_retrieve_weights_queries_as_the_expansion_retriever_does():
    from memlab.retrieval.fusion import RRF

    lay = layers(*MEMS)
    # weight 1 for the question, 3 for the expansion: chess (1/61 * 3) beats Paris (1/61)
    state = Retrieve(expander=TwoQueries(), fusion=RRF(weights=[1.0, 3.0, 5.0]), k=2).run(
        WorkingState("Ann Paris"), lay)
    assert [h.record.content for h in state.retrieved][0] == "Bob plays chess"
    assert state.retrieved[0].score == pytest.approx(3 / 61)
    with pytest.raises(ConfigError, match=r"TwoQueries returned 2 queries but RRF weights=\[1.0\] has only 1"):
        Retrieve(expander=TwoQueries(), fusion=RRF(weights=[1.0])).run(WorkingState("Ann Paris"), lay)


def test_filter_steps(server, chat_llm):
    lay = layers(*MEMS)
    retrieved = Retrieve(k=3).run(WorkingState("Ann Paris tea chess"), lay).retrieved
    skipped = Filter(llm_filter=LLMRelevanceFilter(chat_llm)).run(WorkingState("q"), lay)
    assert skipped.selected == [] and skipped.trace == ["filter: skipped (nothing retrieved)"] and not server.requests
    server.chat.push('{"relevant": [3, 1]}')
    state = Filter(llm_filter=LLMRelevanceFilter(chat_llm), k=5).run(
        WorkingState("q", retrieved=list(retrieved)), lay)
    # kept in the retriever's order, ranks renumbered
    assert [h.id for h in state.selected] == [retrieved[0].id, retrieved[2].id]
    assert [h.rank for h in state.selected] == [1, 2] and state.trace == ["filter: kept 2 of 3"]
    assert "## Memories\n[1] " in server.requests[0]["body"]["messages"][1]["content"]
    cut = retrieved[1].score
    state = Filter(min_score=cut, k=1).run(WorkingState("q", retrieved=list(retrieved)), lay)
    assert [h.id for h in state.selected] == [retrieved[0].id]
    diverse = Filter(mmr=MMRSelector(lambda_=0.5)).run(WorkingState("Ann", retrieved=list(retrieved)), lay)
    assert len(diverse.selected) == 3 and "mmr" in diverse.selected[0].components


def test_load_layout_and_sources():
    lay = layers(*MEMS)
    lay.short_term.add(MemoryRecord("user", "Hi, I'm back.", id="D2:1", timestamp=4 * DAY))
    hits = Retrieve(k=2).run(WorkingState("Ann Paris tea"), lay).retrieved
    state = Load(token_counter=ApproxTokenCounter()).run(WorkingState("Ann Paris tea", selected=hits), lay)
    memory = {"role": "system", "content": f"{MEMORY_HEADER}\n- [1970-01-02] Ann lives in Paris\n"
                                           "- [1970-01-03] Ann loves green tea"}
    back = {"role": "user", "content": "Hi, I'm back."}
    # the context is what the memory contributes: no system prompt (none configured), no question
    ctx = state.context
    assert ctx.messages == [memory, back]
    assert ctx.source_ids == ["D1:1", "D1:2", "D2:1"] and ctx.record_ids[-1] == "D2:1"
    # ceil(len / 4) per field, 3 per message, 3 for the reply: memory 102 chars -> 3 + 2 + 26,
    # "Hi, I'm back." -> 3 + 1 + 4, + 3
    assert ctx.token_count == 31 + 8 + 3 == 42
    assert state.trace == ["load: 2 context message(s), 42 tokens"]
    # the agent prompt the Answer step sends wraps it in the default system prompt and the question
    question = {"role": "user", "content": "Ann Paris tea"}
    assert state.messages == [{"role": "system", "content": DEFAULT_SYSTEM_PROMPT}, memory, back, question]
    # DEFAULT_SYSTEM_PROMPT is 203 chars: 3 + 2 + 51; the question 3 + 1 + 4
    assert ApproxTokenCounter().count_messages(state.messages) == 42 + 56 + 8 == 106
    # an explicitly configured system prompt belongs to the context (and leads the agent prompt)
    told = Load(system_prompt="Be brief.", token_counter=ApproxTokenCounter()).run(
        WorkingState("Ann Paris tea", selected=hits), lay)
    brief = {"role": "system", "content": "Be brief."}
    assert told.context.messages == [brief, memory, back] and told.context.token_count == 42 + 3 + 2 + 3
    assert told.messages == [brief, memory, back, question]
    bare = Load(system_prompt="", include_dates=False).run(WorkingState("q"), layers())
    assert bare.context.messages == [] and bare.context.token_count == 0
    assert bare.messages == [{"role": "user", "content": "q"}]
    with pytest.raises(ConfigError, match=r"^Load parameter 'system_prompt': expected a string or None, got 3$"):
        Load(system_prompt=3)


def test_answer_step_through_loopback(server, chat_llm):
    lay = layers(*MEMS)
    state = WorkingState("Where does Ann live?", selected=Retrieve(k=2).run(WorkingState("Ann live"), lay).retrieved)
    Load().run(state, lay)
    step = Answer(chat_llm, max_tokens=30)
    step.run(state, lay)
    assert state.answer == "Ann lives in Paris"  # the offline answer: the best-matching memory line
    assert server.requests[0]["body"]["max_tokens"] == 30 and step.usage.calls == 1
    # the answer step sends the agent prompt: system prompt, the context, then the question
    assert server.requests[0]["body"]["messages"] == state.messages
    assert state.messages[1:-1] == state.context.messages
    assert state.messages[-1] == {"role": "user", "content": "Where does Ann live?"}
    assert asyncio.run(step.arun(WorkingState("x", messages=state.messages), lay)).answer == "Ann lives in Paris"


def test_update_extracts_every_n_turns_and_archives_folded_chunks():
    lay = Layers(ShortTermMemory(max_turns=3, keep_recent=1, token_counter=ApproxTokenCounter()),
                 LongTermMemory(), RuleBasedExtractor())
    update = Update(extract_every=2)
    texts = ["I live in Paris.", "Nice.", "I love coffee and I own 3 cats.", "Cool!"]
    written = [update.observe(MemoryRecord("user", t, id=f"D1:{i}", timestamp=100.0 * i,
                                           metadata={"session_id": "S1"}), lay) for i, t in enumerate(texts, 1)]
    assert written[0] == [] and [m.content for m in written[1]] == ["User lives in Paris"]
    # turn 4 folds turns 1-3 into an event summary and extracts turns 3-4
    assert [(m.content, m.metadata["memory_type"]) for m in written[3]] == [
        ("user: I live in Paris. user: I love coffee and I own 3 cats.", "event_summary"),
        ("User loves coffee", "preference")]
    summary, coffee = written[3]
    assert summary.metadata["source_ids"] == ["D1:1", "D1:3"] and summary.timestamp == 300.0
    assert coffee.metadata["source_ids"] == ["D1:3"] and coffee.timestamp == 300.0
    assert coffee.metadata["source_session"] == "S1" and update.pending == []
    update.observe(MemoryRecord("user", "I work at Acme.", id="D1:5", timestamp=500.0), lay)
    assert len(update.pending) == 1
    assert [m.content for m in update.flush(lay)] == ["User works at Acme"] and update.flush(lay) == []
    no_archive = Update(archive_summaries=False)
    lay2 = Layers(ShortTermMemory(max_turns=1, keep_recent=0), LongTermMemory(), RuleBasedExtractor())
    for i in range(4):
        no_archive.observe(MemoryRecord("user", "Nice weather.", id=f"x{i}", timestamp=float(i)), lay2)
    assert len(lay2.long_term) == 0 and lay2.short_term.folds == 2


def test_step_parameters_are_validated_on_set_params():
    llm = OfflineLLM(token_counter=ApproxTokenCounter())
    with pytest.raises(ConfigError, match=r"^MultiQueryExpander parameter 'n': expected an int >= 1, got 0$"):
        expander = MultiQueryExpander(llm)
        expander.set_params(n=0)
    assert expander.n == 3  # a failed set_params changes nothing
    with pytest.raises(ConfigError, match=r"^LLMQueryRewriter parameter 'history_turns': expected an int >= 0, got "
                                          r"-1$"):
        LLMQueryRewriter(llm, history_turns=-1)
    with pytest.raises(ConfigError, match=r"^Update parameter 'extract_every': expected an int >= 1, got 0$"):
        Update(extract_every=0)
    with pytest.raises(ConfigError, match=r"^Filter parameter 'k': expected an int >= 0, got -1$"):
        Filter(k=-1)
    with pytest.raises(ConfigError, match=r"^Retrieve parameter 'k': expected an int >= 1, got 0$"):
        Retrieve(k=0)


def test_async_update_archives_with_the_same_sources():
    def run(use_async: bool) -> list[tuple[str, list[str]]]:
        lay = Layers(ShortTermMemory(max_turns=3, keep_recent=1), LongTermMemory(), RuleBasedExtractor())
        update = Update()
        turns = [MemoryRecord("user", t, id=f"D1:{i}", timestamp=100.0 * i)
                 for i, t in enumerate(["I live in Paris.", "Nice.", "Cool!", "Ok."], 1)]
        for r in turns:
            if use_async:
                asyncio.run(update.aobserve(r, lay))
            else:
                update.observe(r, lay)
        return [(m.content, m.metadata["source_ids"]) for m in lay.long_term.records()
                if m.metadata["memory_type"] == "event_summary"]

    # only turn 1's sentence was kept, so only D1:1 is the event summary's source
    assert run(False) == run(True) == [("user: I live in Paris.", ["D1:1"])]
