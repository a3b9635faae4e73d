"""Every notebook in notebooks/ runs top to bottom with small parameters and draws its plots.

Parameters are injected papermill-style: a cell tagged ``injected-parameters`` is inserted
right after the cell tagged ``parameters``, assigning the test values. Only names that the
notebook's own parameters cell assigns are injected, so a new notebook gets the common
small values it uses (``dialogues``, ``locomo_conversations``, ...) with no entry here.

Also: the structure every notebook must keep (nbformat 4, stored with the outputs of one
top-to-bottom run by ``scripts/run_notebooks.py``, plots included, a first code cell tagged
"parameters", no reusable logic, no typed result in its markdown), and ``memlab.eval.paths``.
"""

from __future__ import annotations

import ast
import os
import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from memlab.base import MemlabError
from memlab.eval import paths

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK_DIR = ROOT / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
EXPECTED = ["01_quickstart.ipynb", "02_keep_rate_sweep.ipynb", "03_hybrid_vs_vector.ipynb", "04_decay.ipynb",
            "05_layered_memory.ipynb", "06_peers.ipynb", "07_lifecycle.ipynb", "08_longmemeval.ipynb",
            "09_error_analysis.ipynb", "10_answers.ipynb", "11_beam.ipynb", "12_generalise.ipynb"]
CELL_TIMEOUT = 240  # seconds per cell; a healthy run takes a few
#: What a result typed into markdown looks like: a three-decimal figure ("recalls 0.444") or a
#: count of probes ("70 of 72"). Results are printed by the cell that computes them.
TYPED_RESULT = re.compile(r"\b\d\.\d{3}\b|\b\d+ of \d+\b")

#: Small values for any notebook that has a parameter of this name.
COMMON_PARAMETERS: dict[str, object] = {
    "dialogues": 3,              # the first three shipped dialogues
    "locomo_conversations": 1,
    "embedder": "hashing",
    "n_jobs": 1,
}
#: Per-notebook values (override the common ones).
NOTEBOOK_PARAMETERS: dict[str, dict[str, object]] = {
    "01_quickstart.ipynb": {"dialogues": 4, "ks": [1, 5]},
    # all shipped dialogues: both keep_rate facts are computed over them
    "02_keep_rate_sweep.ipynb": {"keep_rates": [0.0, 0.5, 1.0], "dialogues": None},
    "03_hybrid_vs_vector.ipynb": {"context_ks": [2, 5], "locomo_context_ks": [5], "ks": [1, 5, 10],
                                  "dialogues": None},
    "06_peers.ipynb": {"max_probes": 40, "ks": [1, 5, 10]},
    "07_lifecycle.ipynb": {"compared": {"window": ("window", {}), "bm25": ("bm25", {}),
                                        "layered_lifecycle": ("layered_lifecycle", {})},
                           "variants": {"no lifecycle": {"consolidate_every": None, "summarize_every": None},
                                        "full lifecycle": {}}},
    # one LoCoMo conversation (common), 40 of its questions: hybrid_plus embeds them with e5
    "09_error_analysis.ipynb": {"max_probes": 40},
    # a real model (llama.cpp, the fast 0.5B test model): one question per slice, three strategies, short answers
    "10_answers.ipynb": {"model": "qwen2.5-coder-0.5b", "locomo_questions": 1, "lme_questions": 1, "strategy_names": ["oracle", "bm25_plus", "layered"],
                         "layered_tokens": 256, "answer_tokens": 12, "n_ctx": 2048},
    "04_decay.ipynb": {"time_units": [86400.0], "strength_growths": [0.0, 1.0], "decay_weights": [0.0, 0.2],
                       "multiplicative_time_units": [86400.0, 3.15e9],
                       "forget_thresholds": [0.0, 0.1]},
}


# LongMemEval (notebook 08): the first 30 oracle dev questions; run only where ../shared has the files
NOTEBOOK_PARAMETERS["08_longmemeval.ipynb"] = {"questions": 30}
#: Data a notebook cannot run without (the others fall back to the shipped dialogues); where this machine
#: lacks it (no ../shared, no $MEMLAB_LOCOMO / $MEMLAB_LONGMEMEVAL / $MEMLAB_BEAM) the run is skipped, not failed.
DATA = {"LoCoMo": paths.locomo_path, "LongMemEval": paths.longmemeval_path, "BEAM": paths.beam_path}
NEEDS_DATA = {"08_longmemeval.ipynb": ("LongMemEval",),
              "10_answers.ipynb": ("LoCoMo", "LongMemEval"),  # its answer slices: a LoCoMo and a LongMemEval one
              "11_beam.ipynb": ("BEAM",),
              "12_generalise.ipynb": ("LoCoMo",)}  # its live part; the rest reads bench/results/generalise.json
