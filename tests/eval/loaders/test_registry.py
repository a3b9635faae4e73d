"""A new dataset format is one file and one ``register_loader`` call: the worked example of
datasets/README.md, run as it stands, is detected, loaded, reached by ``memlab eval --import``
with ``--option``, and gone again after the command (registrations do not outlive it)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from memlab.cli import main
from memlab.eval.dataset import DatasetError
from memlab.eval.loaders import get_loader, load_dataset, loader_names, register_loader, sniff_format
from memlab.eval.loaders.registry import unregister_loader

REPO = Path(__file__).resolve().parents[3]


def _example() -> str:
    text = (REPO / "datasets" / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Adding a format"):]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


@pytest.fixture
def log_file(tmp_path):
    path = tmp_path / "log.json"
    path.write_text(json.dumps([{"said": ["I adopted a cat named Miso", "the weather is fine"],
                                 "asked": "what is my cat called", "because": 0},
                                {"said": ["my sister lives in Lyon", "I like tea"],
                                 "asked": "where does my sister live", "because": 0}]), encoding="utf-8")
    return path


def test_the_readme_example_registers_a_format_that_everything_finds(log_file):
    namespace: dict = {}
    exec(compile(_example(), "datasets/README.md", "exec"), namespace)
    assert "qa_log" in loader_names() and sniff_format(str(log_file)) == "qa_log"
    ds = load_dataset(str(log_file), speaker="me")
    assert [d.id for d in ds.dialogues] == ["e0", "e1"] and ds.dialogues[0].sessions[0].turns[0].speaker == "me"
    assert list(get_loader("qa_log").options) == ["speaker"] and not get_loader("qa_log").streams
    with pytest.raises(DatasetError, match=r"option of the 'qa_log' loader 'speakr'. Did you mean 'speaker'"):
        load_dataset(str(log_file), speakr="me")


def test_memlab_eval_imports_the_format_file_and_passes_options(log_file, tmp_path, capsys):
    module = tmp_path / "my_format.py"
    module.write_text(_example(), encoding="utf-8")
    assert main(["eval", str(log_file), "--import", str(module), "--option", "speaker=me", "--json", "--quiet"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["n_probes"] == 2 and result["n_scored"] == 2 and result["recall@5"] == 1.0
    assert "qa_log" not in loader_names()   # the command's registrations end with it


def test_registration_is_checked():
    def load(path, a=1):
        return None

    with pytest.raises(DatasetError, match="already registered"):
        register_loader("locomo", load=load)
    with pytest.raises(DatasetError, match="iterate must take the options load takes and 'report'"):
        register_loader("x1", load=load, iterate=lambda path, report=None: iter(()))
    with pytest.raises(DatasetError, match="loader name must be"):
        register_loader("bad name", load=load)
    register_loader("x2", load=load)
    unregister_loader("x2")
    with pytest.raises(DatasetError, match="unknown dataset format 'x2'"):
        get_loader("x2")
