"""The progress bar drawn on stderr by replays and sweeps (``progress=True``)."""

from __future__ import annotations

from typing import Any


def progress_bar(total: int, desc: str, unit: str, enabled: bool) -> Any:
    """A tqdm bar on stderr, or None when ``enabled`` is false."""
    if not enabled or total <= 0:
        return None
    import sys

    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, dynamic_ncols=True, leave=False)
