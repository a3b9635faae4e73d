"""Lossless save/load of result tables (parquet and CSV) and provenance."""

from __future__ import annotations

import os
import subprocess

import numpy as np
import pandas as pd
import pytest
from pandas.testing import assert_frame_equal

import memlab
from memlab.base import MemlabError
from memlab.eval.provenance import KEYS, command_line, run_provenance
from memlab.eval.results import load_results, save_results


def replay_rows() -> pd.DataFrame:
    """Rows shaped like the replay engine's, with awkward values on purpose."""
    return pd.DataFrame({
        "strategy": ["bm25", "window", "bm25"],
        "dialogue_id": ["coffee", "coffee", "咖啡"],
        "probe_id": ["p1", "p2", "p1"],
        "category": ["single-hop", None, "preference"],
        "query": ['What, "exactly"?\nTwo lines', "", "用户早上喝什么？"],
        "gold": [["t1"], [], ["t2", "t3"]],
        "retrieved_ids": [["m1", "t9"], [], ["t3"]],
        "retrieved_source_ids": [[["t1", "t4"], ["t9"]], [], [["t3"]]],
        "retrieved_scores": [[0.1 + 0.2, 1 / 3], [], [-0.0]],
        "context_ids": [["t1", "t4"], ["t7"], []],
        "context_tokens": [120, 0, 57],
        "llm_prompt_tokens": [0, 0, 10],
        "llm_completion_tokens": [0, 0, 3],
        "latency_ms": [1.25, 0.1 + 0.2, np.nan],
        "keep_rate": [0.9, 0.9, 0.95],
        "use_bm25": [True, False, True],
        "recall@5": [1.0, np.nan, 0.5],
        "n_gold": np.array([1, 0, 2], dtype="int32"),
        "params": [{"k": 5, "nested": {"a": [1, 2]}}, {}, {"k": None}],
        "level": pd.Categorical(["hi", "lo", "hi"], categories=["lo", "hi", "unused"], ordered=True),
        "seen": pd.to_datetime(["2024-01-01T00:00:00.123456", None, "2024-03-02T09:15:00"], format="ISO8601"),
        "maybe": pd.array([1, None, 3], dtype="Int64"),
        "note": pd.Series(["x", None, ""], dtype=object),
    })


@pytest.mark.parametrize("ext", ["parquet", "csv"])
def test_exact_round_trip(tmp_path, ext):
    df = replay_rows()
    path = save_results(df, str(tmp_path / f"run.{ext}"))
    back = load_results(path)
    assert_frame_equal(back, df, check_exact=True)
    assert back.loc[0, "retrieved_source_ids"] == [["t1", "t4"], ["t9"]]
    assert back.loc[0, "retrieved_scores"][0] == 0.1 + 0.2


@pytest.mark.parametrize("ext", ["parquet", "csv"])
def test_empty_frame_round_trip(tmp_path, ext):
    df = replay_rows().iloc[:0].reset_index(drop=True)
    back = load_results(save_results(df, str(tmp_path / f"empty.{ext}")))
    assert_frame_equal(back, df)


def test_csv_is_readable_elsewhere(tmp_path):
    path = save_results(replay_rows(), str(tmp_path / "run.csv"))
    with open(path, encoding="utf-8") as f:
        assert f.readline().startswith("#memlab-results {")
    plain = pd.read_csv(path, skiprows=1)
    assert plain["gold"].tolist() == ['["t1"]', "[]", '["t2", "t3"]']
    assert plain["strategy"].tolist() == ["bm25", "window", "bm25"]


def test_errors(tmp_path):
    with pytest.raises(MemlabError, match=r"results path must end in .parquet or .csv, got 'x.xlsx'"):
        save_results(replay_rows(), "x.xlsx")
    with pytest.raises(MemlabError, match="no such results file"):
        load_results(str(tmp_path / "missing.csv"))
    foreign = tmp_path / "foreign.csv"
    foreign.write_text("a,b\n1,2\n", encoding="utf-8")
    with pytest.raises(MemlabError, match="not written by save_results"):
        load_results(str(foreign))
    other = tmp_path / "other.parquet"
    pd.DataFrame({"a": [1]}).to_parquet(other)
    with pytest.raises(MemlabError, match="not written by save_results"):
        load_results(str(other))


