"""ShortTermMemory folding and the summarisers, offline and through the loopback server."""

from __future__ import annotations

import asyncio

import pytest

from memlab.base import ConfigError
from memlab.memories.layered import ExtractiveSummarizer, LLMSummarizer, ShortTermMemory
from memlab.memories.layered.short_term import SUMMARY_PREFIX
from memlab.summarizers import sentence_score
from memlab.records import MemoryRecord
from memlab.tokens import ApproxTokenCounter

CHARS = ApproxTokenCounter(chars_per_token=1)  # one token per character: easy hand counts


def turn(i: int, text: str | None = None, role: str = "user") -> MemoryRecord:
    return MemoryRecord(role, text if text is not None else f"I own {30 + i} cats.", id=f"t{i}", timestamp=float(i))


def test_sentence_score():
    assert sentence_score("Ann: I paid 30 dollars.") == 4      # number 2 + first person 2
    assert sentence_score("We decided to leave tomorrow.") == 3  # first person 2 + cue 1
    assert sentence_score("The weather is lovely today.") == 0 + 0 + 0
    assert sentence_score("Hi there!") == 0                       # fewer than 2 content terms


def test_extractive_summary_keeps_best_sentences_in_order():
    s = ExtractiveSummarizer(max_sentences=2)
    turns = [MemoryRecord("user", "Hello! The sky is blue today. I live in Rome.", id="a", name="Ann"),
             MemoryRecord("assistant", "Okay. We agreed to call at 5pm.", id="b", name="Bot")]
    text, sources = s.summarize_with_sources(turns, previous="")
    # scores: "The sky is blue today." 0, "I live in Rome." 3, "We agreed to call at 5pm." 5
    assert text == "Ann: I live in Rome. Bot: We agreed to call at 5pm."
    assert sources == ["a", "b"]
    # a previous summary competes on equal terms and stays bounded
    assert s.summarize([turns[1]], previous="Ann: I live in Rome. Ann: I own 3 cats.") == \
        "Ann: I own 3 cats. Bot: We agreed to call at 5pm."
    long = MemoryRecord("user", "I " + "x" * 300 + " 1", id="c")
    assert ExtractiveSummarizer(max_sentence_chars=10).summarize([long]) == "user: I xxxxxxxx..."


def test_fold_on_token_threshold_exact():
    # each turn: 3 framing + len("user") 4 + len("I own 3x cats.") 14 = 21; n turns: 21n + 3
    stm = ShortTermMemory(token_budget=300, summarize_at=0.5, keep_recent=2,
                          summarizer=ExtractiveSummarizer(max_sentences=1), token_counter=CHARS)
    for i in range(1, 8):
        assert stm.add(turn(i)) == []
    assert stm.token_count() == 150 and stm.folds == 0     # = threshold: no fold yet
    folded = stm.add(turn(8))                                # 171 > 150
    assert [r.id for r in folded] == ["t1", "t2", "t3", "t4", "t5", "t6"]
    assert [r.id for r in stm.turns] == ["t7", "t8"]
    summary = stm.summary_record
    assert summary.content == SUMMARY_PREFIX + "user: I own 31 cats."
    # the summary kept one sentence, from t1: only t1 is its source
    assert summary.metadata == {"kind": "summary", "source_ids": ["t1"]}
    assert summary.role.value == "system" and summary.timestamp == 6.0
    msgs = stm.messages()
    assert msgs[0] == {"role": "system", "content": SUMMARY_PREFIX + "user: I own 31 cats."}
    # summary: 3 + 6 + 58 = 67; plus two turns 42; plus 3 -> 112
    assert stm.token_count() == 112 and not stm.over_budget
    assert [len(c) for c in stm.drain_folded()] == [6] and stm.drain_folded() == []


def test_fold_on_max_turns_and_running_sources():
    stm = ShortTermMemory(max_turns=3, keep_recent=1, token_counter=CHARS)
    for i in range(1, 8):
        stm.add(turn(i))
    assert stm.folds == 2 and [r.id for r in stm.turns] == ["t7"]
    assert stm.summary_record.source_ids == ["t1", "t2", "t3", "t4", "t5", "t6"]
    assert [r.id for r in stm.records()] == ["short-term-summary", "t7"]


