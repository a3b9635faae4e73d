"""Property-based tests (hypothesis): invariants that must hold for any input sequence.

- BM25: an index updated incrementally (adds, re-adds that replace, removes, compaction)
  ranks and scores exactly like one rebuilt from the surviving records;
- fusion (RRF, weighted sum): the fused scores do not depend on the order of the lists
  (weights permuted with them), and neither does the ranking apart from exact ties;
- ChatHistoryBlock: under any sequence of writes, pops, removals and replaces the history
  equals a plain-list model, and a leading system message is never popped nor removed and is
  in every window.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memlab.blocks import ChatHistoryBlock
from memlab.records import MemoryRecord
from memlab.retrieval.bm25 import BM25Retriever
from memlab.retrieval.fusion import rrf, weighted_sum

WORDS = ["tea", "coffee", "cat", "dog", "paris", "rome", "run", "swim"]
text = st.lists(st.sampled_from(WORDS), min_size=0, max_size=6).map(" ".join)


def rec(i, content, role="user"):
    return MemoryRecord(role, content, id=str(i), timestamp=float(i) if str(i).isdigit() else 0.0)


# -- BM25: incremental == rebuilt ----------------------------------------------------------------

bm25_op = st.one_of(
    st.tuples(st.just("add"), st.integers(0, 12), text),  # an existing id is replaced (moves last)
    st.tuples(st.just("remove"), st.integers(0, 12), st.just("")),
)


@settings(max_examples=150, deadline=None)
@given(ops=st.lists(bm25_op, min_size=1, max_size=60), query=text.filter(bool))
def test_incremental_bm25_equals_a_rebuilt_index(ops, query):
    live = BM25Retriever()
    alive: dict[str, str] = {}
    for kind, i, content in ops:
        if kind == "add":
            live.add([rec(i, content)])
            alive.pop(str(i), None)
            alive[str(i)] = content
        else:
            live.remove([str(i)])
            alive.pop(str(i), None)
    rebuilt = BM25Retriever()
    rebuilt.add([rec(i, c) for i, c in alive.items()])
    got, want = live.search(query, k=100), rebuilt.search(query, k=100)
    assert [h.id for h in got] == [h.id for h in want]
    assert [h.score for h in got] == pytest.approx([h.score for h in want], abs=1e-9)


# -- fusion: list order does not matter ------------------------------------------------------------

ranked = st.lists(st.tuples(st.sampled_from("abcdefgh"), st.floats(0, 10)), max_size=6)


@settings(max_examples=150, deadline=None)
@given(lists=st.lists(ranked, min_size=1, max_size=4), data=st.data())
def test_fusion_does_not_depend_on_the_order_of_the_lists(lists, data):
    weights = data.draw(st.lists(st.floats(0.05, 1.0), min_size=len(lists), max_size=len(lists)))
    order = data.draw(st.permutations(range(len(lists))))
    permuted, permuted_w = [lists[i] for i in order], [weights[i] for i in order]
    for fuse in (lambda ls, w: rrf(ls, w, k=60), lambda ls, w: weighted_sum(ls, w)):
        a, b = fuse(lists, weights), fuse(permuted, permuted_w)
        assert dict(a) == pytest.approx(dict(b), abs=1e-12)
        scores = [s for _, s in a]
        if all(abs(x - y) > 1e-9 for n, x in enumerate(scores) for y in scores[n + 1:]):
            assert [i for i, _ in a] == [i for i, _ in b]  # no ties: the same ranking


# -- ChatHistoryBlock: protections under any operation sequence -------------------------------------

block_op = st.one_of(
    st.tuples(st.just("write"), st.lists(st.sampled_from(["user", "assistant", "system"]), min_size=1, max_size=3)),
    st.tuples(st.just("pop"), st.integers(0, 4)),
    st.tuples(st.just("remove"), st.lists(st.integers(0, 8), max_size=3)),
    st.tuples(st.just("window"), st.integers(0, 5)),
)


@settings(max_examples=150, deadline=None)
@given(lead=st.sampled_from(["system", "developer", None]), ops=st.lists(block_op, max_size=30))
def test_chat_history_block_protects_its_leading_system_message(lead, ops):
    block = ChatHistoryBlock()
    model: list[tuple[str, str]] = []  # (role, content)
    n = 0

    def write(role):
        nonlocal n
        block.write_records([MemoryRecord(role, f"m{n}", id=f"m{n}")])
        model.append((role, f"m{n}"))
        n += 1

    if lead is not None:
        write(lead)
    for kind, arg in ops:
        protected = 1 if model and model[0][0] in ("system", "developer") else 0
        if kind == "write":
            for role in arg:
                write(role)
        elif kind == "pop":
            k = min(arg, len(model) - protected)
            removed = block.pop_records(arg)
            assert [r.content for r in removed] == [c for _, c in model[len(model) - k:]]
            del model[len(model) - k:]
        elif kind == "remove":
            valid = [i for i in arg if i < len(model)]
            if len(valid) != len(arg):
                with pytest.raises(IndexError):
                    block.remove_records_by_indices(arg)
                continue  # nothing removed
            gone = sorted(set(valid) - ({0} if protected else set()))
            removed = block.remove_records_by_indices(arg)
            assert [r.content for r in removed] == [model[i][1] for i in gone]
            model[:] = [m for i, m in enumerate(model) if i not in gone]
        else:
            window = [r.memory_record.content for r in block.retrieve(arg)]
            rest = model[protected:]
            expected = model[:protected] + (rest[max(0, len(rest) - arg):] if arg else [])
            assert window == [c for _, c in expected]
        assert [(r.role.value, r.content) for r in block.records()] == model
        if lead is not None:  # the leading message written first is still first
            assert model[0] == (lead, "m0")
