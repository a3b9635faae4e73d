"""OpenAIChat through the real openai client against LoopbackServer, faults included."""

from __future__ import annotations

import asyncio
import sqlite3

import pytest

from memlab.base import ConfigError, MemlabError
from memlab.llm import OpenAIChat, ResponseCache
from memlab.llm.cache import _canonical, cache_key
from memlab.offline.loopback import LoopbackServer
from memlab.llm.openai_chat import MAX_RETRY_AFTER, parse_chat_response, retry_after_seconds

MSGS = [{"role": "user", "content": "hello there world"}]


@pytest.fixture(scope="module")
def shared_server():
    with LoopbackServer() as s:
        yield s


@pytest.fixture()
def server(shared_server):
    # one server per module (stopping one takes half a second); each test starts clean
    shared_server.requests.clear()
    shared_server._faults.clear()
    yield shared_server


def make(server, **kw) -> OpenAIChat:
    kw.setdefault("backoff", 0.001)
    return OpenAIChat(model="test-model", base_url=server.base_url, api_key="sk-test", **kw)


def test_completion_text_usage_and_request(server):
    llm = make(server, max_tokens=50)
    c = llm.complete(MSGS)
    assert c.text == "echo: hello there world"
    # loopback counts whitespace words: prompt 3, answer 4
    assert (c.prompt_tokens, c.completion_tokens, c.model, c.cached) == (3, 4, "test-model", False)
    assert llm.usage.as_dict() == {"prompt_tokens": 3, "completion_tokens": 4, "calls": 1, "cached_calls": 0,
            "cached_tokens": 0, "format_errors": 0}
    body = server.requests[0]["body"]
    assert body["model"] == "test-model" and body["temperature"] == 0.0 and body["max_tokens"] == 50
    assert body["messages"] == MSGS
    llm.complete(MSGS, temperature=0.5)
    assert server.requests[1]["body"]["temperature"] == 0.5
    assert llm.usage.calls == 2 and llm.usage.prompt_tokens == 6
    llm.reset_usage()
    assert llm.usage.as_dict() == {"prompt_tokens": 0, "completion_tokens": 0, "calls": 0, "cached_calls": 0,
            "cached_tokens": 0, "format_errors": 0}


def test_429_with_retry_after_then_success(server):
    llm = make(server)
    server.enqueue_fault(429, headers={"Retry-After": "0.05"})
    assert llm.complete(MSGS).text == "echo: hello there world"
    assert len(server.requests) == 2
    [event] = llm.retries
    assert (event.attempt, event.status, event.reason, event.wait) == (1, 429, "status 429", 0.05)
    assert event.url.endswith("/v1/chat/completions")
    assert llm.usage.calls == 1  # the failed attempt cost nothing


def test_500_twice_then_success_uses_exponential_backoff(server):
    llm = make(server, backoff=0.01)
    server.enqueue_fault(500)
    server.enqueue_fault(503)
    assert llm.complete(MSGS).text.startswith("echo:")
    assert len(server.requests) == 3
    assert [(e.status, e.wait) for e in llm.retries] == [(500, 0.01), (503, 0.02)]


def test_persistent_500_raises_naming_status_url_and_attempts(server):
    llm = make(server, max_retries=2)
    for _ in range(3):
        server.enqueue_fault(500)
    with pytest.raises(MemlabError) as err:
        llm.complete(MSGS)
    msg = str(err.value)
    assert "after 3 attempt(s)" in msg and "status 500" in msg and server.base_url in msg
    assert len(server.requests) == 3
    assert llm.retries[-1].wait == 0.0 and llm.usage.calls == 0


def test_client_error_is_not_retried(server):
    llm = make(server)
    server.enqueue_fault(400, body={"error": {"message": "bad model name"}})
    with pytest.raises(MemlabError, match="HTTP 400 .*bad model name"):
        llm.complete(MSGS)
    assert len(server.requests) == 1


