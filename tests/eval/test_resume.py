"""Resumable sweeps: finished cells survive SIGKILL/SIGINT, a rerun replays only the missing
ones and ends with the same table; ``--fresh`` recomputes all; joblib workers die with the sweep.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from memlab.cli import main
from memlab.eval.results import load_results

REPO = Path(__file__).resolve().parents[2]

SLOW = '''
import os
import time
from pathlib import Path

from memlab.strategies.memory import WindowStrategy


class SlowWindow(WindowStrategy):
    """A window strategy that sleeps ``delay`` seconds per observed turn (a slow cell)."""

    def __init__(self, window_size=3, keep_rate=0.9, token_limit=2048, token_counter=None, delay=0.0):
        self.delay = delay
        super().__init__(window_size=window_size, keep_rate=keep_rate, token_limit=token_limit,
                         token_counter=token_counter)

    def observe(self, record):
        if os.environ.get("SLOW_MARKS"):  # say which process is replaying (the worker test)
            Path(os.environ["SLOW_MARKS"], str(os.getpid())).touch()
        time.sleep(self.delay)
        hold = os.environ.get("SLOW_HOLD")  # every cell but the first waits while this file exists
        while hold and self.window_size > 1 and Path(hold).exists():
            time.sleep(0.02)
        return super().observe(record)

'''


def _sweep_file(sweep_toml, folder: Path, data: Path, delay: float, n_jobs: int = 1, points: int = 4) -> Path:
    """A sweep of ``SlowWindow`` (module ``slow`` in ``folder``, importable by joblib's workers)."""
    (folder / "slow.py").write_text(SLOW)
    return sweep_toml(folder=folder, dataset={"path": data},
                      strategy={"class": "slow.SlowWindow", "params": {"delay": delay}},
                      grid={"window_size": list(range(1, points + 1))}, run={"ks": [1, 3], "n_jobs": n_jobs})


def _env(folder: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(folder), os.environ.get("PYTHONPATH", "")])}


def _default_sigint() -> None:
    # a shell's background job starts with SIGINT ignored, and Python then never raises
    # KeyboardInterrupt: give the sweep the default disposition a terminal user's has
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _start(toml: Path, out: Path, **env: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "memlab.cli", "sweep", str(toml), "--output", str(out),
                             "--quiet"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**_env(toml.parent), **env}, preexec_fn=_default_sigint)


