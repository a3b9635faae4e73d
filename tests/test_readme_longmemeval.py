"""The README's LongMemEval tables say what bench/results/longmemeval.json holds.

Each table follows a marker ``<!-- longmemeval:<section> -->``; a row ``| `label` | ... |``
is the strategy ``label`` of that section of the results file; a column named after a
metric holds 100 x its value with one decimal, ``seconds`` the rounded seconds. The anchors
table repeats the published figures stored in the results file.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results" / "longmemeval.json"


def tables() -> dict[str, list[list[str]]]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    out: dict[str, list[list[str]]] = {}
    for m in re.finditer(r"<!-- longmemeval:(\w+) -->\n((?:\|.*\|\n)+)", text):
        rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in m.group(2).splitlines()]
        out[m.group(1)] = rows
    return out


def test_the_readme_has_the_longmemeval_tables():
    found = tables()
    results = json.loads(RESULTS.read_text())
    assert {"s", "oracle", "anchors"} <= set(found)
    for key in ("s", "oracle"):
        assert len(found[key]) - 2 == len(results[key])   # every strategy measured is in the table


def test_every_readme_number_is_the_results_files():
    results = json.loads(RESULTS.read_text())
    checked = 0
    for key, rows in tables().items():
        header, body = rows[0], rows[2:]
        if key == "anchors":
            anchors = {a["method"]: a for a in results["anchors"]}
            for row in body:
                a = anchors[row[0]]
                for name, cell in zip(header[1:4], row[1:4]):
                    assert cell == (f"{a[name]:.1f}" if name in a else "-"), (row[0], name)
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
    assert len([x for x in lines if x]) == 2
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for line in lines:
        assert line in readme, line
