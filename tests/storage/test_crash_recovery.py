"""Crash recovery and concurrent writers, with real processes.

- SIGKILL during writes (``MEMLAB_CRASH_TRIALS`` trials per store, 2 by default; set it to
  20 to repeat the issue's probe): every write a process acknowledged is there on reopen,
  and the store opens.
- A torn last line of a JSON-lines store is cut off and reported; the complete lines stay.
- Two processes writing one SQLite file (kv store, response cache, embedding cache,
  long-term store) or one chroma collection at once: no error, nothing lost, and chroma's
  ordering keys are unique.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memlab.storage import JsonlKeyValueStore, SQLiteKeyValueStore

WRITER = Path(__file__).with_name("writer.py")
REPO = Path(__file__).resolve().parents[2]
TRIALS = int(os.environ.get("MEMLAB_CRASH_TRIALS", "2"))


def _start(kind: str, path: Path, n: int, tag: str, **env: str) -> subprocess.Popen:
    environ = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
               "WRITER_GO": _go_file(path), **env}
    return subprocess.Popen([sys.executable, str(WRITER), kind, str(path), str(n), tag],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environ)


def _go_file(path: Path) -> str:
    return str(path.parent.parent / f"{path.parent.name}-{path.name}.go")  # outside the store's folder


def _go(path: Path) -> None:
    Path(_go_file(path)).write_text("")


# -- torn last line ---------------------------------------------------------------------------

def test_a_torn_last_line_is_dropped_and_reported_and_complete_lines_kept(tmp_path):
    path = tmp_path / "h.jsonl"
    path.write_bytes(b'{"a": 1}\n{"b": 2}\n{"c": "half writ')
    with pytest.warns(RuntimeWarning, match=r"dropped a torn last line \(line 3, 16 bytes\).*kept the 2"):
        store = JsonlKeyValueStore(path)
    assert store.load() == [{"a": 1}, {"b": 2}]
    assert store.recovered == {"line": 3, "bytes": 16, "dropped": '{"c": "half writ', "kept_records": 2}
    assert path.read_bytes() == b'{"a": 1}\n{"b": 2}\n'  # cut, so appends stay valid
    store.save([{"d": 4}])
    again = JsonlKeyValueStore(path)
    assert again.load() == [{"a": 1}, {"b": 2}, {"d": 4}] and again.recovered is None


def test_a_torn_multibyte_character_is_a_torn_line_too(tmp_path):
    path = tmp_path / "h.jsonl"
    path.write_bytes(b'{"a": 1}\n{"t": "\xe4\xbd')  # cut inside a UTF-8 character
    with pytest.warns(RuntimeWarning):
        assert JsonlKeyValueStore(path).load() == [{"a": 1}]


def test_a_bad_line_before_the_end_is_still_an_error(tmp_path):
    from memlab.base import MemlabError

    path = tmp_path / "h.jsonl"
    path.write_bytes(b'{"a": 1}\n{"b": \n{"c": 3}')
    with pytest.raises(MemlabError, match="line 2: not valid JSON"):
        JsonlKeyValueStore(path)
    assert path.read_bytes() == b'{"a": 1}\n{"b": \n{"c": 3}'  # untouched


# -- SIGKILL during writes ----------------------------------------------------------------------

def _kill_after(proc: subprocess.Popen, acks_wanted: int, timeout: float = 60.0) -> int:
    """Read acknowledgements until ``acks_wanted``, SIGKILL, return how many were acknowledged."""
    acked = 0
    deadline = time.monotonic() + timeout
    while acked < acks_wanted and time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        acked += line.startswith("ok ")
    proc.send_signal(signal.SIGKILL)
    rest = proc.stdout.read()  # (not communicate(): it would skip lines this reader buffered)
    proc.wait(timeout=30)
    proc.stdout.close()
    proc.stderr.close()
    return acked + sum(line.startswith("ok ") for line in rest.splitlines())


@pytest.mark.parametrize("kind", ["jsonl_kv", "sqlite_kv"])
def test_sigkill_during_writes_loses_no_acknowledged_write(tmp_path, kind):
    for trial in range(TRIALS):
        path = tmp_path / f"{kind}-{trial}.db"
        proc = _start(kind, path, 100_000, "k", WRITER_PAD="20000")
        _go(path)
        acked = _kill_after(proc, acks_wanted=20 + 37 * trial)
        assert proc.returncode == -signal.SIGKILL
        store = JsonlKeyValueStore(path) if kind == "jsonl_kv" else SQLiteKeyValueStore(path)
        per_save = 2 if kind == "jsonl_kv" else 1  # the jsonl writer saves two records at a time
        expected = [i for i in range(acked + 1) for _ in range(per_save)]
        indices = [r["i"] for r in store.load()]
        # every acknowledged save is there, in order; beyond them only part of the save under way
        assert len(indices) >= per_save * acked
        assert indices == expected[:len(indices)]
        store.close()


# -- two writers at once --------------------------------------------------------------------

N = 150


def _two_writers(kind: str, path: Path, n: int = N) -> None:
    procs = [_start(kind, path, n, tag) for tag in ("A", "B")]
    time.sleep(0.3)  # let both import and wait on the go file
    _go(path)
    for proc in procs:
        out, err = proc.communicate(timeout=240)
        assert proc.returncode == 0, err[-2000:]
        assert out.count("ok ") == n


def _count(path: Path, sql: str) -> int:
    with sqlite3.connect(path) as conn:
        return conn.execute(sql).fetchone()[0]


def test_two_processes_write_one_sqlite_kv_store(tmp_path):
    path = tmp_path / "kv.sqlite"
    _two_writers("sqlite_kv", path)
    records = SQLiteKeyValueStore(path).load()
    for tag in "AB":
        assert [r["i"] for r in records if r["tag"] == tag] == list(range(N))
    assert _count(path, "PRAGMA journal_mode") == "wal"


def test_two_processes_write_one_response_cache(tmp_path):
    from memlab.llm import ResponseCache

    path = tmp_path / "cache" / "responses.sqlite3"  # the folder does not exist yet
    _two_writers("response_cache", path)
    assert len(ResponseCache(str(path))) == 2 * N
    assert _count(path, "PRAGMA journal_mode") == "wal"


def test_two_processes_write_one_embedding_cache(tmp_path):
    path = tmp_path / "emb.sqlite3"
    _two_writers("embedding_cache", path)
    assert _count(path, "SELECT COUNT(*) FROM embeddings") == 2 * N
    assert _count(path, "PRAGMA journal_mode") == "wal"


def test_two_processes_write_one_long_term_store(tmp_path):
    path = tmp_path / "ltm.sqlite3"
    _two_writers("long_term", path, n=60)
    assert _count(path, "SELECT COUNT(*) FROM memories") == 120
    assert _count(path, "SELECT COUNT(DISTINCT seq) FROM memories") == 120
    assert _count(path, "PRAGMA journal_mode") == "wal"


@pytest.mark.slow  # two chromadb clients start in two processes: ~25 s on a loaded machine
def test_two_processes_write_one_chroma_collection_with_unique_order_keys(tmp_path):
    from memlab.storage import ChromaVectorStore
    from memlab.storage.chroma import SEQ_KEY

    path = tmp_path / "chroma"
    _two_writers("chroma", path, n=15)
    store = ChromaVectorStore(path=str(path), collection="two-writers", dim=4)
    res = store._col().get(include=["metadatas"])
    seqs = [md[SEQ_KEY] for md in res["metadatas"]]
    assert len(res["ids"]) == 30
    assert len(set(seqs)) == 30
    for tag in "AB":  # each process's own writes keep their order
        mine = sorted((md[SEQ_KEY], id_) for id_, md in zip(res["ids"], res["metadatas"]) if id_.startswith(tag))
        assert [id_ for _, id_ in mine] == [f"{tag}-{i}" for i in range(15)]
    assert len(store.query([1.0, 1.0, 1.0, 1.0], k=100)) == 30  # the vector index has them all
    store.close()
