"""A small OpenAI-compatible HTTP server on 127.0.0.1, for tests and offline demos.

It answers ``POST /v1/chat/completions``, ``POST /v1/embeddings`` and ``GET /v1/models``
the way the OpenAI API does, so the real ``openai`` client can be exercised end to end
with no network. Faults are scripted: ``enqueue_fault(status=429, headers=...)``,
``enqueue_fault(delay=2.0)`` (a slow answer, for timeouts) or
``enqueue_fault(body="not json")`` (malformed output) are served, in order, before the
normal answers resume. Every request body is recorded in ``requests``.

A chat request may carry a ``response_format`` as the OpenAI API takes it (``{"type": "text"}``,
``{"type": "json_object"}``, with or without a ``schema`` beside it as llama.cpp's servers take
it, or ``{"type": "json_schema", "json_schema": {"name": ..., "schema": {...}}}``); any other
shape is refused with HTTP 400, as the API does. The chat handler sees it in the request and
answers as it likes (``OfflineChat``'s answers to memlab's prompts already follow their schemas).

    with LoopbackServer() as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="test")
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any, Callable

from ..httpserve import LocalServer

ChatHandler = Callable[[dict[str, Any]], str]
EmbedHandler = Callable[[list[str], dict[str, Any]], list[list[float]]]


@dataclass
class Fault:
    status: int = 500
    headers: dict[str, str] = field(default_factory=dict)
    body: str | None = None
    delay: float = 0.0
    path: str | None = None  # only for requests to this path (None: any)


def response_format_problem(value: Any) -> str | None:
    """Why ``value`` is not a ``response_format`` the server takes (see the module docstring), or None."""
    if value is None:
        return None
    if not isinstance(value, dict) or value.get("type") not in ("text", "json_object", "json_schema"):
        return (f"Invalid 'response_format': expected an object with type 'text', 'json_object' or "
                f"'json_schema', got {json.dumps(value)[:200]}")
    if "schema" in value and not isinstance(value["schema"], dict):
        return "Invalid 'response_format.schema': expected an object"
    if value["type"] == "json_schema":
        spec = value.get("json_schema")
        if not isinstance(spec, dict) or not isinstance(spec.get("name"), str) or not spec["name"]:
            return "Missing required parameter: 'response_format.json_schema.name'"
        if "schema" in spec and not isinstance(spec["schema"], dict):
            return "Invalid 'response_format.json_schema.schema': expected an object"
    return None


def _approx_tokens(text: str) -> int:
    return max(1, len(text.split())) if text else 0


def echo_chat(request: dict[str, Any]) -> str:
    """Default chat answer: the last user message, prefixed, so tests can check the round trip."""
    users = [m for m in request.get("messages", []) if m.get("role") == "user"]
    last = users[-1]["content"] if users else ""
    return f"echo: {last}"


class ScriptedChat:
    """A chat handler serving ``answers`` in order, then ``fallback`` (echo by default).

    For tests of output validation: ``LoopbackServer(chat=ScriptedChat(["not json", '{"ok": 1}']))``.
    """

    def __init__(self, answers: list[str] | tuple[str, ...] = (), fallback: ChatHandler = echo_chat):
        self.answers: deque[str] = deque(answers)
        self.fallback = fallback
        self._lock = threading.Lock()

    def push(self, *answers: str) -> None:
        with self._lock:
            self.answers.extend(answers)

    def __call__(self, request: dict[str, Any]) -> str:
        with self._lock:
            if self.answers:
                return self.answers.popleft()
        return self.fallback(request)


class OfflineChat:
    """A chat handler answering like ``OfflineLLM``: memlab's own prompts get rule-based answers."""

    def __init__(self) -> None:
        self._llm: Any = None
        self._lock = threading.Lock()

    def __call__(self, request: dict[str, Any]) -> str:
        with self._lock:
            if self._llm is None:
                from .llm import OfflineLLM

                self._llm = OfflineLLM()
            return self._llm.complete(request.get("messages", [])).text


def hashing_embeddings(texts: list[str], request: dict[str, Any]) -> list[list[float]]:
    from ..embeddings.hashing import HashingEmbedder

    dim = int(request.get("dimensions") or 64)
    return HashingEmbedder(n_features=dim).embed(texts).tolist()


def _encode(vector: list[float], body: dict[str, Any]) -> Any:
    # The openai client asks for base64 float32 by default and decodes it itself.
    if body.get("encoding_format") == "base64":
        import base64

        import numpy as np

        return base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode("ascii")
    return vector


