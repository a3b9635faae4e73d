"""One implementation per LLM step: a program (generator) driven sync or async gives the same result."""

from __future__ import annotations

import asyncio

from memlab.llm.base import LLM, Completion, UsesLLM


class Echo(LLM):
    """Answers with the last message's content upper-cased, and the params it was given."""

    def __init__(self):
        self.seen: list[tuple[str, dict]] = []

    def _complete(self, messages, **params):
        self.seen.append((messages[-1]["content"], params))
        return Completion(text=messages[-1]["content"].upper(), prompt_tokens=2, completion_tokens=1)


class TwoCalls(UsesLLM):
    def __init__(self, llm: LLM):
        self.llm = llm

    def _program(self, word: str):
        first = yield [{"role": "user", "content": word}]
        second = yield [{"role": "user", "content": first + "!"}], {"max_tokens": 5}
        return [first, second]


def test_the_same_program_runs_sync_and_async():
    sync_llm, async_llm = Echo(), Echo()
    sync_step, async_step = TwoCalls(sync_llm), TwoCalls(async_llm)
    assert sync_step.run_program(sync_step._program("tea")) == ["TEA", "TEA!"]
    assert asyncio.run(async_step.arun_program(async_step._program("tea"))) == ["TEA", "TEA!"]
    assert sync_llm.seen == async_llm.seen == [("tea", {}), ("TEA!", {"max_tokens": 5})]
    assert sync_step.usage.calls == async_step.usage.calls == 2
    assert sync_step.usage.prompt_tokens == 4 and sync_step.usage.completion_tokens == 2


def test_a_program_may_return_without_calling():
    step = TwoCalls(Echo())

    def nothing():
        return "skipped"
        yield  # pragma: no cover - makes this a generator

    assert step.run_program(nothing()) == "skipped"
    assert asyncio.run(step.arun_program(nothing())) == "skipped"
    assert step.usage.calls == 0


def test_composite_steps_are_one_program_driven_both_ways():
    from memlab.llm.base import Op, adrive, drive

    calls = []

    def fetch(x):
        calls.append(("sync", x))
        return x * 2

    async def afetch(x):
        calls.append(("async", x))
        return x * 2

    def program(n):
        total = 0
        for i in range(n):
            total += yield Op(fetch, afetch, i)
        return total

    assert drive(program(3)) == 6 and asyncio.run(adrive(program(3))) == 6
    assert calls == [("sync", 0), ("sync", 1), ("sync", 2), ("async", 0), ("async", 1), ("async", 2)]
