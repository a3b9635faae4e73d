import pandas as pd
import pytest

from memlab import ConfigError, strategies
from memlab.cli import main
from memlab.eval.results import load_results
from memlab.eval.sweep import run_config, sweep
from memlab.eval.sweep_config import grid_points


def test_grid_points_first_parameter_slowest():
    assert grid_points({"a": [1, 2], "b": ["x", "y"]}) == [
        {"a": 1, "b": "x"}, {"a": 1, "b": "y"}, {"a": 2, "b": "x"}, {"a": 2, "b": "y"}]
    assert grid_points(None) == [{}]
    with pytest.raises(ConfigError, match="grid parameter 'a' must have a non-empty list"):
        grid_points({"a": []})


def test_sweep_rows_carry_the_swept_values(tiny):
    df = sweep(strategies.get("longterm", token_limit=60), {"keep_rate": [0.0, 0.5, 1.0]}, tiny, label="lt")
    assert len(df) == 3 * tiny.n_probes
    assert df["keep_rate"].tolist() == [0.0] * 4 + [0.5] * 4 + [1.0] * 4
    assert (df["param:keep_rate"] == df["keep_rate"]).all()
    assert df["strategy"].unique().tolist() == ["lt keep_rate=0.0", "lt keep_rate=0.5", "lt keep_rate=1.0"]
    assert (df["base_strategy"] == "lt").all()


def test_window_keep_rate_changes_nothing_in_the_context(tiny):
    """A window memory alone: history scores fall with age whatever keep_rate is."""
    df = sweep(strategies.get("window", token_limit=40), {"keep_rate": [0.0, 0.5, 1.0]}, tiny)
    contexts = df.groupby("keep_rate")["context_ids"].apply(lambda s: [tuple(x) for x in s])
    assert contexts[0.0] == contexts[0.5] == contexts[1.0]


def _config(tmp_path, tiny_file):
    return {
        "dataset": {"path": str(tiny_file)},
        "strategies": [{"label": "win", "name": "window", "params": {"window_size": 2}},
                       {"label": "lt", "name": "longterm", "params": {"token_limit": 60}}],
        "grid": {"keep_rate": [0.5, 1.0]},
        "run": {"ks": [1, 3], "output": str(tmp_path / "out")},
        "plots": [{"kind": "metric_vs_param", "param": "keep_rate", "metric": "context_recall"},
                  {"kind": "pareto", "x": "context_tokens", "y": "recall@3"}],
    }


def test_run_config_writes_table_summary_and_plots(tmp_path, tiny_file):
    result = run_config(_config(tmp_path, tiny_file), progress=False)
    out = tmp_path / "out"
    assert result.output == out
    for name in ("results.parquet", "summary.csv", "summary.md", "provenance.json"):
        assert (out / name).exists()
    assert len(list(out.glob("*.png"))) == 2
    rows = load_results(str(out / "results.parquet"))
    pd.testing.assert_frame_equal(rows, result.results)
    assert sorted(rows["base_strategy"].unique()) == ["lt", "win"]
    assert len(result.summary) == 4


def test_sweep_command_from_a_toml_file(tmp_path, tiny_file, capsys, sweep_toml):
    toml = sweep_toml(dataset={"path": tiny_file.name}, strategy={"name": "window"}, grid={"window_size": [1, 3]},
                      run={"ks": [1], "output": "out"})
    assert main(["sweep", str(toml)]) == 0
    assert "window window_size=1" in capsys.readouterr().out
    assert (tmp_path / "out" / "results.parquet").exists()


@pytest.mark.parametrize("mutate, message", [
    (lambda c: c.pop("dataset"), r"\[dataset\] with a 'path' is required"),
    (lambda c: c.update(extra=1), "unknown top-level key"),
    (lambda c: c["run"].update(k=3), r"unknown key\(s\) in \[run\]: \['k'\]"),
    (lambda c: c.update(strategy={"name": "bm25"}), "either \\[strategy\\] or \\[\\[strategies\\]\\]"),
    (lambda c: c["plots"].append({"kind": "pie"}), "kind must be one of"),
    (lambda c: c["run"].update(ks=["a"]), r"\[run\] ks must be a non-empty list of positive integers"),
    (lambda c: c["run"].update(ks=5), r"\[run\] ks must be"),
    (lambda c: c["run"].update(k_max=1), r"\[run\] k_max must be an integer >= max\(ks\) = 3"),
    (lambda c: c["run"].update(n_jobs="many"), "n_jobs must be a non-zero integer"),
    (lambda c: c.update(grid=[1, 2]), r"\[grid\] must be a table"),
    (lambda c: c.update(strategies="bm25"), "strategies must be \\[\\[strategies\\]\\] tables"),
    (lambda c: c["dataset"].update(options=3), r"\[dataset\] options must be a table"),
    (lambda c: c.update(imports="x.py"), "imports must be a list of file names"),
    (lambda c: c.update(strategies=[{"class": "os.path.join"}]), "strategy 'os.path.join'"),
    (lambda c: c["strategies"][0]["params"].update(window_sise=1),
     "sweep file: strategy 'win': unknown parameter of strategy 'window' 'window_sise'. Did you mean 'window_size'"),
])
def test_bad_sweep_files_name_the_problem(tmp_path, tiny_file, mutate, message):
    config = _config(tmp_path, tiny_file)
    mutate(config)
    with pytest.raises(ConfigError, match=message):
        run_config(config, progress=False)


