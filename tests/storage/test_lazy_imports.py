"""``import memlab.storage`` / ``memlab.embeddings`` stay light: heavy libraries load on use."""

from __future__ import annotations

import subprocess
import sys

CODE = """
import sys
import memlab.storage, memlab.embeddings
from memlab.storage import JsonlKeyValueStore, SQLiteKeyValueStore, NumpyVectorStore
from memlab.embeddings import CachedEmbedder, HashingEmbedder, OpenAIEmbedder, SentenceTransformerEmbedder
SentenceTransformerEmbedder().dim, OpenAIEmbedder().dim
print(sorted(m for m in ("chromadb", "sentence_transformers", "torch", "openai") if m in sys.modules))
"""


def test_heavy_libraries_load_only_when_used():
    out = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_unknown_names_raise_attribute_error():
    import pytest

    import memlab.embeddings
    import memlab.storage

    with pytest.raises(AttributeError, match="has no attribute 'Nope'"):
        memlab.storage.Nope  # noqa: B018
    with pytest.raises(AttributeError, match="has no attribute 'Nope'"):
        memlab.embeddings.Nope  # noqa: B018
    assert "ChromaVectorStore" in dir(memlab.storage) and "CachedEmbedder" in dir(memlab.embeddings)
