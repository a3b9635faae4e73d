"""CAMEL's own memories (camel-ai) as memlab strategies: ``camel_chat_history``, ``camel_longterm``.

The adapters drive ``camel.memories`` itself: CAMEL's ``ChatHistoryBlock``,
``VectorDBBlock``, ``ChatHistoryMemory``, ``LongtermAgentMemory`` and
``ScoreBasedContextCreator``, with CAMEL's in-memory ``QdrantStorage`` (its default vector
storage; local mode, exact cosine, no server). memlab supplies only what CAMEL would take
from the network or from its agent:

- the embedding: memlab's ``Embedder`` wrapped as a CAMEL ``BaseEmbedding``
  (``MemlabEmbedding``), so no OpenAI embedding is ever constructed;
- the token counter: memlab's ``TokenCounter`` wrapped as a CAMEL ``BaseTokenCounter``
  (``MemlabTokenCounter``), so ``context_tokens`` follows the same rule for every strategy;
- the agent step: at a probe, the question is written to the memory as a USER message and
  the context is read with ``get_context()``, as CAMEL's ``ChatAgent`` does before calling
  the model. The question is then rolled back (popped from the history, deleted from the
  vector storage), because in a replay the probe is not part of the dialogue.

Where CAMEL (0.2.90) behaves differently from memlab's re-implementation, the adapters
reproduce CAMEL, on purpose (the point is to measure the original):

- the newest history message scores ``keep_rate`` (memlab: 1.0); with the question written
  first, the newest dialogue turn scores ``keep_rate ** 2``;
- ``ScoreBasedContextCreator`` ignores ``token_limit``: the whole history (and the recalls)
  is returned, however long (memlab enforces the budget);
- ``LongtermAgentMemory`` recalls with the question it has just written, so the question
  is its own best hit: it takes one of the ``retrieve_limit`` recall slots and appears in
  the context a second time (memlab dedupes and keeps the slot for a real recall);
- ``ChatHistoryMemory`` warns (UserWarning) when its window is full; the adapter silences
  that warning, which a replay would raise at every probe.

``Context.messages`` is CAMEL's context minus the one copy of the question that the
answer step appends itself (memlab's rule for every strategy); the self-recalled copy
stays, and counts in ``token_count``.
"""

from __future__ import annotations

import dataclasses
import uuid
import warnings
from typing import Any

from ..base import MemlabError, Param
from ..capabilities import Capabilities
from ..blocks.chat_history import KEEP_RATE
from ..embeddings.base import Embedder
from ..embeddings.named import make_embedder
from ..records import Hit, MemoryRecord, Role
from ..filters import Where, filter_view, matches
from ..strategy import Context, Strategy
from ..tokens import TiktokenCounter, TokenCounter

#: Namespace of the deterministic CAMEL record uuids (uuid5 of the observation index and id).
_UUID_NAMESPACE = uuid.UUID("6f1c2a52-3d1e-4c55-9d6e-1c0d6b0a5e11")
#: extra_info key carrying the memlab record id through CAMEL's storages.
ID_KEY = "memlab_id"
#: CAMEL's QdrantStorage default collection name (an ISO timestamp) contains ':', which
#: current qdrant-client rejects, so the adapters name the collection.
COLLECTION = "memlab"
#: Seconds between the newest turn (or the probe time) and the question written at a probe.
QUESTION_DELAY = 0.001


def MemlabEmbedding(embedder: Embedder) -> Any:  # noqa: N802 (a class factory: camel is imported lazily)
    """A CAMEL ``BaseEmbedding[str]`` computing memlab's ``embedder`` vectors."""
    return _camel_classes()["embedding"](embedder)


def MemlabTokenCounter(counter: TokenCounter) -> Any:  # noqa: N802
    """A CAMEL ``BaseTokenCounter`` counting messages with memlab's ``counter``."""
    return _camel_classes()["counter"](counter)


_CLASSES: dict[str, Any] = {}


