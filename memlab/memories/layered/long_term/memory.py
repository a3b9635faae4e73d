"""``LongTermMemory``: typed memories in SQLite (metadata) plus a vector store (embeddings).

The two stores are kept consistent: every write goes to both or neither (an SQLite
transaction with the vector write inside it; on failure the transaction is rolled
back and the new vectors deleted), and opening a memory checks and repairs them
(rows without a vector are embedded again, vectors without a row are deleted, and a
changed embedder re-embeds everything). ``last_repair`` says what was repaired.
With the default parts (an in-memory ``NumpyVectorStore`` and the ``HashingEmbedder``,
which nothing else reads and which cannot fail) the vectors of new rows are written, in
the same batches, when the vector index is first read (``search``, ``store``,
``check_and_repair``): a memory searched only through another index never embeds.
"""

from __future__ import annotations

import os
import sqlite3
import threading

from ....base import Component, Param, Resource
from ....decay import Clock, DecayModel
from ....embeddings.base import Embedder
from ....embeddings.hashing import HashingEmbedder
from ....retrieval.conflicts import ConflictResolver
from ....retrieval.vector import VectorRetriever
from ....storage.vector import NumpyVectorStore, VectorStore
from .consolidate import Consolidation
from .repository import Repository
from .search import DecaySearch
from .writing import WritePath


class LongTermMemory(Consolidation, DecaySearch, WritePath, Repository, Resource, Component):
    """Persistent typed memories searched by meaning, with decay, conflicts and repair.

    Columns: memory_id, user_id, content, memory_type ('fact' | 'preference' |
    'event_summary'), subject, source_session, timestamp, access_count, last_accessed
    (the creation time until the first recall), strength, status ('active' |
    'outdated'), supersedes (JSON list), superseded_by, source_ids (JSON list).

    - ``path=None`` keeps the table in memory; ``vector_store`` defaults to
      ``NumpyVectorStore()`` (in memory: reopening a file then re-embeds every row),
      ``embedder`` to ``HashingEmbedder()``. The memory owns both stores.
    - ``add``: an exact duplicate (same user, type and content, active) is not stored
      twice: the existing memory takes the new source_ids and is reinforced. A memory
      with a ``subject`` is checked by ``conflict_resolver`` (default
      ``ConflictResolver()``: same user and subject, strictly older) against the active
      memories; those it supersedes are marked outdated (``superseded_by``), not deleted.
    - ``search`` scores by cosine similarity ``sim`` (memories with ``sim <= 0`` share
      nothing with the query and are not returned); with ``decay`` the score is
      ``sim * decay.weight(now, last_accessed, strength)`` (Ebbinghaus: ``exp(-t / S)``).
      Ties go to the older memory. Returned memories are recalled (``reinforce="returned"``):
      access_count + 1, last_accessed = now, strength = ``decay.reinforce(strength)``.
    - ``consolidate(ids, content)`` replaces memories by a merged one (originals outdated);
      ``add_abstraction(content, evidence)`` adds an abstract memory supported by active
      ones, and ``evidence(id)`` lists them (``consolidate`` module).
    - ``now``: the argument, else ``clock.now()``, else the newest timestamp or recall
      time stored (dialogue time; the wall clock is never read implicitly, except by
      ``add`` without a timestamp and without a clock).
    - ``namespace``: one file holds several memories apart, one per namespace (rows are
      read, written, counted and cleared within it). ``clone()`` of a memory kept in a
      file is bound to a namespace of its own below this one (``clone-1``, ...; the replay
      names it after the dialogue), emptied first, so no clone recalls its original's
      memories.
    """

    #: Candidates asked from the vector store per search (doubled while filters leave too few).
    CANDIDATES = 50

    constraints = {
        "path": Param((str, os.PathLike), none=True, expected="a file path or None"),
        "vector_store": Param(VectorStore, none=True),
        "embedder": Param(Embedder, none=True),
        "decay": Param(DecayModel, none=True),
        "conflict_resolver": Param(ConflictResolver, none=True),
        "clock": Param(Clock, none=True),
        "namespace": Param(str),
    }

    def __init__(self, path: str | None = None, vector_store: VectorStore | None = None,
                 embedder: Embedder | None = None, decay: DecayModel | None = None,
                 conflict_resolver: ConflictResolver | None = None, clock: Clock | None = None,
                 namespace: str = ""):
        self.path = path
        self.vector_store = vector_store
        self.embedder = embedder
        self.decay = decay
        self.conflict_resolver = conflict_resolver
        self.clock = clock
        self.namespace = namespace
        self._db: sqlite3.Connection | None = None
        self._on_params_changed()

    def _on_params_changed(self) -> None:
        self.close()
        self._lock = threading.RLock()
        self._store = self.vector_store if self.vector_store is not None else NumpyVectorStore()
        self._embedder = self.embedder if self.embedder is not None else HashingEmbedder()
        # the vector index: every row as a record, embedded into the store (restored from it)
        self._vectors = VectorRetriever(embedder=self._embedder, vector_store=self._store)
        self._resolver = self.conflict_resolver if self.conflict_resolver is not None else ConflictResolver()
        self._db = self._connect()
        self._writes = getattr(self, "_writes", 0) + 1  # another file or store: ``version`` moves
        self._last_repair = self.check_and_repair()

    def scoped(self, scope: str) -> LongTermMemory:
        """A fresh memory: in memory, a plain clone; in a file, the same file and parameters
        with namespace ``<namespace>/<scope>`` (``scope`` alone from the default one), emptied."""
        params = self._cloned_params(scope)
        if self.path is not None:
            params["namespace"] = f"{self.namespace}/{scope}" if self.namespace else str(scope)
        fresh = type(self)(**params)
        if self.path is not None:
            fresh.clear()
        return fresh
