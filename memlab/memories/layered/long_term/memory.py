"""``LongTermMemory``: typed memories in SQLite (metadata) plus a vector store (embeddings).

The two stores are kept consistent: every write goes to both or neither (an SQLite
transaction with the vector write inside it; on failure the transaction is rolled
back and the new vectors deleted), and opening a memory checks and repairs them
(rows without a vector are embedded again, vectors without a row are deleted, and a
changed embedder re-embeds everything). ``last_repair`` says what was repaired.
"""

from __future__ import annotations

import sqlite3
import threading

from ....base import Component, ConfigError
from ....decay import Clock, DecayModel
from ....embeddings.base import Embedder
from ....embeddings.hashing import HashingEmbedder
from ....retrieval.conflicts import ConflictResolver
from ....storage.vector import NumpyVectorStore, VectorStore
from .consolidate import Consolidation
from .repository import Repository
from .search import DecaySearch
from .writing import WritePath


class LongTermMemory(Consolidation, DecaySearch, WritePath, Repository, Component):
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
      Ties go to the older memory. Returned memories are recalled (``reinforce=True``):
      access_count + 1, last_accessed = now, strength = ``decay.reinforce(strength)``.
    - ``consolidate(ids, content)`` replaces memories by a merged one (originals outdated);
      ``add_abstraction(content, evidence)`` adds an abstract memory supported by active
      ones, and ``evidence(id)`` lists them (``consolidate`` module).
    - ``now``: the argument, else ``clock.now()``, else the newest timestamp or recall
      time stored (dialogue time; the wall clock is never read implicitly, except by
      ``add`` without a timestamp and without a clock).
    """

    #: Candidates asked from the vector store per search (doubled while filters leave too few).
    CANDIDATES = 50

    def __init__(self, path: str | None = None, vector_store: VectorStore | None = None,
                 embedder: Embedder | None = None, decay: DecayModel | None = None,
                 conflict_resolver: ConflictResolver | None = None, clock: Clock | None = None):
        self.path = path
        self.vector_store = vector_store
        self.embedder = embedder
        self.decay = decay
        self.conflict_resolver = conflict_resolver
        self.clock = clock
        self._db: sqlite3.Connection | None = None
        self._on_params_changed()

    def _on_params_changed(self) -> None:
        for name, value, kind in (("vector_store", self.vector_store, VectorStore),
                                  ("embedder", self.embedder, Embedder),
                                  ("decay", self.decay, DecayModel),
                                  ("conflict_resolver", self.conflict_resolver, ConflictResolver),
                                  ("clock", self.clock, Clock)):
            if value is not None and not isinstance(value, kind):
                raise ConfigError(f"{name} must be a {kind.__name__} or None, got {type(value).__name__}")
        self.close()
        self._lock = threading.RLock()
        self._store = self.vector_store if self.vector_store is not None else NumpyVectorStore()
        self._embedder = self.embedder if self.embedder is not None else HashingEmbedder()
        self._resolver = self.conflict_resolver if self.conflict_resolver is not None else ConflictResolver()
        self._db = self._connect()
        self._last_repair = self.check_and_repair()
