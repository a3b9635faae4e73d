"""BM25 with the next turn: a wrapper that brings, with each hit, the turn said right after it.

A question about a fact often shares its words with the turn that *asked* about it ("Where
does your sister live?") while the fact is in the reply. ``NextTurn`` wraps any retriever:
for each hit of the wrapped retriever, the ``follow`` turns added right after it in the same
session (``metadata["session_id"]``) join the ranking with score

    score(next j) = score(hit) * discount ** j        (j = 1 for the next turn, 2 after it)

unless they already rank higher (as hits themselves or after a better hit). The wrapped
retriever's scores must be >= 0 (BM25, cosine of non-negative embeddings). Turns added this
way obey the search's ``where`` filter like the hits do. Used from the command line:

    memlab eval datasets --import experiments/next_turn.py --strategy bm25_next_turn
    memlab sweep experiments/next_turn.toml
"""

from __future__ import annotations

from memlab.base import Param
from memlab.filters import filter_view, matches
from memlab.retrieval import BM25Retriever, Retriever
from memlab.retrieval.base import WrapperRetriever
from memlab.strategies import RetrievalStrategy, register


class NextTurn(WrapperRetriever):
    """Hits of ``retriever``, each followed by up to ``follow`` later turns of its session
    scored ``score * discount ** j`` (see the module docstring)."""

    name = "next_turn"
    constraints = {"follow": Param(int, ge=0), "discount": Param(float, gt=0, le=1)}

    def __init__(self, retriever: Retriever, follow: int = 1, discount: float = 0.5):
        super().__init__()
        self.retriever = retriever  # a part is a parameter: get_params, clone, set_params reach it
        self.follow = follow
        self.discount = discount
        self._sync([retriever])  # take over what a retriever handed in already holds

    def _following(self, record_id: str, order: list[str]) -> list[str]:
        """The ``follow`` ids added after ``record_id`` in its session, in order."""
        session = self.get_record(record_id).metadata.get("session_id")
        after = order[order.index(record_id) + 1:]
        return [i for i in after if self.get_record(i).metadata.get("session_id") == session][:self.follow]

    def search(self, query, k=5, *, where=None, now=None):
        k = self._check_search(k, where)
        if k == 0 or not self._records:
            return []
        found = self.retriever.search(query, k, where=where, now=now)
        scores = {h.id: h.score for h in found}
        components = {h.id: h.components for h in found}  # wrappers keep the inner components
        order = [r.id for r in self.records()]  # insertion order
        for hit in found:
            for j, next_id in enumerate(self._following(hit.id, order), start=1):
                # the wrapped retriever applied `where` to its hits; a turn we add must pass it too
                if not matches(filter_view(self.get_record(next_id)), where):
                    continue
                score = hit.score * self.discount ** j
                if score > scores.get(next_id, float("-inf")):
                    scores[next_id] = score
                    components.setdefault(next_id, {})
        ranked = self._order(list(scores.items()))[:k]
        return self._hits(ranked, [components[i] for i, _ in ranked])


@register("bm25_next_turn")
def bm25_next_turn(k1: float = 1.5, b: float = 0.75, follow: int = 1, discount: float = 0.5) -> RetrievalStrategy:
    """BM25 whose every hit brings the turn said right after it (the reply to a question)."""
    return RetrievalStrategy(retriever=NextTurn(BM25Retriever(k1=k1, b=b), follow=follow, discount=discount))
