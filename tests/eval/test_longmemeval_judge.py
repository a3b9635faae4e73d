"""LongMemEval's judge prompts as memlab's ``longmemeval@v1`` set (memlab.llm.prompts), and the
judge that speaks them (memlab.eval.answers.LLMJudge) through the real ``openai`` client against
memlab's loopback OpenAI-compatible server.

``get_anscheck_prompt`` below is transcribed from repository xiaowu0162/LongMemEval, path
src/evaluation/evaluate_qa.py, commit 9e0b455f1ef0e2ab8f2e582289761153549043fc, as written
there; what memlab renders must be byte-identical to it for every question type, first on
hand-made strings, then on real LongMemEval oracle dev questions from ../shared.
"""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from memlab import strategies
from memlab.base import ConfigError, MemlabError
from memlab.eval.answers import Answerer, LLMJudge, judge_agreement, judge_rows, parse_yes_no
from memlab.eval.loaders.longmemeval import iter_longmemeval
from memlab.eval.paths import longmemeval_path
from memlab.eval.replay import replay
from memlab.offline.loopback import LoopbackServer, ScriptedChat
from memlab.llm.openai_chat import OpenAIChat
from memlab.llm.prompts import (
    JUDGE_PROMPT_SETS,
    JUDGE_PROMPT_VERSIONS,
    JUDGE_PROMPTS,
    LONGMEMEVAL_JUDGE,
    YES_NO_SCHEMA,
    JudgePromptSet,
    judge_prompt_set,
)

# ---- transcription of xiaowu0162/LongMemEval src/evaluation/evaluate_qa.py @ 9e0b455f -----------
def get_anscheck_prompt(task, question, answer, response, abstention=False):
    if not abstention:
        if task in ['single-session-user', 'single-session-assistant', 'multi-session']:
            template = "I will give you a question, a correct answer, and a response from a model. Please answer yes if the response contains the correct answer. Otherwise, answer no. If the response is equivalent to the correct answer or contains all the intermediate steps to get the correct answer, you should also answer yes. If the response only contains a subset of the information required by the answer, answer no. \n\nQuestion: {}\n\nCorrect Answer: {}\n\nModel Response: {}\n\nIs the model response correct? Answer yes or no only."
            prompt = template.format(question, answer, response)
        elif task == 'temporal-reasoning':
            template = "I will give you a question, a correct answer, and a response from a model. Please answer yes if the response contains the correct answer. Otherwise, answer no. If the response is equivalent to the correct answer or contains all the intermediate steps to get the correct answer, you should also answer yes. If the response only contains a subset of the information required by the answer, answer no. In addition, do not penalize off-by-one errors for the number of days. If the question asks for the number of days/weeks/months, etc., and the model makes off-by-one errors (e.g., predicting 19 days when the answer is 18), the model's response is still correct. \n\nQuestion: {}\n\nCorrect Answer: {}\n\nModel Response: {}\n\nIs the model response correct? Answer yes or no only."
            prompt = template.format(question, answer, response)
        elif task == 'knowledge-update':
            template = "I will give you a question, a correct answer, and a response from a model. Please answer yes if the response contains the correct answer. Otherwise, answer no. If the response contains some previous information along with an updated answer, the response should be considered as correct as long as the updated answer is the required answer.\n\nQuestion: {}\n\nCorrect Answer: {}\n\nModel Response: {}\n\nIs the model response correct? Answer yes or no only."
            prompt = template.format(question, answer, response)
        elif task == 'single-session-preference':
            template = "I will give you a question, a rubric for desired personalized response, and a response from a model. Please answer yes if the response satisfies the desired response. Otherwise, answer no. The model does not need to reflect all the points in the rubric. The response is correct as long as it recalls and utilizes the user's personal information correctly.\n\nQuestion: {}\n\nRubric: {}\n\nModel Response: {}\n\nIs the model response correct? Answer yes or no only."
            prompt = template.format(question, answer, response)
        else:
            raise NotImplementedError
    else:
        template = "I will give you an unanswerable question, an explanation, and a response from a model. Please answer yes if the model correctly identifies the question as unanswerable. The model could say that the information is incomplete, or some other information is given but the asked information is not.\n\nQuestion: {}\n\nExplanation: {}\n\nModel Response: {}\n\nDoes the model correctly identify the question as unanswerable? Answer yes or no only."
        prompt = template.format(question, answer, response) 
    return prompt
# ---- end of transcription ----------------------------------------------------------------------


TYPES = ["single-session-user", "single-session-assistant", "multi-session", "temporal-reasoning",
         "knowledge-update", "single-session-preference"]
