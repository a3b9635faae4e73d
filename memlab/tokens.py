"""Token counters: exact (tiktoken, offline) and approximate (characters per token).

Every counter counts a text with ``count`` (memoised per instance) and a chat message
with ``count_message``, following OpenAI's cookbook rule for chat models
("How to count tokens with tiktoken", gpt-3.5-turbo-0613 / gpt-4 / gpt-4o)::

    count_message(m)   = 3                                  # <|start|>{role}...<|end|> framing
                         + sum(count(v) for the string fields role, content, name, tool_call_id)
                         + 1 if m has a "name"
                         + sum(count(f.name) + count(f.arguments) for each tool call f)
    count_messages(ms) = sum(count_message(m) for m in ms) + 3   # reply primed with
                                                                  # <|start|>assistant<|message|>
    count_messages([]) = 0                                        # nothing is sent

Content ``None`` counts 0; list content (multimodal parts) counts the ``text`` of its text
parts. The cookbook does not cover tool calls; counting each call's function name and
arguments is memlab's documented extension (ids and the "type" field are not counted).
"""

from __future__ import annotations

import binascii
import functools
import hashlib
import math
import threading
from abc import abstractmethod
from collections.abc import Callable, Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from .base import Component, ConfigError, MemlabError, Param

#: Fixed framing tokens per message and for priming the reply (OpenAI cookbook).
TOKENS_PER_MESSAGE = 3
TOKENS_PER_NAME = 1
REPLY_PRIMING_TOKENS = 3

_CACHE_SIZE = 65536
_COUNTED_FIELDS = ("role", "content", "name", "tool_call_id")


class TokenCounter(Component):
    """Counts tokens of texts and OpenAI chat messages (see the module docstring for the rule)."""

    @abstractmethod
    def _count(self, text: str) -> int:
        """Tokens in ``text``, uncached."""

    def count(self, text: str) -> int:
        """Tokens in ``text``; results are memoised per instance (LRU, 65536 entries)."""
        if not isinstance(text, str):
            raise TypeError(f"count expects a string, got {type(text).__name__}")
        cached = self.__dict__.get("_count_cached")
        if cached is None:  # created lazily so subclasses need not call a base __init__
            cached = self._count_cached = functools.lru_cache(maxsize=_CACHE_SIZE)(self._count)
        return cached(text)

    def cache_info(self) -> Any:
        """``functools.lru_cache`` statistics of ``count`` (hits, misses, size)."""
        cached = self.__dict__.get("_count_cached")
        return cached.cache_info() if cached is not None else None

    def _on_params_changed(self) -> None:
        self.__dict__.pop("_count_cached", None)  # a new configuration counts differently

    def __getstate__(self) -> dict[str, Any]:
        # the cache wraps a bound method; drop it so counters pickle (joblib, dask workers)
        state = dict(self.__dict__)
        state.pop("_count_cached", None)
        return state

    def count_message(self, message: Mapping[str, Any]) -> int:
        """Tokens of one chat message, framing included (no reply priming)."""
        if len(message) == 2:
            # the common {"role", "content"} message of text, counted without the general walk
            # (a context is counted message by message at every probe of a replay)
            role, content = message.get("role"), message.get("content")
            if type(role) is str and type(content) is str:
                cached = self.__dict__.get("_count_cached")
                if cached is None:
                    return TOKENS_PER_MESSAGE + self.count(role) + self.count(content)
                return TOKENS_PER_MESSAGE + cached(role) + cached(content)
        total = TOKENS_PER_MESSAGE
        for key in _COUNTED_FIELDS:
            value = message.get(key)
            if value is None:
                continue
            if key == "content" and isinstance(value, list):
                total += sum(self.count(str(part.get("text", ""))) for part in value
                             if isinstance(part, Mapping) and part.get("type") == "text")
            else:
                total += self.count(value.value if hasattr(value, "value") else str(value))
        if message.get("name") is not None:
            total += TOKENS_PER_NAME
        for call in message.get("tool_calls") or []:
            fn = call.get("function", call)
            total += self.count(str(fn.get("name", ""))) + self.count(str(fn.get("arguments", "")))
        return total

    def count_messages(self, messages: Sequence[Mapping[str, Any]]) -> int:
        """Tokens of a whole request: every message plus 3 for the reply priming; 0 if empty."""
        if not messages:
            return 0
        return sum(self.count_message(m) for m in messages) + REPLY_PRIMING_TOKENS


class ApproxTokenCounter(TokenCounter):
    """Fast estimate: ``count(text) = ceil(len(text) / chars_per_token)`` (so "" -> 0).

    ``len`` counts Unicode code points. 4 characters per token is OpenAI's rule of thumb
    for English; it underestimates CJK text, which is closer to 1 token per character.
    """

    constraints = {"chars_per_token": Param(float, gt=0, finite=True)}

    def __init__(self, chars_per_token: float = 4.0):
        self.chars_per_token = chars_per_token
        self._on_params_changed()

    def _count(self, text: str) -> int:
        return math.ceil(len(text) / self.chars_per_token)


