"""Load(token_limit=...): the layered memory's context within a token budget, chosen by
ScoreBasedContextCreator. Exact values with WordCounter (one token per word), so each
figure below is hand-checkable:

    header message  "Relevant memories (oldest first):"      3 + 1 (role) + 4 = 8
    m1 line "- [1970-01-02] Ann lives in Paris"   score 0.9   6
    m3 line "- [1970-01-04] Bob plays chess on Sundays" 0.7   7
    m2 line "- [1970-01-03] Ann loves green tea"  score 0.5   6
    t0 "Hi, I'm back." (user)                                 3 + 1 + 3 = 7
    t1 "Welcome back, Ann." (assistant, newer)                3 + 1 + 3 = 7
    unbudgeted context: 8 + 19 + 7 + 7 + 3 (reply priming) = 44
"""

from __future__ import annotations

import pytest

from memlab.base import ConfigError
from memlab.context import ContextBudgetError
from memlab.llm.counting import FallbackTokenCounter
from memlab.memories.layered import (
    LayeredMemory,
    Layers,
    Load,
    LongTermMemory,
    RuleBasedExtractor,
    ShortTermMemory,
    WorkingState,
)
from memlab.memories.layered.steps.load import CONFLICT_INSTRUCTION, MEMORY_HEADER
from memlab.records import Hit, MemoryRecord
from memlab import strategies
from memlab.testing.doubles import WordCounter
from memlab.tokens import TiktokenCounter, TokenCounter

DAY = 86400.0


def hit(mid: str, text: str, day: int, score: float, rank: int) -> Hit:
    record = MemoryRecord("system", text, id=mid, timestamp=day * DAY, metadata={"source_ids": [f"S:{mid}"]})
    return Hit(record, score, record.timestamp, rank=rank)


def hits() -> list[Hit]:
    """As a Filter step leaves them: best first."""
    return [hit("m1", "Ann lives in Paris", 1, 0.9, 1), hit("m3", "Bob plays chess on Sundays", 3, 0.7, 2),
            hit("m2", "Ann loves green tea", 2, 0.5, 3)]


def layers(counter: TokenCounter | None = None, **short_term) -> Layers:
    short = ShortTermMemory(token_counter=counter or WordCounter(), **short_term)
    short.add(MemoryRecord("user", "Hi, I'm back.", id="t0", timestamp=4 * DAY))
    short.add(MemoryRecord("assistant", "Welcome back, Ann.", id="t1", timestamp=4 * DAY + 60))
    return Layers(short, LongTermMemory(), RuleBasedExtractor())


def load(limit: int | None, **kw) -> WorkingState:
    step = Load(token_counter=WordCounter(), token_limit=limit, **kw)
    return step.run(WorkingState("q", selected=hits()), layers())


LINES = {"m1": "- [1970-01-02] Ann lives in Paris", "m2": "- [1970-01-03] Ann loves green tea",
         "m3": "- [1970-01-04] Bob plays chess on Sundays"}
T0 = {"role": "user", "content": "Hi, I'm back."}
T1 = {"role": "assistant", "content": "Welcome back, Ann."}


def memory(*ids: str, conflict: bool = False) -> dict:
    head = [MEMORY_HEADER] + ([CONFLICT_INSTRUCTION] if conflict else [])
    return {"role": "system", "content": "\n".join(head + [LINES[i] for i in ids])}


# what each limit keeps, by the rule (see the module doc for the costs):
# 1. the turns within L: t1 (newest) needs 7 + 3 <= L, both 14 + 3 <= L;
# 2. memories within L - 8 beside both turns: m1 needs 8 + 14 + 6 + 3 = 31, then m3 (7) at 38,
#    m2 (6) at 44; at 37 the 6 tokens left skip m3 (7) and take m2 (6).
EXPECTED = [(range(1, 10), [], []), (range(10, 17), [], [T1]), (range(17, 31), [], [T0, T1]),
            (range(31, 37), ["m1"], [T0, T1]), (range(37, 38), ["m1", "m2"], [T0, T1]),
            (range(38, 44), ["m1", "m3"], [T0, T1]), (range(44, 60), ["m1", "m2", "m3"], [T0, T1])]


