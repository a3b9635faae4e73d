"""Judge calibration: the pairs built from LoCoMo and LongMemEval by rule, the figures, the gate,
its cache, and `memlab eval --judge-llm` refusing a judge that says one label to everything.
The judges here are stand-ins (a scripted endpoint, the offline stand-in, a test double), so the
module takes seconds; tests/llm/test_local_judge.py runs the real models."""

from __future__ import annotations

import json
import math
import random

import pytest

from memlab.base import MemlabError
from memlab.cli import main
from memlab.eval import calibration as cal
from memlab.eval import calibration_set as cs
from memlab.eval.answers import LLMJudge
from memlab.eval.paths import locomo_path, longmemeval_path
from memlab.llm.base import LLM, Completion

needs_data = pytest.mark.skipif(locomo_path() is None or longmemeval_path() is None,
                                reason="LoCoMo or LongMemEval not found (../shared/datasets/)")


class Constant(LLM):
    """A judge model that answers every request with the same text, and records what it was sent."""

    def __init__(self, text: str = "CORRECT"):
        self.text = text
        self.sent: list[dict] = []

    def accepts_schema(self):   # a constraining client: it is sent the schema and the words
        return True

    def accepts_one_of(self):
        return True

    def _complete(self, messages, **params):
        self.sent.append(params)
        return Completion(self.text, 10, 1, "constant")


class Oracle(LLM):
    """A judge model that knows the expected label of each pair (by its prediction and gold)."""

    def __init__(self, pairs):
        self.truth = {(p.gold, p.prediction): p.expected for p in pairs}

    def _complete(self, messages, **params):
        text = messages[-1]["content"]
        gold = text.split("Gold answer: ", 1)[1].split("\n", 1)[0]
        pred = text.split("Generated answer: ", 1)[1].split("\n", 1)[0]
        return Completion("CORRECT" if self.truth[(gold, pred)] else "WRONG", 10, 1, "oracle")


@pytest.fixture(scope="module")
def pairs():
    if locomo_path() is None or longmemeval_path() is None:
        pytest.skip("LoCoMo or LongMemEval not found (../shared/datasets/)")
    return cs.default_pairs()


# -- the set ---------------------------------------------------------------------------------
def test_the_set_is_built_by_rule_balanced_and_deterministic(pairs):
    assert len(pairs) >= 200 and len(pairs) == 224
    assert sum(p.source == "locomo" for p in pairs) == 144 and sum(p.source == "longmemeval" for p in pairs) == 80
    assert sum(p.expected for p in pairs) == len(pairs) / 2   # one CORRECT and one WRONG pair per question
    kinds = {p.kind for p in pairs}
    assert kinds == {"gold", "normalised", "reworded", "other_gold", "wrong_number", "wrong_date"}
    assert {p.category for p in pairs if p.source == "locomo"} == {"multi-hop", "temporal", "open-domain", "single-hop"}
    assert {p.locomo_code for p in pairs if p.source == "locomo"} == {1, 2, 3, 4}
    assert len({p.id for p in pairs}) == len(pairs)
    for p in pairs:
        if p.kind == "gold":
            assert p.prediction == p.gold
        if p.kind == "other_gold":   # another question's gold, of the same category, sharing no token
            assert p.prediction != p.gold and cs.token_f1(p.prediction, p.gold) == 0.0
        assert (p.expected == 1.0) == (p.kind in cs.POSITIVE_KINDS)
    again = cs.default_pairs()
    assert again == pairs and cs.set_hash(again) == cs.set_hash(pairs)
    assert cs.set_hash(cs.default_pairs(seed=1)) != cs.set_hash(pairs)


