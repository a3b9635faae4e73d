"""The newcomer's command-line frictions: --version, strategies --import, the --import hint."""

import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

import memlab
from memlab.cli import main
from memlab.strategies import registry

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def forget():
    """Names a test registers are unregistered after it."""
    names: list[str] = []
    yield names
    for name in names:
        registry._items.pop(name, None)


def test_version_names_the_version_and_where_memlab_is_imported_from(capsys):
    assert main(["--version"]) == 0
    package = os.path.dirname(os.path.abspath(memlab.__file__))
    assert capsys.readouterr().out == f"memlab {memlab.__version__} from {package} (Python {platform.python_version()})\n"
    with open(ROOT / "pyproject.toml", "rb") as fh:
        assert tomllib.load(fh)["project"]["version"] == memlab.__version__


USER_FILE = '''
from memlab import strategies
from memlab.retrieval import BM25Retriever
from memlab.strategies import RetrievalStrategy


@strategies.register("cli_test_bm25k")
def bm25k(k1: float = 1.2, context_k: int = 3) -> RetrievalStrategy:
    """BM25 with its own k1."""
    return RetrievalStrategy(retriever=BM25Retriever(k1=k1), context_k=context_k)


@strategies.register("cli_test_needs")
def needs(size: int) -> RetrievalStrategy:
    """Needs its size."""
    return RetrievalStrategy(retriever=BM25Retriever(), context_k=size)
'''


def test_strategies_import_lists_the_users_strategies_with_their_parameters(tmp_path, capsys, forget):
    user = tmp_path / "mine.py"
    user.write_text(USER_FILE)
    forget += ["cli_test_bm25k", "cli_test_needs"]
    assert main(["strategies", "--import", str(user)]) == 0
    out = capsys.readouterr().out
    listing, _, details = out.partition(f"\n{user}: ")
    names = [line.split()[0] for line in listing.splitlines() if line.strip()]
    assert {"bm25", "cli_test_bm25k", "cli_test_needs"} <= set(names)
    assert "cli_test_bm25k BM25 with its own k1." in listing
    blocks = details.split("\n\n")
    assert blocks[0] == "registers cli_test_bm25k, cli_test_needs"
    bm25k = blocks[1].splitlines()
    assert bm25k[:5] == ["cli_test_bm25k", "  arguments (--set NAME=VALUE):", "    k1 = 1.2", "    context_k = 3",
                         "  nested parameters (--set KEY=VALUE):"]
    assert "    retriever = BM25Retriever(...)" in bm25k
    assert "    retriever__k1 = 1.2" in bm25k and "    context_k = 3" in bm25k[5:]
    assert blocks[2].splitlines() == [
        "cli_test_needs", "  arguments (--set NAME=VALUE):", "    size (required)",
        "  nested parameters: not shown (building cli_test_needs with its defaults failed: "
        "TypeError: needs() missing 1 required positional argument: 'size')"]


def test_strategies_import_of_a_missing_file_is_one_line(tmp_path, capsys):
    assert main(["strategies", "--import", str(tmp_path / "nope.py")]) == 2
    assert capsys.readouterr().err == f"memlab: error: imports: no such file {tmp_path / 'nope.py'}\n"


def test_eval_of_an_unregistered_strategy_names_the_experiments_file_without_importing_it(
        tmp_path, monkeypatch, capsys):
    (tmp_path / "experiments").mkdir()
    # importing this file would fail loudly: the hint comes from reading its text
    (tmp_path / "experiments" / "next_turn.py").write_text(
        'raise SystemExit("imported!")\n@strategies.register(\n    "cli_test_next_turn")\ndef f(): pass\n')
    (tmp_path / "experiments" / "other.py").write_text('register("cli_test_other")\n')
    monkeypatch.chdir(tmp_path)
    assert main(["eval", "no-such-dataset", "--strategy", "cli_test_next_turn"]) == 2
    assert capsys.readouterr().err == ("memlab: error: unknown strategy 'cli_test_next_turn': "
                                       "experiments/next_turn.py registers it; add --import "
                                       "experiments/next_turn.py\n")
    # a name no file registers: the usual did-you-mean, before the (missing) dataset is read
    assert main(["eval", "no-such-dataset", "--strategy", "bm52"]) == 2
    assert capsys.readouterr().err.startswith("memlab: error: unknown strategy 'bm52'. Did you mean 'bm25'?")


def test_eval_of_hybrid_combmnz_from_the_checkout_suggests_its_experiments_file():
    # a fresh process: nothing in it has imported experiments/combmnz_fusion.py
    proc = subprocess.run([sys.executable, "-m", "memlab.cli", "eval", "datasets", "--strategy", "hybrid_combmnz"],
                          cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr == ("memlab: error: unknown strategy 'hybrid_combmnz': experiments/combmnz_fusion.py "
                           "registers it; add --import experiments/combmnz_fusion.py\n")
