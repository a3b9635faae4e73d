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
  (``chatml`` for the Qwen models; a plain transcript for the *base* Gemma 3 270M) and, for a GGUF
  given by path, llama.cpp's choice (the template embedded in the GGUF). For Gemma
  *instruction-tuned* GGUFs pass ``chat_format="gemma"``: it maps to ``"memlab-gemma"``, which
  keeps the system messages (``memlab.llm.chat_formats``).
- **Deterministic**: ``temperature=0`` is greedy decoding; ``seed`` seeds the sampler otherwise.
- **Prompt caching** (``prompt_cache="prefix"``): the KV cache of the previous call is kept and
  only whole, aligned batches of 64 tokens of it are reused, so an answer does not depend on
  which call came before (``memlab.llm.kv_reuse`` says why and how). Gemma 3's sliding-window
  layers keep a cache of their own, which this was not checked for: the default ``"auto"``
  reuses the prefix unless the GGUF declares a sliding window (``<arch>.attention.sliding_window``),
  and evaluates every prompt afresh then, in one batch. ``kv_slot`` names the llama.cpp context a
  client uses: clients with different slots keep different KV caches over the same weights (the
  CLI gives the judge its own, so the answerer's calls do not evict the judge's prefix).
  ``prompt_cache="off"`` evaluates every prompt afresh. llama-cpp-python's ``LlamaRAMCache`` is
  not used: each state it saves holds a copy of the n_batch x n_vocab logits buffer (311 MB for
  Qwen at n_batch 512, 0.25 s per save, measured), which its size limit does not count.
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

Why just over 400 lines: the client alone (model files are ``memlab.llm.models``, chat
formats ``memlab.llm.chat_formats``, the llama.cpp host ``memlab.llm.llama_host``); what is
left is its configuration, documented above, and the prompt caching that the throughput needs.
"""

from __future__ import annotations

import atexit
import threading
import time
from pathlib import Path
from typing import Any

from ..base import ConfigError, Param
from . import grammars
from .base import ONE_OF_PARAM, SCHEMA_PARAM, Completion, LLMError, Message
from .cache import ResponseCache
from .chat_formats import GEMMA_FORMAT, MEMLAB_FORMATS, register_chat_format
from .kv_reuse import PREFIX_CHUNK, aligned_prefix, prefix_safe
from .llama_host import INSTALL_HINT, auto_threads, gpu_visible
from .models import DEFAULT_MODEL, MODELS, check_model_path, env_model, get_model, gguf_sha256, model_path
from .retries import RetryEvent, RetryingLLM

__all__ = ["LocalLLM", "PROMPT_CACHE_MODES"]

#: ``prompt_cache`` values: keep the KV of the previous call and reuse its common prefix, or not;
#: ``auto``: reuse it unless the model has sliding-window attention layers (``prefix_safe``).
PROMPT_CACHE_MODES = ("auto", "prefix", "off")
#: Loaded models shared by every client of one load configuration (clones, strategies and the
#: answerer of one run): (llama_cpp.Llama, the lock that serialises its calls, load seconds).
_LOADED: dict[tuple[Any, ...], tuple[Any, threading.Lock, float]] = {}
_LOADED_LOCK = threading.Lock()
#: ``auto_threads()`` as first read in this process (``LocalLLM.resolved_threads``).
_AUTO_THREADS: int | None = None


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
        "model_path": Param(str, none=True, test=check_model_path,
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
            env_model()  # a bad $MEMLAB_LOCAL_MODEL is a configuration error now, not at the first call
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
        name, path = env_model()
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
            return Path(env_model()[1])  # type: ignore[arg-type]
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
        return gguf_sha256(self.resolved_path())

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
            raise ConfigError(f"LocalLLM needs llama-cpp-python: {INSTALL_HINT}") from None
        chat_format = self.resolved_chat_format()
        if chat_format in MEMLAB_FORMATS:
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
            out["grammar"] = grammars.word_grammar(request[ONE_OF_PARAM])
            return out
        fmt = request.get("response_format")
        if not (isinstance(fmt, dict) and fmt.get("type") == "json_object" and "schema" in fmt):
            return request
        out = {k: v for k, v in request.items() if k != "response_format"}
        out["grammar"] = grammars.schema_grammar(fmt["schema"])
        return out

    def _complete(self, messages: list[Message], **params: Any) -> Completion:
        request = self._request_params(params)
        model = self.model_id()
        # a constrained answer depends on the grammar memlab builds, not on the schema alone: its
        # cache key names the grammar rules, so answers cached under older rules are not served again
        constrained = "response_format" in request or ONE_OF_PARAM in request
        keyed = {**request, "grammar_rules": grammars.GRAMMAR_RULES} if constrained else request
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


def _completion(out: dict[str, Any], model: str) -> Completion:
    choice = (out.get("choices") or [{}])[0]
    text = ((choice.get("message") or {}).get("content")) or ""
    usage = out.get("usage") or {}
    return Completion(text=text.strip(), prompt_tokens=int(usage.get("prompt_tokens") or 0),
                      completion_tokens=int(usage.get("completion_tokens") or 0), model=model, cached=False)

