"""Lifecycle parts of the layered memory: consolidation in long-term memory, Merger /
LLMMerger, Abstractor / LLMAbstractor and AbstractionRetrieve, gists, the conflict
instruction, LifecycleUpdate and the layered_lifecycle built-in (offline, and through
the loopback server with the real openai client)."""

from __future__ import annotations

import asyncio
import json
import pickle

import pytest

from memlab import strategies
from memlab.base import ConfigError, MemlabError
from memlab.extraction import ExtractedMemory, RuleBasedExtractor, TurnExtractor
from memlab.llm.counting import resolve_counter
from memlab.memories.layered import (
    CONFLICT_INSTRUCTION,
    AbstractionRetrieve,
    Abstractor,
    FirstSentenceGist,
    GistFilter,
    LayeredMemory,
    Layers,
    LifecycleUpdate,
    LLMAbstractor,
    LLMGist,
    LLMMerger,
    Load,
    LongTermMemory,
    Merger,
    ShortTermMemory,
    WorkingState,
)
from memlab.memories.layered.lifecycle import SUMMARY_SUBJECT
from memlab.records import Hit, MemoryRecord

DAY = 86400.0
T0 = 1_704_067_200.0  # 2024-01-01T00:00:00Z


def layers(long_term=None, short_term=None):
    return Layers(short_term or ShortTermMemory(), long_term or LongTermMemory(), RuleBasedExtractor())


def turn(i, text, role="user", day=0):
    return MemoryRecord(role, text, id=f"t{i}", timestamp=T0 + day * DAY + i, metadata={"speaker": "Sam"})


def tasks(server):
    return [r["body"]["messages"][0]["content"].split("\n", 1)[0] for r in server.requests]


def loopback_words(server):
    return sum(sum(len(str(m["content"]).split()) for m in r["body"]["messages"]) for r in server.requests)


# -- consolidation in LongTermMemory ------------------------------------------------------
def test_consolidate_supersedes_originals_and_keeps_their_turns():
    lt = LongTermMemory()
    a = lt.add("Sam loves dogs", "preference", source_ids=["t7"], timestamp=T0)
    b = lt.add("Sam has a golden retriever", "fact", source_ids=["t19", "t7"], timestamp=T0 + DAY)
    merged = lt.consolidate([b.id, a.id], "Sam loves dogs and has a golden retriever")
    assert merged.source_ids == ["t7", "t19"]                      # oldest original first, no repeats
    assert merged.metadata["supersedes"] == [a.id, b.id] and merged.timestamp == T0 + DAY
    assert merged.metadata["memory_type"] == "preference"           # a tie: the oldest's type
    assert [lt.get(i).metadata["status"] for i in (a.id, b.id)] == ["outdated", "outdated"]
    assert lt.get(a.id).metadata["superseded_by"] == merged.id
    assert lt.count("active") == 1 and [h.id for h in lt.search("golden retriever", 5)] == [merged.id]
    with pytest.raises(MemlabError, match=f"consolidate: memory {a.id!r} is outdated"):
        lt.consolidate([a.id, merged.id], "x")
    with pytest.raises(MemlabError, match="consolidate: no memory with id 'nope'"):
        lt.consolidate(["nope", merged.id], "x")
    with pytest.raises(MemlabError, match="at least two memories, got 1"):
        lt.consolidate([merged.id], "x")


def test_abstraction_keeps_evidence_active_and_replaces_an_older_one_of_its_subject():
    lt = LongTermMemory()
    ids = [lt.add(f"Sam cooked Thai dish {i}", source_ids=[f"t{i}"], timestamp=T0 + i).id for i in range(3)]
    first = lt.add_abstraction("Sam often cooks Thai food", ids[:2], subject="pattern:thai")
    assert lt.evidence(first.id) == ids[:2] and first.source_ids == ["t0", "t1"]
    assert lt.count("active") == 4
    second = lt.add_abstraction("Sam often cooks Thai food", ids, subject="pattern:thai")
    assert lt.get(first.id).metadata["status"] == "outdated" and second.metadata["supersedes"] == [first.id]
    assert lt.abstractions() == {first.id: ids[:2], second.id: ids}
    assert lt.evidence(ids[0]) == []
    again = pickle.loads(pickle.dumps(lt))                           # the side table travels
    assert again.evidence(second.id) == ids
    lt.clear()
    assert lt.abstractions() == {} and len(lt) == 0


