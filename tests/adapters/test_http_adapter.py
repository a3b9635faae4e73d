"""http_memory against a mem0-shaped memory service on 127.0.0.1, started by the tests."""

from __future__ import annotations

import pickle
import socket
from collections.abc import Iterator

import pytest

from memlab import ConfigError, MemlabError, strategies
from memlab.adapters.http import HTTPMemoryRetriever, dig, fill
from memlab.adapters.service import MemoryService
from memlab.records import MemoryRecord, Role
from memlab.testing import check_records, check_retriever, check_strategy


@pytest.fixture()
def service() -> Iterator[MemoryService]:
    with MemoryService() as s:
        yield s


def _fed(strategy):
    for record in check_records():
        strategy.observe(record)
    return strategy


def test_passes_the_check_suite_against_a_served_memory(service: MemoryService) -> None:
    # the generic checks end with "context"; one more is chosen by what the strategy declares
    done = ["context", "asking_changes_nothing"]
    assert check_strategy(strategies.get("http_memory", base_url=service.base_url))[9:] == done
    assert check_strategy(strategies.get("http_memory"))[9:] == done  # memlab's own service
    assert check_retriever(HTTPMemoryRetriever(base_url=service.base_url))[-1] == "search_depth_serves_its_prefix"


def test_requests_have_mem0s_shape_and_results_map_to_turns(service: MemoryService) -> None:
    s = _fed(strategies.get("http_memory", base_url=service.base_url))
    method, path, body = service.requests[0]
    user = body["user_id"]
    assert (method, path) == ("POST", "/memories") and user.startswith("memlab-")
    assert body == {"messages": [{"role": "user", "content": "Hi, I am planning a trip to Japan next spring."}],
                    "user_id": user, "metadata": {"turn_id": "D1:1"}}
    hits = s.retrieve("Where does the sister live?", 3)
    assert service.requests[-1] == ("POST", "/search", {"query": "Where does the sister live?", "user_id": user,
                                                        "limit": 50})  # RetrievalStrategy asks for `candidates`
    served = service.search({"query": "Where does the sister live?", "user_id": user, "limit": 3})["results"]
    assert [(h.id, h.score) for h in hits] == [(r["metadata"]["turn_id"], r["score"]) for r in served]
    s.reset()
    assert service.requests[-1] == ("DELETE", f"/memories?user_id={user}", None)
    assert s.retrieve("Where does the sister live?", 3) == []


def test_pickling_keeps_the_served_namespace_without_sending_turns_again(service: MemoryService) -> None:
    s = _fed(strategies.get("http_memory", base_url=service.base_url))
    sent = len(service.requests)
    restored = pickle.loads(pickle.dumps(s))
    hits = [(h.id, h.score) for h in restored.retrieve("budget", 3)]
    assert [r[1] for r in service.requests[sent:]] == ["/search"]  # no turn sent again
    assert hits == [(h.id, h.score) for h in s.retrieve("budget", 3)] and hits


def test_request_and_response_mapping_is_configurable(service: MemoryService) -> None:
    r = HTTPMemoryRetriever(base_url=service.base_url + "/", add_path="/memories",
                            add_body={"messages": [{"role": "user", "content": "{role}: {content}"}],
                                      "user_id": "{user_id}", "metadata": {"turn": "{id}", "at": "{timestamp}"}},
                            search_body={"query": "{query}", "user_id": "{user_id}", "limit": "{limit}"},
                            id_path="metadata.turn", score_path="score", user_prefix="exp")
    r.add([MemoryRecord(Role.ASSISTANT, "green tea in Kyoto", id="a1", timestamp=5.0),
           MemoryRecord(Role.USER, "black coffee", id="a2", timestamp=6.0)])
    assert service.requests[0][2]["messages"][0]["content"] == "assistant: green tea in Kyoto"
    assert service.requests[0][2]["metadata"] == {"turn": "a1", "at": 5.0}
    assert [h.id for h in r.search("coffee", 2)] == ["a2"]


def test_fill_and_dig() -> None:
    assert fill({"a": ["{n}", "n={n}"], "{k}": 1}, {"n": 3, "k": "key"}) == {"a": [3, "n=3"], "key": 1}
    with pytest.raises(ConfigError, match=r"unknown placeholder 'x' in '\{x\} y'; available: n"):
        fill("{x} y", {"n": 1})
    assert dig({"data": {"hits": [{"id": 7}]}}, "data.hits.0.id", "here") == 7
    with pytest.raises(MemlabError, match=r"here: no 'data.items' in the response \(stopped at 'items'\)"):
        dig({"data": {}}, "data.items", "here")


def test_errors_name_the_url_and_what_came_back(service: MemoryService) -> None:
    s = strategies.get("http_memory", base_url=service.base_url)
    service.fail_next(503)
    with pytest.raises(MemlabError, match=r"POST http://127\.0\.0\.1:\d+/memories answered HTTP 503: .*scripted"):
        s.observe(check_records()[0])
    bad_results = HTTPMemoryRetriever(base_url=service.base_url, results_path="hits")
    bad_results.add([MemoryRecord(Role.USER, "tea", id="x", timestamp=1.0)])
    with pytest.raises(MemlabError, match=r"no 'hits' in the response"):
        bad_results.search("tea", 1)
    with socket.socket() as sock:  # a loopback port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    closed = strategies.get("http_memory", base_url=f"http://127.0.0.1:{port}", timeout=2.0)
    with pytest.raises(MemlabError, match=rf"POST http://127\.0\.0\.1:{port}/memories failed: .*refused"):
        closed.observe(check_records()[0])
    with pytest.raises(ConfigError, match=r"HTTPMemoryRetriever parameter 'base_url': expected an http\(s\) URL or None, "
                                          r"got 'ftp://x'"):
        strategies.get("http_memory", base_url="ftp://x")
