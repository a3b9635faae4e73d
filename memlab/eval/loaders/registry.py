"""The loader registry: every dataset format is one ``Loader``, registered by name.

A format is one file and one call::

    def load_mine(path: str, speaker_field: str = "who") -> Dataset: ...
    def is_mine(path: str) -> bool: ...                      # cheap: never parses a big file whole
    register_loader("mine", load=load_mine, detect=is_mine)

and from then on ``load_dataset`` detects it, ``memlab eval --format mine`` accepts it,
``--option speaker_field=...`` reaches it (options are the loader's keyword parameters, read
by the type of their defaults), and, with ``iterate=`` (a generator of Dialogues taking the
same options and a ``report``), ``memlab eval`` streams it one dialogue at a time.
``datasets/README.md`` walks through a whole example (a test runs it).

Detection asks each registered format's ``detect(path)`` in registration order (the
built-ins first) and takes the first that says yes. ``json_sample(path)`` is the helper the
JSON formats share: the parsed document of a small file, or for a file holding an array
only its first element (wrapped in a list), so a 278 MB file is not parsed to be named.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...base import did_you_mean
from ..dataset import Dataset, DatasetError, Dialogue


@dataclass(frozen=True)
class Loader:
    """One registered dataset format (module docstring). ``options``: the keyword parameters
    ``load`` takes besides the path, by name."""

    name: str
    load: Callable[..., Dataset]
    detect: Callable[[str], bool] | None = None
    iterate: Callable[..., Iterator[Dialogue]] | None = None
    doc: str = ""

    @property
    def options(self) -> dict[str, inspect.Parameter]:
        return {n: p for n, p in inspect.signature(self.load).parameters.items() if n != "path"}

    @property
    def streams(self) -> bool:
        return self.iterate is not None


_LOADERS: dict[str, Loader] = {}


def register_loader(name: str, *, load: Callable[..., Dataset], detect: Callable[[str], bool] | None = None,
                    iterate: Callable[..., Iterator[Dialogue]] | None = None, doc: str | None = None,
                    replace: bool = False) -> Loader:
    """Register a dataset format (``Loader`` fields) and return it.

    ``iterate`` must take the options ``load`` takes (and ``report``): the CLI passes the same
    ones to either. Registering a name again is an error unless ``replace``.
    """
    if not isinstance(name, str) or not name or not name.replace("_", "").replace("-", "").isalnum():
        raise DatasetError(f"loader name must be letters, digits, '_' or '-', got {name!r}")
    for field, fn in (("load", load), ("detect", detect), ("iterate", iterate)):
        if fn is not None and not callable(fn):
            raise DatasetError(f"loader {name!r}: {field} must be callable, got {fn!r}")
    if load is None:
        raise DatasetError(f"loader {name!r}: give its load function (load=)")
    if iterate is not None:
        takes = set(inspect.signature(iterate).parameters)
        missing = [o for o in inspect.signature(load).parameters if o != "path" and o not in takes]
        if missing or "report" not in takes:
            raise DatasetError(f"loader {name!r}: iterate must take the options load takes and 'report'; "
                               f"it lacks {missing + ([] if 'report' in takes else ['report'])}")
    if name in _LOADERS and not replace:
        raise DatasetError(f"dataset format {name!r} is already registered; pass replace=True to replace it")
    loader = Loader(name, load, detect, iterate, doc if doc is not None else (load.__doc__ or "").strip().split("\n")[0])
    _LOADERS[name] = loader
    return loader


def unregister_loader(name: str) -> None:
    """Remove a registered format (tests, interactive sessions)."""
    get_loader(name)
    del _LOADERS[name]


def get_loader(name: str) -> Loader:
    """The format registered as ``name``; an unknown name is an error with did-you-mean."""
    try:
        return _LOADERS[name]
    except KeyError:
        raise DatasetError(did_you_mean(name, list(_LOADERS), "dataset format")) from None


def loader_names() -> list[str]:
    """The registered formats, in registration order (the built-ins first)."""
    return list(_LOADERS)


def detect_path(path: str | Path) -> str | None:
    """The first registered format whose ``detect`` accepts ``path``; None if none does."""
    for loader in _LOADERS.values():
        if loader.detect is not None and loader.detect(str(path)):
            return loader.name
    return None


_SAMPLES: dict[tuple[str, float, int], Any] = {}


def json_sample(path: str | Path) -> Any:
    """What JSON formats detect by: the parsed document, or for a file holding an array a
    list of its first element only; None for a path that is no file (a file that is not JSON
is an error naming it). Cached
    per file version, so several formats asking read it once."""
    from .checks import first_char, iter_json_array, read_json

    p = Path(path)
    if not p.is_file():
        return None
    stat = p.stat()
    key = (str(p.resolve()), stat.st_mtime, stat.st_size)
    if key not in _SAMPLES:
        # a file that is not JSON raises here, naming the file: the clearest thing to say about it
        if first_char(str(p)) == "[":
            sample: Any = []
            for first in iter_json_array(str(p)):
                sample = [first]
                break
        else:
            sample = read_json(str(p))
        _SAMPLES.clear()  # one file at a time: a sample can be a whole (small) document
        _SAMPLES[key] = sample
    return _SAMPLES[key]


__all__ = ["Loader", "detect_path", "get_loader", "json_sample", "loader_names", "register_loader",
           "unregister_loader"]
