"""The LLM interface: chat messages in, a ``Completion`` with its token cost out.

Every memlab component that calls a model (summariser, extractor, query rewriter,
expander, relevance filter, answerer) goes through ``LLM.complete`` and keeps its own
``LLMUsage`` tally of what *it* spent, so a strategy can report its LLM cost per step
even when the steps share one client, without counting a call twice.

Token counts are the cost of the work, not of the cache state: an answer replayed from a
``ResponseCache`` counts the tokens its original call cost, so the same configuration
reports the same numbers on a cold and a warm cache. What the cache saved is counted
apart (``LLMUsage.cached_calls`` and ``cached_tokens``).

**Structured output.** A step that asks for JSON passes the JSON schema of the answer with its
request, ``complete(messages, schema={...})`` (the schemas live beside the prompts, in
``memlab.llm.prompts``). A client that declares ``Capabilities.structured_output`` turns it into
its own form (``LocalLLM``: a llama.cpp grammar, so the model can only write JSON of that shape;
``OpenAIChat``: the server's ``response_format``, when its constructor says the endpoint takes
one); any other client never sees it (``LLM.complete`` drops it), so a client that cannot
constrain its output, or was told not to, answers the same request as before, cache key
included. Format errors are counted the same either way: an answer the step cannot read.

**One word.** A step whose whole answer is one word from a fixed list (a judge's label:
CORRECT/WRONG, yes/no) passes ``one_of=[words]``; a client that ``accepts_one_of()``
(``LocalLLM``) can then write only one of them, any other client never sees it. Such a step may
send a ``schema`` beside it for clients that constrain JSON but not words.
"""

from __future__ import annotations

import asyncio
import threading
from abc import abstractmethod
from dataclasses import dataclass, fields
from typing import Any, Generator

from ..base import Component, ConfigError, MemlabError
from ..capabilities import Capabilities

Message = dict[str, Any]

#: The request parameter carrying the JSON schema an answer must follow (``complete(..., schema=...)``).
SCHEMA_PARAM = "schema"
#: The request parameter listing the only words an answer may be (``complete(..., one_of=[...])``).
ONE_OF_PARAM = "one_of"


@dataclass(frozen=True)
class Completion:
    """One answer of a chat model.

    ``prompt_tokens``/``completion_tokens`` are what the call cost as reported by the
    server (or counted by ``OfflineLLM``). ``cached`` is True when the answer came
    from a ``ResponseCache``: the token fields then say what the original call cost
    (stored with the answer), and usage tallies count them like any other call's.
    """

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    model: str = ""
    cached: bool = False


class LLMError(MemlabError):
    """An LLM step failed for good: the model was unreachable or kept failing after its retries,
    or its answers never had the expected format. ``replay`` turns it into a row with ``error``."""


@dataclass
class LLMUsage:
    """Cumulative cost of the calls made, whether a model or a cache answered them.

    - ``prompt_tokens``, ``completion_tokens``: summed over every call, a cache hit counting
      the tokens its original call cost (so the figures do not depend on the cache state);
    - ``calls``: every call, cache hits included;
    - ``cached_calls``: how many of ``calls`` a cache answered; ``cached_tokens``: their
      prompt + completion tokens, i.e. what the cache saved.

    - ``format_errors``: answers that did not have the format the step asked for (JSON an
      extractor or a relevance filter could not read); the step retried or read what it could.

    ``billed_tokens = total_tokens - cached_tokens`` is what reached a model in this run.
    """

    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0
    cached_calls: int = 0
    cached_tokens: int = 0
    format_errors: int = 0

    def record(self, completion: Completion) -> None:
        prompt, answer = int(completion.prompt_tokens), int(completion.completion_tokens)
        self.prompt_tokens += prompt
        self.completion_tokens += answer
        self.calls += 1
        if completion.cached:
            self.cached_calls += 1
            self.cached_tokens += prompt + answer

    def add(self, other: "LLMUsage") -> "LLMUsage":
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))
        return self

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def billed_tokens(self) -> int:
        """Tokens of the calls a model answered (cache hits excluded)."""
        return self.total_tokens - self.cached_tokens

    def as_dict(self) -> dict[str, int]:
        return {f.name: int(getattr(self, f.name)) for f in fields(self)}

    def copy(self) -> "LLMUsage":
        return LLMUsage(**self.as_dict())