# -- merging ------------------------------------------------------------------------------
def test_offline_merged_text_drops_repeated_and_contained_sentences():
    group = [MemoryRecord("system", "Sam is allergic to penicillin.", id="a"),
             MemoryRecord("system", "Sam is allergic to penicillin. Always mention it", id="b"),
             MemoryRecord("system", "Penicillin allergy.", id="c")]
    # "Penicillin allergy" stems to {penicillin, allergi}, not a subset of {sam, allerg, penicillin}
    assert Merger().merged_text(group) == "Sam is allergic to penicillin. Always mention it. Penicillin allergy."
    assert Merger().merged_text(group[:2]) == "Sam is allergic to penicillin. Always mention it."


def test_merger_groups_by_similarity_and_shrinks_the_store():
    lt = LongTermMemory()
    a = lt.add("Sam: I'm allergic to penicillin.", source_ids=["t13"], timestamp=T0)
    lt.add("Sam: I cooked a Thai green curry.", source_ids=["t15"], timestamp=T0 + 1)
    c = lt.add("Sam: please always mention that I'm allergic to penicillin.", source_ids=["t27"],
               timestamp=T0 + 2)
    merger = Merger(threshold=0.5)
    groups = merger.groups(lt)
    assert [[r.id for r in g] for g in groups] == [[a.id, c.id]]
    written = merger.merge(lt)
    assert len(written) == 1 and written[0].source_ids == ["t13", "t27"]
    # the first sentence's terms are contained in the second's: only the fuller one stays
    assert written[0].content == "Sam: please always mention that I'm allergic to penicillin."
    assert lt.count("active") == 2 and lt.count("outdated") == 2
    assert merger.groups(lt) == []                                   # nothing left to merge
    assert Merger(threshold=1.0).groups(LongTermMemory()) == []
    with pytest.raises(ConfigError, match="Merger parameter 'threshold': expected a number >= -1 and <= 1, got 2"):
        Merger(threshold=2)
    with pytest.raises(ConfigError, match=r"Merger parameter 'memory_types': expected a non-empty tuple or a list of "
                       r"items each one of 'fact', 'preference', 'event_summary', got \('opinion',\)"):
        Merger(memory_types=("opinion",))


def test_llm_merger_through_the_loopback_server(server, chat_llm):
    lt = LongTermMemory()
    a = lt.add("Sam loves dogs.", source_ids=["t7"], timestamp=T0)
    b = lt.add("Sam loves dogs and has a golden retriever.", source_ids=["t19"], timestamp=T0 + 1)
    server.chat.push("Sam loves dogs and has a golden retriever named Biscuit.")
    merger = LLMMerger(chat_llm, threshold=0.5)
    written = merger.merge(lt)
    assert [w.content for w in written] == ["Sam loves dogs and has a golden retriever named Biscuit."]
    assert written[0].metadata["supersedes"] == [a.id, b.id] and written[0].source_ids == ["t7", "t19"]
    assert tasks(server) == ["memlab-task: merge"]
    prompt = server.requests[0]["body"]["messages"][1]["content"]
    assert "[1] Sam loves dogs.\n[2] Sam loves dogs and has a golden retriever." in prompt
    assert merger.usage.calls == 1 and merger.usage.prompt_tokens == loopback_words(server)
    assert merger.usage.completion_tokens == 10
    clone = merger.clone()
    assert clone.get_params()["threshold"] == 0.5 and clone.usage.calls == 0


# -- abstraction --------------------------------------------------------------------------
MEMORIES = ["Sam cooked a Thai green curry.", "Sam went to Paris.", "Sam made pad thai for friends.",
            "Sam loves dogs.", "Sam visited Lisbon.", "Sam learns Thai basil chicken.",
            "Sam adopted a golden retriever.", "Sam works in Leeds."]


def thai_memory():
    lt = LongTermMemory()
    ids = [lt.add(text, source_ids=[f"t{i}"], timestamp=T0 + i * DAY).id for i, text in enumerate(MEMORIES)]
    return lt, ids