# BEAM (notebook 11): one 100K conversation replayed live; the full runs are read from the bench record
NOTEBOOK_PARAMETERS["11_beam.ipynb"] = {"conversations": 1}
# notebook 12: the default and one variant replayed on one LoCoMo conversation
NOTEBOOK_PARAMETERS["12_generalise.ipynb"] = {"conversations": 1}


def _parameters_cell(nb: nbformat.NotebookNode) -> int:
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            assert "parameters" in cell.metadata.get("tags", []), \
                "the first code cell must be tagged 'parameters'"
            return i
    raise AssertionError("the notebook has no code cell")


def _assigned_names(source: str) -> set[str]:
    names: set[str] = set()
    for node in ast.parse(source).body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] \
            if isinstance(node, ast.AnnAssign) else []
        names.update(t.id for t in targets if isinstance(t, ast.Name))
    return names


def inject_parameters(nb: nbformat.NotebookNode, values: dict[str, object]) -> dict[str, object]:
    """Insert a cell assigning ``values`` (those the parameters cell defines) after it."""
    index = _parameters_cell(nb)
    defined = _assigned_names(nb.cells[index].source)
    used = {k: v for k, v in values.items() if k in defined}
    if used:
        cell = nbformat.v4.new_code_cell("\n".join(f"{k} = {v!r}" for k, v in used.items()))
        cell.metadata["tags"] = ["injected-parameters"]
        nb.cells.insert(index + 1, cell)
    return used


def _outputs(nb: nbformat.NotebookNode) -> list[nbformat.NotebookNode]:
    return [out for cell in nb.cells if cell.cell_type == "code" for out in cell.get("outputs", [])]


def test_the_notebooks_exist() -> None:
    assert [p.name for p in NOTEBOOKS][:len(EXPECTED)] == EXPECTED


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_structure(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    assert nb.nbformat == 4
    assert nb.metadata.get("kernelspec", {}).get("name") == "python3"
    index = _parameters_cell(nb)
    params_source = nb.cells[index].source
    assert _assigned_names(params_source), "the parameters cell assigns no parameter"
    assert "import" not in params_source, "the parameters cell holds only parameter values"
    counts = [cell.get("execution_count") for cell in nb.cells if cell.cell_type == "code"]
    assert counts == list(range(1, len(counts) + 1)), \
        f"{path.name} must be stored with the outputs of one run: python scripts/run_notebooks.py {path.name}"
    outputs = _outputs(nb)
    assert not [o for o in outputs if o.output_type == "error"], f"{path.name} was stored with an error"
    assert any("image/png" in o.get("data", {}) for o in outputs), f"{path.name} was stored without its plots"
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            typed = TYPED_RESULT.findall(cell.source)
            assert not typed, (f"{path.name}, markdown cell {cell.get('id')}: {typed} look like typed results; "
                               f"print them from the cell that computes them")
        if cell.cell_type != "code":
            continue
        assert "execution" not in cell.metadata, "cell timings are not stored (a rerun would change them)"
        tree = ast.parse("\n".join(line for line in cell.source.splitlines() if not line.startswith("%")))
        defined = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                                  ast.ClassDef))]
        assert not defined, f"reusable logic belongs in memlab, not in a notebook (cell {cell.get('id')})"
    assert any("import memlab" in c.source or "from memlab" in c.source for c in nb.cells
               if c.cell_type == "code"), "a notebook imports memlab"


def test_typed_results_are_recognised() -> None:
    assert TYPED_RESULT.findall("The no-decay limit recalls 0.444; 70 of 72 probes change.") == ["0.444", "70 of 72"]
    assert not TYPED_RESULT.findall("p < 0.05, keep_rate 0.9, CC BY-NC 4.0, recall@5 56.7 in the paper")


