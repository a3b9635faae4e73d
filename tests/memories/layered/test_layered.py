"""LayeredMemory as a Strategy: offline by default, through the loopback server with an LLM."""

from __future__ import annotations

import asyncio

import pytest

from memlab.base import ConfigError
from memlab.eval.paths import datasets_dir
from memlab.eval import load_any, replay
from memlab.llm import OpenAIChat, ResponseCache
from memlab.offline import OfflineLLM
from memlab.memories.layered import (
    Answer,
    LayeredMemory,
    Load,
    LongTermMemory,
    MultiQueryExpander,
    Retrieve,
    ShortTermMemory,
    Update,
)
from memlab.memories.layered.steps.load import DEFAULT_SYSTEM_PROMPT
from memlab.records import MemoryRecord
from memlab.strategies.registry import registry
from memlab.strategy import Context
from memlab.testing import check_strategy
from memlab.tokens import ApproxTokenCounter, TiktokenCounter

T0 = 1_700_000_000.0
DIALOGUE = [
    ("user", "Hi! My name is Ann and I live in Paris."),
    ("assistant", "Nice to meet you, Ann."),
    ("user", "I love coffee, especially in the morning."),
    ("assistant", "Coffee lovers unite."),
    ("user", "My dog's name is Rex and he is 3 years old."),
    ("assistant", "Rex sounds lovely."),
    ("user", "Actually I switched to green tea last month."),
    ("assistant", "Green tea it is."),
    ("user", "We agreed that you remind me about the dentist on Friday."),
    ("assistant", "I will remind you on Friday."),
]


def records(dialogue=DIALOGUE, session="S1"):
    return [MemoryRecord(role, text, id=f"D1:{i}", timestamp=T0 + 60.0 * i,
                         metadata={"session_id": session, "speaker": "Ann" if role == "user" else "Bot"})
            for i, (role, text) in enumerate(dialogue, 1)]


def fed(strategy: LayeredMemory) -> LayeredMemory:
    for r in records():
        strategy.observe(r)
    return strategy


def small_short_term() -> ShortTermMemory:
    return ShortTermMemory(max_turns=4, keep_recent=2, token_counter=ApproxTokenCounter())


def test_passes_the_generic_strategy_checks():
    assert isinstance(registry.get("layered"), LayeredMemory)
    check_strategy(LayeredMemory())
    check_strategy(LayeredMemory(llm=OfflineLLM(token_counter=ApproxTokenCounter()),
                                 short_term=small_short_term()))


def test_replay_retrieve_names_dialogue_turns_and_handles_conflicts():
    m = fed(LayeredMemory(short_term=small_short_term()))
    hits = m.retrieve("What does Ann drink? coffee or tea", 5)
    contents = [h.record.content for h in hits]
    assert contents[0] == "Ann switched to green tea last month"
    assert "Ann loves coffee" not in contents  # superseded, kept as outdated
    outdated = [r for r in m.layers.long_term.records() if r.metadata["status"] == "outdated"]
    assert [r.content for r in outdated] == ["Ann loves coffee"]
    assert hits[0].memory_record.metadata["source_ids"] == ["D1:7"]
    assert all(set(h.memory_record.source_ids) <= {f"D1:{i}" for i in range(1, 11)} for h in hits)
    types = {r.metadata["memory_type"] for r in m.layers.long_term.records()}
    assert types == {"fact", "preference", "event_summary"}
    assert m.layers.long_term.get(hits[0].id).metadata["access_count"] == 0  # retrieve does not reinforce


