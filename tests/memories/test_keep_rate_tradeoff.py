"""keep_rate matters only when history competes with other scored records for a budget.

CAMEL's memory semantics: in a ChatHistoryMemory alone scores fall monotonically with age,
so every keep_rate keeps the same newest turns; in a LongtermAgentMemory, history scored
keep_rate ** i competes with recalls scored by cosine similarity.
"""

import pytest

from memlab.blocks import ChatHistoryBlock, VectorDBBlock
from memlab.memories import ChatHistoryMemory, LongtermAgentMemory

# Every message costs 3 + 1 (role) + 2 words = 6 tokens with WordCounter.
# Budget: 3 reply priming + system 6 + three more messages.
BUDGET = 3 + 6 + 3 * 6


def conversation(rec):
    return [rec("s0", "be nice", role="system"),
            rec("m1", "apple banana"),  # old and relevant to the last question: cosine 1/sqrt(2)
            rec("m2", "filler two", role="assistant"), rec("m3", "filler three"),
            rec("m4", "filler four", role="assistant"), rec("m5", "filler five"),
            rec("m6", "filler six", role="assistant"),
            rec("m7", "apple please")]  # the question being answered


def kept(messages, records):
    by_content = {r.content: r.id for r in records}
    return [by_content[m["content"]] for m in messages]


@pytest.mark.parametrize("keep_rate", [0.0, 0.5, 0.9, 1.0])
def test_chat_history_alone_keeps_the_same_newest_turns(rec, word_creator, keep_rate):
    memory = ChatHistoryMemory(context_creator=word_creator(BUDGET), keep_rate=keep_rate)
    records = conversation(rec)
    memory.write_records(records)
    messages, tokens = memory.get_context()
    assert kept(messages, records) == ["s0", "m5", "m6", "m7"] and tokens == BUDGET


@pytest.mark.parametrize("window_size", [4, None])
@pytest.mark.parametrize("keep_rate,expected", [
    # 0.9: recent turns score 1, 0.9, 0.81 > recall 0.707: the old relevant turn is left out
    (0.9, ["s0", "m5", "m6", "m7"]),
    # 0.5: recent turns score 1, 0.5, 0.25: the recall (0.707) displaces m5 (0.25)
    (0.5, ["s0", "m1", "m6", "m7"]),
])
def test_longterm_low_keep_rate_lets_old_recall_displace_recent_turns(
        rec, word_creator, keyword_embedder, keep_rate, expected, window_size):
    memory = LongtermAgentMemory(
        context_creator=word_creator(BUDGET),
        chat_history_block=ChatHistoryBlock(keep_rate=keep_rate),
        vector_db_block=VectorDBBlock(embedding=keyword_embedder),
        retrieve_limit=1, window_size=window_size)
    records = conversation(rec)
    memory.write_records(records)
    messages, tokens = memory.get_context()
    assert kept(messages, records) == expected and tokens == BUDGET
