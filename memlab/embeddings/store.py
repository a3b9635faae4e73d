"""One embedding store for every worker of a run: Arrow IPC files on shared storage, filled
by a pre-pass, memory-mapped by the workers.

Why Arrow IPC files (measured by ``bench/bench_embedding_store.py`` on this machine, 20,000
384-d vectors, 2 loaded cores; figures in its docstring): a fresh reader memory-maps each
file and takes its vectors without copying or decoding them, so reading all of them back
took 3.3-6.4 us per vector, against 10-18 for Parquet and SQLite (2-3.5x) and 93-159 for a
chromadb server (19-36x); one key per call, 1.4-3.6 us against 7-18 for SQLite and ~2,000
for chromadb. Writing costs the same for the file-based three (~30 us per vector).
The candidates and why the others lost:

- **A shared SQLite file** (the per-process cache, ``CachedEmbedder``, pointed at shared
  storage): WAL needs shared memory and POSIX locks that NFS and SMB do not provide
  reliably (SQLite's own documentation says WAL does not work over a network file system),
  and without WAL every worker's write takes the whole file's lock. Several writers on one
  network file is exactly what a cluster would do, so it is unsafe, not just slow.
- **chromadb in client-server mode**: a real shared database, but a server to run and keep
  up, every vector goes through HTTP and JSON, and it indexes (HNSW) what only needs a
  lookup by key: 19-36x slower to read everything, ~500-2,000x per single key.
- **Parquet**: the same layout as the Arrow files, safe the same way, but every read
  decodes and copies (2-3x slower to load), and it is not smaller here (random float32
  vectors do not compress: 1,881 bytes per vector against Arrow's 1,568).
- **Arrow IPC files, written once each, never modified** (chosen): each file is written by
  one task to a temporary name and renamed (``memlab.atomic``), named by the digest of its
  keys, so two tasks that write the same partition write the same bytes, a reader sees a
  whole file or none, and no lock is ever taken; rename is atomic on NFS as well. Readers
  only list a folder and map files.

Layout: ``<root>/<model digest>/model.json`` (the embedder's identity, revision and vector
length) and ``<root>/<model digest>/part-<digest of its keys>.arrow``, with columns ``key``
(``fixed_size_binary(32)``) and ``vector`` (``fixed_size_list<float32>[dim]``). The model
digest is ``sha256(identity + "\\0" + revision)[:32]``: ``identity`` is ``Embedder.identity()``
(the model and every parameter that changes its vectors) and ``revision`` the embedder's
``revision`` attribute where it has one (a weights revision, e.g. a pinned model commit);
the key is ``CachedEmbedder.key(text, query)`` (sha256 of identity, query mode and text).
So the store is keyed by model, revision and text hash, and the values are those the
embedder computed, bit for bit.

The pre-pass (``memlab.embeddings.prefill.fill``) embeds the texts missing from the store in partitions fixed by
content (the missing keys sorted, ``partition_size`` at a time), not by the number of workers,
so a store filled by 2 workers or 200, or in one process, holds the same vectors. With a
Dask client each partition is one task on the cluster: each distinct text is embedded once
per cluster. Workers then read with ``reading(root)``: inside it, every ``CachedEmbedder``
in the process answers from the store first (``active_store``); a text the store lacks (one
a strategy derives while it runs, e.g. a summary) falls through to the cache's own file and
the model, as before.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Iterator, Sequence

import numpy as np

from ..base import MemlabError
from ..atomic import atomic_write_bytes, atomic_write_text

if TYPE_CHECKING:
    from .base import Embedder

_STORE_ENV = "MEMLAB_EMBEDDING_STORE"


def default_store_root() -> str:
    """``$MEMLAB_EMBEDDING_STORE``, else ``<$MEMLAB_CACHE_DIR or ~/.cache/memlab>/embedding-store``
    (on a real cluster it must be a folder every worker mounts: set the variable)."""
    given = os.environ.get(_STORE_ENV)
    if given:
        return given
    root = os.environ.get("MEMLAB_CACHE_DIR") or str(Path.home() / ".cache" / "memlab")
    return str(Path(root) / "embedding-store")


def revision(embedder: Embedder) -> str:
    """The embedder's weights revision (its ``revision`` attribute or method), or ""."""
    value = getattr(embedder, "revision", "")
    value = value() if callable(value) else value
    return str(value or "")


def model_digest(embedder: Embedder, identity: str | None = None) -> str:
    """``sha256(identity + "\\0" + revision)[:32]``: the folder of the model's vectors
    (``identity``: ``embedder.identity()``, passed by a caller that has it already)."""
    identity = embedder.identity() if identity is None else identity
    return hashlib.sha256((identity + "\0" + revision(embedder)).encode("utf-8")).hexdigest()[:32]


