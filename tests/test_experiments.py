"""experiments/: the user-written CombMNZ strategy and the sweep files, run through the CLI."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from types import ModuleType

import pandas as pd
import pytest

from memlab import strategies
from memlab.base import ConfigError
from memlab.cli import main
from memlab.eval import load_any
from memlab.eval.results import load_results
from memlab.eval.user_modules import import_user_module
from memlab.records import MemoryRecord, Role
from memlab.retrieval import BM25Retriever, HybridRetriever, VectorRetriever
from memlab.testing import check_retriever, check_strategy

ROOT = Path(__file__).resolve().parents[1]
EXPERIMENTS = ROOT / "experiments"
# Probes in datasets/, counted from the files so new shipped dialogues do not break the sweep tests.
SHIPPED_PROBES = sum(len(d.probes) for d in load_any(ROOT / "datasets").dialogues)



@pytest.fixture(scope="module")
def fusion() -> ModuleType:
    """experiments/combmnz_fusion.py, imported the way ``memlab sweep`` does (registers hybrid_combmnz).

    Imported when these tests run, not at collection, so other test files that list the
    registry while being collected see only the built-in strategies.
    """
    return import_user_module(EXPERIMENTS / "combmnz_fusion.py")

L0 = [("a", 3.0), ("b", 2.0), ("c", 1.0)]
L1 = [("b", 0.9), ("d", 0.5), ("a", 0.1)]


def test_combmnz_hand_computed(fusion: ModuleType) -> None:
    # min-max: L0 -> a 1, b 0.5, c 0; L1 -> b 1, d 0.5, a 0
    # a: 2 * (1 + 0) = 2; b: 2 * (0.5 + 1) = 3; c: 1 * 0 = 0; d: 1 * 0.5 = 0.5
    assert fusion.combmnz([L0, L1]) == [("b", 3.0), ("a", 2.0), ("d", 0.5), ("c", 0.0)]


def test_combmnz_weights(fusion: ModuleType) -> None:
    # weights [1, 2]: a: 2 * (1 + 0) = 2; b: 2 * (0.5 + 2) = 5; c: 0; d: 1 * (2 * 0.5) = 1
    assert fusion.combmnz([L0, L1], weights=[1.0, 2.0]) == [("b", 5.0), ("a", 2.0), ("d", 1.0), ("c", 0.0)]
    assert fusion.CombMNZ(weights=[1.0, 2.0]).fuse([L0, L1]) == fusion.combmnz([L0, L1], [1.0, 2.0])
    # weights given to fuse override the configured ones
    assert fusion.CombMNZ(weights=[1.0, 2.0]).fuse([L0, L1], weights=[1.0, 1.0]) == fusion.combmnz([L0, L1])


def test_combmnz_without_normalisation(fusion: ModuleType) -> None:
    # raw scores: a: 2 * (3 + 0.1) = 6.2; b: 2 * (2 + 0.9) = 5.8; c: 1; d: 0.5
    fused = fusion.combmnz([L0, L1], normalization="none")
    assert [i for i, _ in fused] == ["a", "b", "c", "d"]
    assert [s for _, s in fused] == pytest.approx([6.2, 5.8, 1.0, 0.5], abs=1e-12)


def test_combmnz_ties_and_repeats(fusion: ModuleType) -> None:
    # a constant list normalises to 1.0 for every item; within a list only the first occurrence counts
    fused = fusion.combmnz([[("x", 2.0), ("y", 2.0), ("x", 0.0)], [("z", 1.0)]])
    assert fused == [("x", 1.0), ("y", 1.0), ("z", 1.0)]  # ties: first appearance, list 0 then list 1
    assert fusion.combmnz([]) == []
    assert fusion.combmnz([[], [("q", 0.2)]]) == [("q", 1.0)]


def test_combmnz_rejects_bad_configuration(fusion: ModuleType) -> None:
    with pytest.raises(ConfigError, match=r"normalization must be one of minmax, none, got 'zscore'"):
        fusion.CombMNZ(normalization="zscore")
    with pytest.raises(ConfigError, match=r"weights has 1 entries but there are 2 lists"):
        fusion.combmnz([L0, L1], weights=[1.0])
    with pytest.raises(ConfigError, match=r"weights must be finite numbers, got nan"):
        fusion.CombMNZ(weights=[1.0, math.nan])


def test_hybrid_combmnz_is_registered_and_configurable(fusion: ModuleType) -> None:
    assert "hybrid_combmnz" in strategies.names()
    s = strategies.get("hybrid_combmnz", weights=[1.0, 0.5])
    params = s.get_params(deep=True)
    assert isinstance(params["retriever__fusion"], fusion.CombMNZ)
    assert params["retriever__weights"] == [1.0, 0.5]
    assert params["retriever__fusion__normalization"] == "minmax"
    s.set_params(retriever__fusion__normalization="none")
    assert s.retriever.fusion.normalization == "none"


def test_hybrid_combmnz_passes_check_strategy(fusion: ModuleType) -> None:
    done = check_strategy(strategies.get("hybrid_combmnz"))
    assert done == ["is_strategy", "parts_are_parameters", "clone_round_trip", "empty_store", "at_most_k_sorted_ranked",
                    "params_unchanged_by_use", "reset_is_fresh", "deterministic", "picklable", "context",
                    "asking_changes_nothing"]


def test_hybrid_combmnz_ranks_by_combmnz_of_its_children(fusion: ModuleType) -> None:
    texts = ["I drink green tea every morning", "My sister lives in Osaka", "Green tea in Kyoto is great",
             "The flight to Osaka leaves at nine", "Morning coffee, strong and black"]
    records = [MemoryRecord(Role.USER, t, id=f"t{i}", timestamp=1_700_000_000.0 + i) for i, t in enumerate(texts)]
    bm25, vector = BM25Retriever(), VectorRetriever()
    for child in (bm25, vector):
        child.add(records)
    query = "green tea in the morning"
    lists = [[(h.id, h.score) for h in child.search(query, 50)] for child in (bm25, vector)]
    expected = fusion.combmnz(lists, weights=[1.0, 0.5])
    hybrid = HybridRetriever(retrievers=[BM25Retriever(), VectorRetriever()], fusion=fusion.CombMNZ(),
                             weights=[1.0, 0.5])
    hybrid.add(records)
    hits = hybrid.search(query, 5)
    assert [(h.id, h.score) for h in hits] == [(i, pytest.approx(s, abs=1e-12)) for i, s in expected[:5]]


def _sweep_outputs(out: Path) -> pd.DataFrame:
    for name in ("results.parquet", "summary.csv", "summary.md", "provenance.json"):
        assert (out / name).is_file(), name
    return load_results(str(out / "results.parquet"))


def test_sweep_hybrid_combmnz_through_the_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # the sweep file's `imports` registers hybrid_combmnz (run alone, this test imports it first)
    out = tmp_path / "combmnz"
    assert main(["sweep", str(EXPERIMENTS / "hybrid_combmnz.toml"), "--output", str(out)]) == 0
    assert f"wrote {out}" in capsys.readouterr().out
    results = _sweep_outputs(out)
    assert sorted(p.name for p in out.glob("*.png")) == [
        "00_metric_vs_param_recall_at_5.png", "01_metric_vs_param_mrr_at_10.png", "02_metric_at_k_recall.png",
        "03_pareto_context_recall.png"]
    weights = [[1.0, 0.25], [1.0, 0.5], [1.0, 1.0], [0.5, 1.0]]
    assert results.groupby("base_strategy").size().to_dict() == {"hybrid": 4 * SHIPPED_PROBES,
                                                                "hybrid_combmnz": 4 * SHIPPED_PROBES}
    assert sorted(map(json.loads, results["retriever__weights"].unique())) == sorted(weights)
    assert set(results.loc[results["base_strategy"] == "hybrid_combmnz", "param:retriever__fusion"]) == {"CombMNZ"}
    assert set(results.loc[results["base_strategy"] == "hybrid", "param:retriever__fusion"]) == {"RRF"}
    summary = pd.read_csv(out / "summary.csv")
    assert len(summary) == 8
    assert summary["recall@5"].between(0.0, 1.0).all()


def test_sweep_compare_builtins_through_the_cli(tmp_path: Path) -> None:
    out = tmp_path / "builtins"
    assert main(["sweep", str(EXPERIMENTS / "compare_builtins.toml"), "--output", str(out)]) == 0
    results = _sweep_outputs(out)
    # the sweep names no strategy: it runs every one the registry tags builtin or reference
    expected = sorted(strategies.registry.names(tag="builtin") + strategies.registry.names(tag="reference"))
    assert {"bm25", "hybrid_plus", "layered", "recall_plus", "oracle", "full_context"} <= set(expected)
    assert results.groupby("strategy").size().to_dict() == {name: SHIPPED_PROBES for name in expected}
    assert len(list(out.glob("*.png"))) == 4
    summary = pd.read_csv(out / "summary.csv")
    assert sorted(summary["strategy"]) == expected
    # strategies whose hits differ in size meet at equal tokens, with dialogue-clustered CIs
    assert (summary["tokens@256tok"] <= 256).all()
    assert (summary["recall@256tok_ci_low"] <= summary["recall@256tok"]).all()
    # the oracle's context is exactly the gold turns: the ceiling every memory is read against
    oracle = summary.set_index("strategy").loc["oracle"]
    assert oracle["recall@5"] == 1.0 and oracle["relevance_ratio@5"] == 1.0


def test_the_readme_examples_run_as_written(monkeypatch: pytest.MonkeyPatch) -> None:
    import re

    from memlab.strategies import registry

    monkeypatch.chdir(ROOT)
    text = (EXPERIMENTS / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert len(blocks) == 4
    registered_before = set(registry.names())
    modules_before = set(sys.modules)
    # a real module, so that the classes the blocks define can be pickled (check_retriever does)
    module = ModuleType("experiments_readme")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    namespace = module.__dict__
    try:
        for code in blocks:
            exec(compile(code, "experiments/README.md", "exec"), namespace)
    finally:
        for name in set(registry.names()) - registered_before:  # overlap, bm25_next_turn
            registry._items.pop(name, None)
        for name in set(sys.modules) - modules_before:
            if name.startswith("memlab_user_next_turn_"):
                del sys.modules[name]
    overlap = namespace["WordOverlap"]()
    overlap.add([MemoryRecord("user", "I moved to Lisbon in May", id="a"),
                 MemoryRecord("user", "Lisbon has great coffee", id="b"), MemoryRecord("user", "hi", id="c")])
    assert [(h.id, h.score) for h in overlap.search("coffee in Lisbon", 5)] == [("b", 2.0), ("a", 1.0)]
    with pytest.raises(ConfigError, match=r"^WordOverlap parameter 'min_length': expected an int >= 1, got 0$"):
        namespace["WordOverlap"](min_length=0)
    row = namespace["table"].iloc[0]
    assert row["n_probes"] == SHIPPED_PROBES and 0 < row["recall@1"] <= row["recall@5"]
    assert len(namespace["results"]) == SHIPPED_PROBES
    assert namespace["swept"].get_params()["retriever__min_length"] == 5
    wrapped = namespace["wrapped"].get_params()
    assert (wrapped["retriever__retriever__k1"], wrapped["retriever__follow"]) == (1.2, 2)


# -- experiments/next_turn.py: a wrapper retriever, `where` for the turns it adds, sweep labels --

@pytest.fixture(scope="module")
def next_turn() -> ModuleType:
    """experiments/next_turn.py imported as ``memlab sweep`` does; bm25_next_turn unregistered after."""
    from memlab.strategies import registry

    registered = "bm25_next_turn" in registry
    module = import_user_module(EXPERIMENTS / "next_turn.py")
    yield module
    if not registered:
        registry._items.pop("bm25_next_turn", None)
        sys.modules.pop(module.__name__, None)


def _turns() -> list[MemoryRecord]:
    said = [("s1", "user", "where does your sister live"), ("s1", "assistant", "she moved to Osaka"),
            ("s1", "user", "nice city"), ("s2", "user", "my sister is a nurse"), ("s2", "assistant", "lovely")]
    return [MemoryRecord(role, text, id=f"t{i}", timestamp=1_700_000_000.0 + i, metadata={"session_id": s})
            for i, (s, role, text) in enumerate(said)]


def test_next_turn_adds_the_following_turns_of_the_session_with_discounted_scores(next_turn: ModuleType) -> None:
    bm25 = BM25Retriever()
    bm25.add(_turns())
    inner = {h.id: h.score for h in bm25.search("where does my sister live", 5)}
    assert sorted(inner) == ["t0", "t3"]
    wrapped = next_turn.NextTurn(BM25Retriever(), follow=2, discount=0.5)
    wrapped.add(_turns())
    hits = wrapped.search("where does my sister live", 10)
    # t0's session s1 follows with t1 (x0.5) and t2 (x0.25); t3's session s2 with t4 (x0.5) only
    expected = {"t0": inner["t0"], "t1": inner["t0"] * 0.5, "t2": inner["t0"] * 0.25, "t3": inner["t3"],
                "t4": inner["t3"] * 0.5}
    assert [(h.id, h.score) for h in hits] == sorted(expected.items(), key=lambda p: -p[1])
    assert hits[0].components["bm25"]["score"] == inner["t0"] and "bm25" not in hits[1].components
    assert [h.id for h in next_turn.NextTurn(bm25, follow=0).search("where does my sister live", 10)] == ["t0", "t3"]


def test_next_turn_honours_where_for_the_turns_it_adds(next_turn: ModuleType) -> None:
    wrapped = next_turn.NextTurn(BM25Retriever(), follow=2)
    wrapped.add(_turns())
    # the assistant replies t1 and t4 are not users' turns: the filter keeps them out, added or not
    assert [h.id for h in wrapped.search("where does my sister live", 10, where={"role": "user"})] == \
        ["t0", "t3", "t2"]
    assert [h.id for h in wrapped.search("where does my sister live", 10, where={"session_id": "s2"})] == \
        ["t3", "t4"]


def test_next_turn_passes_the_checks_and_set_params_reaches_its_parts(next_turn: ModuleType) -> None:
    assert check_retriever(next_turn.NextTurn(BM25Retriever()))[1] == "parts_are_parameters"
    strategy = strategies.get("bm25_next_turn", follow=2)
    assert check_strategy(strategy)[1] == "parts_are_parameters"
    assert strategy.get_params()["retriever__retriever__k1"] == 1.5
    assert strategy.set_params(retriever__retriever__k1=1.2).retriever.retriever.k1 == 1.2


def test_next_turn_sweep_labels_and_compare_through_the_cli(next_turn: ModuleType, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "next_turn"
    assert main(["sweep", str(EXPERIMENTS / "next_turn.toml"), "--output", str(out), "--quiet"]) == 0
    results = _sweep_outputs(out)
    labels = ["bm25 k1=1.2", "bm25 k1=1.5", "bm25_next_turn k1=1.2", "bm25_next_turn k1=1.5"]
    assert results.groupby("strategy").size().to_dict() == {label: SHIPPED_PROBES for label in labels}
    capsys.readouterr()
    # the labels the sweep file's comment and experiments/README.md tell the reader to compare
    assert main(["compare", str(out / "results.parquet"), "--metric", "recall@256tok",
                 "--a", "bm25 k1=1.5", "--b", "bm25_next_turn k1=1.5"]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("recall@256tok: bm25 k1=1.5 ") and "vs bm25_next_turn k1=1.5 " in printed
    scored = int(results.loc[results["strategy"] == "bm25 k1=1.5", "recall@256tok"].notna().sum())
    assert f"paired over {scored} probes" in printed
    readme = (EXPERIMENTS / "README.md").read_text(encoding="utf-8")
    toml = (EXPERIMENTS / "next_turn.toml").read_text(encoding="utf-8")
    for text in (readme, toml):
        assert '--a "bm25 k1=1.5" --b "bm25_next_turn k1=1.5"' in text


def test_sweep_labels_name_the_grid_point_in_grid_order() -> None:
    from memlab.eval.sweep_config import configure

    points = configure({"name": "bm25"}, {"retriever__k1": [1.5], "retriever__b": [0.5, 0.75]}, "bm25")
    assert [label for _, _, label, _ in points] == ["bm25 retriever__k1=1.5 retriever__b=0.5",
                                                    "bm25 retriever__k1=1.5 retriever__b=0.75"]
    readme = (EXPERIMENTS / "README.md").read_text(encoding="utf-8")
    assert "`bm25 retriever__k1=1.5`" in readme
