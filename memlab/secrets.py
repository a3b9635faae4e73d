"""Secrets (API keys): usable by the code that needs them, shown as ``***`` everywhere else.

A ``Secret`` holds a string that ``reveal()`` returns; ``repr``, ``str`` and ``format``
give ``***``, so a component's repr, a results column (``param:llm__api_key``), a CSV,
parquet or JSON output, a spec printed by ``to_spec`` or a log line never shows the key.
It pickles with its value, so joblib and process-pool workers can still use the client;
anything that must not travel (a results file, a chroma collection configuration) stores
``***`` or None instead. Components holding keys (``OpenAIChat``, ``OpenAIEmbedder``)
turn a plain ``api_key`` string into a Secret as it is set.
"""

from __future__ import annotations

from typing import Any

MASK = "***"


class Secret:
    """A string that never prints: ``Secret("sk-...")`` -> ``Secret('***')``; ``reveal()`` gives it."""

    __slots__ = ("_value",)

    def __init__(self, value: str | Secret) -> None:
        if isinstance(value, Secret):
            value = value.reveal()
        if not isinstance(value, str):
            raise TypeError(f"a secret must be a string, got {type(value).__name__}")
        self._value = value

    def reveal(self) -> str:
        """The secret itself, for the one call that needs it (an HTTP client)."""
        return self._value

    def __repr__(self) -> str:
        return f"Secret({MASK!r})"

    def __str__(self) -> str:
        return MASK

    def __format__(self, spec: str) -> str:
        return MASK

    def __bool__(self) -> bool:
        return bool(self._value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash((Secret, self._value))

    def __reduce__(self) -> tuple[Any, ...]:  # workers need the real key to call the API
        return (Secret, (self._value,))

    def __deepcopy__(self, memo: dict[int, Any]) -> Secret:
        return self


def as_secret(value: str | Secret | None) -> Secret | None:
    """None stays None; a string (or Secret) becomes a Secret."""
    return None if value is None else Secret(value)


def reveal(value: str | Secret | None) -> str | None:
    """The plain value of a Secret (a plain string or None is returned as is)."""
    return value.reveal() if isinstance(value, Secret) else value