def test_abstractor_finds_a_recurring_word_and_names_it_honestly():
    lt, ids = thai_memory()
    abstractor = Abstractor(min_support=3, max_share=0.5)
    # "sam" is in 8 of 8 memories (> 0.5 * 8): not a pattern; "thai" is in 3
    assert [(k, w, len(ms)) for k, w, ms in abstractor.patterns(abstractor.pool(lt))] == [("thai", "thai", 3)]
    written = abstractor.abstract(lt)
    assert [w.content for w in written] == ["Recurring topic 'thai': 3 memories from 2024-01-01 to 2024-01-06."]
    assert lt.evidence(written[0].id) == [ids[0], ids[2], ids[5]]
    assert written[0].source_ids == ["t0", "t2", "t5"] and written[0].metadata["subject"] == "pattern:thai"
    assert abstractor.abstract(lt) == []                              # same evidence: not again
    assert Abstractor(min_support=4).abstract(lt) == []
    # the European cities share no word: the offline abstractor cannot see that pattern
    assert all("paris" not in w.content.lower() for w in written)


def test_llm_abstractor_through_the_loopback_server(server, chat_llm):
    lt, ids = thai_memory()
    server.chat.push(json.dumps({"patterns": [
        {"abstraction": "Sam enjoys European city trips.", "evidence": [2, 5]},     # too little evidence
        {"abstraction": "Sam likes cooking Thai food.", "evidence": [1, 3, 6]},
        {"abstraction": "Sam is a dog person.", "evidence": [4, 7, 99]}]}))          # unknown number
    abstractor = LLMAbstractor(chat_llm, min_support=3)
    written = abstractor.abstract(lt)
    assert [w.content for w in written] == ["Sam likes cooking Thai food."]
    assert lt.evidence(written[0].id) == [ids[0], ids[2], ids[5]] and abstractor.failures == 2
    assert tasks(server) == ["memlab-task: abstract"]
    assert "[3] (2024-01-03) Sam made pad thai for friends." in server.requests[0]["body"]["messages"][1]["content"]
    server.chat.push("not json")
    assert abstractor.abstract(lt) == [] and abstractor.failures == 3
    assert abstractor.usage.calls == 2 and abstractor.usage.prompt_tokens == loopback_words(server)


@pytest.mark.parametrize("show, expected", [
    ("abstraction", ["abs"]),
    ("evidence", ["t0", "t2", "t5"]),
    ("both", ["abs", "t0", "t2", "t5"]),
])
def test_abstraction_retrieve_shows_the_abstraction_its_evidence_or_both(show, expected):
    lt, ids = thai_memory()
    abstraction = lt.add_abstraction("Thai cooking is a habit of Sam", [ids[0], ids[2], ids[5]])
    names = {abstraction.id: "abs", **{i: f"t{n}" for n, i in enumerate(ids)}}
    state = AbstractionRetrieve(show=show, k=4).run(WorkingState(question="Thai cooking habit"), layers(lt))
    got = [names[h.id] for h in state.retrieved]
    assert got[:len(expected)] == expected
    assert [h.rank for h in state.retrieved] == list(range(1, len(got) + 1)) and len(got) == len(set(got)) <= 4
    if show == "abstraction":   # the evidence is represented by the abstraction: not listed again
        assert not {"t0", "t2", "t5"} & set(got)
    with pytest.raises(ConfigError, match="AbstractionRetrieve parameter 'show': expected one of "
                                          "'abstraction', 'evidence', 'both', got 'all'"):
        AbstractionRetrieve(show="all")


# -- gists ---------------------------------------------------------------------------------
def test_first_sentence_gist_cuts_to_max_words():
    gist = FirstSentenceGist(max_words=5)
    assert gist.gists(["Sam moved to Manchester. He likes it.", "one two three four five six seven",
                       "我换工作了，这个月搬到深圳，在一家游戏公司做设计。"]) == \
        ["Sam moved to Manchester.", "one two three four five…", "我换工作了，这个月搬…"]


