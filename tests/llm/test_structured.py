"""Structured output without a model: the request schemas beside the prompts, which clients take a
``schema=`` (``Capabilities.structured_output``) and in which form, the loopback server checking a
``response_format``, and cache keys telling a constrained request from an unconstrained one."""

from __future__ import annotations

import asyncio

import jsonschema
import pytest

from memlab.base import ConfigError
from memlab.capabilities import Capabilities, capabilities_of
from memlab.llm import LLMError, OpenAIChat, ResponseCache
from memlab.offline import OfflineLLM
from memlab.llm.base import UsesLLM, for_client
from memlab.llm.cache import cache_key
from memlab.llm.grammars import schema_grammar, strict_json_strings
from memlab.llm.local import LocalLLM
from memlab.offline.loopback import LoopbackServer, OfflineChat
from memlab.llm.openai_chat import response_format
from memlab.llm.prompts import (
    EXTRACTION_SCHEMA,
    JUDGE_SCHEMA,
    YES_NO_SCHEMA,
    abstract_schema,
    extract_prompt,
    extract_schema,
    filter_prompt,
    filter_schema,
)
from memlab.offline.loopback import response_format_problem
from memlab.records import MemoryRecord, Role

TURNS = [MemoryRecord(role=Role.USER, content="I moved to Oslo last month and I work at a bakery now.", id="t1", name="Ann"),
         MemoryRecord(role=Role.ASSISTANT, content="That sounds lovely!", id="t2", name="Bob"),
         MemoryRecord(role=Role.USER, content="I drink green tea every morning.", id="t3", name="Ann")]
ASK = [{"role": "user", "content": "hi"}]


@pytest.fixture(scope="module")
def server():
    with LoopbackServer(chat=OfflineChat()) as s:
        yield s


# -- the schemas -------------------------------------------------------------------------------
def test_request_schemas_exact():
    assert JUDGE_SCHEMA == {"title": "memlab_judge", "type": "object",
                            "properties": {"label": {"type": "string", "enum": ["CORRECT", "WRONG"]}},
                            "required": ["label"], "additionalProperties": False}
    assert filter_schema(5, 2) == {"title": "memlab_filter", "type": "object", "properties": {"relevant": {
        "type": "array", "items": {"type": "integer", "enum": [1, 2, 3, 4, 5]}, "maxItems": 2}},
        "required": ["relevant"], "additionalProperties": False}
    assert filter_schema(2, 5)["properties"]["relevant"]["maxItems"] == 2
    assert extract_schema(["t1", "t2", "t1"])["properties"]["memories"]["maxItems"] == 2
    assert "maxItems" not in extract_schema([])["properties"]["memories"]
    item = extract_schema(["t1", "t2", "t1"])["properties"]["memories"]["items"]
    assert item["required"] == ["content", "memory_type", "subject", "source_ids"]
    assert item["properties"]["source_ids"] == {"type": "array", "items": {"type": "string", "enum": ["t1", "t2"]},
                                                "maxItems": 2}
    assert item["properties"]["memory_type"]["enum"] == ["fact", "preference", "event_summary"]
    assert extract_schema([])["properties"]["memories"]["items"]["properties"]["source_ids"] == {
        "type": "array", "items": {"type": "string"}}
    pattern = abstract_schema(4, 3, 2)["properties"]["patterns"]
    assert pattern["maxItems"] == 2
    assert pattern["items"]["properties"]["evidence"] == {"type": "array", "items": {"type": "integer", "enum": [1, 2, 3, 4]},
                                                          "minItems": 3, "maxItems": 4}
    with pytest.raises(Exception, match=r"filter_schema needs n_items >= 1 and max_items >= 1, got 0, 3"):
        filter_schema(0, 3)
    with pytest.raises(Exception, match=r"min_support=5, n_memories=4"):
        abstract_schema(4, 5, 2)


def test_a_constrained_answer_is_one_the_step_reads():
    # what the schema lets through is what the steps' parsers accept
    jsonschema.validate({"memories": [{"content": "Ann lives in Oslo.", "memory_type": "fact", "subject": "location",
                                       "source_ids": ["t1"]}]}, extract_schema(["t1"]))
    jsonschema.validate([{"content": "Ann lives in Oslo.", "memory_type": "fact", "subject": "location",
                          "source_ids": ["t1"]}], EXTRACTION_SCHEMA)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"relevant": [1, 2, 3]}, filter_schema(5, 2))
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"label": "MAYBE"}, JUDGE_SCHEMA)