def _camel_classes() -> dict[str, Any]:
    if _CLASSES:
        return _CLASSES
    from camel.embeddings import BaseEmbedding
    from camel.utils import BaseTokenCounter

    class _Embedding(BaseEmbedding[str]):
        def __init__(self, embedder: Embedder) -> None:
            self.embedder = embedder

        def embed_list(self, objs: list[str], **kwargs: Any) -> list[list[float]]:
            return [[float(x) for x in v] for v in self.embedder.embed(list(objs))]

        def get_output_dim(self) -> int:
            return int(self.embedder.dim)

    class _Counter(BaseTokenCounter):
        def __init__(self, counter: TokenCounter) -> None:
            self.counter = counter

        def count_tokens_from_messages(self, messages: list[Any]) -> int:
            return self.counter.count_messages(list(messages)) if messages else 0

        def encode(self, text: str) -> list[int]:
            raise NotImplementedError("memlab's token counter counts; it does not encode")

        def decode(self, token_ids: list[int]) -> str:
            raise NotImplementedError("memlab's token counter counts; it does not decode")

    _CLASSES.update(embedding=_Embedding, counter=_Counter)
    return _CLASSES


def to_camel(record: MemoryRecord, index: int, *, prefix: str = "turn") -> Any:
    """A CAMEL ``MemoryRecord`` for a memlab record (deterministic uuid; the id in extra_info)."""
    from camel.memories import MemoryRecord as CamelRecord
    from camel.messages import BaseMessage
    from camel.types import OpenAIBackendRole, RoleType

    role = record.role
    if role.is_system:  # CAMEL turns a DEVELOPER backend role into no OpenAI message at all
        message = BaseMessage.make_system_message(record.content)
        backend = OpenAIBackendRole.SYSTEM
    elif role is Role.USER:
        message = BaseMessage(role_name=record.name or "user", role_type=RoleType.USER, meta_dict=None,
                              content=record.content)
        backend = OpenAIBackendRole.USER
    elif role is Role.ASSISTANT:
        message = BaseMessage(role_name=record.name or "assistant", role_type=RoleType.ASSISTANT,
                              meta_dict=None, content=record.content)
        backend = OpenAIBackendRole.ASSISTANT
    else:
        raise MemlabError(f"the CAMEL adapters replay system, developer, user and assistant turns; "
                          f"record {record.id!r} has role {role.value!r}")
    return CamelRecord(message=message, role_at_backend=backend,
                       uuid=uuid.uuid5(_UUID_NAMESPACE, f"{prefix}:{index}:{record.id}"),
                       extra_info={ID_KEY: record.id}, timestamp=record.timestamp, agent_id=record.agent_id)


class _CamelStrategy(Strategy):
    """Shared machinery: observed turns, the lazily built CAMEL memory, the probe step.

    The CAMEL objects are not pickled: the strategy pickles its configuration and the
    turns it observed, and the first use after unpickling rebuilds the memory and writes
    the turns again (same uuids, same vectors), so an unpickled strategy behaves the same.
    """

    constraints = {"keep_rate": KEEP_RATE, "token_limit": Param(int, ge=0),
                   "token_counter": Param(TokenCounter, none=True)}

    # retrieve leaves CAMEL's memory as it found it (a question written is taken out again)
    # and calls no LLM, so the replay may ask it again, deeper (Strategy.peek)
    honours_peek = True

    def _on_params_changed(self) -> None:
        self.reset()

    def reset(self) -> None:
        self._observed: list[MemoryRecord] = []
        self._by_id: dict[str, MemoryRecord] = {}
        self._memory: Any = None
        self._probe: tuple[tuple, list[Any]] | None = None  # the last probe's records (see _records_for)
        self._counter = self.token_counter if self.token_counter is not None else TiktokenCounter()

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_memory"] = None  # CAMEL and qdrant objects are rebuilt on first use
        state["_probe"] = None
        return state

    # -- the CAMEL memory ---------------------------------------------------------------
    def _new_memory(self) -> Any:
        raise NotImplementedError

    def _camel(self) -> Any:
        if self._memory is None:
            self._memory = self._new_memory()
            if self._observed:
                self._memory.write_records([to_camel(r, i) for i, r in enumerate(self._observed)])
        return self._memory

    def _creator(self) -> Any:
        from camel.memories import ScoreBasedContextCreator

        return ScoreBasedContextCreator(token_counter=MemlabTokenCounter(self._counter),
                                        token_limit=self.token_limit)

    def observe(self, record: MemoryRecord) -> None:
        index = len(self._observed)
        camel_record = to_camel(record, index)
        self._observed.append(record)
        self._by_id[record.id] = record
        if self._memory is not None:
            self._memory.write_records([camel_record])

    def _question(self, query: str, now: float | None) -> Any:
        # written after the turns it follows, as in a live chat (CAMEL's creator sorts by time)
        last = self._observed[-1].timestamp if self._observed else 0.0
        when = max(now, last) if now is not None else last
        q = MemoryRecord(Role.USER, query, id="__question__", timestamp=when + QUESTION_DELAY)
        return to_camel(q, len(self._observed), prefix="question")

    def _is_question(self, camel_record: Any) -> bool:
        return camel_record.extra_info.get(ID_KEY) == "__question__"

    def _memlab(self, camel_record: Any) -> MemoryRecord:
        return self._by_id[camel_record.extra_info[ID_KEY]]

    def _with_question(self, query: str, now: float | None) -> list[Any]:
        """CAMEL's records for the model after the question is written (then rolled back)."""
        raise NotImplementedError

    def _records_for(self, query: str, now: float | None) -> list[Any]:
        """``_with_question``, reused while nothing was observed since: a replay asks
        ``retrieve`` and ``build_context`` at the same probe, and CAMEL re-reads its whole
        history each time."""
        key = (query, now, len(self._observed))
        if self._probe is None or self._probe[0] != key:
            self._probe = (key, self._with_question(query, now))
        return self._probe[1]

    def build_context(self, query: str, *, now: float | None = None) -> Context:
        records = self._records_for(query, now)
        messages, _ = self._creator().create_context(records)
        # the creator puts the question (newest timestamp, history after recalls) last;
        # the answer step appends it again, so that one copy leaves the memory's context
        kept = [r for r in records if not self._is_question(r.memory_record)]
        order = _creator_order(records)
        question_positions = [i for i, r in enumerate(order) if self._is_question(r.memory_record)]
        if question_positions:
            messages = messages[:question_positions[-1]] + messages[question_positions[-1] + 1:]
        # a record both in the history and among the recalls is one memory, listed once
        memories = {m.id: m for m in (self._memlab(r.memory_record) for r in _creator_order(kept))}
        return Context.of(list(memories.values()), self._counter, messages=list(messages))


