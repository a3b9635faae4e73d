"""Registrations end where they were made: ``registrations_restored`` (what the CLI runs each
command in, and tests/conftest.py each test) leaves the strategy and metric registries, and the
user files imported, as it found them. Without it a user metric registered by one test (an
in-process sweep with ``imports``) added its ``f1@k`` columns to every later sweep's table."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from memlab import strategies
from memlab.cli import main
from memlab.eval.metrics import get_metric, register_metric, registered
from memlab.eval.user_modules import USER_MODULE_PREFIX, import_user_module, registrations_restored
from memlab.strategies import registry

ROOT = Path(__file__).resolve().parents[2]
F1 = ROOT / "experiments" / "f1_metric.py"
NEXT_TURN = ROOT / "experiments" / "next_turn.py"


def _state():
    return (registry.names(), [m.key for m in registered()],
            sorted(n for n in sys.modules if n.startswith(USER_MODULE_PREFIX)))


def test_what_is_registered_inside_is_gone_after():
    before = _state()
    bm25 = registry.factory("bm25")
    recall = get_metric("recall@k")
    with registrations_restored():
        import_user_module(F1)
        import_user_module(NEXT_TURN)
        strategies.register("registries_test_only", lambda: strategies.get("bm25"))
        strategies.register("bm25", lambda: strategies.get("window"), overwrite=True)
        register_metric("recall", lambda row, k: 0.0, param="k", replace=True)
        assert {"f1@k"} <= {m.key for m in registered()}
        assert {"bm25_next_turn", "registries_test_only"} <= set(registry.names())
    assert _state() == before
    assert registry.factory("bm25") is bm25 and get_metric("recall@k") is recall  # replaced ones come back
    with registrations_restored():  # a forgotten user file registers again when imported again
        import_user_module(F1)
        assert "f1@k" in {m.key for m in registered()}
    assert _state() == before


def test_a_lazy_entry_looked_up_inside_stays_lazy_after():
    with registrations_restored():
        registry.factory("http_memory")  # imports memlab.adapters.recipes, a lazy entry resolved
    assert "http_memory" in registry._lazy and "http_memory" in registry.names()


def test_a_command_run_in_process_leaves_the_registries_as_it_found_them(tmp_path, capsys):
    before = _state()
    assert main(["eval", str(ROOT / "datasets" / "travel_advisor.json"), "--import", str(F1),
                 "--import", str(NEXT_TURN), "--strategy", "bm25_next_turn", "--json", "--quiet"]) == 0
    assert "f1@5" in json.loads(capsys.readouterr().out)  # the user metric was there while it ran
    sweep_file = tmp_path / "s.toml"
    sweep_file.write_text(f'imports = [{json.dumps(str(F1))}]\n[dataset]\npath = '
                          f'{json.dumps(str(ROOT / "datasets" / "travel_advisor.json"))}\n'
                          f'[strategy]\nname = "bm25"\n[run]\nks = [1]\n', encoding="utf-8")
    assert main(["sweep", str(sweep_file), "--output", str(tmp_path / "out"), "--quiet"]) == 0
    assert "f1@1" in (tmp_path / "out" / "summary.csv").read_text(encoding="utf-8")
    assert _state() == before
