import math

import pytest

from memlab import OfflineLLM, strategies
from memlab.cli import main
from memlab.eval import replay
from memlab.eval.answers import Answerer, LLMJudge, normalize_answer, parse_judgement, token_f1
from memlab.offline.loopback import LoopbackServer, ScriptedChat
from memlab.llm.openai_chat import OpenAIChat


def test_normalize_answer_squad_rule():
    assert normalize_answer("  The Cat, sat on a MAT!  ") == "cat sat on mat"


@pytest.mark.parametrize("pred, gold, expected", [
    ("The cat sat", "a cat sat down", 0.8),          # P = 2/2, R = 2/3
    ("running dogs", "run dog", 1.0),                # Porter stems agree
    ("My budget is 900 euros.", "900 euros", 4 / 7),  # P = 2/5, R = 1
    ("blue", "red", 0.0),
    ("", "", 1.0),
    ("the", "a", 1.0),                              # both empty after normalisation
])
def test_token_f1_hand_values(pred, gold, expected):
    assert token_f1(pred, gold) == pytest.approx(expected, abs=1e-12)


def test_token_f1_without_stemming():
    assert token_f1("running dogs", "run dog", stem=False) == 0.0


@pytest.mark.parametrize("reply, score", [
    ('{"label": "CORRECT"}', 1.0), ('```json\n{"label": "WRONG"}\n```', 0.0),
    ("The answer is CORRECT.", 1.0), ("wrong", 0.0)])
def test_parse_judgement(reply, score):
    assert parse_judgement(reply) == score


def test_parse_judgement_without_a_label_is_nan():
    assert math.isnan(parse_judgement("I cannot tell"))


def test_judge_prompt_must_have_its_fields():
    with pytest.raises(Exception, match=r"must contain \{gold\}"):
        LLMJudge(OfflineLLM(), prompt="{question} {prediction}")


def test_offline_answers_are_scored_by_token_f1(tiny):
    df = replay(strategies.get("bm25"), tiny, answerer=Answerer(OfflineLLM())).set_index("probe_id")
    assert df.loc["p_end", "prediction"] == "My cat is called Miso."
    assert df.loc["p_end", "answer_f1"] == pytest.approx(1 / 3)
    assert df.loc["p1", "answer_f1"] == pytest.approx(4 / 7)
    assert math.isnan(df.loc["p_mid", "answer_f1"])  # no gold answer
    assert (df["answer_prompt_tokens"] > 0).all() and (df["judge_tokens"] == 0).all()


def test_answers_and_judge_through_the_openai_client(tiny):
    chat = ScriptedChat(["Miso", '{"label": "CORRECT"}', "800 euros", '{"label": "WRONG"}'])
    with LoopbackServer(chat=chat) as server:
        llm = OpenAIChat(model="m", base_url=server.base_url, api_key="k", max_retries=0)
        sub = tiny.subset(dialogues=["coffee", "trip"])
        sub.dialogues[0].probes = [p for p in sub.dialogues[0].probes if p.id == "p_end"]
        df = replay(strategies.get("bm25"), sub, answerer=Answerer(llm), judge=LLMJudge(llm))
        prompts = [r["body"]["messages"][-1]["content"] for r in server.requests]
    df = df.set_index("probe_id")
    assert df.loc["p_end", "prediction"] == "Miso" and df.loc["p_end", "answer_f1"] == 1.0
    assert df.loc["p_end", "judge_correct"] == 1.0
    assert df.loc["p1", "judge_correct"] == 0.0 and df.loc["p1", "answer_f1"] == 0.5
    assert "Question: What is the cat called?" in prompts[0]
    assert "Gold answer: Miso" in prompts[1] and "Generated answer: Miso" in prompts[1]
    assert (df["judge_tokens"] > 0).all()
    # every judged row names the judge's prompt set (name@version) and model
    assert set(df["judge_prompt_set"]) == {"lenient@v2"} and set(df["judge_model"]) == {"m"}


def test_cli_answer_llm_offline_reports_answer_f1(tmp_path, capsys):
    import json

    from .conftest import tiny_doc
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(tiny_doc()))
    assert main(["eval", str(path), "--answer-llm", "offline", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["answer_f1"] == pytest.approx((1 / 3 + 4 / 7) / 2)
    assert main(["eval", str(path), "--judge-llm", "offline"]) == 2


def test_token_f1_counts_chinese_characters_as_tokens():
    # prediction 10 characters, gold 2, both gold characters shared: P = 2/10, R = 1
    assert token_f1("我现在早上改喝绿茶了", "绿茶") == pytest.approx(2 * 0.2 / 1.2)
    assert token_f1("绿茶 tea", "绿茶 teas") == 1.0
