"""Sweeps on a Dask cluster, every worker reading one embedding store.

``sweep(..., client=...)`` (Python), ``[run] scheduler = "tcp://host:8786"`` in a sweep file, or
``MEMLAB_DASK_SCHEDULER`` in the environment run a sweep's grid points on an existing Dask
cluster (``docs/distributed.md``), in three steps:

1. **pre-pass** (``memlab.embeddings.prefill.fill``): the distinct turn texts (as passages) and
   questions (as queries) of the dataset, for every ``CachedEmbedder`` model of the points
   still to compute, are embedded into the store (``[run] embedding_store``,
   ``$MEMLAB_EMBEDDING_STORE``, or a folder under the cache directory), one task per fixed
   partition of the missing texts: each distinct text is embedded once per cluster, and a
   text already stored (by an earlier run, of any sweep) not at all;
2. **replay**: one task per dialogue and per point, or per group of points that differ only in
   query-time parameters (``memlab.eval.sweep._shared_groups``: observed once, every point asked
   at each probe, as ``replay_variants`` does in one process). The task replays a clone of the
   point's strategy inside ``reading(store)``: its embedders answer from the memory-mapped
   store and do not call their model for any text of the dataset;
3. **tables**: the client puts each point's rows in dataset order and computes the metrics and
   configuration columns exactly as ``replay`` does.

Each row is computed by the same function on a clone configured the same, and the store's
vectors are the model's; so the table equals a single-process sweep's bit for bit (except
``latency_ms``, wall time), for any number of workers, provided the model gives a text the
same vector whatever batch it is embedded in (true of the hashing embedder; a padded
transformer batch may differ in the last bits, and then the store, filled in partitions fixed
by content, still makes every cluster's run equal to every other's).
"""

from __future__ import annotations

import os
import socket
from typing import Any, Mapping, Sequence

import pandas as pd

from ..base import ConfigError
from ..embeddings.prefill import fill
from ..embeddings.store import default_store_root, reading
from ..strategy import Strategy
from .dataset import Dataset, Dialogue

SCHEDULER_ENV = "MEMLAB_DASK_SCHEDULER"


def scheduler_address(given: str | None = None) -> str | None:
    """The scheduler to use: ``given`` (``[run] scheduler``), else ``$MEMLAB_DASK_SCHEDULER``, else None."""
    address = given if given is not None else os.environ.get(SCHEDULER_ENV) or None
    if address is not None and (not isinstance(address, str) or not address.strip()):
        raise ConfigError(f"scheduler must be a Dask scheduler address such as 'tcp://host:8786', got {address!r}")
    return address


def connect(address: str, timeout: float = 30.0) -> Any:
    """A ``dask.distributed.Client`` of the scheduler at ``address``; a clear error when unreachable."""
    try:
        from dask.distributed import Client
    except ImportError as exc:  # pragma: no cover - dask is in the dev extra
        raise ConfigError(f"scheduler {address!r}: a Dask cluster needs dask.distributed "
                          f"(pip install 'dask[distributed]'): {exc}") from None
    try:
        _probe(address, timeout)
        return Client(address, timeout=timeout)
    except (OSError, TimeoutError) as exc:
        raise ConfigError(f"scheduler {address!r} ({SCHEDULER_ENV} or [run] scheduler): expected a reachable "
                          f"Dask scheduler, got {type(exc).__name__}: {exc}") from None


def _probe(address: str, timeout: float) -> None:
    """Open and close a TCP connection to a ``tcp://host:port`` (or ``host:port``) address.

    Why: a ``Client`` that fails to connect has already started its event-loop thread and
    never stops it, so every unreachable address would leave a thread running in the caller's
    process. Other schemes (tls, inproc, ucx) are left to the ``Client``."""
    scheme, _, rest = address.rpartition("://")
    if scheme not in ("", "tcp"):
        return
    host, sep, port = rest.rpartition(":")
    if not sep or not port.isdigit():
        return  # not host:port; the Client's own parser reports it
    with socket.create_connection((host.strip("[]") or "localhost", int(port)), timeout=timeout):
        pass


def _replay_unit(strategy: Strategy, dialogue: Dialogue, k_max: int, budget: int,
                 variants: list[dict[str, Any]] | None, store: str) -> Any:
    """A worker task: one dialogue replayed on a clone, embeddings read from the store."""
    from .replay import replay_dialogue

    with reading(store):
        return replay_dialogue(strategy.clone(scope=dialogue.id), dialogue, k_max, budget=budget,
                               variants=variants)


def cluster_frames(points: Sequence[tuple[dict[str, Any], str, str, Strategy]], todo: Sequence[int],
                   dataset: Dataset, client: Any, store: str | None = None, *, ks: Sequence[int] = (1, 5, 10),
                   k_max: int = 10, budgets: Sequence[int] = (),
                   groups: Mapping[int, list[int]] | None = None) -> dict[int, pd.DataFrame]:
    """``replay``'s table for each point index in ``todo``, computed on ``client``'s cluster
    (module docstring); ``store`` is the embedding store's folder (default
    ``default_store_root()``), which every worker must reach at that path. ``groups``: for
    an index into ``todo``, the indices (into ``todo``) of the points observed with it
    (``memlab.eval.sweep._shared_groups`` of the selected points); None: each alone."""
    from .replay import (_FailureLimit, _check_budget, _frame, default_max_failures, variant_params)

    store = os.path.abspath(store or default_store_root())
    budgets = sorted({_check_budget(b) for b in budgets})
    k_max = max(k_max, max(ks, default=1))
    budget = max(budgets, default=0)
    selected = [points[n] for n in todo]
    if not selected:
        return {}
    dialogues = list(dataset.dialogues)
    texts = list(dict.fromkeys(t.retrieval_text for d in dialogues for t in d.turns()))
    queries = list(dict.fromkeys(p.query for d in dialogues for p in d.probes))
    fill(store, [built for _, _, _, built in selected], texts, queries, client=client)

    groups = groups or {}
    on_cluster = client.scatter(dialogues)  # each dialogue travels once, whatever the number of points
    units: list[tuple[tuple[int, ...], bool, list[Any]]] = []
    seen: set[tuple[int, ...]] = set()
    for i in range(len(selected)):
        members = tuple(groups.get(i, [i]))
        if members in seen:
            continue
        seen.add(members)
        grouped = len(members) > 1
        params = variant_params([selected[j][3] for j in members]) if grouped else None
        futures = [client.submit(_replay_unit, selected[members[0]][3], d, k_max, budget, params, store, pure=False)
                   for d in on_cluster]
        units.append((members, grouped, futures))
    rows: list[list[dict[str, Any]]] = [[] for _ in selected]
    n_probes = sum(len(d.probes) for d in dialogues)
    for members, grouped, futures in units:
        failed = _FailureLimit(default_max_failures(n_probes))  # as replay / replay_variants count them
        for result in client.gather(futures):
            per_member = result if grouped else [result]
            for j, part in zip(members, per_member):
                rows[j].extend(part)
                for row in part:
                    if row["error"] is not None:
                        failed(f"dialogue {row['dialogue_id']!r}, probe {row['probe_id']!r}: {row['error']}")
    return {todo[i]: _frame(rows[i], built, dataset, point_label, ks, budgets, None, False)
            for i, (_, _, point_label, built) in enumerate(selected)}
