"""The README's examples run as written (Python blocks in order; memlab command lines)."""

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"```(\w+)\n(.*?)```", README, flags=re.S)
PYTHON = [code for lang, code in BLOCKS if lang == "python"]
COMMANDS = [line.strip() for lang, code in BLOCKS if lang == "bash"
            for line in code.splitlines() if line.strip().startswith(".venv/bin/memlab ")]


def test_readme_has_the_two_commands():
    bash = [code for lang, code in BLOCKS if lang == "bash"]
    assert any("bash scripts/setup.sh && .venv/bin/memlab" in b for b in bash)
    assert any("bash scripts/setup.sh && bash scripts/test.sh" in b for b in bash)
    ci = (REPO / ".ci" / "run").read_text()
    assert "bash scripts/setup.sh" in ci and "bash scripts/test.sh" in ci


def test_python_examples_run_in_order(monkeypatch):
    monkeypatch.chdir(REPO)
    namespace: dict = {}
    for code in PYTHON:
        exec(compile(code, "README.md", "exec"), namespace)
    assert [round(r.score, 2) for r in namespace["block"].retrieve()] == [1.0, 0.9, 1.0]
    assert namespace["n_tokens"] > 0
    assert namespace["s2"].get_params()["retriever__retrievers__0__k1"] == 1.2


@pytest.mark.parametrize("command", COMMANDS)
def test_cli_examples_run_as_written(command):
    args = shlex.split(command)[1:]
    if any("locomo" in a for a in args) and not (REPO / args[1]).exists():
        pytest.skip("LoCoMo is not beside the repository")
    proc = subprocess.run([sys.executable, "-m", "memlab.cli", *args], cwd=REPO, capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip()
