"""OpenAIChat: any OpenAI-compatible chat-completions endpoint, with retries and a cache.

The ``openai`` client is created on first use (a constructor never touches the
network) with its own retries switched off: memlab retries itself so that the policy
is the same for the sync and async paths and visible in ``retries``:

- retried: HTTP 408, 409, 429 and 5xx, timeouts and connection errors;
- wait before retry ``n`` (0-based) = the server's ``Retry-After`` (seconds, or
  ``retry-after-ms``, or an HTTP date; at most ``MAX_RETRY_AFTER``) when given, else
  ``backoff * 2**n``;
- after ``max_retries`` retries a ``MemlabError`` names the status (or "timeout"),
  the URL and the number of attempts. Other 4xx fail at once; so does a 200 whose
  body is not a chat completion (not JSON, no ``choices``), since asking again for
  a malformed answer costs tokens and rarely helps.

Structured output is off unless the constructor says which form the endpoint takes
(``structured_output``): with ``"json_schema"`` a request carrying a schema
(``complete(..., schema=...)``, ``memlab.llm.base``) is sent with OpenAI's
``response_format={"type": "json_schema", "json_schema": {"name": <the schema's title>,
"schema": <the schema less its title>, "strict": true}}`` (OpenAI, vLLM, llama.cpp's own server);
with ``"json_object"`` as ``response_format={"type": "json_object", "schema": <the schema>}``
(llama-cpp-python's server, ``memlab serve-llm``, which answers the ``json_schema`` form with
HTTP 500, retried then an ``LLMError``). With ``"off"`` (the default) the schema is dropped, so an endpoint of unknown
abilities gets the same request as before.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import os
import threading
import time
import weakref
from typing import Any

from ..base import ConfigError, Param
from ..secrets import Secret, as_secret, reveal
from .base import SCHEMA_PARAM, Completion, LLMError, Message
from .cache import ResponseCache
from .retries import RetryEvent, RetryingLLM

#: Longest wait memlab accepts from a Retry-After header, in seconds.
MAX_RETRY_AFTER = 120.0
_RETRY_STATUSES = frozenset({408, 409, 429})
#: The forms of ``response_format`` OpenAIChat can send a schema in (``structured_output``).
STRUCTURED_FORMS = ("off", "json_schema", "json_object")


class OpenAIChat(RetryingLLM):
    """Chat completions through the official ``openai`` client.

    ``model``, ``base_url`` and ``api_key`` default to the environment variables
    ``MEMLAB_LLM_MODEL``, ``OPENAI_BASE_URL`` and ``OPENAI_API_KEY``. ``cache`` (a
    ``ResponseCache``) answers repeated requests without a call; ``usage`` still counts
    such a hit at the tokens its original call cost (see ``LLMUsage``). ``structured_output``:
    the ``response_format`` form the endpoint takes a schema in, or "off" (module docstring).
    """

    constraints = {
        "api_key": Param((str, Secret), none=True, secret=True, expected="a string or None"),
        "temperature": Param(float, ge=0, le=2),
        "max_tokens": Param(int, ge=1, none=True),
        "timeout": Param(float, gt=0),
        "max_retries": Param(int, ge=0),
        "backoff": Param(float, ge=0),
        "cache": Param(ResponseCache, none=True),
        "structured_output": Param(choices=STRUCTURED_FORMS),
    }

    def __init__(self, model: str | None = None, base_url: str | None = None,
                 api_key: str | None = None, temperature: float = 0.0,
                 max_tokens: int | None = None, timeout: float = 30.0, max_retries: int = 3,
                 backoff: float = 0.5, cache: ResponseCache | None = None, structured_output: str = "off"):
        self.model = model
        self.base_url = base_url
        self.api_key = api_key
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self.cache = cache
        self.structured_output = structured_output
        self._on_params_changed()

    def _on_params_changed(self) -> None:
        self.api_key = as_secret(self.api_key)  # never printed, logged or written (memlab.secrets)
        self._client: Any = None
        self._async_clients: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
        self._client_lock = threading.Lock()
        self._retries: list[RetryEvent] = []

    def __getstate__(self) -> dict[str, Any]:
        # HTTP clients and locks do not travel; they are created again on first use
        state = super().__getstate__()
        for key in ("_client", "_async_clients", "_client_lock"):
            state.pop(key, None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        self._client, self._client_lock = None, threading.Lock()
        self._async_clients = weakref.WeakKeyDictionary()

    # -- configuration ---------------------------------------------------------------
    def resolved_model(self) -> str:
        model = self.model or os.environ.get("MEMLAB_LLM_MODEL")
        if not model:
            raise ConfigError("OpenAIChat needs a model: pass model=... or set MEMLAB_LLM_MODEL")
        return model

    def _client_kwargs(self) -> dict[str, Any]:
        key = reveal(self.api_key) or os.environ.get("OPENAI_API_KEY")
        if not key:
            raise ConfigError("OpenAIChat needs an API key: pass api_key=... or set OPENAI_API_KEY "
                              "(any non-empty string for a local server)")
        kwargs: dict[str, Any] = {"api_key": key, "max_retries": 0, "timeout": float(self.timeout)}
        base_url = self.base_url or os.environ.get("OPENAI_BASE_URL")
        if base_url:
            kwargs["base_url"] = base_url
        return kwargs

    def _sync_client(self) -> Any:
        with self._client_lock:
            if self._client is None:
                import openai

                self._client = openai.OpenAI(**self._client_kwargs())
            return self._client

    def _aclient(self) -> Any:
        # an async HTTP pool belongs to the event loop that created it (weak keys: a closed,
        # collected loop takes its client with it, and a new loop never gets a stale one)
        loop = asyncio.get_running_loop()
        with self._client_lock:
            client = self._async_clients.get(loop)
            if client is None:
                import openai

                client = self._async_clients[loop] = openai.AsyncOpenAI(**self._client_kwargs())
            return client

    def accepts_schema(self) -> bool:
        """True when ``structured_output`` names the form the endpoint takes a schema in."""
        return self.structured_output != "off"

    def _request_params(self, params: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {"temperature": self.temperature}
        if self.max_tokens is not None:
            out["max_tokens"] = self.max_tokens
        out.update(params)
        schema = out.pop(SCHEMA_PARAM, None)  # only here when structured_output is on (LLM.complete)
        if schema is not None:
            out["response_format"] = response_format(schema, self.structured_output)
        return out

    # -- calls -----------------------------------------------------------------------
    def _complete(self, messages: list[Message], **params: Any) -> Completion:
        model, request = self.resolved_model(), self._request_params(params)
        cached = self._cached(model, messages, request)
        if cached is not None:
            return cached
        client = self._sync_client()
        attempts = self.max_retries + 1
        for attempt in range(attempts):
            try:
                raw = client.chat.completions.with_raw_response.create(
                    model=model, messages=messages, **request)
            except Exception as exc:
                event = self._failure(exc, attempt, attempts)
                if event.wait:
                    time.sleep(event.wait)
                continue
            return self._finish(raw, model, messages, request)
        raise self._give_up(attempts)

    async def acomplete(self, messages: list[Message], **params: Any) -> Completion:
        messages = list(messages)
        model, request = self.resolved_model(), self._request_params(self._schema_params(params))
        completion = self._cached(model, messages, request)
        if completion is None:
            client = self._aclient()
            attempts = self.max_retries + 1
            for attempt in range(attempts):
                try:
                    raw = await client.chat.completions.with_raw_response.create(
                        model=model, messages=messages, **request)
                except Exception as exc:
                    event = self._failure(exc, attempt, attempts)
                    if event.wait:
                        await asyncio.sleep(event.wait)
                    continue
                completion = self._finish(raw, model, messages, request)
                break
            else:
                raise self._give_up(attempts)
        self._record(completion)
        return completion

    def _cached(self, model: str, messages: list[Message], request: dict[str, Any]) -> Completion | None:
        return None if self.cache is None else self.cache.get(model, messages, request)

    def _finish(self, raw: Any, model: str, messages: list[Message], request: dict[str, Any]) -> Completion:
        completion = parse_chat_response(raw.http_response.text, str(raw.http_response.url), model)
        if self.cache is not None:
            self.cache.put(model, messages, request, completion)
        return completion

    def _failure(self, exc: Exception, attempt: int, attempts: int) -> RetryEvent:
        """Classify a failed attempt: raise at once if it is not worth retrying."""
        import openai

        status: int | None = None
        url = str(getattr(getattr(exc, "request", None), "url", "") or self.base_url or "")
        retry_after: float | None = None
        if isinstance(exc, openai.APITimeoutError):
            reason = f"timeout after {self.timeout}s"
        elif isinstance(exc, openai.APIStatusError):
            status = exc.status_code
            reason = f"status {status}"
            if status not in _RETRY_STATUSES and status < 500:
                raise LLMError(f"chat completion failed: HTTP {status} from {url}: "
                                  f"{_error_message(exc)} (not retried)") from exc
            retry_after = retry_after_seconds(exc.response.headers)
        elif isinstance(exc, openai.APIConnectionError):
            reason = f"connection error ({exc})"
        else:
            raise exc
        last = attempt == attempts - 1
        wait = 0.0 if last else (retry_after if retry_after is not None else self.backoff * 2 ** attempt)
        event = RetryEvent(attempt + 1, reason, status, url, float(wait))
        self._retries.append(event)
        return event

    def _give_up(self, attempts: int) -> LLMError:
        last = self._retries[-1]
        return LLMError(f"chat completion failed after {attempts} attempt(s): last error "
                           f"{last.reason} from {last.url}")

    def close(self) -> None:
        with self._client_lock:
            if self._client is not None:
                self._client.close()
            self._client = None
            self._async_clients = weakref.WeakKeyDictionary()


def response_format(schema: dict[str, Any], form: str) -> dict[str, Any]:
    """The ``response_format`` asking an endpoint for JSON that follows ``schema``, in ``form``:
    "json_schema" (OpenAI's: named by the schema's ``title``, else "memlab_output", strict) or
    "json_object" (llama-cpp-python's: the schema beside the type)."""
    if form == "json_schema":
        body = {k: v for k, v in schema.items() if k != "title"}
        return {"type": "json_schema",
                "json_schema": {"name": str(schema.get("title") or "memlab_output"), "schema": body, "strict": True}}
    if form == "json_object":
        return {"type": "json_object", "schema": schema}
    raise ConfigError(f"response_format form: expected 'json_schema' or 'json_object', got {form!r}")


def retry_after_seconds(headers: Any) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (seconds or HTTP date)."""
    ms = headers.get("retry-after-ms")
    if ms is not None:
        try:
            return min(max(float(ms) / 1000.0, 0.0), MAX_RETRY_AFTER)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            parsed = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        seconds = parsed.timestamp() - time.time()
    return min(max(seconds, 0.0), MAX_RETRY_AFTER)


def _error_message(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])
    return str(getattr(exc, "message", exc))[:300]


def parse_chat_response(text: str, url: str, model: str) -> Completion:
    """A ``Completion`` from a chat-completions JSON body; a clear error for anything else."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        raise LLMError(f"chat completion from {url} is not JSON: {text[:200]!r}") from None
    if not isinstance(data, dict):
        raise LLMError(f"chat completion from {url} must be a JSON object, got {text[:200]!r}")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        raise LLMError(f"chat completion from {url} has no 'choices' "
                          f"(keys: {sorted(data)}): {text[:200]!r}")
    message = choices[0].get("message") if isinstance(choices[0], dict) else None
    if not isinstance(message, dict):
        raise LLMError(f"chat completion from {url}: choices[0] has no 'message': {text[:200]!r}")
    content = message.get("content")
    if content is not None and not isinstance(content, str):
        raise LLMError(f"chat completion from {url}: message content must be a string, "
                          f"got {type(content).__name__}")
    raw_usage = data.get("usage")
    usage: dict[str, Any] = raw_usage if isinstance(raw_usage, dict) else {}
    return Completion(text=content or "", prompt_tokens=int(usage.get("prompt_tokens") or 0),
                      completion_tokens=int(usage.get("completion_tokens") or 0),
                      model=str(data.get("model") or model), cached=False)
