"""Long-term memory, split along its jobs: ``repository`` (SQLite rows, the vector index
kept in step, repair), ``writing`` (transactions, duplicates, conflicts), ``search``
(decayed recall, reinforcement, forgetting), ``consolidate`` (merged and abstract
memories); ``memory`` joins them into ``LongTermMemory``; ``retriever`` is its read-only
``Retriever`` view."""

from .memory import LongTermMemory
from .repository import FILTER_KEYS, STATUSES, VECTOR_KEYS, RepairReport
from .retriever import LongTermRetriever

__all__ = ["FILTER_KEYS", "STATUSES", "VECTOR_KEYS", "LongTermMemory", "LongTermRetriever", "RepairReport"]
