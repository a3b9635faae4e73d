"""The README's and the docs pages' examples run as written (the README's Python block; the
memlab command lines of every page), every flag they name exists, and their generated blocks
match their sources (scripts/readme_results.py). tests/test_docs.py runs the pages' Python."""

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")
#: The README and every docs page: what a reader is told, all held to the code below.
PAGES = {p.relative_to(REPO).as_posix(): p.read_text(encoding="utf-8")
         for p in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]}
BLOCKS = re.findall(r"```(\w+)\n(.*?)```", README, flags=re.S)
PYTHON = [code for lang, code in BLOCKS if lang == "python"]
#: The memlab command lines of every page's bash blocks (text and sh blocks are shown, not
#: run: LoCoMo and LongMemEval runs, the local model); ordered, unique.
COMMANDS = list(dict.fromkeys(line.strip() for text in PAGES.values()
                              for lang, code in re.findall(r"```(\w+)\n(.*?)```", text, flags=re.S) if lang == "bash"
                              for line in code.splitlines() if line.strip().startswith(".venv/bin/memlab ")))


def test_readme_has_the_two_commands():
    bash = [code for lang, code in BLOCKS if lang == "bash"]
    assert any("bash scripts/setup.sh && .venv/bin/memlab" in b for b in bash)
    assert any("bash scripts/setup.sh && bash scripts/test.sh" in b for b in bash)
    ci = (REPO / ".ci" / "run").read_text()
    assert "bash scripts/setup.sh" in ci and "bash scripts/test.sh" in ci


def test_the_python_example_runs(monkeypatch, capsys):
    monkeypatch.chdir(REPO)
    assert len(PYTHON) == 1 and len(PYTHON[0].strip().splitlines()) <= 8   # the first screen's example
    exec(compile(PYTHON[0], "README.md", "exec"), {})
    printed = capsys.readouterr().out
    assert all(name in printed for name in ("window", "bm25", "hybrid")) and "recall@5" in printed


def test_the_first_screen_is_short_and_links_the_docs():
    lines = README.splitlines()
    assert len(lines) <= 250
    first = "\n".join(lines[:45])          # what one screen shows
    assert "bash scripts/setup.sh && .venv/bin/memlab" in first and "bash scripts/test.sh" in first
    assert "```python" in first and ".venv/bin/memlab eval" in first
    linked = set(re.findall(r"\]\((docs/[\w-]+\.md)\)", first))
    assert linked == {p for p in PAGES if p.startswith("docs/")}, "the first screen links every docs page"


def test_every_link_between_pages_resolves():
    for page, text in PAGES.items():
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
            if "://" in target:
                continue
            assert ((REPO / page).parent / target).exists(), f"{page}: link to {target} resolves to nothing"


def test_no_page_sends_the_reader_outside_the_checkout_but_to_the_data():
    # ../shared holds the data sets memlab reads; its other folders are not for readers
    for page, text in PAGES.items():
        for m in re.finditer(r"\.\./shared/(\w+)", text):
            assert m.group(1) == "datasets", f"{page}: points the reader to ../shared/{m.group(1)}"


@pytest.fixture(scope="module")
def checkout(tmp_path_factory):
    """A stand-in for the checkout the commands run in, so that what they write (``runs/``: a
    sweep's finished cells, ``--output runs/bm25.parquet``) lands in a temporary folder and never
    in the real checkout, where a user's next sweep would reuse the cells. ``datasets`` and the
    sibling ``shared`` are links; ``experiments`` is a copy, because a sweep file's output
    (``../runs/...``) is relative to the file and ``..`` would climb out of a link."""
    root = tmp_path_factory.mktemp("readme") / "repo"
    root.mkdir()
    (root / "datasets").symlink_to(REPO / "datasets", target_is_directory=True)
    shutil.copytree(REPO / "experiments", root / "experiments")
    if (REPO.parent / "shared").exists():
        (root.parent / "shared").symlink_to(REPO.parent / "shared", target_is_directory=True)
    return root


def _run_readme_command(command: str, checkout: Path) -> subprocess.CompletedProcess:
    """``command`` run in the stand-in checkout, after the README commands that write the files it
    reads (``compare runs/bm25.parquet`` needs the eval with ``--output runs/bm25.parquet``) when
    those are not there yet: each command passes whatever order the tests run in."""
    args = shlex.split(command)[1:]
    writers = {shlex.split(c)[shlex.split(c).index("--output") + 1]: c for c in COMMANDS
               if "--output" in shlex.split(c) and c != command}
    for arg in args:
        if arg in writers and not (checkout / arg).exists():
            first = _run_readme_command(writers[arg], checkout)
            assert first.returncode == 0, first.stderr
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]))
    return subprocess.run([sys.executable, "-m", "memlab.cli", *args], cwd=checkout, capture_output=True,
                          text=True, env=env)