def sum_usage(usages: list[LLMUsage]) -> LLMUsage:
    total = LLMUsage()
    for u in usages:
        total.add(u)
    return total


class LLM(Component):
    """A chat model. ``complete`` is the only method a subclass must write.

    ``usage`` is the client's own cumulative tally (thread-safe); ``reset_usage`` zeroes it.
    ``acomplete`` is the async counterpart; the default runs ``complete`` in a worker
    thread, clients with a native async transport (``OpenAIChat``) override it.

    ``schema=`` (a JSON schema, a dict) in a call's parameters reaches ``_complete`` only when
    ``accepts_schema()`` is True (the client then constrains its answer to it); otherwise it
    is dropped (see the module docstring).
    """

    @abstractmethod
    def _complete(self, messages: list[Message], **params: Any) -> Completion:
        """Produce one completion (no usage bookkeeping: ``complete`` does that)."""

    def complete(self, messages: list[Message], **params: Any) -> Completion:
        completion = self._complete(list(messages), **self._schema_params(params))
        self._record(completion)
        return completion

    def accepts_schema(self) -> bool:
        """True when this client constrains an answer to the ``schema=`` of its request
        (False here: a subclass that can says so, usually as its constructor configures it)."""
        return False

    def accepts_one_of(self) -> bool:
        """True when this client constrains an answer to one of the ``one_of=`` words of its
        request (False here: the parameter is then dropped)."""
        return False

    def capabilities(self) -> Capabilities:
        """What this client declares: ``structured_output`` (see ``accepts_schema()``)."""
        return Capabilities(structured_output=self.accepts_schema())

    def _schema_params(self, params: dict[str, Any]) -> dict[str, Any]:
        """``params`` with ``schema`` and ``one_of`` checked, each dropped unless this client takes it."""
        if ONE_OF_PARAM in params:
            words = params[ONE_OF_PARAM]
            if not isinstance(words, (list, tuple)) or not words or not all(isinstance(w, str) and w for w in words):
                raise ConfigError(f"{type(self).__name__}.complete parameter 'one_of': expected a non-empty list of "
                                  f"non-empty strings, got {words!r}"[:300])
            if not self.accepts_one_of():
                params = {k: v for k, v in params.items() if k != ONE_OF_PARAM}
        if SCHEMA_PARAM not in params:
            return params
        schema = params[SCHEMA_PARAM]
        if not isinstance(schema, dict):
            raise ConfigError(f"{type(self).__name__}.complete parameter 'schema': expected a JSON schema "
                              f"(a dict), got {type(schema).__name__}")
        if self.accepts_schema():
            return params
        return {k: v for k, v in params.items() if k != SCHEMA_PARAM}

    async def acomplete(self, messages: list[Message], **params: Any) -> Completion:
        return await asyncio.to_thread(self.complete, messages, **params)

    # -- usage -------------------------------------------------------------------------
    def _usage_state(self) -> tuple[threading.Lock, LLMUsage]:
        # created on first use so subclasses need not call a base __init__
        state = self.__dict__.get("_usage_pair")
        if state is None:
            state = self.__dict__.setdefault("_usage_pair", (threading.Lock(), LLMUsage()))
        return state

    def _record(self, completion: Completion) -> None:
        lock, usage = self._usage_state()
        with lock:
            usage.record(completion)

    @property
    def usage(self) -> LLMUsage:
        """A snapshot of the cumulative usage since construction or ``reset_usage``."""
        lock, usage = self._usage_state()
        with lock:
            return usage.copy()

    def reset_usage(self) -> None:
        lock, _ = self._usage_state()
        with lock:
            self.__dict__["_usage_pair"] = (lock, LLMUsage())

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        pair = state.pop("_usage_pair", None)
        if pair is not None:
            state["_usage_snapshot"] = pair[1].copy()
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        state = dict(state)
        snapshot = state.pop("_usage_snapshot", None)
        self.__dict__.update(state)
        if snapshot is not None:
            self.__dict__["_usage_pair"] = (threading.Lock(), snapshot)