def test_timeout_then_success(server):
    llm = make(server, timeout=0.2)
    server.enqueue_fault(status=200, delay=0.6)
    assert llm.complete(MSGS).text == "echo: hello there world"
    assert len(server.requests) == 2
    assert llm.retries[0].reason == "timeout after 0.2s" and llm.retries[0].status is None


@pytest.mark.parametrize("body, expected", [
    ("not json", "is not JSON: 'not json'"),
    ({"id": "x", "object": "chat.completion"}, "has no 'choices'"),
    ({"choices": [{"index": 0}]}, "has no 'message'"),
])
def test_malformed_output_is_a_clear_error(server, body, expected):
    llm = make(server)
    server.enqueue_fault(status=200, body=body)
    with pytest.raises(MemlabError, match=expected):
        llm.complete(MSGS)
    assert len(server.requests) == 1


def test_missing_usage_counts_zero(server):
    llm = make(server)
    server.enqueue_fault(status=200, body={"choices": [{"message": {"role": "assistant", "content": "hi"}}]})
    c = llm.complete(MSGS)
    assert (c.text, c.prompt_tokens, c.completion_tokens) == ("hi", 0, 0)


def test_cache_hit_makes_no_request_and_counts_the_original_tokens(server, tmp_path):
    path = str(tmp_path / "responses.sqlite")
    llm = make(server, cache=ResponseCache(path))
    first = llm.complete(MSGS)
    second = llm.complete(MSGS)
    assert len(server.requests) == 1
    assert second.cached and not first.cached and second.text == first.text
    assert (second.prompt_tokens, second.completion_tokens) == (3, 4)  # what the original call cost
    # usage is the cost of the work whatever the cache state; the hit is counted apart too
    assert llm.usage.as_dict() == {"prompt_tokens": 6, "completion_tokens": 8, "calls": 2, "cached_calls": 1,
                                   "cached_tokens": 7, "format_errors": 0}
    assert (llm.usage.total_tokens, llm.usage.billed_tokens) == (14, 7)
    llm.complete(MSGS, temperature=0.3)  # different params: a different key
    assert len(server.requests) == 2
    llm.cache.close()
    # a new client on the same file replays without asking the server, at the same cost
    again = make(server, cache=ResponseCache(path))
    assert again.complete(MSGS).cached and len(server.requests) == 2
    assert again.usage.as_dict() == {"prompt_tokens": 3, "completion_tokens": 4, "calls": 1, "cached_calls": 1,
                                     "cached_tokens": 7, "format_errors": 0}
    assert again.usage.billed_tokens == 0
    again.cache.close()


def test_async_cache_hit_counts_like_a_sync_one(server):
    llm = make(server, cache=ResponseCache())
    cold = asyncio.run(llm.acomplete(MSGS))
    warm = asyncio.run(llm.acomplete(MSGS))
    assert (cold.cached, warm.cached, len(server.requests)) == (False, True, 1)
    assert llm.usage.as_dict() == {"prompt_tokens": 6, "completion_tokens": 8, "calls": 2, "cached_calls": 1,
                                   "cached_tokens": 7, "format_errors": 0}


def test_a_cache_row_without_token_counts_reads_as_zero(server, tmp_path):
    path = str(tmp_path / "foreign.sqlite")
    cache = ResponseCache(path)
    len(cache)  # creates the table
    cache.close()
    # a row another tool wrote without counts (memlab always writes them)
    params = {"temperature": 0.0}
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE loose AS SELECT * FROM responses")  # same columns, no NOT NULL
        db.execute("DROP TABLE responses")
        db.execute("ALTER TABLE loose RENAME TO responses")
        db.execute("INSERT INTO responses VALUES (?, ?, ?, ?, NULL, NULL, 0)",
                   (cache_key("test-model", MSGS, params), "test-model", _canonical("test-model", MSGS, params), "old"))
    llm = make(server, cache=ResponseCache(path))
    c = llm.complete(MSGS)
    assert (c.text, c.cached, c.prompt_tokens, c.completion_tokens) == ("old", True, 0, 0)
    assert server.requests == [] and llm.usage.as_dict() == {
        "prompt_tokens": 0, "completion_tokens": 0, "calls": 1, "cached_calls": 1, "cached_tokens": 0, "format_errors": 0}
    llm.cache.close()


