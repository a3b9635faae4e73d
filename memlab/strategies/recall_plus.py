"""``recall_plus``: contextual retrieval with the parts chosen to generalise across benchmarks.

The retriever is assembled from composable parts, inside out (1 innermost, 4 outermost) (each part off at weight 0,
which is how the ablation removes it):

1. keys: ``bm25_plus``'s contextual BM25 (a turn indexed with its neighbours and date;
   each neighbour cut to its first ``neighbour_words`` words when that is set, so long
   messages do not swamp a turn's own words), over keyphrase-augmented texts
   (``KeyphraseRetriever``, ``keyphrase_weight``), BM25's ``k1`` and ``b``; with
   ``turn_weight`` > 0, own-turn keys: a second BM25 over each turn's own text, fused as
   minmax(contextual) + turn_weight * minmax(own) over each one's top ``candidates``
   (``WeightedSum``), so that a long neighbour cannot bury a turn whose own words match;
   with ``fact_weight`` > 0, fact keys: a BM25 over each turn's own text plus the facts
   ``fact_extractor`` draws from it (``FactKeyRetriever``; rules offline, or an LLM at one
   call per turn), fused the same way with weight ``fact_weight``;
   then fused with dense retrievers when ``embedders`` names some (``hybrid_plus``'s
   weighted sum);
2. adjacent-turn windows: a hit's score spreads to the turns beside it
   (``NeighbourWindowRetriever``, ``window_decay``, ``window_radius``);
3. session-plus-turn fusion: a session's BM25 score lifts its turns
   (``SessionFusionRetriever``, ``session_weight``, ``session_pull``);
4. time-aware query expansion: the dates and relative times a question names, resolved
   against the time it is asked, lift the turns dated inside them (``TimeBoostRetriever``,
   ``time_weight``, ``time_slack_days``);
5. session diversity: each further turn of a session already ranked counts
   ``(1 - diversity)`` times less (``SessionDiversityRetriever``), so the first places
   spread over sessions (evidence in several sessions).

The defaults were chosen by ``bench/tune_generalise.py`` on development data only (LoCoMo
leave-conversations-out, LongMemEval S dev, and BEAM 500K's first 8 conversations) as the best
average over the three benchmarks: the long-message keys (neighbours cut to 32 words, own-turn
keys, BM25 ``b`` = 1), session fusion and a light time boost; the neighbour window and the
keyphrase keys are left off (weight 0). Two coordinate passes chose own-turn keys at weight 0.5
(one pass had chosen 1.0). ``bench/results/generalise_tuning_2pass.json`` holds the tuning (the
one-pass run: ``generalise_tuning.json``), ``bench/results/generalise.json`` the ablation and the
generalisation table.
"""

from __future__ import annotations

from typing import Any

from ..base import ConfigError
from ..embeddings.named import make_embedder
from .parts import contextual_bm25, strong_tokenizer

#: The tuned defaults (``bench/tune_generalise.py``); ``recall_plus`` and the ablation read them.
DEFAULTS: dict[str, Any] = {
    "session_weight": 0.35,
    "session_pull": 0,
    "time_weight": 0.3,
    "time_slack_days": 1.0,
    "window_decay": 0.0,
    "window_radius": 1,
    "keyphrase_weight": 0,
    "diversity": 0.0,
    "neighbour_words": 32,
    "k1": 1.5,
    "b": 1.0,
    "turn_weight": 0.5,
    "fact_weight": 0.0,
}


def fact_extractor_named(extractor: Any = None):
    """The extractor of the fact keys: None or "rules" (``RuleBasedExtractor``, offline), an
    ``Extractor``, or an LLM by ``make_llm``'s names ("offline", "local", "local:NAME", an
    ``LLM``) asked through ``LLMExtractor`` (one call per turn; a turn whose answer stays
    unusable after its retries gets no facts and is counted in the extractor's ``failures``)."""
    from ..extraction import LLMExtractor, RuleBasedExtractor
    from ..extraction.base import Extractor
    from ..offline.named import make_llm

    if extractor is None or extractor == "rules":
        return RuleBasedExtractor()
    if isinstance(extractor, Extractor):
        return extractor
    try:
        llm = make_llm(extractor)
    except ConfigError:
        raise ConfigError(f"recall_plus parameter 'fact_extractor': expected None, 'rules', an Extractor or an LLM "
                          f"name ('offline', 'local', 'local:NAME'), got {extractor!r}") from None
    return LLMExtractor(llm, on_failure="skip")


def recall_plus_retriever(embedders: list[Any] | None = None, weights: list[float] | None = None,
                          session_weight: float = DEFAULTS["session_weight"],
                          session_pull: int = DEFAULTS["session_pull"],
                          time_weight: float = DEFAULTS["time_weight"],
                          time_slack_days: float = DEFAULTS["time_slack_days"],
                          window_decay: float = DEFAULTS["window_decay"],
                          window_radius: int = DEFAULTS["window_radius"],
                          keyphrase_weight: int = DEFAULTS["keyphrase_weight"],
                          diversity: float = DEFAULTS["diversity"], candidates: int = 100, before: int = 2,
                          after: int = 1, own_weight: int = 2,
                          date: bool = True, chinese: str = "char+bigram",
                          neighbour_words: int | None = DEFAULTS["neighbour_words"],
                          k1: float = DEFAULTS["k1"], b: float = DEFAULTS["b"],
                          turn_weight: float = DEFAULTS["turn_weight"],
                          fact_weight: float = DEFAULTS["fact_weight"], fact_extractor: Any = None):
    """The retriever of ``recall_plus`` (see the module docstring)."""
    from ..retrieval import BM25Retriever, ContextualRetriever, HybridRetriever, VectorRetriever, WeightedSum
    from ..retrieval.fact_keys import FactKeyRetriever
    from ..retrieval.keyphrases import KeyphraseRetriever
    from ..retrieval.session_fusion import NeighbourWindowRetriever, SessionDiversityRetriever, SessionFusionRetriever
    from ..retrieval.temporal import TimeBoostRetriever

    if keyphrase_weight:
        keys = BM25Retriever(tokenizer=strong_tokenizer(chinese), k1=k1, b=b)
        lexical: Any = ContextualRetriever(KeyphraseRetriever(keys, weight=keyphrase_weight),
                                           before=before, after=after, own_weight=own_weight, date=date,
                                           neighbour_words=neighbour_words)
    else:
        lexical = contextual_bm25(k1, b, before=before, after=after, own_weight=own_weight, date=date, chinese=chinese,
                                  neighbour_words=neighbour_words)
    for name, value in (("turn_weight", turn_weight), ("fact_weight", fact_weight)):
        if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0:
            raise ConfigError(f"recall_plus parameter {name!r}: expected a number >= 0 (0: off), got {value!r}")
    keys, key_weights = [lexical], [1.0]
    if turn_weight > 0:
        keys.append(BM25Retriever(tokenizer=strong_tokenizer(chinese), k1=k1, b=b))
        key_weights.append(turn_weight)
    if fact_weight > 0:
        keys.append(FactKeyRetriever(BM25Retriever(tokenizer=strong_tokenizer(chinese), k1=k1, b=b),
                                     extractor=fact_extractor_named(fact_extractor)))
        key_weights.append(fact_weight)
    if len(keys) > 1:
        lexical = HybridRetriever(keys, fusion=WeightedSum(normalization="minmax"), weights=key_weights,
                                  candidates=candidates)
    names = list(embedders or [])
    retriever: Any = lexical
    if names:
        children = [lexical] + [VectorRetriever(embedder=make_embedder(e)) for e in names]
        retriever = HybridRetriever(children, fusion=WeightedSum(normalization="minmax"),
                                    weights=weights if weights is not None else [1.0] + [0.7] * len(names),
                                    candidates=candidates)
    if window_decay > 0:
        retriever = NeighbourWindowRetriever(retriever, radius=window_radius, decay=window_decay,
                                             candidates=candidates)
    if session_weight > 0:
        retriever = SessionFusionRetriever(retriever, weight=session_weight, pull=session_pull, candidates=candidates)
    if diversity > 0:
        retriever = SessionDiversityRetriever(retriever, penalty=diversity, candidates=candidates)
    if time_weight > 0:
        retriever = TimeBoostRetriever(retriever, weight=time_weight, slack_days=time_slack_days,
                                       candidates=candidates)
    return retriever


__all__ = ["DEFAULTS", "fact_extractor_named", "recall_plus_retriever"]
