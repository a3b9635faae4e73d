"""LocalLLM over llama.cpp with the base Gemma 3 270M (the fastest registered model, by name):
configuration, template, determinism, usage, cache, async and faults. Every call is short (a few
tokens) so the module takes seconds.

llama-cpp-python is installed by scripts/setup.sh (memlab[local]): if it is missing these tests
fail rather than skip."""

from __future__ import annotations

import asyncio
import pickle

import pytest

from memlab.base import ConfigError
from memlab.llm import LLMError, ResponseCache
from memlab.llm.chat_formats import GEMMA_FORMAT, TRANSCRIPT_FORMAT, fold_messages, render_transcript
from memlab.llm.local import LocalLLM
from memlab.llm.models import model_path, models_dir
from memlab.offline import make_llm

GEMMA = "gemma-3-270m"

TEMPLATE_TOKENS = ("<start_of_turn>", "<end_of_turn>", "[/INST]", "[INST]", "<bos>", "<eos>")
ASK = [{"role": "system", "content": "Answer in a few words."},
       {"role": "user", "content": "Caroline: I painted a sunrise over the lake last week."},
       {"role": "user", "content": "What did Caroline paint?"}]


@pytest.fixture(scope="module")
def llm():
    model = LocalLLM(model=GEMMA, n_ctx=1024, max_tokens=12)
    yield model
    model.close()


# -- configuration (no model loaded) ------------------------------------------------------
def test_constructor_validates_and_loads_nothing(tmp_path):
    with pytest.raises(ConfigError, match=r"LocalLLM parameter 'model_path': expected the path of an existing GGUF"):
        LocalLLM(model_path=str(tmp_path / "missing.gguf"))
    not_gguf = tmp_path / "weights.gguf"
    not_gguf.write_bytes(b"PK\x03\x04 not a gguf")
    with pytest.raises(ConfigError, match=r"'model_path'.*GGUF.*got '.*weights\.gguf'"):
        LocalLLM(model_path=str(not_gguf))
    with pytest.raises(ConfigError, match=r"'n_threads': expected an int >= 1 or None, got 0"):
        LocalLLM(n_threads=0)
    with pytest.raises(ConfigError, match=r"'n_gpu_layers': expected an int >= -1 or None, got -2"):
        LocalLLM(n_gpu_layers=-2)
    with pytest.raises(ConfigError, match=r"'temperature'"):
        LocalLLM(temperature=-0.1)
    with pytest.raises(ConfigError, match=r"'model': expected a model name among qwen2.5-coder-1.5b, .*got 'gpt-9'"):
        LocalLLM(model="gpt-9")
    with pytest.raises(ConfigError, match=r"give model .* or model_path .*, not both"):
        LocalLLM(model=GEMMA, model_path=str(model_path(GEMMA)))
    with pytest.raises(ConfigError, match=r"'prompt_cache': expected one of 'auto', 'prefix', 'off', got 'ram'"):
        LocalLLM(prompt_cache="ram")
    model = LocalLLM(model=GEMMA)
    assert model.load_seconds is None  # lazy: nothing loaded yet
    assert model.resolved_chat_format() == TRANSCRIPT_FORMAT  # the Gemma GGUF is a base model
    assert LocalLLM(model=GEMMA, chat_format="gemma").resolved_chat_format() == GEMMA_FORMAT
    default = LocalLLM()  # the capable instruct model, with its chat template
    assert default.resolved_model() == "qwen2.5-coder-1.5b" and default.resolved_chat_format() == "chatml"
    assert default.resolved_gpu_layers() == 0  # this llama-cpp-python build has no GPU offload


def test_make_llm_names(tmp_path):
    model = make_llm("local")
    assert isinstance(model, LocalLLM) and model.model_path is None and model.cache is not None
    assert model.resolved_model() == "qwen2.5-coder-1.5b"
    assert make_llm(f"local:{GEMMA}").resolved_model() == GEMMA
    assert make_llm("local", kv_slot="judge").kv_slot == "judge"
    with pytest.raises(ConfigError, match=r"model_path"):
        make_llm(f"local:{tmp_path / 'nope.gguf'}")
    with pytest.raises(ConfigError, match=r"'local', 'local:NAME' \(a model name\), 'local:PATH.gguf'"):
        make_llm("lokal")


def test_fold_messages_puts_system_and_names_into_user_turns():
    folded = fold_messages([
        {"role": "system", "content": "S1"}, {"role": "system", "content": "S2"},
        {"role": "user", "name": "Ann", "content": "hi"}, {"role": "assistant", "content": "yo"},
        {"role": "system", "content": "S3"}, {"role": "assistant", "content": "a2"},
        {"role": "tool", "content": "t"}, {"role": "system", "content": "S4"}])
    assert folded == [{"role": "user", "content": "S1\n\nS2\n\nAnn: hi"}, {"role": "assistant", "content": "yo"},
                      {"role": "user", "content": "S3"}, {"role": "assistant", "content": "a2"},
                      {"role": "user", "content": "t"}, {"role": "user", "content": "S4"}]


def test_transcript_prompt():
    assert render_transcript([{"role": "system", "content": "Be brief."},
                              {"role": "user", "name": "Ann", "content": "I live in Oslo.\n\nIt is cold."},
                              {"role": "assistant", "content": "Nice."},
                              {"role": "user", "content": "Question: Where does Ann live?"}]) == (
        "Be brief.\n\nAnn: I live in Oslo. It is cold.\nAssistant: Nice.\nUser: Question: Where does Ann live?\nAnswer:")


