"""The progress bars drawn on stderr: by replays and sweeps (``progress=True``), and for a
``progress(done, total)`` callback (``step_bar``, the judge calibration's)."""

from __future__ import annotations

from typing import Any


def progress_bar(total: int, desc: str, unit: str, enabled: bool) -> Any:
    """A tqdm bar on stderr, or None when ``enabled`` is false."""
    if not enabled or total <= 0:
        return None
    import sys

    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, dynamic_ncols=True, leave=False)


def step_bar(desc: str) -> Any:
    """A ``progress(done, total)`` callback drawing a tqdm bar on stderr: opened at the first
    step, advanced one per call, closed when ``done == total``."""
    import sys

    from tqdm import tqdm

    bar: dict[str, Any] = {}

    def step(done: int, total: int) -> None:
        if "bar" not in bar:
            bar["bar"] = tqdm(total=total, desc=desc, file=sys.stderr)
        bar["bar"].update(1)
        if done == total:
            bar["bar"].close()

    return step