class EmbeddingStore:
    """The Arrow files of one store folder (module docstring), read memory-mapped.

    ``lookup`` loads every file of the model's folder the first time it is asked for that
    model, and lists the folder again only when a key is missing (files written since);
    vectors are views of the mapped files (no copy), read-only.
    """

    def __init__(self, root: str | os.PathLike[str]):
        self.root = Path(root)
        self._lock = threading.Lock()
        self._loaded: dict[str, set[str]] = {}          # model digest -> part files read
        self._index: dict[str, dict[bytes, tuple[np.ndarray, int]]] = {}  # digest -> key -> (matrix, row)

    def folder(self, embedder: Embedder) -> Path:
        return self.root / model_digest(embedder)

    def _refresh(self, digest: str) -> None:
        import pyarrow as pa

        folder = self.root / digest
        loaded = self._loaded.setdefault(digest, set())
        index = self._index.setdefault(digest, {})
        if not folder.is_dir():
            return
        for name in sorted(os.listdir(folder)):
            if not (name.startswith("part-") and name.endswith(".arrow")) or name in loaded:
                continue
            path = folder / name
            try:
                table = pa.ipc.open_file(pa.memory_map(str(path), "r")).read_all()
                keys = table.column("key").combine_chunks()
                vectors = table.column("vector").combine_chunks()
                dim = vectors.type.list_size
                matrix = vectors.flatten().to_numpy(zero_copy_only=True).reshape(-1, dim)
            except (pa.ArrowException, KeyError, AttributeError, ValueError) as exc:
                raise MemlabError(f"embedding store {str(path)!r}: expected an Arrow IPC file with columns "
                                  f"key (fixed_size_binary(32)) and vector (fixed_size_list<float32>), "
                                  f"got an unreadable file: {exc}") from None
            # the keys' bytes sliced from the column's one buffer: 8x faster than to_pylist()
            raw = keys.buffers()[1].to_pybytes()[keys.offset * 32:(keys.offset + len(keys)) * 32]
            for row in range(len(keys)):
                index[raw[32 * row:32 * row + 32]] = (matrix, row)
            loaded.add(name)

    def lookup(self, embedder: Embedder, keys: Sequence[str], digest: str | None = None) -> dict[str, np.ndarray]:
        """The stored vectors of ``keys`` (hex keys of ``CachedEmbedder.key``) that the store
        holds (``digest``: ``model_digest(embedder)``, passed by a caller that has it)."""
        digest = model_digest(embedder) if digest is None else digest
        with self._lock:
            if digest not in self._loaded:
                self._refresh(digest)
            index = self._index[digest]
            raw = [bytes.fromhex(k) for k in keys]
            if any(r not in index for r in raw):
                self._refresh(digest)  # parts written since this process last looked
            found = {}
            for k, r in zip(keys, raw):
                hit = index.get(r)
                if hit is not None:
                    found[k] = hit[0][hit[1]]
            return found

    def keys(self, embedder: Embedder) -> set[bytes]:
        """Every key stored for ``embedder``'s model."""
        digest = model_digest(embedder)
        with self._lock:
            self._refresh(digest)
            return set(self._index[digest])

    def write(self, embedder: Embedder, keys: Sequence[str], vectors: np.ndarray) -> Path:
        """One part file holding ``keys`` -> ``vectors`` (float32 rows), written atomically and
        named by the digest of its keys; returns its path."""
        import pyarrow as pa

        vectors = np.ascontiguousarray(vectors, dtype="<f4")
        if vectors.ndim != 2 or vectors.shape[0] != len(keys):
            raise MemlabError(f"embedding store {str(self.root)!r}: expected {len(keys)} vectors, "
                              f"got an array of shape {vectors.shape}")
        folder = self.folder(embedder)
        folder.mkdir(parents=True, exist_ok=True)
        meta = folder / "model.json"
        if not meta.is_file():
            atomic_write_text(meta, json.dumps({"identity": embedder.identity(), "revision": revision(embedder),
                                                "dim": int(vectors.shape[1])}, sort_keys=True) + "\n")
        raw = [bytes.fromhex(k) for k in keys]
        name = "part-" + hashlib.sha256(b"".join(raw)).hexdigest()[:32] + ".arrow"
        table = pa.table({
            "key": pa.array(raw, type=pa.binary(32)),
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1), type=pa.float32()),
                                                        int(vectors.shape[1])),
        })
        sink = pa.BufferOutputStream()
        with pa.ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table)
        atomic_write_bytes(folder / name, sink.getvalue().to_pybytes())
        return folder / name


# -- the store a process reads from -------------------------------------------------------------

_open_stores: dict[str, EmbeddingStore] = {}   # root -> store, per process: clones share the mapped files
_active: list[EmbeddingStore] = []


def open_store(root: str | os.PathLike[str]) -> EmbeddingStore:
    key = os.path.abspath(root)
    store = _open_stores.get(key)
    if store is None:
        store = _open_stores[key] = EmbeddingStore(key)
    return store


@contextlib.contextmanager
def reading(root: str | os.PathLike[str] | None) -> Iterator[EmbeddingStore | None]:
    """Within the block, every ``CachedEmbedder`` of this process answers from the store at
    ``root`` first (None: no store). Process-wide on purpose: the embedders sit deep inside
    strategies cloned per dialogue. Tasks running in threads of one worker each push the
    same store of their sweep, so their lookups agree; with two stores active at once (two
    sweeps in threads of one process) lookups read the newest, and a key it lacks is
    embedded by the model as without a store: slower, never another vector."""
    if root is None:
        yield None
        return
    store = open_store(root)
    _active.append(store)
    try:
        yield store
    finally:
        _active.remove(store)


def active_store() -> EmbeddingStore | None:
    return _active[-1] if _active else None
