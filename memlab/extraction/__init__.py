"""Turning dialogue turns into typed long-term memories.

``RuleBasedExtractor`` (offline; ``english`` and ``chinese`` hold the rules) recognises
plain first-person statements; ``TurnExtractor`` keeps every turn as a memory, typed by
those rules; ``LLMExtractor`` asks a model for JSON and validates it.
Both return ``ExtractedMemory`` items. This package sits beside ``memlab.llm`` (the
offline LLM answers extraction prompts with the rules), below the memories that use it.
"""

from .base import ExtractedMemory, Extractor
from .categories import CATEGORY_KEYWORDS
from .llm import LLMExtractor, parse_extraction
from .rules import RuleBasedExtractor
from .turns import TurnExtractor

__all__ = ["CATEGORY_KEYWORDS", "ExtractedMemory", "Extractor", "LLMExtractor", "RuleBasedExtractor",
           "TurnExtractor", "parse_extraction"]
