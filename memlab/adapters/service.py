"""A small mem0-shaped memory service on 127.0.0.1, for tests, demos and ``http_memory``'s default.

It speaks the REST shape that mem0's server and similar services use, with memlab's
BM25 behind it (one index per ``user_id``)::

    POST   /memories   {"messages": [{"role", "content"}], "user_id", "metadata": {...}}
                       -> {"results": [{"id", "memory", "event": "ADD"}]}
    POST   /search     {"query", "user_id", "limit"}
                       -> {"results": [{"id", "memory", "score", "metadata"}]}   best first
    DELETE /memories?user_id=U                 -> {"message": "Memories deleted"}

Each message becomes one memory, stored as given (no extraction). Every request is
recorded in ``requests`` as (method, path, body). ``fail_next(status)`` makes the next
request answer with that HTTP status, for error-path tests.

    with MemoryService() as service:
        strategy = strategies.get("http_memory", base_url=service.base_url)
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit

from ..httpserve import LocalServer


class MemoryService(LocalServer):
    """The service (see the module doc); ``start()``/``stop()`` or use it as a context manager."""

    thread_name = "memlab-memory-service"

    def __init__(self, host: str = "127.0.0.1", port: int = 0):
        if host not in ("127.0.0.1", "localhost", "::1"):
            raise ValueError(f"MemoryService serves on loopback only, got host {host!r}")
        self.host = host
        self.port = port
        self.requests: list[tuple[str, str, Any]] = []
        self._users: dict[str, Any] = {}
        self._counter = 0
        self._failures: list[int] = []
        self._lock = threading.Lock()

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self._address()[1]}"

    def fail_next(self, status: int = 500) -> None:
        with self._lock:
            self._failures.append(status)

    def _bind(self) -> tuple[tuple[str, int], Any]:
        return (self.host, self.port), _handler(self)

    # -- the memory --------------------------------------------------------------------
    def _index(self, user: str) -> Any:
        from ..retrieval.bm25 import BM25Retriever

        if user not in self._users:
            self._users[user] = BM25Retriever()
        return self._users[user]

    def add(self, body: dict[str, Any]) -> dict[str, Any]:
        from ..records import MemoryRecord

        user = str(body.get("user_id") or "default")
        metadata = body.get("metadata") or {}
        results = []
        with self._lock:
            index = self._index(user)
            for message in body.get("messages") or []:
                self._counter += 1
                mem_id = f"mem-{self._counter}"
                record = MemoryRecord(message.get("role", "user"), str(message.get("content", "")), id=mem_id,
                                      timestamp=0.0, metadata={"service_metadata": dict(metadata)})
                index.add([record])
                results.append({"id": mem_id, "memory": record.content, "event": "ADD"})
        return {"results": results}

    def search(self, body: dict[str, Any]) -> dict[str, Any]:
        user = str(body.get("user_id") or "default")
        limit = int(body.get("limit") or 100)
        with self._lock:
            hits = self._index(user).search(str(body.get("query", "")), limit)
            return {"results": [{"id": h.id, "memory": h.memory_record.content, "score": h.score,
                                 "metadata": h.memory_record.metadata["service_metadata"]} for h in hits]}

    def delete(self, user: str) -> dict[str, Any]:
        with self._lock:
            self._users.pop(user, None)
        return {"message": "Memories deleted"}


def _handler(service: MemoryService) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:  # quiet
            pass

        def _reply(self, status: int, payload: Any) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _body(self) -> Any:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            return json.loads(raw) if raw else {}

        def _serve(self, method: str) -> None:
            url = urlsplit(self.path)
            try:
                body = self._body() if method == "POST" else None
            except ValueError:
                self._reply(400, {"detail": "body is not JSON"})
                return
            service.requests.append((method, self.path, body))
            with service._lock:
                status = service._failures.pop(0) if service._failures else None
            if status is not None:
                self._reply(status, {"detail": f"scripted failure {status}"})
                return
            if method == "POST" and url.path == "/memories":
                self._reply(200, service.add(body))
            elif method == "POST" and url.path == "/search":
                self._reply(200, service.search(body))
            elif method == "DELETE" and url.path == "/memories":
                user = parse_qs(url.query).get("user_id", ["default"])[0]
                self._reply(200, service.delete(user))
            else:
                self._reply(404, {"detail": f"no route {method} {url.path}"})

        def do_POST(self) -> None:  # noqa: N802
            self._serve("POST")

        def do_DELETE(self) -> None:  # noqa: N802
            self._serve("DELETE")

        def do_GET(self) -> None:  # noqa: N802
            self._serve("GET")

    return Handler


_DEFAULT: MemoryService | None = None
_DEFAULT_LOCK = threading.Lock()


def default_service() -> MemoryService:
    """This process's shared service, started on first use (``http_memory`` without base_url)."""
    global _DEFAULT
    with _DEFAULT_LOCK:
        if _DEFAULT is None:
            _DEFAULT = MemoryService().start()
        return _DEFAULT
