"""Execute the notebooks in place, so the repository carries their outputs (plots included).

    python scripts/run_notebooks.py                       # every notebooks/*.ipynb, in name order
    python scripts/run_notebooks.py 02_keep_rate_sweep.ipynb 04_decay.ipynb

Each notebook runs top to bottom with its own parameters (the ``parameters`` cell) in a fresh
``python3`` kernel whose working folder is notebooks/, and is written back atomically with
its outputs. Nothing in a notebook depends on the clock: memlab's bootstraps and tests are
seeded, the kernel gets ``PYTHONHASHSEED=0``, cell timings are not recorded, and the notebooks
print no wall times, so a rerun on the same data and code writes the same numbers.
tests/test_notebooks.py runs the same notebooks at small scale and checks the stored outputs.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = REPO / "notebooks"
CELL_TIMEOUT = 3600  # seconds per cell at full scale (LoCoMo replays)


def kernel_environment() -> None:
    """Fix what the kernel inherits: hash seed, plotting backend, this checkout's memlab."""
    os.environ["PYTHONHASHSEED"] = "0"
    os.environ.setdefault("MPLBACKEND", "Agg")
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        os.environ.setdefault(name, "1")
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
    paths = [str(REPO)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and p != str(REPO)]
    os.environ["PYTHONPATH"] = os.pathsep.join(paths)


def run(path: Path, timeout: int = CELL_TIMEOUT) -> float:
    """Execute ``path`` in place; the seconds it took."""
    import nbformat
    from nbclient import NotebookClient

    from memlab.atomic import atomic_write_text

    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
            cell.metadata.pop("execution", None)
    start = time.perf_counter()
    NotebookClient(nb, timeout=timeout, kernel_name="python3", record_timing=False,
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    nbformat.validate(nb)
    atomic_write_text(path, nbformat.writes(nb) + "\n")
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", help="file names in notebooks/ (default: every *.ipynb)")
    parser.add_argument("--timeout", type=int, default=CELL_TIMEOUT, help="seconds per cell")
    args = parser.parse_args(argv)
    paths = [NOTEBOOKS / Path(n).name for n in args.notebooks] or sorted(NOTEBOOKS.glob("*.ipynb"))
    missing = [p.name for p in paths if not p.is_file()]
    if missing:
        print(f"run_notebooks: no such notebook in {NOTEBOOKS}: {', '.join(missing)}", file=sys.stderr)
        return 2
    kernel_environment()
    for path in paths:
        seconds = run(path, args.timeout)
        print(f"{path.name}: executed in {seconds:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
