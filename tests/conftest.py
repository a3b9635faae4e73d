import json
import os
from pathlib import Path

# onnxruntime (pulled in by chromadb) phones home after a session opens.
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


import pytest


@pytest.fixture(autouse=True, scope="session")
def _private_embedding_cache(tmp_path_factory):
    """Tests never read or write the user's embedding cache."""
    os.environ["MEMLAB_CACHE_DIR"] = str(tmp_path_factory.mktemp("memlab-cache"))
    yield


def toml_value(value) -> str:
    """``value`` written as TOML (strings, numbers, booleans, lists, inline tables)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, (str, Path)):
        return json.dumps(str(value))
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {toml_value(v)}" for k, v in value.items()) + " }"
    raise TypeError(f"no TOML form for {type(value).__name__}")


@pytest.fixture
def sweep_toml(tmp_path):
    """The sweep-file writer every sweep test uses: ``sweep_toml(dataset={"path": ...},
    strategy={"name": ...}, grid={...}, run={...})`` writes one ``[table]`` per keyword, in
    order, to ``folder / name`` (default ``tmp_path / "s.toml"``) and returns the path."""

    def write(*, folder=None, name: str = "s.toml", **tables) -> Path:
        path = Path(folder if folder is not None else tmp_path) / name
        path.write_text("".join(f"[{table}]\n" + "".join(f"{k} = {toml_value(v)}\n" for k, v in body.items())
                                for table, body in tables.items()), encoding="utf-8")
        return path

    return write
