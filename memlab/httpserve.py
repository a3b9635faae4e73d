"""Starting and stopping a small HTTP server on a loopback address, in a background thread:
the one way memlab's test servers (the OpenAI-compatible ``LoopbackServer``, the mem0-style
``MemoryService``) run. Subclasses say what to serve (``_bind``); ``start``, ``stop`` and
``with`` are here."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeVar

S = TypeVar("S", bound="LocalServer")


class LocalServer:
    """A ``ThreadingHTTPServer`` serving from a daemon thread (daemon request threads too).

    ``start()`` binds ``_bind()``'s address (port 0: a free one) and handler once and
    returns self; ``stop()`` shuts the server down and closes its socket; ``with server:``
    does both. ``_address()`` is the bound (host, port); RuntimeError before ``start``.
    """

    _httpd: ThreadingHTTPServer | None = None
    _thread: threading.Thread | None = None
    #: Name of the serving thread (seen in thread dumps).
    thread_name = "memlab-http"

    def _bind(self) -> tuple[tuple[str, int], type[BaseHTTPRequestHandler]]:
        """The address to listen on and the request handler class."""
        raise NotImplementedError

    def start(self: S) -> S:
        if self._httpd is None:
            address, handler = self._bind()
            self._httpd = ThreadingHTTPServer(address, handler)
            self._httpd.daemon_threads = True
            self._thread = threading.Thread(target=self._httpd.serve_forever, name=self.thread_name, daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self: S) -> S:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def _address(self) -> tuple[str, int]:
        if self._httpd is None:
            raise RuntimeError(f"{type(self).__name__} is not started")
        host, port = self._httpd.server_address[:2]
        return (host.decode() if isinstance(host, bytes) else str(host)), int(port)
