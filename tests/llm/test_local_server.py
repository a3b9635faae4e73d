"""`memlab serve-llm` on loopback: start, one chat call through OpenAIChat, a wrong key refused, stop.
The server serves the model named by --model (the small Qwen, chatml: the registry's template)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from memlab.cli import main
from memlab.llm import LLMError, OpenAIChat
from memlab.llm.local import LocalLLM

ROOT = Path(__file__).resolve().parents[2]
KEY = "sk-local-test"
MODEL = "qwen2.5-coder-0.5b"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_ready(proc: subprocess.Popen, url: str, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"serve-llm exited with {proc.returncode}: {proc.stderr.read()}")
        try:
            urllib.request.urlopen(url, timeout=2)
            return
        except urllib.error.HTTPError:
            return  # it answers (401 without a key)
        except OSError:
            time.sleep(0.3)
    raise AssertionError("serve-llm did not start in time")


@pytest.fixture(scope="module")
def server():
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "memlab.cli", "serve-llm", "--port", str(port), "--api-key", KEY,
                             "--n-ctx", "1024", "--model", MODEL],
                            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        _wait_ready(proc, f"http://127.0.0.1:{port}/v1/models")
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_openai_chat_talks_to_it_unchanged(server):
    llm = OpenAIChat(model="local", base_url=server, api_key=KEY, max_tokens=8, max_retries=0)
    messages = [{"role": "system", "content": "Answer in a few words."},
                {"role": "user", "content": "I painted a sunrise over the lake. What did I paint?"}]
    c = llm.complete(messages)
    # the same model, template and greedy decoding as in this process
    assert c.text.strip() == LocalLLM(model=MODEL, n_ctx=1024).complete(messages, max_tokens=8).text
    assert "sunrise" in c.text.lower() and "<|im_end|>" not in c.text and "<|im_start|>" not in c.text
    assert c.prompt_tokens > 10 and 0 < c.completion_tokens <= 8
    assert llm.usage.calls == 1


def test_a_wrong_key_is_refused(server):
    llm = OpenAIChat(model="local", base_url=server, api_key="sk-wrong", max_tokens=4, max_retries=0)
    with pytest.raises(LLMError, match=r"HTTP 401 .*not retried"):
        llm.complete([{"role": "user", "content": "hi"}])


def test_bad_port_is_one_line(capsys):
    assert main(["serve-llm", "--port", "70000"]) == 2
    assert capsys.readouterr().err.strip() == "memlab serve-llm: --port must be in 1..65535, got 70000"


def test_structured_output_in_the_form_this_server_takes(server):
    from memlab.llm.prompts import JUDGE_SCHEMA

    ask = [{"role": "user", "content": "Is the sky green? Reply with JSON only: {\"label\": \"CORRECT\"} or {\"label\": \"WRONG\"}."}]
    llm = OpenAIChat(model="local", base_url=server, api_key=KEY, max_tokens=16, max_retries=0,
                     structured_output="json_object")
    assert json.loads(llm.complete(ask, schema=JUDGE_SCHEMA).text)["label"] in ("CORRECT", "WRONG")
    # llama-cpp-python's server takes a schema beside type json_object only: OpenAI's json_schema form fails (500)
    other = OpenAIChat(model="local", base_url=server, api_key=KEY, max_tokens=16, max_retries=0,
                       structured_output="json_schema")
    with pytest.raises(LLMError, match=r"after 1 attempt\(s\): last error status 500"):
        other.complete(ask, schema=JUDGE_SCHEMA)
