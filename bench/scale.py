"""Streaming replay at growing length: does a strategy's cost grow with the work, not faster?

    python bench/scale.py [--sizes 1000,10000,100000] [--strategies bm25,window] [--budget 240] [--probes 200]
    python bench/scale.py --workload beam-concat [--tokens 10000,100000,1000000,10000000] \
        [--strategies bm25,bm25_plus,hybrid_plus,layered] [--output bench/results/scale_tokens.json]
    python bench/scale.py --workload cycled-sessions --sizes 2000,8000,32000 --strategies bm25_plus,longterm \
        [--output bench/results/scale_cycled_sessions.json]

Workloads (``--workload``), one synthetic dialogue per size, built from LoCoMo's turns (all
ten conversations, in order) cycled to N turns one minute apart (the shipped datasets' turns
when LoCoMo is absent; the script says so on stderr):

- ``every-10th`` (default): one session; a probe (a LoCoMo question, cycled) after every
  10th turn, or ``--probes`` > 0 probes spread evenly; no evidence. Replayed by
  ``memlab.eval.replay_dialogue``.
- ``cycled-sessions`` (a reviewer's workload): sessions of ``SESSION_TURNS`` (50) turns,
  ``--probes`` probes (default 200) spread evenly (after turns N/p - 1, 2N/p - 1, ...,
  N - 1), each with the turn ``EVIDENCE_BACK`` (5) turns before it as evidence, replayed by
  ``memlab.eval.replay`` (metrics, session deepening and all) exactly as an evaluation
  does. A session boundary every 50 turns is what exposes a neighbour lookup that scans
  back to the previous record of the same session: the first turns of a session have none.

- ``beam-concat`` (issue 33, "cost that grows gently"): sizes are tokens (``--tokens``,
  default 10k, 30k, 100k, 300k, 1M, 3M, 10M) and the history is real: BEAM's conversations
  (100K 1-20, 500K 1-35, then the 9 obtainable 1M ones, read by ``memlab.eval.loaders.beam``
  with bench/bench_beam.py's options) joined end to end into one dialogue until it holds N
  tokens (memlab's ``TiktokenCounter`` on each message; the message that reaches N is the
  last kept), with fresh unique ids (``<conversation>/<id>``), each conversation moved in time
  to start a day after the previous one ends, and each included conversation's questions
  whose evidence messages are all in the history, asked after the last message (scored like
  ``bench_beam.py``'s; BEAM's 28M tokens here reach past 10M, so the 10M point is such a
  concatenation: BEAM's own 10M set is not on this machine). Strategies (default ``bm25``,
  ``bm25_plus``, ``hybrid_plus``, ``layered``) run without a model: ``hybrid_plus`` and
  ``layered`` with the offline hashing embedder, ``layered``'s LLM steps by the
  deterministic OfflineLLM (``BEAM_PARAMS``). Replayed by ``memlab.eval.replay``; per point:
  indexing (``observe``) seconds, each probe's search (its first, plain ``retrieve``) at p50
  and p95 and the replay's per-probe latency (search, deeper lists, context) at p50 and p95,
  recall@10, the resident memory the strategy holds after the replay (``held_mb``: resident
  memory with the strategy alive minus before the replay, the dataset already built) and the
  process's peak; per strategy the least-squares log-log slopes against the history's tokens
  of indexing time (the target is <= 1.1), replay time and memory held, and the memory held
  per million tokens (linear least squares). ``--output`` adds each strategy's
  ``config_hash`` and the machine's memory.

Each point runs in a fresh process, so peak memory is that point's own. Printed per strategy
and size: seconds, microseconds per turn, microseconds per append (``observe`` alone),
milliseconds per probe, peak resident memory, CPU seconds (the process's own: less moved than
wall time by other work on a shared machine); the log-log slope of total wall and CPU time
from the previous size, ``log(t2 / t1) / log(N2 / N1)``; then least-squares log-log slopes of total
time and of append time against N over every size (1.0 = linear). Retrieval strategies search every stored turn at each probe,
so their total grows like N^2 / 10 by construction; for exact vector search the script
also times memlab's ``NumpyVectorStore.query`` against the bare numpy limit (one matmul
and an argpartition over the same matrix) at each size.

A point whose predicted time (from the previous size, assuming the measured slope, at
least 1) exceeds ``--budget`` seconds is skipped and listed as such.

``--output FILE`` (``bench/results/<name>.json``) records this run alone, written atomically:
the workload and options, ``provenance`` (``memlab.eval.provenance.run_provenance`` with the
source dataset files as its data), the 1-minute load average at start and end, every point
and the slopes.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

from _common import ROOT, machine, peak_rss_mb, rss_mb, run_child, slope, table

STRATEGIES = ["window", "longterm", "bm25", "vector", "hybrid", "bm25_prf", "hybrid_decay", "layered", "bm25_plus",
              "full_context", "oracle", "camel_chat_history", "camel_longterm", "langchain_ensemble"]
PROBE_EVERY = 10
WORKLOADS = ("every-10th", "cycled-sessions", "beam-concat")
#: cycled-sessions: turns per session, probes by default, how far back each probe's evidence is
SESSION_TURNS = 50
CYCLED_PROBES = 200
EVIDENCE_BACK = 5


def source_files() -> tuple[list[Path], str]:
    """The dataset files whose turns are cycled (LoCoMo, else the shipped datasets) and a name."""
    from memlab.eval.dataset_files import dataset_files
    from memlab.eval.paths import locomo_path

    path = locomo_path()
    if path is not None:
        return [Path(path)], "locomo"
    return dataset_files(ROOT / "datasets"), "shipped"


def load_source():
    """(turns, questions) to cycle: LoCoMo's, or the shipped datasets' when LoCoMo is absent."""
    from memlab.eval import load_any

    files, name = source_files()
    if name != "locomo":
        print("LoCoMo not found (MEMLAB_LOCOMO or ../shared/datasets/locomo/locomo10.json): cycling the "
              f"turns of the shipped datasets ({', '.join(f.name for f in files)}) instead", file=sys.stderr)
        dialogues = [d for f in files for d in load_any(f).dialogues]
    else:
        dialogues = load_any(files[0], "locomo").dialogues
    source = [t for d in dialogues for t in d.turns()]
    questions = [p.query for d in dialogues for p in d.probes]
    return source, questions


def build_dialogue(n_turns: int, probes: int = 0):
    """LoCoMo turns cycled to ``n_turns`` (fresh ids, one minute apart), a probe every 10th turn, or
    ``probes`` > 0 probes spread evenly (after turns n/p - 1, 2n/p - 1, ..., n - 1)."""
    from memlab.eval.dataset import Dialogue, Probe, Session, Turn

    source, questions = load_source()
    start = source[0].timestamp
    turns = [Turn(id=f"t{i}", speaker=src.speaker, role=src.role, text=src.text, content=src.content,
                  timestamp=start + 60.0 * i, session_id="s0")
             for i, src in ((i, source[i % len(source)]) for i in range(n_turns))]
    after = (range(PROBE_EVERY - 1, n_turns, PROBE_EVERY) if probes <= 0
             else [(j + 1) * n_turns // probes - 1 for j in range(probes)])
    probes = [Probe(id=f"p{j}", after_turn=f"t{i}", query=questions[j % len(questions)], evidence=[])
              for j, i in enumerate(after)]
    return Dialogue(id="scale", sessions=[Session(id="s0", timestamp=start, turns=turns)], probes=probes)


def build_cycled_sessions(n_turns: int, probes: int = CYCLED_PROBES):
    """The ``cycled-sessions`` dataset: one dialogue of ``n_turns`` cycled turns (fresh ids, one
    minute apart) in sessions of ``SESSION_TURNS``; ``probes`` questions (cycled) spread evenly,
    after turns n/p - 1, 2n/p - 1, ..., n - 1, each with the turn ``EVIDENCE_BACK`` before its
    own as evidence (none when there is no such turn)."""
    from memlab.eval.dataset import Dataset, Dialogue, Probe, Session, Turn

    source, questions = load_source()
    start = source[0].timestamp
    sessions = []
    for first in range(0, n_turns, SESSION_TURNS):
        sid = f"s{first // SESSION_TURNS}"
        turns = [Turn(id=f"t{i}", speaker=src.speaker, role=src.role, text=src.text, content=src.content,
                      timestamp=start + 60.0 * i, session_id=sid)
                 for i, src in ((i, source[i % len(source)]) for i in range(first, min(n_turns, first + SESSION_TURNS)))]
        sessions.append(Session(id=sid, timestamp=turns[0].timestamp, turns=turns))
    probes = max(1, min(probes, n_turns))
    after = [(j + 1) * n_turns // probes - 1 for j in range(probes)]
    made = [Probe(id=f"p{j}", after_turn=f"t{i}", query=questions[j % len(questions)],
                  evidence=[f"t{i - EVIDENCE_BACK}"] if i >= EVIDENCE_BACK else [])
            for j, i in enumerate(after)]
    return Dataset(name="cycled-sessions", dialogues=[Dialogue(id="scale", sessions=sessions, probes=made)])


def exact_search_vs_limit(strategy, n_queries: int = 50, k: int = 10) -> dict[str, float] | None:
    """Per-query ms of the strategy's NumpyVectorStore.query and of bare numpy over its matrix."""
    import numpy as np

    from memlab.storage.vector import NumpyVectorStore

    parts = [strategy, *strategy.get_params(deep=True).values(), *vars(strategy).values()]
    parts += [c for p in parts if isinstance(p, (list, tuple)) for c in p]  # hybrid: its retrievers
    # a store given as a parameter, or the default one a retriever made for itself (``_store``)
    stores = [v for p in parts for v in (p, getattr(p, "_store", None)) if isinstance(v, NumpyVectorStore)]
    if not stores or len(stores[0]) == 0:
        return None
    store = stores[0]
    matrix = store._vectors  # the stored, normalised rows: the same matrix the limit searches
    rng = np.random.default_rng(0)
    queries = rng.standard_normal((n_queries, matrix.shape[1])).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)

    def limit(q):
        s = matrix @ q
        top = np.argpartition(-s, k)[:k]
        return top[np.argsort(-s[top])]

    best = {}
    for name, fn in (("limit", limit), ("store", lambda q: store.query(q, k))):
        fn(queries[0])
        runs = []
        for _ in range(3):
            t0 = time.perf_counter()
            for q in queries:
                fn(q)
            runs.append((time.perf_counter() - t0) / n_queries * 1000)
        best[name] = min(runs)
    for q in queries[:5]:  # the same top-k scores as the limit (cycled turns repeat vectors: ties)
        s = matrix @ q
        assert np.allclose([v for _, v in store.query(q, k)], s[limit(q)], atol=1e-6)
    return {"store_ms": best["store"], "limit_ms": best["limit"], "ratio": best["store"] / best["limit"]}