def test_newest_turns_are_never_folded_even_over_budget():
    stm = ShortTermMemory(token_budget=10, summarize_at=1.0, keep_recent=2, token_counter=CHARS)
    stm.add(turn(1, "x" * 50))
    stm.add(turn(2, "y" * 50))
    assert stm.folds == 0 and stm.over_budget


def test_validation_messages():
    with pytest.raises(ConfigError, match=r"^ShortTermMemory parameter 'summarize_at': expected a number > 0 and <= "
                                          r"1, got 1.5$"):
        ShortTermMemory(summarize_at=1.5)
    with pytest.raises(ConfigError, match=r"keep_recent must be < max_turns \(3\), got 3"):
        ShortTermMemory(max_turns=3, keep_recent=3)
    with pytest.raises(ConfigError, match=r"^ShortTermMemory parameter 'token_budget': expected an int >= 1, got 0$"):
        ShortTermMemory(token_budget=0)
    with pytest.raises(ConfigError, match=r"^ShortTermMemory parameter 'summarizer': expected a Summarizer or None"):
        ShortTermMemory(summarizer="extractive")


def test_clone_is_fresh_and_clear_empties():
    stm = ShortTermMemory(max_turns=2, keep_recent=1)
    for i in range(1, 5):
        stm.add(turn(i))
    assert stm.clone().records() == []
    stm.clear()
    assert stm.records() == [] and stm.summary == "" and stm.folds == 0


def test_llm_summarizer_through_loopback(server, chat_llm):
    stm = ShortTermMemory(max_turns=2, keep_recent=1, summarizer=LLMSummarizer(chat_llm, max_tokens=80),
                          token_counter=CHARS)
    server.enqueue_fault(500)  # the first summary call fails once and is retried
    for i in range(1, 6):
        stm.add(turn(i, f"I will pay {i}00 dollars on day {i}."))
    assert stm.folds == 2
    bodies = [r["body"] for r in server.requests]
    assert len(bodies) == 3  # 2 summaries + 1 retried attempt
    system = bodies[0]["messages"][0]["content"]
    assert system.startswith("memlab-task: summarize") and "to-dos" in system and "at most 60 words" in system
    assert bodies[0]["max_tokens"] == 80
    # the loopback's offline answer is the extractive summary of the folded turns
    assert stm.summary == ("user: I will pay 100 dollars on day 1. user: I will pay 200 dollars on day 2. "
                           "user: I will pay 300 dollars on day 3. user: I will pay 400 dollars on day 4.")
    usage = stm.usage
    assert usage.calls == 2 and usage.prompt_tokens > 0 and usage.completion_tokens > 0
    assert usage.as_dict() == stm.resolved_summarizer.usage.as_dict()


def test_async_add_matches_sync(server, chat_llm):
    sync = ShortTermMemory(max_turns=2, keep_recent=1, summarizer=LLMSummarizer(chat_llm), token_counter=CHARS)
    asy = ShortTermMemory(max_turns=2, keep_recent=1, summarizer=LLMSummarizer(chat_llm), token_counter=CHARS)

    async def feed():
        for i in range(1, 5):
            await asy.aadd(turn(i))

    for i in range(1, 5):
        sync.add(turn(i))
    asyncio.run(feed())
    assert sync.messages() == asy.messages() and sync.usage == asy.usage


def test_summary_sources_are_the_turns_its_sentences_came_from():
    texts = {1: "I live in Rome.",            # score 3 (first person 2 + cue "live" 1)
             2: "The sky is grey.",           # 0: dropped
             3: "I own 3 cats.",              # 4
             4: "Nice weather.",              # 0
             5: "I paid 40 euros.",           # 4
             6: "We moved 2 times in 2020.",  # 5
             7: "ok"}

    def fold_all(stm):
        summaries = []
        for i, text in texts.items():
            stm.add(turn(i, text))
            summaries.append((stm.summary, stm.summary_record.source_ids if stm.summary_record else None))
        return summaries

    def fresh():
        return ShortTermMemory(max_turns=2, keep_recent=1, summarizer=ExtractiveSummarizer(max_sentences=2))

    summaries = fold_all(stm := fresh())
    assert stm.folds == 3
    assert summaries[2] == ("user: I live in Rome.", ["t1"])                       # folds t1, t2
    assert summaries[4] == ("user: I live in Rome. user: I own 3 cats.", ["t1", "t3"])  # folds t3, t4
    # folds t5, t6: "We moved" (5) and the carried-over "I own 3 cats" (4, earlier than t5's 4)
    # win; the carried sentence keeps its turn t3, Rome's t1 and the unused t5 are gone
    assert summaries[6] == ("user: I own 3 cats. user: We moved 2 times in 2020.", ["t3", "t6"])
    assert stm.summary_pieces == [("user: I own 3 cats.", ("t3",)), ("user: We moved 2 times in 2020.", ("t6",))]
    # the async path folds the same way
    asy = fresh()

    async def feed():
        for i, text in texts.items():
            await asy.aadd(turn(i, text))

    asyncio.run(feed())
    assert asy.records() == stm.records() and asy.summary_pieces == stm.summary_pieces