def test_injection_only_sets_names_the_notebook_defines() -> None:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# t"),
                                         nbformat.v4.new_code_cell("a = 1\nb: int = 2"),
                                         nbformat.v4.new_code_cell("print(a + b)")])
    nb.cells[1].metadata["tags"] = ["parameters"]
    used = inject_parameters(nb, {"a": 10, "c": 3})
    assert used == {"a": 10}
    assert nb.cells[2].source == "a = 10"
    assert nb.cells[2].metadata["tags"] == ["injected-parameters"]
    assert nb.cells[3].source == "print(a + b)"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_executes_and_plots(path: Path) -> None:
    missing = [name for name in NEEDS_DATA.get(path.name, ()) if DATA[name]() is None]
    if missing:
        pytest.skip(f"{path.name} needs {' and '.join(missing)}, absent (../shared/datasets or $MEMLAB_LOCOMO / "
                    f"$MEMLAB_LONGMEMEVAL / $MEMLAB_BEAM)")
    nb = nbformat.read(path, as_version=4)
    inject_parameters(nb, {**COMMON_PARAMETERS, **NOTEBOOK_PARAMETERS.get(path.name, {})})
    client = NotebookClient(nb, timeout=CELL_TIMEOUT, kernel_name="python3",
                            resources={"metadata": {"path": str(NOTEBOOK_DIR)}})
    client.execute()  # raises CellExecutionError naming the cell and the traceback
    outputs = _outputs(nb)
    errors = [o for o in outputs if o.output_type == "error"]
    assert not errors, errors
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert images, f"{path.name} produced no image/png output"


# -- memlab.eval.paths -------------------------------------------------------------------

def _checkout(tmp_path: Path) -> Path:
    root = tmp_path / "work" / "repo"
    (root / "memlab").mkdir(parents=True)
    (root / "memlab" / "__init__.py").write_text("")
    (root / "pyproject.toml").write_text("")
    (root / "datasets").mkdir()
    (root / "notebooks").mkdir()
    return root


def test_repo_root_and_datasets_dir_from_a_subfolder(tmp_path: Path) -> None:
    root = _checkout(tmp_path)
    assert paths.repo_root(root / "notebooks") == root.resolve()
    assert paths.datasets_dir(root / "notebooks") == root.resolve() / "datasets"


def test_repo_root_falls_back_to_the_installed_checkout(tmp_path: Path) -> None:
    # tmp_path has no checkout above it; memlab is installed editable from ROOT
    assert paths.repo_root(tmp_path) == ROOT
    assert paths.datasets_dir(tmp_path) == ROOT / "datasets"


def test_datasets_dir_names_the_missing_folder(tmp_path: Path) -> None:
    root = _checkout(tmp_path)
    (root / "datasets").rmdir()
    with pytest.raises(MemlabError, match=r"datasets: no such folder"):
        paths.datasets_dir(root)


def test_locomo_path_relative_to_the_checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(paths.LOCOMO_ENV, raising=False)
    root = _checkout(tmp_path)
    # none beside the checkout; the lookup then climbs on, past pytest's temporary folder, so a
    # machine whose temporary folder has a shared/ beside it (a clone under /tmp with ../shared)
    # finds that one, and nothing else
    beyond = next(((base / paths.LOCOMO_RELATIVE).resolve() for base in tmp_path.parents
                   if (base / paths.LOCOMO_RELATIVE).is_file()), None)
    assert paths.locomo_path(root / "notebooks") == beyond
    target = tmp_path / "work" / "shared" / "datasets" / "locomo" / "locomo10.json"
    target.parent.mkdir(parents=True)
    target.write_text("[]")
    assert paths.locomo_path(root / "notebooks") == target.resolve()


def test_locomo_path_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    file = tmp_path / "my_locomo.json"
    file.write_text("[]")
    monkeypatch.setenv(paths.LOCOMO_ENV, str(file))
    assert paths.locomo_path(tmp_path) == file.resolve()
    monkeypatch.setenv(paths.LOCOMO_ENV, str(tmp_path / "missing.json"))
    with pytest.raises(MemlabError, match=r"MEMLAB_LOCOMO=.*missing\.json: no such file"):
        paths.locomo_path(tmp_path)


def test_locomo_path_in_this_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(paths.LOCOMO_ENV, raising=False)
    expected = (ROOT / paths.LOCOMO_RELATIVE).resolve()
    found = paths.locomo_path(NOTEBOOK_DIR)
    assert found == (expected if expected.is_file() else None)
    assert os.fspath(paths.datasets_dir(NOTEBOOK_DIR)) == os.fspath(ROOT / "datasets")
