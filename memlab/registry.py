"""Named factories of one kind (``Registry``): strategies by name, with tags.

A registry looks a name up with a did-you-mean on a typo, imports a lazily registered
factory on first use, and can be snapshotted and restored (a command or a test that
registers for a while leaves it as it found it).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Mapping
from typing import Any, Callable, Generic, Iterator, TypeVar

from .base import ConfigError, did_you_mean

T = TypeVar("T")


class Registry(Generic[T]):
    """Named factories of one kind, looked up with a helpful error on a typo.

    A name may carry tags (``register(name, factory, tags=(...))``) from the registry's
    vocabulary ``tags`` (tag -> what it means; no vocabulary: no tags); ``names(tag=...)``
    lists the names that carry one. Whatever reads "every built-in" reads the tag, so a new
    entry is added in one place."""

    def __init__(self, kind: str, tags: Mapping[str, str] | None = None):
        self.kind = kind
        self.vocabulary: dict[str, str] = dict(tags or {})
        self._items: dict[str, Callable[..., T]] = {}
        self._lazy: dict[str, str] = {}  # name -> "module:attr", imported on first lookup
        self._tags: dict[str, frozenset[str]] = {}

    def _checked_tags(self, name: str, tags: Iterable[str]) -> frozenset[str]:
        if isinstance(tags, str):
            raise ConfigError(f"{self.kind} {name!r}: tags must be a list of tags, got the string {tags!r}")
        out = frozenset(tags)
        for tag in sorted(out):
            if tag not in self.vocabulary:
                known = ", ".join(sorted(self.vocabulary)) or "none (this registry has no tags)"
                raise ConfigError(f"{self.kind} {name!r}: unknown tag {tag!r}; tags: {known}")
        return out

    def register_lazy(self, name: str, target: str, *, tags: Iterable[str] = ()) -> None:
        """Register the factory ``target`` ("package.module:attr") under ``name`` without
        importing it: it is imported when ``name`` is first looked up, so the registry never
        imports what registers in it (no import cycle, and optional libraries stay unloaded)."""
        checked = self._checked_tags(name, tags)
        if name in self._items or name in self._lazy:
            raise ConfigError(f"{self.kind} {name!r} is already registered")
        self._lazy[name] = target
        self._tags[name] = checked

    def register(self, name: str, factory: Callable[..., T] | None = None, *, overwrite: bool = False,
                 tags: Iterable[str] = ()):
        """Register ``factory`` under ``name`` with ``tags``; usable as a decorator."""
        checked = self._checked_tags(name, tags)

        def add(f: Callable[..., T]) -> Callable[..., T]:
            if name in self._lazy and not overwrite:
                self.factory(name)  # a lazy entry: registering its own factory again is fine
            if name in self._items and not overwrite and self._items[name] is not f:
                raise ConfigError(f"{self.kind} {name!r} is already registered")
            self._lazy.pop(name, None)
            self._items[name] = f
            # a lazy entry registering its own factory keeps the entry's tags
            self._tags[name] = checked | (frozenset() if overwrite else self._tags.get(name, frozenset()))
            return f

        return add(factory) if factory is not None else add

    def get(self, name: str, **params: Any) -> T:
        """Build the item registered under ``name`` with ``params``."""
        return self.factory(name)(**params)

    def factory(self, name: str) -> Callable[..., T]:
        if name not in self._items and name in self._lazy:
            module, _, attr = self._lazy[name].partition(":")
            self._items[name] = getattr(importlib.import_module(module), attr)
            del self._lazy[name]
        if name not in self._items:
            raise ConfigError(did_you_mean(name, self.names(), self.kind))
        return self._items[name]

    def names(self, tag: str | None = None) -> list[str]:
        """The registered names, sorted; with ``tag``, those that carry it."""
        if tag is not None and tag not in self.vocabulary:
            raise ConfigError(did_you_mean(tag, sorted(self.vocabulary), f"{self.kind} tag"))
        return sorted(n for n in [*self._items, *self._lazy] if tag is None or tag in self._tags.get(n, ()))

    def tags(self, name: str) -> list[str]:
        """The tags of ``name``, sorted (an unknown name is an error with a did-you-mean)."""
        if name not in self:
            raise ConfigError(did_you_mean(name, self.names(), self.kind))
        return sorted(self._tags.get(name, ()))

    def snapshot(self) -> tuple[dict[str, Callable[..., T]], dict[str, str], dict[str, frozenset[str]]]:
        """What is registered now, for ``restore``: a caller that registers for a while (a
        command run in-process, a test) can leave the registry as it found it."""
        return dict(self._items), dict(self._lazy), dict(self._tags)

    def restore(self, snapshot: tuple[dict[str, Callable[..., T]], dict[str, str], dict[str, frozenset[str]]]
                ) -> None:
        """Back to ``snapshot``: names registered since are gone, replaced ones come back."""
        items, lazy, tags = snapshot
        self._items.clear()
        self._items.update(items)
        self._lazy.clear()
        self._lazy.update(lazy)
        self._tags.clear()
        self._tags.update(tags)

    def __contains__(self, name: object) -> bool:
        return name in self._items or name in self._lazy

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())
