"""Differential tests: memlab's ChatHistoryBlock and VectorDBBlock against CAMEL's own.

Random operation sequences run on both libraries with the same inputs; after every
operation the outputs must agree, except for the differences memlab documents:

- ChatHistoryBlock scores: memlab's newest non-system message scores 1.0 and each older
  one ``keep_rate`` times the next; CAMEL multiplies first, so its newest scores
  ``keep_rate``: for every non-system record ``camel = keep_rate * memlab``;
- VectorDBBlock: scores are cosine similarities on both sides (CAMEL's through qdrant's
  float32 arithmetic: equal within 1e-5); records whose scores tie may come in another
  order, so ids are compared where the scores differ;
- a batch of only blank records: memlab writes nothing, CAMEL's block (with its default
  qdrant storage) raises ``ValueError: Empty update request`` (a CAMEL bug: it hands
  qdrant an empty upsert).

Only valid calls are generated for the operations whose invalid inputs memlab handles
differently on purpose (an out-of-range index raises in memlab, CAMEL ignores it; a
negative window is an error in memlab, "everything" in CAMEL); the shared errors
(``pop_records`` with a non-int or negative count) are compared.
"""

from __future__ import annotations

import random

import pytest

pytest.importorskip("camel", reason="the camel extra is not installed: pip install 'memlab[camel]'")
pytest.importorskip("qdrant_client", reason="the camel extra is not installed: pip install 'memlab[camel]'")

from camel.memories import ChatHistoryBlock as CamelChatHistoryBlock  # noqa: E402
from camel.memories import VectorDBBlock as CamelVectorDBBlock  # noqa: E402
from camel.storages.vectordb_storages import QdrantStorage  # noqa: E402

from memlab.adapters.camel import ID_KEY, MemlabEmbedding, to_camel  # noqa: E402
from memlab.blocks import ChatHistoryBlock, VectorDBBlock  # noqa: E402
from memlab.embeddings.hashing import HashingEmbedder  # noqa: E402
from memlab.records import MemoryRecord, Role  # noqa: E402

CHAT_SEQUENCES = 200
VECTOR_SEQUENCES = 100
WORDS = ["tea", "coffee", "osaka", "kyoto", "sister", "flight", "window", "budget", "spring", "hotel"]
KEEP_RATES = [0.0, 0.5, 0.9, 1.0]


def _text(rng: random.Random) -> str:
    if rng.random() < 0.1:
        return rng.choice(["", "   "])  # blank: VectorDBBlock skips it on both sides
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 5)))


def _records(rng: random.Random, start: int, n: int, first: bool) -> list[MemoryRecord]:
    out = []
    for i in range(n):
        if first and i == 0 and rng.random() < 0.5:
            role = Role.SYSTEM
        else:
            role = rng.choice([Role.USER, Role.ASSISTANT, Role.USER, Role.ASSISTANT, Role.SYSTEM])
        out.append(MemoryRecord(role, _text(rng), id=f"r{start + i}", timestamp=1000.0 + start + i))
    return out


def _camel_id(camel_record) -> str:
    return camel_record.extra_info[ID_KEY]


def _check_chat_retrieve(ours: ChatHistoryBlock, theirs: CamelChatHistoryBlock, window: int | None,
                         keep_rate: float) -> int:
    mine = ours.retrieve(window)
    camel = theirs.retrieve(window)
    assert [c.id for c in mine] == [_camel_id(c.memory_record) for c in camel]
    for m, c in zip(mine, camel):
        expected = 1.0 if m.memory_record.role is Role.SYSTEM else keep_rate * m.score
        assert c.score == pytest.approx(expected, rel=1e-12, abs=1e-15), (m.id, m.score, c.score)
        assert c.memory_record.message.content == m.memory_record.content
        assert c.timestamp == m.timestamp
    return 1


