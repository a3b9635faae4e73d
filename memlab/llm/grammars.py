"""llama.cpp grammars that constrain what a local model may write: JSON of a given schema
(``schema_grammar``) or exactly one of a few words (``word_grammar``).

A grammar is its text only (llama.cpp builds a fresh sampler from it for every call), so each is
built once per schema or word list and shared. ``GRAMMAR_RULES`` names how a schema becomes a
grammar: ``LocalLLM`` puts it in the cache key of every constrained request, so answers cached
under older rules are not served again.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from ..base import ConfigError
from .llama_host import INSTALL_HINT

__all__ = ["GRAMMAR_RULES", "schema_grammar", "word_grammar", "strict_json_strings"]

#: Grammars built from JSON schemas, by the schema's canonical JSON (a grammar is its text only:
#: llama.cpp builds a fresh sampler from it for every call, so one object serves every call).
_GRAMMARS: dict[str, Any] = {}
_GRAMMARS_LOCK = threading.Lock()
_MAX_GRAMMARS = 256


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
        raise ConfigError(f"LocalLLM needs llama-cpp-python: {INSTALL_HINT}") from None
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
        raise ConfigError(f"LocalLLM needs llama-cpp-python: {INSTALL_HINT}") from None
    # json.dumps writes each word as a GBNF string literal (same escapes: quotes, backslashes)
    grammar = LlamaGrammar.from_string("root ::= " + " | ".join(json.dumps(w, ensure_ascii=False) for w in items),
                                       verbose=False)
    with _GRAMMARS_LOCK:
        if len(_GRAMMARS) >= _MAX_GRAMMARS:
            _GRAMMARS.clear()
        _GRAMMARS[key] = grammar
    return grammar