def test_every_limit_keeps_what_the_rule_says_and_fits():
    full = load(None)
    assert full.context.token_count == 44
    assert WordCounter().count_messages(full.context.messages) == 44
    seen = 0
    for limits, kept, turns in EXPECTED:
        for limit in limits:
            ctx = load(limit).context
            want = ([memory(*kept)] if kept else []) + turns
            assert ctx.messages == want, limit
            assert ctx.token_count == WordCounter().count_messages(want) <= limit
            seen += 1
    assert seen == 59


def test_a_large_limit_keeps_everything_byte_for_byte():
    for kw in ({}, {"system_prompt": "Be brief."}, {"conflict_instruction": CONFLICT_INSTRUCTION},
               {"system_prompt": "", "include_dates": False}):
        free, budgeted = load(None, **kw), load(10**6, **kw)
        assert budgeted.context == free.context and budgeted.messages == free.messages
        assert [h.id for h in budgeted.selected] == ["m1", "m3", "m2"]
    # the exact size is large enough: nothing is cut at L = the unbudgeted count
    assert load(44).context == load(None).context


def test_short_term_is_kept_before_memories_and_memories_by_score():
    # 30: the turns (17) fit, m1 would need 31: no memory, not a turn dropped for one
    assert load(30).context.messages == [T0, T1]
    # 24: 8 + 6 + 7 + 3 = 24 would fit m1 beside t1 alone, but t0 outranks every memory
    assert load(24).context.messages == [T0, T1]
    # 43: the lowest score (m2) goes first; 36: then m3
    assert load(43).context.record_ids == ["m1", "m3", "t0", "t1"]
    assert load(36).context.record_ids == ["m1", "t0", "t1"]
    # equal scores: the newer memory is kept (the creator's tie rule)
    tied = [hit("old", "Ann lives in Paris", 1, 0.5, 1), hit("new", "Ann lives in Rome", 2, 0.5, 2)]
    state = Load(token_counter=WordCounter(), token_limit=31).run(WorkingState("q", selected=tied), layers())
    assert state.context.record_ids == ["new", "t0", "t1"]


def test_the_header_and_the_conflict_line_are_paid_for():
    # the conflict line adds 10 words to the header: m1 now needs 18 + 14 + 6 + 3 = 41
    assert load(40, conflict_instruction=CONFLICT_INSTRUCTION).context.messages == [T0, T1]
    at41 = load(41, conflict_instruction=CONFLICT_INSTRUCTION).context
    assert at41.messages == [memory("m1", conflict=True), T0, T1] and at41.token_count == 41


def test_ids_sources_selection_and_trace_follow_what_was_kept():
    state = load(36)
    assert state.context.record_ids == ["m1", "t0", "t1"]
    assert state.context.source_ids == ["S:m1", "t0", "t1"]
    assert [h.id for h in state.selected] == ["m1"]  # what LayeredMemory reinforces
    assert state.trace == ["load: 3 context message(s), 31 tokens; token_limit=36 dropped "
                           "2 of 3 memories and 0 of 2 short-term messages"]
    # the agent prompt carries the same budgeted memory message
    assert state.messages[1:] == [memory("m1"), T0, T1, {"role": "user", "content": "q"}]
    small = load(12)
    assert small.context.record_ids == ["t1"] and small.context.source_ids == ["t1"]
    assert small.trace[-1].endswith("dropped 3 of 3 memories and 1 of 2 short-term messages")
    assert load(None).trace == ["load: 3 context message(s), 44 tokens"]


