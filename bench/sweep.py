"""A 10-point keep_rate sweep against 10 separate runs, and the embedding cache cold and warm.

    python bench/sweep.py [--strategy longterm] [--embedder minilm] [--cold-texts 1000]

On LoCoMo (all 10 conversations, 1,986 probes):

- ``one run``: ``memlab eval LOCOMO --format locomo --strategy S --set keep_rate=0.5`` as a
  process (start-up, loading, cache warm-up and replay: what a user waits for);
- ``10 separate runs``: that command for each of the 10 keep_rate values;
- ``sweep``: ``memlab sweep FILE.toml`` with the 10 values as its grid (one process);
- in-process, for reference: one ``replay`` and ``memlab.eval.sweep`` over the 10 points.

Target (issue 11): the sweep costs <= 3x one run. With MiniLM the run embeds through the
content-addressed cache; an untimed first run fills it, so every timed run is warm. With
an empty cache (``--cold-conversations`` LoCoMo conversations, fresh cache folders), one
run and the sweep each start cold: the sweep embeds each text once for its 10 points.
Then the cache itself: ``--cold-texts`` LoCoMo texts embedded by MiniLM into an empty
cache file (cold), and read back (warm), per text.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import ROOT, load_locomo, machine, table

KEEP_RATES = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]


def cli(*args: str, cache_dir: str | None = None) -> float:
    env = dict(os.environ)
    if cache_dir is not None:
        env["MEMLAB_CACHE_DIR"] = cache_dir
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "memlab.cli", *args], capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"memlab {' '.join(args)} failed: {proc.stderr[-1500:]}")
    return time.perf_counter() - t0


def cache_figures(n_texts: int) -> dict:
    from memlab.embeddings.cache import CachedEmbedder
    from memlab.embeddings.sentence_transformer import SentenceTransformerEmbedder

    texts = list(dict.fromkeys(t.retrieval_text for d in load_locomo().dialogues for t in d.turns()))[:n_texts]
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        cached = CachedEmbedder(SentenceTransformerEmbedder(), path=str(Path(tmp) / "cache.sqlite3"))
        cached.embed(texts[:1])  # the model loads here
        load = time.perf_counter() - t0
        t0 = time.perf_counter()
        for start in range(1, len(texts), 256):
            cached.embed(texts[start:start + 256])
        cold = time.perf_counter() - t0
        fresh = CachedEmbedder(SentenceTransformerEmbedder(), path=str(Path(tmp) / "cache.sqlite3"))
        t0 = time.perf_counter()
        for start in range(0, len(texts), 256):
            fresh.embed(texts[start:start + 256])
        warm = time.perf_counter() - t0
        t0 = time.perf_counter()
        for text in texts[:200]:
            fresh.embed_one(text)
        single = time.perf_counter() - t0
    return {"texts": len(texts), "model_load_s": load, "cold_ms_per_text": cold / (len(texts) - 1) * 1000,
            "warm_ms_per_text": warm / len(texts) * 1000, "warm_single_ms": single / min(200, len(texts)) * 1000}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--strategy", default="longterm")
    parser.add_argument("--embedder", default="minilm", help="hashing or minilm")
    parser.add_argument("--cold-texts", type=int, default=1000, help="texts for the cold-cache figure (0: skip)")
    parser.add_argument("--cold-conversations", type=int, default=2,
                        help="LoCoMo conversations for one run and the sweep from an empty cache (0: skip)")
    args = parser.parse_args()
    from memlab.eval.paths import locomo_path

    locomo = str(locomo_path())
    base = ["eval", locomo, "--format", "locomo", "--strategy", args.strategy, "--json", "--quiet",
            "--set", f"embedder={args.embedder}"]
    cli(*base, "--set", "keep_rate=0.5")  # fills the embedding cache: every timed run is warm
    one = cli(*base, "--set", "keep_rate=0.5")
    separate = [cli(*base, "--set", f"keep_rate={kr}") for kr in KEEP_RATES]
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "sweep.toml"
        config.write_text(
            f'[dataset]\npath = {json.dumps(locomo)}\nformat = "locomo"\n'
            f'[[strategies]]\nlabel = "{args.strategy}"\nname = "{args.strategy}"\n'
            f'params = {{ embedder = "{args.embedder}" }}\n'
            f'[grid]\nkeep_rate = {json.dumps(KEEP_RATES)}\n[run]\nks = [5]\n')
        swept = cli("sweep", str(config), "--output", str(Path(tmp) / "out"), "--quiet")

    from memlab import strategies
    from memlab.eval import replay, sweep

    dataset = load_locomo()
    strategy = strategies.get(args.strategy, embedder=args.embedder)
    replay(strategy, dataset.subset(1), ks=(5,))
    t0 = time.perf_counter()
    replay(strategy, dataset, ks=(5,))
    in_one = time.perf_counter() - t0
    t0 = time.perf_counter()
    sweep(strategy, {"keep_rate": KEEP_RATES}, dataset, ks=(5,))
    in_sweep = time.perf_counter() - t0

    rows = [["one run (process)", one, 1.0], ["10 separate runs", sum(separate), sum(separate) / one],
            ["sweep, 10 points (process)", swept, swept / one],
            ["one replay (in-process)", in_one, 1.0], ["sweep() 10 points (in-process)", in_sweep, in_sweep / in_one]]
    if args.cold_conversations and args.embedder != "hashing":
        with tempfile.TemporaryDirectory() as tmp:
            part = Path(tmp) / "part.json"
            dataset.subset(args.cold_conversations).save(str(part))
            cold = ["eval", str(part), "--strategy", args.strategy, "--json", "--quiet", "--set",
                    f"embedder={args.embedder}", "--set", "keep_rate=0.5"]
            cold_one = cli(*cold, cache_dir=str(Path(tmp) / "c1"))
            config = Path(tmp) / "cold.toml"
            config.write_text(
                f'[dataset]\npath = {json.dumps(str(part))}\n[[strategies]]\nlabel = "s"\nname = "{args.strategy}"\n'
                f'params = {{ embedder = "{args.embedder}" }}\n[grid]\nkeep_rate = {json.dumps(KEEP_RATES)}\n'
                f'[run]\nks = [5]\n')
            cold_sweep = cli("sweep", str(config), "--output", str(Path(tmp) / "out"), "--quiet",
                             cache_dir=str(Path(tmp) / "c2"))
        label = f"{args.cold_conversations} conversations, empty cache"
        rows += [[f"one run, {label}", cold_one, 1.0], [f"sweep 10 points, {label}", cold_sweep, cold_sweep / cold_one]]
    print(table(["what", "seconds", "x one run"], rows))
    out = {"bench": "sweep", "machine": machine(), "strategy": args.strategy, "embedder": args.embedder,
           "one_run_s": one, "separate_runs_s": sum(separate), "sweep_s": swept, "sweep_over_one": swept / one,
           "in_process_one_s": in_one, "in_process_sweep_s": in_sweep}
    if args.cold_conversations and args.embedder != "hashing":
        out.update(cold_one_run_s=cold_one, cold_sweep_s=cold_sweep, cold_sweep_over_one=cold_sweep / cold_one)
    if args.cold_texts and args.embedder == "minilm":
        c = cache_figures(args.cold_texts)
        print(f"MiniLM cache, {c['texts']} LoCoMo texts: model load {c['model_load_s']:.1f} s; cold "
              f"{c['cold_ms_per_text']:.2f} ms/text; warm {c['warm_ms_per_text']:.3f} ms/text in batches, "
              f"{c['warm_single_ms']:.3f} ms one at a time")
        out["embedding_cache"] = c
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
