"""Candidates for the embedding store every worker of a run shares: write and read speed.

    python bench/bench_embedding_store.py [--n 20000] [--dim 384] [--chroma-n 5000]

Each candidate stores ``--n`` seeded random unit float32 vectors under sha256 keys (as
``CachedEmbedder`` keys them), in parts of ``memlab.embeddings.prefill.PARTITION_SIZE`` (as
the pre-pass writes them), then a fresh reader (new object, new connection: what a worker
does) reads every vector back in one call, and 2,000 vectors one key per call (what a replay
does for a query). Figures are microseconds per vector and ratios to the Arrow store, all
on this machine's local disk (shared storage adds its own latency to each file opened or
request made, alike for every candidate; only SQLite's locking is unsafe there):

- ``arrow``: ``memlab.embeddings.store.EmbeddingStore`` (Arrow IPC files, memory-mapped);
- ``parquet``: the same tables as Parquet files (snappy), read with ``pyarrow.parquet``;
- ``sqlite``: the ``CachedEmbedder`` table (key TEXT PRIMARY KEY, vector BLOB) in one
  WAL file, read with ``SELECT ... IN`` in chunks of 500;
- ``chroma``: a chromadb server (``chroma run``, localhost) reached by ``HttpClient``,
  ``--chroma-n`` vectors (it is slow), ``get(ids=...)`` in batches of 500.

Measured 2026-12-04, 4 runs, 2 cores shared with a background job (load 6.5-7.2), n=20000,
dim=384, chroma n=5000; microseconds per vector, range over the runs (ratio to arrow):

- read all, fresh reader: arrow 3.3-6.4; parquet 10.7-18.4 (2.1-3.2x); sqlite 10.2-13.0
  (1.8-3.5x); chroma 93-159 (19-36x);
- one key per call: arrow 1.4-3.6; parquet 0.7 (a plain dict once every file is decoded:
  no per-call work but the lookup); sqlite 6.9-17.6 (1.9-9.5x, a query per call); chroma
  1,680-2,700 (470-1,970x, an HTTP request per call);
- write: arrow, parquet and sqlite 29-40; chroma 540-915;
- bytes per vector: arrow 1,568, parquet 1,881, sqlite 2,135, chroma 2,174.

No timed assertion anywhere: the figures are for choosing.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memlab.embeddings.hashing import HashingEmbedder  # noqa: E402  (names a model folder only)
from memlab.embeddings.prefill import PARTITION_SIZE  # noqa: E402
from memlab.embeddings.store import EmbeddingStore, model_digest  # noqa: E402

SINGLE = 2000


def data(n: int, dim: int) -> tuple[list[str], np.ndarray]:
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((n, dim)).astype("<f4")
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    keys = [hashlib.sha256(f"text {i}".encode()).hexdigest() for i in range(n)]
    return keys, vectors


def parts(n: int) -> list[slice]:
    return [slice(s, min(s + PARTITION_SIZE, n)) for s in range(0, n, PARTITION_SIZE)]


def bench_arrow(folder: Path, keys: list[str], vectors: np.ndarray) -> tuple[float, float, float]:
    model = HashingEmbedder(n_features=vectors.shape[1])
    t0 = time.perf_counter()
    for p in parts(len(keys)):
        EmbeddingStore(folder).write(model, keys[p], vectors[p])
    write = time.perf_counter() - t0
    t0 = time.perf_counter()
    got = EmbeddingStore(folder).lookup(model, keys)
    total = float(sum(float(v[0]) for v in got.values()))  # touch each vector
    read_all = time.perf_counter() - t0
    reader = EmbeddingStore(folder)
    reader.lookup(model, keys[:1])
    digest = model_digest(model)  # as CachedEmbedder passes it: the model's identity costs alike for any store
    t0 = time.perf_counter()
    for k in keys[:SINGLE]:
        reader.lookup(model, [k], digest)
    single = time.perf_counter() - t0
    assert len(got) == len(keys) and np.isfinite(total)
    return write, read_all, single


def bench_parquet(folder: Path, keys: list[str], vectors: np.ndarray) -> tuple[float, float, float]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder.mkdir()
    dim = vectors.shape[1]
    t0 = time.perf_counter()
    for n, p in enumerate(parts(len(keys))):
        table = pa.table({"key": pa.array([bytes.fromhex(k) for k in keys[p]], type=pa.binary(32)),
                          "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors[p].reshape(-1)), dim)})
        pq.write_table(table, folder / f"part-{n}.parquet")
    write = time.perf_counter() - t0

    def load() -> dict[bytes, np.ndarray]:
        index = {}
        for path in sorted(folder.iterdir()):
            table = pq.read_table(path)
            matrix = table.column("vector").combine_chunks().flatten().to_numpy().reshape(-1, dim)
            keys = table.column("key").combine_chunks()
            raw = keys.buffers()[1].to_pybytes()[keys.offset * 32:(keys.offset + len(keys)) * 32]
            for row in range(len(keys)):
                index[raw[32 * row:32 * row + 32]] = matrix[row]
        return index

    t0 = time.perf_counter()
    index = load()
    got = {k: index[bytes.fromhex(k)] for k in keys}
    total = float(sum(float(v[0]) for v in got.values()))
    read_all = time.perf_counter() - t0
    index = load()
    t0 = time.perf_counter()
    for k in keys[:SINGLE]:  # the same per-call work as the Arrow store's lookup
        raw = [bytes.fromhex(k)]
        any(r not in index for r in raw)
        {k: index[r] for r in raw}
    single = time.perf_counter() - t0
    assert np.isfinite(total)
    return write, read_all, single


def bench_sqlite(folder: Path, keys: list[str], vectors: np.ndarray) -> tuple[float, float, float]:
    from memlab.sqlite import connect

    folder.mkdir()
    path = str(folder / "embeddings.sqlite3")

    def setup(conn: sqlite3.Connection) -> None:
        with conn:
            conn.execute("CREATE TABLE IF NOT EXISTS embeddings (key TEXT PRIMARY KEY, vector BLOB NOT NULL)")

    conn = connect(path, setup=setup)
    t0 = time.perf_counter()
    for p in parts(len(keys)):
        with conn:
            conn.executemany("INSERT OR REPLACE INTO embeddings (key, vector) VALUES (?, ?)",
                             [(k, v.tobytes()) for k, v in zip(keys[p], vectors[p])])
    write = time.perf_counter() - t0
    conn.close()

    def read(conn: sqlite3.Connection, wanted: list[str]) -> dict[str, np.ndarray]:
        found = {}
        for s in range(0, len(wanted), 500):
            chunk = wanted[s:s + 500]
            marks = ",".join("?" * len(chunk))
            for key, blob in conn.execute(f"SELECT key, vector FROM embeddings WHERE key IN ({marks})", chunk):
                found[key] = np.frombuffer(blob, dtype="<f4")
        return found

    t0 = time.perf_counter()
    conn = connect(path, setup=setup)
    got = read(conn, keys)
    total = float(sum(float(v[0]) for v in got.values()))
    read_all = time.perf_counter() - t0
    t0 = time.perf_counter()
    for k in keys[:SINGLE]:
        read(conn, [k])
    single = time.perf_counter() - t0
    conn.close()
    assert len(got) == len(keys) and np.isfinite(total)
    return write, read_all, single


def bench_chroma(folder: Path, keys: list[str], vectors: np.ndarray) -> tuple[float, float, float]:
    import chromadb
    from chromadb.config import Settings

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    chroma = Path(sys.executable).with_name("chroma")
    server = subprocess.Popen([str(chroma), "run", "--path", str(folder), "--host", "localhost", "--port", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        client = None
        for _ in range(300):
            try:
                client = chromadb.HttpClient(host="localhost", port=port,
                                             settings=Settings(anonymized_telemetry=False))
                client.heartbeat()
                break
            except Exception:
                time.sleep(0.1)
        if client is None:
            raise RuntimeError(f"chroma server on port {port} did not start")
        col = client.create_collection("embeddings", embedding_function=None)
        t0 = time.perf_counter()
        for p in parts(len(keys)):
            for s in range(p.start, p.stop, 500):
                e = min(s + 500, p.stop)
                col.add(ids=keys[s:e], embeddings=vectors[s:e])
        write = time.perf_counter() - t0
        reader = chromadb.HttpClient(host="localhost", port=port, settings=Settings(anonymized_telemetry=False))
        t0 = time.perf_counter()
        rcol = reader.get_collection("embeddings")
        got = {}
        for s in range(0, len(keys), 500):
            out = rcol.get(ids=keys[s:s + 500], include=["embeddings"])
            got.update(zip(out["ids"], out["embeddings"]))
        read_all = time.perf_counter() - t0
        n_single = min(SINGLE, 200)
        t0 = time.perf_counter()
        for k in keys[:n_single]:
            rcol.get(ids=[k], include=["embeddings"])
        single = (time.perf_counter() - t0) * SINGLE / n_single
        assert len(got) == len(keys)
        return write, read_all, single
    finally:
        server.terminate()
        server.wait(10)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--chroma-n", type=int, default=5000, help="vectors for chroma (0: skip)")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, fn, n in (("arrow", bench_arrow, args.n), ("parquet", bench_parquet, args.n),
                            ("sqlite", bench_sqlite, args.n), ("chroma", bench_chroma, args.chroma_n)):
            if n <= 0:
                continue
            keys, vectors = data(n, args.dim)
            folder = Path(tmp) / name
            write, read_all, single = fn(folder, keys, vectors)
            size = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())
            rows.append((name, n, write / n * 1e6, read_all / n * 1e6, single / SINGLE * 1e6, size / n))
            shutil.rmtree(folder, ignore_errors=True)
    base = {r[0]: r for r in rows}["arrow"]
    print(f"{'store':8} {'n':>6} {'write us/vec':>13} {'read all us/vec':>16} {'x arrow':>8} "
          f"{'one key us':>11} {'x arrow':>8} {'bytes/vec':>10}")
    for name, n, w, r, s, b in rows:
        print(f"{name:8} {n:6d} {w:13.1f} {r:16.2f} {r / base[3]:8.1f} {s:11.1f} {s / base[4]:8.1f} {b:10.0f}")
    print(f"(cpu count {os.cpu_count()}, load {os.getloadavg()[0]:.2f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
