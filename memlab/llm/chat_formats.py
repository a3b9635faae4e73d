"""Chat formats memlab registers with llama.cpp, for models whose own template does not fit.

- ``GEMMA_FORMAT`` (``"memlab-gemma"``), for Gemma *instruction-tuned* GGUFs: Gemma's turns, with
  each system message folded into the next user turn and a message's ``name`` written as
  ``"Name: "`` before its content (``fold_messages``). llama.cpp's plain ``"gemma"`` drops system
  messages, and with them memlab's task instructions.
- ``TRANSCRIPT_FORMAT`` (``"memlab-transcript"``), for *base* models with no chat template (the
  base Gemma 3 270M echoes the prompt under Gemma's turns): a plain transcript ending in
  ``"Answer:"`` (``render_transcript``), stopped at ``TRANSCRIPT_STOP``.

``register_chat_format()`` registers both (idempotent); ``LocalLLM`` and ``serve-llm`` call it
before loading a model that uses one of them (``MEMLAB_FORMATS``).
"""

from __future__ import annotations

import threading
from typing import Any

from .base import Message
from .models import TRANSCRIPT

__all__ = ["GEMMA_FORMAT", "TRANSCRIPT_FORMAT", "MEMLAB_FORMATS", "TRANSCRIPT_STOP", "fold_messages",
           "render_transcript", "register_chat_format"]

#: Chat formats registered with llama.cpp by ``register_chat_format``: Gemma turns with the system messages
#: folded in (for Gemma *instruction-tuned* models), and a plain transcript (for base models).
GEMMA_FORMAT = "memlab-gemma"
TRANSCRIPT_FORMAT = TRANSCRIPT
#: The formats above: a model using one needs ``register_chat_format()`` before it loads.
MEMLAB_FORMATS = (GEMMA_FORMAT, TRANSCRIPT_FORMAT)
_FORMAT_LOCK = threading.Lock()


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