#: sha256 of each set's protocol and templates: a changed text must come with a new version
DIGESTS = {
    "lenient@v1": "b68aa50b81e65884633cde4752ab3d885e71b6cd8fa58fd842c6e32353183dc1",
    "strict@v1": "3a1697d584d66560543fbf0173a6da8db1e938ca9d72140b72891f4617918fcc",
    "lenient@v2": "f0f199f34146ace55f0d8e65a704b585fb1f83a281308fe3f202534ee763b032",
    "strict@v2": "0ee5254482089896918ef53d2678b825f065d4283f076b61cd20b02d9883c7f7",
    "longmemeval@v1": "cbac255ffcaf2bface56a96410fe76dfe0ec37e2d251dce4e46823bcaf2a2b78",
}


def _client(server, **kw):
    return OpenAIChat(model="judge-m", base_url=server.base_url, api_key="k", max_retries=0, **kw)


@pytest.mark.parametrize("task", TYPES)
def test_each_type_renders_the_sources_prompt(task):
    q, a, r = "When did I {start} yoga?", "March 3, 2023", "You started in March.\nYes."
    assert LONGMEMEVAL_JUDGE.render(q, a, r, task, "q_1") == get_anscheck_prompt(task, q, a, r)
    # an abstention question (its id holds '_abs') gets the abstention prompt, whatever its type
    assert LONGMEMEVAL_JUDGE.render(q, a, r, task, "q_1_abs") == get_anscheck_prompt(task, q, a, r, abstention=True)


def test_every_set_is_versioned_by_its_text():
    assert {s.id: s.digest for s in JUDGE_PROMPT_VERSIONS.values()} == DIGESTS
    assert {s.id for s in JUDGE_PROMPT_SETS.values()} == {"lenient@v2", "strict@v2", "longmemeval@v1"}  # current
    # v2 is v1's words with the reply asked as one word (a grammar of the two words, LocalLLM)
    for name in ("lenient", "strict"):
        v1, v2 = JUDGE_PROMPT_VERSIONS[f"{name}@v1"], JUDGE_PROMPT_VERSIONS[f"{name}@v2"]
        assert (v1.reply, v2.reply) == ("json", "word") and v2.labels == ("CORRECT", "WRONG")
        assert v2.templates["*"] == v1.templates["*"].replace(
            'Reply with JSON only: {{"label": "CORRECT"}} or {{"label": "WRONG"}}.', "Reply with one word: CORRECT or WRONG.")
    assert (LONGMEMEVAL_JUDGE.reply, LONGMEMEVAL_JUDGE.labels) == ("word", ("yes", "no"))
    assert LONGMEMEVAL_JUDGE.question_types == TYPES
    assert (LONGMEMEVAL_JUDGE.protocol, LONGMEMEVAL_JUDGE.max_tokens, LONGMEMEVAL_JUDGE.schema) == \
        ("yes/no", 10, YES_NO_SCHEMA)


@pytest.fixture(scope="module")
def dev_questions():
    """The first raw entry and loaded probe of each question type, and the first abstention one."""
    path = longmemeval_path()
    if path is None:
        pytest.skip("LongMemEval oracle dev not found (../shared/datasets/longmemeval/ or MEMLAB_LONGMEMEVAL)")
    with open(path, encoding="utf-8") as f:
        raw = {e["question_id"]: e for e in json.load(f)}
    wanted, found = set(TYPES) | {"abs"}, {}
    for dialogue in iter_longmemeval(str(path)):
        probe = dialogue.probes[0]
        key = "abs" if "_abs" in probe.id else probe.category
        if key in wanted and key not in found:
            found[key] = (raw[probe.id], dialogue, probe)
        if len(found) == len(wanted):
            break
    assert set(found) == wanted
    return found


def test_real_dev_questions_render_byte_identical(dev_questions):
    hypothesis = "I think it was 19 days; not sure."
    for key, (entry, _, probe) in dev_questions.items():
        want = get_anscheck_prompt(entry["question_type"], entry["question"], entry["answer"], hypothesis,
                                   abstention="_abs" in entry["question_id"])
        got = LONGMEMEVAL_JUDGE.render(probe.query, probe.answer, hypothesis, probe.category, probe.id)
        assert got == want, key
        assert got.encode("utf-8") == want.encode("utf-8")