@pytest.mark.parametrize("command", COMMANDS)
def test_cli_examples_run_as_written(command, checkout):
    # one stand-in checkout for all: what a command reads was written by an earlier one (or is now)
    args = shlex.split(command)[1:]
    if any("locomo" in a for a in args) and not (checkout / args[1]).exists():
        pytest.skip("LoCoMo is not beside the repository")
    proc = _run_readme_command(command, checkout)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip()


# -- result tables: generated from bench/results/*.json by scripts/readme_results.py ----------

def _readme_results():
    import importlib.util

    spec = importlib.util.spec_from_file_location("readme_results", REPO / "scripts" / "readme_results.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


#: Every document with generated blocks, and the blocks each must hold (a block cannot vanish).
DOCUMENTS = {"README.md": {"strategies", "notebooks"},
             "docs/results.md": {"compare_builtins", "compare_builtins_pair", "locomo", "generalise", "evidence_overlap"},
             "docs/cli.md": {"pvalue_floor", "cli_flags"},
             "docs/metrics.md": {"metrics"},
             "docs/datasets.md": {"formats"},
             "docs/local-model.md": {"local_models", "layered_local", "local_llm_judges", "local_llm_costs"},
             "docs/evaluating-another-system.md": {"locomo_peers", "strategy_methods"},
             "docs/architecture.md": {"strategies", "strategy_tags", "layout", "layers"},
             "bench/README.md": {"locomo_categories"},
             "docs/distributed.md": {"scale_tokens"},
             "BENCHMARKS.md": {"layered_local", "local_llm_judges", "local_llm_costs", "scale_cycled_sessions",
                               "scale_tokens", "replay_warm", "keep_rate_sweep", "embedding_gemm"}}


def _marked_files() -> set[str]:
    """Every markdown file of the checkout that holds a generated-block marker."""
    skip = {".git", ".venv", "node_modules", "runs"}
    return {p.relative_to(REPO).as_posix() for p in REPO.rglob("*.md")
            if not skip & set(p.relative_to(REPO).parts) and "<!-- results:" in p.read_text(encoding="utf-8")}


def test_every_document_with_result_blocks_is_rendered_and_checked():
    rr = _readme_results()
    covered = {p.relative_to(REPO).as_posix() for p in rr.DOCUMENTS}
    # a block in a file render/check do not read would never be refreshed nor checked
    assert _marked_files() <= covered, _marked_files() - covered
    assert set(DOCUMENTS) == _marked_files()
    for doc, expected in DOCUMENTS.items():
        names = {n.split(":")[0] for n, _ in rr.blocks((REPO / doc).read_text(encoding="utf-8"))}
        assert expected <= names, (doc, expected - names)


def test_every_block_name_has_a_renderer():
    rr = _readme_results()
    used = {n.split(":")[0] for doc in DOCUMENTS for n, _ in rr.blocks((REPO / doc).read_text(encoding="utf-8"))}
    assert used <= set(rr.BLOCKS), used - set(rr.BLOCKS)
    assert set(rr.BLOCKS) <= used, f"renderers no document uses: {set(rr.BLOCKS) - used}"


@pytest.mark.parametrize("doc,name", [(doc, name) for doc in DOCUMENTS
                                      for name, _ in _readme_results().blocks((REPO / doc).read_text(encoding="utf-8"))])
def test_readme_result_block_matches_its_results_file(doc, name):
    rr = _readme_results()
    body = dict(rr.blocks((REPO / doc).read_text(encoding="utf-8")))[name]
    assert body == rr.render_block(name), \
        f"{doc} block {name!r} differs from bench/results: python scripts/readme_results.py render"


#: A measured figure typed into prose: a decimal number, or a number with a unit of time,
#: size, rate or ratio ("1.4", "37 s", "849 MB", "5.4x", "25 texts/s", "12%").
TYPED_FIGURE = re.compile(r"(?<![\w.\-/])\d[\d,]*(\.\d+(?!\.\d)|\s?(?:s|ms|us|min|h|MB|GB|MiB|GiB|x|%|texts/s|"
                          r"tokens/s|answers/s)(?![\w/]))")


@pytest.mark.parametrize("doc", ["bench/README.md", "BENCHMARKS.md", "README.md", "docs/results.md",
                                 "docs/local-model.md"])
def test_no_figure_outside_the_generated_blocks(doc):
    # bench/README.md and BENCHMARKS.md were long hand-typed logs (git log -p), and the README and
    # the results pages are where a typed figure would be read as measured: what no record backs
    # stays out (a setting is written as code: `F1 >= 0.5`)
    rr = _readme_results()
    text = (REPO / doc).read_text(encoding="utf-8")
    text = rr.BLOCK.sub("", text)                       # rendered from records: checked above
    # bench/bench_longmemeval.py --readme's output: checked by tests/test_readme_longmemeval.py
    text = re.sub(r"<!-- longmemeval:begin -->.*?<!-- longmemeval:end -->", "", text, flags=re.S)
    text = re.sub(r"```.*?```", "", text, flags=re.S)  # commands
    text = re.sub(r"`[^`]*`", "", text)                # code, options, file names
    found = [m.group(0) for m in TYPED_FIGURE.finditer(text)]
    assert not found, f"{doc}: figures typed by hand (render them from a bench/results record or drop them): {found}"


def test_a_changed_number_fails_the_check():
    rr = _readme_results()
    text = rr.render(PAGES["docs/results.md"])
    assert rr.render(text) == text
    body = dict(rr.blocks(text))["compare_builtins"]
    figure = re.search(r"\d\.\d{3}", body)
    edited = body[:figure.end() - 1] + str((int(figure.group()[-1]) + 1) % 10) + body[figure.end():]
    changed = text.replace(body, edited, 1)
    assert changed != text and rr.render(changed) != changed


def test_every_registered_strategy_is_in_the_result_tables():
    import json

    # a fresh interpreter: the README's examples register strategies of their own in this one
    names = json.loads(subprocess.run([sys.executable, "-c", "import json; from memlab import strategies; "
                                       "print(json.dumps(strategies.names()))"], cwd=REPO, capture_output=True,
                                      text=True, check=True).stdout)
    builtins = json.loads((REPO / "bench" / "results" / "compare_builtins.json").read_text())
    locomo = json.loads((REPO / "bench" / "results" / "locomo.json").read_text())
    locomo_labels = {label for run in locomo["runs"] for label in run["figures"]}
    shown = {s["strategy"] for s in builtins["strategies"]} | {label.split("[")[0] for label in locomo_labels}
    missing = sorted(set(names) - shown)
    assert not missing, (f"registered strategies missing from the README result tables: {missing}; add them to "
                         f"experiments/compare_builtins.toml or bench/bench_locomo.py and record the results")


def test_the_notebook_list_is_generated_from_the_folder():
    listed = re.findall(r"^- `notebooks/(\S+\.ipynb)`", dict(_readme_results().blocks(README))["notebooks"], flags=re.M)
    assert listed == sorted(p.name for p in (REPO / "notebooks").glob("*.ipynb"))
    assert [name[:2] for name in listed] == [f"{i:02d}" for i in range(1, len(listed) + 1)]
    assert len(listed) >= 10


# -- every flag the README and the docs name exists ---------------------------------------------

#: Inline code spans of every page's prose, fenced blocks cut (one span may run over a line break).
SPANS = [" ".join(span.split()) for text in PAGES.values()
         for span in re.findall(r"`([^`]+)`", re.sub(r"```.*?```", "", text, flags=re.S))]
MEMLAB = re.compile(r"^(?:\.venv/bin/)?memlab(?:\s+(?P<rest>.*))?$")
SCRIPT = re.compile(r"^(?:\.venv/bin/)?python\s+(?P<script>\S+\.py)(?:\s+(?P<rest>.*))?$")
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


def _command_lines() -> list[str]:
    """The command lines of the README and every docs page: each line of a code block (each part
    of an ``a && b``, its comment cut), then each inline code span."""
    lines = []
    for text in PAGES.values():
        for code in re.findall(r"```\w*\n(.*?)```", text, flags=re.S):
            for line in code.splitlines():
                lines += [part.split(" # ")[0].strip() for part in line.split("&&")]
    return lines + SPANS


def _parsers():
    """``memlab``'s argparse parser and its subcommands' parsers, by name."""
    import argparse

    from memlab.cli import _parser

    top = _parser()
    subs = next(a.choices for a in top._actions if isinstance(a, argparse._SubParsersAction))
    return top, dict(subs)


def _flags(parser) -> set[str]:
    return {flag for action in parser._actions for flag in action.option_strings}


def memlab_flag_errors(lines: list[str]) -> list[str]:
    """What the pages say of the ``memlab`` command that the CLI does not have: unknown
    subcommands, flags a subcommand does not take, and flags named alone (`--x`) that neither
    ``memlab`` nor a script in bench/ or scripts/ defines."""
    top, subs = _parsers()
    every = _flags(top).union(*(_flags(p) for p in subs.values()))
    scripts = set()
    for path in [*REPO.glob("bench/*.py"), *REPO.glob("scripts/*.py")]:
        scripts |= set(re.findall(r"""["'](--[a-z][a-z0-9-]*)["']""", path.read_text(encoding="utf-8")))
    errors = []
    for line in lines:
        m = MEMLAB.match(line)
        if m:
            words = (m.group("rest") or "").split()
            command = words[0] if words and not words[0].startswith("-") else None
            if command is not None and command not in subs:
                errors.append(f"{line!r}: memlab has no command {command!r}")
                continue
            parser = subs[command] if command else top
            errors += [f"{line!r}: memlab {command or ''} has no {flag}".replace("  ", " ")
                       for flag in FLAG.findall(m.group("rest") or "") if flag not in _flags(parser)]
            continue
        m = SCRIPT.match(line)
        if m and (REPO / m.group("script")).is_file():
            text = (REPO / m.group("script")).read_text(encoding="utf-8")
            errors += [f"{line!r}: {m.group('script')} has no {flag}" for flag in FLAG.findall(m.group("rest") or "")
                       if f'"{flag}"' not in text and f"'{flag}'" not in text]
            continue
        if line.startswith("--"):  # a flag named alone, in prose: the command is in the sentence
            errors += [f"{line!r}: no memlab command or script has {flag}" for flag in FLAG.findall(line)[:1]
                       if flag not in every and flag not in scripts]
    return errors


def test_every_memlab_flag_the_readme_and_the_docs_name_exists():
    assert memlab_flag_errors(_command_lines()) == []


def test_an_unknown_flag_in_the_readme_fails_the_check():
    assert memlab_flag_errors([".venv/bin/memlab eval datasets --roles all"]) == \
        ["'.venv/bin/memlab eval datasets --roles all': memlab eval has no --roles"]
    assert memlab_flag_errors(["--roles all"]) == ["'--roles all': no memlab command or script has --roles"]
    assert memlab_flag_errors(["memlab sweep x.toml --strategy bm25"]) == \
        ["'memlab sweep x.toml --strategy bm25': memlab sweep has no --strategy"]
    assert memlab_flag_errors(["memlab evaluate x"]) == ["'memlab evaluate x': memlab has no command 'evaluate'"]
    assert memlab_flag_errors(["python bench/bench_locomo.py --no-such-flag"]) == \
        ["'python bench/bench_locomo.py --no-such-flag': bench/bench_locomo.py has no --no-such-flag"]
    assert memlab_flag_errors([".venv/bin/memlab eval datasets --option roles=all --k 5", "memlab --version",
                               "--set load_step__token_limit=512"]) == []


def _pyproject() -> dict:
    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib

    return tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))


