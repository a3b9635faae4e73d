"""Summarisers live in ``memlab.summarize`` (below the memories, beside ``memlab.llm``);
these names stay importable from here."""

from ...summarize import (
    ExtractiveSummarizer,
    LLMSummarizer,
    Summarizer,
    SummaryPiece,
    attributed,
    pieces_sources,
    pieces_text,
    sentence_score,
)

__all__ = ["ExtractiveSummarizer", "LLMSummarizer", "Summarizer", "SummaryPiece", "attributed",
           "pieces_sources", "pieces_text", "sentence_score"]