# The encodings shipped in memlab/data/tiktoken/. Each file is named as tiktoken names its
# cache entry (sha1 of the official download address) and is checked against tiktoken's
# published sha256. pat_str and special tokens are tiktoken_ext.openai_public's (MIT);
# tests/test_tokens.py checks they still match the installed tiktoken.
_O200K_PAT = "|".join([  # noqa: FLY002 - kept in tiktoken's form
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""\p{N}{1,3}""",
    r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
    r"""\s*[\r\n]+""",
    r"""\s+(?!\S)""",
    r"""\s+""",
])
_CL100K_PAT = (r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+|"""
               r""" ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""")

ENCODINGS: dict[str, dict[str, Any]] = {
    "o200k_base": {
        "file": "fb374d419588a4632f3f557e76b4b70aebbca790",
        "sha256": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
        "pat_str": _O200K_PAT,
        "special_tokens": {"<|endoftext|>": 199999, "<|endofprompt|>": 200018},
    },
    "cl100k_base": {
        "file": "9b5ad71b2ce5302211f9c61530b329a4922fc6a4",
        "sha256": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
        "pat_str": _CL100K_PAT,
        "special_tokens": {"<|endoftext|>": 100257, "<|fim_prefix|>": 100258,
                           "<|fim_middle|>": 100259, "<|fim_suffix|>": 100260,
                           "<|endofprompt|>": 100276},
    },
}

_loaded: dict[str, Any] = {}
_load_lock = threading.Lock()


def data_dir() -> Path:
    """The folder holding the shipped tiktoken BPE files."""
    return Path(str(resources.files("memlab") / "data" / "tiktoken"))


def load_encoding(name: str, directory: Path | None = None) -> Any:
    """The tiktoken ``Encoding`` ``name``, read from ``directory`` (default: the shipped files).

    Never touches the network or tiktoken's download cache. Loaded encodings are shared
    process-wide (they are immutable). Raises MemlabError for an unknown name, a missing
    file or a file whose sha256 does not match.
    """
    if name not in ENCODINGS:
        raise ConfigError(f"unknown tiktoken encoding {name!r}; available: {', '.join(sorted(ENCODINGS))}")
    key = f"{name}@{directory}" if directory is not None else name
    with _load_lock:
        if key not in _loaded:
            _loaded[key] = _read_encoding(name, directory or data_dir())
        return _loaded[key]


def _read_encoding(name: str, directory: Path) -> Any:
    import tiktoken

    spec = ENCODINGS[name]
    path = Path(directory) / spec["file"]
    if not path.is_file():
        raise MemlabError(f"tiktoken file for {name!r} not found: {path} "
                          f"(memlab ships it as package data; reinstall memlab)")
    data = path.read_bytes()
    if hashlib.sha256(data).hexdigest() != spec["sha256"]:
        raise MemlabError(f"tiktoken file for {name!r} is corrupt: {path} "
                          f"(sha256 differs from {spec['sha256']})")
    # "<base64 token> <rank>" per line, as tiktoken.load.load_tiktoken_bpe reads it; the file
    # is pinned by its sha256, so one split of the whole text pairs the fields (5x faster
    # than a b64decode call per line: this is most of a short command's start-up)
    fields = data.split()
    ranks = dict(zip(map(binascii.a2b_base64, fields[0::2]), map(int, fields[1::2])))
    return tiktoken.Encoding(name=name, pat_str=spec["pat_str"], mergeable_ranks=ranks,
                             special_tokens=dict(spec["special_tokens"]))


def encoding_for_model(model: str) -> str:
    """The encoding name tiktoken assigns to ``model`` (e.g. gpt-4o -> o200k_base)."""
    from tiktoken.model import encoding_name_for_model

    try:
        return encoding_name_for_model(model)
    except KeyError:
        raise ConfigError(f"unknown model {model!r} for tiktoken; pass encoding= one of "
                          f"{', '.join(sorted(ENCODINGS))}") from None


class TiktokenCounter(TokenCounter):
    """Exact OpenAI token counts with tiktoken, offline.

    ``encoding`` is ``"o200k_base"`` (the default; gpt-4o, gpt-4.1, o-series) or
    ``"cl100k_base"`` (gpt-4, gpt-3.5-turbo); alternatively ``model`` names a model and
    tiktoken's model table picks the encoding. Text is encoded as ordinary text: special
    tokens such as ``<|endoftext|>`` inside a message are counted as the characters they are.
    The constructor only checks names; the BPE file is read on the first count.
    """

    constraints = {"encoding": Param(choices=tuple(sorted(ENCODINGS)), none=True),
                   "model": Param(str, none=True)}

    def __init__(self, encoding: str | None = None, model: str | None = None):
        self.encoding = encoding
        self.model = model
        self._on_params_changed()

    def _on_params_changed(self) -> None:
        super()._on_params_changed()
        name = self.encoding
        if self.model is not None:
            by_model = encoding_for_model(self.model)
            if name is not None and name != by_model:
                raise ConfigError(f"encoding {name!r} contradicts model {self.model!r}, "
                                  f"which uses {by_model!r}; give one of them")
            name = by_model
        name = name or "o200k_base"
        if name not in ENCODINGS:  # the encoding parameter is declared; this is the model's
            raise ConfigError(f"tiktoken encoding {name!r} (for model {self.model!r}) is not shipped "
                              f"with memlab; available: {', '.join(sorted(ENCODINGS))}")
        self._encoding_name = name
        self._encode: Callable[[str], list[int]] | None = None

    @property
    def encoding_name(self) -> str:
        """The encoding actually used (resolved from ``model`` or the default)."""
        return self._encoding_name

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` (ordinary text, no special tokens)."""
        if self._encode is None:
            self._encode = load_encoding(self._encoding_name).encode_ordinary
        return self._encode(text)

    def _count(self, text: str) -> int:
        return len(self.encode(text))

    def __getstate__(self) -> dict[str, Any]:
        state = super().__getstate__()
        state["_encode"] = None  # reloaded (from the shared cache) on first use
        return state