def test_provenance_in_a_git_repository(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@x", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@x", "PATH": "/usr/bin:/bin"}
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True, env=env)
    (repo / "f.txt").write_text("1")
    subprocess.run(["git", "add", "f.txt"], cwd=repo, check=True, env=env)
    subprocess.run(["git", "commit", "-q", "-m", "c"], cwd=repo, check=True, env=env)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True,
                          check=True).stdout.strip()
    p = run_provenance(repo=repo)
    assert p["git_commit"] == head and p["git_dirty"] is False
    (repo / "f.txt").write_text("2")
    assert run_provenance(repo=repo)["git_dirty"] is True
    assert p["packages"]["memlab"] == memlab.__version__
    import platform
    assert p["packages"]["python"] == platform.python_version()
    assert p["packages"]["numpy"] == np.__version__ and p["packages"]["pandas"] == pd.__version__


def test_provenance_outside_a_repository(tmp_path):
    p = run_provenance(repo=tmp_path)
    assert p["git_commit"] == "unknown" and p["git_dirty"] is None
    assert tuple(p) == KEYS


def test_provenance_names_the_command_date_machine_and_data(tmp_path):
    import hashlib
    import re

    data = tmp_path / "d"
    data.mkdir()
    (data / "a.json").write_bytes(b"[1]")
    (data / "sub").mkdir()
    (data / "sub" / "b.json").write_bytes(b"[2]")
    script = tmp_path / "bench" / "run.py"
    p = run_provenance(["/usr/bin/python3", str(script), "--only", "bm25"], data=[data, data / "a.json"],
                       repo=tmp_path)
    # paths inside the checkout are made relative; a program outside it keeps only its name
    assert p["command"] == ["python3", "bench/run.py", "--only", "bm25"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", p["date"])
    assert p["data"] == {"d/a.json": hashlib.sha256(b"[1]").hexdigest(),
                         "d/sub/b.json": hashlib.sha256(b"[2]").hexdigest()}
    assert p["machine"]["cores"] == os.cpu_count() and set(p["machine"]) == {"cpu", "cores", "gpu", "platform"}
    assert {"rank-bm25", "chromadb", "torch", "llama-cpp-python"} <= set(p["packages"])
    with pytest.raises(OSError):  # a record never claims data it could not read
        run_provenance([], data=[tmp_path / "missing.json"], repo=tmp_path)
    # an absolute argument outside the checkout is kept as typed (only the program is shortened)
    assert command_line(["x", str(tmp_path.parent / "shared" / "f.json")], root=tmp_path)[1].startswith("/")
    # an entry point beside the interpreter is recorded as its name, without the interpreter
    import sys
    entry = os.path.join(os.path.dirname(sys.executable), "memlab")
    assert command_line([sys.executable, entry, "sweep", str(tmp_path / "x.toml")], root=tmp_path) == [
        "memlab", "sweep", "x.toml"]
    # by default: this very process, as the interpreter was asked to run it
    assert command_line()[0] == os.path.basename(sys.executable)
    assert run_provenance([], data=[data / "a.json"], repo=data / "sub")["data"] == {
        "../a.json": hashlib.sha256(b"[1]").hexdigest()}


def test_provenance_without_cpuinfo_or_gpu_tool(monkeypatch):
    from memlab.eval import provenance as prov

    def no_file(*a, **k):
        raise OSError("no /proc")

    monkeypatch.setattr(prov, "open", no_file, raising=False)
    monkeypatch.setattr(prov.shutil, "which", lambda name: None)
    prov.machine.cache_clear()
    try:
        m = prov.machine()
        assert m["gpu"] is None and m["cores"] == os.cpu_count()
        assert m["cpu"] is None or isinstance(m["cpu"], str)
    finally:
        prov.machine.cache_clear()


@pytest.mark.parametrize("ext", ["parquet", "csv"])
def test_floats_of_every_magnitude_survive(tmp_path, ext):
    rng = np.random.default_rng(0)
    x = rng.random(2000) * 10.0 ** rng.integers(-300, 300, 2000)
    df = pd.DataFrame({"x": x, "y": (rng.random(2000) * 1e6).astype("float32"), "z": -x})
    assert_frame_equal(load_results(save_results(df, str(tmp_path / f"f.{ext}"))), df, check_exact=True)