def test_gist_filter_counts_the_gists_in_its_budget():
    lt = LongTermMemory()
    texts = ["Sam moved to Manchester. The office is near the station and has a gym.",
             "Sam drinks black filter coffee every single morning before work. No milk.",
             "Biscuit is a dog. She loves the park."]
    hits = [Hit(memory_record=MemoryRecord("system", t, id=f"m{i}", timestamp=T0 + i), score=1.0 - i / 10, rank=i + 1)
            for i, t in enumerate(texts)]
    counter = resolve_counter(None)
    costs = [counter.count(t.split(". ")[0] + ".") for t in texts]
    full = GistFilter().run(WorkingState(question="q", retrieved=hits), layers(lt))
    assert [h.record.content for h in full.selected] == [t.split(". ")[0] + "." for t in texts]
    assert full.selected[0].record.metadata["full_content"] == texts[0]
    budget = costs[0] + costs[2]                      # the second does not fit after the first; the third does
    assert costs[1] > costs[2]
    kept = GistFilter(token_budget=budget).run(WorkingState(question="q", retrieved=hits), layers(lt))
    assert [h.id for h in kept.selected] == ["m0", "m2"] and [h.rank for h in kept.selected] == [1, 2]
    assert kept.trace[-1] == f"filter: kept 2 of 3 as gists ({budget} tokens)"
    with pytest.raises(ConfigError, match="GistFilter parameter 'token_budget': expected an int >= 1 or None, got 0"):
        GistFilter(token_budget=0)
    with pytest.raises(ConfigError, match=r"^GistFilter parameter 'token_counter': expected a token counter "
                                          r"\(with count\(\) and count_messages\(\)\) or None, got 'words'$"):
        GistFilter(token_counter="words")
    step = GistFilter()
    with pytest.raises(ConfigError, match="parameter 'token_counter'"):
        step.set_params(token_counter=3)
    assert step.token_counter is None


def test_llm_gist_through_the_loopback_server(server, chat_llm):
    server.chat.push("[1] Sam works in Manchester now.\n[2]")
    gist = LLMGist(chat_llm, max_words=4)
    assert gist.gists(["Sam moved to Manchester. Same role.", "Biscuit is a golden retriever. She is three."]) == \
        ["Sam works in Manchester…", "Biscuit is a golden…"]     # line 2 empty: the offline gist
    assert tasks(server) == ["memlab-task: gist"] and gist.usage.calls == 1
    assert gist.gists([]) == [] and gist.usage.calls == 1


def test_gist_filter_awaits_the_llm_gist_on_the_async_path(server, chat_llm):
    server.chat.push("[1] Sam works in Manchester now.")
    record = MemoryRecord("system", "Sam moved to Manchester. Same role.", id="m0", timestamp=T0)
    step = GistFilter(gist=LLMGist(chat_llm, max_words=4))
    state = asyncio.run(step.arun(WorkingState(question="q", retrieved=[Hit(memory_record=record, score=1.0, rank=1)]),
                                  layers()))
    assert [h.record.content for h in state.selected] == ["Sam works in Manchester…"]
    assert state.selected[0].record.metadata["full_content"] == record.content
    assert tasks(server) == ["memlab-task: gist"] and step.gist.usage.calls == 1


# -- the conflict instruction ----------------------------------------------------------------
def test_conflict_instruction_follows_the_memory_header_and_is_counted():
    hits = [Hit(memory_record=MemoryRecord("system", "Sam drinks lattes.", id="a", timestamp=T0), score=1.0, rank=1)]
    state = WorkingState(question="q", selected=hits)
    plain = Load().run(state, layers()).context
    told = Load(conflict_instruction=CONFLICT_INSTRUCTION).run(WorkingState(question="q", selected=hits),
                                                               layers()).context
    assert told.messages[0]["content"].split("\n")[:2] == ["Relevant memories (oldest first):", CONFLICT_INSTRUCTION]
    counter = resolve_counter(None)
    assert told.token_count == counter.count_messages(told.messages) > plain.token_count
    empty = Load(conflict_instruction=CONFLICT_INSTRUCTION).run(WorkingState(question="q"), layers())
    assert empty.context.messages == []      # no memory selected: no memory message, no instruction
    with pytest.raises(ConfigError, match="Load parameter 'conflict_instruction': expected a string or None, got 1"):
        Load(conflict_instruction=1)


# -- periodic summaries, extraction of every turn, the update step -------------------------------
def test_turn_extractor_keeps_every_user_turn_typed_by_the_rules():
    records = [turn(1, "I moved to Denver last week!"), turn(2, "Great!", role="assistant"),
               turn(3, "I cooked pad thai for friends.")]
    got = TurnExtractor().extract(records)
    assert got == [ExtractedMemory("Sam: I moved to Denver last week!", "fact", "location", ["t1"]),
                   ExtractedMemory("Sam: I cooked pad thai for friends.", "fact", "", ["t3"])]