def _creator_order(records: list[Any]) -> list[Any]:
    """The order in which CAMEL's ScoreBasedContextCreator emits ``records`` (see its code):
    the first SYSTEM record, then the others sorted (stably) by timestamp."""
    from camel.types import OpenAIBackendRole

    system = next((r for r in records if r.memory_record.role_at_backend == OpenAIBackendRole.SYSTEM), None)
    rest = sorted((r for r in records if r is not system), key=lambda r: r.timestamp)
    return ([system] if system is not None else []) + rest


def _ranked(pairs: list[tuple[MemoryRecord, float]], k: int, where: Where | None) -> list[Hit]:
    kept = [(r, s) for r, s in pairs if matches(filter_view(r), where)]
    kept.sort(key=lambda p: -p[1])  # stable: equal scores keep the given order
    return [Hit(r, float(s), r.timestamp, rank=n, components={"camel": {"score": float(s), "rank": n}})
            for n, (r, s) in enumerate(kept[:k], start=1)]


class CamelChatHistoryStrategy(_CamelStrategy):
    """CAMEL's ``ChatHistoryMemory`` (camel-ai), driven as its ``ChatAgent`` drives it.

    At a probe the question is written first, so the window of ``window_size`` messages
    holds the question and the ``window_size - 1`` newest turns (plus a leading system
    message). Scores are CAMEL's: going back from the newest message (the question), the
    i-th message (i = 1, 2, ...) scores ``keep_rate ** i``, so the newest dialogue turn
    scores ``keep_rate ** 2``; SYSTEM messages score 1.0. ``token_limit`` is handed to
    CAMEL's ``ScoreBasedContextCreator``, which ignores it (CAMEL 0.2.90): the context is
    the whole window. ``keep_rate`` is set on the memory's block (``ChatHistoryMemory``
    does not take one). ``retrieve(query, k)`` is the window, best CAMEL score first,
    equal scores newest first; it ignores the query.
    """

    constraints = {"window_size": Param(int, ge=0, none=True)}

    def __init__(self, window_size: int | None = 10, keep_rate: float = 0.9, token_limit: int = 2048,
                 token_counter: TokenCounter | None = None):
        self.window_size = window_size
        self.keep_rate = keep_rate
        self.token_limit = token_limit
        self.token_counter = token_counter
        self._on_params_changed()

    def _new_memory(self) -> Any:
        from camel.memories import ChatHistoryMemory

        memory = ChatHistoryMemory(context_creator=self._creator(), window_size=self.window_size)
        memory._chat_history_block.keep_rate = self.keep_rate  # no constructor argument for it
        return memory

    def _with_question(self, query: str, now: float | None) -> list[Any]:
        memory = self._camel()
        memory.write_records([self._question(query, now)])
        try:
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message="Chat history window size limit", category=UserWarning)
                return memory.retrieve()
        finally:
            memory.pop_records(1)

    def retrieve(self, query: str, k: int = 5, *, where: Where | None = None,
                 now: float | None = None) -> list[Hit]:
        if k <= 0:
            return []
        window = [r for r in self._records_for(query, now) if not self._is_question(r.memory_record)]
        pairs = [(self._memlab(r.memory_record), r.score) for r in reversed(window)]  # newest first
        return _ranked(pairs, k, where)


