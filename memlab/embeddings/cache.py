"""CachedEmbedder: a content-addressed embedding cache in SQLite, around any embedder.

The key of a text is ``sha256(embedder.identity() + "\\0" + text)``, so changing a
parameter that changes the vectors (model, dimensions, n_features) misses, while
batch sizes or API keys do not. A query embedded by an asymmetric embedder (separate
query mode, e5/bge) is keyed ``sha256(identity + "\\0query\\0" + text)``: the same text
as query and as passage gives two vectors, and a symmetric embedder's keys do not change.
Values are the inner embedder's output as float32 bytes, returned bit for bit as the inner
embedder computed them.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
from pathlib import Path
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..base import MemlabError, Param, Warmable
from ..sqlite import connect
from .base import Embedder

_SQL_VARS = 500  # keys per SELECT ... IN (...), below SQLite's variable limit


class CachedEmbedder(Embedder, Warmable):
    """Embeds only texts it has not seen; the rest come from the cache.

    ``path=None`` keeps the cache in memory; a file path keeps it across processes.
    Within one ``embed`` call, misses go to the inner embedder in one call (which batches
    them itself), each distinct text once, in first-seen order. Counters: ``misses`` is
    the number of texts sent to the inner embedder, ``hits`` the number of requested
    texts answered without it (``hits + misses`` = texts requested).
    """

    #: Texts per call to the inner embedder when warming: large, so that an embedder batching
    #: by token length (E5Embedder's torch runtime) finds many texts of each length.
    WARM_BATCH = 4096

    def warm(self, texts: Sequence[str], queries: Sequence[str] = ()) -> int:
        """Embed ``texts`` as passages and ``queries`` in query mode, in batches of
        ``WARM_BATCH``, into a cache kept in a file, so that every clone (per dialogue, sweep
        point, worker) reads them back instead of embedding one text per call. Each text is
        embedded only in the mode it is used in (for a symmetric embedder, a query that is
        also a passage is one vector). A cache in memory is left alone (clones would not
        share it): 0. Returns the distinct texts warmed."""
        if self.path is None:
            return 0
        done = 0
        for batch_texts, query in ((texts, False), (queries, True)):
            batch_texts = list(dict.fromkeys(batch_texts))
            for start in range(0, len(batch_texts), self.WARM_BATCH):
                self._cached(batch_texts[start:start + self.WARM_BATCH], query=query)
            done += len(batch_texts)
        return done

    constraints = {"embedder": Param(Embedder)}

    def __init__(self, embedder: Embedder, path: str | os.PathLike[str] | None = None):
        self.embedder = embedder
        self.path = path
        self._conn: sqlite3.Connection | None = None
        self._on_params_changed()

    def _on_params_changed(self) -> None:
        self.close()
        self._hits = 0
        self._misses = 0
        self._open()

    def _open(self) -> None:
        target = ":memory:" if self.path is None else str(self.path)
        if target != ":memory:":
            Path(target).parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        def setup(conn: sqlite3.Connection) -> None:
            with conn:
                conn.execute("CREATE TABLE IF NOT EXISTS embeddings (key TEXT PRIMARY KEY, vector BLOB NOT NULL)")

        self._conn = connect(target, setup=setup)

    def close(self) -> None:
        conn, self._conn = getattr(self, "_conn", None), None
        if conn is not None:
            conn.close()

    # pickling (process pools) reopens the file; an in-memory cache starts empty
    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_conn"] = None
        state.pop("_lock", None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._open()

    # -- delegation -------------------------------------------------------------------
    @property
    def dim(self) -> int:
        return self.embedder.dim

    def identity(self) -> str:
        return self.embedder.identity()

    @property
    def hits(self) -> int:
        return self._hits

    @property
    def misses(self) -> int:
        return self._misses

    def __len__(self) -> int:
        """Number of cached vectors (for every identity stored in this cache)."""
        with self._lock:
            return int(self._db().execute("SELECT COUNT(*) FROM embeddings").fetchone()[0])

    # -- embedding --------------------------------------------------------------------
    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            raise MemlabError(f"CachedEmbedder({str(self.path)!r}) is closed")
        return self._conn

    @property
    def asymmetric(self) -> bool:
        return self.embedder.asymmetric

    def key(self, text: str, query: bool = False, identity: str | None = None) -> str:
        """The cache key of ``text`` as a passage, or as a query (``query=True``); ``identity``
        (``self.identity()``) may be passed by a caller keying many texts: it costs ~8 us."""
        mode = "\0query" if query and self.embedder.asymmetric else ""
        identity = self.identity() if identity is None else identity
        return hashlib.sha256((identity + mode + "\0" + text).encode("utf-8")).hexdigest()

    def embed(self, texts: list[str]) -> np.ndarray:
        return self._cached(list(texts), query=False)

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return self._cached(list(texts), query=True)

    def _cached(self, texts: list[str], query: bool) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        identity = self.identity()
        keys = [self.key(t, query, identity) for t in texts]
        text_of = dict(zip(keys, texts))
        unique = list(dict.fromkeys(keys))
        # a run's shared store (memlab.embeddings.store.reading) first: on a cluster it holds
        # every text of the dataset, embedded once by the pre-pass
        from .store import active_store, model_digest

        store = active_store()
        found = store.lookup(self.embedder, unique, model_digest(self.embedder, identity)) if store is not None else {}
        rest = [k for k in unique if k not in found]
        if rest:
            found.update(self._lookup(rest))
        missing = [k for k in unique if k not in found]
        if missing:
            inner = self.embedder.embed_queries if query else self.embedder.embed
            vectors = np.asarray(inner([text_of[k] for k in missing]), dtype="<f4")
            found.update(zip(missing, vectors))
            with self._lock, self._db() as conn:
                conn.executemany("INSERT OR REPLACE INTO embeddings (key, vector) VALUES (?, ?)",
                                 [(k, v.tobytes()) for k, v in zip(missing, vectors)])
        self._misses += len(missing)
        self._hits += len(texts) - len(missing)
        lengths = {found[k].shape[0] for k in unique}
        if len(lengths) != 1:
            raise MemlabError(f"CachedEmbedder({str(self.path)!r}): cached vectors for "
                              f"{self.identity()} have different lengths {sorted(lengths)}")
        return np.stack([found[k] for k in keys]).astype(np.float32, copy=False)

    def _embed(self, texts: list[str]) -> np.ndarray:
        return self.embed(texts)

    def _lookup(self, keys: list[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        with self._lock:
            db = self._db()
            for start in range(0, len(keys), _SQL_VARS):
                chunk = keys[start:start + _SQL_VARS]
                marks = ",".join("?" * len(chunk))
                for key, blob in db.execute(f"SELECT key, vector FROM embeddings WHERE key IN ({marks})",
                                            chunk):
                    found[key] = np.frombuffer(blob, dtype="<f4")
        return found
