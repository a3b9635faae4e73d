"""The three agent memories of CAMEL: chat history, vector recall, and both together."""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Sequence
from typing import Any

from ..base import Param
from ..blocks.base import check_count, check_records
from ..blocks.chat_history import KEEP_RATE, ChatHistoryBlock
from ..blocks.vectordb import VectorDBBlock
from ..context import ScoreBasedContextCreator
from ..embeddings.base import Embedder
from ..records import ContextRecord, MemoryRecord, Role
from ..filters import Where
from ..storage.kv import KeyValueStore
from ..storage.vector import VectorStore
from .base import AgentMemory, with_agent_id

_UNSET = object()


class ChatHistoryMemory(AgentMemory):
    """The conversation as a window over a ChatHistoryBlock.

    ``retrieve()`` is ``ChatHistoryBlock(storage, keep_rate).retrieve(window_size)``: the
    leading system message plus the last ``window_size`` other messages (all when None),
    scored ``keep_rate ** i`` from the newest. It warns (UserWarning) only when the window
    actually dropped messages, counting non-system messages after the protected system
    message (CAMEL's check misses the case with a system message).

    Scores fall monotonically with age, so under any token budget every keep_rate keeps
    the same newest messages; keep_rate matters only where history competes with other
    scored records (LongtermAgentMemory).
    """

    constraints = {"keep_rate": KEEP_RATE}

    def __init__(self, context_creator: ScoreBasedContextCreator | None = None,
                 storage: KeyValueStore | None = None, window_size: int | None = None,
                 keep_rate: float = 0.9, agent_id: str = ""):
        self.context_creator = context_creator
        self.storage = storage
        self.window_size = window_size
        self.keep_rate = keep_rate
        self.agent_id = agent_id
        self._on_params_changed()

    def _on_params_changed(self) -> None:
        if self.window_size is not None:
            check_count(self.window_size, "window_size")
        self._set_context_creator(self.context_creator)
        block = getattr(self, "_block", None)
        if block is None or block.storage is not self.storage:
            self._block = ChatHistoryBlock(storage=self.storage, keep_rate=self.keep_rate)
        else:  # same storage: keep the history, only rescore
            block.set_params(keep_rate=self.keep_rate)

    @property
    def block(self) -> ChatHistoryBlock:
        return self._block

    def retrieve(self) -> list[ContextRecord]:
        records = self._block.retrieve(self.window_size)
        if self.window_size is not None:
            # the window keeps the protected system message, so everything missing is
            # an older non-system message
            dropped = len(self._block) - len(records)
            if dropped > 0:
                warnings.warn(f"ChatHistoryMemory window_size={self.window_size} left out "
                              f"{dropped} older message(s); raise window_size to keep them",
                              UserWarning, stacklevel=2)
        return records

    def write_records(self, records: Sequence[MemoryRecord]) -> None:
        records = check_records(records, "ChatHistoryMemory.write_records")
        self._block.write_records(with_agent_id(records, self.agent_id))

    def pop_records(self, count: int) -> list[MemoryRecord]:
        return self._block.pop_records(count)

    def remove_records_by_indices(self, indices: Sequence[int]) -> list[MemoryRecord]:
        return self._block.remove_records_by_indices(indices)

    def clear(self) -> None:
        self._block.clear()

    def clean_tool_calls(self) -> int:
        """Drop TOOL and FUNCTION messages and assistant messages that only carry tool calls.

        An assistant message with both text and tool calls keeps its text and loses its
        tool calls (their results are gone, and an unanswered call is invalid for the API).
        Returns the number of messages removed.
        """
        kept: list[MemoryRecord] = []
        records = self._block.records()
        for rec in records:
            if rec.role in (Role.TOOL, Role.FUNCTION):
                continue
            if rec.role is Role.ASSISTANT and rec.tool_calls:
                if not rec.content.strip():
                    continue
                rec = dataclasses.replace(rec, tool_calls=[])
            kept.append(rec)
        self._block.replace_records(kept)
        return len(records) - len(kept)


class VectorDBMemory(AgentMemory):
    """Recall by similarity from a VectorDBBlock(storage, embedding).

    ``retrieve(query=None)`` returns the ``retrieve_limit`` records most similar to
    ``query``, which defaults to the content of the last USER message written (CAMEL's
    "current topic"); none written yet -> []. As in CAMEL the default query usually finds
    its own message first, which is what puts the question into this memory's context.
    """

    def __init__(self, context_creator: ScoreBasedContextCreator | None = None,
                 storage: VectorStore | None = None, embedding: Embedder | None = None,
                 retrieve_limit: int = 3, agent_id: str = ""):
        self.context_creator = context_creator
        self.storage = storage
        self.embedding = embedding
        self.retrieve_limit = retrieve_limit
        self.agent_id = agent_id
        self._on_params_changed()

    def _on_params_changed(self) -> None:
        check_count(self.retrieve_limit, "retrieve_limit")
        self._set_context_creator(self.context_creator)
        block = getattr(self, "_block", None)
        if block is None or block.storage is not self.storage:
            self._block = VectorDBBlock(storage=self.storage, embedding=self.embedding)
            self._current_topic = ""
        elif block.embedding is not self.embedding:
            block.set_params(embedding=self.embedding)

    @property
    def block(self) -> VectorDBBlock:
        return self._block

    @property
    def current_topic(self) -> str:
        """Content of the last USER message written ("" before any)."""
        return self._current_topic

    def retrieve(self, query: str | None = None, where: Where | None = None) -> list[ContextRecord]:
        text = self._current_topic if query is None else query
        return self._block.retrieve(text, limit=self.retrieve_limit, where=where)

    def get_context(self, query: str | None = None) -> tuple[list[dict[str, Any]], int]:
        return self.get_context_creator().create_context(self.retrieve(query))

    def write_records(self, records: Sequence[MemoryRecord]) -> None:
        records = with_agent_id(check_records(records, "VectorDBMemory.write_records"), self.agent_id)
        self._block.write_records(records)
        for rec in records:
            if rec.role is Role.USER:
                self._current_topic = rec.content

    def clear(self) -> None:
        self._block.clear()
        self._current_topic = ""


