"""Any memory service with add and search HTTP endpoints, as a memlab retriever: ``http_memory``.

Every observed turn is sent to the service (``add``); at a probe the service is searched
(``search``) and its results are mapped back to dialogue turns. The request bodies are
JSON templates and the response is read by dotted paths, so the shape of mem0's REST
server and of similar services is a matter of configuration. The defaults are mem0's::

    add_path = "/memories"
    add_body = {"messages": [{"role": "{role}", "content": "{content}"}],
                "user_id": "{user_id}", "metadata": {"turn_id": "{id}"}}
    search_path = "/search"
    search_body = {"query": "{query}", "user_id": "{user_id}", "limit": "{limit}"}
    results_path = "results"            # the list of results in the search response
    id_path = "metadata.turn_id"        # in each result: the turn it came from
    score_path = "score"                # in each result: its score (best first)
    reset_path = "/memories?user_id={user_id}"   # DELETE on reset; None: no call

Placeholders: ``{role}``, ``{content}``, ``{id}``, ``{timestamp}`` (add), ``{query}``,
``{limit}`` (search) and ``{user_id}`` (all). A string that is exactly one placeholder
takes the value with its type (``"{limit}"`` becomes the int); inside longer strings they
are formatted as text. ``user_id`` is a fresh namespace per replayed dialogue
(``"{user_prefix}-<random hex>"``), so parallel replays against one service do not mix.

The service decides what a memory is: one that extracts facts (mem0 with ``infer``) still
has to return, in each result, the id of the turn it came from (``id_path``); results
without a known turn id are skipped. Removing a turn (``remove``) only hides it: the
add/search shape has no delete by turn, so the service keeps its text and the adapter skips
results that name it. With ``base_url=None`` the adapter talks to memlab's
own loopback service (``memlab.adapters.service.MemoryService``, BM25 per user), which is
what the tests and ``memlab eval --strategy http_memory`` use with no server of yours.

Errors (connection refused, an HTTP error status, a body that is not JSON, a missing
path) raise ``MemlabError`` naming the URL and what came back. Requests go straight to
``base_url`` (no proxy from the environment); ``timeout`` is per request.
"""

from __future__ import annotations

import copy
import json
import urllib.error
import urllib.request
import uuid
from typing import Any

from ..base import ConfigError, MemlabError, Param
from ..records import MemoryRecord
from .base import PeerRetriever

MEM0_ADD_BODY: dict[str, Any] = {"messages": [{"role": "{role}", "content": "{content}"}],
                                 "user_id": "{user_id}", "metadata": {"turn_id": "{id}"}}
MEM0_SEARCH_BODY: dict[str, Any] = {"query": "{query}", "user_id": "{user_id}", "limit": "{limit}"}


def fill(template: Any, values: dict[str, Any]) -> Any:
    """``template`` with its ``{name}`` placeholders replaced (see the module doc)."""
    if isinstance(template, dict):
        return {fill(k, values): fill(v, values) for k, v in template.items()}
    if isinstance(template, list):
        return [fill(v, values) for v in template]
    if isinstance(template, str):
        if template.startswith("{") and template.endswith("}") and template[1:-1] in values:
            return values[template[1:-1]]
        try:
            return template.format(**values)
        except (KeyError, IndexError) as exc:
            raise ConfigError(f"unknown placeholder {exc} in {template!r}; "
                              f"available: {', '.join(sorted(values))}") from None
    return template


def dig(obj: Any, path: str, where: str) -> Any:
    """The value at dotted ``path`` in ``obj`` (list items by index); MemlabError if missing."""
    current = obj
    for part in path.split(".") if path else []:
        if isinstance(current, dict) and part in current:
            current = current[part]
        elif isinstance(current, list) and part.isdigit() and int(part) < len(current):
            current = current[int(part)]
        else:
            raise MemlabError(f"{where}: no {path!r} in the response (stopped at {part!r}): "
                              f"{json.dumps(obj)[:200]}")
    return current