def test_system_prompt_is_protected_and_too_big_raises():
    brief = {"role": "system", "content": "Be brief."}  # 3 + 1 + 2 = 6
    # turns: t1 at 6 + 7 + 3 = 16, both at 23; m1 at 6 + 8 + 14 + 6 + 3 = 37
    assert load(15, system_prompt="Be brief.").context.messages == [brief]
    assert load(16, system_prompt="Be brief.").context.messages == [brief, T1]
    assert load(36, system_prompt="Be brief.").context.messages == [brief, T0, T1]
    assert load(37, system_prompt="Be brief.").context.messages == [brief, memory("m1"), T0, T1]
    assert load(9, system_prompt="Be brief.").context.messages == [brief]
    with pytest.raises(ContextBudgetError, match=r"^the system message alone needs 9 tokens, more than "
                                                 r"token_limit=8$"):
        load(8, system_prompt="Be brief.")


def test_nothing_is_protected_without_a_system_prompt():
    # a memory line longer than the limit, no short-term: it is skipped, not protected
    long = [hit("big", " ".join(["word"] * 50), 1, 0.9, 1), hit("m2", "Ann loves green tea", 2, 0.5, 2)]
    empty = Layers(ShortTermMemory(token_counter=WordCounter()), LongTermMemory(), RuleBasedExtractor())
    state = Load(token_counter=WordCounter(), token_limit=20).run(WorkingState("q", selected=long), empty)
    assert state.context.messages == [memory("m2")] and state.context.token_count == 3 + 1 + 4 + 6 + 3
    # a leading short-term summary (a system message) is not protected either: the newest turn
    # outranks it, so a small limit keeps that turn and no ContextBudgetError is raised
    folded = Layers(ShortTermMemory(max_turns=3, keep_recent=1, token_counter=WordCounter()),
                    LongTermMemory(), RuleBasedExtractor())
    for i in range(4):
        folded.short_term.add(MemoryRecord("user", f"turn number {i} here", id=f"u{i}", timestamp=float(i)))
    records = folded.short_term.records()
    assert records[0].role.is_system and records[-1].id == "u3"
    state = Load(token_counter=WordCounter(), token_limit=11).run(WorkingState("q"), folded)
    assert state.context.messages == [{"role": "user", "content": "turn number 3 here"}]


class JoinCostly(TokenCounter):
    """Words, plus the square of the line breaks: joining lines costs more than the parts
    (as a BPE join might), so the exact recount has to drop lines."""

    def _count(self, text: str) -> int:
        return len(text.split()) + text.count("\n") ** 2


def test_the_exact_recount_drops_the_weakest_line_until_it_fits():
    # creator's estimate with all three: 8 + (7 + 7 + 8) + 14 + 3 = 47 <= 47; the real
    # message has 3 breaks: 8 + 19 + 9 = 36, context 36 + 14 + 3 = 53 > 47 -> drop m2 (0.5):
    # 8 + 13 + 4 = 25, context 25 + 17 = 42
    step = Load(token_counter=JoinCostly(), token_limit=47)
    state = step.run(WorkingState("q", selected=hits()), layers(JoinCostly()))
    assert state.context.messages == [memory("m1", "m3"), T0, T1]
    assert state.context.token_count == 42 and state.context.record_ids == ["m1", "m3", "t0", "t1"]
    for limit in range(1, 60):
        ctx = Load(token_counter=JoinCostly(), token_limit=limit).run(
            WorkingState("q", selected=hits()), layers(JoinCostly())).context
        assert ctx.token_count == JoinCostly().count_messages(ctx.messages) <= limit


def test_the_limit_holds_with_tiktoken_at_every_size():
    texts = ["Ann moved to Paris in 2019; she works at the Louvre.", "Bob's dog Rex is 3 years old.",
             "Ann switched from coffee to green tea last month!", "The dentist appointment is on Friday at 9:30.",
             "Ann's sister lives in Osaka (Japan)."]
    selected = [hit(f"m{i}", t, i + 1, 1.0 - i / 10, i + 1) for i, t in enumerate(texts)]
    counter = TiktokenCounter()
    lay = layers(counter)
    full = Load(token_counter=counter).run(WorkingState("q", selected=list(selected)), lay).context
    for limit in range(1, full.token_count + 1):
        ctx = Load(token_counter=counter, token_limit=limit).run(WorkingState("q", selected=list(selected)),
                                                                 lay).context
        assert ctx.token_count == counter.count_messages(ctx.messages) <= limit
    assert Load(token_counter=counter, token_limit=full.token_count).run(
        WorkingState("q", selected=list(selected)), lay).context == full