def test_the_rules():
    rng = random.Random(0)
    assert cs.reword("7 May 2023", rng) == "May 7, 2023"
    assert cs.reword("painting", random.Random(0)) in {s.format(gold="painting") for s in cs._SENTENCES}
    assert cs.wrong_date("7 May 2023") == "7 September 2020"
    assert cs.wrong_date("The week before 9 December 2023") == "The week before 9 April 2020"
    assert cs.wrong_number("27 minutes and 45 seconds") == "30 minutes and 48 seconds"
    assert cs.wrong_number("two weeks") == "five weeks" and cs.wrong_number("$4.5") == "$7.5"
    assert cs.has_date("In 2013") and not cs.has_date("kayaking") and not cs.has_number("kayaking")


# -- the figures and the gate ----------------------------------------------------------------------
def test_a_judge_saying_correct_to_everything_is_refused(pairs):
    llm = Constant("CORRECT")
    result = cal.calibrate(LLMJudge(llm), pairs[:40], use_cache=False)
    assert result["accuracy"] == 0.5 and result["label_rate"] == 1.0 and result["unreadable"] == 0
    assert result["kappa_f1"] == 0.0   # one label everywhere: no agreement beyond chance
    line = cal.gate(result)
    assert line == ("judge Constant (lenient@v2) failed calibration on 40 pairs: accuracy 0.500 < 0.90 and "
                    "CORRECT-label rate 1.000 outside 0.05-0.95 (kappa vs LoCoMo F1>=0.5: 0.000, unreadable 0)")
    # the judge asked for one word: the two labels as one_of, the JSON schema beside them
    assert llm.sent[0]["one_of"] == ["CORRECT", "WRONG"] and llm.sent[0]["schema"]["title"] == "memlab_judge"
    wrong = cal.calibrate(LLMJudge(Constant("WRONG")), pairs[:40], use_cache=False)
    assert wrong["label_rate"] == 0.0 and "CORRECT-label rate 0.000 outside" in cal.gate(wrong)
    silent = cal.calibrate(LLMJudge(Constant("maybe")), pairs[:40], use_cache=False)
    assert silent["unreadable"] == 40 and silent["accuracy"] == 0.0 and cal.gate(silent)


def test_a_judge_that_knows_the_labels_passes_and_agrees_with_f1_where_f1_is_right(pairs):
    result = cal.calibrate(LLMJudge(Oracle(pairs)), pairs, use_cache=False)
    assert result["accuracy"] == 1.0 and result["label_rate"] == 0.5 and cal.gate(result) is None
    assert result["n_pairs"] == 224 and result["n_expected_correct"] == 112
    assert all(v["accuracy"] == 1.0 for v in result["by_kind"].values())
    # LoCoMo's F1 >= 0.5 misses the reworded answers: kappa below 1, and stated with its threshold
    assert 0.5 < result["kappa_f1"] < 1.0 and result["f1_threshold"] == 0.5 and result["f1_accuracy"] < 1.0
    record = cal.record(result)
    assert "labels" not in record and record["set_hash"] == cs.set_hash(pairs)


def test_the_longmemeval_set_reads_locomo_pairs_with_its_basic_prompt(pairs):
    llm = Constant("yes")
    sample = [p for p in pairs if p.source == "locomo"][:2] + [p for p in pairs if p.source == "longmemeval"][:2]
    result = cal.calibrate(LLMJudge(llm, prompt_set="longmemeval"), sample, use_cache=False)
    assert result["label_rate"] == 1.0 and llm.sent[0]["one_of"] == ["yes", "no"]


def test_results_are_cached_by_model_prompt_set_and_set(pairs):
    llm = Constant("CORRECT")
    first = cal.calibrate(LLMJudge(llm), pairs[:10])
    again = cal.calibrate(LLMJudge(llm), pairs[:10])
    assert not first["cached"] and again["cached"] and len(llm.sent) == 10   # the second run asked nothing
    assert {k: v for k, v in again.items() if k != "cached"} == {k: v for k, v in first.items() if k != "cached"}
    strict = cal.calibrate(LLMJudge(llm, prompt_set="strict"), pairs[:10])   # another prompt set: measured
    other = cal.calibrate(LLMJudge(llm), pairs[:12])   # another set: measured
    assert not strict["cached"] and not other["cached"] and len(llm.sent) == 32
    assert len({first["key"], strict["key"], other["key"]}) == 3


