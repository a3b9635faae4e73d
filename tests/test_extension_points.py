"""A new dataset format, a new built-in strategy and a new metric are each one file and one
registration: a temporary package adds one of each, and everything that lists formats,
strategies or metrics finds them -- ``memlab eval``, ``memlab strategies --tag builtin``,
the sweep of every built-in (experiments/compare_builtins.toml, which names no strategy but
reads the ``builtin`` tag) -- with nothing else edited."""

from __future__ import annotations

import json
import re
from pathlib import Path

from memlab.cli import main
from memlab.eval.loaders import loader_names
from memlab.eval.metrics import registered
from memlab.eval.sweep_config import read_config, strategy_specs
from memlab.eval.user_modules import import_user_module, registrations_restored
from memlab.strategies import registry

REPO = Path(__file__).resolve().parents[1]

STRATEGY = '''
from memlab.retrieval import BM25Retriever
from memlab.strategies import RetrievalStrategy, registry


def ext_bm25(k1: float = 1.2) -> RetrievalStrategy:
    """BM25 with a lower k1."""
    return RetrievalStrategy(retriever=BM25Retriever(k1=k1))


registry.register("ext_bm25", ext_bm25, tags=("builtin", "offline"))
'''

METRIC = '''
from memlab.eval.metrics import register_metric


def first_hit_at_k(row, k):
    """1.0 when the first item is gold, whatever k; NaN without gold."""
    gold = set(row.gold)
    return float("nan") if not gold else float(bool(row.items) and any(i in gold for i in row.items[0]))


register_metric("ext_first_hit", first_hit_at_k, view="retrieval", param="k", bounded=True)
'''


def _format_file() -> str:
    text = (REPO / "datasets" / "README.md").read_text(encoding="utf-8")
    return re.search(r"```python\n(.*?)```", text[text.index("## Adding a format"):], re.S).group(1)


def _package(tmp_path: Path) -> dict[str, Path]:
    package = tmp_path / "ext"
    package.mkdir()
    files = {"format": package / "qa_format.py", "strategy": package / "recipe.py", "metric": package / "metric.py"}
    for kind, text in (("format", _format_file()), ("strategy", STRATEGY), ("metric", METRIC)):
        files[kind].write_text(text, encoding="utf-8")
        assert len(re.findall(r"^(?:registry\.register|register_loader|register_metric)\(", text, re.M)) == 1
    return files


def test_one_file_and_one_registration_each_and_everything_finds_them(tmp_path, capsys):
    files = _package(tmp_path)
    log = tmp_path / "log.json"
    log.write_text(json.dumps([{"said": ["I adopted a cat named Miso", "the weather is fine"],
                                "asked": "what is my cat called", "because": 0}]), encoding="utf-8")
    imports = [arg for f in files.values() for arg in ("--import", str(f))]
    assert main(["eval", str(log), "--strategy", "ext_bm25", *imports, "--json", "--quiet"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["strategy"] == "ext_bm25" and result["n_probes"] == 1 and result["ext_first_hit@5"] == 1.0
    assert main(["strategies", "--tag", "builtin", *imports]) == 0
    listed = [line.split()[0] for line in capsys.readouterr().out.splitlines() if line and not line.startswith(" ")]
    assert "ext_bm25" in listed
    # the command's registrations ended with it
    assert "ext_bm25" not in registry and "qa_log" not in loader_names()

    config = REPO / "experiments" / "compare_builtins.toml"
    before = [s["label"] for s in strategy_specs(read_config(config), str(config))]
    with registrations_restored():
        for f in files.values():
            import_user_module(f)
        after = [s["label"] for s in strategy_specs(read_config(config), str(config))]
        assert "ext_first_hit" in {m.name for m in registered()}
    # the sweep of every built-in now runs it (and the recorded table would ask to be re-recorded)
    assert sorted(after) == sorted(before + ["ext_bm25"])
