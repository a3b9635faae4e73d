"""ChromaVectorStore: the VectorStore interface on a chromadb collection (HNSW, cosine).

memlab always hands chromadb the vectors, and registers its own embedding function
(``MemlabEmbeddingFunction``, wrapping a memlab ``Embedder``) so chromadb never falls back
to its default ONNX model, which would try to download weights. The function's
configuration (the embedder's class and parameters, never an API key) is stored with a
persistent collection, so the collection reopens, also from plain chromadb once this
module is imported.

Behaviour matches ``NumpyVectorStore``:

- ``add`` is an upsert; a replaced id moves to the end of the insertion order.
- Scores are cosine similarities, ``1 - d`` for chromadb's cosine distance ``d``
  (vectors are L2-normalised before they are stored, as in the numpy store).
- ``where`` filters are passed to chromadb via ``to_chroma_where`` and every candidate is
  checked again with ``matches``, because chromadb 1.5 lets records lacking a key pass
  ``$ne``/``$nin``; filters chromadb refuses (an empty ``$in`` list, mixed types in a
  list) are evaluated by memlab over all metadata instead.
- Ties are broken by insertion order: each record carries a sequence number in the
  reserved metadata key ``memlab:seq`` (never shown to callers), and chromadb is asked
  for ``2k + 10`` candidates which are re-sorted by ``(-score, seq)``. A tie group that
  reaches past those extra candidates can still come back in HNSW order.

HNSW search is approximate; ``ef_search=500`` (and ``ef_construction=200``,
``max_neighbors=32``) makes it return the exact top-k on the test data. Several
processes may write one persistent collection: a sequence number holds the writer's pid
and a millisecond clock (``_take_seqs``), so two writers never share one, and every write
(and the first open) holds an exclusive ``fcntl`` lock on ``.memlab-write.lock`` in the folder,
because chroma's own SQLite layer answers "database is locked" at once to a second process
writing at the same moment; a write that still meets that answer is retried for up to
``BUSY_TIMEOUT_S`` seconds (an upsert or delete of the same ids is safe to repeat).

Why over 400 lines: one backend, but chromadb's persistent client needs care that lives
with it -- the embedding function it must never replace, the collection's recorded
configuration, and the retry of a write another process holds.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import time
import uuid
from typing import Any

import chromadb
import numpy as np
from chromadb.api.types import Documents, EmbeddingFunction, Embeddings
from chromadb.config import Settings
from chromadb.errors import ChromaError
from chromadb.utils.embedding_functions import register_embedding_function

from ..base import Component, MemlabError, Param, Resource
from ..embeddings.base import Embedder
from ..filters import matches, to_chroma_where, validate_where
from ..classpath import class_path, import_class
from ..sqlite import BUSY_TIMEOUT_S, retry_while
from .vector import VectorStore, check_add_args

SEQ_KEY = "memlab:seq"
_PID_SPAN = 2 ** 22  # ordering keys leave room for any Linux pid (see _take_seqs)
_EPOCH_MS = 1_704_067_200_000  # 2024-01-01 UTC: keys stay below 2**63 for ~60 years
EF_CONSTRUCTION = 200
MAX_NEIGHBORS = 32
_SECRET_PARAMS = {"api_key"}
_COLLECTION_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{1,510}[A-Za-z0-9]")


# -- the embedding function chromadb stores with a collection -------------------------

def component_to_config(value: Any) -> Any:
    """JSON form of a component tree: ``{"class": "module.Name", "params": {...}}``
    (``memlab.classpath``; the ``"module:Name"`` form of earlier versions is still read).

    Secrets (``api_key``) are written as None so they never reach the disk.
    Raises TypeError for a value JSON cannot hold.
    """
    if isinstance(value, Component):
        cls = type(value)
        params = {name: None if name in _SECRET_PARAMS else component_to_config(v)
                  for name, v in value.get_params(deep=False).items()}
        return {"class": class_path(cls), "params": params}
    if isinstance(value, (list, tuple)):
        return [component_to_config(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    raise TypeError(f"cannot store {type(value).__name__} in a collection configuration")


def component_from_config(config: Any) -> Any:
    """Rebuild what ``component_to_config`` wrote."""
    if isinstance(config, dict) and set(config) == {"class", "params"}:
        cls = import_class(str(config["class"]))
        if not (isinstance(cls, type) and issubclass(cls, Component)):
            raise MemlabError(f"{config['class']} is not a memlab Component")
        return cls(**{k: component_from_config(v) for k, v in config["params"].items()})
    if isinstance(config, list):
        return [component_from_config(v) for v in config]
    return config


def _locked(exc: BaseException) -> bool:
    return "database is locked" in str(exc)


def _retry_locked(fn: Any, timeout: float = BUSY_TIMEOUT_S) -> Any:
    """``fn()``, retried with growing pauses while chroma's SQLite says "database is locked"
    (two processes opening one persistent folder at once; chroma gives up at once there)."""
    return retry_while(fn, _locked, timeout=timeout, first_pause=0.01)


@contextlib.contextmanager
def _folder_lock(path: str | None, shared: bool = False) -> Any:
    """Hold a lock on ``<path>/.memlab-write.lock`` (no-op in memory): exclusive to write,
    shared to read.

    Serialises writers from several processes on one persistent folder and keeps readers out
    while one writes (chroma's SQLite file is in rollback-journal mode, where a reader meeting
    a commit is refused at once); the lock is released when the file is closed, so a killed
    process never leaves it held.
    """
    if path is None:
        yield
        return
    os.makedirs(path, exist_ok=True)
    fd = os.open(os.path.join(path, ".memlab-write.lock"), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the flock


def _persistent_client(path: str, settings: Settings) -> Any:
    """``chromadb.PersistentClient`` that waits for another process creating the same folder.

    chroma caches one System per folder before starting it, so a start that failed on the lock
    would be handed back broken on the next try: it is dropped from the cache first.
    """
    from chromadb.api.shared_system_client import SharedSystemClient

    def attempt() -> Any:
        cached = set(SharedSystemClient._identifier_to_system)
        try:
            return chromadb.PersistentClient(path=path, settings=settings)
        except Exception:
            for identifier in set(SharedSystemClient._identifier_to_system) - cached:
                SharedSystemClient._identifier_to_system.pop(identifier, None)
                SharedSystemClient._identifier_to_refcount.pop(identifier, None)
            raise

    return _retry_locked(attempt)

@register_embedding_function
class MemlabEmbeddingFunction(EmbeddingFunction[Documents]):
    """A memlab ``Embedder`` as a chromadb embedding function (cosine space)."""

    def __init__(self, embedder: Embedder | None = None) -> None:
        if embedder is None:
            from ..embeddings.hashing import HashingEmbedder

            embedder = HashingEmbedder()
        self.embedder = embedder

    def __call__(self, input: Documents) -> Embeddings:
        return list(self.embedder.embed(list(input)))

    @staticmethod
    def name() -> str:
        return "memlab"

    def default_space(self) -> str:  # type: ignore[override]
        return "cosine"

    def supported_spaces(self) -> list[str]:  # type: ignore[override]
        return ["cosine"]

    def get_config(self) -> dict[str, Any]:
        try:
            embedder = component_to_config(self.embedder)
        except TypeError:
            embedder = None  # not storable: a reopened collection needs embedder= again
        return {"embedder": embedder, "identity": self.embedder.identity()}

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> MemlabEmbeddingFunction:
        if config.get("embedder") is None:
            raise MemlabError(f"the collection's embedder ({config.get('identity')}) could not be "
                              "stored; pass it as ChromaVectorStore(embedder=...)")
        return MemlabEmbeddingFunction(component_from_config(config["embedder"]))


# -- the store ------------------------------------------------------------------------

class ChromaVectorStore(Resource, VectorStore):
    """Cosine search in a chromadb collection; in memory (``path=None``) or on disk.

    ``path=None`` uses chromadb's in-process EphemeralClient, which every client in the
    process shares, so each store gets its own collection ``<collection>-<random hex>``;
    ``close`` drops it. With a ``path``, a PersistentClient stores the collection named
    ``collection`` there, and a later store on the same path and name sees the data.
    ``dim`` fixes the vector length (else taken from the first add or the stored data).
    The client opens on first use. ``clone()`` of a store on disk uses the collection
    ``<collection>.<scope>`` (``clone-1``, ..., or the dialogue id in a replay), emptied
    first, so a clone never shares the original's vectors.
    """

    constraints = {
        "embedder": Param(Embedder, none=True),
        "collection": Param(str, test=_COLLECTION_NAME.fullmatch,
                            expected="3-512 characters from [A-Za-z0-9._-], starting and ending "
                                     "with a letter or digit"),
        "ef_search": Param(int, ge=1),
        "dim": Param(int, ge=1, none=True),
    }

    def __init__(self, embedder: Embedder | None = None, collection: str = "memlab",
                 path: str | None = None, ef_search: int = 500, dim: int | None = None):
        self.embedder = embedder
        self.collection = collection
        self.path = path
        self.ef_search = ef_search
        self.dim = dim
        self._client: Any = None
        self._on_params_changed()

    def _on_params_changed(self) -> None:
        self.close()
        self._name = (self.collection if self.path is not None
                      else f"{self.collection[:480]}-{uuid.uuid4().hex[:16]}")

    def scoped(self, scope: str) -> ChromaVectorStore:
        params = self._cloned_params(scope)
        if self.path is None:
            return type(self)(**params)  # a collection of its own already
        # chromadb's rule: [A-Za-z0-9._-], starting and ending with a letter or digit
        params["collection"] = re.sub(r"[^A-Za-z0-9._-]", "_", f"{self.collection}.{scope}")[:512].rstrip("._-")
        fresh = type(self)(**params)
        fresh.clear()
        return fresh

    # -- opening ----------------------------------------------------------------------
    def _col(self) -> Any:
        if self._client is None:
            self._open()
        return self._coll

    def _open(self) -> None:
        settings = Settings(anonymized_telemetry=False)
        client: Any
        with _folder_lock(self.path):
            if self.path is None:
                client = chromadb.EphemeralClient(settings=settings)
            else:
                client = _persistent_client(str(self.path), settings)
            try:
                coll = _retry_locked(lambda: self._get_or_create(client))
            except BaseException:
                client.close()
                raise
        self._client, self._coll = client, coll
        self._dim = self.dim
        self._next_seq = 0
        if self._read(coll.count):
            first = self._read(lambda: coll.get(limit=1, include=["embeddings"]))
            stored_dim = len(first["embeddings"][0])
            if self.dim is not None and stored_dim != self.dim:
                self.close()
                raise MemlabError(f"collection {self._name!r} at {self.path!r} holds vectors of "
                                  f"dimension {stored_dim}, but dim={self.dim}")
            self._dim = stored_dim
            stored = self._read(lambda: coll.get(include=["metadatas"]))["metadatas"]
            last = max(self._seq_of(md) for md in stored)
            self._next_seq = (last // _PID_SPAN + 1) * _PID_SPAN  # past the last counter, any pid

    def _get_or_create(self, client: Any) -> Any:
        function = MemlabEmbeddingFunction(self.embedder)
        hnsw = {"space": "cosine", "ef_search": self.ef_search,
                "ef_construction": EF_CONSTRUCTION, "max_neighbors": MAX_NEIGHBORS}
        try:
            coll = client.get_or_create_collection(self._name, embedding_function=function,
                                                   configuration={"hnsw": hnsw})
        except (ValueError, ChromaError) as exc:
            raise MemlabError(f"cannot open chromadb collection {self._name!r} at "
                              f"{self.path!r}: {exc}") from exc
        stored = (coll.configuration or {}).get("hnsw") or {}
        if stored.get("space", "cosine") != "cosine":
            raise MemlabError(f"collection {self._name!r} at {self.path!r} uses space "
                              f"{stored.get('space')!r}; ChromaVectorStore needs 'cosine'")
        if stored.get("ef_search") != self.ef_search:  # an existing collection keeps its own
            coll.modify(configuration={"hnsw": {"ef_search": self.ef_search}})
        return coll

    def close(self) -> None:
        client, self._client = getattr(self, "_client", None), None
        if client is None:
            return
        if self.path is None:  # nobody can reach this collection again: free it
            with contextlib.suppress(ValueError, ChromaError):
                client.delete_collection(self._name)
        client.close()

    # -- helpers ----------------------------------------------------------------------
    def _read(self, fn: Any) -> Any:
        """``fn()`` under the folder's shared lock, retried while chroma says it is locked."""
        with _folder_lock(self.path, shared=True):
            return _retry_locked(fn)

    def _take_seqs(self, n: int) -> list[int]:
        """``n`` ordering keys, increasing, and unique across processes writing one collection.

        key = counter * 2**22 + pid (pids are below 2**22 on Linux), counter = max(previous
        counter + 1, milliseconds since 2024): two processes never share a key, and keys
        follow the clock, so one process's writes keep their order and later writes sort last.
        """
        pid = os.getpid() % _PID_SPAN
        counter = max(self._next_seq // _PID_SPAN, int(time.time() * 1000) - _EPOCH_MS)
        seqs = [(counter + i) * _PID_SPAN + pid for i in range(n)]
        self._next_seq = (counter + n) * _PID_SPAN
        return seqs

    @staticmethod
    def _seq_of(metadata: Any) -> int:
        return int((metadata or {}).get(SEQ_KEY, -1))

    @staticmethod
    def _user_metadata(metadata: Any) -> dict[str, Any]:
        return {k: v for k, v in (metadata or {}).items() if k != SEQ_KEY}

    def _check_query_vector(self, vector: Any) -> np.ndarray | None:
        q = np.asarray(vector, dtype=np.float32).reshape(-1)
        if self._dim is not None and q.shape[0] != self._dim:
            raise MemlabError(f"query vector must have dimension {self._dim}, got {q.shape[0]}")
        norm = float(np.linalg.norm(q))
        return None if norm == 0 else q / norm

    # -- the interface ----------------------------------------------------------------
    def add(self, ids, vectors, metadatas=None, documents=None) -> None:
        ids = [str(i) for i in ids]
        if not ids:
            return
        coll = self._col()
        vectors = check_add_args(ids, vectors, metadatas, documents, self._dim)
        for md in metadatas or []:
            if SEQ_KEY in md:
                raise MemlabError(f"metadata key {SEQ_KEY!r} is reserved by ChromaVectorStore")
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        vectors = np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)
        seqs = self._take_seqs(len(ids))
        stored_md = [{**dict(md), SEQ_KEY: seq}
                     for md, seq in zip(metadatas or [{}] * len(ids), seqs)]
        docs = list(documents) if documents is not None else [""] * len(ids)
        with _folder_lock(self.path):
            _retry_locked(lambda: coll.upsert(ids=ids, embeddings=vectors, metadatas=stored_md,
                                              documents=docs))
        self._dim = vectors.shape[1]

    def delete(self, ids) -> None:
        ids = [str(i) for i in ids]
        if ids:
            coll = self._col()
            with _folder_lock(self.path):
                _retry_locked(lambda: coll.delete(ids=ids))

    def query(self, vector, k, where=None):
        validate_where(where)
        coll = self._col()
        total = self._read(coll.count)
        if k <= 0 or total == 0:
            return []
        q = self._check_query_vector(vector)
        if q is None:
            return []
        chroma_where = to_chroma_where(where)
        try:
            rows = self._candidates(coll, q, k, total, chroma_where, None, where)
        except (ValueError, ChromaError):
            # chromadb refuses some valid memlab filters (empty $in, mixed-type lists):
            # evaluate the filter here and let chromadb rank only the allowed ids
            allowed = self._matching_ids(coll, where)
            if not allowed:
                return []
            rows = self._candidates(coll, q, k, len(allowed), None, allowed, where)
        rows.sort(key=lambda row: (-row[1], row[2]))
        return [(id_, score) for id_, score, _ in rows[:k]]

    def _candidates(self, coll, q, k, total, chroma_where, allowed, where):
        """(id, score, seq) for at least ``k + 10`` candidates passing ``where`` (or all there are)."""
        fetch = min(total, 2 * k + 10)
        while True:
            res = self._read(lambda: coll.query(query_embeddings=[q], n_results=fetch,
                                                where=chroma_where, ids=allowed,
                                                include=["metadatas", "distances"]))
            got = res["ids"][0]
            rows = [(id_, 1.0 - float(d), self._seq_of(md))
                    for id_, d, md in zip(got, res["distances"][0], res["metadatas"][0])
                    if matches(self._user_metadata(md), where)]
            if len(rows) >= min(k + 10, total) or len(got) < fetch or fetch >= total:
                return rows
            fetch = min(total, fetch * 4)

    def _matching_ids(self, coll, where) -> list[str]:
        res = self._read(lambda: coll.get(include=["metadatas"]))
        return [id_ for id_, md in zip(res["ids"], res["metadatas"])
                if matches(self._user_metadata(md), where)]

    def get(self, ids):
        ids = [str(i) for i in ids]
        if not ids:
            return []
        coll = self._col()
        res = self._read(lambda: coll.get(ids=list(dict.fromkeys(ids)),
                                          include=["embeddings", "metadatas", "documents"]))
        found = {id_: n for n, id_ in enumerate(res["ids"])}
        out = []
        for id_ in ids:
            n = found.get(id_)
            if n is not None:
                out.append({"id": id_, "vector": np.asarray(res["embeddings"][n], dtype=np.float32),
                            "metadata": self._user_metadata(res["metadatas"][n]),
                            "document": res["documents"][n] or ""})
        return out

    def ids(self):
        coll = self._col()
        res = self._read(lambda: coll.get(include=["metadatas"]))
        order = sorted(range(len(res["ids"])), key=lambda n: self._seq_of(res["metadatas"][n]))
        return [res["ids"][n] for n in order]

    def __len__(self) -> int:
        if self._client is None and self.path is None:
            return 0  # an in-memory collection of its own is empty until this store writes
        coll = self._col()
        return int(self._read(coll.count))

    def clear(self) -> None:
        # a fresh collection, because an emptied one keeps its vector dimension
        self._col()
        with _folder_lock(self.path):
            _retry_locked(lambda: self._client.delete_collection(self._name))
            self._coll = _retry_locked(lambda: self._get_or_create(self._client))
        self._next_seq = 0
        self._dim = self.dim

    def __del__(self) -> None:
        # release the chromadb client; at interpreter exit chromadb may already be gone
        with contextlib.suppress(Exception):
            self.close()