# -- the real model --------------------------------------------------------------------------
def test_answers_from_context_without_template_tokens(llm):
    c = llm.complete(ASK)
    assert not c.text.startswith(ASK[-1]["content"])  # answers, does not continue the prompt
    assert not any(t in c.text for t in TEMPLATE_TOKENS), c.text
    assert "sunrise" in c.text.lower(), c.text
    assert c.prompt_tokens > 20 and 0 < c.completion_tokens <= 12
    assert c.model == llm.model_id() and c.model.startswith("gemma-3-270m-q4_k_m.gguf:")
    assert llm.load_seconds is not None and llm.load_seconds > 0
    assert not any(p.name.endswith(".tmp") for p in models_dir().iterdir())  # assembled atomically


def test_a_sliding_window_model_evaluates_every_prompt_afresh(llm):
    # Gemma 3's sliding-window layers answered differently with a kept prefix (measured), so the
    # default prompt_cache="auto" does not reuse it there: the answers equal a fresh evaluation's
    from memlab.llm.kv_reuse import prefix_safe

    assert llm.prompt_cache == "auto" and not prefix_safe(llm.load())
    fresh = LocalLLM(model=GEMMA, n_ctx=1024, max_tokens=12, prompt_cache="off", kv_slot="fresh")
    try:
        other = [{"role": "user", "content": "Where does Ann live? Ann lives in Oslo."}]
        assert [llm.complete(m).text for m in (other, ASK, other)] == [fresh.complete(m).text for m in (other, ASK, other)]
    finally:
        fresh.close()


def test_deterministic_and_usage_counted(llm):
    llm.reset_usage()
    a, b = llm.complete(ASK, max_tokens=6), llm.complete(ASK, max_tokens=6)
    assert a.text == b.text and a.completion_tokens == b.completion_tokens
    usage = llm.usage
    assert usage.calls == 2 and usage.cached_calls == 0
    assert usage.prompt_tokens == a.prompt_tokens * 2 and usage.completion_tokens == a.completion_tokens * 2


def test_cache_answers_repeats_and_counts_them():
    cache = ResponseCache()
    model = LocalLLM(model=GEMMA, n_ctx=1024, max_tokens=4, cache=cache)
    first = model.complete(ASK)
    model.close()  # a hit must not need the model
    second = model.complete(ASK)
    assert not model.loaded
    assert second.cached and second.text == first.text and len(cache) == 1
    assert model.usage.cached_calls == 1 and model.usage.calls == 2
    assert model.usage.cached_tokens == first.prompt_tokens + first.completion_tokens


def test_async_matches_sync(llm):
    sync = llm.complete(ASK, max_tokens=4)

    async def both():
        return await asyncio.gather(llm.acomplete(ASK, max_tokens=4), llm.acomplete(ASK, max_tokens=4))

    answers = asyncio.run(both())
    assert [a.text for a in answers] == [sync.text, sync.text]


def test_prompt_longer_than_the_context_is_an_llm_error(llm):
    long = [{"role": "user", "content": "word " * 1500}]
    with pytest.raises(LLMError, match=r"LocalLLM \(gemma-3-270m-q4_k_m\.gguf, n_ctx=1024\).*not retried"):
        llm.complete(long, max_tokens=4)
    assert llm.complete(ASK, max_tokens=2).text  # the model still answers afterwards


def test_clones_share_the_loaded_model(llm):
    llm.complete(ASK, max_tokens=2)
    clone = llm.clone()
    assert clone.loaded and clone.load() is llm.load()
    assert clone.complete(ASK, max_tokens=2).text == llm.complete(ASK, max_tokens=2).text


def test_pickles_without_the_model(llm):
    llm.complete(ASK, max_tokens=2)
    copy = pickle.loads(pickle.dumps(llm))
    assert copy.load_seconds is None and copy.get_params() == llm.get_params()
    assert copy.usage == llm.usage


def test_a_constrained_extraction_answer_is_json_the_step_reads():
    # the turn on which the bundled model wrote a raw newline inside a JSON string before the
    # grammar's strings were made strict (a format error in every extraction of it)
    from memlab.eval import load_any
    from memlab.extraction.llm import parse_extraction
    from memlab.llm.prompts import extract_prompt, extract_schema

    dialogue = load_any("datasets/travel_advisor.json").dialogues[0]
    turn = [t.to_record(dialogue.id) for t in dialogue.turns()][2]
    assert turn.content == "Somewhere warm by the sea. I'm tired of the cold here in Beijing."
    model = LocalLLM(model=GEMMA, max_tokens=96)
    try:
        answer = model.complete(extract_prompt([turn]), schema=extract_schema(list(turn.source_ids))).text
    finally:
        model.close()
    assert not any(ord(c) < 0x20 for c in answer), repr(answer)
    assert [m.source_ids for m in parse_extraction(answer, list(turn.source_ids))] == [list(turn.source_ids)]


def test_constrained_answers_are_cached_under_the_grammar_rules(monkeypatch):
    import memlab.llm.grammars as grammars
    from memlab.llm.prompts import JUDGE_SCHEMA

    cache = ResponseCache()
    model = LocalLLM(model=GEMMA, n_ctx=1024, max_tokens=8, cache=cache)
    first = model.complete(ASK, schema=JUDGE_SCHEMA)
    assert model.complete(ASK, schema=JUDGE_SCHEMA).cached
    monkeypatch.setattr(grammars, "GRAMMAR_RULES", "other rules")   # answers made under older rules are not served
    third = model.complete(ASK, schema=JUDGE_SCHEMA)
    model.close()
    assert not third.cached and third.text == first.text and len(cache) == 2