@pytest.mark.parametrize("bad", [0, -1, "5", 2.0, True])
def test_token_limit_is_validated(bad):
    with pytest.raises(ConfigError, match=r"^Load parameter 'token_limit': expected an int >= 1 or None, got "):
        Load(token_limit=bad)


def test_failed_set_params_keeps_the_old_limit():
    step = Load(token_limit=30)
    with pytest.raises(ConfigError, match=r"^Load parameter 'token_limit': expected an int >= 1 or None, got -1$"):
        step.set_params(token_limit=-1)
    assert step.token_limit == 30
    assert step.set_params(token_limit=None).token_limit is None
    # the budget counts message by message: a duck-typed counter cannot take a limit
    duck = Load(token_counter=FallbackTokenCounter())
    with pytest.raises(ConfigError, match=r"^Load parameter 'token_counter': expected a memlab.tokens.TokenCounter "
                                          r"when token_limit is set .*got FallbackTokenCounter$"):
        duck.set_params(token_limit=30)
    assert duck.token_limit is None


def fed(memory: LayeredMemory) -> LayeredMemory:
    turns = [("user", "Hi! My name is Ann and I live in Paris."), ("assistant", "Nice to meet you, Ann."),
             ("user", "I love coffee, especially in the morning."), ("assistant", "Coffee lovers unite."),
             ("user", "My dog's name is Rex and he is 3 years old."), ("assistant", "Rex sounds lovely."),
             ("user", "Actually I switched to green tea last month."), ("assistant", "Green tea it is.")]
    for i, (role, text) in enumerate(turns, 1):
        memory.observe(MemoryRecord(role, text, id=f"D1:{i}", timestamp=1_700_000_000.0 + 60 * i))
    return memory


def test_layered_memory_builds_a_budgeted_context_end_to_end():
    def layered(limit):
        return fed(LayeredMemory(short_term=ShortTermMemory(max_turns=4, keep_recent=2, token_counter=WordCounter()),
                                 load_step=Load(token_counter=WordCounter(), token_limit=limit)))

    free = layered(None)
    query = "What does Ann drink?"
    full = free.build_context(query)
    shown = free.last_state.selected
    assert len(shown) >= 2 and full.token_count == WordCounter().count_messages(full.messages)
    # one token short: every short-term message still fits and exactly the lowest-scored
    # memory goes (the others, walked first, fit as before; its line costs >= 1)
    budgeted = layered(full.token_count - 1)
    ctx = budgeted.build_context(query)
    weakest = min(shown, key=lambda h: (h.score, h.record.timestamp))
    assert ctx.record_ids == [i for i in full.record_ids if i != weakest.id]
    assert ctx.token_count == WordCounter().count_messages(ctx.messages) <= full.token_count - 1
    # the dropped memory was not reinforced as recalled; the kept ones were
    counts = {r.id: r.metadata["access_count"] for r in budgeted.layers.long_term.records()}
    assert counts[weakest.id] == 0 and all(counts[h.id] == 1 for h in shown if h.id != weakest.id)


def test_the_layered_builtin_takes_the_limit_through_set_params():
    free = strategies.get("layered", embedder=None)
    capped = strategies.get("layered", embedder=None, load_step__token_limit=120)
    assert capped.load_step.token_limit == 120 and free.load_step.token_limit is None
    full, ctx = fed(free).build_context("What does Ann drink?"), fed(capped).build_context("What does Ann drink?")
    assert full.token_count > 120 >= ctx.token_count == TiktokenCounter().count_messages(ctx.messages)
    assert set(ctx.record_ids) < set(full.record_ids)
