"""The pre-pass that fills a shared embedding store (``memlab.embeddings.store``): every
text a run will embed, once per cluster, in partitions fixed by content."""

from __future__ import annotations

import hashlib
import os
from typing import Any, Iterable, Sequence

import numpy as np

from ..base import MemlabError
from .base import Embedder
from .cache import CachedEmbedder
from .store import EmbeddingStore, model_digest

#: Texts per pre-pass task: large enough that a model batches well and a task's overhead is
#: small, small enough that a sweep's texts spread over the workers.
PARTITION_SIZE = 2048


def cached_embedders(components: Iterable[Any]) -> list[CachedEmbedder]:
    """The distinct (by model digest) ``CachedEmbedder`` parts of ``components`` (strategies)."""
    out: dict[str, CachedEmbedder] = {}
    for component in components:
        for part in [component, *component.components()]:
            if isinstance(part, CachedEmbedder):
                out.setdefault(model_digest(part.embedder), part)
    return list(out.values())


def _embed_partition(root: str, embedder: Embedder, keys: list[str], texts: list[str],
                     queries: list[bool]) -> tuple[str, int]:
    """A pre-pass task: embed one partition (passages, then queries) and write its file. (The
    models memlab names load once per process, whatever the number of tasks.)"""
    vectors = np.zeros((len(keys), embedder.dim), dtype="<f4")
    for as_query in (False, True):
        rows = [i for i, q in enumerate(queries) if q == as_query]
        if rows:
            embed = embedder.embed_queries if as_query else embedder.embed
            vectors[rows] = np.asarray(embed([texts[i] for i in rows]), dtype="<f4")
    path = EmbeddingStore(root).write(embedder, keys, vectors)
    return path.name, len(keys)


def fill(root: str | os.PathLike[str], strategies: Iterable[Any], texts: Sequence[str],
         queries: Sequence[str] = (), client: Any = None, partition_size: int = PARTITION_SIZE) -> int:
    """Embed into the store at ``root`` every text (as a passage) and query (in query mode)
    that it lacks, for every ``CachedEmbedder`` model of ``strategies``; returns the number of
    texts embedded.

    Missing keys are sorted and cut into partitions of ``partition_size``; with a Dask
    ``client`` each partition is one task (its key names the partition, so the scheduler runs
    it once), else they run here one after another. Either way each text is embedded once,
    by a partition that depends only on what the store lacked (not on the number of
    workers), and is never embedded again: later runs read the vector stored.
    """
    if isinstance(partition_size, bool) or not isinstance(partition_size, int) or partition_size < 1:
        raise MemlabError(f"embedding store fill: partition_size must be a positive integer, got {partition_size!r}")
    root = os.path.abspath(root)
    store = EmbeddingStore(root)
    tasks = []
    for cached in cached_embedders(strategies):
        present = store.keys(cached.embedder)
        identity = cached.identity()
        wanted: dict[str, tuple[str, bool]] = {}
        for items, as_query in ((texts, False), (queries, True)):
            for text in dict.fromkeys(items):
                key = cached.key(text, query=as_query, identity=identity)
                if bytes.fromhex(key) not in present:
                    # a symmetric model keys a query like a passage: one vector for both
                    wanted.setdefault(key, (text, as_query and cached.embedder.asymmetric))
        ordered = sorted(wanted)
        for start in range(0, len(ordered), partition_size):
            part = ordered[start:start + partition_size]
            tasks.append((cached.embedder, part, [wanted[k][0] for k in part], [wanted[k][1] for k in part]))
    if client is None:
        done = [_embed_partition(root, *task) for task in tasks]
    else:
        # each embedder travels to the cluster once, not once per partition
        shipped = {id(task[0]): task[0] for task in tasks}
        remote = {k: client.scatter(e, hash=False) for k, e in shipped.items()}
        futures = [client.submit(_embed_partition, root, remote[id(task[0])], *task[1:],
                                 key="memlab-embed-" + hashlib.sha256("".join(task[1]).encode()).hexdigest()[:24])
                   for task in tasks]
        done = client.gather(futures)
    return sum(n for _, n in done)
