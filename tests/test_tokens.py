import math
import pickle
import re
import shutil

import pytest

from memlab.base import ConfigError, MemlabError
from memlab.tokens import (
    ENCODINGS,
    ApproxTokenCounter,
    TiktokenCounter,
    TokenCounter,
    data_dir,
    load_encoding,
)

# Counted once with the official BPE files; both encodings agree except on CJK text.
KNOWN = [
    ("hello world", 2, 2),
    ("Hello, world!", 4, 4),
    ("The quick brown fox jumps over the lazy dog.", 10, 10),
    ("你好，世界", 3, 6),
    ("<|endoftext|>", 7, 7),  # counted as ordinary characters, not the special token
    ("", 0, 0),
]

TOOL_DIALOGUE = [
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "hello world", "name": "alice"},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function",
         "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
    {"role": "tool", "content": "sunny", "tool_call_id": "call_1"},
]


@pytest.mark.parametrize("text,o200k,cl100k", KNOWN)
def test_known_counts_offline(text, o200k, cl100k):
    assert TiktokenCounter().count(text) == o200k
    assert TiktokenCounter("o200k_base").count(text) == o200k
    assert TiktokenCounter("cl100k_base").count(text) == cl100k


def test_model_lookup_picks_encoding():
    assert TiktokenCounter(model="gpt-4o").encoding_name == "o200k_base"
    assert TiktokenCounter(model="gpt-4").encoding_name == "cl100k_base"
    assert TiktokenCounter(model="gpt-3.5-turbo").encoding_name == "cl100k_base"
    assert TiktokenCounter().encoding_name == "o200k_base"
    assert TiktokenCounter(encoding="cl100k_base", model="gpt-4").encoding_name == "cl100k_base"


def test_unknown_encoding_and_model_errors():
    with pytest.raises(MemlabError, match=r"^TiktokenCounter parameter 'encoding': expected one of 'cl100k_base', "
                                          r"'o200k_base' or None, got 'p50k_base'$"):
        TiktokenCounter("p50k_base")
    with pytest.raises(MemlabError, match=r"unknown model 'no-such-model'"):
        TiktokenCounter(model="no-such-model")
    with pytest.raises(MemlabError, match=r"p50k_base.*for model 'text-davinci-003'"):
        TiktokenCounter(model="text-davinci-003")
    with pytest.raises(ConfigError, match=r"contradicts model 'gpt-4o'"):
        TiktokenCounter(encoding="cl100k_base", model="gpt-4o")
    with pytest.raises(ConfigError, match=r"unknown tiktoken encoding 'nope'"):
        load_encoding("nope")


def test_missing_and_corrupt_file(tmp_path):
    with pytest.raises(MemlabError, match=r"tiktoken file for 'cl100k_base' not found: .*9b5ad71b"):
        load_encoding("cl100k_base", directory=tmp_path)
    (tmp_path / ENCODINGS["cl100k_base"]["file"]).write_bytes(b"aGk= 0\n")
    with pytest.raises(MemlabError, match=r"tiktoken file for 'cl100k_base' is corrupt"):
        load_encoding("cl100k_base", directory=tmp_path)


def test_constructor_is_lazy_and_cheap():
    counter = TiktokenCounter("cl100k_base")
    assert counter._encode is None  # nothing read yet
    counter.count("x")
    assert counter._encode is not None


def test_matches_official_tiktoken(tmp_path, monkeypatch):
    """Our offline Encoding equals tiktoken's own (pat_str, special tokens, ids)."""
    import tiktoken
    import tiktoken_ext.openai_public as official

    for path in data_dir().iterdir():
        shutil.copy(path, tmp_path / path.name)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    text = "Hello, world! 你好，世界 'll 123456 \n\n  tabs\tand <|endoftext|>"
    for name in ("o200k_base", "cl100k_base"):
        ref = tiktoken.Encoding(**getattr(official, name)())
        ours = load_encoding(name)
        assert ours._pat_str == ref._pat_str
        assert ours._special_tokens == ref._special_tokens
        assert ours.n_vocab == ref.n_vocab
        assert ours.encode_ordinary(text) == ref.encode_ordinary(text)


def test_message_overhead_exact():
    c = TiktokenCounter()
    # 3 framing + role "system" 1 + content 6
    assert c.count_message(TOOL_DIALOGUE[0]) == 10
    # 3 + "user" 1 + "hello world" 2 + "alice" 1 + 1 for the name
    assert c.count_message(TOOL_DIALOGUE[1]) == 8
    # 3 + "assistant" 1 + "get_weather" 2 + '{"city": "Paris"}' 6 (content None counts 0)
    assert c.count_message(TOOL_DIALOGUE[2]) == 12
    # 3 + "tool" 1 + "sunny" 2 + "call_1" 3
    assert c.count_message(TOOL_DIALOGUE[3]) == 9
    assert c.count_messages(TOOL_DIALOGUE) == 10 + 8 + 12 + 9 + 3
    assert c.count_messages([]) == 0


