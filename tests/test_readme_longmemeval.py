"""The LongMemEval tables of docs/results.md say what bench/results/longmemeval.json holds.

Each table follows a marker ``<!-- longmemeval:<section> -->``; a row ``| `label` | ... |``
is the strategy ``label`` of that section of the results file; a column named after a
metric holds 100 x its value with one decimal, ``seconds`` the rounded seconds. The
``official`` table holds LongMemEval's own flat-bm25 averages, computed by the bench with
LongMemEval's (transcribed) code; ``test_the_official_row_equals_memlabs_flat_bm25`` checks
that memlab's ``flat_bm25`` row, scored by memlab's ``lme_*`` metrics, reads the same.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results" / "longmemeval.json"


def tables() -> dict[str, list[list[str]]]:
    text = (ROOT / "docs" / "results.md").read_text(encoding="utf-8")
    out: dict[str, list[list[str]]] = {}
    for m in re.finditer(r"<!-- longmemeval:(\w+) -->\n((?:\|.*\|\n)+)", text):
        rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in m.group(2).splitlines()]
        out[m.group(1)] = rows
    return out


def test_the_readme_has_the_longmemeval_tables():
    found = tables()
    results = json.loads(RESULTS.read_text())
    assert {"s", "oracle", "official"} <= set(found)
    for key in ("s", "oracle"):
        assert len(found[key]) - 2 == len(results[key])   # every strategy measured is in the table


def test_every_readme_number_is_the_results_files():
    results = json.loads(RESULTS.read_text())
    checked = 0
    for key, rows in tables().items():
        header, body = rows[0], rows[2:]
        if key == "official":
            for row in body:
                figures = results["official"][row[0]]
                assert row[1] == figures["retriever"] and row[2:4] == [str(figures["n_questions"]),
                                                                      str(figures["n_scored"])]
                for name, cell in zip(header[4:], row[4:]):
                    assert cell == f"{100 * figures[name]:.1f}", (row[0], name)
                    checked += 1
            continue
        table = results[key] if key != "s_dense_subset" else results[key]["table"]
        for row in body:
            label = row[0].strip("`")
            figures = table[label]
            for name, cell in zip(header[1:], row[1:]):
                expected = f"{figures[name]:.0f}" if name == "seconds" else (
                    "-" if figures.get(name) is None else f"{100 * figures[name]:.1f}")
                assert cell == expected, (key, label, name, cell, expected)
                checked += 1
    assert checked > 50


def test_the_target_sentences_are_computed_from_the_results_file():
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_longmemeval", ROOT / "bench" / "bench_longmemeval.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    lines = bench.targets(json.loads(RESULTS.read_text()))
    assert len([x for x in lines if x]) == len(bench.TARGETS)
    readme = (ROOT / "docs" / "results.md").read_text(encoding="utf-8")
    for line in lines:
        assert line in readme, line


def test_the_official_row_equals_memlabs_flat_bm25():
    """LongMemEval's code run on the raw file and memlab's flat_bm25 scored by lme_* agree, on
    every file recorded, within what memlab's data model changes: the replay feeds sessions in
    date order and keeps a repeated session once, so equal scores may rank differently there
    (``memlab.strategies.published``); the record shows the difference, here bounded."""
    results = json.loads(RESULTS.read_text())
    for key, official in results["official"].items():
        mine = results[key]["flat_bm25"]
        assert official["n_scored"] == mine["n_scored"]
        for name in ("recall_any", "recall_all"):
            for k in (1, 5, 10, 50):
                assert abs(official[f"session {name}@{k}"] - mine[f"lme_{name}@{k}"]) <= 0.01, (key, name, k)
                assert abs(official[f"turn {name}@{k}"] - mine[f"lme_turn_{name}@{k}"]) <= 0.01, (key, name, k)


def test_the_record_says_which_run_made_it():
    results = json.loads(RESULTS.read_text())
    prov = results["provenance"]
    assert prov["status"] == "complete" and prov["git_commit"] and prov["command"][1] == "bench/bench_longmemeval.py"
    assert {"../shared/datasets/longmemeval/longmemeval_oracle.dev.json",
            "../shared/datasets/longmemeval/longmemeval_s_cleaned.dev.json.gz"} <= set(prov["data"])
    assert all("config_hash" in f for key in ("oracle", "s") for f in results[key].values())


def test_the_whole_region_is_the_benchs_rendering():
    """Everything between ``<!-- longmemeval:begin -->`` and ``<!-- longmemeval:end -->`` is
    ``bench/bench_longmemeval.py --readme``'s output for the record, the sentences under the
    tables included: a figure typed there by hand fails here."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_longmemeval", ROOT / "bench" / "bench_longmemeval.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    text = (ROOT / "docs" / "results.md").read_text(encoding="utf-8")
    region = re.search(r"<!-- longmemeval:begin -->\n(.*?)<!-- longmemeval:end -->", text, flags=re.S)
    assert region, "docs/results.md has no LongMemEval region"
    assert region.group(1) == bench.readme_markdown(json.loads(RESULTS.read_text())), \
        "docs/results.md's LongMemEval region differs from python bench/bench_longmemeval.py --readme"
