"""CountingEmbedder: an embedder that logs every text its model embeds, across processes.

Wraps any embedder and appends one line per text it embeds, ``<pid>\\t<mode>\\t<sha256 of
text>``, to a log file opened in append mode and written with one ``os.write`` per call:
on a local file system each append lands whole at the end, whichever worker process
writes it, so the log counts model calls over a whole cluster (on one machine, or on a
shared file system that honours O_APPEND). Used to check that a distributed sweep embeds
each distinct text once (``tests/eval/test_distributed.py``); the vectors are the inner
embedder's, bit for bit, and so is ``identity()``: counting does not change a cache key.
"""

from __future__ import annotations

import hashlib
import os
from collections import Counter

import numpy as np

from ..base import Param
from .base import Embedder


class CountingEmbedder(Embedder):
    """``embedder``'s vectors; every text it is asked to embed is logged to ``path``."""

    constraints = {"embedder": Param(Embedder)}

    def __init__(self, embedder: Embedder, path: str):
        self.embedder = embedder
        self.path = path

    @property
    def dim(self) -> int:
        return self.embedder.dim

    @property
    def asymmetric(self) -> bool:
        return self.embedder.asymmetric

    def identity(self) -> str:
        return self.embedder.identity()

    def _log(self, texts: list[str], mode: str) -> None:
        lines = "".join(f"{os.getpid()}\t{mode}\t{hashlib.sha256(t.encode('utf-8')).hexdigest()}\n" for t in texts)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, lines.encode("ascii"))
        finally:
            os.close(fd)

    # embed/embed_queries themselves, not _embed: the inner vectors are already unit length, and
    # normalising them again could change their last bits
    def embed(self, texts: list[str]) -> np.ndarray:
        texts = list(texts)
        if texts:
            self._log(texts, "passage")
        return self.embedder.embed(texts)

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        texts = list(texts)
        if texts:
            self._log(texts, "query" if self.embedder.asymmetric else "passage")
        return self.embedder.embed_queries(texts)

    def _embed(self, texts: list[str]) -> np.ndarray:
        return self.embed(texts)


def read_log(path: str) -> tuple[Counter[tuple[str, str]], set[int]]:
    """``(times each (mode, text digest) was embedded, the pids that embedded)`` from a log."""
    counts: Counter[tuple[str, str]] = Counter()
    pids: set[int] = set()
    if not os.path.exists(path):
        return counts, pids
    with open(path, encoding="ascii") as f:
        for n, line in enumerate(f, 1):
            parts = line.rstrip("\n").split("\t")
            if len(parts) != 3:
                raise ValueError(f"{path}:{n}: expected '<pid>\\t<mode>\\t<sha256>', got {line!r}")
            pids.add(int(parts[0]))
            counts[(parts[1], parts[2])] += 1
    return counts, pids
