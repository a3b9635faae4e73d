"""Layered memory (seed 001): short-term window with summaries, long-term typed memories
in SQLite + a vector store, and a working-memory pipeline joining them; lifecycle parts
(merging, abstraction, periodic summaries, gists) in ``merge``, ``abstraction``,
``lifecycle`` and ``gist``."""

from ...extraction import ExtractedMemory, Extractor, LLMExtractor, RuleBasedExtractor
from .abstraction import AbstractionRetrieve, Abstractor, LLMAbstractor
from .gist import FirstSentenceGist, GistFilter, LLMGist
from .layered import LayeredMemory
from .lifecycle import LifecycleUpdate
from .long_term import LongTermMemory, LongTermRetriever, RepairReport
from .merge import LLMMerger, Merger
from .short_term import ShortTermMemory
from ...summarizers import ExtractiveSummarizer, LLMSummarizer, Summarizer
from ...retrieval.llm_expansion import HyDEExpander, LLMQueryRewriter, MultiQueryExpander
from ...retrieval.llm_filter import LLMRelevanceFilter
from .steps.answer import Answer
from .steps.filter import Filter
from .steps.load import CONFLICT_INSTRUCTION, Load
from .steps.retrieve import Retrieve
from .steps.state import Layers, Step, WorkingState
from .steps.update import Update

__all__ = ["ExtractedMemory", "Extractor", "LLMExtractor", "RuleBasedExtractor", "LayeredMemory",
           "LongTermMemory", "RepairReport", "ShortTermMemory", "ExtractiveSummarizer", "LLMSummarizer",
           "Summarizer", "Answer", "Filter", "HyDEExpander", "Layers", "LLMQueryRewriter",
           "LLMRelevanceFilter", "Load", "LongTermRetriever", "MultiQueryExpander", "Retrieve", "Step",
           "Update", "WorkingState", "Abstractor", "AbstractionRetrieve", "CONFLICT_INSTRUCTION",
           "FirstSentenceGist", "GistFilter", "LifecycleUpdate", "LLMAbstractor", "LLMGist", "LLMMerger", "Merger"]