def test_figures_count_unreadable_as_wrong():
    pair = cs.CalibrationPair("x", "locomo", "single-hop", "Q", "Paris", "Paris", "gold", 1.0, 4)
    out = cal.figures([pair, pair], [1.0, math.nan])
    assert out["accuracy"] == 0.5 and out["unreadable"] == 1 and out["label_rate"] == 0.5
    with pytest.raises(MemlabError, match=r"at least one calibration pair"):
        cal.run_calibration(LLMJudge(Constant()), [])


# -- the CLI gate ----------------------------------------------------------------------------
def _tiny(tmp_path):
    from .conftest import tiny_doc

    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(tiny_doc()))
    return path


@needs_data
def test_eval_refuses_a_judge_that_fails_in_one_line(tmp_path, capsys):
    path = _tiny(tmp_path)
    # the offline stand-in answers a judge prompt with no label at all: accuracy 0
    assert main(["eval", str(path), "--answer-llm", "offline", "--judge-llm", "offline", "--json"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert lines[0].startswith("memlab eval: judge calibration: memlab-offline (lenient@v2): accuracy 0.000 on 224")
    assert lines[-1].startswith("memlab eval: --judge-llm refused: judge memlab-offline (lenient@v2) failed "
                                "calibration on 224 pairs: accuracy 0.000 < 0.90 and CORRECT-label rate 0.000 "
                                "outside 0.05-0.95")
    assert lines[-1].endswith("; pass --allow-uncalibrated-judge to use it anyway") and len(lines) == 2


@needs_data
def test_the_override_is_written_into_the_result(tmp_path, capsys):
    path = _tiny(tmp_path)
    assert main(["eval", str(path), "--answer-llm", "offline", "--judge-llm", "offline", "--json",
                 "--allow-uncalibrated-judge"]) == 0
    captured = capsys.readouterr()
    result = json.loads(captured.out)
    assert result["judge_gate"]["passed"] is False and result["judge_gate"]["override"] is True
    assert result["judge_gate"]["reason"].startswith("judge memlab-offline (lenient@v2) failed calibration")
    calib = result["judge_calibration"]
    assert calib["accuracy"] == 0.0 and calib["n_pairs"] == 224 and isinstance(calib["cached"], bool)
    assert calib["set_hash"] and calib["judge_prompt_set"] == "lenient@v2" and "labels" not in calib
    assert "(--allow-uncalibrated-judge: used anyway)" in captured.err


def test_eval_without_the_data_refuses_unless_overridden(tmp_path, capsys, monkeypatch):
    path = _tiny(tmp_path)
    monkeypatch.setattr(cal, "default_pairs", lambda seed=0: (_ for _ in ()).throw(
        MemlabError("the judge calibration set is built from LoCoMo and LongMemEval; not found: LoCoMo")))
    assert main(["eval", str(path), "--answer-llm", "offline", "--judge-llm", "offline"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == ("memlab eval: --judge-llm: the judge cannot be calibrated: the judge calibration set is built from "
                   "LoCoMo and LongMemEval; not found: LoCoMo; pass --allow-uncalibrated-judge to use it anyway")
    assert main(["eval", str(path), "--answer-llm", "offline", "--judge-llm", "offline", "--json",
                 "--allow-uncalibrated-judge"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["judge_calibration"] is None and result["judge_gate"]["override"] is True


def test_llm_names_are_checked_in_one_line(tmp_path, capsys):
    path = _tiny(tmp_path)
    assert main(["eval", str(path), "--answer-llm", "locall"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("memlab eval: argument --answer-llm: expected offline, openai, local, local:NAME (")
    assert "\n" not in err
