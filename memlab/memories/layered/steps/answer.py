"""The answer step: the agent's own LLM call on the loaded messages."""

from __future__ import annotations

from typing import Any

from ....base import Param
from ....llm.base import LLM, LLMProgram, UsesLLM
from .state import Layers, Step, WorkingState


class Answer(UsesLLM, Step):
    """Generate the reply from the loaded messages with ``llm`` (``max_tokens`` caps it)."""

    constraints = {
        "max_tokens": Param(int, ge=1, none=True),
    }

    def __init__(self, llm: LLM, max_tokens: int | None = None):
        self.llm = llm
        self.max_tokens = max_tokens

    def _params(self) -> dict[str, Any]:
        return {} if self.max_tokens is None else {"max_tokens": self.max_tokens}

    def _answer(self, state: WorkingState) -> LLMProgram:
        state.answer = yield state.messages, self._params()
        state.trace.append("answer")
        return state

    def run(self, state: WorkingState, layers: Layers) -> WorkingState:
        return self.run_program(self._answer(state))

    async def arun(self, state: WorkingState, layers: Layers) -> WorkingState:
        return await self.arun_program(self._answer(state))
