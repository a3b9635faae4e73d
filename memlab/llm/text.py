"""Kept for code that imported the text helpers from here: they live in ``memlab.text``
(at the bottom, so every layer can use them). Nothing in memlab imports this module."""

from __future__ import annotations

from ..text import *  # noqa: F401,F403