def test_acomplete_retries_and_records_usage(server):
    llm = make(server)
    server.enqueue_fault(429, headers={"retry-after-ms": "20"})

    async def run():
        return await asyncio.gather(llm.acomplete(MSGS), llm.acomplete([{"role": "user", "content": "b"}]))

    a, b = asyncio.run(run())
    assert a.text == "echo: hello there world" and b.text == "echo: b"
    assert len(server.requests) == 3
    assert [(e.status, e.wait) for e in llm.retries] == [(429, 0.02)]
    assert llm.usage.as_dict() == {"prompt_tokens": 4, "completion_tokens": 6, "calls": 2, "cached_calls": 0,
            "cached_tokens": 0, "format_errors": 0}


def test_acomplete_gives_up_with_clear_error(server):
    llm = make(server, max_retries=1)
    server.enqueue_fault(502)
    server.enqueue_fault(502)
    with pytest.raises(MemlabError, match="after 2 attempt.*status 502"):
        asyncio.run(llm.acomplete(MSGS))


def test_configuration_from_environment(server, monkeypatch):
    monkeypatch.setenv("MEMLAB_LLM_MODEL", "env-model")
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    llm = OpenAIChat()
    assert llm.complete(MSGS).model == "env-model"
    assert server.requests[0]["body"]["model"] == "env-model"


def test_missing_model_or_key_is_a_config_error(monkeypatch):
    monkeypatch.delenv("MEMLAB_LLM_MODEL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="MEMLAB_LLM_MODEL"):
        OpenAIChat(api_key="k").complete(MSGS)
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        OpenAIChat(model="m").complete(MSGS)


def test_constructor_is_offline_and_validates():
    llm = OpenAIChat(model="m", base_url="http://127.0.0.1:9/v1", api_key="secret")
    assert llm._client is None
    assert "secret" not in repr(llm) and "'***'" in repr(llm)
    assert llm.clone().get_params()["model"] == "m"
    with pytest.raises(ConfigError, match="OpenAIChat parameter 'timeout': expected a number > 0, got 0"):
        OpenAIChat(timeout=0)
    with pytest.raises(ConfigError, match="OpenAIChat parameter 'max_retries': expected an int >= 0, got -1"):
        OpenAIChat(max_retries=-1)
    with pytest.raises(ConfigError, match="OpenAIChat parameter 'temperature': expected a number >= 0 and <= 2, got 3"):
        OpenAIChat(temperature=3)


def test_retry_after_parsing():
    assert retry_after_seconds({"retry-after": "2"}) == 2.0
    assert retry_after_seconds({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    assert retry_after_seconds({"retry-after": "100000"}) == MAX_RETRY_AFTER
    assert retry_after_seconds({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0  # in the past
    assert retry_after_seconds({"retry-after": "soon"}) is None
    assert retry_after_seconds({}) is None


def test_parse_chat_response_reads_usage():
    c = parse_chat_response('{"model": "x", "choices": [{"message": {"content": "a"}}], '
                            '"usage": {"prompt_tokens": 7, "completion_tokens": 2}}', "u", "m")
    assert (c.text, c.prompt_tokens, c.completion_tokens, c.model) == ("a", 7, 2, "x")


def test_acomplete_across_event_loops_and_pickling(server):
    import pickle

    llm = make(server)
    first = asyncio.run(llm.acomplete(MSGS))
    second = asyncio.run(llm.acomplete(MSGS))  # a new loop gets its own async client
    assert first.text == second.text and len(server.requests) == 2
    copy = pickle.loads(pickle.dumps(llm))
    assert copy._client is None and copy.usage == llm.usage
    assert copy.complete(MSGS).text == first.text and copy.usage.calls == 3