def _chat_sequence(seed: int) -> int:
    rng = random.Random(seed)
    keep_rate = rng.choice(KEEP_RATES)
    ours, theirs = ChatHistoryBlock(keep_rate=keep_rate), CamelChatHistoryBlock(keep_rate=keep_rate)
    written = 0
    checked = 0
    for _ in range(rng.randint(4, 12)):
        op = rng.random()
        size = len(ours)
        if op < 0.4 or size == 0:
            batch = _records(rng, written, rng.randint(1, 4), first=written == 0)
            written += len(batch)
            ours.write_records(batch)
            theirs.write_records([to_camel(r, r_i) for r_i, r in enumerate(batch, start=written)])
        elif op < 0.55:
            count = rng.randint(0, 3)
            popped = ours.pop_records(count)
            assert [r.id for r in popped] == [_camel_id(r) for r in theirs.pop_records(count)]
        elif op < 0.7:
            indices = rng.sample(range(size), rng.randint(0, min(3, size)))
            removed = ours.remove_records_by_indices(indices)
            assert [r.id for r in removed] == [_camel_id(r) for r in theirs.remove_records_by_indices(indices)]
        elif op < 0.75:
            bad = rng.choice([-1, 1.5, "2"])
            error = ValueError if bad == -1 else TypeError
            with pytest.raises(error):
                ours.pop_records(bad)
            with pytest.raises(error):
                theirs.pop_records(bad)
        checked += _check_chat_retrieve(ours, theirs, rng.choice([None, 0, 1, 2, 3, 5, 8]), keep_rate)
    return checked


def test_chat_history_block_agrees_with_camel_on_random_sequences() -> None:
    checked = sum(_chat_sequence(seed) for seed in range(CHAT_SEQUENCES))
    assert checked >= CHAT_SEQUENCES * 4  # every operation is followed by a compared retrieve


def test_chat_history_scores_differ_exactly_by_the_documented_off_by_one() -> None:
    records = [MemoryRecord(Role.SYSTEM, "be brief", id="s", timestamp=1.0)] + [
        MemoryRecord(Role.USER if i % 2 == 0 else Role.ASSISTANT, f"turn {i}", id=f"t{i}", timestamp=2.0 + i)
        for i in range(3)]
    ours, theirs = ChatHistoryBlock(keep_rate=0.5), CamelChatHistoryBlock(keep_rate=0.5)
    ours.write_records(records)
    theirs.write_records([to_camel(r, i) for i, r in enumerate(records)])
    assert [c.score for c in ours.retrieve()] == [1.0, 0.25, 0.5, 1.0]
    assert [c.score for c in theirs.retrieve()] == [1.0, 0.125, 0.25, 0.5]


def _camel_vector_block(embedder: HashingEmbedder) -> CamelVectorDBBlock:
    embedding = MemlabEmbedding(embedder)
    return CamelVectorDBBlock(storage=QdrantStorage(vector_dim=embedding.get_output_dim(), collection_name="t"),
                              embedding=embedding)


def _check_vector_retrieve(ours: VectorDBBlock, theirs: CamelVectorDBBlock, keyword: str, limit: int) -> None:
    mine = ours.retrieve(keyword, limit=limit)
    camel = theirs.retrieve(keyword, limit=limit)
    assert len(mine) == len(camel)
    assert [c.score for c in camel] == pytest.approx([c.score for c in mine], abs=1e-5)
    # ids: every record scoring clearly above the last returned score is in both lists
    # (records tied at the cut may differ), and within the lists each score that no other
    # record of the whole memory shares belongs to the same record on both sides
    everything = [c.score for c in ours.retrieve(keyword, limit=max(1, len(ours)))]
    if mine:
        cut = mine[-1].score
        assert {c.id for c in mine if c.score > cut + 1e-5} == \
            {_camel_id(c.memory_record) for c in camel if c.score > cut + 1e-5}
    for m, c in zip(mine, camel):
        if sum(abs(m.score - s) < 1e-5 for s in everything) == 1:
            assert _camel_id(c.memory_record) == m.id


def _vector_sequence(seed: int, embedder: HashingEmbedder) -> int:
    rng = random.Random(10_000 + seed)
    ours, theirs = VectorDBBlock(embedding=embedder), _camel_vector_block(embedder)
    written = 0
    for _ in range(rng.randint(2, 6)):
        batch = [r for r in _records(rng, written, rng.randint(1, 5), first=False)]
        written += len(batch)
        ours.write_records(batch)
        camel_batch = [to_camel(r, i) for i, r in enumerate(batch, start=written)]
        if all(not r.content.strip() for r in batch):
            # CAMEL drops blank records, then asks qdrant for an empty upsert, which it refuses
            with pytest.raises(ValueError, match="Empty update request"):
                theirs.write_records(camel_batch)
        else:
            theirs.write_records(camel_batch)
        assert len(ours) == theirs.storage.status().vector_count  # blank contents skipped on both sides
        keyword = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 3)))
        _check_vector_retrieve(ours, theirs, keyword, rng.randint(1, 8))
    return 1


def test_vectordb_block_agrees_with_camel_on_random_sequences() -> None:
    embedder = HashingEmbedder()
    assert sum(_vector_sequence(seed, embedder) for seed in range(VECTOR_SEQUENCES)) == VECTOR_SEQUENCES
