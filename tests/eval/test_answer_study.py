"""answer_study (memlab.eval.answer_study): the answer-level study of notebook 10 and
bench/bench_answers.py, on one or two questions per slice. The offline stand-in checks the
frame exactly and fast; the bundled Gemma 3 270M (llama.cpp, as in tests/llm/test_local.py)
runs it for real on one question per slice with the oracle strategy."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from memlab.base import MemlabError
from memlab.eval.answer_study import (
    LME_SLICE,
    LOCOMO_SLICE,
    STUDY_METRICS,
    answer_slices,
    answer_study,
    answered_rows,
    judge_informative,
    llm_identity,
    loss_rater,
    rated_rows,
    study_agreement,
    study_loss_split,
    study_table,
)
from memlab.eval.answers import containment, token_f1
from memlab.eval.loss import STAGES
from memlab.eval.paths import locomo_path, longmemeval_path
from memlab.llm.local import LocalLLM
from memlab.offline.llm import OfflineLLM

pytestmark = pytest.mark.skipif(locomo_path() is None or longmemeval_path() is None,
                                reason="../shared/datasets (LoCoMo, LongMemEval oracle) absent")

ADDED = ["slice", "answered", "loss_stage", "seconds_per_answer", "judge_seconds_per_answer", "model", "device",
         "judge_model", "answer_tokens", "judge_prompts", "loss_judge", "judge_prompt_set"]
JUDGED = ["judge:lenient", "judge_format_errors:lenient", "judge_prompt_set:lenient", "judge:strict",
          "judge_format_errors:strict", "judge_prompt_set:strict"]


@pytest.fixture(scope="module")
def slices():
    return answer_slices(locomo_questions=2, lme_questions=2)


@pytest.fixture(scope="module")
def offline(slices):
    return answer_study(OfflineLLM(), slices, ["oracle", "bm25_plus"], answer_tokens=16)


def _common_invariants(results: pd.DataFrame) -> None:
    for col in ADDED + JUDGED + ["strategy", "dialogue_id", "query", "answer", "prediction", "answer_f1",
                                 "answer_containment", "judge_correct", "context_recall", "error"]:
        assert col in results.columns, col
    assert results.columns[0] == "slice"
    answers = answered_rows(results)
    for name in ("lenient", "strict"):
        labels = results[f"judge:{name}"]
        assert all(v in (0.0, 1.0) or math.isnan(v) for v in labels)
        # a NaN label on an answered row is a format error of the judge, and only that
        unreadable = answers[f"judge:{name}"].isna()
        assert (answers[f"judge_format_errors:{name}"] == unreadable).all()
    assert results["judge_correct"].equals(results["judge:lenient"])
    # every judge result names its prompt set (name@version) and model
    assert set(results["judge_prompt_set"]) == {"lenient@v2"} and set(results["judge_prompt_set:strict"]) == {"strict@v2"}
    assert results["judge_model"].notna().all()
    # LoCoMo's official score beside token F1 on the LoCoMo slice, and only there
    locomo = results["slice"] == LOCOMO_SLICE
    assert results.loc[locomo & results["answered"], "locomo_f1"].notna().all()
    assert results.loc[~locomo, "locomo_f1"].isna().all()
    for p, g, f1, c in zip(answers["prediction"], answers["answer"], answers["answer_f1"],
                           answers["answer_containment"]):
        assert f1 == token_f1(p, g) and c == containment(p, g)
    # every answered row with a gold has one loss stage; the split's shares sum to one per group
    scored = answers[answers["gold"].map(len) > 0]
    assert scored["loss_stage"].isin(STAGES).all() and results.loc[~results["answered"], "loss_stage"].isna().all()
    split = study_loss_split(results)
    assert int(split["n_answered"].sum()) == len(scored)
    assert (split[list(STAGES)].sum(axis=1).round(12) == 1.0).all()
    counts = scored.groupby(["slice", "strategy"], sort=False)["loss_stage"].value_counts()
    for rec in split.to_dict("records"):
        for stage in STAGES:
            n = counts.get((rec["slice"], rec["strategy"], stage), 0)
            assert rec[stage] == n / rec["n_answered"]
    oracle = results[results["strategy"] == "oracle"]
    assert (oracle["context_recall"] == 1.0).all()   # the gold turns alone: all of them in the context
    assert (oracle.loc[oracle["answered"], "loss_stage"].isin(["correct", "read"])).all()
    table = study_table(results)
    assert list(zip(table["slice"], table["strategy"])) == list(dict.fromkeys(zip(results["slice"],
                                                                                    results["strategy"])))
    assert table["n_scored"].tolist() == scored.groupby(["slice", "strategy"], sort=False).size().tolist()
    for m in STUDY_METRICS:
        assert f"{m}_ci_low" in table.columns and f"{m}_ci_high" in table.columns
    assert set(table["judge_prompt_set:lenient"]) == {"lenient@v2"} and table["judge_model"].notna().all()


def test_the_slices():
    slices = answer_slices(locomo_questions=2, lme_questions=3)
    assert list(slices) == [LOCOMO_SLICE, LME_SLICE]
    assert [len(d.probes) for d in slices[LOCOMO_SLICE].dialogues] == [2]
    assert all("adversarial" != p.category for d in slices[LOCOMO_SLICE].dialogues for p in d.probes)
    assert [len(d.probes) for d in slices[LME_SLICE].dialogues] == [1, 1, 1]
    assert all(d.probes[0].evidence for d in slices[LME_SLICE].dialogues)
    assert list(answer_slices(locomo_questions=0, lme_questions=1)) == [LME_SLICE]
    with pytest.raises(MemlabError, match=r"lme_questions must be an int >= 0, got -1"):
        answer_slices(lme_questions=-1)


def test_stratified_slices_spread_over_categories():
    from collections import Counter

    slices = answer_slices(locomo_conversations=4, locomo_questions=2, lme_questions=7, sample="stratified")
    locomo = slices[LOCOMO_SLICE]
    assert [len(d.probes) for d in locomo.dialogues] == [2, 2, 2, 2]
    # conversation i starts its cycle at category i mod 4, so 8 questions cover all four categories
    # (a conversation without questions of its turn's category takes the next one's)
    spread = Counter(p.category for d in locomo.dialogues for p in d.probes)
    assert set(spread) == {"single-hop", "multi-hop", "temporal", "open-domain"} and max(spread.values()) <= 3
    first_locomo = answer_slices(locomo_conversations=4, locomo_questions=2)[LOCOMO_SLICE]
    assert len({p.category for d in first_locomo.dialogues for p in d.probes}) < 4
    for d in locomo.dialogues:  # probes keep their order in the conversation
        ids = [p.id for p in d.probes]
        assert ids == sorted(ids)
    lme = Counter(d.probes[0].category for d in slices[LME_SLICE].dialogues)
    assert lme == Counter({"single-session-user": 3, "knowledge-update": 2, "multi-session": 2})
    # the first-in-file slice of LongMemEval holds one type only: the reason for the option
    first = answer_slices(locomo_questions=0, lme_questions=7)[LME_SLICE]
    assert len({d.probes[0].category for d in first.dialogues}) == 1
    with pytest.raises(MemlabError, match=r"sample must be one of first, stratified, got 'random'"):
        answer_slices(sample="random")


def test_study_with_the_offline_stand_in(offline, slices):
    _common_invariants(offline)
    assert len(offline) == 2 * sum(ds.n_probes for ds in slices.values())
    assert offline["answered"].all() and offline["error"].isna().all()
    assert list(dict.fromkeys(zip(offline["slice"], offline["strategy"]))) == [
        (LOCOMO_SLICE, "oracle"), (LOCOMO_SLICE, "bm25_plus"), (LME_SLICE, "oracle"), (LME_SLICE, "bm25_plus")]
    assert set(offline["model"]) == {"memlab-offline"} and set(offline["device"]) == {"cpu"}
    assert set(offline["answer_tokens"]) == {16} and set(offline["judge_prompts"]) == {"lenient,strict"}
    # the stand-in answers a judge prompt with no label: every label NaN, each a format error
    assert offline["judge:lenient"].isna().all() and offline["judge_format_errors:strict"].all()
    agreement = study_agreement(offline)
    assert agreement["accuracy"]["unreadable"].tolist() == [len(offline), len(offline), 0]
    assert math.isnan(agreement["spread"]) and agreement["per_strategy"]["strategy"].tolist() == ["oracle", "bm25_plus"]


def test_study_is_reproducible(offline, slices):
    again = answer_study(OfflineLLM(), slices, ["oracle", "bm25_plus"], answer_tokens=16)
    timing = ["seconds_per_answer", "judge_seconds_per_answer", "latency_ms"]   # wall clock
    pd.testing.assert_frame_equal(offline.drop(columns=timing), again.drop(columns=timing))


def test_bad_arguments(slices):
    llm = OfflineLLM()
    with pytest.raises(MemlabError, match=r"slices must be a non-empty mapping"):
        answer_study(llm, {})
    with pytest.raises(MemlabError, match=r"slice 'x' must be a memlab Dataset, got list"):
        answer_study(llm, {"x": []})
    with pytest.raises(MemlabError, match=r"no configuration for strategies \['nope'\]"):
        answer_study(llm, slices, ["oracle", "nope"])
    with pytest.raises(MemlabError, match=r"strategies must be a non-empty list of names, got 'oracle'"):
        answer_study(llm, slices, "oracle")
    with pytest.raises(MemlabError, match=r"loss_judge 'kind' is not one of the judge prompts"):
        answer_study(llm, slices, ["oracle"], loss_judge="kind")


def test_llm_identity():
    assert llm_identity(OfflineLLM()) == ("memlab-offline", "cpu")
    model, device = llm_identity(LocalLLM(model="gemma-3-270m"))
    assert model.startswith("gemma-3-270m") and device == "cpu"
    assert llm_identity(LocalLLM())[0].startswith("qwen2.5-coder-1.5b-instruct-q4_k_m.gguf:")


def test_study_with_the_local_model():
    llm = LocalLLM(model="gemma-3-270m", n_ctx=2048)
    slices = answer_slices(locomo_questions=1, lme_questions=1)
    results = answer_study(llm, slices, ["oracle"], answer_tokens=12)
    _common_invariants(results)
    assert len(results) == 2 and results["error"].isna().all() and results["answered"].all()
    assert set(results["model"]) == {llm.model_id()} and set(results["device"]) == {"cpu"}
    assert llm.usage.calls == 2 * 3   # per question: the answer and one reply per judge prompt
    assert (results["seconds_per_answer"] > 0).all()


def test_the_loss_split_reads_token_f1_when_the_judge_says_one_label_to_all(offline):
    # the stand-in's judge never labels: no information
    assert not judge_informative(offline) and loss_rater(offline) == "token_f1"
    constant = offline.assign(**{"judge:lenient": 1.0, "judge_correct": 1.0})   # a small model's "CORRECT" to all
    assert not judge_informative(constant) and loss_rater(constant) == "token_f1"
    # rated by the constant judge, every answer is correct; by token F1, those under 0.5 are not
    by_judge = study_loss_split(constant, rater="judge")
    assert (by_judge["correct"] == 1.0).all()
    by_f1 = study_loss_split(constant, rater="token_f1")
    answers = answered_rows(constant)
    scored = answers[answers["gold"].map(len) > 0]
    for rec in by_f1.to_dict("records"):
        group = scored[(scored["slice"] == rec["slice"]) & (scored["strategy"] == rec["strategy"])]
        assert rec["correct"] == (group["answer_f1"] >= 0.5).mean()
    assert "judge_correct" not in rated_rows(constant, "token_f1").columns
    assert rated_rows(constant, "judge")["judge_correct"].eq(1.0).all()
    # both labels given: the judge decides
    mixed_labels = [float(i % 2) for i in range(len(offline))]
    mixed = offline.assign(**{"judge:lenient": mixed_labels, "judge_correct": mixed_labels})
    assert judge_informative(mixed) and loss_rater(mixed) == "judge"
    assert not judge_informative(mixed, "strict")   # the strict labels are still all NaN
    with pytest.raises(MemlabError, match=r"rater must be one of judge, token_f1, got 'f1'"):
        rated_rows(offline, "f1")
    with pytest.raises(MemlabError, match=r"judge_informative: no column 'judge:kind'; judges: \['lenient', 'strict'\]"):
        judge_informative(offline, "kind")
