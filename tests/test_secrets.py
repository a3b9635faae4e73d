"""API keys are Secrets: usable by the clients (and in pickled workers), shown as *** everywhere else."""

from __future__ import annotations

import json
import logging
import pickle
from pathlib import Path

import pandas as pd
import pytest

from memlab.cli import main
from memlab.embeddings import OpenAIEmbedder
from memlab.offline.loopback import LoopbackServer
from memlab.llm.openai_chat import OpenAIChat
from memlab.secrets import Secret
from memlab.strategies import get
from memlab.strategies.spec import to_spec

KEY = "sk-SENTINEL-7f3a9"
DATA = str(Path(__file__).parent / "data" / "longmemeval_mini.json")


def test_a_secret_never_prints_but_reveals_compares_and_pickles():
    s = Secret(KEY)
    assert repr(s) == "Secret('***')" and str(s) == "***" and f"{s}" == "***" and f"{s:>10}" == "***"
    assert s.reveal() == KEY and s == Secret(KEY) and s != Secret("other") and bool(s)
    assert pickle.loads(pickle.dumps(s)).reveal() == KEY
    with pytest.raises(TypeError, match="a secret must be a string, got int"):
        Secret(5)


def test_repr_and_to_spec_of_key_holders_hide_the_key():
    embedder = OpenAIEmbedder(api_key=KEY)
    chat = OpenAIChat(model="m", api_key=KEY)
    for shown in (repr(embedder), repr(chat), repr(to_spec(chat)), repr(to_spec(embedder)),
                  repr(chat.get_params()), repr(chat.clone())):
        assert KEY not in shown and "***" in shown
    assert chat.clone().api_key.reveal() == KEY
    chat.set_params(api_key="sk-other")
    assert isinstance(chat.api_key, Secret) and chat.api_key.reveal() == "sk-other"


def test_pickled_clients_still_send_the_key(monkeypatch):
    """Joblib workers get pickled strategies: the key must travel and work, not be lost."""
    with LoopbackServer() as server:
        chat = pickle.loads(pickle.dumps(OpenAIChat(model="loopback-model", base_url=server.base_url,
                                                    api_key=KEY)))
        embedder = pickle.loads(pickle.dumps(OpenAIEmbedder(base_url=server.base_url, api_key=KEY,
                                                            dimensions=8)))
        chat.complete([{"role": "user", "content": "hi"}])
        embedder.embed(["hello"])
    assert [r["authorization"] for r in server.requests] == [f"Bearer {KEY}"] * 2


def _no_key_in_folder(folder) -> None:
    for path in folder.rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path


def test_a_key_given_with_set_reaches_the_server_and_no_output(tmp_path, monkeypatch, capsys, caplog):
    caplog.set_level(logging.DEBUG)
    with LoopbackServer() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("MEMLAB_LLM_MODEL", "loopback-model")
        monkeypatch.setenv("MEMLAB_CACHE_DIR", str(tmp_path / "cache"))
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
        for out in ("rows.csv", "rows.parquet"):
            code = main(["eval", DATA, "--strategy", "layered", "--set", "llm=openai",
                         "--set", f"llm__api_key={KEY}", "--json", "--output", str(tmp_path / out)])
            assert code == 0
            printed = capsys.readouterr()
            assert KEY not in printed.out + printed.err
            assert json.loads(printed.out)["params"]["llm__api_key"] == "***"
    assert server.requests and {r["authorization"] for r in server.requests} == {f"Bearer {KEY}"}
    assert KEY not in caplog.text
    rows = pd.read_parquet(tmp_path / "rows.parquet")
    assert set(rows["param:llm__api_key"]) == {"***"}
    _no_key_in_folder(tmp_path)


def test_a_key_in_a_sweep_file_is_not_written(tmp_path, monkeypatch, capsys, sweep_toml):
    with LoopbackServer() as server:
        monkeypatch.setenv("MEMLAB_CACHE_DIR", str(tmp_path / "cache"))
        embedder = {"class": "memlab.embeddings.OpenAIEmbedder",
                    "params": {"base_url": server.base_url, "api_key": KEY, "dimensions": 8}}
        toml = sweep_toml(dataset={"path": DATA}, strategy={"name": "longterm", "params": {"embedder": embedder}},
                          run={"ks": [1], "output": tmp_path / "out"})
        code = main(["sweep", str(toml), "--output", str(tmp_path / "out")])
    printed = capsys.readouterr()
    assert code == 0, printed.err
    assert KEY not in printed.out + printed.err
    assert {r["authorization"] for r in server.requests} == {f"Bearer {KEY}"}
    rows = pd.read_parquet(tmp_path / "out" / "results.parquet")
    # longterm recalls with a hybrid: the embedder is its second retriever
    assert set(rows["param:retriever__retrievers__1__embedder__api_key"]) == {"***"}
    _no_key_in_folder(tmp_path / "out")