def test_offline_answers_already_follow_the_schemas():
    llm = OfflineLLM()
    extracted = llm.complete(extract_prompt(TURNS), schema=extract_schema([t.id for t in TURNS])).text
    import json

    data = json.loads(extracted)
    assert data["memories"], extracted
    for m in data["memories"]:  # the stand-in writes the turns' source ids, read back by the extractor
        jsonschema.validate({k: v for k, v in m.items() if k != "source_ids"},
                            {**extract_schema([])["properties"]["memories"]["items"],
                             "required": ["content", "memory_type", "subject"]})
    chosen = llm.complete(filter_prompt("Where does Ann live?", ["Ann moved to Oslo", "Bob likes cats"], 1),
                          schema=filter_schema(2, 1)).text
    jsonschema.validate(json.loads(chosen), filter_schema(2, 1))


def test_schemas_convert_to_grammars():
    for schema in (JUDGE_SCHEMA, YES_NO_SCHEMA, extract_schema(["t1"]), extract_schema([]), filter_schema(5, 3), abstract_schema(6, 3, 3)):
        assert "root ::=" in schema_grammar(schema)._grammar
    assert schema_grammar(JUDGE_SCHEMA) is schema_grammar(dict(JUDGE_SCHEMA))  # built once per schema
    assert 'relevant-item ::= "1" | "2" | "3"' in schema_grammar(filter_schema(3, 2))._grammar
    # the properties in the order the prompt shows them (the converter would sort them by name)
    assert ('memories-item ::= "{" space memories-item-content-kv "," space memories-item-memory-type-kv "," space '
            'memories-item-subject-kv "," space memories-item-source-ids-kv "}" space') in schema_grammar(
        extract_schema(["t1"]))._grammar
    with pytest.raises(ConfigError, match=r"LocalLLM parameter 'schema': llama.cpp cannot turn the JSON schema "
                                          r"'odd' into a grammar .*structured_output=False"):
        schema_grammar({"title": "odd", "type": "tensor"})


# -- which client takes a schema -----------------------------------------------------------------
def test_capabilities_declare_structured_output():
    assert Capabilities().structured_output is False
    assert capabilities_of(OfflineLLM()).structured_output is False
    assert capabilities_of(LocalLLM()).structured_output is True  # the point: a small model made usable
    assert capabilities_of(LocalLLM(structured_output=False)).structured_output is False
    assert capabilities_of(OpenAIChat(model="m")).structured_output is False  # unknown endpoints keep working
    assert capabilities_of(OpenAIChat(model="m", structured_output="json_schema")).structured_output is True
    with pytest.raises(ConfigError, match=r"'structured_output'.*'off', 'json_schema', 'json_object'.*got 'yes'"):
        OpenAIChat(model="m", structured_output="yes")
    with pytest.raises(ConfigError, match=r"'structured_output': expected a bool"):
        LocalLLM(structured_output="on")


def test_offline_ignores_the_schema_and_checks_it():
    llm = OfflineLLM()
    prompt = filter_prompt("Where does Ann live?", ["Ann moved to Oslo", "Bob likes cats"], 1)
    assert llm.complete(prompt, schema=filter_schema(2, 1)) == llm.complete(prompt)
    with pytest.raises(ConfigError, match=r"OfflineLLM.complete parameter 'schema': expected a JSON schema \(a dict\), got str"):
        llm.complete(prompt, schema="json")


def test_local_request_carries_the_schema_only_when_structured():
    on, off = LocalLLM(), LocalLLM(structured_output=False)
    plain = {"temperature": 0.0, "max_tokens": 256, "seed": 0}
    assert on._request_params(on._schema_params({"schema": JUDGE_SCHEMA})) == {
        **plain, "response_format": {"type": "json_object", "schema": JUDGE_SCHEMA}}
    assert off._request_params(off._schema_params({"schema": JUDGE_SCHEMA})) == plain
    llama = on._llama_params(on._request_params({"schema": JUDGE_SCHEMA}))
    assert "response_format" not in llama and llama["grammar"] is schema_grammar(JUDGE_SCHEMA)


def test_response_format_forms():
    assert response_format(JUDGE_SCHEMA, "json_schema") == {"type": "json_schema", "json_schema": {
        "name": "memlab_judge", "strict": True,
        "schema": {k: v for k, v in JUDGE_SCHEMA.items() if k != "title"}}}
    assert response_format({"type": "object"}, "json_schema")["json_schema"]["name"] == "memlab_output"
    assert response_format(JUDGE_SCHEMA, "json_object") == {"type": "json_object", "schema": JUDGE_SCHEMA}