def test_periodic_summary_keeps_one_active_summary_of_short_term_memory():
    update = LifecycleUpdate(summarize_every=2, extract_every=100)
    ly = layers()
    texts = ["I live in Leeds.", "I love dogs.", "I moved to Manchester.", "I drink black coffee."]
    for i, text in enumerate(texts, 1):
        update.observe(turn(i, text), ly)
    summaries = ly.long_term.records(where={"subject": SUMMARY_SUBJECT})
    assert [s.metadata["status"] for s in summaries] == ["outdated", "active"]
    assert summaries[1].source_ids == ["t1", "t2", "t3", "t4"] and summaries[1].timestamp == T0 + 4
    assert summaries[1].content == "Sam: I live in Leeds. Sam: I love dogs. Sam: I moved to Manchester. " \
                                   "Sam: I drink black coffee."
    update.reset_state()
    update.observe(turn(5, "I cooked pad thai."), ly)
    assert len(ly.long_term.records(where={"subject": SUMMARY_SUBJECT})) == 2   # counting restarted


def test_lifecycle_update_merges_and_abstracts_every_n_turns():
    # hashing cosines: penicillin pair 0.87, the two dishes 0.80, the rest <= 0.40
    update = LifecycleUpdate(consolidate_every=4, extract_every=100, merger=Merger(threshold=0.85),
                             abstractor=Abstractor(min_support=2, max_share=0.7))
    ly = Layers(ShortTermMemory(), LongTermMemory(), TurnExtractor())
    texts = ["I'm allergic to penicillin.", "I cooked Thai curry.", "Always mention I'm allergic to penicillin.",
             "I cooked pad thai.", "I live in Leeds."]
    written = [update.observe(turn(i, t), ly) for i, t in enumerate(texts, 1)]
    assert [len(w) for w in written] == [0, 0, 0, 6, 0]  # 4 turns extracted, 1 merge, 1 abstraction
    lt = ly.long_term
    assert lt.count("active") == 4 and lt.count("outdated") == 2
    (abstraction,) = lt.abstractions()
    assert lt.get(abstraction).content.startswith("Recurring topic 'cooked': 2 memories")
    with pytest.raises(ConfigError, match=r"LifecycleUpdate parameter 'merger': expected a Merger or LLMMerger "
                                          r"or None, got Abstractor\(\)"):
        LifecycleUpdate(merger=Abstractor())


# -- the built-in -------------------------------------------------------------------------------
def test_layered_lifecycle_builtin_uses_the_parts_offline():
    s = strategies.get("layered_lifecycle", consolidate_every=6, min_support=2, merge_threshold=0.9)
    steps = s.steps
    assert isinstance(steps["update"].merger, Merger) and isinstance(steps["update"].abstractor, Abstractor)
    assert isinstance(steps["retrieve"], AbstractionRetrieve) and isinstance(steps["filter"], GistFilter)
    texts = ["I cooked Thai curry.", "I love dogs.", "I cooked pad thai.", "I moved to Leeds.",
             "We have a golden retriever.", "I drink black coffee."]
    for i, text in enumerate(texts, 1):
        s.observe(turn(i, text))
    (abstraction,) = s.layers.long_term.abstractions()
    assert s.layers.long_term.get(abstraction).content.startswith("Recurring topic 'cooked': 2 memories")
    context = s.build_context("What did Sam cook?")
    assert CONFLICT_INSTRUCTION in context.messages[0]["content"]
    # long-term: 6 turns, the summary after turn 5, 1 abstraction; short-term: 6 turns
    assert s.llm_usage()["calls"] == 0 and s.store_size() == 8 + 6