def one_cycled_sessions(name: str, n_turns: int, probes: int) -> dict:
    """One point of the ``cycled-sessions`` workload, replayed by ``memlab.eval.replay``."""
    from memlab import strategies
    from memlab.eval.replay import replay

    dataset = build_cycled_sessions(n_turns, probes)
    strategy = strategies.get(name)
    # one short replay first, so one-time costs (tokenizer tables, lazy imports) are not timed
    replay(strategy, build_cycled_sessions(2 * SESSION_TURNS, 10), k_max=10)
    base_mb = peak_rss_mb()
    observed = [0.0]
    # replay clones the strategy for each dialogue: the clone's observe is timed through its class
    cls = type(strategy)
    observe = cls.observe

    def timed_observe(self, record):
        t0 = time.perf_counter()
        observe(self, record)
        observed[0] += time.perf_counter() - t0

    cls.observe = timed_observe
    t0, c0 = time.perf_counter(), time.process_time()
    rows = replay(strategy, dataset, k_max=10)
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    cls.observe = observe
    return {"strategy": name, "turns": n_turns, "probes": len(rows), "seconds": seconds, "cpu_seconds": cpu,
            "us_per_turn": seconds / n_turns * 1e6, "append_us": observed[0] / n_turns * 1e6,
            "probe_ms": (seconds - observed[0]) / max(1, len(rows)) * 1000,
            "peak_mb": peak_rss_mb(), "base_mb": base_mb}