class LoopbackServer(LocalServer):
    """Serve OpenAI-compatible answers on a free loopback port, in a background thread."""

    def __init__(self, chat: ChatHandler = echo_chat, embed: EmbedHandler = hashing_embeddings,
                 model: str = "loopback-model"):
        self.chat = chat
        self.embed = embed
        self.model = model
        self.requests: list[dict[str, Any]] = []
        self._faults: deque[Fault] = deque()
        self._lock = threading.Lock()

    # -- lifecycle -------------------------------------------------------------------
    def _bind(self) -> tuple[tuple[str, int], Any]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/models"):
                    self._send(200, {"object": "list", "data": [
                        {"id": server.model, "object": "model", "created": 0, "owned_by": "memlab"}]})
                else:
                    self._send(404, {"error": {"message": f"no route {self.path}"}})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length).decode("utf-8") if length else "{}"
                try:
                    body = json.loads(raw)
                except json.JSONDecodeError:
                    self._send(400, {"error": {"message": "request body is not JSON"}})
                    return
                with server._lock:
                    server.requests.append({"path": self.path, "body": body,
                                            "authorization": self.headers.get("Authorization")})
                    fault = server._next_fault(self.path)
                if fault is not None:
                    if fault.delay:
                        time.sleep(fault.delay)
                    if fault.status == 200 and fault.body is None:
                        pass  # a slow but otherwise normal answer
                    else:
                        self._send(fault.status, fault.body if fault.body is not None else
                                   {"error": {"message": f"scripted fault {fault.status}",
                                              "type": "server_error"}}, fault.headers)
                        return
                problem = response_format_problem(body.get("response_format")) if isinstance(body, dict) else None
                if problem is not None and self.path.endswith("/chat/completions"):
                    self._send(400, {"error": {"message": problem, "type": "invalid_request_error",
                                               "param": "response_format"}})
                    return
                try:
                    if self.path.endswith("/chat/completions"):
                        self._send(200, server._chat_response(body))
                    elif self.path.endswith("/embeddings"):
                        self._send(200, server._embedding_response(body))
                    else:
                        self._send(404, {"error": {"message": f"no route {self.path}"}})
                except Exception as exc:  # a handler bug becomes a 500, as a real server would
                    self._send(500, {"error": {"message": f"{type(exc).__name__}: {exc}"}})

            def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
                data = payload if isinstance(payload, str) else json.dumps(payload)
                encoded = data.encode("utf-8")
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(encoded)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                try:
                    self.wfile.write(encoded)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)

        return ("127.0.0.1", 0), Handler

    @property
    def base_url(self) -> str:
        host, port = self._address()
        return f"http://{host}:{port}/v1"

    # -- scripting ------------------------------------------------------------------
    def enqueue_fault(self, status: int = 500, *, headers: dict[str, str] | None = None,
                      body: Any = None, delay: float = 0.0, path: str | None = None) -> None:
        """Serve this fault to the next matching request (status 200 with a delay: slow answer)."""
        text = None if body is None else (body if isinstance(body, str) else json.dumps(body))
        with self._lock:
            self._faults.append(Fault(status, dict(headers or {}), text, delay, path))

    def _next_fault(self, path: str) -> Fault | None:
        for i, fault in enumerate(self._faults):
            if fault.path is None or path.endswith(fault.path):
                del self._faults[i]
                return fault
        return None

    # -- answers --------------------------------------------------------------------
    def _chat_response(self, body: dict[str, Any]) -> dict[str, Any]:
        content = self.chat(body)
        prompt = sum(_approx_tokens(str(m.get("content") or "")) for m in body.get("messages", []))
        completion = _approx_tokens(content)
        return {
            "id": f"chatcmpl-{len(self.requests)}", "object": "chat.completion", "created": 0,
            "model": body.get("model", self.model),
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                      "total_tokens": prompt + completion},
        }

    def _embedding_response(self, body: dict[str, Any]) -> dict[str, Any]:
        inputs = body.get("input", [])
        texts = [inputs] if isinstance(inputs, str) else list(inputs)
        vectors = self.embed(texts, body)
        tokens = sum(_approx_tokens(t) for t in texts)
        return {
            "object": "list", "model": body.get("model", self.model),
            "data": [{"object": "embedding", "index": i, "embedding": _encode(v, body)}
                     for i, v in enumerate(vectors)],
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }
