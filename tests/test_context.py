import re
import random

import pytest

from memlab.base import ConfigError, MemlabError
from memlab.context import ContextBudgetError, ScoreBasedContextCreator
from memlab.records import ContextRecord, MemoryRecord, ToolCall
from memlab.testing.doubles import WordCounter
from memlab.tokens import TiktokenCounter


def cr(id, role, content, ts, score, **kw):
    return ContextRecord(MemoryRecord(role=role, content=content, id=id, timestamp=ts, **kw),
                         score=score, timestamp=ts)


def creator(limit):
    return ScoreBasedContextCreator(token_counter=WordCounter(), token_limit=limit)


def contents(messages):
    return [m["content"] for m in messages]


# Costs with WordCounter: 3 framing + 1 role word + content words; +3 reply priming per request.
SYSTEM = cr("s", "system", "be nice", 0, 1.0)  # 6


def test_empty_records():
    assert creator(10).create_context([]) == ([], 0)


def test_everything_fits_is_chronological_with_input_order_ties():
    records = [cr("c", "user", "c c", 3, 0.1), cr("a", "user", "a a", 1, 0.9),
               cr("b2", "user", "b2", 2, 0.5), cr("b1", "user", "b1", 2, 0.5), SYSTEM]
    msgs, n = creator(100).create_context(records)
    assert contents(msgs) == ["be nice", "a a", "b2", "b1", "c c"]
    assert n == 6 + 6 + 5 + 5 + 6 + 3 == 31


def test_exact_fit_is_kept():
    records = [SYSTEM, cr("u", "user", "x x", 1, 0.1)]
    assert creator(15).create_context(records) == (
        [{"role": "system", "content": "be nice"}, {"role": "user", "content": "x x"}], 15)
    msgs, n = creator(14).create_context(records)
    assert contents(msgs) == ["be nice"] and n == 9


def test_system_alone_over_budget_raises_naming_both_numbers():
    with pytest.raises(ContextBudgetError, match=r"needs 9 tokens, more than token_limit=8"):
        creator(8).create_context([SYSTEM, cr("u", "user", "x", 1, 1.0)])
    assert issubclass(ContextBudgetError, MemlabError)
    msgs, n = creator(9).create_context([SYSTEM, cr("u", "user", "x", 1, 1.0)])
    assert contents(msgs) == ["be nice"] and n == 9


def test_greedy_by_score_skips_what_does_not_fit():
    records = [SYSTEM,
               cr("u1", "user", "one one", 1, 0.5),                 # 6
               cr("u2", "user", "two two", 2, 0.9),                 # 6
               cr("u3", "user", "three a b c d e", 3, 0.8),         # 10
               cr("u4", "user", "four four", 4, 0.3)]               # 6
    # limit 21: room = 21 - 3 - 6 = 12 -> u2 (6, room 6), u3 (10) skipped, u1 (6, room 0), u4 skipped
    msgs, n = creator(21).create_context(records)
    assert contents(msgs) == ["be nice", "one one", "two two"] and n == 21
    # limit 25: room 16 -> u2 (room 10), u3 (room 0); u1 and u4 do not fit
    msgs, n = creator(25).create_context(records)
    assert contents(msgs) == ["be nice", "two two", "three a b c d e"] and n == 25
    # limit 20: room 11 -> u2 (room 5); nothing else fits
    msgs, n = creator(20).create_context(records)
    assert contents(msgs) == ["be nice", "two two"] and n == 15


def test_equal_scores_keep_newer_first():
    records = [cr(f"u{i}", "user", f"m{i} x", i, 1.0) for i in range(1, 5)]  # 6 each
    msgs, n = creator(3 + 12).create_context(records)
    assert contents(msgs) == ["m3 x", "m4 x"] and n == 15


def test_no_system_and_nothing_fits():
    assert creator(5).create_context([cr("u", "user", "a b c", 1, 1.0)]) == ([], 0)


def test_dedupe_keeps_the_higher_score():
    records = [SYSTEM,
               cr("old", "user", "old old", 1, 0.2),
               cr("new", "user", "new new", 2, 0.5),
               cr("old", "user", "old old", 1, 0.9)]  # same id recalled with a higher score
    msgs, n = creator(100).create_context(records)
    assert contents(msgs) == ["be nice", "old old", "new new"] and n == 21
    # room for one: the deduplicated 'old' (0.9) beats 'new' (0.5)
    msgs, n = creator(15).create_context(records)
    assert contents(msgs) == ["be nice", "old old"] and n == 15


def tool_records(call_score, result_score):
    call = cr("a", "assistant", "", 2, call_score, tool_calls=[ToolCall("c1", "f", "{}")])
    # assistant: 3 + 1 + f 1 + {} 1 = 6; tool: 3 + 1 + "r r" 2 + "c1" 1 = 7
    result = cr("t", "tool", "r r", 3, result_score, tool_call_id="c1")
    return [SYSTEM, cr("u", "user", "q q", 1, 0.5), call, result]


def test_tool_call_and_result_are_one_unit_scored_by_max():
    records = tool_records(0.1, 0.9)
    # room = 25 - 3 - 6 = 16: the unit (13, score 0.9) first, then u (6) no longer fits
    msgs, n = creator(25).create_context(records)
    assert [m["role"] for m in msgs] == ["system", "assistant", "tool"] and n == 6 + 13 + 3
    assert msgs[1]["tool_calls"][0]["id"] == "c1" and msgs[1]["content"] is None


def test_tool_unit_kept_whole_or_not_at_all():
    records = tool_records(0.9, 0.9)
    # room = 21 - 9 = 12: the unit needs 13, the tool message alone (7) would fit but is
    # never kept without its call; u (6) fits
    msgs, n = creator(21).create_context(records)
    assert contents(msgs) == ["be nice", "q q"] and n == 15


def test_orphan_tool_result_is_its_own_unit():
    records = [SYSTEM, cr("t", "tool", "r r", 3, 0.9, tool_call_id="gone"),
               cr("u", "user", "q q", 1, 0.5)]
    msgs, n = creator(3 + 6 + 7).create_context(records)
    assert [m["role"] for m in msgs] == ["system", "tool"] and n == 16


def test_later_system_message_is_an_ordinary_unit():
    records = [cr("u", "user", "q q", 1, 0.9), cr("s2", "system", "late rule", 2, 0.5)]
    msgs, n = creator(9).create_context(records)
    assert contents(msgs) == ["q q"] and n == 9


def test_rejects_non_context_records():
    with pytest.raises(TypeError, match="expects ContextRecord items, got MemoryRecord"):
        creator(10).create_context([MemoryRecord("user", "x")])


@pytest.mark.parametrize("bad", [0, -5, 1.5, "100", True, None])
def test_token_limit_validation(bad):
    message = re.escape(f"ScoreBasedContextCreator parameter 'token_limit': expected an int >= 1, got {bad!r}")
    with pytest.raises(ConfigError, match=message):
        ScoreBasedContextCreator(token_limit=bad)
    c = ScoreBasedContextCreator(token_limit=10)
    with pytest.raises(ConfigError, match=message):
        c.set_params(token_limit=bad)
    assert c.token_limit == 10


def test_token_counter_validation_and_default():
    with pytest.raises(ConfigError, match=r"ScoreBasedContextCreator parameter 'token_counter': "
                                          r"expected a TokenCounter or None, got 'o200k_base'"):
        ScoreBasedContextCreator(token_counter="o200k_base")
    c = ScoreBasedContextCreator()
    assert isinstance(c.counter, TiktokenCounter) and c.counter.encoding_name == "o200k_base"
    assert c.get_params(deep=False) == {"token_counter": None, "token_limit": 4096}
    assert repr(creator(7)) == "ScoreBasedContextCreator(token_counter=WordCounter(), token_limit=7)"


def test_with_tiktoken_exact_budget():
    records = [cr("s", "system", "You are a helpful assistant.", 0, 1.0),   # 10
               cr("u1", "user", "hello world", 1, 0.81),                      # 6
               cr("a1", "assistant", "Hello, world!", 2, 0.9),                # 8
               cr("u2", "user", "The quick brown fox jumps over the lazy dog.", 3, 1.0)]  # 14
    c = ScoreBasedContextCreator(TiktokenCounter(), token_limit=10 + 6 + 8 + 14 + 3)
    msgs, n = c.create_context(records)
    assert len(msgs) == 4 and n == 41
    # one token short: room 27 -> u2 (14), a1 (8), u1 (6) no longer fits
    msgs, n = c.set_params(token_limit=40).create_context(records)
    assert contents(msgs) == ["You are a helpful assistant.", "Hello, world!",
                              "The quick brown fox jumps over the lazy dog."] and n == 35


