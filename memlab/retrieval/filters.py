"""Metadata filters live in ``memlab.filters`` (core: stores use them too); these names stay
importable from here."""

from ..filters import BUILTIN_FILTER_KEYS, Where, filter_view, matches, to_chroma_where, validate_where

__all__ = ["BUILTIN_FILTER_KEYS", "Where", "filter_view", "matches", "to_chroma_where", "validate_where"]