def one(name: str, n_turns: int, probes: int = 0, workload: str = "every-10th") -> dict:
    from memlab import strategies
    from memlab.eval.replay import replay_dialogue

    if workload == "cycled-sessions":
        return one_cycled_sessions(name, n_turns, probes if probes > 0 else CYCLED_PROBES)
    if workload == "beam-concat":
        return one_beam_concat(name, n_turns)  # the size is tokens here
    dialogue = build_dialogue(n_turns, probes)
    strategy = strategies.get(name)
    # one short replay first, so one-time costs (tokenizer tables, lazy imports) are not timed
    replay_dialogue(strategy, build_dialogue(100), k_max=10)
    base_mb = peak_rss_mb()
    observed = [0.0]
    observe = strategy.observe

    def timed_observe(record):
        t0 = time.perf_counter()
        observe(record)
        observed[0] += time.perf_counter() - t0

    strategy.observe = timed_observe  # replay_dialogue uses the strategy in place
    t0, c0 = time.perf_counter(), time.process_time()
    rows = replay_dialogue(strategy, dialogue, k_max=10)
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    out = {"strategy": name, "turns": n_turns, "probes": len(rows), "seconds": seconds, "cpu_seconds": cpu,
           "us_per_turn": seconds / n_turns * 1e6, "append_us": observed[0] / n_turns * 1e6,
           "probe_ms": (seconds - observed[0]) / max(1, len(rows)) * 1000,
           "peak_mb": peak_rss_mb(), "base_mb": base_mb}
    search = exact_search_vs_limit(strategy)
    if search is not None:
        out["exact_search"] = search
    return out