def test_the_judge_sends_the_prompt_and_reads_yes_no(dev_questions):
    entry, _, probe = dev_questions["temporal-reasoning"]
    replies = ["yes", "no", "Yes.", "No, the response says 19 days.", "I cannot tell", '{"answer": "yes"}']
    with LoopbackServer(chat=ScriptedChat(replies)) as server:
        judge = LLMJudge(_client(server), prompt_set="longmemeval")
        got = [judge.judge(probe.query, probe.answer, "19 days", probe.category, probe.id) for _ in replies]
        sent = [r["body"] for r in server.requests]
    assert [score for score, _ in got] == [1.0, 0.0, 1.0, 0.0, 0.0, 1.0]
    assert [judge.unreadable(s, c) for s, c in got] == [False, False, False, False, True, False]
    want = get_anscheck_prompt(entry["question_type"], entry["question"], entry["answer"], "19 days")
    assert all(b["messages"] == [{"role": "user", "content": want}] for b in sent)
    assert all(b["max_tokens"] == 10 and b["temperature"] == 0.0 and "response_format" not in b for b in sent)
    assert judge.identity() == {"judge_prompt_set": "longmemeval@v1", "judge_model": "judge-m"}


def test_structured_output_asks_for_yes_or_no():
    with LoopbackServer(chat=ScriptedChat(['{"answer": "yes"}', '{"answer": "no"}'])) as server:
        judge = LLMJudge(_client(server, structured_output="json_schema"), prompt_set="longmemeval@v1")
        scores = [judge.judge("Q?", "A", "R", "multi-session", "q1")[0] for _ in range(2)]
        fmt = server.requests[0]["body"]["response_format"]
    assert scores == [1.0, 0.0]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["name"] == "memlab_judge_yes_no"
    assert fmt["json_schema"]["schema"]["properties"]["answer"]["enum"] == ["yes", "no"]


def test_parse_yes_no_is_the_sources_rule():
    # evaluate_qa.py: label = 'yes' in eval_response.lower()
    for reply in ("yes", "YES", " Yes. ", "eyes", "no", "No.", "", "nope"):
        assert parse_yes_no(reply) == (1.0 if "yes" in reply.lower() else 0.0)


def test_replay_with_the_longmemeval_judge_names_set_and_model(dev_questions):
    _, dialogue, probe = dev_questions["knowledge-update"]
    from memlab.eval.dataset import Dataset

    ds = Dataset(name="lme-one", dialogues=[dialogue])
    with LoopbackServer(chat=ScriptedChat(["the updated answer", "yes"])) as server:
        llm = _client(server)
        rows = replay(strategies.get("bm25"), ds, answerer=Answerer(llm),
                      judge=LLMJudge(llm, prompt_set="longmemeval"))
        judged = server.requests[1]["body"]["messages"][0]["content"]
    row = rows.iloc[0]
    assert row["judge_correct"] == 1.0 and row["judge_prompt_set"] == "longmemeval@v1"
    assert row["judge_model"] == "judge-m"
    assert math.isnan(row["locomo_f1"])   # not a LoCoMo question
    assert judged == get_anscheck_prompt(probe.category, probe.query, probe.answer, "the updated answer")


def test_judge_rows_picks_the_prompt_per_row_and_names_the_set():
    rows = pd.DataFrame({
        "probe_id": ["a", "b_abs", "c"], "category": ["temporal-reasoning", "multi-session", "knowledge-update"],
        "query": ["Q1", "Q2", "Q3"], "answer": ["A1", "A2", None], "prediction": ["P1", "P2", "P3"],
        "answer_f1": [1.0, 0.0, float("nan")]})
    with LoopbackServer(chat=ScriptedChat(["yes", "no"])) as server:
        out = judge_rows(rows, _client(server), ["longmemeval"])
        sent = [r["body"]["messages"][0]["content"] for r in server.requests]
    assert out["judge:longmemeval"].tolist()[:2] == [1.0, 0.0] and math.isnan(out["judge:longmemeval"].iloc[2])
    assert sent == [get_anscheck_prompt("temporal-reasoning", "Q1", "A1", "P1"),
                    get_anscheck_prompt("multi-session", "Q2", "A2", "P2", abstention=True)]
    assert set(out["judge_prompt_set:longmemeval"]) == {"longmemeval@v1"} and set(out["judge_model"]) == {"judge-m"}
    accuracy, _ = judge_agreement(out)
    assert accuracy.set_index("judge").loc["longmemeval", ["prompt_set", "judge_model"]].tolist() == \
        ["longmemeval@v1", "judge-m"]


