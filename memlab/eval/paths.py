"""Where the memlab checkout, its shipped datasets and the LoCoMo file are.

Notebooks and scripts run from different folders (``notebooks/``, the repository root, a
test's temporary directory); these functions find the files the same way from all of them.

- ``repo_root()``: the first of ``start`` (default: the current directory) and its ancestors
  that holds ``pyproject.toml`` and ``memlab/__init__.py``; failing that, the folder above
  the imported ``memlab`` package if it is such a checkout (an editable install); else None.
- ``datasets_dir()``: ``<repo root>/datasets``, the shipped dialogues.
- ``locomo_path()``: the LoCoMo file named by the environment variable ``MEMLAB_LOCOMO``;
  without it, the first existing ``<base>/../shared/datasets/locomo/locomo10.json`` for
  ``base`` = the repository root, then the current directory and its ancestors; else None
  (LoCoMo is CC BY-NC 4.0 and never part of the repository).
- ``longmemeval_path(name)``: a LongMemEval file (``longmemeval_oracle.dev.json``, ...) in the
  folder named by ``MEMLAB_LONGMEMEVAL``, else in the first existing
  ``<base>/../shared/datasets/longmemeval/`` (bases as for LoCoMo); else None.
- ``beam_path(part)``: a BEAM folder (``100K``, ``100K/1``, ...; ``""``: the root holding the
  size folders) under the folder named by ``MEMLAB_BEAM``, else under the first existing
  ``<base>/../shared/datasets/beam/`` (bases as for LoCoMo); else None.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..base import MemlabError

#: Environment variable naming the LoCoMo file (``locomo10.json``).
LOCOMO_ENV = "MEMLAB_LOCOMO"
#: Where LoCoMo is looked for, relative to the repository root and the current directory's ancestors.
LOCOMO_RELATIVE = Path("..") / "shared" / "datasets" / "locomo" / "locomo10.json"


#: Environment variable naming the folder of the LongMemEval files.
LONGMEMEVAL_ENV = "MEMLAB_LONGMEMEVAL"
#: Where the LongMemEval files are looked for, like ``LOCOMO_RELATIVE``.
LONGMEMEVAL_RELATIVE = Path("..") / "shared" / "datasets" / "longmemeval"
#: The development files: oracle (evidence sessions only) and S (about 50 sessions per question).
LONGMEMEVAL_ORACLE = "longmemeval_oracle.dev.json"
LONGMEMEVAL_S = "longmemeval_s_cleaned.dev.json.gz"


#: Environment variable naming the BEAM folder (the one holding 100K/, 500K/, 1M/).
BEAM_ENV = "MEMLAB_BEAM"
#: Where BEAM is looked for, like ``LOCOMO_RELATIVE``.
BEAM_RELATIVE = Path("..") / "shared" / "datasets" / "beam"


def _is_checkout(path: Path) -> bool:
    return (path / "pyproject.toml").is_file() and (path / "memlab" / "__init__.py").is_file()


def _ancestors(start: str | Path | None) -> list[Path]:
    here = Path(start if start is not None else os.getcwd()).resolve()
    return [here, *here.parents]


def repo_root(start: str | Path | None = None) -> Path | None:
    """The memlab checkout containing ``start`` (default: cwd), else the package's own; None if neither."""
    for candidate in _ancestors(start):
        if _is_checkout(candidate):
            return candidate
    package_parent = Path(__file__).resolve().parents[2]  # memlab/eval/paths.py -> checkout
    return package_parent if _is_checkout(package_parent) else None


def datasets_dir(start: str | Path | None = None) -> Path:
    """The shipped ``datasets/`` folder of the checkout (see ``repo_root``).

    Raises MemlabError naming where it looked when there is no checkout or no such folder
    (a wheel install does not ship the dialogues).
    """
    root = repo_root(start)
    if root is None:
        raise MemlabError(f"cannot find the memlab checkout (a folder with pyproject.toml and "
                          f"memlab/__init__.py) from {Path(start or os.getcwd()).resolve()} or "
                          f"above; the shipped datasets live in its datasets/ folder")
    path = root / "datasets"
    if not path.is_dir():
        raise MemlabError(f"{path}: no such folder (expected the shipped datasets)")
    return path


def locomo_path(start: str | Path | None = None) -> Path | None:
    """The LoCoMo file, or None when it is not on this machine (see the module docstring).

    A set ``MEMLAB_LOCOMO`` that names no file is an error, not None: the user asked for
    that file.
    """
    named = os.environ.get(LOCOMO_ENV)
    if named:
        path = Path(named).expanduser()
        if not path.is_file():
            raise MemlabError(f"{LOCOMO_ENV}={named}: no such file (expected LoCoMo's locomo10.json)")
        return path.resolve()
    root = repo_root(start)
    bases = ([root] if root is not None else []) + _ancestors(start)
    seen: set[Path] = set()
    for base in bases:
        candidate = (base / LOCOMO_RELATIVE).resolve()
        if candidate in seen:
            continue
        seen.add(candidate)
        if candidate.is_file():
            return candidate
    return None


def longmemeval_path(name: str = LONGMEMEVAL_ORACLE, start: str | Path | None = None) -> Path | None:
    """The LongMemEval file ``name``, or None when it is not on this machine (module docstring)."""
    named = os.environ.get(LONGMEMEVAL_ENV)
    if named:
        path = Path(named).expanduser() / name
        if not path.is_file():
            raise MemlabError(f"{LONGMEMEVAL_ENV}={named}: no file {name} there")
        return path.resolve()
    root = repo_root(start)
    for base in ([root] if root is not None else []) + _ancestors(start):
        candidate = (base / LONGMEMEVAL_RELATIVE / name).resolve()
        if candidate.is_file():
            return candidate
    return None


def beam_path(part: str = "", start: str | Path | None = None) -> Path | None:
    """The BEAM folder ``part`` (``"100K"``, ``"100K/1"``; ``""``: the root), or None when it is
    not on this machine (module docstring). A set ``MEMLAB_BEAM`` without ``part`` is an error."""
    named = os.environ.get(BEAM_ENV)
    if named:
        path = Path(named).expanduser() / part
        if not path.is_dir():
            raise MemlabError(f"{BEAM_ENV}={named}: no folder {part or '.'} there (expected BEAM's 100K/, 500K/, 1M/)")
        return path.resolve()
    root = repo_root(start)
    for base in ([root] if root is not None else []) + _ancestors(start):
        candidate = (base / BEAM_RELATIVE / part).resolve()
        if candidate.is_dir():
            return candidate
    return None


__all__ = ["BEAM_ENV", "BEAM_RELATIVE", "beam_path", "LOCOMO_ENV", "LOCOMO_RELATIVE",
           "LONGMEMEVAL_ENV", "LONGMEMEVAL_ORACLE", "LONGMEMEVAL_RELATIVE",
           "LONGMEMEVAL_S", "datasets_dir", "locomo_path", "longmemeval_path", "repo_root"]