class LongtermAgentMemory(AgentMemory):
    """A chat history and a vector store together (CAMEL's long-term memory).

    Every record goes to both blocks. ``retrieve(query=None)`` returns
    ``history[:1] + recalls + history[1:]`` where ``history`` is
    ``chat_history_block.retrieve(window_size)`` (scores ``keep_rate ** i``) and the query
    defaults to the last USER message written. memlab's fixes to CAMEL, where the message
    being answered recalls itself and can appear twice:

    - recalls are the ``retrieve_limit`` most similar records that are neither in the
      returned history nor the query message itself (the search fetches
      ``retrieve_limit + number excluded`` candidates, so exclusions never crowd out a
      real older recall); each recall's score is its cosine similarity;
    - a history record that is among the ``retrieve_limit`` most similar records (query
      message not counted) keeps one entry, scored ``max(history score, similarity)``.
      This is what CAMEL's first-occurrence dedupe gives a relevant message inside the
      window, without ever lowering a history score.

    So no record id appears twice. Under a token budget, history scored ``keep_rate ** i``
    competes with recalls scored by similarity: a low keep_rate lets relevant old records
    displace recent turns. ``pop_records`` / ``remove_records_by_indices`` act on the chat
    history only; the vector store keeps its records (as in CAMEL).
    """

    constraints = {"chat_history_block": Param(ChatHistoryBlock, none=True),
                   "vector_db_block": Param(VectorDBBlock, none=True)}

    def __init__(self, context_creator: ScoreBasedContextCreator | None = None,
                 chat_history_block: ChatHistoryBlock | None = None,
                 vector_db_block: VectorDBBlock | None = None,
                 retrieve_limit: int = 3, window_size: int | None = None, agent_id: str = ""):
        self.context_creator = context_creator
        self.chat_history_block = chat_history_block
        self.vector_db_block = vector_db_block
        self.retrieve_limit = retrieve_limit
        self.window_size = window_size
        self.agent_id = agent_id
        self._on_params_changed()

    def _on_params_changed(self) -> None:
        check_count(self.retrieve_limit, "retrieve_limit")
        if self.window_size is not None:
            check_count(self.window_size, "window_size")
        self._set_context_creator(self.context_creator)
        # blocks define __len__, so test for None explicitly (an empty block is falsy)
        if getattr(self, "_history_arg", _UNSET) is not self.chat_history_block:
            given = self.chat_history_block
            self._history = given if given is not None else ChatHistoryBlock()
            self._history_arg = given
        if getattr(self, "_vectors_arg", _UNSET) is not self.vector_db_block:
            given_v = self.vector_db_block
            self._vectors = given_v if given_v is not None else VectorDBBlock()
            self._vectors_arg = given_v
            self._current_topic, self._current_id = "", ""

    @property
    def history_block(self) -> ChatHistoryBlock:
        """The chat history block in use (the default one when ``chat_history_block`` is None)."""
        return self._history

    @property
    def vector_block(self) -> VectorDBBlock:
        """The vector block in use (the default one when ``vector_db_block`` is None)."""
        return self._vectors

    @property
    def current_topic(self) -> str:
        return self._current_topic

    def retrieve(self, query: str | None = None, where: Where | None = None) -> list[ContextRecord]:
        """``history[:1] + recalls + history[1:]``, no record twice (see the class doc).

        An explicit ``query`` excludes only the history window from recalls; ``where``
        filters the vector search.
        """
        history = self._history.retrieve(self.window_size)
        text = self._current_topic if query is None else query
        limit = self.retrieve_limit
        if limit == 0 or not text.strip():
            return history
        position = {r.id: n for n, r in enumerate(history)}
        self_id = self._current_id if query is None else ""
        excluded = set(position) | ({self_id} if self_id else set())
        candidates = self._vectors.retrieve(text, limit=limit + len(excluded), where=where)
        for cand in [c for c in candidates if c.id != self_id][:limit]:
            n = position.get(cand.id)
            if n is not None and cand.score > history[n].score:
                history[n] = dataclasses.replace(history[n], score=cand.score)
        recalls = [c for c in candidates if c.id not in excluded][:limit]
        return history[:1] + recalls + history[1:]

    def get_context(self, query: str | None = None) -> tuple[list[dict[str, Any]], int]:
        return self.get_context_creator().create_context(self.retrieve(query))

    def write_records(self, records: Sequence[MemoryRecord]) -> None:
        records = with_agent_id(check_records(records, "LongtermAgentMemory.write_records"), self.agent_id)
        self._vectors.write_records(records)
        self._history.write_records(records)
        for rec in records:
            if rec.role is Role.USER:
                self._current_topic, self._current_id = rec.content, rec.id

    def pop_records(self, count: int) -> list[MemoryRecord]:
        return self._history.pop_records(count)

    def remove_records_by_indices(self, indices: Sequence[int]) -> list[MemoryRecord]:
        return self._history.remove_records_by_indices(indices)

    def clear(self) -> None:
        self._history.clear()
        self._vectors.clear()
        self._current_topic, self._current_id = "", ""