def test_layered_lifecycle_with_an_llm_counts_every_call(server, chat_llm):
    s = strategies.get("layered_lifecycle", llm=chat_llm, consolidate_every=2, summarize_every=2, min_support=2,
                       merge_threshold=0.99)
    assert isinstance(s.steps["update"].merger, LLMMerger) and isinstance(s.steps["filter"].gist, LLMGist)
    server.chat.push("Sam cooked Thai curry and loves dogs.", '{"patterns": []}')  # summary, then abstraction
    for i, text in enumerate(["I cooked Thai curry.", "I love dogs."], 1):
        s.observe(turn(i, text))
    s.build_context("What did Sam cook?")
    usage = s.llm_usage()
    assert usage["calls"] == len(server.requests) and usage["prompt_tokens"] == loopback_words(server)
    by_step = s.usage_by_step()
    assert by_step["update"]["calls"] == tasks(server).count("memlab-task: abstract") == 1
    assert sum(u["calls"] for u in by_step.values()) == usage["calls"]
    assert isinstance(s, LayeredMemory)


# -- the offline stand-in answers the lifecycle prompts with the same rules -----------------------
def test_offline_llm_answers_merge_abstract_and_gist_like_the_rule_based_parts():
    from memlab.offline import OfflineLLM

    lt, ids = thai_memory()
    rule, llm = Abstractor(min_support=3), LLMAbstractor(OfflineLLM(), min_support=3)
    lt2 = pickle.loads(pickle.dumps(lt))
    a, b = rule.abstract(lt), llm.abstract(lt2)
    assert [(r.content, lt.evidence(r.id)) for r in a] == [(r.content, lt2.evidence(r.id)) for r in b]
    assert llm.usage.calls == 1 and llm.failures == 0
    group = [MemoryRecord("system", "Sam is allergic to penicillin.", id="a"),
             MemoryRecord("system", "Sam is allergic to penicillin. Always mention it", id="b")]
    assert LLMMerger(OfflineLLM()).merged_text(group) == Merger().merged_text(group)
    texts = ["Sam moved to Manchester. Same role.", "我换工作了，这个月搬到深圳，在一家游戏公司做设计。"]
    assert LLMGist(OfflineLLM(), max_words=5).gists(texts) == FirstSentenceGist(max_words=5).gists(texts)


def test_llm_abstractor_replaces_an_abstraction_whose_evidence_grew(server, chat_llm):
    lt, ids = thai_memory()
    server.chat.push(json.dumps({"patterns": [{"abstraction": "Sam cooks Thai food.", "evidence": [1, 3]}]}),
                     json.dumps({"patterns": [{"abstraction": "Sam often cooks Thai food.", "evidence": [1, 3, 6]}]}))
    abstractor = LLMAbstractor(chat_llm, min_support=2)
    (first,) = abstractor.abstract(lt)
    (second,) = abstractor.abstract(lt)
    assert lt.get(first.id).metadata["status"] == "outdated" and second.metadata["supersedes"] == [first.id]
    assert lt.evidence(second.id) == [ids[0], ids[2], ids[5]]


def test_layered_lifecycle_with_the_offline_llm_keeps_the_offline_memories():
    from memlab.eval.loaders import load_dataset
    from memlab.eval.paths import datasets_dir

    dialogue = load_dataset(str(datasets_dir() / "memory_lifecycle.json")).dialogues[0]
    stores = []
    for llm in (None, "offline"):
        s = strategies.get("layered_lifecycle", llm=llm)
        for t in dialogue.turns():
            s.observe(t.to_record(dialogue.id))
        s.retrieve("coffee", 1)
        stores.append([(r.content, r.metadata["status"]) for r in s.layers.long_term.records()])
        calls = s.llm_usage()["calls"]
    # same memories (only the summaries' source attribution differs: the LLM summariser's is lexical)
    assert stores[0] == stores[1] and len(stores[0]) == 35 and calls == 28


def test_a_consolidated_memory_stays_in_its_namespace(tmp_path):
    from memlab.memories.layered import LongTermMemory

    original = LongTermMemory(path=str(tmp_path / "ltm.sqlite"))
    mine = original.clone("dialogue-1")
    a = mine.add("Ann likes tea", timestamp=0)
    b = mine.add("Ann likes green tea", timestamp=1)
    merged = mine.consolidate([a.id, b.id], "Ann likes green tea most")
    assert mine.get(merged.id).content == "Ann likes green tea most"
    assert [h.id for h in mine.search("green tea most", 1, reinforce="none")] == [merged.id]
    assert len(original) == 0 and original.get(merged.id) is None  # not in the default namespace
    reopened = LongTermMemory(path=str(tmp_path / "ltm.sqlite"), namespace="dialogue-1")
    assert [r.id for r in reopened.records(include_outdated=False)] == [merged.id]
