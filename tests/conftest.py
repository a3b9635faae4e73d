import json
import os
from pathlib import Path

# onnxruntime (pulled in by chromadb) phones home after a session opens.
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


import pytest

REPO = Path(__file__).resolve().parents[1]


def _load_bench_script(file: str, name: str):
    """``bench/<file>`` imported as module ``name``, with bench/ on sys.path while it loads
    (the scripts import their sibling ``_common``)."""
    import importlib.util
    import sys

    bench = str(REPO / "bench")
    sys.path.insert(0, bench)
    try:
        spec = importlib.util.spec_from_file_location(name, REPO / "bench" / file)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(bench)


@pytest.fixture(scope="session")
def bench_script():
    """Import a bench script by file name: ``bench_script("scale.py", "bench_scale")``."""
    return _load_bench_script


@pytest.fixture(autouse=True, scope="session")
def _private_embedding_cache(tmp_path_factory):
    """Tests never read or write the user's embedding cache."""
    os.environ["MEMLAB_CACHE_DIR"] = str(tmp_path_factory.mktemp("memlab-cache"))
    yield


# --- each test leaves the registries as it found them ----------------------------------------
# Strategies and metrics are registered process-wide (a user file's @register, an in-process
# sweep's imports); one test's registrations must not reach the next, or the outcome depends on
# the order the tests run in (a user metric adds its columns to every later sweep). The module
# scope catches what a module-scoped fixture registers; the function scope what a test does.

@pytest.fixture(autouse=True, scope="module")
def _registries_per_module():
    from memlab.eval.user_modules import registrations_restored

    with registrations_restored():
        yield


@pytest.fixture(autouse=True)
def _registries_per_test(_registries_per_module):
    from memlab.eval.user_modules import registrations_restored

    with registrations_restored():
        yield


# --- the random order's seed, shown even under -q ----------------------------------------------
# pytest-random-order reports its seed in the session header, which -q (scripts/test.sh) hides;
# a failure that depends on the order is only reproducible with that seed.

def _random_order(config) -> str | None:
    """'seed N, bucket B' when pytest-random-order shuffles this run, else None."""
    try:
        from random_order.config import Config
    except ImportError:
        return None
    plugin = Config(config)
    return f"seed {plugin.seed}, bucket {plugin.bucket_type}" if plugin.is_enabled else None


def pytest_report_collectionfinish(config, start_path, items):
    shuffled = _random_order(config)
    if shuffled and config.get_verbosity() < 0:  # the header says it otherwise
        seed = shuffled.split(",")[0].split()[1]
        return f"random order: {shuffled} (repeat with --random-order-seed={seed})"
    return None


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    shuffled = _random_order(config)
    if shuffled:
        terminalreporter.write_line(f"random order: {shuffled}")


def toml_value(value) -> str:
    """``value`` written as TOML (strings, numbers, booleans, lists, inline tables)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, (str, Path)):
        return json.dumps(str(value))
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {toml_value(v)}" for k, v in value.items()) + " }"
    raise TypeError(f"no TOML form for {type(value).__name__}")


@pytest.fixture
def sweep_toml(tmp_path):
    """The sweep-file writer every sweep test uses: ``sweep_toml(dataset={"path": ...},
    strategy={"name": ...}, grid={...}, run={...})`` writes one ``[table]`` per keyword, in
    order, to ``folder / name`` (default ``tmp_path / "s.toml"``) and returns the path."""

    def write(*, folder=None, name: str = "s.toml", **tables) -> Path:
        path = Path(folder if folder is not None else tmp_path) / name
        path.write_text("".join(f"[{table}]\n" + "".join(f"{k} = {toml_value(v)}\n" for k, v in body.items())
                                for table, body in tables.items()), encoding="utf-8")
        return path

    return write


# --- the tests write nothing into the checkout's runs/ -------------------------------------
# A test that wrote there (a sweep's cells, results files) would be silently reused by the
# user's next sweep, so the session fails if runs/ gains or changes a file while it runs.

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WATCHED = REPO / "runs"


def snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``folder``: its path relative to it -> (size, mtime in ns); {} if absent."""
    if not folder.is_dir():
        return {}
    found = {}
    for path in folder.rglob("*"):
        try:
            if path.is_file() or path.is_symlink():
                info = path.lstat()
                found[path.relative_to(folder).as_posix()] = (info.st_size, info.st_mtime_ns)
        except OSError:  # removed while we looked
            continue
    return found


def written(before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]]) -> list[str]:
    """Files that appeared or changed between two snapshots, sorted."""
    return sorted(name for name, stamp in after.items() if before.get(name) != stamp)


def pytest_sessionstart(session):
    session.config._memlab_runs_before = snapshot(WATCHED)


def pytest_sessionfinish(session, exitstatus):
    before = getattr(session.config, "_memlab_runs_before", None)
    if before is None:
        return
    changed = written(before, snapshot(WATCHED))
    if changed:
        shown = ", ".join(changed[:5]) + (f" and {len(changed) - 5} more" if len(changed) > 5 else "")
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        message = (f"the tests wrote into the checkout's {WATCHED}: {shown}; a test must write "
                   f"under tmp_path (a user's next sweep would reuse these files)")
        if reporter is not None:
            reporter.write("\n")
            reporter.write_line(f"ERROR: {message}", red=True, bold=True)
        else:
            print(f"ERROR: {message}")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(scope="session")
def locomo_dataset():
    """LoCoMo loaded once, for the record tests that redraw their samples from it."""
    from memlab.eval import load_any
    from memlab.eval.paths import locomo_path

    return load_any(locomo_path(), "locomo")
