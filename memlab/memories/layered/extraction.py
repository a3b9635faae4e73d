"""Extraction lives in ``memlab.extraction`` (below the memories, beside ``memlab.llm``);
these names stay importable from here."""

from ...extraction import (
    CATEGORY_KEYWORDS,
    ExtractedMemory,
    Extractor,
    LLMExtractor,
    RuleBasedExtractor,
    parse_extraction,
)
from ...records import MEMORY_TYPES

__all__ = ["CATEGORY_KEYWORDS", "MEMORY_TYPES", "ExtractedMemory", "Extractor", "LLMExtractor",
           "RuleBasedExtractor", "parse_extraction"]