def test_build_context_loads_memories_summary_and_recent_turns():
    m = fed(LayeredMemory(short_term=small_short_term()))
    ctx = m.build_context("Where does Ann live?")
    assert isinstance(ctx, Context)
    # what the memory contributes: memories, summary, recent turns; no system prompt, no question
    assert [msg["role"] for msg in ctx.messages] == ["system", "system", "user", "assistant", "user", "assistant"]
    assert ctx.messages[0]["content"].startswith("Relevant memories")
    assert "Ann lives in Paris" in ctx.messages[0]["content"]
    assert ctx.messages[1]["content"].startswith("[Summary of the earlier conversation]")
    assert ctx.messages[2:] == [{"role": role, "content": text} for role, text in DIALOGUE[6:10]]
    assert "D1:1" in ctx.source_ids and "D1:10" in ctx.source_ids
    counter = TiktokenCounter()  # Load's default counter
    assert ctx.token_count == counter.count_messages(ctx.messages) == 205
    # the agent prompt (what respond's answer step sends) adds the system prompt and the question
    agent = m.last_state.messages
    assert agent == [{"role": "system", "content": DEFAULT_SYSTEM_PROMPT}, *ctx.messages,
                     {"role": "user", "content": "Where does Ann live?"}]
    assert counter.count_messages(agent) == 205 + counter.count_message(agent[0]) + counter.count_message(agent[-1])
    told = fed(LayeredMemory(short_term=small_short_term(), load_step=Load(system_prompt="Be brief.")))
    told_ctx = told.build_context("Where does Ann live?")
    assert told_ctx.messages == [{"role": "system", "content": "Be brief."}, *ctx.messages]
    assert told_ctx.token_count == 205 + counter.count_message(told_ctx.messages[0])
    state = m.last_state
    assert state.trace[0].startswith("retrieve:") and state.trace[1].startswith("filter: kept")
    paris = next(h for h in state.selected if h.record.content == "Ann lives in Paris")
    assert m.layers.long_term.get(paris.id).metadata["access_count"] == 1  # used memories are reinforced
    mon = m.monitoring()
    assert mon["probes"] == 1 and mon["selected"] == len(state.selected) and mon["long_term_outdated"] == 1


def test_memoised_retrieval_and_llm_usage_through_loopback(server, chat_llm):
    m = LayeredMemory(llm=chat_llm, short_term=small_short_term(),
                      retrieve_step=Retrieve(expander=MultiQueryExpander(chat_llm, n=2)),
                      update_step=Update(extract_every=5))
    server.enqueue_fault(429, headers={"Retry-After": "0.01"})  # the first call is rate limited once
    fed(m)
    assert len(m.layers.long_term) > 0
    m.retrieve("Where does Ann live?", 5)
    m.build_context("Where does Ann live?")
    tasks = [r["body"]["messages"][0]["content"].split("\n", 1)[0] for r in server.requests]
    assert tasks.count("memlab-task: expand") == 1      # retrieve + build_context expand once
    assert tasks.count("memlab-task: filter") == 1
    assert tasks.count("memlab-task: extract") == 2 + 1  # every 5 turns; +1 retried attempt
    usage = m.llm_usage()
    assert usage["calls"] == len(server.requests) - 1
    by_step = m.usage_by_step()
    assert sum(u["prompt_tokens"] for u in by_step.values()) == usage["prompt_tokens"]
    assert by_step["retrieve"]["calls"] == 1 and by_step["filter"]["calls"] == 1
    # loopback usage = whitespace words of every answered request
    answered = server.requests[1:]
    assert usage["prompt_tokens"] == sum(sum(len(str(x["content"]).split()) for x in r["body"]["messages"])
                                         for r in answered)
    m.reset()
    assert m.llm_usage() == {"prompt_tokens": 0, "completion_tokens": 0, "calls": 0, "cached_calls": 0,
            "cached_tokens": 0, "format_errors": 0}
    assert m.retrieve("Where does Ann live?", 5) == []


