"""The session guard in tests/conftest.py: a test run that writes into the checkout's runs/ fails."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

CONFTEST = Path(__file__).resolve().parent / "conftest.py"


def _load_conftest():
    # by path: ``import conftest`` finds whichever tests/**/conftest.py pytest imported first
    import importlib.util

    spec = importlib.util.spec_from_file_location("memlab_tests_conftest", CONFTEST)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_CONFTEST = _load_conftest()
snapshot, written = _CONFTEST.snapshot, _CONFTEST.written


def test_snapshot_names_new_and_changed_files(tmp_path):
    runs = tmp_path / "runs"
    assert snapshot(runs) == {}
    (runs / "old").mkdir(parents=True)
    (runs / "old" / "kept.csv").write_text("a\n")
    (runs / "old" / "edited.csv").write_text("a\n")
    before = snapshot(runs)
    (runs / "old" / "edited.csv").write_text("a,b\n")
    (runs / "x" / "cells").mkdir(parents=True)
    (runs / "x" / "cells" / "c1.parquet").write_bytes(b"1")
    assert written(before, snapshot(runs)) == ["old/edited.csv", "x/cells/c1.parquet"]
    assert written(before, before) == []


def _session(tmp_path: Path, body: str) -> subprocess.CompletedProcess:
    """pytest run in a stand-in checkout whose tests/conftest.py is ours and whose one test is ``body``."""
    root = tmp_path / "repo"
    (root / "tests").mkdir(parents=True)
    (root / "pytest.ini").write_text("[pytest]\n")
    shutil.copy(CONFTEST, root / "tests" / "conftest.py")
    (root / "tests" / "test_one.py").write_text(body)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"], cwd=root,
                          capture_output=True, text=True, env=env, timeout=120)


WRITES_RUNS = """
from pathlib import Path
def test_writes():
    out = Path(__file__).resolve().parents[1] / "runs" / "hybrid" / "cells"
    out.mkdir(parents=True)
    (out / "c.parquet").write_bytes(b"x")
"""


def test_a_session_that_writes_into_runs_fails_and_names_the_file(tmp_path):
    proc = _session(tmp_path, WRITES_RUNS)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "1 passed" in proc.stdout
    assert f"the tests wrote into the checkout's {tmp_path / 'repo' / 'runs'}: hybrid/cells/c.parquet" in proc.stdout


def test_a_session_that_writes_under_tmp_path_passes(tmp_path):
    proc = _session(tmp_path, "def test_ok(tmp_path):\n    (tmp_path / 'r.csv').write_text('x')\n")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "wrote into the checkout" not in proc.stdout