def test_for_client_drops_the_schema_for_a_duck_typed_client():
    from memlab.llm import Completion

    class Plain:
        def complete(self, messages, max_tokens=16):  # knows nothing of schemas
            return Completion(text=str(max_tokens))

    params = {"max_tokens": 8, "schema": JUDGE_SCHEMA}
    assert for_client(Plain(), params) == {"max_tokens": 8}
    assert for_client(OfflineLLM(), params) is params  # a memlab LLM reads or drops it itself

    class Step(UsesLLM):
        def __init__(self, llm):
            self.llm = llm

    assert Step(Plain())._call(Plain(), ASK, **params).text == "8"


# -- OpenAIChat and the loopback server ------------------------------------------------------------
@pytest.mark.parametrize("form", ["off", "json_schema", "json_object"])
def test_openai_chat_sends_the_schema_in_the_form_asked(server, form):
    llm = OpenAIChat(model="m", base_url=server.base_url, api_key="k", max_retries=0, structured_output=form)
    prompt = filter_prompt("Where does Ann live?", ["Ann moved to Oslo", "Bob likes cats"], 1)
    text = llm.complete(prompt, schema=filter_schema(2, 1)).text
    body = server.requests[-1]["body"]
    if form == "off":
        assert "response_format" not in body
    else:
        assert body["response_format"] == response_format(filter_schema(2, 1), form)
    assert text == OfflineLLM().complete(prompt).text
    asyncio.run(llm.acomplete(prompt, schema=filter_schema(2, 1)))
    assert server.requests[-1]["body"] == body  # the async path sends the same request


def test_loopback_refuses_a_malformed_response_format(server):
    assert response_format_problem(None) is None
    assert response_format_problem({"type": "json_schema", "json_schema": {"name": "x", "schema": {}}}) is None
    assert response_format_problem({"type": "json_schema", "json_schema": {"schema": {}}}) == (
        "Missing required parameter: 'response_format.json_schema.name'")
    assert response_format_problem({"type": "xml"}).startswith("Invalid 'response_format': expected an object with type")
    assert response_format_problem({"type": "json_object", "schema": []}) == (
        "Invalid 'response_format.schema': expected an object")
    llm = OpenAIChat(model="m", base_url=server.base_url, api_key="k", max_retries=2)
    with pytest.raises(LLMError, match=r"HTTP 400 .*Invalid 'response_format'.*not retried"):
        llm.complete(ASK, response_format={"type": "xml"})
    assert llm.retries == []


def test_cache_keys_tell_constrained_from_unconstrained(server):
    plain = {"temperature": 0.0}
    constrained = {**plain, "response_format": response_format(JUDGE_SCHEMA, "json_schema")}
    assert cache_key("m", ASK, plain) != cache_key("m", ASK, constrained)
    assert cache_key("m", ASK, constrained) != cache_key(
        "m", ASK, {**plain, "response_format": response_format(filter_schema(2, 1), "json_schema")})
    cache = ResponseCache()
    on = OpenAIChat(model="m", base_url=server.base_url, api_key="k", cache=cache, structured_output="json_schema")
    off = OpenAIChat(model="m", base_url=server.base_url, api_key="k", cache=cache)
    on.complete(ASK, schema=JUDGE_SCHEMA)
    assert not off.complete(ASK, schema=JUDGE_SCHEMA).cached  # a different request: no shared row
    assert len(cache) == 2
    assert on.complete(ASK, schema=JUDGE_SCHEMA).cached and off.complete(ASK).cached
    assert len(cache) == 2


def test_grammar_strings_hold_only_what_json_strings_may():
    # llama-cpp-python's converter lets a string hold raw control characters; the bundled model wrote
    # a newline inside one (an extraction answer no JSON parser reads): the grammar now forbids them
    for schema in (extract_schema(["t1"]), abstract_schema(6, 3, 3)):   # (the judge's label is an enum: no string)
        gbnf = schema_grammar(schema)._grammar
        assert 'char ::= [^"\\\\\\x7F\\x00-\\x1F] |' in gbnf and 'char ::= [^"\\\\] |' not in gbnf
    loose = 'char ::= [^"\\\\] | "\\\\" (["\\\\/bfnrt])\nroot ::= string\n'
    strict = strict_json_strings(loose)
    assert strict.startswith('char ::= [^"\\\\\\x7F\\x00-\\x1F] |') and strict_json_strings(strict) == strict
    assert strict_json_strings('root ::= "1" | "2"\n') == 'root ::= "1" | "2"\n'   # no string: unchanged
    with pytest.raises(ConfigError, match=r"unknown string rule"):
        strict_json_strings('char ::= [^"] | "x"\n')