def test_respond_runs_the_whole_loop(server, chat_llm):
    m = LayeredMemory(answer_step=Answer(chat_llm), short_term=small_short_term())
    fed(m)
    state = m.respond("Where does Ann live?", now=T0 + 3600)
    assert state.answer == "Ann lives in Paris"
    assert [(t.id, t.content) for t in m.layers.short_term.turns][-2:] == [
        ("exchange-1-user", "Where does Ann live?"), ("exchange-1-assistant", "Ann lives in Paris")]
    assert state.trace[-2:] == ["answer", "update: 1 new memory"]  # the fold archived a summary
    assert m.llm_usage()["calls"] == 1
    silent = LayeredMemory()
    assert silent.respond("I live in Oslo.").answer is None
    assert [r.content for r in silent.layers.long_term.records()] == ["User lives in Oslo"]


def test_async_api_gives_the_same_results(server, chat_llm):
    def make():
        return LayeredMemory(llm=chat_llm, short_term=small_short_term(), answer_step=Answer(chat_llm))

    sync, asy = fed(make()), make()

    async def run():
        for r in records():
            await asy.aobserve(r)
        hits = await asy.aretrieve("Where does Ann live?", 3)
        ctx = await asy.abuild_context("What does Ann drink?")
        state = await asy.arespond("Who is Rex?", now=T0 + 7200)
        return hits, ctx, state

    hits, ctx, state = asyncio.run(run())
    assert [(h.id, h.score) for h in hits] == [(h.id, h.score) for h in sync.retrieve("Where does Ann live?", 3)]
    assert ctx.messages == sync.build_context("What does Ann drink?").messages
    assert state.answer == sync.respond("Who is Rex?", now=T0 + 7200).answer
    assert asy.llm_usage() == sync.llm_usage()


def test_user_scoping_and_cross_session_memory(tmp_path):
    path = str(tmp_path / "ltm.sqlite")
    ann = LayeredMemory(long_term=LongTermMemory(path=path), user_id="ann")
    fed(ann)
    ann.layers.long_term.close()
    later = LayeredMemory(long_term=LongTermMemory(path=path), user_id="ann")  # a new session
    assert later.retrieve("Ann Paris", 1)[0].record.content == "Ann lives in Paris"
    assert later.retrieve("Ann Paris", 1)[0].record.metadata["user_id"] == "ann"
    stranger = LayeredMemory(long_term=LongTermMemory(path=path), user_id="bob")
    assert stranger.retrieve("Ann Paris", 3) == []
    scoped = LayeredMemory(long_term=LongTermMemory(path=path), where={"memory_type": "preference"})
    assert {h.record.metadata["memory_type"] for h in scoped.retrieve("Ann tea coffee Paris", 5)} == {"preference"}


def test_chinese_dialogue():
    m = LayeredMemory()
    for i, text in enumerate(["我叫张三。我住在北京。", "我喜欢喝咖啡", "我现在改喝茶了"]):
        m.observe(MemoryRecord("user", text, id=f"Z{i}", timestamp=T0 + i))
    assert [h.record.content for h in m.retrieve("用户喝什么茶", 1)] == ["用户现在改喝茶"]
    assert m.layers.long_term.count("outdated") == 1


def test_configuration_errors_and_params():
    with pytest.raises(ConfigError, match=r"^LayeredMemory parameter 'short_term': expected a ShortTermMemory or "
                                          r"None, got 'window'$"):
        LayeredMemory(short_term="window")
    with pytest.raises(ConfigError, match=r"^LayeredMemory parameter 'llm': expected an LLM \(OpenAIChat, "
                                          r"OfflineLLM\) or None, got 'gpt-4o'$"):
        LayeredMemory(llm="gpt-4o")
    m = LayeredMemory(update_step=Update(extract_every=3))
    assert m.get_params()["update_step__extract_every"] == 3
    m.set_params(update_step__extract_every=4)
    assert m.steps["update"].extract_every == 4 and m.steps["answer"] is None


