"""One way to write a class in a file ("module.Name"); the "module:Name" form of earlier
chroma collections still reads."""

from __future__ import annotations

import pytest

from memlab.base import ConfigError
from memlab.classpath import class_path, import_class
from memlab.embeddings.cache import CachedEmbedder
from memlab.embeddings.hashing import HashingEmbedder
from memlab.storage.chroma import component_from_config, component_to_config
from memlab.strategies.spec import to_spec


def test_both_forms_read_and_one_is_written():
    assert class_path(HashingEmbedder) == "memlab.embeddings.hashing.HashingEmbedder"
    assert import_class("memlab.embeddings.hashing.HashingEmbedder") is HashingEmbedder
    assert import_class("memlab.embeddings.hashing:HashingEmbedder") is HashingEmbedder
    assert import_class("memlab.embeddings.HashingEmbedder") is HashingEmbedder  # a package's lazy name
    assert to_spec(HashingEmbedder())["class"] == component_to_config(HashingEmbedder())["class"]


def _old_form(config):
    """``config`` as memlab wrote it into chroma collections before: "module:Name"."""
    if isinstance(config, dict) and "class" in config:
        module, _, name = config["class"].rpartition(".")
        return {"class": f"{module}:{name}", "params": {k: _old_form(v) for k, v in config["params"].items()}}
    return config


def test_a_collection_written_in_the_old_form_still_rebuilds():
    old = _old_form(component_to_config(CachedEmbedder(HashingEmbedder(n_features=32))))
    assert old["class"] == "memlab.embeddings.cache:CachedEmbedder"
    rebuilt = component_from_config(old)
    assert type(rebuilt) is CachedEmbedder and type(rebuilt.embedder) is HashingEmbedder
    assert rebuilt.embedder.n_features == 32


@pytest.mark.parametrize("path, message", [
    ("nowhere.Thing", "cannot import module 'nowhere'"),
    ("memlab.embeddings.hashing.Nothing", "has no class 'Nothing'"),
    ("Thing", "class path must be"),
])
def test_a_bad_path_names_itself(path, message):
    with pytest.raises(ConfigError, match=message):
        import_class(path)