#: An LLM step's logic, written once for both drivers: a generator that yields each request
#: (the messages, or ``(messages, params)``), receives the answer's text, and returns the
#: step's result. ``UsesLLM.run_program`` drives it with blocking calls, ``arun_program``
#: with awaited ones, so the sync and async paths cannot drift apart.
LLMProgram = Generator[Any, str, Any]


class UsesLLM(Component):
    """Mixin for steps that call ``self.llm``: a per-step ``usage`` tally and the two drivers
    of an ``LLMProgram``."""

    def run_program(self, program: LLMProgram) -> Any:
        """The program's result, each request answered by ``self.llm.complete``."""
        try:
            request = next(program)
            while True:
                messages, params = _request(request)
                request = program.send(self._call(self.llm, messages, **params).text)
        except StopIteration as done:
            return done.value

    async def arun_program(self, program: LLMProgram) -> Any:
        """The program's result, each request answered by ``await self.llm.acomplete``."""
        try:
            request = next(program)
            while True:
                messages, params = _request(request)
                request = program.send((await self._acall(self.llm, messages, **params)).text)
        except StopIteration as done:
            return done.value

    def _step_usage(self) -> LLMUsage:
        usage = self.__dict__.get("_step_usage_tally")
        if usage is None:
            usage = self.__dict__.setdefault("_step_usage_tally", LLMUsage())
        return usage

    @property
    def usage(self) -> LLMUsage:
        """Tokens this step spent (its calls only, whoever else shares the client)."""
        return self._step_usage().copy()

    def reset_usage(self) -> None:
        self.__dict__["_step_usage_tally"] = LLMUsage()

    def _format_error(self) -> None:
        """Count an answer that did not have the expected format (``LLMUsage.format_errors``)."""
        self._step_usage().format_errors += 1

    def _call(self, llm: LLM, messages: list[Message], **params: Any) -> Completion:
        completion = llm.complete(messages, **for_client(llm, params))
        self._step_usage().record(completion)
        return completion

    async def _acall(self, llm: LLM, messages: list[Message], **params: Any) -> Completion:
        completion = await llm.acomplete(messages, **for_client(llm, params))
        self._step_usage().record(completion)
        return completion


class Op:
    """One operation a composite step's program yields, in its blocking and its awaited form
    (``Op(extractor.extract, extractor.aextract, batch)``): ``drive`` calls the first,
    ``adrive`` awaits the second, and the program receives the result. A step composed of
    parts that may do I/O is so written once for both paths."""

    __slots__ = ("call", "acall", "args", "kwargs")

    def __init__(self, call: Any, acall: Any, *args: Any, **kwargs: Any):
        self.call, self.acall, self.args, self.kwargs = call, acall, args, kwargs


def drive(program: Generator[Op, Any, Any]) -> Any:
    """Run a program of ``Op``s with blocking calls; its return value."""
    try:
        op = next(program)
        while True:
            op = program.send(op.call(*op.args, **op.kwargs))
    except StopIteration as done:
        return done.value


async def adrive(program: Generator[Op, Any, Any]) -> Any:
    """Run a program of ``Op``s with awaited calls; its return value."""
    try:
        op = next(program)
        while True:
            op = program.send(await op.acall(*op.args, **op.kwargs))
    except StopIteration as done:
        return done.value


def for_client(llm: Any, params: dict[str, Any]) -> dict[str, Any]:
    """``params`` for ``llm.complete``: as they are for a memlab ``LLM`` (it reads or drops
    ``schema`` and ``one_of`` itself), without them for any other object with a ``complete`` method."""
    if isinstance(llm, LLM) or not (SCHEMA_PARAM in params or ONE_OF_PARAM in params):
        return params
    return {k: v for k, v in params.items() if k not in (SCHEMA_PARAM, ONE_OF_PARAM)}


def _request(request: Any) -> tuple[list[Message], dict[str, Any]]:
    if isinstance(request, tuple):
        return request[0], dict(request[1])
    return request, {}
