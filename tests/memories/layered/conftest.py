from __future__ import annotations

import pytest

from memlab.llm import OpenAIChat
from memlab.offline.loopback import LoopbackServer, OfflineChat, ScriptedChat


@pytest.fixture(scope="module")
def loopback():
    """One server per module (stopping one takes half a second), answering like OfflineLLM
    unless a test scripts answers with ``loopback.chat.push(...)``."""
    chat = ScriptedChat(fallback=OfflineChat())
    with LoopbackServer(chat=chat) as server:
        yield server


@pytest.fixture()
def server(loopback):
    loopback.requests.clear()
    loopback._faults.clear()
    loopback.chat.answers.clear()
    return loopback


@pytest.fixture()
def chat_llm(server):
    return OpenAIChat(model="loop", base_url=server.base_url, api_key="k", backoff=0.001, timeout=5.0)
