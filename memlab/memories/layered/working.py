"""Working memory: the retrieve -> filter -> load -> (answer) -> update pipeline.

Each step is a small Component with ``run(state, layers)`` (and ``arun`` for the
I/O-bound ones), reading and writing a ``WorkingState``. Steps are conditional:
``Retrieve`` makes no LLM call when long-term memory is empty, ``Filter`` does nothing
when nothing was retrieved, ``Update`` extracts only every ``extract_every`` turns.
``WorkingState.trace`` records what ran and what was skipped, and why.

One step per module in ``memlab.memories.layered.steps``: ``state`` (``Layers``,
``WorkingState``, ``Step``), ``retrieve``, ``filter``, ``load``, ``answer``, ``update``.
This module gathers their public names (the import path of earlier versions).
"""

from __future__ import annotations

from ...retrieval.llm_expansion import HyDEExpander, LLMQueryRewriter, MultiQueryExpander
from ...retrieval.llm_filter import LLMRelevanceFilter
from .long_term import LongTermRetriever
from .steps.answer import Answer
from .steps.filter import Filter
from .steps.load import CONFLICT_INSTRUCTION, DEFAULT_SYSTEM_PROMPT, MEMORY_HEADER, Load
from .steps.retrieve import Retrieve
from .steps.state import Layers, Step, WorkingState
from .steps.update import Update

# the LLM expanders and the filter live in memlab.retrieval; imported here for the old paths
__all__ = ["Answer", "Filter", "HyDEExpander", "Layers", "LLMQueryRewriter", "LLMRelevanceFilter", "Load",
           "LongTermRetriever", "MultiQueryExpander", "Retrieve", "Step", "Update", "WorkingState",
           "DEFAULT_SYSTEM_PROMPT", "MEMORY_HEADER", "CONFLICT_INSTRUCTION"]
