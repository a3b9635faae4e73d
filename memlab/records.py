"""Memory records, roles, and conversion to OpenAI chat messages.

``MemoryRecord`` is one stored message; ``ContextRecord`` is a record with the score a
memory gave it when retrieved. Both follow CAMEL's ``camel.memories.records`` in
meaning, flattened so a record is plain data (no message class hierarchy).
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from .base import MemlabError, Param

#: The kinds of long-term memory: a fact, a preference, or a summary of events (defined
#: here once; the extraction schema, ``ExtractedMemory`` and the SQLite CHECK read it).
MEMORY_TYPES = ("fact", "preference", "event_summary")
# the constraint of every ``memory_types`` parameter (the lifecycle steps that pick a pool)
MEMORY_TYPES_PARAM = Param((tuple, list), nonempty=True, each=Param(choices=MEMORY_TYPES))


class Role(str, Enum):
    """Who wrote a message, as the OpenAI chat API names it."""

    SYSTEM = "system"
    DEVELOPER = "developer"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"
    FUNCTION = "function"

    @classmethod
    def parse(cls, value: "Role | str") -> "Role":
        if isinstance(value, Role):
            return value
        try:
            return cls(str(value).lower())
        except ValueError:
            names = ", ".join(r.value for r in cls)
            raise MemlabError(f"role must be one of {names}, got {value!r}") from None

    @property
    def is_system(self) -> bool:
        """SYSTEM and DEVELOPER messages set the agent up and are protected in windows."""
        return self in (Role.SYSTEM, Role.DEVELOPER)


@dataclass
class ToolCall:
    """A function call requested by an assistant message."""

    id: str
    name: str
    arguments: str = "{}"

    def to_openai(self) -> dict[str, Any]:
        return {"id": self.id, "type": "function",
                "function": {"name": self.name, "arguments": self.arguments}}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "ToolCall":
        fn = d.get("function", d)
        return cls(id=str(d["id"]), name=str(fn["name"]), arguments=str(fn.get("arguments", "{}")))


@dataclass
class MemoryRecord:
    """One message kept in memory.

    ``timestamp`` is seconds since the Unix epoch; replays set it from dialogue time.
    ``metadata`` is free-form; ``metadata["source_ids"]`` (a list of ids), when present,
    names the dialogue turns a derived memory (a summary, an extracted fact) came from.
    """

    role: Role  # a string such as "user" is accepted and parsed
    content: str
    id: str = field(default_factory=lambda: uuid.uuid4().hex)
    timestamp: float = field(default_factory=time.time)
    agent_id: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None

    def __post_init__(self) -> None:
        self.role = Role.parse(self.role)
        if not isinstance(self.content, str):
            raise MemlabError(f"MemoryRecord.content must be a string, got {type(self.content).__name__}")
        self.id = str(self.id)
        self.timestamp = float(self.timestamp)
        self.tool_calls = [tc if isinstance(tc, ToolCall) else ToolCall.from_dict(tc)
                           for tc in self.tool_calls]

    @property
    def source_ids(self) -> list[str]:
        """The dialogue turns this record stands for: its own id unless it says otherwise."""
        ids = self.metadata.get("source_ids")
        return [str(i) for i in ids] if ids else [self.id]

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "role": self.role.value, "content": self.content, "id": self.id,
            "timestamp": self.timestamp, "agent_id": self.agent_id,
            "metadata": dict(self.metadata),
        }
        if self.tool_calls:
            d["tool_calls"] = [tc.to_openai() for tc in self.tool_calls]
        if self.tool_call_id is not None:
            d["tool_call_id"] = self.tool_call_id
        if self.name is not None:
            d["name"] = self.name
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "MemoryRecord":
        known = {"role", "content", "id", "timestamp", "agent_id", "metadata",
                 "tool_calls", "tool_call_id", "name"}
        unknown = set(d) - known
        if unknown:
            raise MemlabError(f"MemoryRecord.from_dict: unknown field(s) {sorted(unknown)}")
        for required in ("role", "content"):
            if required not in d:
                raise MemlabError(f"MemoryRecord.from_dict: missing field {required!r}")
        return cls(**{k: v for k, v in d.items()})

    def to_openai(self) -> dict[str, Any]:
        """The record as an OpenAI chat-completions message dict."""
        msg: dict[str, Any] = {"role": self.role.value, "content": self.content}
        if self.role is Role.ASSISTANT and self.tool_calls:
            msg["tool_calls"] = [tc.to_openai() for tc in self.tool_calls]
            if not self.content:
                msg["content"] = None
        if self.role is Role.TOOL:
            msg["tool_call_id"] = self.tool_call_id or ""
        if self.name is not None and self.role in (Role.USER, Role.ASSISTANT, Role.FUNCTION):
            msg["name"] = self.name
        return msg


@dataclass
class ContextRecord:
    """A record as retrieved, with the score the memory gave it (higher keeps it longer)."""

    memory_record: MemoryRecord
    score: float
    timestamp: float = 0.0

    @property
    def record(self) -> MemoryRecord:
        return self.memory_record

    @property
    def id(self) -> str:
        return self.memory_record.id


@dataclass
class Hit(ContextRecord):
    """A ranked retrieval result: 1-based ``rank`` and each component's own score and rank.

    ``components`` maps a retriever name to ``{"score": s, "rank": r}`` so that an
    analysis can see which retriever contributed to a fused result.
    """

    rank: int = 0
    components: dict[str, dict[str, float]] = field(default_factory=dict)
