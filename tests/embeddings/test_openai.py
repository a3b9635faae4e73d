"""OpenAIEmbedder against LoopbackServer: the real openai client over real HTTP."""

from __future__ import annotations

import math

import numpy as np
import pytest

from memlab.base import MemlabError
from memlab.embeddings.hashing import HashingEmbedder
from memlab.embeddings.openai import OpenAIEmbedder
from memlab.offline.loopback import LoopbackServer


def length_vectors(texts, request):
    """Unnormalised, hand-checkable: [len(text), 1, 0, 0]."""
    return [[float(len(t)), 1.0, 0.0, 0.0] for t in texts]


@pytest.fixture(scope="module")
def shared_server():
    with LoopbackServer(embed=length_vectors) as s:
        yield s


@pytest.fixture
def server(shared_server):
    """One server for the module (stopping one takes 0.5 s); each test sees fresh requests."""
    shared_server.requests.clear()
    yield shared_server
    shared_server.requests.clear()


def embedder(server, **kw):
    kw.setdefault("model", "loopback-model")
    return OpenAIEmbedder(base_url=server.base_url, api_key="test", **kw)


def embedding_requests(server):
    return [r["body"] for r in server.requests if r["path"].endswith("/embeddings")]


def test_vectors_are_what_the_server_computed(server):
    e = embedder(server)
    out = e.embed(["abc", "hello world"])
    for row, n in zip(out, [3, 11]):
        np.testing.assert_allclose(row, [n / math.sqrt(n * n + 1), 1 / math.sqrt(n * n + 1), 0, 0],
                                   rtol=1e-6)
    assert out.dtype == np.float32 and e.dim == 4
    (body,) = embedding_requests(server)
    assert body["model"] == "loopback-model" and body["input"] == ["abc", "hello world"]


def test_default_loopback_embeddings_match_hashing():
    texts = ["the cat sat", "on the mat"]
    with LoopbackServer() as s:
        out = OpenAIEmbedder(model="m", base_url=s.base_url, api_key="k", dimensions=16).embed(texts)
        assert embedding_requests(s)[0]["dimensions"] == 16
    np.testing.assert_allclose(out, HashingEmbedder(n_features=16).embed(texts), atol=1e-7)


def test_batching_splits_requests_and_keeps_order(server):
    texts = [f"text number {'x' * i}" for i in range(5)]
    out = embedder(server, batch_size=2).embed(texts)
    assert [b["input"] for b in embedding_requests(server)] == [texts[0:2], texts[2:4], texts[4:5]]
    lengths = out[:, 0] / out[:, 1]
    np.testing.assert_allclose(lengths, [len(t) for t in texts], rtol=1e-5)


def test_empty_texts_are_zero_and_not_sent(server):
    out = embedder(server).embed(["", "ab", "   "])
    assert embedding_requests(server)[0]["input"] == ["ab"]
    assert not out[0].any() and not out[2].any() and abs(np.linalg.norm(out[1]) - 1) < 1e-6


def test_dim_known_dimensions_and_probe(server):
    assert OpenAIEmbedder(model="text-embedding-3-large", base_url=server.base_url).dim == 3072
    assert OpenAIEmbedder(model="text-embedding-3-small").dim == 1536
    assert OpenAIEmbedder(model="text-embedding-ada-002").dim == 1536
    assert embedder(server, dimensions=7).dim == 7
    assert server.requests == []  # none of that needed the network
    e = embedder(server)
    assert e.dim == 4  # unknown model: learned from a one-text probe
    assert len(embedding_requests(server)) == 1


def test_constructor_does_not_touch_the_network(server):
    e = embedder(server)
    e.set_params(batch_size=3)
    e.clone()
    assert server.requests == [] and e._client is None


def test_a_500_is_retried(server):
    server.enqueue_fault(500)
    out = embedder(server, max_retries=2).embed(["abcd"])
    assert len(embedding_requests(server)) == 2
    assert abs(out[0, 0] / out[0, 1] - 4.0) < 1e-5


def test_a_persistent_500_raises_a_clear_error(server):
    for _ in range(2):
        server.enqueue_fault(500)
    with pytest.raises(MemlabError) as err:
        embedder(server, max_retries=1).embed(["abcd"])
    message = str(err.value)
    assert "loopback-model" in message and server.base_url in message and "500" in message
    assert len(embedding_requests(server)) == 2  # first try + one retry


def test_timeout_raises_a_clear_error(server):
    server.enqueue_fault(200, delay=1.0)
    with pytest.raises(MemlabError, match="APITimeoutError"):
        embedder(server, timeout=0.2, max_retries=0).embed(["abcd"])


def test_environment_fallback(server, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "from-env")
    e = OpenAIEmbedder(model="loopback-model")
    assert e.embed(["xy"]).shape == (1, 4)
    assert e.client.api_key == "from-env" and str(e.client.base_url).rstrip("/") == server.base_url
    assert server.base_url in e.identity()


def test_missing_api_key(server, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(MemlabError, match="needs an API key: pass api_key= or set OPENAI_API_KEY"):
        OpenAIEmbedder(model="m", base_url=server.base_url).embed(["x"])


def test_identity_ignores_transport_parameters():
    a = OpenAIEmbedder(base_url="http://h/v1", api_key="k1", batch_size=1, timeout=1.0, max_retries=0)
    b = OpenAIEmbedder(base_url="http://h/v1", api_key="k2")
    assert a.identity() == b.identity()
    assert a.identity() != OpenAIEmbedder(base_url="http://h/v1", dimensions=256).identity()
    assert a.identity() != OpenAIEmbedder(base_url="http://other/v1").identity()


@pytest.mark.parametrize("kwargs, message", [
    ({"batch_size": 0}, "OpenAIEmbedder parameter 'batch_size': expected an int >= 1, got 0"),
    ({"max_retries": -1}, "OpenAIEmbedder parameter 'max_retries': expected an int >= 0, got -1"),
    ({"dimensions": 0}, "OpenAIEmbedder parameter 'dimensions': expected an int >= 1 or None, got 0"),
    ({"timeout": 0}, "OpenAIEmbedder parameter 'timeout': expected a number > 0, got 0"),
    ({"api_key": b"sk-x"}, "OpenAIEmbedder parameter 'api_key': expected a string or None, got a bytes$"),
])
def test_invalid_parameters(kwargs, message):
    with pytest.raises(MemlabError, match=message):
        OpenAIEmbedder(**kwargs)