class CamelLongtermStrategy(_CamelStrategy):
    """CAMEL's ``LongtermAgentMemory`` (camel-ai): its chat history plus vector recall.

    The memory is CAMEL's, built from CAMEL's ``ChatHistoryBlock(keep_rate)``,
    ``VectorDBBlock(storage=QdrantStorage(in memory), embedding=MemlabEmbedding(embedder))``
    and ``ScoreBasedContextCreator(token_limit)``. At a probe the question is written as a
    USER message, then ``retrieve()`` gives CAMEL's ``history[:1] + recalls + history[1:]``:
    the whole history (CAMEL's creator ignores ``token_limit``) and the ``retrieve_limit``
    nearest records to the question, the question itself first among them (score ~1.0,
    CAMEL's self-recall), so ``retrieve_limit - 1`` real recalls; recall scores are
    Qdrant's cosine similarity. History scores follow CAMEL (the newest message, the
    question, scores ``keep_rate``).

    ``retrieve(query, k)`` is the ranking of CAMEL's ``VectorDBBlock.retrieve(query, k)``
    over the dialogue turns (the question not written: its self-hit would only shift the
    ranks); a blank query gives ``[]`` (its embedding is a zero vector). A blank question
    in ``build_context`` goes to the history only: CAMEL would hand qdrant an empty upsert,
    which fails.
    """

    constraints = {"retrieve_limit": Param(int, ge=0), "embedder": Param(Embedder, none=True)}

    def __init__(self, keep_rate: float = 0.9, retrieve_limit: int = 3, token_limit: int = 512,
                 embedder: Embedder | None = None, token_counter: TokenCounter | None = None):
        self.keep_rate = keep_rate
        self.retrieve_limit = retrieve_limit
        self.token_limit = token_limit
        self.embedder = embedder
        self.token_counter = token_counter
        self._on_params_changed()

    def capabilities(self) -> Capabilities:
        """Asking writes the question into CAMEL's memory (qdrant included) and takes it out
        again, and a second asking does not always answer as the first (``check_strategy``
        finds it): declared as a search that changes state."""
        return dataclasses.replace(super().capabilities(), search_changes_state=True)

    def _new_memory(self) -> Any:
        from camel.memories import ChatHistoryBlock, LongtermAgentMemory, VectorDBBlock
        from camel.storages.vectordb_storages import QdrantStorage

        embedding = MemlabEmbedding(make_embedder(self.embedder))
        storage = QdrantStorage(vector_dim=embedding.get_output_dim(), collection_name=COLLECTION)
        return LongtermAgentMemory(context_creator=self._creator(),
                                   chat_history_block=ChatHistoryBlock(keep_rate=self.keep_rate),
                                   vector_db_block=VectorDBBlock(storage=storage, embedding=embedding),
                                   retrieve_limit=self.retrieve_limit)

    def _with_question(self, query: str, now: float | None) -> list[Any]:
        memory = self._camel()
        question = self._question(query, now)
        topic = memory._current_topic
        if query.strip():
            memory.write_records([question])
        else:
            # CAMEL's VectorDBBlock drops blank content and then hands qdrant an empty upsert,
            # which qdrant-client rejects: do the rest of write_records by hand
            memory.chat_history_block.write_records([question])
            memory._current_topic = query
        try:
            return memory.retrieve()
        finally:
            memory.pop_records(1)
            if query.strip():  # CAMEL's VectorDBBlock skips blank content
                memory.vector_db_block.storage.delete(ids=[str(question.uuid)])
            memory._current_topic = topic

    def retrieve(self, query: str, k: int = 5, *, where: Where | None = None,
                 now: float | None = None) -> list[Hit]:
        if k <= 0 or not query.strip() or not self._observed:
            return []
        block = self._camel().vector_db_block
        limit = k if where is None else len(self._observed)
        recalls = block.retrieve(query, limit=limit)
        pairs = [(self._memlab(r.memory_record), r.score) for r in recalls]
        return _ranked(pairs, k, where)