def test_the_test_command_runs_in_random_order_with_its_plugin_installed():
    """scripts/test.sh shuffles (a test that leaks state into another fails there), and the
    plugin it needs is in the dev extra that scripts/setup.sh installs."""
    assert "--random-order" in (REPO / "scripts" / "test.sh").read_text(encoding="utf-8")
    dev = _pyproject()["project"]["optional-dependencies"]["dev"]
    assert any(req.startswith("pytest-random-order") for req in dev)
    assert "dev" in (REPO / "scripts" / "setup.sh").read_text(encoding="utf-8")


def test_a_hanging_test_fails_after_the_timeout_the_readme_names(pytestconfig):
    """README: a test still running after pyproject's ``timeout`` fails (pytest-timeout, in the
    dev extra), so one hang cannot hold the suite until CI's limit."""
    project = _pyproject()
    assert any(req.startswith("pytest-timeout") for req in project["project"]["optional-dependencies"]["dev"])
    assert pytestconfig.pluginmanager.hasplugin("timeout"), "pytest-timeout is not installed in this environment"
    timeout = float(pytestconfig.getini("timeout"))
    assert timeout == project["tool"]["pytest"]["ini_options"]["timeout"] and timeout > 0
    readme = " ".join((REPO / "README.md").read_text(encoding="utf-8").split())
    assert "`timeout` set in `pyproject.toml` (pytest-timeout)" in readme