# -- beam-concat: BEAM conversations concatenated into one history of N tokens ---------------

#: beam-concat: the sizes read, in this order (each size's conversations in number order)
BEAM_SIZES = ("100K", "500K", "1M")
#: beam-concat: the loader's options (bench/bench_beam.py's: both roles, markers stripped)
BEAM_OPTIONS = {"roles": ("user", "assistant"), "strip_markers": True, "stale_original": True}
#: beam-concat: seconds between the last turn of one conversation and the first of the next
BEAM_GAP = 86400.0
#: beam-concat: the parameters a strategy runs with (no model: the offline hashing embedder, as
#: bench/bench_beam.py; layered's LLM steps by the deterministic OfflineLLM)
BEAM_PARAMS: dict[str, dict] = {"hybrid_plus": {"embedders": ["hashing"]},
                                "layered": {"llm": "offline", "embedder": "hashing"}}
#: beam-concat: the strategies and history lengths (tokens) run by default
BEAM_STRATEGIES = ("bm25", "bm25_plus", "hybrid_plus", "layered")
#: beam-concat: the warm-up's history (tokens), replayed untimed before each point
WARM_TOKENS = 20_000
BEAM_TOKENS = (10_000, 30_000, 100_000, 300_000, 1_000_000, 3_000_000, 10_000_000)


def beam_concat_protocol() -> dict:
    """What a beam-concat point depends on besides the strategy, its size and the data (recorded)."""
    return {"order": [f"{size} (conversations in number order)" for size in BEAM_SIZES],
            "loader_options": {k: list(v) if isinstance(v, tuple) else v for k, v in BEAM_OPTIONS.items()},
            "gap_seconds": BEAM_GAP, "token_counter": "memlab.tokens.TiktokenCounter (each message's text)",
            "probes": "each included conversation's questions whose evidence messages are all in the history, "
                      "asked after the last message; questions without evidence (abstention) are not asked",
            "k_max": 10,
            "concatenation": "one history of BEAM 100K, 500K and 1M conversations joined end to end with fresh "
                             "ids: the 10M point is such a concatenation, not BEAM's own 10M set (not on this "
                             "machine)"}


def beam_concat_config_hash(name: str, data_sha256: list[str]) -> str:
    """The configuration hash of strategy ``name`` as beam-concat runs it on files of these sha256s."""
    from memlab import strategies
    from memlab.eval.configuration import configuration_hash

    return configuration_hash(strategies.get(name, **BEAM_PARAMS.get(name, {})), data_sha256,
                              beam_concat_protocol())


