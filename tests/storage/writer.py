"""A writer process for the crash and two-writer tests (run as ``python writer.py KIND PATH N TAG``).

Waits for the file ``$WRITER_GO`` to exist (so two writers start together), then makes N separate writes
to the store of KIND at PATH, printing ``ok <i>`` (flushed) after each write returns.
"""

from __future__ import annotations

import os
import sys
import time


def main() -> None:
    kind, path, n, tag = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    go = os.environ["WRITER_GO"]
    while not os.path.exists(go):
        time.sleep(0.005)
    if kind == "sqlite_kv":
        from memlab.storage import SQLiteKeyValueStore
        store = SQLiteKeyValueStore(path)
        write = lambda i: store.save([{"tag": tag, "i": i}])  # noqa: E731
    elif kind == "jsonl_kv":
        from memlab.storage import JsonlKeyValueStore
        store = JsonlKeyValueStore(path)
        pad = "x" * int(os.environ.get("WRITER_PAD", "0"))
        write = lambda i: store.save([{"tag": tag, "i": i, "pad": pad}, {"tag": tag, "i": i, "half": 2}])  # noqa: E731
    elif kind == "response_cache":
        from memlab.llm import Completion, ResponseCache
        cache = ResponseCache(path)
        write = lambda i: cache.put("m", [{"role": "user", "content": f"{tag}{i}"}], {}, Completion(f"a{i}"))  # noqa: E731
    elif kind == "embedding_cache":
        from memlab.embeddings import HashingEmbedder
        from memlab.embeddings.cache import CachedEmbedder
        cached = CachedEmbedder(HashingEmbedder(n_features=16), path)
        write = lambda i: cached.embed([f"{tag} text {i}"])  # noqa: E731
    elif kind == "long_term":
        from memlab.memories.layered.long_term import LongTermMemory
        memory = LongTermMemory(path)
        write = lambda i: memory.add(f"{tag} fact number {i}", memory_id=f"{tag}-{i}")  # noqa: E731
    elif kind == "chroma":
        import numpy as np

        from memlab.storage import ChromaVectorStore
        store = ChromaVectorStore(path=path, collection="two-writers", dim=4)
        rng = np.random.default_rng(abs(hash(tag)) % 1000)
        write = lambda i: store.add([f"{tag}-{i}"], rng.random((1, 4)) + 0.1)  # noqa: E731
    else:
        raise SystemExit(f"unknown kind {kind}")
    for i in range(n):
        write(i)
        print(f"ok {i}", flush=True)


if __name__ == "__main__":
    main()
