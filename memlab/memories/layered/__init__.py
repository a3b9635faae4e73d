"""Layered memory (seed 001): short-term window with summaries, long-term typed memories
in SQLite + a vector store, and a working-memory pipeline joining them."""

from .extraction import ExtractedMemory, Extractor, LLMExtractor, RuleBasedExtractor
from .layered import LayeredMemory
from .long_term import LongTermMemory, RepairReport
from .short_term import ShortTermMemory
from .summarize import ExtractiveSummarizer, LLMSummarizer, Summarizer
from .working import (
                      Answer,
                      Filter,
                      HyDEExpander,
                      Layers,
                      LLMQueryRewriter,
                      LLMRelevanceFilter,
                      Load,
                      LongTermRetriever,
                      MultiQueryExpander,
                      Retrieve,
                      Step,
                      Update,
                      WorkingState,
)

__all__ = ["ExtractedMemory", "Extractor", "LLMExtractor", "RuleBasedExtractor", "LayeredMemory",
           "LongTermMemory", "RepairReport", "ShortTermMemory", "ExtractiveSummarizer", "LLMSummarizer",
           "Summarizer", "Answer", "Filter", "HyDEExpander", "Layers", "LLMQueryRewriter",
           "LLMRelevanceFilter", "Load", "LongTermRetriever", "MultiQueryExpander", "Retrieve", "Step",
           "Update", "WorkingState"]