class CountingEmbedder:
    calls = 0


def test_a_keep_rate_sweep_embeds_each_text_once(tiny, tmp_path):
    from memlab.embeddings.cache import CachedEmbedder
    from memlab.embeddings.hashing import HashingEmbedder

    class Counting(HashingEmbedder):
        def _embed(self, texts):
            CountingEmbedder.calls += len(texts)
            return super()._embed(texts)

    CountingEmbedder.calls = 0
    embedder = CachedEmbedder(Counting(), path=str(tmp_path / "cache.sqlite3"))
    base = strategies.get("longterm", embedder=embedder, token_limit=60)
    sweep(base, {"keep_rate": [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]}, tiny)
    turns = {t.retrieval_text for d in tiny.dialogues for t in d.turns()}
    queries = {p.query for d in tiny.dialogues for p in d.probes}
    assert CountingEmbedder.calls == len(turns | queries)


def test_replay_warms_persistent_caches_in_batches(tiny, tmp_path):
    from memlab.embeddings.cache import CachedEmbedder
    from memlab.embeddings.hashing import HashingEmbedder
    from memlab.eval.replay import replay

    batches = []

    class Recording(HashingEmbedder):
        def _embed(self, texts):
            batches.append(len(texts))
            return super()._embed(texts)

    embedder = CachedEmbedder(Recording(), path=str(tmp_path / "cache.sqlite3"))
    replay(strategies.get("vector", embedder=embedder), tiny)
    turns = {t.retrieval_text for d in tiny.dialogues for t in d.turns()}
    queries = {p.query for d in tiny.dialogues for p in d.probes}
    # one batched call for the turns, one for the questions not among them (a symmetric
    # embedder: a question equal to a turn is one vector); the replay itself only hits
    assert batches == [len(turns), len(queries - turns)]


def test_grid_keys_may_be_factory_arguments_of_a_named_strategy(tiny):
    df = sweep({"name": "hybrid"}, {"weights": [[1.0, 0.0], [0.0, 1.0]]}, tiny, label="h")
    assert df["param:retriever__fusion__weights"].tolist() == ["[1.0, 0.0]"] * 4 + ["[0.0, 1.0]"] * 4
    assert df["weights"].tolist() == ["[1.0, 0.0]"] * 4 + ["[0.0, 1.0]"] * 4


def _count_replays(monkeypatch):
    import sys

    sweep_module = sys.modules["memlab.eval.sweep"]  # the package attribute is the function
    calls = []
    real = sweep_module.replay
    monkeypatch.setattr(sweep_module, "replay", lambda *a, **k: calls.append(k.get("label")) or real(*a, **k))
    return calls


@pytest.mark.parametrize("mutate, message", [
    (lambda c: c["grid"].update(keep_rate=[0.5, 1.2]), "keep_rate"),
    (lambda c: c["plots"].append({"kind": "metric_vs_param", "param": "keep_rate", "metric": "context_recal"}),
     "plots[2]: metric 'context_recal' is not a column the sweep will produce; did you mean 'context_recall'?"),
    (lambda c: c["plots"].append({"kind": "metric_vs_param", "param": "keep_rat", "metric": "context_recall"}),
     "did you mean 'keep_rate'?"),
    (lambda c: c["plots"].append({"kind": "metric_at_k", "metric": "recal"}), "did you mean 'recall'?"),
    (lambda c: c["plots"].append({"kind": "pareto", "colour": "red"}), "unexpected keyword argument 'colour'"),
    (lambda c: c["plots"].append({"kind": "pareto", "y": "recall@512tok"}), "is not a column the sweep"),
])
def test_everything_is_checked_before_the_first_replay(tmp_path, tiny_file, monkeypatch, mutate, message):
    calls = _count_replays(monkeypatch)
    config = _config(tmp_path, tiny_file)
    mutate(config)
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace("?", r"\?").replace("[", r"\[")):
        run_config(config)
    assert calls == []                                     # nothing was replayed