class HTTPMemoryRetriever(PeerRetriever):
    """A memory service reached over HTTP (see the module doc for every parameter)."""

    name = "http_memory"

    constraints = {
        "base_url": Param(str, none=True, test=lambda u: u.startswith(("http://", "https://")),
                          expected="an http(s) URL or None"),
        "add_path": Param(str, test=lambda p: p.startswith("/"), expected="a path starting with '/'"),
        "search_path": Param(str, test=lambda p: p.startswith("/"), expected="a path starting with '/'"),
        "timeout": Param(float, gt=0),
    }

    def __init__(self, base_url: str | None = None, add_path: str = "/memories",
                 add_body: dict[str, Any] | None = None, search_path: str = "/search",
                 search_body: dict[str, Any] | None = None, results_path: str = "results",
                 id_path: str = "metadata.turn_id", score_path: str = "score",
                 reset_path: str | None = "/memories?user_id={user_id}", user_prefix: str = "memlab",
                 headers: dict[str, str] | None = None, timeout: float = 10.0):
        super().__init__()
        self.base_url = base_url
        self.add_path = add_path
        self.add_body = add_body
        self.search_path = search_path
        self.search_body = search_body
        self.results_path = results_path
        self.id_path = id_path
        self.score_path = score_path
        self.reset_path = reset_path
        self.user_prefix = user_prefix
        self.headers = headers
        self.timeout = timeout
        self._user: str | None = None
        self._sent = False  # whether the current namespace holds anything
        self._on_params_changed()

    def keeps_index(self) -> bool:
        return self.base_url is not None  # memlab's own service lives in this process only

    # -- HTTP -------------------------------------------------------------------------
    def _url(self) -> str:
        if self.base_url is not None:
            return self.base_url.rstrip("/")
        from .service import default_service

        return default_service().base_url

    def _request(self, method: str, path: str, body: Any = None) -> Any:
        url = self._url() + path
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Content-Type": "application/json", "Accept": "application/json", **(self.headers or {})}
        request = urllib.request.Request(url, data=data, method=method, headers=headers)
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        try:
            with opener.open(request, timeout=self.timeout) as response:
                raw = response.read()
        except urllib.error.HTTPError as exc:
            detail = exc.read()[:200].decode(errors="replace")
            raise MemlabError(f"{method} {url} answered HTTP {exc.code}: {detail}") from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise MemlabError(f"{method} {url} failed: {reason}") from None
        try:
            return json.loads(raw) if raw else None
        except ValueError:
            raise MemlabError(f"{method} {url} did not answer JSON: {raw[:200]!r}") from None

    # -- PeerRetriever hooks ----------------------------------------------------------
    def _open(self) -> None:
        if self._user is None or not self.keeps_index():
            # a fresh namespace; with memlab's own service, re-indexing after unpickling goes there
            self._user = f"{self.user_prefix}-{uuid.uuid4().hex[:16]}"

    def _index(self, records: list[MemoryRecord]) -> None:
        template = self.add_body if self.add_body is not None else MEM0_ADD_BODY
        for r in records:
            body = fill(copy.deepcopy(template), {"role": r.role.value, "content": r.content, "id": r.id,
                                                  "timestamp": r.timestamp, "user_id": self._user})
            self._request("POST", self.add_path, body)
            self._sent = True

    def _query(self, query: str, n: int) -> list[tuple[str, float]]:
        template = self.search_body if self.search_body is not None else MEM0_SEARCH_BODY
        body = fill(copy.deepcopy(template), {"query": query, "limit": n, "user_id": self._user})
        where = f"POST {self._url()}{self.search_path}"
        results = dig(self._request("POST", self.search_path, body), self.results_path, where)
        if not isinstance(results, list):
            raise MemlabError(f"{where}: {self.results_path!r} is {type(results).__name__}, expected a list")
        pairs = []
        for item in results:
            try:
                turn = dig(item, self.id_path, where)
            except MemlabError:
                continue  # a memory that names no turn cannot be scored
            pairs.append((str(turn), float(dig(item, self.score_path, where))))
        return pairs[:n]

    def _drop(self, ids: list[str]) -> None:
        # the add/search shape has no delete by turn: the service keeps the text, and the
        # results naming a removed turn are skipped (the base class only returns kept ids)
        return None

    def _close(self) -> None:
        if self.reset_path is not None and self._user is not None and self._sent:
            self._request("DELETE", fill(self.reset_path, {"user_id": self._user}))
        self._user = None
        self._sent = False