def _wait_for_cells(out: Path, n: int, proc: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if len(list((out / "cells").glob("*.parquet"))) >= n:
            return
        assert proc.poll() is None, proc.stderr.read().decode()
        time.sleep(0.05)
    raise AssertionError(f"no {n} cell(s) after {timeout} s")


def _table(out: Path) -> pd.DataFrame:
    # latency is the one column that is not reproducible bit for bit
    return load_results(str(out / "results.parquet")).drop(columns=["latency_ms"])


@pytest.fixture
def slow_module(tmp_path, monkeypatch):
    """``slow`` importable in this process too (the sweep file names slow.SlowWindow)."""
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "slow", raising=False)


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGINT])
def test_a_killed_sweep_resumes_with_only_the_missing_cells(tmp_path, sweep_toml, tiny_file, capsys, how, slow_module):
    toml = _sweep_file(sweep_toml, tmp_path, tiny_file, delay=0.1)
    out = tmp_path / "out"
    hold = tmp_path / "hold"  # the kill lands while a later cell is under way, however loaded the machine
    hold.touch()
    proc = _start(toml, out, SLOW_HOLD=str(hold))
    _wait_for_cells(out, 1, proc)
    proc.send_signal(how)
    _, err = proc.communicate(timeout=60)
    kept = sorted(p.name for p in (out / "cells").glob("*.parquet"))
    assert 1 <= len(kept) < 4
    if how == signal.SIGINT:  # Ctrl-C: the sweep says what it kept
        assert proc.returncode == 130
        assert err.decode().strip().splitlines()[-1] == (
            f"memlab: interrupted: {len(kept)} of 4 cells finished and kept in {out / 'cells'}; the same "
            f"command resumes with the {4 - len(kept)} missing (--fresh recomputes all)")
    assert not (out / "results.parquet").exists()  # the folder holds no partial outputs
    assert not list(out.glob("summary*")) and not list(out.rglob("*.tmp"))
    mtimes = {name: (out / "cells" / name).stat().st_mtime_ns for name in kept}

    assert main(["sweep", str(toml), "--output", str(out), "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert f"cells: {4 - len(kept)} computed, {len(kept)} reused" in printed
    assert {name: (out / "cells" / name).stat().st_mtime_ns for name in kept} == mtimes  # not redone

    whole = tmp_path / "whole"
    assert main(["sweep", str(toml), "--output", str(whole), "--quiet"]) == 0
    assert "cells: 4 computed, 0 reused" in capsys.readouterr().out
    pd.testing.assert_frame_equal(_table(out), _table(whole))


def test_fresh_recomputes_every_cell_and_a_changed_point_is_a_new_cell(tmp_path, sweep_toml, tiny_file, capsys,
                                                                      slow_module):
    toml = _sweep_file(sweep_toml, tmp_path, tiny_file, delay=0.0, points=2)
    out = tmp_path / "out"
    assert main(["sweep", str(toml), "--output", str(out), "--quiet"]) == 0
    assert main(["sweep", str(toml), "--output", str(out), "--quiet"]) == 0
    assert main(["sweep", str(toml), "--output", str(out), "--quiet", "--fresh"]) == 0
    printed = capsys.readouterr().out
    assert [line for line in printed.splitlines() if line.startswith("cells:")] == [
        f"cells: 2 computed, 0 reused from {out / 'cells'} (--fresh recomputes all)",
        f"cells: 0 computed, 2 reused from {out / 'cells'} (--fresh recomputes all)",
        f"cells: 2 computed, 0 reused from {out / 'cells'} (--fresh recomputes all)"]
    toml.write_text(toml.read_text().replace("ks = [1, 3]", "ks = [1, 2]"))  # other metrics: other cells
    assert main(["sweep", str(toml), "--output", str(out), "--quiet"]) == 0
    assert "cells: 2 computed, 0 reused" in capsys.readouterr().out
    assert len(list((out / "cells").glob("*.parquet"))) == 4


def _alive(pid: int) -> bool:
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc; prctl is Linux's")
def test_joblib_workers_die_within_seconds_of_a_sigkilled_sweep(tmp_path, sweep_toml, tiny_file):
    # each dialogue takes ~15 s: a worker that notices its dead parent only between tasks
    # would outlive the sweep by that long
    toml = _sweep_file(sweep_toml, tmp_path, tiny_file, delay=3.0, n_jobs=2, points=1)
    marks = tmp_path / "marks"
    marks.mkdir()
    proc = _start(toml, tmp_path / "out", SLOW_MARKS=str(marks))
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and len(list(marks.iterdir())) < 2:  # two workers replaying
        assert proc.poll() is None, proc.stderr.read().decode()
        time.sleep(0.05)
    workers = [int(p.name) for p in marks.iterdir()]
    assert len(workers) == 2 and proc.pid not in workers
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    gone_by = time.monotonic() + 3.0
    while time.monotonic() < gone_by and any(_alive(p) for p in workers):
        time.sleep(0.05)
    assert not [p for p in workers if _alive(p)]


def test_a_strategy_from_an_imported_file_runs_in_process_workers(tmp_path, tiny_file, capsys):
    """Classes of a sweep file's ``imports`` travel to joblib's workers by value."""
    (tmp_path / "mine.py").write_text(SLOW + '''

from memlab.strategies import register


@register("mine_slow_window", overwrite=True)
def mine_slow_window(window_size: int = 3) -> SlowWindow:
    return SlowWindow(window_size=window_size)
''')
    toml = tmp_path / "s.toml"
    toml.write_text(f'imports = ["mine.py"]\n[dataset]\npath = "{tiny_file}"\n[strategy]\nname = "mine_slow_window"\n'
                    '[run]\nks = [1]\nn_jobs = 2\n')
    assert main(["sweep", str(toml), "--output", str(tmp_path / "out"), "--quiet"]) == 0, capsys.readouterr().err
    assert len(load_results(str(tmp_path / "out" / "results.parquet"))) == 4


TRIALS = int(os.environ.get("MEMLAB_CRASH_TRIALS", "2"))


def test_a_sweep_killed_while_writing_leaves_the_previous_complete_set(tmp_path, sweep_toml, tiny_file, capsys,
                                                                       slow_module):
    """SIGKILL as soon as the output files are being written: results.parquet, summary.csv and
    summary.md are still all from the previous run, or all from the new one."""
    out = tmp_path / "out"
    toml = _sweep_file(sweep_toml, tmp_path, tiny_file, delay=0.0, points=1)
    assert main(["sweep", str(toml), "--output", str(out), "--quiet"]) == 0
    capsys.readouterr()
    toml = _sweep_file(sweep_toml, tmp_path, tiny_file, delay=0.0, points=3)
    for _ in range(TRIALS):
        proc = _start(toml, out)
        while proc.poll() is None and not list(out.glob(".results.parquet.*.tmp")):  # the slowest file
            time.sleep(0.001)
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=60)
        results = set(load_results(str(out / "results.parquet"))["strategy"])
        summary = pd.read_csv(out / "summary.csv")["strategy"]
        assert set(summary) == results
        assert len(results) in (1, 3)
        wide = (out / "summary.md").read_text().split("## Every metric\n\n", 1)[1]  # after the headline
        assert sorted(results) == sorted(line.split("|")[1].strip() for line in wide.splitlines()[2:])


INTERRUPTING = """
from memlab.strategies.memory import WindowStrategy


class InterruptingWindow(WindowStrategy):
    \"\"\"Ctrl-C, as it were, as soon as the cell with window_size 3 starts.\"\"\"

    def observe(self, record):
        if self.window_size == 3:
            raise KeyboardInterrupt
        return super().observe(record)
"""


def test_ctrl_c_says_how_many_finished_cells_were_kept(tmp_path, tiny_file, capsys, monkeypatch):
    (tmp_path / "interrupting.py").write_text(INTERRUPTING)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "interrupting", raising=False)
    toml = tmp_path / "s.toml"
    toml.write_text(f'[dataset]\npath = "{tiny_file}"\n[strategy]\nclass = "interrupting.InterruptingWindow"\n'
                    '[grid]\nwindow_size = [1, 2, 3, 4]\n[run]\nks = [1]\n')
    out = tmp_path / "out"
    assert main(["sweep", str(toml), "--output", str(out), "--quiet"]) == 130
    assert capsys.readouterr().err == (f"memlab: interrupted: 2 of 4 cells finished and kept in {out / 'cells'}; "
                                       "the same command resumes with the 2 missing (--fresh recomputes all)\n")
    assert len(list((out / "cells").glob("*.parquet"))) == 2
    # without an output folder nothing is kept: the plain interruption
    from memlab.eval.sweep import SweepInterrupted, run_config
    from memlab.eval.sweep_config import read_config

    with pytest.raises(KeyboardInterrupt) as caught:
        run_config(read_config(toml), base_dir=tmp_path)
    assert not isinstance(caught.value, SweepInterrupted)