def test_output_path_is_checked_before_the_replay(tmp_path, tiny_file, monkeypatch):
    calls = _count_replays(monkeypatch)
    blocker = tmp_path / "file"
    blocker.write_text("x")
    config = _config(tmp_path, tiny_file)
    config["run"]["output"] = str(blocker)
    with pytest.raises(ConfigError, match="exists and is not a folder"):
        run_config(config)
    config["run"]["output"] = str(blocker / "sub")
    with pytest.raises(ConfigError, match="cannot write to output"):
        run_config(config)
    assert calls == []


def test_metric_vs_param_draws_one_line_per_other_grid_setting(tmp_path, tiny_file):
    config = _config(tmp_path, tiny_file)
    config["strategies"] = config["strategies"][1:]
    config["grid"] = {"keep_rate": [0.5, 1.0], "token_limit": [60, 200]}
    config["run"]["budgets"] = [20, 40]
    config["plots"] = [{"kind": "metric_vs_param", "param": "keep_rate", "metric": "context_recall"},
                       {"kind": "pareto"}]
    result = run_config(config)
    lines = [l.get_label() for l in result.figures["00_metric_vs_param_context_recall.png"].axes[0].lines]
    assert lines == ["lt, token_limit=60", "lt, token_limit=200"]
    pareto = result.figures["01_pareto_recall@Btok.png"].axes[0]  # written as 01_pareto_recall_at_Btok.png
    assert sorted(l.get_label() for l in pareto.lines)[-1] == "lt keep_rate=1.0 token_limit=60"
    assert "recall@20tok_ci_low" in result.summary.columns


def test_provenance_hashes_user_modules_and_counts_untracked_files(tmp_path, tiny_file):
    import hashlib
    import json
    import subprocess

    from memlab.eval.provenance import run_provenance

    module = tmp_path / "my_strategy.py"
    module.write_text("X = 1\n")
    config = _config(tmp_path, tiny_file)
    config["imports"] = [module.name]
    run_config(config, base_dir=tmp_path)
    prov = json.loads((tmp_path / "out" / "provenance.json").read_text())
    assert prov["user_modules"] == {str(module): hashlib.sha256(b"X = 1\n").hexdigest()}
    # the dataset file the sweep read is named with its sha256
    assert list(prov["data"].values()) == [hashlib.sha256(open(tiny_file, "rb").read()).hexdigest()]
    assert prov["cells"] == {"computed": 4, "reused": 0}  # 2 strategies x 2 grid points, all run now
    run_config(config, base_dir=tmp_path)
    prov = json.loads((tmp_path / "out" / "provenance.json").read_text())
    assert prov["cells"] == {"computed": 0, "reused": 4}  # says the rows are an earlier run's
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    (repo / "a.py").write_text("a = 1\n")
    subprocess.run(["git", "-c", "user.email=x@y", "-c", "user.name=x", "add", "a.py"], cwd=repo, check=True)
    subprocess.run(["git", "-c", "user.email=x@y", "-c", "user.name=x", "commit", "-qm", "a"], cwd=repo, check=True)
    assert run_provenance(repo=repo)["git_dirty"] is False
    (repo / "new_strategy.py").write_text("b = 2\n")           # untracked, not ignored
    assert run_provenance(repo=repo)["git_dirty"] is True


def test_a_tag_entry_runs_every_strategy_with_the_tag_and_is_checked():
    from memlab.base import ConfigError
    from memlab.eval.sweep_config import strategy_specs
    from memlab.strategies import registry

    specs = strategy_specs({"strategies": [{"tag": "reference", "params": {"token_counter": None}},
                                           {"label": "b", "name": "bm25"}]}, "s.toml")
    assert specs == [{"label": n, "name": n, "params": {"token_counter": None}} for n in registry.names(tag="reference")] \
        + [{"label": "b", "name": "bm25"}]
    for strategies, message in (
            ([{"tag": "refrence"}], r"s.toml: \[\[strategies\]\] unknown strategy tag 'refrence'. Did you mean 'reference'"),
            ([{"tag": "builtin", "name": "bm25"}], r"a \[\[strategies\]\] entry with tag takes only tag and params, got \['name'\]"),
            ([{"tag": ["builtin"]}], r"tag must be a string such as 'builtin', got \['builtin'\]"),
            ([{"tag": "builtin"}, {"name": "bm25"}], r"strategy label\(s\) 'bm25' given twice")):
        with pytest.raises(ConfigError, match=message):
            strategy_specs({"strategies": strategies}, "s.toml")
