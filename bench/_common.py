"""Shared helpers for the bench scripts: LoCoMo loading, peak memory, child processes, tables."""

from __future__ import annotations

import json
import math
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Sequence

os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("MPLBACKEND", "Agg")
# One BLAS thread unless told otherwise: on a 2-core machine shared with other jobs, a
# multithreaded OpenBLAS matrix-vector product waits for a busy core (measured 32 ms
# instead of 0.2 ms for 3000 x 384), which would time the machine's load, not memlab.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # this checkout's memlab, also when another one is installed
    sys.path.insert(0, str(ROOT))


def load_locomo():
    """The LoCoMo dataset, or exit 1 with a sentence saying where it is looked for."""
    from memlab.eval import load_any
    from memlab.eval.paths import locomo_path

    path = locomo_path()
    if path is None:
        print("LoCoMo not found: set MEMLAB_LOCOMO or put it at ../shared/datasets/locomo/locomo10.json")
        raise SystemExit(1)
    return load_any(path, "locomo")


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far, in MiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def rss_mb() -> float:
    """Resident memory of this process now, in MiB (Linux /proc; falls back to the peak)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except OSError:
        return peak_rss_mb()


def run_child(script: str, args: Sequence[str], timeout: float | None = None) -> dict[str, Any]:
    """Run ``python script args`` in a fresh process (clean peak memory); its last stdout line is JSON."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    proc = subprocess.run([sys.executable, script, *args], capture_output=True, text=True, env=env,
                          timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"{script} {' '.join(args)} failed:\n{proc.stdout[-500:]}{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def slope(xs: Sequence[float], ys: Sequence[float]) -> float:
    """Least-squares slope of log(y) against log(x) (NaN with fewer than two points)."""
    pts = [(math.log(x), math.log(y)) for x, y in zip(xs, ys) if x > 0 and y > 0]
    if len(pts) < 2:
        return float("nan")
    mx = sum(p[0] for p in pts) / len(pts)
    my = sum(p[1] for p in pts) / len(pts)
    den = sum((p[0] - mx) ** 2 for p in pts)
    return sum((p[0] - mx) * (p[1] - my) for p in pts) / den


def machine() -> dict[str, Any]:
    return {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform(),
            "load_avg_1m": round(os.getloadavg()[0], 2), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A plain-text table, right-aligned numbers."""
    cells = [[_fmt(c) for c in r] for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) if i == 0 else h.rjust(w) for i, (h, w) in enumerate(zip(headers, widths)))]
    for r in cells:
        lines.append("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))))
    return "\n".join(lines)


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        if math.isnan(value):
            return "-"
        return f"{value:.3g}" if abs(value) < 100 else f"{value:.0f}"
    return str(value)


def write_record(path: str, record: dict[str, Any]) -> None:
    """``record`` as indented JSON at ``path``, atomically; numpy scalars (a DataFrame's
    values) as Python numbers."""
    from memlab.atomic import atomic_write_text

    def plain(value: Any) -> Any:
        return value.item() if hasattr(value, "item") else str(value)

    atomic_write_text(path, json.dumps(record, indent=1, default=plain) + "\n")
    print(f"recorded {path}")