def test_empty_summary_has_no_record_and_no_sources():
    stm = ShortTermMemory(max_turns=3, keep_recent=1)
    for i in range(1, 31):
        stm.add(turn(i, f"ok {i}"))
    # folds at turns 4, 7, ..., 28 (each keeps the newest turn); "ok i" scores 0
    assert stm.folds == 9 and stm.summary == "" and stm.summary_record is None
    assert [r.id for r in stm.records()] == ["t28", "t29", "t30"]


def test_llm_summary_sources_are_the_folded_turns_it_lexically_keeps():
    from memlab.offline import OfflineLLM

    llm_stm = ShortTermMemory(max_turns=2, keep_recent=1, summarizer=LLMSummarizer(OfflineLLM()))
    texts = ["ok 1", "ok 2", "I own 33 cats.", "ok 4", "ok 5", "ok 6", "ok 7"]
    seen = []
    for i, text in enumerate(texts, 1):
        llm_stm.add(turn(i, text))
        record = llm_stm.summary_record
        seen.append((llm_stm.summary, record.source_ids if record else None))
    assert seen[2] == ("", None)  # t1, t2 folded into an empty summary: no sources
    # t3, t4 folded: the summary keeps t3's terms (own, 33, cats); "ok 4" has no content terms
    assert seen[4] == ("user: I own 33 cats.", ["t3"])
    assert seen[6] == ("user: I own 33 cats.", ["t3"])
    assert llm_stm.summary_pieces == [("user: I own 33 cats.", ("t3",))]


def test_lexical_attribution_threshold_is_half_of_the_distinct_content_terms():
    from memlab.summarizers import attributed

    recs = [turn(1, "Paris trip booked"), turn(2, "Paris weather cold"), turn(3, "ok")]
    pieces = attributed("The Paris trip is booked for May.", recs, previous=[("Rome visit", ("t0",))])
    # t1: 3 of 3 terms; t2: 1 of 3 < ceil(1.5) = 2; t3: no terms; previous piece: 0 of 2
    assert pieces == [("The Paris trip is booked for May.", ("t1",))]
    assert attributed("  ", recs) == []


def test_summarize_with_sources_sync_and_async_agree():
    s = ExtractiveSummarizer()
    chunk = [turn(1, "Nice weather."), turn(2, "I own 3 cats.")]
    assert s.summarize_with_sources(chunk) == ("user: I own 3 cats.", ["t2"])
    assert asyncio.run(s.asummarize_with_sources(chunk)) == ("user: I own 3 cats.", ["t2"])
    assert s.summarize_with_sources([turn(1, "ok")]) == ("", [])


class SumCounter(ApproxTokenCounter):
    """Counts a request another way than the sum of its messages: never taken message by message."""

    def count_messages(self, messages):
        return 1000 * len(messages)


@pytest.mark.parametrize("counter", [None, CHARS, SumCounter()])
def test_token_count_counted_once_per_message_equals_counting_the_messages(counter):
    short = ShortTermMemory(max_turns=6, keep_recent=2, token_budget=300, token_counter=counter)
    for i in range(40):
        short.add(turn(i, f"I own {30 + i} cats. " * (i % 4 + 1), role="user" if i % 2 else "assistant"))
        assert short.token_count() == int(short._counter.count_messages(short.messages()))
    assert short.folds > 3 and short.summary
    kept = short._turns[-1]
    kept.content = "changed after it was added"  # a record changed in place is counted again
    assert short.token_count() == int(short._counter.count_messages(short.messages()))
    short.clear()
    assert short.token_count() == 0