def test_invariants_on_random_inputs():
    rng = random.Random(7)
    counter = WordCounter()
    for trial in range(200):
        records = [cr("s", "system", "sys " * rng.randint(1, 3), 0, 1.0)]
        for i in range(rng.randint(0, 8)):
            ts = rng.randint(1, 5)
            if rng.random() < 0.25:
                call_id = f"c{trial}-{i}"
                records.append(cr(f"a{i}", "assistant", "", ts, rng.random(),
                                  tool_calls=[ToolCall(call_id, "f", "{}")]))
                records.append(cr(f"t{i}", "tool", "w " * rng.randint(1, 4), ts, rng.random(),
                                  tool_call_id=call_id))
            else:
                records.append(cr(f"u{i}", "user", "w " * rng.randint(1, 6), ts, rng.random()))
        limit = rng.randint(12, 60)
        msgs, n = ScoreBasedContextCreator(counter, limit).create_context(records)
        assert n == counter.count_messages(msgs) <= limit
        assert msgs[0]["role"] == "system"
        calls = {tc["id"] for m in msgs for tc in m.get("tool_calls", [])}
        results = {m["tool_call_id"] for m in msgs if m["role"] == "tool"}
        assert calls == results  # every kept call has its result and vice versa


def test_the_leading_system_message_stays_first_and_protected_whatever_its_timestamp():
    creator = ScoreBasedContextCreator(token_counter=WordCounter(), token_limit=30)
    system = cr("sys", "system", "You are a helpful travel agent today", 5000.0, 1.0)
    turns = [cr(f"u{i}", "user", f"turn number {i}", 1000.0 + i, 0.5) for i in range(3)]
    messages, _ = creator.create_context([system] + turns)
    assert [m["role"] for m in messages][0] == "system"
    # 3 + 1 + 7 words = 11 > a budget of 12 - 3 reply tokens: the system message alone does not fit
    with pytest.raises(ContextBudgetError):
        ScoreBasedContextCreator(token_counter=WordCounter(), token_limit=12).create_context([system] + turns)


def test_a_system_message_that_is_not_first_is_an_ordinary_record():
    creator = ScoreBasedContextCreator(token_counter=WordCounter(), token_limit=1000)
    turns = [cr("u0", "user", "hello", 1.0, 0.5), cr("sys", "system", "late system note", 0.5, 1.0)]
    messages, _ = creator.create_context(turns)
    assert [m["content"] for m in messages] == ["late system note", "hello"]


def test_protect_first_false_makes_a_leading_system_record_an_ordinary_candidate():
    # "be nice" costs 6, each turn 6; limit 15 leaves 12 after the reply priming
    records = [cr("s", "system", "be nice", 5.0, 0.1), cr("u1", "user", "one one", 1, 0.5),
               cr("u2", "user", "two two", 2, 0.9)]
    # protected (the default): the system record goes first and is kept whatever its score
    assert contents(creator(15).create_context(records)[0]) == ["be nice", "two two"]
    # not protected: walked by score (u2, u1 fill the 12) and placed by its timestamp
    assert contents(creator(15).create_context(records, protect_first=False)[0]) == ["one one", "two two"]
    assert contents(creator(100).create_context(records, protect_first=False)[0]) == [
        "one one", "two two", "be nice"]
    # and too big alone is no error then: it is skipped like any record
    big = cr("s", "system", " ".join(["w"] * 20), 0.0, 1.0)
    assert [r.id for r in creator(15).select([big] + records[1:], protect_first=False)] == ["u1", "u2"]
    with pytest.raises(ContextBudgetError, match=r"needs 27 tokens, more than token_limit=15"):
        creator(15).select([big] + records[1:])


def test_select_with_a_cost_function_charges_those_costs():
    records = [cr("a", "user", "one", 1, 0.9), cr("b", "user", "two", 2, 0.5), cr("c", "user", "three", 3, 0.1)]
    # each costs 5 as its own message; charged 2, 3, 4 instead: 2 + 3 + 4 + 3 = 12
    charge = {"a": 2, "b": 3, "c": 4}
    assert [r.id for r in creator(12).select(records, cost=lambda r: charge[r.id])] == ["a", "b", "c"]
    # 11: a (2) and b (3) fit in the 8 left after priming, c (4) does not
    assert [r.id for r in creator(11).select(records, cost=lambda r: charge[r.id])] == ["a", "b"]
    assert [r.id for r in creator(11).select(records)] == ["a"]  # 5 + 5 > 8
