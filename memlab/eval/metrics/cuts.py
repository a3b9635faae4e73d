"""Cut-offs shared by every metric: a checked k, and the token-budget prefix.

With ``t_i`` the tokens of ranked item i, the items kept under a budget of B tokens are the
longest prefix 1..m with t_1 + ... + t_m <= B (the walk stops at the first item that would
overflow, even if a later, shorter one would fit).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ...base import MemlabError


def _check_k(k: int | None) -> None:
    if k is not None and (isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1):
        raise MemlabError(f"k must be a positive int or None, got {k!r}")


def budget_prefix(tokens: Sequence[int], budget: int) -> int:
    """How many leading items fit in ``budget`` tokens: the largest m with t_1 + ... + t_m <= budget."""
    if isinstance(budget, bool) or not isinstance(budget, (int, np.integer)) or budget < 1:
        raise MemlabError(f"token budget must be a positive int, got {budget!r}")
    total = 0
    for m, t in enumerate(tokens):
        total += int(t)
        if total > budget:
            return m
    return len(tokens)
