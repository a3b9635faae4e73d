"""Outputs are replaced atomically: a failed or killed run never destroys a previous complete output."""
import os
import signal
import stat
import subprocess
import sys
import textwrap
import time

import pandas as pd
import pytest

from memlab import ConfigError
from memlab.atomic import atomic_write, atomic_write_text
from memlab.eval.results import load_results, save_results
from memlab.eval.sweep import run_config

from .test_sweep import _config


def test_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "a.txt"
    atomic_write_text(target, "old\n")
    with pytest.raises(RuntimeError):
        with atomic_write(target, "w", encoding="utf-8") as fh:
            fh.write("half of the new")
            raise RuntimeError("boom")
    assert target.read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt"]


@pytest.mark.parametrize("plot, message", [
    ({"kind": "pie"}, "plots\\[2\\]: kind must be one of"),
    ({"kind": "pareto", "x": "context_tokens", "y": "recall@3", "colour": "red"}, "plots\\[2\\]: "),
])
def test_bad_plot_section_writes_nothing(tmp_path, tiny_file, plot, message):
    config = _config(tmp_path, tiny_file)
    config["plots"].append(plot)
    with pytest.raises(ConfigError, match=message):
        run_config(config, progress=False)
    assert not (tmp_path / "out").exists()


def test_bad_plot_rerun_keeps_the_previous_complete_output(tmp_path, tiny_file):
    run_config(_config(tmp_path, tiny_file), progress=False)
    out = tmp_path / "out"
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file() and p.name != "provenance.json"}
    config = _config(tmp_path, tiny_file)
    config["strategies"] = config["strategies"][:1]
    config["plots"].append({"kind": "pie"})
    with pytest.raises(ConfigError):
        run_config(config, progress=False)
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file() and p.name != "provenance.json"} == before


_WRITER = textwrap.dedent("""
    import sys
    import pandas as pd
    from memlab.eval.results import save_results
    path, n = sys.argv[1], 0
    while True:
        n += 1
        df = pd.DataFrame({"run": [n] * 200_000, "x": range(200_000)})
        save_results(df, path)
        if n == 1:
            print("ready", flush=True)
""")


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_sigkill_during_writes_never_leaves_a_torn_results_file(tmp_path, suffix):
    path = tmp_path / f"results{suffix}"
    save_results(pd.DataFrame({"run": [0] * 3, "x": range(3)}), str(path))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    for trial in range(3):
        proc = subprocess.Popen([sys.executable, "-c", _WRITER, str(path)], stdout=subprocess.PIPE,
                                env=env, text=True)
        assert proc.stdout.readline() == "ready\n"
        time.sleep(0.05 * trial)  # kill at different points of a later write
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
        df = load_results(str(path))  # old or new, but always complete
        assert df["run"].nunique() == 1
        assert len(df) == 200_000 and df["x"].tolist()[-1] == 199_999


@pytest.fixture
def umask():
    """Set the process umask for one test and restore it after."""
    previous = os.umask(0o022)
    os.umask(previous)
    yield os.umask
    os.umask(previous)


@pytest.mark.parametrize("mask, mode", [(0o022, 0o644), (0o002, 0o664), (0o077, 0o600)])
def test_new_files_get_the_umask_mode_not_mkstemps_0600(tmp_path, umask, mask, mode):
    umask(mask)
    target = tmp_path / "a.txt"
    atomic_write_text(target, "x\n")
    assert stat.S_IMODE(target.stat().st_mode) == mode


def test_a_replaced_file_keeps_its_mode(tmp_path, umask):
    umask(0o022)
    target = tmp_path / "a.txt"
    atomic_write_text(target, "old\n")
    target.chmod(0o640)
    atomic_write_text(target, "new\n")
    assert (target.read_text(), stat.S_IMODE(target.stat().st_mode)) == ("new\n", 0o640)


def test_every_sweep_output_is_readable_by_the_group_under_umask_022(tmp_path, tiny_file, umask):
    umask(0o022)
    run_config(_config(tmp_path, tiny_file), progress=False)
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in (tmp_path / "out").iterdir() if p.is_file()}
    assert len(modes) == 6  # results, two summaries, provenance, two plots
    assert set(modes.values()) == {0o644}, modes


def test_a_jsonl_store_rewritten_in_place_honours_the_umask_too(tmp_path, umask):
    from memlab.storage.kv import JsonlKeyValueStore

    umask(0o027)
    store = JsonlKeyValueStore(str(tmp_path / "m.jsonl"))
    store.replace([{"a": 1}])  # written to a temporary file and renamed over: a new file
    assert stat.S_IMODE((tmp_path / "m.jsonl").stat().st_mode) == 0o640
    (tmp_path / "m.jsonl").chmod(0o604)
    store.replace([{"a": 2}])  # replacing keeps the file's mode
    assert stat.S_IMODE((tmp_path / "m.jsonl").stat().st_mode) == 0o604