def test_cookbook_example_counts():
    """OpenAI cookbook 'How to count tokens with tiktoken': 129 (gpt-4 / 3.5), 124 (gpt-4o)."""
    messages = [
        {"role": "system", "content": "You are a helpful, pattern-following assistant that "
                                      "translates corporate jargon into plain English."},
        {"role": "system", "name": "example_user",
         "content": "New synergies will help drive top-line growth."},
        {"role": "system", "name": "example_assistant",
         "content": "Things working well together will increase revenue."},
        {"role": "system", "name": "example_user",
         "content": "Let's circle back when we have more bandwidth to touch base on "
                    "opportunities for increased leverage."},
        {"role": "system", "name": "example_assistant",
         "content": "Let's talk later when we're less busy about how to do better."},
        {"role": "user", "content": "This late pivot means we don't have time to boil the "
                                    "ocean for the client deliverable."},
    ]
    assert TiktokenCounter(model="gpt-4").count_messages(messages) == 129
    assert TiktokenCounter(model="gpt-4o").count_messages(messages) == 124


def test_approx_counter_formula():
    c = ApproxTokenCounter()
    assert c.count("") == 0
    assert c.count("abcd") == 1
    assert c.count("abcde") == 2  # ceil(5 / 4)
    assert ApproxTokenCounter(2.5).count("abcdef") == 3  # ceil(6 / 2.5) = ceil(2.4)
    assert c.count("你好世界你") == 2  # code points, not bytes
    # 3 + ceil(4/4) "user" + ceil(11/4) "hello world" + ceil(5/4) "alice" + 1
    assert c.count_message({"role": "user", "content": "hello world", "name": "alice"}) == 3 + 1 + 3 + 2 + 1
    # multimodal content: text parts only
    msg = {"role": "user", "content": [{"type": "text", "text": "abcdefgh"},
                                       {"type": "image_url", "image_url": {"url": "x" * 100}}]}
    assert c.count_message(msg) == 3 + 1 + 2


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), float("inf"), "4", True])
def test_approx_counter_validation(bad):
    message = f"ApproxTokenCounter parameter 'chars_per_token': expected a finite number > 0, got {bad!r}"
    with pytest.raises(ConfigError, match=re.escape(message)):
        ApproxTokenCounter(bad)


class CallCounting(TokenCounter):
    def __init__(self):
        self.calls = 0

    def _count(self, text):
        self.calls += 1
        return len(text)


def test_count_is_cached_per_instance():
    c = CallCounting()
    assert c.count("abc") == 3 and c.count("abc") == 3 and c.count("de") == 2
    assert c.calls == 2
    assert c.cache_info().hits == 1
    other = CallCounting()
    other.count("abc")
    assert other.calls == 1  # caches are not shared between instances
    with pytest.raises(TypeError, match="count expects a string, got int"):
        c.count(3)


def test_set_params_resets_cache():
    c = ApproxTokenCounter(4.0)
    assert c.count("abcdefgh") == 2
    c.set_params(chars_per_token=2.0)
    assert c.count("abcdefgh") == 4
    assert math.isclose(c.get_params()["chars_per_token"], 2.0)


def test_components_follow_the_contract():
    c = TiktokenCounter(model="gpt-4")
    assert c.get_params() == {"encoding": None, "model": "gpt-4"}
    assert repr(c) == "TiktokenCounter(model='gpt-4')"
    clone = c.clone()
    assert clone.encoding_name == "cl100k_base" and clone.count("hello world") == 2
    c.set_params(model=None, encoding="o200k_base")
    assert c.count("你好，世界") == 3


def test_counters_pickle_after_use():
    for counter in (TiktokenCounter("cl100k_base"), ApproxTokenCounter(3.0)):
        before = counter.count("你好，世界")
        copy = pickle.loads(pickle.dumps(counter))
        assert copy.get_params() == counter.get_params()
        assert copy.count("你好，世界") == before
        assert copy.count_messages(TOOL_DIALOGUE) == counter.count_messages(TOOL_DIALOGUE)


def test_shipped_encodings_read_exactly_as_tiktoken_reads_them():
    import base64

    from memlab import tokens as tk

    for name, spec in tk.ENCODINGS.items():
        data = (tk.data_dir() / spec["file"]).read_bytes()
        expected = {}
        for line in data.splitlines():  # tiktoken.load.load_tiktoken_bpe
            if line:
                token, rank = line.split()
                expected[base64.b64decode(token)] = int(rank)
        assert tk._read_encoding(name, tk.data_dir())._mergeable_ranks == expected
