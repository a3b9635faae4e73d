"""Loading a dataset from a path: one file in any supported format, or a folder of native
dataset files merged into one dataset."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..base import MemlabError
from .dataset import Dataset


def dataset_files(path: str | Path) -> list[Path]:
    """The files ``load_any(path)`` reads, sorted: ``path`` itself; for a folder that a
    registered format reads as one dataset (``detect_path``: BEAM, whose conversation folders
    hold a chat file and a questions subfolder), every .json / .json.gz file under it at any
    depth; for any other folder, its own .json / .json.gz files (native files merged). Hidden
    files and folders are never data. Records hash exactly these (``memlab.eval.provenance``)."""
    from .loaders import detect_path

    path = Path(path)
    if not path.is_dir():
        return [path]

    def data(p: Path) -> bool:
        return p.is_file() and p.name.endswith((".json", ".json.gz")) and not any(
            part.startswith(".") for part in p.relative_to(path).parts)

    return sorted(p for p in (path.rglob("*") if detect_path(path) is not None else path.iterdir()) if data(p))


def load_any(path: str | Path, format: str | None = None, **options: Any) -> Dataset:
    """A dataset file, a folder that a registered format reads as one dataset, or a folder of
    native dataset files merged into one dataset."""
    from .loaders import load_dataset

    from .loaders import detect_path

    path = Path(path)
    if not path.exists():
        raise MemlabError(f"{path}: no such file or folder")
    claimed = detect_path(path) if path.is_dir() else None
    if claimed is not None and format in (None, claimed):
        # a folder that is one dataset of a registered format (BEAM's conversation folders, ...)
        return load_dataset(str(path), format=claimed, **options)
    if path.is_dir():
        files = dataset_files(path)
        if not files:
            raise MemlabError(f"{path}: folder has no .json (or .json.gz) dataset files")
        parts = [load_dataset(str(f), format=format, **options) for f in files]
        dialogues = [d for part in parts for d in part.dialogues]
        seen: set[str] = set()
        for d in dialogues:
            if d.id in seen:
                raise MemlabError(f"{path}: dialogue id {d.id!r} appears in more than one file")
            seen.add(d.id)
        merged = Dataset(name=path.name, dialogues=dialogues, source_path=str(path))
        for part in parts:
            merged.report.entries.extend(part.report.entries)
        return merged
    return load_dataset(str(path), format=format, **options)


def dataset_format(path: str | Path, format: str | None = None) -> str | None:
    """The format ``load_any`` reads ``path`` in: ``format`` when given, else the registered
    format that detects it (for a folder no format claims, ``native``: its files merged); None when there is no such file or the format
    cannot be told (``load_any`` then says which)."""
    from .loaders import sniff_format

    if format is not None:
        return format
    path = Path(path)
    if not path.exists():
        return None
    try:
        if path.is_dir():  # a folder a registered format claims, else native files merged
            return sniff_format(str(path)) or "native"
        return sniff_format(str(path))
    except (MemlabError, ValueError, OSError):  # unreadable: the load reports it with its own message
        return None