def memory_total_mb() -> float | None:
    """This machine's memory (MemTotal of /proc/meminfo) in MiB; None where it cannot be read."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return None


def _beam_files(folder: Path) -> list[Path]:
    from memlab.eval.loaders.beam import conversation_files

    return conversation_files(folder)


def beam_folders() -> list[Path]:
    """BEAM's conversation folders in the fixed order of the haystack: 100K 1..20, 500K 1..35,
    1M (the 9 with a chat.json); exit 1 when BEAM is not beside the repository."""
    from memlab.eval.loaders.beam import conversation_folders
    from memlab.eval.paths import beam_path

    out: list[Path] = []
    for size in BEAM_SIZES:
        path = beam_path(size)
        if path is None:
            print(f"BEAM {size} not found: set MEMLAB_BEAM or put BEAM at ../shared/datasets/beam/{size}",
                  file=sys.stderr)
            raise SystemExit(1)
        out.extend(conversation_folders(str(path)))
    return out


def build_beam_concat(n_tokens: int):
    """The ``beam-concat`` dataset: one dialogue, BEAM conversations (``beam_folders`` order)
    concatenated until the history holds at least ``n_tokens`` tokens, counted as memlab counts
    them (``memlab.tokens.TiktokenCounter``, each message's text); the message that reaches the
    target is the last one kept. Ids are fresh and unique: ``<conversation>/<message id>`` for
    turns, ``<conversation>/<batch>`` for sessions, ``<conversation>/<question id>`` for probes.
    Each conversation is moved in time (every time shifted by one amount) to start
    ``BEAM_GAP`` after the previous one ends, so the history never goes back in time. A
    conversation's probes are kept when every one of their evidence messages is in the history
    (stale evidence outside it is dropped; probes without evidence, BEAM's unscored
    abstention questions, are not kept); all of them are asked after the last message.

    Returns (dataset, info): info holds ``history_tokens``, ``conversations`` (the ids read, the
    last possibly cut), ``probes_dropped`` (evidence outside the history) and the files read."""
    from memlab.eval.dataset import Dataset, Dialogue, Probe, Session, Turn
    from memlab.eval.loaders.beam import conversation_files, iter_beam
    from memlab.eval.loaders.checks import check_dataset
    from memlab.tokens import TiktokenCounter

    counter = TiktokenCounter()
    sessions: list = []
    probes: list = []
    total, dropped, clock = 0, 0, None
    used: list[str] = []
    files: list[Path] = []
    for folder in beam_folders():
        if total >= n_tokens:
            break
        (source,) = iter_beam(str(folder), **BEAM_OPTIONS)
        files.extend(conversation_files(folder))
        used.append(source.id)
        turns = source.turns()
        shift = 0.0 if clock is None else clock + BEAM_GAP - turns[0].timestamp
        kept: set[str] = set()
        for s in source.sessions:
            new = []
            for t in s.turns:
                if total >= n_tokens:
                    break
                total += counter.count(t.text)
                kept.add(t.id)
                new.append(Turn(id=f"{source.id}/{t.id}", speaker=t.speaker, role=t.role, text=t.text,
                                timestamp=t.timestamp + shift, session_id=f"{source.id}/{s.id}",
                                metadata=dict(t.metadata), content=t.content))
            if new:
                sessions.append(Session(id=f"{source.id}/{s.id}", timestamp=s.timestamp + shift, turns=new))
                clock = new[-1].timestamp
        for p in source.probes:
            if not p.evidence:
                continue
            if not set(p.evidence) <= kept:
                dropped += 1
                continue
            probes.append(Probe(id=f"{source.id}/{p.id}", after_turn=None, query=p.query,
                                evidence=[f"{source.id}/{e}" for e in p.evidence], answer=p.answer,
                                category=p.category, metadata=dict(p.metadata),
                                stale_evidence=[f"{source.id}/{e}" for e in p.stale_evidence if e in kept]))
    dialogue = Dialogue(id="beam-concat", sessions=sessions, probes=probes,
                        metadata={"conversations": used, "history_tokens": total})
    check_dataset([dialogue], "beam-concat")
    info = {"history_tokens": total, "conversations": used, "probes_dropped": dropped, "files": files}
    return Dataset(name="beam-concat", dialogues=[dialogue]), info


def percentile(values: list[float], q: float) -> float | None:
    """The ``q``-th percentile (numpy's linear interpolation) of ``values``; None when empty."""
    import numpy as np

    return float(np.percentile(values, q)) if values else None


def one_beam_concat(name: str, n_tokens: int) -> dict:
    """One point of the ``beam-concat`` workload, replayed by ``memlab.eval.replay``: indexing
    (``observe``) time, each probe's search time (its first, plain ``retrieve``: not the replay's
    deeper lists inside ``peek()``, nor a search ``build_context`` makes) and the replay's
    per-probe ``latency_ms`` (search, deeper lists, context), resident memory before and after
    (the strategy kept alive) and the process's peak."""
    import gc

    from memlab import strategies
    from memlab.eval.replay import replay

    t_build = time.perf_counter()
    dataset, info = build_beam_concat(n_tokens)
    build_s = time.perf_counter() - t_build
    (dialogue,) = dataset.dialogues
    strategy = strategies.get(name, **BEAM_PARAMS.get(name, {}))
    # a short replay of the first messages first, so one-time costs (tokenizer tables, lazy
    # imports) are not timed; its clone is dropped before memory is read
    warm, (warm_dialogue,) = strategy.clone(), build_beam_concat(WARM_TOKENS)[0].dialogues
    for t in warm_dialogue.turns():
        warm.observe(t.to_record(warm_dialogue.id))
    for p in warm_dialogue.probes[:3]:
        warm.retrieve(p.query, 10, now=warm_dialogue.turns()[-1].timestamp)
        warm.build_context(p.query, now=warm_dialogue.turns()[-1].timestamp)
    del warm, warm_dialogue
    gc.collect()
    base_mb, base_peak = rss_mb(), peak_rss_mb()
    cls = type(strategy)
    observe, retrieve, build_context = cls.observe, cls.retrieve, cls.build_context
    observed, searches, kept = [0.0], [], []
    in_context = [0]

    def timed_observe(self, record):
        if not kept:
            kept.append(self)  # replay's clone: held so its memory is still there when read
        t0 = time.perf_counter()
        observe(self, record)
        observed[0] += time.perf_counter() - t0

    def timed_retrieve(self, query, k=5, **kwargs):
        t0 = time.perf_counter()
        hits = retrieve(self, query, k, **kwargs)
        if not self.peeking and not in_context[0]:
            searches.append((time.perf_counter() - t0) * 1000)
        return hits

    def timed_build_context(self, query, **kwargs):
        in_context[0] += 1
        try:
            return build_context(self, query, **kwargs)
        finally:
            in_context[0] -= 1

    cls.observe, cls.retrieve, cls.build_context = timed_observe, timed_retrieve, timed_build_context
    try:
        t0, c0 = time.perf_counter(), time.process_time()
        rows = replay(strategy, dataset, k_max=10)
        seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    finally:
        cls.observe, cls.retrieve, cls.build_context = observe, retrieve, build_context
    gc.collect()
    held_mb = rss_mb() - base_mb
    if len(searches) != len(rows):
        raise RuntimeError(f"{name}: {len(searches)} searches timed for {len(rows)} probes")
    latency = [float(x) for x in rows["latency_ms"]]
    mtok = info["history_tokens"] / 1e6
    recall = rows["recall@10"].dropna() if len(rows) else []
    return {"strategy": name, "tokens": n_tokens, "history_tokens": info["history_tokens"],
            "turns": dialogue.n_turns, "conversations": len(info["conversations"]),
            "last_conversation": info["conversations"][-1], "probes": len(rows),
            "probes_dropped": info["probes_dropped"], "build_seconds": build_s,
            "seconds": seconds, "cpu_seconds": cpu, "append_seconds": observed[0],
            "append_us_per_turn": observed[0] / dialogue.n_turns * 1e6,
            "append_us_per_ktok": observed[0] / info["history_tokens"] * 1e9,
            "query_ms_p50": percentile(searches, 50), "query_ms_p95": percentile(searches, 95),
            "probe_ms_p50": percentile(latency, 50), "probe_ms_p95": percentile(latency, 95),
            "recall@10": float(recall.mean()) if len(recall) else None,
            "base_mb": base_mb, "held_mb": held_mb, "held_mb_per_mtok": held_mb / mtok,
            "peak_mb": peak_rss_mb(), "peak_before_mb": base_peak}


def step_slope(prev: dict, cur: dict, key: str = "seconds", x: str = "turns") -> float:
    """Log-log slope of total time (``key``: wall ``seconds`` or ``cpu_seconds``) from the previous
    size: log(t2 / t1) / log(N2 / N1), N read from ``x`` (turns, or beam-concat's history_tokens)."""
    if prev[key] <= 0 or cur[key] <= 0 or cur[x] == prev[x]:
        return float("nan")
    return math.log(cur[key] / prev[key]) / math.log(cur[x] / prev[x])


def linear_fit(xs: list[float], ys: list[float]) -> float:
    """Least-squares slope of ``ys`` against ``xs`` (NaN with fewer than two distinct xs)."""
    if len(set(xs)) < 2:
        return float("nan")
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((a - mx) * (b - my) for a, b in zip(xs, ys)) / sum((a - mx) ** 2 for a in xs)


def beam_concat_slopes(pts: list[dict]) -> dict:
    """The slopes of one strategy's beam-concat points, against the history's tokens: log-log
    least squares of append (indexing) time, total replay time, CPU time and memory held;
    ``mb_per_mtok``: the linear least-squares slope of the memory held per million tokens."""
    x = [p["history_tokens"] for p in pts]
    return {"append": round(slope(x, [p["append_seconds"] for p in pts]), 3),
            "total": round(slope(x, [p["seconds"] for p in pts]), 3),
            "cpu": round(slope(x, [p["cpu_seconds"] for p in pts]), 3),
            "memory": round(slope(x, [p["held_mb"] for p in pts]), 3),
            "mb_per_mtok": round(linear_fit([t / 1e6 for t in x], [p["held_mb"] for p in pts]), 2),
            "append_steps": {f"{a['tokens']}-{b['tokens']}":
                             round(step_slope(a, b, "append_seconds", "history_tokens"), 3) for a, b in zip(pts, pts[1:])},
            "steps": {f"{a['tokens']}-{b['tokens']}": round(step_slope(a, b, "seconds", "history_tokens"), 3)
                      for a, b in zip(pts, pts[1:])}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000", help="comma-separated turn counts")
    parser.add_argument("--tokens", default=",".join(str(n) for n in BEAM_TOKENS),
                        help="beam-concat: comma-separated history lengths in tokens")
    parser.add_argument("--strategies", default=None,
                        help=f"comma-separated (default: {','.join(STRATEGIES)}; beam-concat: "
                             f"{','.join(BEAM_STRATEGIES)})")
    parser.add_argument("--workload", choices=WORKLOADS, default="every-10th",
                        help="every-10th (default), cycled-sessions or beam-concat (see the module docstring)")
    parser.add_argument("--budget", type=float, default=240.0,
                        help="skip a point predicted to take longer than this many seconds")
    parser.add_argument("--probes", type=int, default=0,
                        help="a fixed number of probes spread evenly (default 0: every-10th asks after every "
                             f"10th turn, cycled-sessions asks {CYCLED_PROBES}; beam-concat asks its own)")
    parser.add_argument("--output", help="record this run alone in this JSON file (bench/results/<name>.json)")
    parser.add_argument("--one", nargs=2, metavar=("STRATEGY", "SIZE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(args.one[0], int(args.one[1]), args.probes, args.workload)))
        return 0
    beam = args.workload == "beam-concat"
    # a point's size: turns, or beam-concat's tokens (the slopes read the history's own count)
    size, x = ("tokens", "history_tokens") if beam else ("turns", "turns")
    names = (args.strategies or ",".join(BEAM_STRATEGIES if beam else STRATEGIES)).split(",")
    sizes = sorted(int(s) for s in (args.tokens if beam else args.sizes).split(","))
    if beam:
        files, source = [f for folder in beam_folders() for f in _beam_files(folder)], "beam"
    else:
        files, source = source_files()
    provenance = None
    if args.output:
        from memlab.eval.provenance import run_provenance

        # taken before the run: the commit and data it names are those the run measures
        provenance = run_provenance(data=files)
    load_start = os.getloadavg()[0]
    results, skipped = [], []
    for name in names:
        done: list[dict] = []
        for n in sizes:
            if done:
                prev = done[-1]
                exponent = max(1.0, slope([d[x] for d in done], [d["seconds"] for d in done])
                               if len(done) > 1 else 1.0)
                predicted = prev["seconds"] * (n / prev[x]) ** exponent
                if predicted > args.budget:
                    skipped.append({"strategy": name, size: n, "predicted_s": round(predicted)})
                    print(f"skip {name} at {n} {size}: predicted {predicted:.0f} s > budget {args.budget:.0f} s",
                          file=sys.stderr)
                    continue
            try:
                r = run_child(__file__, ["--one", name, str(n), "--probes", str(args.probes),
                                         "--workload", args.workload])
            except RuntimeError as e:  # one failed point must not lose the others
                skipped.append({"strategy": name, size: n, "predicted_s": -1, "error": str(e)[-300:]})
                print(f"{name} at {n} {size} failed: {str(e)[-300:]}", file=sys.stderr)
                break
            r["slope_from_previous"] = step_slope(done[-1], r, x=x) if done else None
            r["cpu_slope_from_previous"] = step_slope(done[-1], r, "cpu_seconds", x) if done else None
            print(f"{name:>12} {n:>8} {size}: {r['seconds']:.2f} s ({r['cpu_seconds']:.2f} s CPU), peak "
                  f"{r['peak_mb']:.0f} MB" + (f", slope {r['slope_from_previous']:.2f} (CPU "
                                              f"{r['cpu_slope_from_previous']:.2f}) from {done[-1][size]}"
                                              if done else ""), file=sys.stderr, flush=True)
            done.append(r)
        results.extend(done)
    load_end = os.getloadavg()[0]
    rows = []
    slopes = {}
    for name in names:
        pts = [r for r in results if r["strategy"] == name]
        if beam:
            slopes[name] = beam_concat_slopes(pts)
            for p in pts:
                step = p.get("slope_from_previous")
                rows.append([name, p["tokens"], p["history_tokens"], p["turns"], p["probes"], p["seconds"],
                             p["append_seconds"], p["query_ms_p50"], p["query_ms_p95"], p["probe_ms_p50"],
                             p["probe_ms_p95"], p["held_mb"], p["peak_mb"],
                             float("nan") if step is None else step, slopes[name]["append"]])
            continue
        total = slope([p["turns"] for p in pts], [p["seconds"] for p in pts])
        append = slope([p["turns"] for p in pts], [p["append_us"] * p["turns"] for p in pts])
        slopes[name] = {"total": round(total, 3), "append": round(append, 3),
                        "cpu": round(slope([p["turns"] for p in pts], [p["cpu_seconds"] for p in pts]), 3),
                        "steps": {f"{a['turns']}-{b['turns']}": round(step_slope(a, b), 3)
                                  for a, b in zip(pts, pts[1:])},
                        "cpu_steps": {f"{a['turns']}-{b['turns']}": round(step_slope(a, b, "cpu_seconds"), 3)
                                      for a, b in zip(pts, pts[1:])}}
        for p in pts:
            s = p.get("exact_search")
            step, cpu_step = p.get("slope_from_previous"), p.get("cpu_slope_from_previous")
            rows.append([name, p["turns"], p["seconds"], p["cpu_seconds"], p["us_per_turn"], p["append_us"], p["probe_ms"],
                         p["peak_mb"], f"{s['store_ms']:.3f}/{s['limit_ms']:.3f}={s['ratio']:.2f}x" if s else "",
                         float("nan") if step is None else step, float("nan") if cpu_step is None else cpu_step,
                         total, append])
    print(f"workload {args.workload}, turns from {source}")
    if beam:
        print(table(["strategy", "tokens", "history tokens", "turns", "probes", "seconds", "append s",
                     "query p50 ms", "query p95 ms", "probe p50 ms", "probe p95 ms", "held MB", "peak MB",
                     "slope step", "slope append"], rows))
    else:
        print(table(["strategy", "turns", "seconds", "CPU s", "us/turn", "append us", "ms/probe", "peak MB",
                     "search ms store/limit", "slope step", "CPU slope step", "slope total", "slope append"], rows))
    for s in skipped:
        print(f"skipped: {s['strategy']} at {s[size]} {size} (predicted {s['predicted_s']} s)")
    out = {"bench": "scale", "workload": args.workload, "source": source, "machine": machine(),
           "results": results, "slopes": slopes, "skipped": skipped}
    print(json.dumps(out))
    if args.output:
        from memlab.atomic import atomic_write_text

        if beam:
            options = {"tokens": sizes, "strategies": names, "budget": args.budget,
                       "params": {n: BEAM_PARAMS.get(n, {}) for n in names}, **beam_concat_protocol()}
            shas = sorted(provenance["data"].values())
        else:
            options = {"sizes": sizes, "strategies": names, "probes": args.probes, "budget": args.budget}
        if args.workload == "cycled-sessions":
            options.update(session_turns=SESSION_TURNS, evidence_back=EVIDENCE_BACK,
                           probes=args.probes if args.probes > 0 else CYCLED_PROBES)
        record = {"bench": "scale", "workload": args.workload, "source": source, "options": options,
                  "provenance": provenance,
                  # timings read beside other work: the load average (1 min) when the run started and ended
                  "load_avg_1m": [round(load_start, 2), round(load_end, 2)],
                  "results": results, "slopes": slopes, "skipped": skipped}
        if beam:
            record["config_hash"] = {n: beam_concat_config_hash(n, shas) for n in names}
            record["memory_total_mb"] = memory_total_mb()
        atomic_write_text(args.output, json.dumps(record, indent=1) + "\n")
        print(f"recorded in {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