def test_named_layered_with_an_llm_summarises_with_it():
    from memlab import strategies
    from memlab.llm.prompts import summarize_prompt
    from memlab.memories.layered import ExtractiveSummarizer, LLMSummarizer

    turns = records() + [MemoryRecord("user", "I will fly to Rome on May 3.", id="D1:11", timestamp=T0 + 660.0)]
    m = strategies.get("layered", llm="offline")
    summarizer = m.steps["short_term"].resolved_summarizer
    assert isinstance(summarizer, LLMSummarizer) and summarizer.llm is m.llm
    assert (m.steps["short_term"].max_turns, m.steps["short_term"].keep_recent) == (10, 4)
    for r in turns:
        m.observe(r)
    # turn 11 > max_turns 10: turns 1-7 are folded into the running summary (the built-in keeps
    # turns as events, so it archives no event summary of the chunk: one call, not two);
    # LLMSummarizer() asks for at most 0.75 * 200 = 150 words
    prompt = TiktokenCounter().count_messages(summarize_prompt(turns[:7], "", 150))
    assert prompt == 220
    assert m.usage_by_step()["summarize"] == {"prompt_tokens": prompt, "completion_tokens": 49,
                                              "calls": 1, "cached_calls": 0,
            "cached_tokens": 0, "format_errors": 0}
    # an LLM summary is attributed lexically: a folded turn counts when at least half of its
    # stemmed content terms are in the summary ("Nice to meet you, Ann." and "Coffee lovers
    # unite." keep 1 of 3; "Rex sounds lovely." keeps rex and love(ly))
    assert m.steps["short_term"].summary_record.source_ids == ["D1:1", "D1:3", "D1:5", "D1:6", "D1:7"]
    offline = strategies.get("layered")
    assert isinstance(offline.steps["short_term"].resolved_summarizer, ExtractiveSummarizer)
    for r in turns:
        offline.observe(r)
    assert offline.usage_by_step()["summarize"]["calls"] == 0
    # the extractive summary kept Ann's four sentences: only their turns are its sources
    assert offline.steps["short_term"].summary_record.source_ids == ["D1:1", "D1:3", "D1:5", "D1:7"]


def test_an_empty_summary_claims_no_folded_turns():
    from memlab import strategies

    # max_turns 10, keep_recent 4; without events, long-term memory holds only what folding wrote
    m = strategies.get("layered", update_step__keep_events=False)
    for i in range(1, 31):
        m.observe(MemoryRecord("user", f"ok {i}", id=f"t{i}", timestamp=T0 + i))
    ctx = m.build_context("x")
    # 30 turns: folds at 11, 18, 25 leave turns 22-30; "ok i" scores 0, so no summary at all
    short = m.steps["short_term"]
    assert short.folds == 3 and short.summary == "" and short.summary_record is None
    assert ctx.source_ids == [f"t{i}" for i in range(22, 31)]
    assert not any(msg["content"].startswith("[Summary") for msg in ctx.messages)


def test_replay_reports_the_same_llm_cost_on_a_cold_and_a_warm_response_cache(server, tmp_path):
    dataset = load_any(datasets_dir()).subset(dialogues=1)
    path = str(tmp_path / "responses.sqlite")

    def run():
        llm = OpenAIChat(model="loop", base_url=server.base_url, api_key="k", cache=ResponseCache(path))
        return replay(LayeredMemory(llm=llm), dataset, ks=[5])

    cold = run()
    requests = len(server.requests)
    assert requests > 0
    # the loopback server bills whitespace words: the replay charged every request it answered
    assert cold["llm_prompt_tokens"].sum() == sum(sum(len(str(m["content"]).split()) for m in r["body"]["messages"])
                                                  for r in server.requests)
    assert cold["llm_calls"].sum() == requests
    warm = run()
    assert len(server.requests) == requests  # every answer came from the cache
    columns = ["probe_id", "retrieved_ids", "context_tokens", "llm_prompt_tokens", "llm_completion_tokens",
               "llm_calls"]
    assert warm[columns].equals(cold[columns])
