import os

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
