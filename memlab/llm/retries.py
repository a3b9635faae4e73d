"""What the clients that retry (``OpenAIChat``, ``LocalLLM``) record of their failed attempts."""

from __future__ import annotations

from dataclasses import dataclass

from .base import LLM


@dataclass(frozen=True)
class RetryEvent:
    """One failed attempt that was (or, for the last one, would have been) retried."""

    attempt: int          # 1-based attempt number that failed
    reason: str           # "status 429", "timeout", "connection error", "decode error (...)"
    status: int | None
    url: str | None
    wait: float           # seconds slept before the next attempt (0 after the last)


class RetryingLLM(LLM):
    """An ``LLM`` that keeps a log of its failed attempts (``retries``), cleared with its usage."""

    _retries: list[RetryEvent]

    @property
    def retries(self) -> list[RetryEvent]:
        """Every failed attempt so far (cleared by ``reset_usage``)."""
        return list(getattr(self, "_retries", []))

    def reset_usage(self) -> None:
        super().reset_usage()
        self._retries = []
