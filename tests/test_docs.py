"""The docs pages hold to the code: their Python examples run, the lists written in prose name
what the code has, the generated lists follow the code when it changes, and the ``memlab``
usage text names every flag. tests/test_readme.py checks the generated blocks against their
rendering, the command lines and the flags of every page."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
PAGES = sorted(p.name for p in DOCS.glob("*.md"))


def _rr():
    spec = importlib.util.spec_from_file_location("readme_results", REPO / "scripts" / "readme_results.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _text(page: str) -> str:
    return (DOCS / page).read_text(encoding="utf-8")


def _python_blocks(page: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", _text(page), flags=re.S)


def test_the_pages_the_readme_promises_exist():
    assert {"results.md", "local-model.md", "evaluating-another-system.md", "metrics.md", "datasets.md",
            "architecture.md", "cli.md"} <= set(PAGES)


# -- the examples run ----------------------------------------------------------------------------

@pytest.mark.parametrize("page", [p for p in PAGES if _python_blocks(p)])
def test_python_examples_run_in_order(page, monkeypatch):
    # one namespace per page, blocks in order: a later block may use an earlier one's names
    monkeypatch.chdir(REPO)
    namespace: dict = {"__name__": f"docs_{page[:-3].replace('-', '_')}"}
    for code in _python_blocks(page):
        exec(compile(code, f"docs/{page}", "exec"), namespace)
    if page == "architecture.md":  # the values the comments state
        assert [round(r.score, 2) for r in namespace["block"].retrieve()] == [1.0, 0.9, 1.0]
        assert namespace["n_tokens"] > 0
        assert namespace["s"].get_params()["retriever__fusion__weights"] == [0.8, 0.2]
        assert namespace["s2"].get_params()["retriever__retrievers__0__k1"] == 1.2
    if page == "metrics.md":
        from memlab.eval.metrics.registry import get_metric

        assert get_metric("overlap@k").view == "retrieval"


# -- lists written in prose, checked against the code --------------------------------------------

def _table(page: str, header: str) -> list[list[str]]:
    """The rows of the markdown table whose header line starts with ``header``."""
    text = _text(page)
    start = text.index(header)
    rows = []
    for line in text[start:].splitlines()[2:]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip().strip("|").split("|")])
    return rows


def test_the_peer_adapter_table_names_every_adapter_and_its_extra():
    from memlab.adapters.extras import PEER_STRATEGIES
    from memlab.strategies.registry import ADAPTERS

    rows = _table("evaluating-another-system.md", "| name | drives | install |")
    listed = {row[0].strip("`"): row[2] for row in rows}
    assert set(listed) == set(ADAPTERS) == set(PEER_STRATEGIES)
    for name, install in listed.items():
        extra = PEER_STRATEGIES[name]
        assert install == (f"`pip install 'memlab[{extra}]'`" if extra else "nothing"), name


def test_the_benchmark_table_says_where_memlab_looks():
    from memlab.eval import paths
    from memlab.eval.loaders.registry import loader_names

    rows = {row[3].strip("`").split()[1]: row[2] for row in
            _table("datasets.md", "| benchmark | licence | found at | read by |")}
    expected = {"locomo": (paths.LOCOMO_ENV, paths.LOCOMO_RELATIVE),
                "longmemeval": (paths.LONGMEMEVAL_ENV, paths.LONGMEMEVAL_RELATIVE),
                "beam": (paths.BEAM_ENV, paths.BEAM_RELATIVE)}
    assert set(rows) == set(expected) and set(rows) <= set(loader_names())
    for fmt, (env, relative) in expected.items():
        assert f"`${env}`" in rows[fmt], fmt
        assert relative.as_posix() in rows[fmt].replace("`", "").rstrip("/"), fmt


def test_the_readme_names_the_extras_the_setup_installs():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    sentence = re.search(r"installs memlab with its extras (.*?)\(torch first", readme, flags=re.S).group(1)
    named = set(re.findall(r"`([\w-]+)`", sentence))
    setup = (REPO / "scripts" / "setup.sh").read_text(encoding="utf-8")
    installed = {e for group in re.findall(r'\.\[([\w,-]+)\]', setup) for e in group.split(",")}
    assert named == installed


# -- one definition per metric ------------------------------------------------------------------

#: Metrics registered with neither a function docstring nor ``doc=`` nor a paragraph naming them in
#: their module's docstring: the page can only say who writes them. Give each a ``doc=`` in
#: memlab/eval/metrics/replayed.py and drop it here (the test below then insists).
UNDEFINED: set[str] = set()


def test_every_metric_has_one_definition_on_the_page():
    from memlab.eval.metrics.registry import registered

    body = dict(_rr().blocks(_text("metrics.md")))["metrics"]
    rows = {line.split("|")[1].strip().strip("`"): line for line in body.splitlines() if line.startswith("| `")}
    builtin = [m for m in registered() if (m.computed_by or m.fn.__module__).startswith("memlab.")]
    assert set(rows) == {m.key for m in builtin}
    undefined = {key for key, line in rows.items() if "written by the replay" in line}
    assert undefined == UNDEFINED, "a metric gained or lost its definition: update UNDEFINED"
    # the page defines no metric itself: its prose names metrics, the table defines them
    prose = _rr().BLOCK.sub("", _text("metrics.md"))
    assert not re.search(r"`[a-z_]+@k` = ", prose)


def test_a_new_metric_shows_in_the_rendered_table():
    from memlab.eval.metrics.registry import register_metric

    def fn(row, k):
        """A metric registered by a memlab module this test pretends to be."""
        return 0.0

    fn.__module__ = "memlab.eval.metrics.pretend"
    register_metric("pretend_metric", fn, view="retrieval", param="k")  # restored by conftest
    rendered = _rr().render_block("metrics")
    assert "| `pretend_metric@k` | retrieval | yes | A metric registered by a memlab module" in rendered
    assert rendered != dict(_rr().blocks(_text("metrics.md")))["metrics"]   # so the page check fails


def test_a_new_strategy_shows_in_the_rendered_lists():
    from memlab.strategies import registry
    from memlab.strategies.memory import WindowStrategy

    def pretend(window_size: int = 3):
        """A strategy registered by a memlab module this test pretends to be."""
        return WindowStrategy(window_size=window_size)

    pretend.__module__ = "memlab.strategies.pretend"
    registry.register("pretend_strategy")(pretend)   # restored by conftest
    assert "- `pretend_strategy`: A strategy registered by a memlab module" in _rr().render_block("strategies")


def test_user_registrations_stay_off_the_pages():
    # an example run in this process (the README's, a notebook's) registers names of its own
    from memlab.strategies import registry
    from memlab.strategies.memory import WindowStrategy

    registry.register("users_own")(lambda: WindowStrategy())
    assert "users_own" not in _rr().render_block("strategies")


# -- the command line ---------------------------------------------------------------------------

def test_the_usage_text_names_every_flag():
    import memlab.cli

    usage = memlab.cli.__doc__
    for command, parser in _rr().cli_parsers().items():
        line = re.search(rf"^\s*memlab {re.escape(command)}\b.*?(?=^\s*memlab |\Z)" if command else
                         r"^\s*memlab --version", usage, flags=re.M | re.S)
        assert line, f"the usage text has no line for memlab {command}"
        missing = [f for f in _rr().cli_flags(parser) if not re.search(rf"(?<![\w-]){re.escape(f)}(?![\w-])", line.group(0))]
        assert not missing, f"memlab {command}: the usage text in memlab/cli.py omits {missing}"


def test_the_flag_reference_lists_every_flag_once():
    rendered = _rr().render_block("cli_flags")
    for command, parser in _rr().cli_parsers().items():
        section = rendered.split(f"`memlab{' ' + command if command else ''}`\n", 1)[1].split("\n\n`memlab", 1)[0]
        for flag in _rr().cli_flags(parser):
            assert section.count(f"| `{flag}") == 1, (command, flag)


# -- generated lists of files --------------------------------------------------------------------

def test_the_layout_lists_every_module_and_package():
    body = dict(_rr().blocks(_text("architecture.md")))["layout"]
    listed = set(re.findall(r"^- `memlab/([\w.]+)/?`", body, flags=re.M))
    on_disk = {p.name for p in (REPO / "memlab").iterdir()
               if (p.suffix == ".py" or (p / "__init__.py").is_file()) and (not p.name.startswith("_") or p.name == "__main__.py")}
    assert listed == on_disk


def test_the_layers_are_the_layering_tests():
    import ast

    tree = ast.parse((REPO / "tests" / "test_layering.py").read_text(encoding="utf-8"))
    layers = next(ast.literal_eval(n.value) for n in ast.walk(tree)
                  if isinstance(n, ast.AnnAssign) and getattr(n.target, "id", None) == "LAYERS")
    body = dict(_rr().blocks(_text("architecture.md")))["layers"]
    assert len(re.findall(r"^\d+\. ", body, flags=re.M)) == len(layers)
    assert all(f"`{m}`" in body for layer in layers for m in layer)