def test_the_label_sets_keep_their_names():
    with LoopbackServer(chat=ScriptedChat(['{"label": "CORRECT"}', '{"label": "WRONG"}'])) as server:
        out = judge_rows(pd.DataFrame({"query": ["Q"], "answer": ["A"], "prediction": ["P"]}), _client(server))
    assert out[["judge:lenient", "judge:strict"]].iloc[0].tolist() == [1.0, 0.0]
    assert out[["judge_prompt_set:lenient", "judge_prompt_set:strict"]].iloc[0].tolist() == ["lenient@v2", "strict@v2"]
    assert LLMJudge(object()).identity()["judge_prompt_set"] == "lenient@v2"
    assert LLMJudge(object(), prompt_set="lenient@v1").identity()["judge_prompt_set"] == "lenient@v1"
    custom = LLMJudge(object(), prompt="Q {question} G {gold} P {prediction}").identity()["judge_prompt_set"]
    assert custom.startswith("custom@sha-") and LLMJudge(object(), prompt=JUDGE_PROMPTS["strict"]).prompts.id == "strict@v2"


def test_unknown_prompt_set_names_parameter_value_and_known_names():
    with pytest.raises(ConfigError, match=r"LLMJudge parameter 'prompt_set': expected a judge prompt set name among "
                                          r"lenient, strict, longmemeval \(or name@version: lenient@v1, strict@v1, "
                                          r"lenient@v2, strict@v2, longmemeval@v1\), got 'longmemeval-v2'"):
        LLMJudge(object(), prompt_set="longmemeval-v2")
    with pytest.raises(ConfigError, match=r"parameter 'prompt_set'.*got 'longmemeval@v9'"):
        LLMJudge(object(), prompt_set="longmemeval@v9")
    with pytest.raises(MemlabError, match=r"judge_rows parameter 'prompts'.*lenient, strict, longmemeval.*got 'nope'"):
        judge_rows(pd.DataFrame({"query": [], "answer": [], "prediction": []}), object(), ["nope"])
    with pytest.raises(MemlabError, match=r"parameter 'x'.*got 7"):
        judge_prompt_set(7, "parameter 'x'")
    with pytest.raises(ConfigError, match=r"give prompt .* or prompt_set .*, not both"):
        LLMJudge(object(), prompt="{question}{gold}{prediction}", prompt_set="strict")


def test_a_question_type_the_set_does_not_know_is_an_error():
    with pytest.raises(MemlabError, match=r"judge prompt set 'longmemeval@v1' parameter 'category': expected a "
                                          r"question type among single-session-user, .*, got 'multi-hop'"):
        LONGMEMEVAL_JUDGE.render("Q", "A", "P", "multi-hop", "q001")


def test_prompt_sets_are_validated():
    with pytest.raises(MemlabError, match=r"parameter 'protocol': expected one of label, yes/no, got 'score'"):
        JudgePromptSet("x", "v1", {"*": "{question}{gold}{prediction}"}, protocol="score")
    with pytest.raises(MemlabError, match=r"must have three positional fields"):
        JudgePromptSet("x", "v1", {"*": "{question} {} {}"}, protocol="yes/no")
    with pytest.raises(MemlabError, match=r"parameter 'version': expected a non-empty string without '@', got ''"):
        JudgePromptSet("x", "", {"*": "{question}{gold}{prediction}"})


def test_cli_names_an_unknown_prompt_set(tmp_path, capsys):
    from memlab.cli import main

    from .conftest import tiny_doc

    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(tiny_doc()))
    assert main(["eval", str(path), "--answer-llm", "offline", "--judge-llm", "openai",
                 "--judge-prompt-set", "longmemeval-v1"]) == 2
    err = capsys.readouterr().err
    assert "parameter 'prompt_set'" in err and "'longmemeval-v1'" in err and "lenient, strict, longmemeval" in err


def test_answer_study_with_the_longmemeval_set_records_it():
    if longmemeval_path() is None:
        pytest.skip("LongMemEval oracle dev not found (../shared/datasets/longmemeval/ or MEMLAB_LONGMEMEVAL)")
    from memlab.eval.answer_study import answer_slices, answer_study, study_table
    from memlab.offline.llm import OfflineLLM

    slices = answer_slices(locomo_questions=0, lme_questions=2)
    with LoopbackServer(chat=ScriptedChat(["yes", "no"])) as server:
        results = answer_study(OfflineLLM(), slices, ["oracle"], judge_llm=_client(server),
                               judge_prompts=["longmemeval"], loss_judge="longmemeval")
    assert results["judge:longmemeval"].tolist() == [1.0, 0.0] and results["judge_correct"].tolist() == [1.0, 0.0]
    assert set(results["judge_prompt_set"]) == set(results["judge_prompt_set:longmemeval"]) == {"longmemeval@v1"}
    assert set(results["judge_model"]) == {"judge-m"} and set(results["model"]) == {"memlab-offline"}
    table = study_table(results, metrics=["answer_f1", "judge:longmemeval"])
    assert table[["judge_model", "judge_prompt_set:longmemeval"]].values.tolist() == [["judge-m", "longmemeval@v1"]]
