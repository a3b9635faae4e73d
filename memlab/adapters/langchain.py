"""LangChain's hybrid retrieval as a memlab retriever: ``langchain_ensemble``.

Drives LangChain's own classes: ``langchain_community.retrievers.BM25Retriever``
(rank_bm25's ``BM25Okapi``), ``langchain_core.vectorstores.InMemoryVectorStore`` (cosine
similarity, exact) with memlab's ``Embedder`` wrapped as LangChain ``Embeddings``, and
``EnsembleRetriever`` (from ``langchain_classic``) whose ``weighted_reciprocal_rank``
fuses the two lists::

    score(d) = sum_i w_i / (c + rank_i(d))      ranks 1-based; a list without d adds 0

with ``weights`` equal by default (LangChain's default) and ``c = 60``. The fused order is
LangChain's (ties keep first appearance, BM25 list first); the hit scores are that
formula, computed from the same two lists (LangChain does not return them).

Differences from memlab's ``hybrid`` that are LangChain's, kept on purpose:

- BM25 tokens are LangChain's default ``text.split()`` (case-sensitive, punctuation kept)
  unless ``bm25_preprocess="memlab"`` (memlab's lower-cased word tokenizer);
- ``BM25Retriever`` cannot add documents: it is rebuilt from all turns when a search
  follows new turns (LangChain users call ``from_documents`` again);
- each component returns its top ``n`` and only those are fused (memlab's hybrid does the
  same with ``candidates``).

One LangChain default is changed: the ensemble's ``id_key`` is set, so turns with the same
text stay distinct documents (LangChain otherwise merges documents by their text).
"""

from __future__ import annotations

from typing import Any

from ..base import Param
from ..embeddings.base import Embedder
from ..embeddings.named import make_embedder
from ..records import MemoryRecord
from .base import PeerRetriever

ID_KEY = "memlab_id"
PREPROCESS = ("whitespace", "memlab")


def lc_embeddings(embedder: Embedder) -> Any:
    """memlab's ``embedder`` as LangChain ``Embeddings``."""
    from langchain_core.embeddings import Embeddings

    class MemlabEmbeddings(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return [[float(x) for x in v] for v in embedder.embed(list(texts))]

        def embed_query(self, text: str) -> list[float]:
            return [float(x) for x in embedder.embed([text])[0]]

    return MemlabEmbeddings()


class LangChainEnsembleRetriever(PeerRetriever):
    """LangChain's EnsembleRetriever over BM25Retriever + InMemoryVectorStore (see the module doc).

    ``weights``: [bm25, vector], None for LangChain's equal weights; ``c``: the RRF
    constant; ``bm25_preprocess``: "whitespace" (LangChain's default) or "memlab".
    """

    name = "langchain_ensemble"

    constraints = {
        "embedder": Param(Embedder, none=True),
        "weights": Param(each=Param(float, ge=0), none=True,
                         test=lambda w: len(w) == 2 and any(x > 0 for x in w),
                         expected="two non-negative numbers [bm25, vector], not both 0, or None"),
        "c": Param(int, ge=0),
        "bm25_preprocess": Param(choices=PREPROCESS),
    }

    def __init__(self, embedder: Embedder | None = None, weights: list[float] | None = None, c: int = 60,
                 bm25_preprocess: str = "whitespace"):
        super().__init__()
        self.embedder = embedder
        self.weights = weights
        self.c = c
        self.bm25_preprocess = bm25_preprocess
        self._on_params_changed()

    def _preprocess(self) -> Any:
        if self.bm25_preprocess == "memlab":
            from ..retrieval.tokenize import Tokenizer

            return Tokenizer()
        from langchain_community.retrievers.bm25 import default_preprocessing_func

        return default_preprocessing_func

    def _open(self) -> None:
        from langchain_core.vectorstores import InMemoryVectorStore

        self._lib_store = InMemoryVectorStore(embedding=lc_embeddings(make_embedder(self.embedder)))
        self._lib_docs: dict[str, Any] = {}
        self._lib_pending: list[Any] = []
        self._lib_bm25 = None

    def _index(self, records: list[MemoryRecord]) -> None:
        from langchain_core.documents import Document

        for r in records:
            doc = Document(page_content=r.content, metadata={ID_KEY: r.id}, id=r.id)
            self._lib_docs[r.id] = doc
            self._lib_pending.append(doc)
        self._lib_bm25 = None

    def _drop(self, ids: list[str]) -> None:
        gone = set(ids)
        self._flush()
        self._lib_store.delete(ids=list(gone))
        for i in gone:
            self._lib_docs.pop(i, None)
        self._lib_bm25 = None

    def _flush(self) -> None:
        if self._lib_pending:
            docs, self._lib_pending = self._lib_pending, []
            self._lib_store.add_documents(docs, ids=[d.id for d in docs])

    def ensemble(self, n: int) -> Any:
        """LangChain's EnsembleRetriever over the current turns, each component returning ``n``."""
        from langchain_classic.retrievers import EnsembleRetriever
        from langchain_community.retrievers import BM25Retriever

        self._ensure()
        self._flush()
        if self._lib_bm25 is None:
            self._lib_bm25 = BM25Retriever.from_documents(list(self._lib_docs.values()),
                                                          preprocess_func=self._preprocess())
        self._lib_bm25.k = n
        vector = self._lib_store.as_retriever(search_kwargs={"k": n})
        return EnsembleRetriever(retrievers=[self._lib_bm25, vector], weights=self.weights, c=self.c, id_key=ID_KEY)

    def _query(self, query: str, n: int) -> list[tuple[str, float]]:
        if not self._lib_docs:
            return []
        ensemble = self.ensemble(n)
        # what EnsembleRetriever.rank_fusion does, minus callbacks: each list, then LangChain's RRF
        lists = [retriever.invoke(query) for retriever in ensemble.retrievers]
        fused = ensemble.weighted_reciprocal_rank(lists)
        scores: dict[str, float] = {}
        for weight, docs in zip(ensemble.weights, lists):
            for rank, doc in enumerate(docs, start=1):
                key = doc.metadata[ID_KEY]
                scores[key] = scores.get(key, 0.0) + weight / (rank + ensemble.c)
        return [(d.metadata[ID_KEY], scores[d.metadata[ID_KEY]]) for d in fused[:n]]
